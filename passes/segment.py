"""fusion-segment: cut each fusion function into `fusion.segment` ops, one per kernel task, each
naming the scheduler that takes it and recording that scheduler's decision.

The cut is the planner's greedy merging (lowering/analysis/planner.py, whose docstring gives the rules):
from a segment per reduction, matmul, `segment_set` and pointwise output, it takes the merge that
saves the most memory traffic among those a scheduler accepts, until none is left. Outputs
pointwise in a reduction's results join its segment as an epilogue; inner reductions over the
same rows merge with the outputs computed from them into one persistent `normalization` segment
(a scan takes the outputs computed pointwise from its result into its `scan` segment, a sort
those computed from its values and indices into its `sort` segment)
(and a reduction over an input's leading dims with one over the rest into one `reduction`
segment that reads the input once)
when the normalization scheduler accepts the row (when it refuses, the group is resegmented into
reduction and pointwise segments and the refusal is recorded); matmuls sharing A merge; outputs
of one shape and level share a pointwise segment. Pointwise ops are recomputed, so a pointwise value that
two segments need is cloned into both: a segment's operands are exactly what its kernels load.

A hand-written segment keeps its boundary. Without a scheduler name it is planned on its own: if
one scheduler takes its ops it gets that name, otherwise it is split into the segments its ops
need (never merged with its neighbours). Pointwise values it takes from outside are pulled into
it, since segments exchange only stored values. A segment that already names its scheduler is
left as it is; convert-fusion-to-sched checks that the scheduler takes it.

The record, `fuser.segment`, says what the scheduler decided and the segment's memory traffic
(bytes its kernels read from their operands and write as results); `fuser.merged` lists the
merges that formed the segment, in the order taken, with the bytes each saved.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue

from fuser.dialects import fusion as F
from fuser.lowering.analysis.planner import (BOUNDARY_OPS, SCHEDULER_OF_TASK, Plan, plan_fusion, task_ops, task_reads,
                                             unstored_matmul_result)
from fuser.lowering.analysis.schedules import (matmul_decision, matmul_schedule, pointwise_schedule, reduction_schedule,
                                              scan_schedule, scatter_schedule, sort_schedule)
from fuser.lowering.common import (ScheduleError, Task, definition_order, is_welford, nbytes, refuse_unfolded_empty,
                                   shape_of)
from fuser.lowering.heuristics.options import PLAN_ATTR, ScheduleOptions, SchedulingPass, plan_attribute
from fuser.lowering.heuristics.reduction import reduction_view
from fuser.passes.translate_welford import decide_body, decide_in_segments



@dataclass(frozen=True)
class FusionSegment(SchedulingPass):
    """Group each fusion function's ops into `fusion.segment`s, one per kernel task. Its options
    are the `ScheduleOptions` (pipeline-wide), since the schedulers' answers depend on them."""

    name = "fusion-segment"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        opts = self.schedule_options()
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            if any(o.dialect_name() == "fusion" for o in fn.body.block.ops):
                segment_function(fn, opts)


def segment_function(fn: func.FuncOp, opts: ScheduleOptions) -> None:
    """Rewrite `fn`'s body into segments and the return (idempotent)."""
    body = fn.body.block
    refuse_unfolded_empty(fn.walk())
    for seg in [o for o in body.ops if isinstance(o, F.SegmentOp)]:
        _pull_in_pointwise_operands(seg)
    # Welford ops nobody has decided about (fusion-translate-welford did not run) are decided
    # here, as its mode=auto would; deciding the function's body plans it, with the result.
    decide_in_segments(fn, "auto", opts)
    for seg in [o for o in body.ops if isinstance(o, F.SegmentOp)]:
        if "fuser.segment" not in seg.attributes:  # not planned yet
            _name_or_split(seg, opts)
    _cut_matmul_operands(body)
    plan = decide_body(fn, "auto", opts) or plan_fusion(fn, opts)
    body = fn.body.block  # decide_body may have given fn a new (translated) body
    mapping: dict[SSAValue, SSAValue] = {a: a for a in body.args}
    ret = body.last_op
    siblings = _sibling_reductions(plan)
    for t in plan.tasks:
        if t.kind == "fixed":  # keeps its ops; moved into task order, reading the new values
            t.op.detach()
            for i, x in enumerate(t.op.inputs):
                t.op.operands[i] = mapping[x]
            body.insert_op_before(t.op, ret)
            mapping.update({r: r for r in t.op.results})
            continue
        seg = _wrap(t, plan, mapping, opts)
        if id(t) in siblings:
            seg.attributes["fuser.segment"] = StringAttr(seg.attributes["fuser.segment"].data + "; " + siblings[id(t)])
        body.insert_op_before(seg, ret)
    empty = {v for v in ret.operands if isinstance(v.owner, F.FullOp) and 0 in shape_of(v)}
    mapping.update({v: v for v in empty})  # no kernel: the runtime allocates them, with no memory
    ret.operands = [mapping[v] for v in ret.operands]
    for o in reversed([o for o in body.ops if o is not ret and not isinstance(o, F.SegmentOp)]):
        if o.results and o.results[0] in empty:
            continue
        body.erase_op(o)
    for o in reversed([o for o in body.ops if isinstance(o, F.SegmentOp) and not any(r.uses for r in o.results)]):
        body.erase_op(o)  # a hand-written segment that nothing reads (it was split, or is dead)


