"""convert-fusion-to-sched: schedule each segment of a fusion into its kernels.

The kernel boundaries are fusion-segment's (passes/segment.py): this conversion takes fusion
functions already cut into `fusion.segment`s, each naming its scheduler, and refuses one that is
not (run `fusion-segment` first, or a named pipeline). The pass makes the host function with a
buffer for every value kept between segments, reads each segment's one task from its ops
(`segment_plan`, lowering/analysis/planner.py; a segment without a `fuser.plan`, or one whose plan an
option given to this pass overrides, is planned alone with `plan_fusion`, an error if it is not
one task of the scheduler the segment names), and hands it to that scheduler's emitter, with
the options of the segment's `fuser.plan`:

- pointwise and `segment_set` tasks: lowering/emitters/pointwise.py
- reductions: lowering/emitters/reduction.py
- normalization groups (rows kept on chip): lowering/emitters/normalization.py
- matmuls: lowering/emitters/matmul.py
- scans: lowering/emitters/scan.py
- sorts (sort, argsort, topk): lowering/emitters/sort.py
- atomic scatters (fusion.scatter_add_atomic): lowering/emitters/scatter.py

The heuristics those emitters apply are the `*_params` functions of lowering/heuristics/; pass
options (`ScheduleOptions`) override them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, DictionaryAttr, FunctionType, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Block, Region, SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.dialects.fusion.layout import ALIAS, STRIDE_ORDER, STRIDES, VIEW, arg_attrs, output_aliases, res_attrs
from fuser.lowering.common import ScheduleError, Task, refuse_unfolded_empty, shape_of
from fuser.lowering.emitters.emitter import KernelEmitter
from fuser.lowering.emitters.kernel_builder import KernelBuilder
from fuser.lowering.emitters.matmul import emit_matmul
from fuser.lowering.emitters.normalization import emit_persistent
from fuser.lowering.analysis.inplace import inplace_hazards
from fuser.lowering.analysis.planner import SCHEDULER_OF_TASK, Plan, plan_fusion, segment_plan
from fuser.lowering.emitters.pointwise import emit_copy, emit_pointwise
from fuser.lowering.provenance import located
from fuser.lowering.emitters.reduction import emit_reduction
from fuser.lowering.emitters.scan import emit_scan
from fuser.lowering.emitters.scatter import emit_scatter_atomic
from fuser.lowering.emitters.sort import emit_sort
from fuser.lowering.heuristics.options import (PLAN_ATTR, ScheduleOptions, ScheduleOptionsError, SchedulingPass,
                                               explicit_options, options_from_plan)

# fusion-translate-welford and fusion-split-k import the planner and its error from here.
__all__ = ["ConvertFusionToSched", "Plan", "ScheduleError", "plan_fusion"]


@dataclass(frozen=True)
class ConvertFusionToSched(SchedulingPass):
    """Partition fusion functions into kernels and schedule them (pointwise, reduction,
    normalization and matmul schedulers). Its options are the `ScheduleOptions`."""

    name = "convert-fusion-to-sched"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            if any(o.dialect_name() == "fusion" for o in fn.walk()) or _has_tensor_signature(fn):
                self._convert(op, fn)

    def _convert(self, module: ModuleOp, fn: func.FuncOp) -> None:
        """Schedule `fn` writing its in-place outputs into their inputs (segments that read an
        aliased input launched before the one writing it, where the data allows); an aliased output whose
        schedule would read its input after writing it (lowering/analysis/inplace.py: a kernel
        reading the input later, or one reading other elements than it writes) is scheduled
        again into a workspace that one copy kernel writes into the input after every other
        kernel, and recorded in the host function's `fuser.staged_aliases`."""
        refuse_unfolded_empty(fn.walk())
        staged: set[int] = set()
        while True:
            before = set(module.body.block.ops)
            host_fn = self._emit(module, fn, staged)
            kernels = {o.sym_name.data: o for o in module.body.block.ops if isinstance(o, sched.KernelOp)}
            more = {h.output for h in inplace_hazards(host_fn, kernels)} - staged
            if not more:
                break
            for o in [o for o in module.body.block.ops if o not in before]:
                module.body.block.erase_op(o)
            staged |= more
        if staged:
            host_fn.attributes["fuser.staged_aliases"] = DenseArrayBase.from_list(i64, sorted(staged))
        module.body.block.erase_op(fn)

    def _emit(self, module: ModuleOp, fn: func.FuncOp, staged: set[int]) -> func.FuncOp:
        opts = self.schedule_options()
        _require_segments(fn)  # the kernel boundaries are fusion-segment's
        body = fn.body.block
        args = list(body.args)
        outputs = list(body.last_op.operands)
        in_types = [sched.memref(shape_of(a), F._elem(a)) for a in args]
        out_types = [sched.memref(shape_of(o), F._elem(o)) for o in outputs]
        host_block = Block(arg_types=in_types + out_types)
        host_fn = func.FuncOp(fn.sym_name.data, FunctionType.from_lists(in_types + out_types, []), Region(host_block))
        host_fn.attributes["fuser.num_outputs"] = IntegerAttr(len(outputs), i64)
        _boundary_layouts(fn, host_fn, len(args), len(outputs))
        host_fn.location = fn.location  # diagnostics about the schedule point at the fusion
        module.body.block.insert_op_before(host_fn, fn)
        host = KernelBuilder(host_block)
        buffers: dict[SSAValue, SSAValue] = dict(zip(args, host_block.args[:len(args)]))
        out_args = host_block.args[len(args):]
        # Host buffers carry the fusion's value names, so the IR and its diagnostics say which
        # value a buffer holds.
        for v, a in zip(args + outputs, host_block.args):
            a.name_hint = v.name_hint
        copies = []  # an input returned as-is, or a value returned twice: copied after it is computed
        # A staged output that is an input as is (an in-place swap of two inputs): that input is
        # copied to a workspace before any kernel, since another in-place output may write it.
        snapshots: list[tuple[SSAValue, SSAValue]] = []
        staged_copies = []  # after every other copy: those may read the inputs staged outputs go into
        aliases = output_aliases(fn)
        for j, (o, a) in enumerate(zip(outputs, out_args)):
            if 0 in shape_of(o):
                continue  # nothing to write: the runtime allocates it with no memory
            if j in aliases:
                # an in-place output: its kernels write the input's buffer (the output's own
                # argument is left unused; the runtime passes the input there too), or a staged
                # one a workspace copied into the input last
                into = host_block.args[aliases[j]]
                if o is args[aliases[j]]:
                    continue  # the input returned as is, into itself: nothing to write
                if j in staged and o in args:
                    snapshot = _workspace(host, o)
                    snapshots.append((o, snapshot))
                    staged_copies.append((o, into, snapshot))
                elif o in buffers or j in staged:
                    if o not in buffers:
                        buffers[o] = _workspace(host, o)
                    (staged_copies if j in staged else copies).append((o, into, None))
                else:
                    buffers[o] = into
                continue
            if o in buffers:
                copies.append((o, a, None))
            else:
                buffers[o] = a
        overrides = explicit_options(self)
        segments = []
        for seg in _readers_first([o for o in body.ops if isinstance(o, F.SegmentOp)], args, outputs, aliases):
            seg_opts, overridden = _segment_options(seg, opts, overrides)
            segments.append((seg, seg_opts, self._plan_segment(seg, seg_opts, overridden)))
        # Every buffer first (workspaces for the values kept between kernels), then the kernels;
        # a segment's own copies follow its kernels, since later segments may read them.
        returned = {buffers[o] for o in outputs if o in buffers} & set(out_args)
        seg_copies = [_segment_buffers(host, seg, plan, buffers, returned) for seg, _, plan in segments]
        em = KernelEmitter(fn.sym_name.data, module.body.block, host, buffers, opts)
        with located(fn):
            for o, w in snapshots:
                emit_copy(em, o, w)
        for (seg, seg_opts, plan), own in zip(segments, seg_copies):
            argset = set(seg.body.block.args)
            em.opts = seg_opts
            with located(seg):  # its kernels and launches point at the segment's op
                for t in plan.tasks:
                    with located(t.op):
                        emit_task(em, t, plan.materialized, argset)
                em.opts = opts  # its copies are not its scheduler's kernels: the plan is not theirs
                for o, a in own:
                    emit_copy(em, o, a)
        with located(fn):
            for o, a, src in copies + staged_copies:
                emit_copy(em, o, a, src)
            host.emit(func.ReturnOp())
        return host_fn

    @staticmethod
    def _plan_segment(seg: F.SegmentOp, opts, overridden: list[str]) -> Plan:
        """The one task a segment's scheduler runs (a segment with none only passes values on):
        read from the segment where fusion-segment planned it (it has a `fuser.plan`); else, or
        where options given to this pass override the segment's recorded plan, the tasks its
        ops need, planned for this segment alone (a normalization segment made non-persistent:
        its reduction and pointwise kernels)."""
        if PLAN_ATTR in seg.attributes and not overridden and seg.scheduler_name is not None:
            return segment_plan(seg.body.block, seg.scheduler_name, opts)
        plan = plan_fusion(seg.body.block, opts)
        kinds = [SCHEDULER_OF_TASK.get(t.kind, t.kind) for t in plan.tasks]
        name = seg.scheduler_name
        if overridden:
            return plan
        if len(kinds) > 1:
            raise ScheduleError(f"fusion.segment \"{name}\" holds {len(kinds)} kernel tasks ({', '.join(kinds)}); a "
                                "segment is one scheduler's task: split it, or drop its scheduler name so that "
                                "fusion-segment splits it", seg)
        if kinds and name is not None and kinds[0] != name:
            why = "".join(f": {g.decision.reason}" for g in plan.groups if not g.decision.persistent)
            raise ScheduleError(f"fusion.segment names the '{name}' scheduler, but its ops are a '{kinds[0]}' "
                                f"task{why}", seg)
        return plan


