"""The reduction schedulers' emitters (their heuristics are lowering/heuristics/reduction.py).

- inner reduction (trailing dims): `bx` threads per row, `by` rows per block; vector loads
  along the row, warp shuffles and a shared-memory step combine the threads of a row.
  Few long rows split into chunks: partials go to a workspace and a second kernel folds them.
- outer reduction (leading dims): each thread owns a vector of columns and walks rows; the
  rows of a block are folded through shared memory; tall inputs split rows across blocks.
- joint row and column reduction (`emit_joint_reduction`): the outer layout, whose warps also
  fold the rows they read, so one read of the input serves both.

Function outputs computed from a reduction's results at the reduced index are computed and
stored by the reduction kernel itself (`store_row_outputs`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.lowering.analysis.schedules import inner_geometry, input_reads, joint_geometry, joint_ops, outer_geometry
from fuser.lowering.common import Task, by_name, is_welford, leaves, next_pow2, shape_of, vector_lanes
from fuser.lowering.emitters.combiners import finalize, plane_groups, select_state, state_for
from fuser.lowering.emitters.emitter import KernelEmitter, WorkspaceValue
from fuser.lowering.emitters.evaluator import Evaluator
from fuser.lowering.emitters.kernel_builder import KernelBuilder, emit_if
from fuser.lowering.heuristics.reduction import JOINT_BX, ReductionView, outer_reduction_params, reduction_view


def emit_reduction(em: KernelEmitter, task: Task, materialized: set, args: set) -> None:
    if task.siblings:
        emit_joint_reduction(em, task, materialized, args)
        return
    op = task.op
    view = reduction_view(shape_of(op.input), op.reduced_dims)
    if view.perm is None:
        src = op.input
    else:
        # Other dimension sets read the input through a permuted view (built here, never in the
        # IR): the kept dims keep their order, so the view's rows (inner) or columns (outer) are
        # the output's elements in order and the stores are those of a plain reduction.
        src = F.PermuteOp.create(operands=[op.input], properties={"perm": F._i64_array(view.perm)},
                                 result_types=[TensorType(F._elem(op.input), list(view.shape))]).result
    try:
        emit = _inner if view.inner else _outer
        emit(em, task, materialized, args, src, view)
    finally:
        if view.perm is not None:
            src.owner.erase()  # drop its use of the input


def store_row_outputs(kb: KernelBuilder, outputs: Sequence[SSAValue], amap: dict, row: SSAValue,
                      values: dict[SSAValue, SSAValue]) -> None:
    """Store `outputs` (reduced-shape values) for the linear row `row`; `values` are the
    reduction results already in registers. Outputs are computed here, never read back."""
    ev = Evaluator(kb, {v: b for v, b in amap.items() if v not in outputs}, values)
    for o in outputs:
        idx = kb.delinearize(row, shape_of(o))
        x = ev(o, idx, 1)[0]
        t = F._elem(o)
        kb.store([kb.trunc(x, t) if F.is_float(t) else x], amap[o], idx)


def _epilogue_reads(task: Task, materialized: set, args: set, outputs: Sequence[SSAValue] | None = None
                    ) -> list[SSAValue]:
    """What computing the task's outputs (or `outputs`) from its results reads from memory."""
    results = {r for op in [task.op] + task.siblings for r in op.results}
    found = set()
    for o in task.outputs if outputs is None else outputs:
        found |= leaves(o, (materialized | results) - {o}, args)
    return by_name(found - results)


