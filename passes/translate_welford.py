"""fusion-translate-welford: Welford statistics -> a two-pass mean and variance, where that pays.

A Welford reduction streams its input once but spends a division per element and merges
three-value states. The two-pass form (mean = sum(x)/N, then the squared deviations from that
mean) is cheaper arithmetic, but its second pass reads the row again: free when the row stays
on chip (the normalization scheduler keeps it in registers), a second trip through global
memory when it does not. So:

- `mode=always` translates every `fusion.welford` / `fusion.var_mean`;
- `mode=never` leaves them all;
- `mode=auto` (default) translates a copy of the function, asks the normalization scheduler
  (`convert-fusion-to-sched`'s planner, which changes nothing) whether the translated
  reductions run as one persistent kernel for these shapes, and translates the original only
  then.

The decision is recorded in the IR: translated reductions carry `fuser.welford = "translated
from fusion.var_mean (...)"`, kept Welford ops carry `fuser.welford = "kept (...)"` with the scheduler's reason.

The translated variance uses the corrected two-pass formula
    M2 = sum((x - m)^2) - (sum(x - m))^2 / N
whose second term cancels, to first order, the rounding error of the computed mean m; so data
with a large mean and a small spread keeps its variance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from fuser.dialects import fusion as F
from fuser.lowering.common import ScheduleError
from fuser.lowering.analysis.planner import Plan, plan_fusion
from fuser.lowering.heuristics.options import ScheduleOptions, SchedulingPass

MODES = ("auto", "always", "never")


class TranslateWelfordError(ValueError):
    pass


@dataclass(frozen=True)
class TranslateWelford(SchedulingPass):
    """Rewrite fusion.welford / fusion.var_mean into two-pass mean and variance where the
    normalization scheduler keeps the row on chip. Takes the schedule options too (pipeline-wide:
    the decision is made with the options convert-fusion-to-sched will schedule with)."""

    name = "fusion-translate-welford"

    mode: str = "auto"
    """auto: translate only where the result runs as one persistent kernel; always; never."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.mode not in MODES:
            raise TranslateWelfordError(
                f"fusion-translate-welford: mode must be one of {', '.join(MODES)}, got '{self.mode}'")
        opts = self.schedule_options()
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            decide_function(fn, self.mode, opts)


def undecided(ops) -> list[Operation]:
    """The Welford ops among `ops` that carry no decision (`fuser.welford`) yet."""
    return [o for o in ops if isinstance(o, (F.WelfordOp, F.VarMeanOp)) and "fuser.welford" not in o.attributes]


def decide_function(fn: func.FuncOp, mode: str, opts: ScheduleOptions) -> Plan | None:
    """Decide every undecided Welford op of `fn` under `mode` and record each decision (see
    `decide_in_segments` and `decide_body`)."""
    decide_in_segments(fn, mode, opts)
    return decide_body(fn, mode, opts)


def decide_in_segments(fn: func.FuncOp, mode: str, opts: ScheduleOptions) -> None:
    """An op inside a hand-written segment is decided alone, for that segment's kernel."""
    for seg in [o for o in fn.body.block.ops if isinstance(o, F.SegmentOp)]:
        for w in undecided(seg.body.block.ops):
            if seg.scheduler is not None:
                # A segment that names its scheduler is that scheduler's kernel by the user's choice.
                _apply(w, False, f"kept (inside a fusion.segment named '{seg.scheduler_name}')")
            else:
                _apply(w, *decide(fn, w, mode, opts))


def decide_body(fn: func.FuncOp, mode: str, opts: ScheduleOptions) -> Plan | None:
    """The undecided ops of the function's body are decided together. Under `auto` they are all
    translated in a copy of the function, which is planned once; where each of them runs as one
    persistent kernel, the function takes the copy's body and the copy's plan is returned (it is
    the plan of `fn` as it now is, so fusion-segment need not plan again); otherwise each op is
    translated or kept as that plan says, and None is returned."""
    todo = undecided(fn.body.block.ops)
    if mode == "auto" and todo:
        return _decide_together(fn, todo, opts)
    for w in todo:
        _apply(w, *decide(fn, w, mode, opts))
    return None


def _apply(w: Operation, translate: bool, note: str) -> None:
    if translate:
        replace_by_two_pass(w, PatternRewriter(w), note)
    else:
        w.attributes["fuser.welford"] = StringAttr(note)


def _decide_together(fn: func.FuncOp, todo: list[Operation], opts: ScheduleOptions) -> Plan | None:
    copy = fn.clone()
    position = {o: i for i, o in enumerate(fn.walk())}
    copy_ops = list(copy.walk())
    in_copy = {w: copy_ops[position[w]] for w in todo}
    new_ops = {w: replace_by_two_pass(c, PatternRewriter(c), "") for w, c in in_copy.items()}
    only_mean = (True, "only its mean is read: one sum, no second pass")
    if all(len(r) < 2 for r in new_ops.values()):
        for w in todo:
            _apply(w, True, f"translated from {w.name} ({only_mean[1]})")
        return None
    try:
        plan = plan_fusion(copy, opts)
    except ScheduleError as e:
        verdicts = {w: only_mean if len(r) < 2 else (False, f"the translated fusion cannot be scheduled: {e}")
                    for w, r in new_ops.items()}
        plan = None
    else:
        verdicts = {w: only_mean if len(r) < 2 else _persistent(plan, r) for w, r in new_ops.items()}
    if plan is None or not all(ok for ok, _ in verdicts.values()):
        for w, (ok, why) in verdicts.items():
            _apply(w, ok, f"translated from {w.name} ({why})" if ok else f"kept ({why})")
        return None
    for w, reds in new_ops.items():
        for r in reds:
            r.attributes["fuser.welford"] = StringAttr(f"translated from {w.name} ({verdicts[w][1]})")
    old = fn.body.detach_block(0)
    fn.body.add_block(copy.body.detach_block(0))
    old.erase(safe_erase=False)
    return plan