def _readers_first(segs: list[F.SegmentOp], args: list, outputs: list, aliases: dict[int, int]) -> list[F.SegmentOp]:
    """`segs` in an order their data allows (a topological order, the given one where free) in
    which every segment that reads an aliased input runs before the segment that writes the
    in-place output into it, where the writer does not feed the reader: a reduction of the input
    that the update also needs, or one beside it, runs first, so the update can be written in
    place instead of staged."""
    if not aliases:
        return segs
    index = {s: k for k, s in enumerate(segs)}
    maker = {r: s for s in segs for r in s.outputs}
    deps = {s: {maker[v] for v in s.inputs if v in maker} for s in segs}
    def feeds(a, b) -> bool:  # a segment b reads, directly or through others
        stack, seen = list(deps[b]), set()
        while stack:
            x = stack.pop()
            if x is a:
                return True
            if x not in seen:
                seen.add(x)
                stack += deps[x]
        return False
    after = {s: set(d) for s, d in deps.items()}
    for j, i in aliases.items():
        writer = maker.get(outputs[j])
        if writer is None:
            continue
        for r in segs:
            if r is not writer and args[i] in r.inputs and not feeds(writer, r):
                after[writer].add(r)
    order, done = [], set()
    while len(order) < len(segs):
        ready = [s for s in segs if s not in done and after[s] <= done]
        if not ready:  # (no cycle is possible: a reader the writer feeds is not waited for)
            return segs
        s = min(ready, key=index.__getitem__)
        order.append(s)
        done.add(s)
    return order