class Partials:
    """Partial states in workspaces: one plane per state component, [planes, *shape], in one
    workspace per component type (a float state's in one f32 workspace)."""

    def __init__(self, em: KernelEmitter, shape: Sequence[int], types: Sequence):
        self.groups: list[tuple[WorkspaceValue, list[int]]] = []
        for t, comps in plane_groups(types):
            ws = em.workspace([len(comps), *shape], dtype=t)
            part = WorkspaceValue(ws)
            em.buffers[part] = ws
            self.groups.append((part, comps))
        self.width = len(types)

    @property
    def values(self) -> list[WorkspaceValue]:
        return [part for part, _ in self.groups]

    def store(self, kb: KernelBuilder, amap: dict, state: Sequence[SSAValue], idx: Callable[[], list[SSAValue]]) -> None:
        """Store `state` at `idx()` (called once per plane)."""
        for part, comps in self.groups:
            for plane, c in enumerate(comps):
                kb.store([state[c]], amap[part], [kb.c(plane), *idx()])

    def load(self, kb: KernelBuilder, amap: dict, idx: Callable[[], list[SSAValue]], lanes: int) -> list[list[SSAValue]]:
        """Each lane's state at `idx()` (called once per plane: the index of lane 0)."""
        planes: list = [None] * self.width
        for part, comps in self.groups:
            for plane, c in enumerate(comps):
                planes[c] = kb.load(amap[part], [kb.c(plane), *idx()], lanes)
        return [[p[l] for p in planes] for l in range(lanes)]


def smem_planes(kb: KernelBuilder, shape: Callable[[int], list[int]], types: Sequence, name: str
                ) -> list[tuple[SSAValue, list[int]]]:
    """Shared buffers of partial states, one per component type (`plane_groups`), each of
    `shape(its number of components)`: (the buffer, the components it holds)."""
    return [(kb.alloc(shape(len(comps)), t, name if g == 0 else f"{name}_{F.dtype_name(t)}"), comps)
            for g, (t, comps) in enumerate(plane_groups(types))]


def _plane_of(groups: list, c: int) -> tuple[SSAValue, int, int]:
    """(buffer, plane, planes in it) of component `c` in `smem_planes`' buffers."""
    for buf, comps in groups:
        if c in comps:
            return buf, comps.index(c), len(comps)
    raise AssertionError(c)