def _cut_matmul_operands(body: Block) -> None:
    """The matmul scheduler reads its operands from memory (TMA): an operand computed by
    pointwise ops (a cast, a scale) cannot be recomputed in its kernel, so rather than refuse the
    fusion, the operand gets a kernel of its own (a `segment_set`, recorded as such)."""
    for mm in [o for o in body.ops if isinstance(o, F.MatmulOp)]:
        for i, (what, v) in enumerate((("a", mm.a), ("b", mm.b))):
            if v.owner is body or isinstance(v.owner, BOUNDARY_OPS):
                continue
            cut = F.SegmentSetOp.create(operands=[v], result_types=[v.type])
            cut.attributes["fuser.segment_reason"] = StringAttr(
                f"resegmented: the matmul scheduler reads operand '{what}' from memory (TMA), so it is stored first")
            cut.result.name_hint = f"{v.name_hint}_stored" if v.name_hint else None
            cut.location = mm.location
            body.insert_op_before(cut, mm)
            mm.operands[i] = cut.result


def _sibling_reductions(plan: Plan) -> dict[int, str]:
    """Reductions of one input over different dims that kept a kernel each (a joint task says
    so in its own record): the note says the input is read once per reduction, and why they were
    not joined."""
    by_input: dict[SSAValue, list[Task]] = {}
    for t in plan.tasks:
        if t.kind == "reduction" and not t.siblings:
            by_input.setdefault(t.op.input, []).append(t)
    notes = {}
    for x, ts in by_input.items():
        if len({tuple(sorted(t.op.reduced_dims)) for t in ts}) < 2:
            continue
        name = f"%{x.name_hint}" if x.name_hint else "its input"
        why = ("a Welford state is not folded per row inside the column kernel" if any(is_welford(t.op) for t in ts)
               else "no pair reduces its leading dims and the rest")
        for t in ts:
            notes[id(t)] = (f"siblings: {len(ts)} reductions of {name} over different dims, one kernel each "
                            f"({why}), read {len(ts)} times ({len(ts) * nbytes(x)} B)")
    return notes


def _wrap(t: Task, plan: Plan, mapping: dict[SSAValue, SSAValue], opts: ScheduleOptions) -> F.SegmentOp:
    """The segment computing task `t`: its reads become operands, the ops between them and the
    values it writes are cloned in. Adds the written values' new names to `mapping`."""
    body = _anchor(t).parent_block()
    own, reads = _own_and_reads(t, plan, body)
    written = [r for r in t.outputs if not unstored_matmul_result(t, r)]
    seg, block = F.new_segment([mapping[v] for v in reads], [v.type for v in written],
                               SCHEDULER_OF_TASK[t.kind])
    inner = dict(zip(reads, block.args))
    for op in _slice(written + sorted(own, key=definition_order), set(reads), body):
        new = op.clone(value_mapper=inner)
        block.add_op(new)
    block.add_op(F.YieldOp([inner[v] for v in written]))
    for v, r in zip(written, seg.outputs):
        r.name_hint = v.name_hint
        mapping[v] = r
    seg.attributes["fuser.segment"] = StringAttr(describe(t, plan, reads, written))
    seg.attributes[PLAN_ATTR] = plan_attribute(SCHEDULER_OF_TASK[t.kind], _decided(t, plan, body, opts))
    if t.merges:
        seg.attributes["fuser.merged"] = StringAttr(", ".join(t.merges))
    seg.location = _anchor(t).location
    return seg