def _segment_options(seg: F.SegmentOp, opts, overrides: dict[str, object]) -> tuple[ScheduleOptions, list[str]]:
    """The options `seg` is converted with, and the names of the options given to this pass
    that change what the segment's `fuser.plan` recorded. Without such a change: the pass's
    options, then the plan's entries, then the options given to this pass that the plan does
    not name. With one, the segment is planned again under the pass's options: the plan's
    entries are the decisions for the kernels it was planned into (a normalization kernel's
    threads per row are not the block size of the reduction and pointwise kernels that
    `persistent=false` makes of it)."""
    plan = seg.attributes.get(PLAN_ATTR)
    if plan is not None and not isinstance(plan, DictionaryAttr):
        raise ScheduleError(f"{PLAN_ATTR} must be a dictionary of schedule options, got {plan}", seg)
    try:
        recorded = options_from_plan(plan, opts)
    except ScheduleOptionsError as e:
        raise ScheduleError(str(e), seg) from None
    overridden = [n for n, v in overrides.items() if plan is not None and n in plan.data and getattr(recorded, n) != v]
    return replace(opts if overridden else recorded, **overrides), overridden


def _boundary_layouts(fn: func.FuncOp, host_fn: func.FuncOp, n_in: int, n_out: int) -> None:
    """The host function's arguments keep the layouts the fusion's boundary declares (their
    `fusion.view`, strides, offset and stride order: what the runtime checks arrays against and
    returns outputs as), once `fusion-layouts` has applied them; a declaration it has not
    applied is refused. An in-place output's argument carries `fusion.alias` (the input whose
    buffer its kernels write)."""
    ins = [arg_attrs(fn, i) for i in range(n_in)]
    outs = [res_attrs(fn, j) for j in range(n_out)]
    for j, i in output_aliases(fn).items():  # the runtime reads it from the output's argument
        outs[j] = {**outs[j], ALIAS: IntegerAttr(i, i64)}
    for what, attrs, key in [("argument", ins, STRIDES), ("result", outs, STRIDE_ORDER)]:
        for i, d in enumerate(attrs):
            if key in d and VIEW not in d:
                raise ScheduleError(f"@{fn.sym_name.data} {what} {i} declares {key}, which fusion-layouts applies: "
                                    "run it first (the named pipelines do)", fn)
    if any(ins) or any(outs):
        host_fn.arg_attrs = ArrayAttr([DictionaryAttr(d) for d in ins + outs])


