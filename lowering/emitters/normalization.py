"""The normalization (persistent) scheduler's emitter: statistics and the normalize step in one kernel.

A *normalization group* is a set of inner reductions (sum/max/min, Welford, var_mean) over the
same rows of one input shape, together with the outputs computed from their results at the row
(`x - mean`, `(x - mean) * rstd * w + b`, `exp(x - max)`, `rsqrt(var + eps)`, ...). When the row
fits on chip, one kernel does it all: each thread loads its part of the row once into registers
(16-byte vectors), the reductions run over those registers (a reduction that needs another's
result, like a two-pass variance, runs in a later *stage* over the same registers), and the
outputs are computed from the registers and stored. Layer norm thus reads its input once and
writes its output once.

The planner forms the groups (`_normalization_merges`, lowering/analysis/planner.py) and asks the heuristic
(`normalization_params`, lowering/heuristics/normalization.py) whether each keeps its rows on
chip; when the row does not fit the group is not formed and the general plan runs instead (a
reduction kernel, then a pointwise kernel that reads the input again).
"""

from __future__ import annotations

import math

from xdsl.dialects import arith

from xdsl.ir import Block, SSAValue

from fuser.dialects import sched
from fuser.dialects import fusion as F
from fuser.lowering.emitters.combiners import Joint, finalize, select_state, state_for
from fuser.lowering.common import Task, by_name, elem_bytes, is_welford, leaves, reaches, shape_of
from fuser.lowering.emitters.emitter import KernelEmitter
from fuser.lowering.emitters.evaluator import Evaluator
from fuser.lowering.emitters.kernel_builder import KernelBuilder, emit_if
from fuser.lowering.analysis.planner import NormGroup, segment_sets_of
from fuser.lowering.emitters.reduction import block_reduce, store_row_outputs
from fuser.lowering.heuristics.normalization import REDUCE_SCRATCH_BYTES
from fuser.dialects.sched import HOPPER_SMEM_PER_BLOCK


# Registers a thread gives to loads in flight while copying rows to shared memory: a 1024-thread
# block has 32 a thread when two blocks share an SM.
COPY_BATCH_REGISTERS = 16
# Output elements a thread computes before storing them, in the looped output pass, and the
# blocks of a looped kernel an SM holds at once (their registers: 32 a thread). Measured on an
# H200, a cross-entropy gradient over 8192 x 50257 bf16 (floor 0.383 ms): one element a round
# 1.007 ms; 8 a round 0.678, with 2 blocks 0.640; 16 a round 0.894 (44 registers: one block),
# with 2 blocks 0.664.
OUTPUT_ROUND_ELEMENTS = 8
LOOPED_MIN_BLOCKS = 2


def _stages(g: NormGroup, materialized: set, args: set) -> list[list]:
    """Reductions grouped by how many other group results their input needs first."""
    stage: dict = {}
    for op in g.ops:
        before = [p for p in g.ops if p is not op and p in stage
                  and reaches(op.input, set(p.results), materialized, args)]
        stage[op] = 1 + max((stage[p] for p in before), default=-1)
    return [[op for op in g.ops if stage[op] == s] for s in range(max(stage.values()) + 1)]