def _decided(t: Task, plan: Plan, body: Block, opts: ScheduleOptions) -> ScheduleOptions:
    """`opts` with what the scheduler decides for `t` filled in, as the options that reproduce
    it: the pointwise scheduler's block and vector width; the reduction scheduler's vector
    width, chunks (`split`) and, for an inner reduction, threads per row (`block`); the
    normalization scheduler's threads per row and vector width; the matmul scheduler's tile,
    grid and store path."""
    decision = None
    if t.kind in ("pointwise", "segment"):
        outputs = [t.op.result] if t.kind == "segment" else t.outputs
        decision = pointwise_schedule(outputs, plan.materialized, set(body.args), opts)
    elif t.kind == "reduction":
        decision = reduction_schedule(t, plan.materialized, set(body.args), opts)
    elif t.kind == "scan":
        decision = scan_schedule(t, plan.materialized, set(body.args), opts)
    elif t.kind == "sort":
        decision = sort_schedule(t, plan.materialized, set(body.args), opts)
    elif t.kind == "scatter":
        decision = scatter_schedule(t, plan.materialized, set(body.args), opts)
    elif t.kind == "normalization":
        p = t.group.decision.params
        decision = {"block": p.bx, "vector": p.lanes}
    elif t.kind == "matmul":
        try:
            schedule = matmul_schedule(t, opts)
        except ScheduleError:
            schedule = None  # the conversion reports it, where it always has
        decision = matmul_decision(schedule[0]) if schedule is not None else None
    return replace(opts, **decision) if decision else opts


def _anchor(t: Task) -> Operation:
    """The op a task is placed and reported at: its reduction / matmul / segment_set, or the op
    computing its first output (a pointwise task)."""
    return t.op if t.op is not None else t.outputs[0].owner


def _own_and_reads(t: Task, plan: Plan, body: Block) -> tuple[set[SSAValue], list[SSAValue]]:
    """The results of the ops `t` is built around, and the values its kernels load (in program
    order): its reads less what it computes itself."""
    own = {r for o in task_ops(t) for r in o.results}
    reads = sorted(task_reads(t, plan.materialized, set(body.args)), key=definition_order)
    return own, [v for v in reads if v not in own]


def _slice(roots: list[SSAValue], stop: set[SSAValue], body: Block) -> list[Operation]:
    """The ops computing `roots` from `stop` and the block's arguments, in program order."""
    needed: set[Operation] = set()
    todo = list(roots)
    while todo:
        v = todo.pop()
        if v in stop or v.owner is body or v.owner in needed:
            continue
        needed.add(v.owner)
        todo.extend(v.owner.operands)
    # (in one walk of the block: asking each op its index walks the block once per op, 3.9 s for
    # a kernel of 2000 outputs)
    return [op for op in body.ops if op in needed]


# ------------------------------------------------------------------ hand-written segments


def _pull_in_pointwise_operands(seg: F.SegmentOp) -> None:
    """Clone into `seg` the pointwise ops computing its operands from stored values and
    arguments: segments exchange stored values only (a pointwise value is recomputed where it
    is needed, never written for another kernel to read)."""
    outer = seg.parent_block()
    block = seg.body.block
    for i in reversed(range(len(seg.inputs))):
        x = seg.inputs[i]
        if x.owner is outer or isinstance(x.owner, BOUNDARY_OPS):
            continue
        leaves_set: set[SSAValue] = set()
        todo, seen = [x], set()
        while todo:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            if v.owner is outer or isinstance(v.owner, BOUNDARY_OPS):
                leaves_set.add(v)
            else:
                todo.extend(v.owner.operands)
        leaves_list = sorted(leaves_set, key=definition_order)
        existing = {v: a for v, a in zip(seg.inputs, block.args)}
        inner: dict[SSAValue, SSAValue] = {}
        first = block.first_op
        for v in leaves_list:
            if v not in existing:
                a = block.insert_arg(v.type, len(block.args))
                a.name_hint = v.name_hint
                seg.operands = list(seg.operands) + [v]
                existing[v] = a
            inner[v] = existing[v]
        for op in _slice([x], set(leaves_list), outer):
            new = op.clone(value_mapper=inner)
            block.insert_op_before(new, first)
        arg = block.args[i]
        arg.replace_all_uses_with(inner[x])
        block.erase_arg(arg)
        seg.operands = [o for j, o in enumerate(seg.operands) if j != i]