def emit_task(em: KernelEmitter, t: Task, materialized: set, args: set) -> None:
    """Hand one planned task to its scheduler's emitter."""
    if t.kind == "reduction":
        emit_reduction(em, t, materialized, args)
    elif t.kind == "normalization":
        emit_persistent(em, t, materialized, args)
    elif t.kind == "matmul":
        emit_matmul(em, t, materialized, args)
    elif t.kind == "scan":
        emit_scan(em, t, materialized, args)
    elif t.kind == "sort":
        emit_sort(em, t, materialized, args)
    elif t.kind == "scatter":
        emit_scatter_atomic(em, t, materialized, args)
    elif t.kind == "segment":
        emit_pointwise(em, [t.op.result], materialized, args)
    else:
        emit_pointwise(em, t.outputs, materialized, args)


def _segment_buffers(host: KernelBuilder, seg: F.SegmentOp, plan: Plan, buffers: dict,
                     returned: set = frozenset()) -> list:
    """Map a segment's block arguments to its operands' buffers and its yielded values to its
    results' buffers (a workspace for a result no one returns; an operand passed through
    unchanged keeps its buffer); returns the copies that a value yielded twice, or an operand
    passed through to a function output, needs. A `segment_set` of a value the segment also
    yields into a function output (`returned`, of the same shape) is that output's buffer: a
    backward pass returns a gradient that its next matmul reads, stored once."""
    block = seg.body.block
    for a, x in zip(block.args, seg.inputs):
        buffers[a] = buffers[x]
    yielded = dict(zip(block.last_op.operands, seg.outputs))
    for y, r in yielded.items():
        source = yielded.get(y.owner.input) if isinstance(y.owner, F.SegmentSetOp) else None
        if r not in buffers and source is not None and buffers.get(source) in returned and \
                buffers[source].type == sched.memref(shape_of(y), F._elem(y)):
            buffers[r] = buffers[source]
    copies = []
    for y, r in zip(block.last_op.operands, seg.outputs):
        if r not in buffers and y in block.args:
            buffers[r] = buffers[y]
            continue
        if r not in buffers:
            buffers[r] = _workspace(host, r)
        if y in buffers:
            copies.append((y, buffers[r]))
        else:
            buffers[y] = buffers[r]
    for v in plan.stored:
        if v not in buffers:
            buffers[v] = _workspace(host, v)
    return copies


def _workspace(host: KernelBuilder, v: SSAValue) -> SSAValue:
    ws = host.v(sched.WorkspaceOp(sched.memref(shape_of(v), F._elem(v))))
    ws.name_hint = v.name_hint
    return ws


def _require_segments(fn: func.FuncOp) -> None:
    """Every fusion op lies in a `fusion.segment` that names its scheduler: cutting a function
    into kernels is fusion-segment's decision, and this conversion only carries it out."""
    for op in fn.body.block.ops:
        passes_on = isinstance(op, F.SegmentOp) and op.body.block.first_op is op.body.block.last_op
        if isinstance(op, F.SegmentOp) and (op.scheduler is not None or passes_on):
            continue  # named, or one that only passes its operands on (copies, no scheduler)
        if isinstance(op, F.SegmentOp):
            raise ScheduleError("fusion.segment names no scheduler: run fusion-segment first, which names it or "
                                "splits the segment into the kernels its ops need", op)
        if isinstance(op, F.FullOp) and 0 in shape_of(op.result):
            continue  # an output with no elements: no kernel writes it
        if op.dialect_name() == "fusion":
            raise ScheduleError(f"'{op.name}' is outside any fusion.segment: convert-fusion-to-sched converts "
                                f"segmented fusions; run fusion-segment first (or the to-sched / default "
                                f"pipeline)", op)


def _has_tensor_signature(fn: func.FuncOp) -> bool:
    return any(isinstance(t, TensorType) for t in fn.function_type.inputs.data)