def _persistent(plan: Plan, reductions: list[Operation]) -> tuple[bool, str]:
    """Whether `reductions` (one Welford op's two-pass form) run as one persistent kernel in `plan`."""
    for g in plan.groups:
        if all(r in g.ops for r in reductions):
            return g.decision.persistent, g.decision.reason
    return False, "its reductions would not share one kernel; the second pass would read the input again"


def decide(fn: func.FuncOp, w: Operation, mode: str, opts: ScheduleOptions) -> tuple[bool, str]:
    """(whether to translate `w`, the `fuser.welford` note) under `mode`."""
    if mode == "never":
        return False, "kept (mode=never)"
    if mode == "always":
        return True, f"translated from {w.name} (mode=always)"
    ok, why = persistent_if_translated(fn, w, opts)
    return ok, (f"translated from {w.name} ({why})" if ok else f"kept ({why})")


def persistent_if_translated(fn: func.FuncOp, w: Operation, opts: ScheduleOptions) -> tuple[bool, str]:
    """Would the two-pass form of `w` run as one persistent kernel? Asks the planner about a
    translated copy of the function; the original is untouched."""
    copy = fn.clone()
    position = list(fn.walk()).index(w)
    w_copy = list(copy.walk())[position]
    # Inside a hand-written fusion.segment the question is whether that segment stays one kernel.
    scope = copy if w_copy.parent_block() is copy.body.block else w_copy.parent_block()
    new_ops = replace_by_two_pass(w_copy, PatternRewriter(w_copy), "")
    if len(new_ops) < 2:
        return True, "only its mean is read: one sum, no second pass"
    try:
        plan = plan_fusion(scope, opts)
    except ScheduleError as e:
        return False, f"the translated fusion cannot be scheduled: {e}"
    return _persistent(plan, new_ops)


def replace_by_two_pass(w: Operation, rewriter: PatternRewriter, note: str) -> list[Operation]:
    """Replace `w` by the two-pass form; returns the new reductions (tagged with `note`)."""
    x = w.input
    shape = tuple(x.type.get_shape())
    dims = sorted(w.reduced_dims)
    keep = w.keepdim is not None
    kept = [e for i, e in enumerate(shape) if i not in dims]
    n = math.prod(shape[d] for d in dims)
    ops: list[Operation] = []

    def add(o: Operation) -> SSAValue:
        ops.append(o)
        return o.results[0]

    st = F.dtype_name(F.stat_type(F._elem(x)))  # f32, or f64 for an f64 input

    def full(v: float) -> SSAValue:
        return add(F.FullOp(v, kept, st))

    xf = x if F.dtype_name(F._elem(x)) == st else add(F.CastOp(x, st))
    s_op = F.ReduceOp("sum", x, dims, dtype=st)
    total = add(s_op)
    count = full(float(n))
    mean = add(F.DivOp(total, count))
    d = add(F.SubOp(xf, add(F.BroadcastOp(mean, shape, dims))))
    ssq_op = F.ReduceOp("sum", add(F.MulOp(d, d)), dims)
    sd_op = F.ReduceOp("sum", d, dims)
    ssq, sd = add(ssq_op), add(sd_op)
    m2 = add(F.SubOp(ssq, add(F.DivOp(add(F.MulOp(sd, sd)), count))))
    if isinstance(w, F.WelfordOp):
        results = [mean, m2, add(F.CastOp(count, "i64"))]
    else:
        denom = max(n - w.correction.value.data, 0)
        results = [add(F.DivOp(m2, full(float(denom)))), mean]
    if keep:
        results = [add(F.ReshapeOp.create(operands=[r], result_types=[old.type])) for r, old in zip(results, w.results)]
    for o in ops:  # diagnostics about the new ops point at the Welford op they replace
        o.location = w.location
    # Several results: the rewriter gives each new result the name of the one it replaces, and
    # names nothing else.
    rewriter.replace(w, ops, results)
    # A result nobody reads (the variance of a var_mean whose mean alone is used) is not built:
    # its reductions would cost a kernel a second pass for nothing.
    dead = set()
    for o in reversed(ops):
        if all(u.operation in dead for r in o.results for u in r.uses):
            dead.add(o)
    for o in reversed(ops):
        if o in dead:
            rewriter.erase(o)
    reductions = [r for r in (s_op, ssq_op, sd_op) if r not in dead]
    if note:
        for r in reductions:
            r.attributes["fuser.welford"] = StringAttr(note)
    return reductions