def _name_or_split(seg: F.SegmentOp, opts: ScheduleOptions) -> None:
    """Name the scheduler of a hand-written segment, or split it into the segments its ops need.
    A segment that names its scheduler is only recorded, when that scheduler takes it
    (convert-fusion-to-sched reports the mismatch otherwise)."""
    block = seg.body.block
    if seg.scheduler is None:
        _cut_matmul_operands(block)
    inner = plan_fusion(block, opts)
    if seg.scheduler is not None:
        if len(inner.tasks) != 1 or SCHEDULER_OF_TASK[inner.tasks[0].kind] != seg.scheduler_name:
            return
    if len(inner.tasks) == 1:
        t = inner.tasks[0]
        seg.properties["scheduler"] = StringAttr(SCHEDULER_OF_TASK[t.kind])
        _, reads = _own_and_reads(t, inner, block)
        written = list(block.last_op.operands)
        seg.attributes["fuser.segment"] = StringAttr("hand-written; " + describe(t, inner, reads, written))
        if PLAN_ATTR not in seg.attributes:  # a plan written by hand is kept
            seg.attributes[PLAN_ATTR] = plan_attribute(SCHEDULER_OF_TASK[t.kind], _decided(t, inner, block, opts))
        return
    if not inner.tasks:
        return  # passes its operands through: nothing to schedule (their buffers carry on)
    # Split: the sub-segments go before `seg`, reading its operands; its results become theirs.
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, seg.inputs))
    outer = seg.parent_block()
    for t in inner.tasks:
        sub = _wrap(t, inner, mapping, opts)
        sub.attributes["fuser.segment"] = StringAttr(
            f"split from a hand-written segment of {len(inner.tasks)} kernel tasks; " + sub.attributes["fuser.segment"].data)
        outer.insert_op_before(sub, seg)
    for r, v in zip(seg.outputs, block.last_op.operands):
        r.replace_all_uses_with(mapping[v])


# ------------------------------------------------------------------ the record


def describe(t: Task, plan: Plan, reads: list[SSAValue], written: list[SSAValue]) -> str:
    """What the scheduler decided for task `t`, and the bytes its kernels read and write."""
    traffic = f"reads {sum(map(nbytes, reads))} B, writes {sum(map(nbytes, written))} B"
    if t.kind == "normalization":
        what = t.group.decision.reason
    elif t.kind == "reduction" and t.siblings:
        ops = task_ops(t)   # the column reduction first
        x = t.op.input
        name = f"%{x.name_hint}" if x.name_hint else "the input"
        what = (f"joint reduction of {name} {list(shape_of(x))}: " +
                " and ".join(f"'{op.name}' {op.kind.data} over dims {sorted(op.reduced_dims)}" for op in ops) +
                f"; one read of {name} ({nbytes(x)} B) where a kernel each would read it twice")
    elif t.kind == "reduction":
        op = t.op
        what = f"'{op.name}' over dims {sorted(op.reduced_dims)} of {list(shape_of(op.input))}"
        view = reduction_view(shape_of(op.input), op.reduced_dims).describe()
        if view:
            what += f" as the {view}"
        refused = [g for g in plan.groups if op in g.ops and not g.decision.persistent]
        if refused:
            what += f"; resegmented: the normalization scheduler refused its group ({refused[0].decision.reason})"
        note = op.attributes.get("fuser.welford")
        if note is not None and note.data.startswith("kept") and note.data != "kept (mode=never)":
            what += "; the Welford translation was tried and undone"
    elif t.kind == "scan":
        op = t.op
        shape = shape_of(op.input)
        what = f"'{op.name}' {op.kind.data} along dim {op.scan_dim} of {list(shape)}"
        epilogue = [o for o in t.outputs if o is not op.result]
        if epilogue:
            what += f" with {len(epilogue)} output(s) computed from it"
    elif t.kind == "scatter":
        op = t.op
        what = (f"'{op.name}' of {list(shape_of(op.src))} into {list(shape_of(op.input))} along dim {op.dim.data} "
                "(a copy, then atomic adds)")
    elif t.kind == "sort":
        op = t.op
        shape = shape_of(op.input)
        what = (f"'{op.name}' {'descending' if op.is_descending else 'ascending'} along dim {op.sort_dim} of "
                f"{list(shape)}" + (f", the first {op.kept}" if op.k is not None else ""))
        epilogue = [o for o in t.outputs if o not in op.results]
        if epilogue:
            what += f" with {len(epilogue)} output(s) computed from it"
    elif t.kind == "matmul":
        op = t.op
        m, n, k = op.mnk()
        what = f"matmul {m}x{n}x{k}"
        if t.siblings:
            what += f" with {len(t.siblings)} sibling(s) sharing A"
        note = op.attributes.get("fuser.split_k")
        if note is not None:
            what += f"; split-K: {note.data}"
    elif t.kind == "segment":
        what = f"segment_set of {list(shape_of(t.op.result))}"
        reason = t.op.attributes.get("fuser.segment_reason")
        if reason is not None:
            what += f"; {reason.data}"
    else:
        what = f"{len(t.outputs)} output(s) of {list(shape_of(t.outputs[0]))}"
    return f"{what}; {traffic}"