def _inner(em: KernelEmitter, task: Task, materialized: set, args: set, src: SSAValue, view: ReductionView) -> None:
    op = task.op
    st = state_for(op)
    in_shape, k = view.shape, view.k
    row_shape, col_shape = in_shape[:k], in_shape[k:]
    rows, cols = math.prod(row_shape), math.prod(col_shape)
    in_reads = input_reads(op, src, materialized, args)
    lanes, bx, by, chunks = inner_geometry(rows, cols, col_shape, in_reads, em.opts)
    row_vecs = cols // lanes

    shifted = is_welford(op)

    def first_of_row(kb, amap, row):
        # Welford's shift: the row's first element (see lowering/emitters/combiners.py).
        idx = kb.delinearize(row, row_shape) + [kb.c(0)] * len(col_shape)
        return kb.ext(Evaluator(kb, {v: amap[v] for v in in_reads})(src, idx, 1)[0])

    def prepare(kb, amap, row, n_lanes):
        # Loaded once before the loop: the shift of the row.
        return first_of_row(kb, amap, row) if shifted else None

    def fold_elements(kb, amap, row, vec, n_lanes, states, shift):
        idx = kb.delinearize(row, row_shape) + kb.delinearize(kb.mul(vec, n_lanes), col_shape)
        xs = [kb.ext(x) for x in Evaluator(kb, {v: amap[v] for v in in_reads})(src, idx, n_lanes)]
        if shift is not None:
            xs = [kb.fsub(x, shift) for x in xs]
        return [st.update(kb, s, x, lambda l=l: kb.add(kb.mul(vec, n_lanes), l)) for l, (s, x) in enumerate(zip(states, xs))]

    def store(kb, amap, row, state):
        shift = first_of_row(kb, amap, row) if shifted else None
        store_row_outputs(kb, task.outputs, amap, row, finalize(kb, op, state, shift))

    epi_reads = _epilogue_reads(task, materialized, args)
    if chunks == 1:
        vals = list(task.outputs) + in_reads + epi_reads
        _row_reduce_kernel(em, em.kernel_buffers(vals), vals, rows, row_vecs, lanes, bx, by, 1, st,
                           fold_elements, store, prepare=prepare, schedule=view.describe())
        return
    # Two kernels: partial states [*, row, chunk], then merge the chunks of each row.
    part = Partials(em, [rows, chunks], st.types)

    def store_partial(kb, amap, row, state, chunk):
        part.store(kb, amap, state, lambda: [row, chunk])

    vals1 = in_reads + part.values
    _row_reduce_kernel(em, em.kernel_buffers(vals1), vals1, rows, row_vecs, lanes, bx, by, chunks, st,
                       fold_elements, store_partial, prepare=prepare, schedule=view.describe())

    def merge_partials(kb, amap, row, chunk, n_lanes, states, _pre):
        return [st.merge(kb, states[0], part.load(kb, amap, lambda: [row, chunk], 1)[0])]

    vals2 = list(dict.fromkeys(list(task.outputs) + epi_reads + (in_reads if shifted else []))) + part.values
    bx2 = min(1024, max(32, next_pow2(chunks)))
    _row_reduce_kernel(em, em.kernel_buffers(vals2), vals2, rows, chunks, 1, bx2, max(1, 256 // bx2), 1, st,
                       merge_partials, store, settle=False)


def _row_reduce_kernel(em: KernelEmitter, host_bufs, values, rows, row_vecs, lanes, bx, by, chunks, st, fold, store,
                       settle=True, prepare=None, schedule=""):
    """Rows of `row_vecs` vectors; `bx` threads per row, `by` rows per block, `chunks` blocks per row.

    `prepare(kb, amap, row, lanes)` runs once before the loop; `fold(kb, amap, row, vec, lanes,
    states, prepared)` folds one vector of the row into the per-lane states; `store(kb, amap,
    row, state[, chunk])` runs in one thread per row at the end.
    """
    vecs_per_chunk = math.ceil(row_vecs / chunks)
    w = st.width
    types = list(st.types)

    def body(kb: KernelBuilder, kargs):
        amap = em.arg_map(host_bufs, kargs, values)
        tx, ty = kb.tid("x"), kb.tid("y")
        row = kb.add(kb.mul(kb.bid("x"), by), ty)
        row_c = kb.v(arith.MinUIOp(row, kb.c(rows - 1)))  # clamp: tail rows compute row R-1, never store
        chunk = kb.bid("y") if chunks > 1 else None
        start = kb.mul(chunk, vecs_per_chunk) if chunk is not None else kb.c(0)
        end = kb.v(arith.MinUIOp(kb.add(start, vecs_per_chunk), kb.c(row_vecs))) if chunk is not None else kb.c(row_vecs)
        pre = prepare(kb, amap, row_c, lanes) if prepare else None
        init = st.identity(kb) * lanes
        loop = sched.ForOp(start, end, kb.c(1), init,
                           Block(arg_types=[sched.IndexType()] + types * lanes), bind="thread.x")
        kb.emit(loop)
        lb = kb.at(loop.body.block)
        j, *flat = loop.body.block.args
        states = fold(lb, amap, row_c, j, lanes, [flat[l * w:(l + 1) * w] for l in range(lanes)], pre)
        lb.emit(sched.YieldOp(*[x for s in states for x in s]))
        res = list(loop.results)
        per_lane = [res[l * w:(l + 1) * w] for l in range(lanes)]
        if settle:  # elements were folded as sums; partial states arrive settled
            per_lane = [st.settle(kb, s) for s in per_lane]
        state = per_lane[0]
        for s in per_lane[1:]:
            state = st.merge(kb, state, s)
        state = block_reduce(kb, st, state, tx, ty, bx, by)
        ok = kb.andi(kb.eq(tx, 0), kb.lt(row, rows))
        if chunk is not None:
            emit_if(kb, ok, lambda b: store(b, amap, row, state, chunk))
        else:
            emit_if(kb, ok, lambda b: store(b, amap, row, state))

    grid = (math.ceil(rows / by), chunks, 1)
    em.kernel(host_bufs, grid, (bx, by, 1), body, schedule=schedule)


def _outer(em: KernelEmitter, task: Task, materialized: set, args: set, src: SSAValue, view: ReductionView) -> None:
    op = task.op
    st = state_for(op)
    in_shape, k = view.shape, view.k
    row_shape, col_shape = in_shape[:k], in_shape[k:]
    rows, cols = math.prod(row_shape), math.prod(col_shape)
    in_reads = input_reads(op, src, materialized, args)
    lanes, bx, by, chunks = outer_geometry(rows, cols, col_shape, in_reads, em.opts)
    col_vecs = cols // lanes
    epi_reads = _epilogue_reads(task, materialized, args)

    shifted = is_welford(op)

    def first_of_column(kb, amap, col_idx, n_lanes):
        # Welford's shift: the column's first element (see lowering/emitters/combiners.py).
        idx = [kb.c(0)] * len(row_shape) + col_idx
        return [kb.ext(x) for x in Evaluator(kb, {v: amap[v] for v in in_reads})(src, idx, n_lanes)]

    def prepare(kb, amap, cvec, n_lanes):
        # Loaded once before the loop: the shift of each column of the vector.
        col_idx = kb.delinearize(kb.mul(cvec, n_lanes), col_shape) if col_shape else []
        return first_of_column(kb, amap, col_idx, n_lanes) if shifted else None

    def fold_elements(kb, amap, row, cvec, n_lanes, states, shifts):
        col_idx = kb.delinearize(kb.mul(cvec, n_lanes), col_shape) if col_shape else []
        idx = kb.delinearize(row, row_shape) + col_idx
        xs = [kb.ext(x) for x in Evaluator(kb, {v: amap[v] for v in in_reads})(src, idx, n_lanes)]
        if shifts is not None:
            xs = [kb.fsub(x, k) for x, k in zip(xs, shifts)]
        return [st.update(kb, s, x, lambda: row) for s, x in zip(states, xs)]

    def store_out(kb, amap, col, state):
        col_idx = kb.delinearize(col, col_shape) if col_shape else []
        shift = first_of_column(kb, amap, col_idx, 1)[0] if shifted else None
        store_row_outputs(kb, task.outputs, amap, col, finalize(kb, op, state, shift))

    if chunks == 1:
        vals = list(task.outputs) + in_reads + epi_reads
        _col_reduce_kernel(em, em.kernel_buffers(vals), vals, rows, col_vecs, lanes, bx, by, 1, st,
                           fold_elements, store_out, prepare=prepare, schedule=view.describe())
        return
    part = Partials(em, [chunks, cols], st.types)

    def store_partial(kb, amap, col, state, chunk):
        part.store(kb, amap, state, lambda: [chunk, col])

    vals1 = in_reads + part.values
    _col_reduce_kernel(em, em.kernel_buffers(vals1), vals1, rows, col_vecs, lanes, bx, by, chunks, st,
                       fold_elements, store_partial, prepare=prepare, schedule=view.describe())

    _merge_partials(em, part, chunks, cols, st, list(task.outputs) + epi_reads + (in_reads if shifted else []),
                    store_out)


def _merge_partials(em: KernelEmitter, part: Partials, chunks: int, cols: int, st, values: list[SSAValue],
                    store) -> None:
    """The kernel that merges `chunks` partial states of each of `cols` columns (the workspaces
    `part`, [planes, chunks, cols]) and stores them with `store(kb, amap, col, state)`, which
    uses `values`."""
    lanes = vector_lanes(cols, 4)

    def merge(kb, amap, chunk, cvec, n_lanes, states, _pre):
        got = part.load(kb, amap, lambda: [chunk, kb.mul(cvec, n_lanes)], n_lanes)
        return [st.merge(kb, s, g) for s, g in zip(states, got)]

    vals = list(dict.fromkeys(values)) + part.values
    bx, by, _ = outer_reduction_params(chunks, cols // lanes, em.opts.sms)
    _col_reduce_kernel(em, em.kernel_buffers(vals), vals, chunks, cols // lanes, lanes, bx, by, 1, st,
                       merge, store, settle=False)


def emit_joint_reduction(em: KernelEmitter, task: Task, materialized: set, args: set) -> None:
    """Two reductions of one input x, viewed as [rows, cols]: one over the leading dims (a
    result per column), one over the trailing dims (a result per row), reading x once.

    Kernel 1 has the outer reduction's layout, JOINT_BX threads (a warp) across column vectors:
    each thread folds its column vector down the rows, as the column kernel does, and the warp
    also folds each row it reads (its lanes, then a butterfly over the 32 threads) into a row
    partial per block column, kept in shared memory until the rows are done, then written to a
    workspace, [col_blocks, rows]. Kernel 2 merges the row partials
    (none when one block spans the columns: kernel 1 then stores the rows itself); split rows
    (few column blocks) merge their column partials in one more kernel, as the outer reduction's
    do. Each output is stored by the kernel that finishes the reduction it is computed from."""
    col_op, row_op = joint_ops(task)
    x = col_op.input
    shape = shape_of(x)
    k = len(col_op.reduced_dims)
    row_shape, col_shape = shape[:k], shape[k:]
    rows, cols = math.prod(row_shape), math.prod(col_shape)
    own = set(col_op.results) | set(row_op.results)
    in_reads = by_name(leaves(x, materialized - own, args))
    lanes, by, chunks = joint_geometry(rows, cols, col_shape, in_reads, em.opts)
    col_vecs = cols // lanes
    bx = JOINT_BX
    col_blocks = math.ceil(col_vecs / bx)
    cst, rst = state_for(col_op), state_for(row_op)

    def computed_from(op) -> list[SSAValue]:
        rs = set(op.results)
        return [o for o in task.outputs if o in rs or leaves(o, (materialized | own) - {o}, args) & rs]
    col_outs, row_outs = computed_from(col_op), computed_from(row_op)
    col_epi = _epilogue_reads(task, materialized, args, col_outs)
    row_epi = _epilogue_reads(task, materialized, args, row_outs)

    def store_cols(kb, amap, col, state):
        store_row_outputs(kb, col_outs, amap, col, finalize(kb, col_op, state))

    def store_rows(kb, amap, row, state):
        store_row_outputs(kb, row_outs, amap, row, finalize(kb, row_op, state))

    rowpart = Partials(em, [col_blocks, rows], rst.types) if col_blocks > 1 else None
    rows_per_chunk = math.ceil(rows / chunks)

    # A row's partial goes to shared memory, not to global memory, inside the loop: a global store
    # there would keep ptxas from issuing the next rows' loads ahead of it (it cannot tell the
    # workspace from the input), and the loop would wait on each load in turn.
    def prepare(kb, amap, _cvec, _n_lanes):
        start = kb.mul(kb.bid("y"), rows_per_chunk) if chunks > 1 else kb.c(0)
        return smem_planes(kb, lambda n: [rows_per_chunk, n], rst.types, "row_partials"), start

    def fold_both(kb, amap, row, cvec_c, n_lanes, states, pre):
        buf, start = pre
        idx = kb.delinearize(row, row_shape) + kb.delinearize(kb.mul(cvec_c, n_lanes), col_shape)
        xs = [kb.ext(v) for v in Evaluator(kb, {v: amap[v] for v in in_reads})(x, idx, n_lanes)]
        tx = kb.tid("x")
        in_range = kb.lt(kb.add(kb.mul(kb.bid("x"), bx), tx), col_vecs)  # clamped threads add nothing to the row
        part = rst.identity(kb)
        for l, v in enumerate(xs):
            part = rst.update(kb, part, v, lambda l=l: kb.add(kb.mul(cvec_c, n_lanes), l))
        part = warp_reduce(kb, rst, select_state(kb, in_range, part, rst.identity(kb)))
        local = kb.v(arith.SubiOp(row, start))

        def keep(b):
            for c, v in enumerate(part):
                sbuf, plane, _ = _plane_of(buf, c)
                b.store([v], sbuf, [local, b.c(plane)])
        emit_if(kb, kb.eq(tx, 0), keep)
        return [cst.update(kb, s, v, lambda: row) for s, v in zip(states, xs)]

    def write_rows(kb, amap, pre):
        # Each warp writes a run of the chunk's rows, its 32 threads side by side.
        buf, start = pre
        kb.emit(sched.BarrierOp())
        ty = kb.tid("y")
        n = kb.v(arith.MinUIOp(kb.c(rows_per_chunk), kb.v(arith.SubiOp(kb.c(rows), start))))
        per_warp = math.ceil(rows_per_chunk / by)
        lo = kb.v(arith.MinUIOp(kb.mul(ty, per_warp), n))
        hi = kb.v(arith.MinUIOp(kb.add(lo, per_warp), n))
        loop = sched.ForOp(lo, hi, kb.c(1), [], Block(arg_types=[sched.IndexType()]), bind="thread.x")
        kb.emit(loop)
        lb = kb.at(loop.body.block)
        i = loop.body.block.args[0]
        state = []
        for c in range(rst.width):
            sbuf, plane, _ = _plane_of(buf, c)
            state.append(lb.load(sbuf, [i, lb.c(plane)], 1)[0])
        row = lb.add(start, i)
        if rowpart is None:
            store_rows(lb, amap, row, state)
        else:
            rowpart.store(lb, amap, state, lambda: [lb.bid("x"), row])
        lb.emit(sched.YieldOp())

    schedule = (f"joint row and column reduction of {list(shape)} as {rows} rows x {cols} columns: {bx}x{by} threads "
                f"over {lanes}-element column vectors, {chunks} row chunk(s); each row folded per {bx} column vectors"
                + (f", {col_blocks} partials per row merged by the next kernel" if rowpart is not None else ""))
    row_vals = rowpart.values if rowpart is not None else row_outs + row_epi
    if chunks == 1:
        vals, store_col = list(dict.fromkeys(col_outs + row_vals + in_reads + col_epi)), store_cols
    else:
        colpart = Partials(em, [chunks, cols], cst.types)
        vals = list(dict.fromkeys(row_vals + in_reads + colpart.values))

        def store_col(kb, amap, col, state, chunk):
            colpart.store(kb, amap, state, lambda: [chunk, col])
    _col_reduce_kernel(em, em.kernel_buffers(vals), vals, rows, col_vecs, lanes, bx, by, chunks, cst,
                       fold_both, store_col, prepare=prepare, schedule=schedule, after_loop=write_rows)
    if rowpart is not None:
        _merge_partials(em, rowpart, col_blocks, rows, rst, row_outs + row_epi, store_rows)
    if chunks > 1:
        _merge_partials(em, colpart, chunks, cols, cst, col_outs + col_epi, store_cols)


def _col_reduce_kernel(em: KernelEmitter, host_bufs, values, rows, col_vecs, lanes, bx, by, chunks, st, fold, store,
                       settle=True, prepare=None, schedule="", after_loop=None):
    """Columns in vectors of `lanes`: `bx` threads across column vectors, `by` threads (and
    `chunks` blocks) down the rows; the `by` partial states of a column meet in shared memory.
    `after_loop(kb, amap, prepared)`, if given, runs in every thread once the rows are folded."""
    rows_per_chunk = math.ceil(rows / chunks)
    w = st.width

    def body(kb: KernelBuilder, kargs):
        amap = em.arg_map(host_bufs, kargs, values)
        tx, ty = kb.tid("x"), kb.tid("y")
        cvec = kb.add(kb.mul(kb.bid("x"), bx), tx)
        cvec_c = kb.v(arith.MinUIOp(cvec, kb.c(col_vecs - 1)))
        chunk = kb.bid("y") if chunks > 1 else None
        start = kb.mul(chunk, rows_per_chunk) if chunk is not None else kb.c(0)
        end = kb.v(arith.MinUIOp(kb.add(start, rows_per_chunk), kb.c(rows))) if chunk is not None else kb.c(rows)
        pre = prepare(kb, amap, cvec_c, lanes) if prepare else None
        loop = sched.ForOp(start, end, kb.c(1), st.identity(kb) * lanes,
                           Block(arg_types=[sched.IndexType()] + list(st.types) * lanes), bind="thread.y")
        kb.emit(loop)
        lb = kb.at(loop.body.block)
        r, *flat = loop.body.block.args
        states = fold(lb, amap, r, cvec_c, lanes, [flat[l * w:(l + 1) * w] for l in range(lanes)], pre)
        lb.emit(sched.YieldOp(*[x for s in states for x in s]))
        res = list(loop.results)
        if after_loop is not None:
            after_loop(kb, amap, pre)
        states = [res[l * w:(l + 1) * w] for l in range(lanes)]
        if settle:  # elements were folded as sums; partial states arrive settled
            states = [st.settle(kb, s) for s in states]

        def emit_stores(b: KernelBuilder, states):
            for l, s in enumerate(states):
                col = b.add(b.mul(cvec, lanes), l)
                if chunk is not None:
                    store(b, amap, col, s, chunk)
                else:
                    store(b, amap, col, s)

        if by > 1:
            smem = smem_planes(kb, lambda n: [by, bx * lanes * n], st.types, "column_partials")
            for buf, comps in smem:
                n = len(comps)
                for l, s in enumerate(states):
                    for plane, c in enumerate(comps):
                        kb.store([s[c]], buf, [ty, kb.add(kb.mul(tx, lanes * n), l * n + plane)])
            kb.emit(sched.BarrierOp())

            def at(b: KernelBuilder, y, l, c):
                buf, plane, n = _plane_of(smem, c)
                return buf, [y, b.add(b.mul(tx, lanes * n), l * n + plane)]

            def load(b: KernelBuilder, y, l, c):
                buf, ix = at(b, y, l, c)
                return b.load(buf, ix, 1)[0]

            # Fold the `by` partial states of each column as a tree: every step halves the
            # rows still holding a state, all threads of those rows merging in parallel.
            assert by & (by - 1) == 0, "outer_reduction_params gives a power-of-two by"
            half = by // 2
            while half >= 1:
                def merge_pair(b: KernelBuilder, half=half):
                    other = b.add(ty, half)
                    for l in range(lanes):
                        mine = [load(b, ty, l, c) for c in range(w)]
                        theirs = [load(b, other, l, c) for c in range(w)]
                        for c, x in enumerate(st.merge(b, mine, theirs)):
                            buf, ix = at(b, ty, l, c)
                            b.store([x], buf, ix)
                emit_if(kb, kb.lt(ty, half), merge_pair)
                kb.emit(sched.BarrierOp())
                half //= 2

            def store_row0(b: KernelBuilder):
                emit_stores(b, [[load(b, b.c(0), l, c) for c in range(w)] for l in range(lanes)])
            emit_if(kb, kb.andi(kb.eq(ty, 0), kb.lt(cvec, col_vecs)), store_row0)
        else:
            emit_if(kb, kb.lt(cvec, col_vecs), lambda b: emit_stores(b, states))

    grid = (math.ceil(col_vecs / bx), chunks, 1)
    em.kernel(host_bufs, grid, (bx, by, 1), body, schedule=schedule)


def warp_reduce(kb: KernelBuilder, st, state: list[SSAValue]) -> list[SSAValue]:
    """Butterfly over the 32 lanes of a warp: every lane ends with the warp's merged state."""
    for off in (16, 8, 4, 2, 1):
        state = st.merge(kb, state, [kb.v(sched.ShflXorOp(x, off)) for x in state])
    return state


def block_reduce(kb: KernelBuilder, st, state: list[SSAValue], tx: SSAValue, ty: SSAValue, bx: int,
                 by: int) -> list[SSAValue]:
    """Merge the states of the `bx` threads of each row (thread.y) of a block; every thread of
    the row gets the result: warp shuffles, then one shared-memory slot per warp."""
    state = warp_reduce(kb, st, state)
    nwarps = bx // 32
    if nwarps <= 1:
        return state
    smem = smem_planes(kb, lambda n: [by * nwarps * n], st.types, "warp_partials")
    lane, warp = kb.rem(tx, 32), kb.div(tx, 32)
    mine = kb.add(kb.mul(ty, nwarps), warp)
    slots = [kb.mul(mine, len(comps)) for _, comps in smem]

    def keep(b: KernelBuilder):
        for (buf, comps), slot in zip(smem, slots):
            for plane, c in enumerate(comps):
                b.store([state[c]], buf, [b.add(slot, plane)])
    emit_if(kb, kb.eq(lane, 0), keep)
    kb.emit(sched.BarrierOp())
    theirs = kb.add(kb.mul(ty, nwarps), kb.v(arith.MinUIOp(lane, kb.c(nwarps - 1))))
    got: list = [None] * len(state)
    for buf, comps in smem:
        src = kb.mul(theirs, len(comps))
        for plane, c in enumerate(comps):
            got[c] = kb.load(buf, [kb.add(src, plane)], 1)[0]
    state = select_state(kb, kb.lt(lane, nwarps), got, st.identity(kb))
    return warp_reduce(kb, st, state)
