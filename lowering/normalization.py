"""The normalization (persistent) scheduler: statistics and the normalize step in one kernel.

A *normalization group* is a set of inner reductions (sum/max/min, Welford, var_mean) over the
same rows of one input shape, together with the outputs computed from their results at the row
(`x - mean`, `(x - mean) * rstd * w + b`, `exp(x - max)`, `rsqrt(var + eps)`, ...). When the row
fits on chip, one kernel does it all: each thread loads its part of the row once into registers
(16-byte vectors), the reductions run over those registers (a reduction that needs another's
result, like a two-pass variance, runs in a later *stage* over the same registers), and the
outputs are computed from the registers and stored. Layer norm thus reads its input once and
writes its output once.

The heuristic (`normalization_params`) only answers: does this group run persistently, and with
what geometry? It never changes the IR, so `fusion-translate-welford{mode=auto}` can ask it about
a translated copy. When the row does not fit in the register budget the group is not formed and
the general plan runs instead (a reduction kernel, then a pointwise kernel that reads the input
again).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import SSAValue

from fuser.dialects import sched
from fuser.dialects import fusion as F
from fuser.lowering.combiners import Joint, finalize, is_welford, select_state, state_for
from fuser.lowering.fusion_to_sched import (
    REDUCTION_OPS, SHAPE_OPS, Evaluator, KernelEmitter, Task, _if, _leaves, block_reduce, elem_bytes, next_pow2,
    shape_of, vector_lanes)
from fuser.lowering.kernel_builder import KernelBuilder
from fuser.lowering.schedulers.options import ScheduleOptions

TARGET_VECTORS_PER_THREAD = 4
ROW_THREADS_MAX = 1024
REGISTER_FILE = 65536          # 32-bit registers per SM on Hopper
CACHE_REGISTER_CAP = 64        # at most this many registers of a thread hold the cached row
SHARED_CACHE_BYTES = 200 * 1024  # of the 227 KB a Hopper block may have; the rest is for reductions
MAX_SLOTS = 64                 # vectors per thread the kernel unrolls over


@dataclass(frozen=True)
class NormParams:
    bx: int          # threads per row
    by: int          # rows per block
    slots: int       # vectors of the row each thread handles
    lanes: int       # elements per vector (16-byte accesses)
    smem: int = 0    # bytes of shared memory holding the rows (0: the rows stay in registers)

    def describe(self) -> str:
        where = f"in {self.smem} bytes of shared memory" if self.smem else "in registers"
        return (f"persistent: {self.by} row(s)/block, {self.bx} threads/row, "
                f"{self.slots} x {self.lanes}-element vectors/thread {where}")


@dataclass(frozen=True)
class NormDecision:
    params: NormParams | None
    reason: str            # why not, when params is None; the parameters otherwise

    @property
    def persistent(self) -> bool:
        return self.params is not None


def normalization_params(rows: int, cols: int, lanes: int, cached_bytes: list[int], block: int = 0) -> NormDecision:
    """Geometry for keeping rows of `cols` elements on chip, or why that is not possible.

    `cached_bytes` lists the element size of each full-size input the rows are read from. Rows
    stay in registers when they fit in the register budget; longer rows are copied once into
    shared memory (one row per block, 1024 threads) when that fits; otherwise the caller falls
    back to a non-persistent plan. `block` caps the threads per row."""
    row_vecs = cols // lanes
    n_cached = max(1, len(cached_bytes))
    cap = min(block or ROW_THREADS_MAX, ROW_THREADS_MAX)
    bx = min(cap, max(32, next_pow2(math.ceil(row_vecs / TARGET_VECTORS_PER_THREAD))))
    slots = math.ceil(row_vecs / bx)
    by = max(1, min(256 // bx, next_pow2(rows)))
    threads = bx * by
    budget = min(CACHE_REGISTER_CAP, REGISTER_FILE // threads // 2)
    need = slots * lanes * n_cached
    if need <= budget:
        p = NormParams(bx, by, slots, lanes)
        return NormDecision(p, p.describe())
    row_bytes = cols * sum(cached_bytes or [4])
    if row_bytes <= SHARED_CACHE_BYTES and slots <= MAX_SLOTS:
        p = NormParams(bx, 1, slots, lanes, row_bytes)
        return NormDecision(p, p.describe())
    return NormDecision(None, f"a row of {cols} elements from {n_cached} input(s) needs {need} registers/thread "
                              f"at {threads} threads/block (budget {budget}) or {row_bytes} bytes of shared "
                              f"memory (budget {SHARED_CACHE_BYTES})")


# ------------------------------------------------------------------ grouping


@dataclass
class NormGroup:
    ops: list                                   # reductions, in program order
    in_shape: tuple[int, ...]
    k: int                                      # rows = prod(in_shape[:k])
    full_outputs: list[SSAValue] = field(default_factory=list)
    row_outputs: list[SSAValue] = field(default_factory=list)
    decision: NormDecision | None = None
    materialized: set = field(default_factory=set)  # values read from buffers (the group's outputs are not)
    cached: list[SSAValue] = field(default_factory=list)  # full-size inputs read at the row: what stays on chip

    @property
    def results(self) -> set[SSAValue]:
        return set(self.result_list)

    @property
    def result_list(self) -> list[SSAValue]:
        return [r for op in self.ops for r in op.results]


def _inner_split(op) -> int | None:
    """k such that `op` reduces exactly the trailing dims k..rank-1, else None."""
    rank = len(shape_of(op.input))
    dims = sorted(op.reduced_dims)
    k = rank - len(dims)
    return k if dims == list(range(k, rank)) else None


def _reaches(v: SSAValue, targets: set[SSAValue], materialized: set, args: set) -> bool:
    return bool(_leaves(v, materialized | targets, args) & targets)


def _aligned(v: SSAValue, g: NormGroup, row_region: bool, materialized: set, args: set) -> bool:
    """True if computing `v` at a position of the current row reads the group's results only at
    that row. In the full region indices are (row, column); in the row region only the row."""
    results = g.results
    if v in results:
        return row_region
    if v in materialized or v in args or not _reaches(v, results, materialized, args):
        return True
    op = v.owner
    rows = math.prod(g.in_shape[:g.k])
    if isinstance(op, F.BroadcastOp) and not row_region:
        new = list(op.dims.get_values())
        return (shape_of(v) == g.in_shape and new == list(range(g.k, len(g.in_shape)))
                and _aligned(op.input, g, True, materialized, args))
    if isinstance(op, F.ReshapeOp) and row_region:
        return math.prod(shape_of(op.input)) == rows and _aligned(op.input, g, True, materialized, args)
    if isinstance(op, SHAPE_OPS) or not isinstance(op, F.POINTWISE_OPS):
        return False
    return all(_aligned(o, g, row_region, materialized, args) for o in op.operands)


def form_groups(tasks: list[Task], materialized: set, args: set, lvl,
                opts: ScheduleOptions) -> tuple[list[Task], list[NormGroup]]:
    """Merge inner reductions and the outputs computed from them at the row into persistent
    normalization tasks, where the row fits. Returns the new task list and every group
    considered, with the scheduler's decision (accepted or refused, and why)."""
    reds = [t for t in tasks if t.kind == "reduction" and _inner_split(t.op) is not None]
    taken: set[int] = set()
    new_tasks: list[Task] = []
    groups: list[NormGroup] = []
    mat = materialized
    for seed in reds:
        if id(seed) in taken:
            continue
        g = NormGroup([seed.op], shape_of(seed.op.input), _inner_split(seed.op), materialized=mat)
        members = [seed]
        for t in reds:
            if t is seed or id(t) in taken or t.order < seed.order:
                continue
            if shape_of(t.op.input) != g.in_shape or _inner_split(t.op) != g.k:
                continue
            deps = _leaves(t.op.input, mat - set(t.op.results), args)
            if any(d not in g.results and lvl(d) >= seed.level for d in deps):
                continue
            if _aligned(t.op.input, g, False, mat, args):
                g.ops.append(t.op)
                members.append(t)
        # Outputs computed from the group's results at the row. Inside the kernel they are
        # computed in registers, never read back from their buffers.
        rows = math.prod(g.in_shape[:g.k])
        candidates = [o for t in tasks if t.kind == "pointwise" or t in members for o in t.outputs
                      if o not in g.results and o not in args]
        absorbed: list[SSAValue] = []
        for o in candidates:
            deps = _leaves(o, mat, args)
            if not (deps & g.results) or any(d not in g.results and lvl(d) >= seed.level for d in deps):
                continue
            if shape_of(o) == g.in_shape and _aligned(o, g, False, mat, args):
                g.full_outputs.append(o)
                absorbed.append(o)
            elif math.prod(shape_of(o)) == rows and _aligned(o, g, True, mat, args):
                g.row_outputs.append(o)
                absorbed.append(o)
        if len(g.ops) == 1 and not g.full_outputs:
            continue  # a lone reduction: the reduction schedulers (with row splitting) do better
        g.cached = _cached_inputs(g, mat, args)
        max_bytes = max([elem_bytes(F._elem(v)) for v in g.cached + g.full_outputs] or [4])
        lanes = vector_lanes(g.in_shape[-1], max_bytes, opts.vector)
        g.decision = normalization_params(rows, math.prod(g.in_shape[g.k:]), lanes,
                                          [elem_bytes(F._elem(v)) for v in g.cached], opts.block)
        groups.append(g)
        if not g.decision.persistent:
            continue
        for t in members:
            taken.add(id(t))
        task = Task("normalization", seed.order, seed.level, seed.op, g.result_list + g.row_outputs + g.full_outputs)
        task.group = g
        new_tasks.append(task)
        for t in tasks:
            if t.kind == "pointwise":
                t.outputs = [o for o in t.outputs if o not in absorbed]
    out = [t for t in tasks if id(t) not in taken and not (t.kind == "pointwise" and not t.outputs)] + new_tasks
    out.sort(key=lambda t: (t.level, t.kind == "pointwise", t.order))
    return out, groups