def emit_persistent(em: KernelEmitter, task: Task, materialized: set, args: set) -> None:
    """One kernel for the normalization task `task` (its group's reductions and outputs)."""
    g: NormGroup = task.group
    p = g.decision.params
    row_shape = g.in_shape[:g.k]
    rows = math.prod(row_shape)
    results = g.results
    outputs = list(task.outputs)
    reads: set[SSAValue] = set()
    for e in [op.input for op in g.ops] + g.full_outputs + g.row_outputs:
        reads |= leaves(e, g.materialized | results, args)
    reads = by_name(reads - results - set(outputs))
    vals = outputs + reads
    host_bufs = em.kernel_buffers(vals)
    stages = _stages(g, g.materialized, args)

    def body(kb: KernelBuilder, kargs):
        amap = em.arg_map(host_bufs, kargs, vals)
        tx, ty = kb.tid("x"), kb.tid("y")
        row = kb.add(kb.mul(kb.bid("x"), p.by), ty)
        row_c = kb.v(arith.MinUIOp(row, kb.c(rows - 1)))   # tail rows recompute row R-1, never store
        row_idx = kb.delinearize(row_c, row_shape)
        overrides: dict[SSAValue, SSAValue] = {}   # reduction results, filled stage by stage
        sources = {v: amap[v] for v in reads}
        if p.looped:
            copies = _rows_in_shared(kb, g, p, stages, sources, overrides, row_c, row_idx, tx, ty)
        else:
            cache = _rows_in_registers(kb, g, p, stages, sources, overrides, row_idx, tx, ty)
        ok_row = kb.lt(row, rows)
        stores = _full_stores(g, outputs, amap)
        if p.looped:
            _store_outputs_looped(kb, g, p, sources, overrides, copies, row_idx, tx, ty, ok_row, stores)
        else:
            _store_outputs_unrolled(kb, g, p, cache, ok_row, stores)
        # the row's statistics last: a store before the full-size outputs' loads would hold them
        # back (they may alias it), and nothing here reads these buffers
        row_outs = [r for r in g.result_list if r in outputs] + g.row_outputs  # unread statistics stay in registers
        emit_if(kb, kb.andi(kb.eq(tx, 0), ok_row),
                lambda b: store_row_outputs(b, row_outs, amap, row, dict(overrides)))

    # A looped kernel caches nothing in registers: two of its 1024-thread blocks share an SM (one
    # block's reductions and barriers run under the other's loads), which caps a thread at 32
    # registers; left to itself ptxas took 44 for the output rounds and ran one block an SM.
    fits = (p.bx * p.by * LOOPED_MIN_BLOCKS <= 2048
            and LOOPED_MIN_BLOCKS * (p.smem + REDUCE_SCRATCH_BYTES) <= HOPPER_SMEM_PER_BLOCK)
    min_blocks = LOOPED_MIN_BLOCKS if p.looped and fits else 0
    em.kernel(host_bufs, (math.ceil(rows / p.by), 1, 1), (p.bx, p.by, 1), body, schedule=p.describe(),
              min_blocks=min_blocks)


def _slots(kb: KernelBuilder, p, row_idx: list, col_shape, row_vecs: int, tx) -> tuple[list, list]:
    """Each slot's index into the row and, for the slots that may fall past its end, the
    condition that this thread's vector is inside it."""
    idx, valid = [], []
    for s in range(p.slots):
        j = kb.add(tx, s * p.bx)
        if (s + 1) * p.bx > row_vecs:   # the last slots may fall past the row's end
            valid.append(kb.lt(j, row_vecs))
            j = kb.v(arith.MinUIOp(j, kb.c(row_vecs - 1)))
        else:
            valid.append(None)
        idx.append(row_idx + kb.delinearize(kb.mul(j, p.lanes), col_shape))
    return idx, valid


def _fold_element(kb: KernelBuilder, st, s_op: list, x, shift, pos) -> list:
    """Fold one element; `pos()` is its position in the row (for argmax and argmin)."""
    x = kb.ext(x)
    return st.update(kb, s_op, kb.fsub(x, shift) if shift is not None else x, pos)


def _welford_shift(kb: KernelBuilder, ev: Evaluator, op, row_idx: list, ncols: int):
    """Welford runs on x - (the row's first element); see combiners.py."""
    return kb.ext(ev(op.input, row_idx + [kb.c(0)] * ncols, 1)[0]) if is_welford(op) else None


def _finish_stage(kb: KernelBuilder, ops, joint: Joint, state: list, shifts: dict, overrides: dict, tx, ty, p) -> None:
    state = block_reduce(kb, joint, state, tx, ty, p.bx, p.by)
    for op, s_op in zip(ops, joint.split(state)):
        overrides.update(finalize(kb, op, s_op, shifts.get(op)))


def _rows_in_registers(kb: KernelBuilder, g: NormGroup, p, stages, sources, overrides, row_idx, tx, ty) -> tuple:
    """Every stage reads the row through one Evaluator, unrolled over the slots: a value loaded
    or computed at a slot is reused by every later stage and output (its memo is the register
    cache). Returns (the Evaluator, the slots' indices, their conditions) for the outputs."""
    col_shape = g.in_shape[g.k:]
    row_vecs = math.prod(col_shape) // p.lanes
    idx, valid = _slots(kb, p, row_idx, col_shape, row_vecs, tx)
    ev = Evaluator(kb, sources, overrides, overrides_per_row=True)
    for ops in stages:
        parts = [state_for(op) for op in ops]
        state, shifts = [], {}
        for op, st in zip(ops, parts):
            s_op = st.identity(kb)
            shifts[op] = _welford_shift(kb, ev, op, row_idx, len(col_shape))
            for s in range(p.slots):
                for l, x in enumerate(ev(op.input, idx[s], p.lanes)):
                    pos = lambda s=s, l=l: kb.add(kb.mul(kb.add(tx, s * p.bx), p.lanes), l)  # noqa: E731
                    new = _fold_element(kb, st, s_op, x, shifts[op], pos)
                    s_op = new if valid[s] is None else select_state(kb, valid[s], new, s_op)
            state += st.settle(kb, s_op)
        _finish_stage(kb, ops, Joint(parts), state, shifts, overrides, tx, ty, p)
    return ev, idx, valid


