"""The normalization (persistent) scheduler's emitter: statistics and the normalize step in one kernel.

A *normalization group* is a set of inner reductions (sum/max/min, Welford, var_mean) over the
same rows of one input shape, together with the outputs computed from their results at the row
(`x - mean`, `(x - mean) * rstd * w + b`, `exp(x - max)`, `rsqrt(var + eps)`, ...). When the row
fits on chip, one kernel does it all: each thread loads its part of the row once into registers
(16-byte vectors), the reductions run over those registers (a reduction that needs another's
result, like a two-pass variance, runs in a later *stage* over the same registers), and the
outputs are computed from the registers and stored. Layer norm thus reads its input once and
writes its output once.

The planner forms the groups (`_normalization_merges`, lowering/planner.py) and asks the heuristic
(`normalization_params`, lowering/schedulers/normalization.py) whether each keeps its rows on
chip; when the row does not fit the group is not formed and the general plan runs instead (a
reduction kernel, then a pointwise kernel that reads the input again).
"""

from __future__ import annotations

import math

from xdsl.dialects import arith

from xdsl.ir import SSAValue

from fuser.dialects import sched
from fuser.dialects import fusion as F
from fuser.lowering.combiners import Joint, finalize, is_welford, select_state, state_for
from fuser.lowering.common import Task, by_name, leaves, reaches
from fuser.lowering.emitter import KernelEmitter
from fuser.lowering.evaluator import Evaluator
from fuser.lowering.kernel_builder import KernelBuilder, emit_if
from fuser.lowering.planner import NormGroup
from fuser.lowering.reduction import block_reduce, store_row_outputs


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
    row_shape, col_shape = g.in_shape[:g.k], g.in_shape[g.k:]
    rows = math.prod(row_shape)
    cols = math.prod(col_shape)
    row_vecs = cols // p.lanes
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
        idx, valid = [], []
        for s in range(p.slots):
            j = kb.add(tx, s * p.bx)
            if (s + 1) * p.bx > row_vecs:   # the last slots may fall past the row's end
                valid.append(kb.lt(j, row_vecs))
                j = kb.v(arith.MinUIOp(j, kb.c(row_vecs - 1)))
            else:
                valid.append(None)
            idx.append(row_idx + kb.delinearize(kb.mul(j, p.lanes), col_shape))
        overrides: dict[SSAValue, SSAValue] = {}   # reduction results, filled stage by stage
        if not p.smem:
            # One Evaluator for the whole kernel: a value loaded or computed at a slot is reused
            # by every later stage and output (its memo is the register cache).
            ev = Evaluator(kb, {v: amap[v] for v in reads}, overrides)

            def evaluator():
                return ev
        else:
            # Copy the rows into shared memory once; every stage and the outputs read them there
            # with a fresh Evaluator, so nothing stays live in registers between stages.
            copies = {}
            for v in g.cached:
                buf = kb.alloc([p.by, cols], F._elem(v), f"row_{v.name_hint}" if v.name_hint else "row")
                copies[v] = buf
                for s in range(p.slots):
                    col = kb.linearize(idx[s][g.k:], col_shape)
                    kb.store(kb.load(amap[v], idx[s], p.lanes), buf, [ty, col])
            kb.emit(sched.BarrierOp())
            to_smem = {v: (lambda ix: [ty, kb.linearize(ix[g.k:], col_shape)]) for v in copies}

            def evaluator():
                return Evaluator(kb, {**{v: amap[v] for v in reads}, **copies}, overrides, to_smem)
        for ops in stages:
            ev = evaluator()
            parts = [state_for(op) for op in ops]
            joint = Joint(parts)
            state = []
            shifts = {}
            for op, st in zip(ops, parts):
                s_op = st.identity(kb)
                if is_welford(op):  # Welford runs on x - (the row's first element); see combiners.py
                    shifts[op] = kb.ext(ev(op.input, row_idx + [kb.c(0)] * len(col_shape), 1)[0])
                for s in range(p.slots):
                    for x in ev(op.input, idx[s], p.lanes):
                        x = kb.ext(x)
                        new = st.update(kb, s_op, kb.fsub(x, shifts[op]) if op in shifts else x)
                        s_op = new if valid[s] is None else select_state(kb, valid[s], new, s_op)
                state += st.settle(kb, s_op)
            state = block_reduce(kb, joint, state, tx, ty, p.bx, p.by)
            for op, s_op in zip(ops, joint.split(state)):
                overrides.update(finalize(kb, op, s_op, shifts.get(op)))
        ok_row = kb.lt(row, rows)
        row_outs = [r for r in g.result_list if r in outputs] + g.row_outputs  # unread statistics stay in registers
        emit_if(kb, kb.andi(kb.eq(tx, 0), ok_row),
                lambda b: store_row_outputs(b, row_outs, amap, row, dict(overrides)))
        ev = evaluator()
        for o in g.full_outputs:
            t = F._elem(o)
            for s in range(p.slots):
                xs = [kb.trunc(x, t) if F.is_float(t) else x for x in ev(o, idx[s], p.lanes)]
                cond = ok_row if valid[s] is None else kb.andi(ok_row, valid[s])
                emit_if(kb, cond, lambda b, xs=xs, s=s: b.store(xs, amap[o], idx[s]))

    em.kernel(host_bufs, (math.ceil(rows / p.by), 1, 1), (p.bx, p.by, 1), body, schedule=p.describe())