def _cached_inputs(g: NormGroup, materialized: set, args: set) -> list[SSAValue]:
    """Full-size tensors the group reads at the row: what the registers hold."""
    exprs = [op.input for op in g.ops] + g.full_outputs
    leaves: set[SSAValue] = set()
    for e in exprs:
        leaves |= _leaves(e, materialized, args)
    return sorted((v for v in leaves if v not in g.results and shape_of(v) == g.in_shape),
                  key=lambda v: str(v.name_hint))


# ------------------------------------------------------------------ the kernel


def _stages(g: NormGroup, materialized: set, args: set) -> list[list]:
    """Reductions grouped by how many other group results their input needs first."""
    stage: dict = {}
    for op in g.ops:
        before = [p for p in g.ops if p is not op and p in stage
                  and _reaches(op.input, set(p.results), materialized, args)]
        stage[op] = 1 + max((stage[p] for p in before), default=-1)
    return [[op for op in g.ops if stage[op] == s] for s in range(max(stage.values()) + 1)]


def emit_persistent(em: KernelEmitter, task: Task, materialized: set, args: set) -> None:
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
        reads |= _leaves(e, g.materialized | results, args)
    reads = sorted(reads - results - set(outputs), key=lambda v: str(v.name_hint))
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
            copies, offset = {}, 0
            for v in g.cached:
                buf = kb.v(sched.AllocOp(sched.memref([p.by, cols], F._elem(v), sched.SHARED)))
                buf.owner.properties["offset"] = IntegerAttr(offset, i64)
                offset += p.by * cols * elem_bytes(F._elem(v))
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
        row_outs = g.result_list + g.row_outputs
        _if(kb, kb.andi(kb.eq(tx, 0), ok_row),
            lambda b: em.finish(b, row_outs, amap, row, dict(overrides)))
        ev = evaluator()
        for o in g.full_outputs:
            t = F._elem(o)
            for s in range(p.slots):
                xs = [kb.trunc(x, t) if F.is_float(t) else x for x in ev(o, idx[s], p.lanes)]
                cond = ok_row if valid[s] is None else kb.andi(ok_row, valid[s])
                _if(kb, cond, lambda b, xs=xs, s=s: b.store(xs, amap[o], idx[s]))

    em.kernel(host_bufs, (math.ceil(rows / p.by), 1, 1), (p.bx, p.by, 1), body, schedule=p.describe(), smem=p.smem)