def _full_stores(g: NormGroup, outputs: list, amap: dict) -> dict:
    """Full-size output -> the buffers its row is stored into: its own, and those of the
    segment_sets of it that the task writes (planner._fold_segment_sets), unless one shares the
    output's buffer (a returned value's segment_set: fusion_to_sched._segment_buffers)."""
    stores = {o: [amap[o]] for o in g.full_outputs}
    for s in segment_sets_of(outputs, g.full_outputs):
        if amap[s] not in stores[s.owner.input]:
            stores[s.owner.input].append(amap[s])
    return stores


def _store_outputs_unrolled(kb: KernelBuilder, g: NormGroup, p, cache: tuple, ok_row, stores: dict) -> None:
    ev, idx, valid = cache
    for o in g.full_outputs:
        t = F._elem(o)
        # every slot's values before the first store: the loads they need (of tensors only the
        # outputs read, not kept in registers) are then in flight together, where a store
        # between them would keep each slot's loads waiting for the last slot's store (they may
        # alias it). A slot's values are at most `slots * lanes` registers, the cache's budget.
        values = [[kb.trunc(x, t) if F.is_float(t) else x for x in ev(o, idx[s], p.lanes)] for s in range(p.slots)]
        for s, xs in enumerate(values):
            cond = ok_row if valid[s] is None else kb.andi(ok_row, valid[s])
            for buf in stores[o]:
                emit_if(kb, cond, lambda b, xs=xs, s=s, buf=buf: b.store(xs, buf, idx[s]))


def _shared_evaluator(b: KernelBuilder, sources: dict, overrides: dict, copies: dict, ty, col_shape) -> Evaluator:
    """An Evaluator at `b` that reads the cached rows from their shared-memory copies."""
    maps = {v: (lambda ix, kv=kv: [ty, b.linearize(ix[kv:], col_shape)]) for v, (_, kv) in copies.items()}
    return Evaluator(b, {**sources, **{v: buf for v, (buf, _) in copies.items()}}, overrides, maps,
                     overrides_per_row=True)


def _row_loop(kb: KernelBuilder, row_vecs: int, init: list,
              start: int = 0) -> tuple[KernelBuilder, SSAValue, list, sched.ForOp]:
    """A loop over the row's vectors from `start`, thread tx taking start + tx, start + tx + bx,
    ...: (its body's builder, the vector index, the loop-carried values, the loop)."""
    loop = sched.ForOp(kb.c(start), kb.c(row_vecs), kb.c(1), init,
                       Block(arg_types=[sched.IndexType()] + [SSAValue.get(x).type for x in init]), bind="thread.x")
    kb.emit(loop)
    j, *carried = loop.body.block.args
    return kb.at(loop.body.block), j, carried, loop


