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
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from fuser.dialects import fusion as F
from fuser.lowering.common import ScheduleError
from fuser.lowering.planner import plan_fusion
from fuser.lowering.schedulers.options import ScheduleOptions, SchedulingPass

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
            # One walk in program order, no revisits: each decision sees the earlier rewrites
            # of its function, and a kept op is never reconsidered.
            walker = PatternRewriteWalker(TranslateWelfordPattern(fn, self.mode, opts), apply_recursively=False)
            walker.rewrite_region(fn.body)


@dataclass
class TranslateWelfordPattern(RewritePattern):
    """A fusion.welford / fusion.var_mean of `fn` -> its two-pass form where `decide` says so;
    a kept op is tagged with the reason."""

    fn: func.FuncOp
    mode: str
    opts: ScheduleOptions

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: F.WelfordOp | F.VarMeanOp, rewriter: PatternRewriter, /) -> None:
        seg = op.parent_op()
        if isinstance(seg, F.SegmentOp) and seg.scheduler is not None:
            # A segment that names its scheduler is that scheduler's kernel by the user's choice.
            op.attributes["fuser.welford"] = StringAttr(f"kept (inside a fusion.segment named '{seg.scheduler_name}')")
            rewriter.notify_op_modified(op)
            return
        translated, note = decide(self.fn, op, self.mode, self.opts)
        if translated:
            replace_by_two_pass(op, rewriter, note)
        else:
            op.attributes["fuser.welford"] = StringAttr(note)
            rewriter.notify_op_modified(op)


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
    for g in plan.groups:
        if all(r in g.ops for r in new_ops):
            return g.decision.persistent, g.decision.reason
    return False, "its reductions would not share one kernel; the second pass would read the input again"


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

    def full(v: float) -> SSAValue:
        return add(F.FullOp(v, kept, "f32"))

    xf = x if F.dtype_name(F._elem(x)) == "f32" else add(F.CastOp(x, "f32"))
    s_op = F.ReduceOp("sum", x, dims, dtype="f32")
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