def _rows_in_shared(kb: KernelBuilder, g: NormGroup, p, stages, sources, overrides, row_c, row_idx, tx,
                    ty) -> dict:
    """Copy the cached rows into shared memory once, unrolled so that a thread's loads are in
    flight together; each stage then loops over the row there, so that no slot's value or index
    stays live from one stage to the next (a 1024-thread block has 64 registers a thread, a
    50257-wide row 50 slots). Returns the copies: value -> (buffer, its number of row dims)."""
    col_shape = g.in_shape[g.k:]
    cols = math.prod(col_shape)
    row_vecs = cols // p.lanes
    copies = {}
    computed = Evaluator(kb, sources, overrides, overrides_per_row=True)  # a cached index-map result, where read
    for v in g.cached:
        kv = len(shape_of(v)) - len(col_shape)   # the rows may be split differently (a reshape)
        v_row = kb.delinearize(row_c, shape_of(v)[:kv])
        buf = kb.alloc([p.by, cols], F._elem(v), f"row_{v.name_hint}" if v.name_hint else "row")
        copies[v] = (buf, kv)
        # Loads in batches ahead of their stores, so that a batch is in flight at once.
        batch = max(1, COPY_BATCH_REGISTERS // math.ceil(p.lanes * elem_bytes(F._elem(v)) / 4))
        for first in range(0, p.slots, batch):
            loaded = []
            for s in range(first, min(first + batch, p.slots)):
                j = kb.add(tx, s * p.bx)
                if (s + 1) * p.bx > row_vecs:   # past the end: copy the last vector again
                    j = kb.v(arith.MinUIOp(j, kb.c(row_vecs - 1)))
                col = kb.mul(j, p.lanes)
                at = v_row + kb.delinearize(col, col_shape)
                if v in sources:  # a kernel input (not an output of this kernel: that is computed here)
                    x = kb.load(sources[v], at, p.lanes)
                else:  # computed in its compute type (a bf16 input read through a view: f32), kept as stored
                    x = [kb.trunc(e, F._elem(v)) if F.is_float(F._elem(v)) else e for e in computed(v, at, p.lanes)]
                loaded.append((x, col))
            for x, col in loaded:
                kb.store(x, buf, [ty, col])
    kb.emit(sched.BarrierOp())
    for ops in stages:
        parts = [state_for(op) for op in ops]
        first = _shared_evaluator(kb, sources, overrides, copies, ty, col_shape)
        shifts = {op: _welford_shift(kb, first, op, row_idx, len(col_shape)) for op in ops}
        lb, j, carried, loop = _row_loop(kb, row_vecs, [x for st in parts for x in st.identity(kb)])
        ev = _shared_evaluator(lb, sources, overrides, copies, ty, col_shape)
        ix = row_idx + lb.delinearize(lb.mul(j, p.lanes), col_shape)
        folded, at = [], 0
        for op, st in zip(ops, parts):
            s_op = carried[at:at + st.width]
            at += st.width
            for l, x in enumerate(ev(op.input, ix, p.lanes)):
                s_op = _fold_element(lb, st, s_op, x, shifts[op], lambda l=l: lb.add(lb.mul(j, p.lanes), l))
            folded += s_op
        lb.emit(sched.YieldOp(*folded))
        res, state, at = list(loop.results), [], 0
        for st in parts:
            state += st.settle(kb, res[at:at + st.width])
            at += st.width
        _finish_stage(kb, ops, Joint(parts), state, shifts, overrides, tx, ty, p)
    return copies


def _store_outputs_looped(kb: KernelBuilder, g: NormGroup, p, sources, overrides, copies, row_idx, tx, ty, ok_row,
                          stores: dict) -> None:
    """The full-size outputs, over the row in rounds of a few vectors a thread: every value of a
    round is computed before its first store, so that the round's global loads (of tensors not
    cached in shared memory) are in flight together rather than one at a time behind stores
    they may alias (a loss gradient over a 50257-wide row reads one bf16 element a vector).
    The rounds cover whole multiples of their width, with no bounds to check (a round's
    addresses are one base plus constants, one register); the rest of the row is a loop of
    one vector a thread."""
    if not g.full_outputs:
        return
    col_shape = g.in_shape[g.k:]
    row_vecs = math.prod(col_shape) // p.lanes
    unroll = max(1, min(p.slots, OUTPUT_ROUND_ELEMENTS // (p.lanes * len(g.full_outputs))))
    per_round = unroll * p.bx
    rounds = row_vecs // per_round

    def store_vectors(lb: KernelBuilder, vectors: list) -> None:
        ev = _shared_evaluator(lb, sources, overrides, copies, ty, col_shape)
        at = [row_idx + lb.delinearize(lb.mul(j, p.lanes), col_shape) for j in vectors]
        values = {o: [[lb.trunc(x, F._elem(o)) if F.is_float(F._elem(o)) else x for x in ev(o, ix, p.lanes)]
                      for ix in at] for o in g.full_outputs}
        for o in g.full_outputs:
            for ix, xs in zip(at, values[o]):
                for buf in stores[o]:
                    emit_if(lb, ok_row, lambda b, xs=xs, ix=ix, buf=buf: b.store(xs, buf, ix))

    def round_(lb: KernelBuilder, r, _):
        first = lb.add(lb.mul(r, per_round), tx)
        store_vectors(lb, [lb.add(first, u * p.bx) for u in range(unroll)])
        return []

    if rounds:
        kb.serial_for(0, rounds, [], round_)
    if rounds * per_round < row_vecs:
        lb, j, _, _ = _row_loop(kb, row_vecs, [], start=rounds * per_round)
        store_vectors(lb, [j])
        lb.emit(sched.YieldOp())
