"""What each scheduler decides for a task, as functions of the IR and the schedule options:
fusion-segment records the decisions in each segment's `fuser.plan`, and the emitters
(lowering/emitters/) build their kernels from the same functions, so the two cannot disagree.
The parameter choices themselves are the heuristics' (lowering/heuristics/).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.ir import OpResult, SSAValue

from fuser.dialects import fusion as F
from fuser.lowering.common import ScheduleError, Task, by_name, elem_bytes, leaves, matmul_results, shape_of, vector_lanes
from fuser.lowering.heuristics.matmul import MatmulParams, bk, matmul_params
from fuser.lowering.heuristics.pointwise import pointwise_params
from fuser.lowering.heuristics.reduction import (JOINT_MAX_ROWS, inner_reduction_params, joint_reduction_params,
                                                 outer_reduction_params, reduction_view)
from fuser.lowering.heuristics.scan import ScanParams, scan_params
from fuser.lowering.heuristics.sort import SortParams, sort_params
from fuser.lowering.heuristics.transpose import TransposeParams, transpose_params


# ------------------------------------------------------------------ transpose


def moved_permutes(outputs: list[SSAValue], expr: dict, materialized: set, args: set) -> list[F.PermuteOp]:
    """The permutes that the outputs read at their own index (through elementwise ops only) and
    that move their input's last dim."""
    found: dict[F.PermuteOp, None] = {}
    todo, seen = [expr[o] for o in outputs], set()
    while todo:
        v = todo.pop()
        if v in seen or v in materialized or v in args:
            continue
        seen.add(v)
        op = v.owner
        if isinstance(op, F.PermuteOp):
            perm = list(op.perm.get_values())
            if perm[-1] != len(perm) - 1:
                found[op] = None
        elif isinstance(op, F.POINTWISE_OPS):
            todo.extend(op.operands)
    return list(found)


def plan_transpose(outputs: list[SSAValue], expr: dict, materialized: set, args: set
                   ) -> tuple[TransposeParams, list[F.PermuteOp]] | None:
    """The transpose kernel's tiling and the permutes it stages, or None for the pointwise kernel."""
    perms = moved_permutes(outputs, expr, materialized, args)
    shape = tuple(outputs[0].type.get_shape())
    widest = max(elem_bytes(F._elem(v)) for v in list(outputs) + [op.result for op in perms])
    p = transpose_params(shape, [list(op.perm.get_values()) for op in perms], widest)
    return (p, perms) if p is not None else None


# ------------------------------------------------------------------ pointwise


def pointwise_inputs(outputs: list[SSAValue], materialized: set, args: set) -> tuple[dict, list[SSAValue]]:
    """What each output is computed from (a segment_set's buffer is filled from its operand's
    expression), and the values the kernel reads, in parameter order."""
    expr = {o: (o.owner.input if isinstance(o.owner, F.SegmentSetOp) else o) for o in outputs}
    return expr, by_name(set().union(*(leaves(expr[o], materialized - {o}, args) for o in outputs)))


def _positions_only(v: SSAValue, kernel_ops: set) -> bool:
    """Every use of `v` among the kernel's ops is the index (or a sorted scatter's order)
    operand of a gather or a scatter, which the Evaluator reads one element per lane group (an
    embedding gradient's sorted i64 token ids, beside bf16 rows)."""
    def position(op) -> bool:
        return isinstance(op, F.INDEXED_OPS) and (op.index is v or getattr(op, "order", None) is v) \
            and v not in (op.input, getattr(op, "src", None))
    users = [u.operation for u in v.uses if u.operation in kernel_ops]
    return bool(users) and all(position(op) for op in users)


def _ops_between(outputs: list[SSAValue], reads: list[SSAValue]) -> set:
    """The ops that compute `outputs` from `reads` (what one kernel evaluates)."""
    stop, seen = set(reads), set()
    todo = [o.owner for o in outputs if isinstance(o, OpResult)]
    while todo:
        op = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        todo += [x.owner for x in op.operands if x not in stop and isinstance(x, OpResult)]
    return seen


def grid_stride(outputs: list[SSAValue], reads: list[SSAValue], opts) -> tuple[int, int, int, int]:
    """(lanes per access, vectors, threads per block, blocks) of the grid-stride kernel."""
    shape = shape_of(outputs[0])
    # (a 0-d read, such as a random op's seed, is one scalar load, and so is each element of a
    # read that only gives gathers and scatters their positions: neither narrows the vectors)
    ops = _ops_between(outputs, reads)
    max_bytes = max(elem_bytes(F._elem(v)) for v in list(outputs) + [r for r in reads if shape_of(r)
                                                                      and not _positions_only(r, ops)])
    lanes = vector_lanes(shape[-1], max_bytes, opts.vector) if shape else 1
    nvec = math.prod(shape) // lanes
    block, grid = pointwise_params(nvec, opts.sms, opts.block)
    return lanes, nvec, block, grid


def pointwise_schedule(outputs: list[SSAValue], materialized: set, args: set, opts) -> dict[str, int] | None:
    """The pointwise scheduler's decision for these outputs under `opts`, as schedule options
    (`block`, `vector`: threads per block and elements per access), or None where the transpose
    scheduler takes them. fusion-segment writes it into the segment's plan."""
    expr, reads = pointwise_inputs(outputs, materialized, args)
    if plan_transpose(outputs, expr, materialized, args) is not None:
        return None
    lanes, _, block, _ = grid_stride(outputs, reads, opts)
    return {"block": block, "vector": lanes}


# ------------------------------------------------------------------ reduction


def row_col(view_shape: Sequence[int], k: int) -> tuple[int, int, tuple[int, ...]]:
    """(rows, cols, col_shape) of an input viewed with its first `k` dims as rows."""
    return math.prod(view_shape[:k]), math.prod(view_shape[k:]), tuple(view_shape[k:])


def max_read_bytes(in_reads: list[SSAValue]) -> int:
    return max([elem_bytes(F._elem(v)) for v in in_reads] + [4 if not in_reads else 1])


def inner_geometry(rows: int, cols: int, col_shape, in_reads, opts) -> tuple[int, int, int, int]:
    """(lanes, bx threads per row, by rows per block, chunks per row) of an inner reduction."""
    lanes = vector_lanes(col_shape[-1], max_read_bytes(in_reads), opts.vector)
    bx, by, chunks = inner_reduction_params(rows, cols // lanes, opts.sms, opts.block)
    return lanes, bx, by, opts.split if opts.split >= 1 else chunks


def outer_geometry(rows: int, cols: int, col_shape, in_reads, opts) -> tuple[int, int, int, int]:
    """(lanes, bx threads over column vectors, by threads over rows, row chunks) of an outer
    reduction."""
    lanes = vector_lanes(col_shape[-1], max_read_bytes(in_reads), opts.vector) if col_shape else 1
    bx, by, chunks = outer_reduction_params(rows, cols // lanes, opts.sms)
    return lanes, bx, by, opts.split if opts.split >= 1 else chunks


def joint_ops(task: Task):
    """(the column reduction, the row reduction) of a joint task."""
    ops = [task.op] + task.siblings
    col_op = next(op for op in ops if not reduction_view(shape_of(op.input), op.reduced_dims).inner)
    return col_op, next(op for op in ops if op is not col_op)


def joint_geometry(rows: int, cols: int, col_shape, in_reads, opts) -> tuple[int, int, int]:
    """(lanes, by threads over rows, row chunks) of the joint row and column kernel."""
    lanes = vector_lanes(col_shape[-1], max_read_bytes(in_reads), opts.vector)
    by, chunks = joint_reduction_params(rows, cols // lanes, opts.sms)
    if opts.split >= 1:  # forced, but never past what a block's shared memory holds
        chunks = max(opts.split, math.ceil(rows / JOINT_MAX_ROWS))
    return lanes, by, chunks


def input_reads(op, src: SSAValue, materialized: set, args: set) -> list[SSAValue]:
    return by_name(leaves(src, materialized - set(op.results), args))


def reduction_schedule(task: Task, materialized: set, args: set, opts) -> dict[str, int]:
    """The reduction scheduler's decision for `task` under `opts`, as the schedule options that
    reproduce it: `vector` (elements per access) and `split` (chunks per row or column), and
    for an inner reduction `block` (threads per row). fusion-segment writes it into the
    segment's plan; the emitters make their kernels from the same functions."""
    if task.siblings:
        col_op, row_op = joint_ops(task)
        x = col_op.input
        own = set(col_op.results) | set(row_op.results)
        rows, cols, col_shape = row_col(shape_of(x), len(col_op.reduced_dims))
        lanes, _, chunks = joint_geometry(rows, cols, col_shape, by_name(leaves(x, materialized - own, args)), opts)
        return {"vector": lanes, "split": chunks}
    op = task.op
    view = reduction_view(shape_of(op.input), op.reduced_dims)
    rows, cols, col_shape = row_col(view.shape, view.k)
    in_reads = input_reads(op, op.input, materialized, args)
    if view.inner:
        lanes, bx, _, chunks = inner_geometry(rows, cols, col_shape, in_reads, opts)
        return {"block": bx, "vector": lanes, "split": chunks}
    lanes, _, _, chunks = outer_geometry(rows, cols, col_shape, in_reads, opts)
    return {"vector": lanes, "split": chunks}


# ------------------------------------------------------------------ scan


def scan_geometry(op: F.ScanOp, in_reads: list[SSAValue], outputs: list[SSAValue], opts) -> ScanParams:
    """The scan kernel's geometry for `op` (reading `in_reads`, writing `outputs`) under `opts`."""
    shape = shape_of(op.input)
    cols, rows = shape[-1], math.prod(shape[:-1])
    widest = max([elem_bytes(F._elem(v)) for v in list(in_reads) + list(outputs)] + [1])
    lanes = vector_lanes(cols, widest, opts.vector)
    return scan_params(rows, cols, lanes, opts.block)


def scan_schedule(task: Task, materialized: set, args: set, opts) -> dict[str, int]:
    """The scan scheduler's decision for `task` under `opts`, as the schedule options that
    reproduce it: `block` (threads per row) and `vector` (elements per access)."""
    p = scan_geometry(task.op, input_reads(task.op, task.op.input, materialized, args), task.outputs, opts)
    return {"block": p.bx, "vector": p.lanes}


# ------------------------------------------------------------------ sort


def sort_key_bytes(op: F.SortOp) -> int:
    """Bytes of one element's bits in the sort kernel's shared memory (a mask's: one)."""
    return max(1, elem_bytes(F._elem(op.input)))


def sort_geometry(op: F.SortOp, opts) -> SortParams:
    """The sort kernel's geometry for `op` under `opts` (a SortRowTooLong error, located at the
    op, for a row that does not fit)."""
    shape = shape_of(op.input)
    try:
        return sort_params(math.prod(shape[:-1]), shape[-1], op.kept, sort_key_bytes(op), opts.block)
    except ScheduleError as e:
        e.op = op
        raise


def sort_schedule(task: Task, materialized: set, args: set, opts) -> dict[str, int]:
    """The sort scheduler's decision for `task` under `opts`, as the schedule option that
    reproduces it: `block` (threads per row)."""
    return {"block": sort_geometry(task.op, opts).bx}


# ------------------------------------------------------------------ atomic scatter


def scatter_atomic_geometry(op: F.ScatterAddAtomicOp, opts) -> tuple[int, int]:
    """(threads per block, blocks) of the atomic scatter's adding kernel: a grid-stride loop over
    src's elements, one each."""
    return pointwise_params(math.prod(shape_of(op.src)), opts.sms, opts.block)


def scatter_schedule(task: Task, materialized: set, args: set, opts) -> dict[str, int]:
    """The atomic scatter's decision as the schedule option that reproduces it: `block`."""
    return {"block": scatter_atomic_geometry(task.op, opts)[0]}


# ------------------------------------------------------------------ matmul


ELEM_BYTES = {"f32": 4, "bf16": 2, "f16": 2}  # the element types the TMA-store epilogue takes


def out_elem_bytes(v: SSAValue) -> int:
    """Bytes per element of an epilogue output (0: a type the TMA stores do not take)."""
    return ELEM_BYTES.get(F.dtype_name(F._elem(v)), 0)


def staging_blocker(outputs) -> str:
    """Why the epilogue's outputs cannot go through the staging buffers ("" when they can)."""
    for o in outputs:
        if not out_elem_bytes(o):
            return f"output {o.type} is not f32, bf16 or f16"
    return ""


def tma_store_blocker(outputs, n: int) -> str:
    """Why the epilogue's outputs cannot be written by TMA stores ("" when they can)."""
    blocker = staging_blocker(outputs)
    for o in outputs:
        if not blocker and n * out_elem_bytes(o) % 16:
            blocker = f"output {o.type} has rows of {n * out_elem_bytes(o)} bytes; TMA stores need a multiple of 16"
    return blocker


# The Hopper matmul's operand types: element bytes and the wgmma operand type
MATMUL_OPERANDS = {"bf16": (2, "bf16"), "f16": (2, "f16"), "f8e4m3fn": (1, "e4m3"), "f8e5m2": (1, "e5m2")}


def check_matmul_dtype(op: F.MatmulOp) -> None:
    et = F.dtype_name(F._elem(op.a))
    if et not in MATMUL_OPERANDS:
        raise ScheduleError(f"'fusion.matmul' operands are {et}; the Hopper matmul takes bf16, f16, f8E4M3FN or "
                            "f8E5M2 (cast them first)", op)
    if MATMUL_OPERANDS[et][0] == 1 and (op.transpose_a is not None or op.transpose_b is None):
        which = "operand #0 ('a') is stored [K, M] (transpose_a)" if op.transpose_a is not None else \
            "operand #1 ('b') is stored [K, N]"
        raise ScheduleError(f"'fusion.matmul' on {et}: {which}, but FP8 wgmmas read both operands K-major: "
                            "store A as [M, K] and B as [N, K] (transpose_b), as torch._scaled_mm takes them", op)


def matmul_schedule(task: Task, opts) -> tuple[MatmulParams, list[SSAValue]] | None:
    """The matmul scheduler's decision for `task` under `opts` (tile, pipeline stages, grid,
    store path; `matmul_params`) and the outputs its epilogue stores, or None when it stores
    nothing. fusion-segment writes the decision into the segment's plan."""
    op: F.MatmulOp = task.op
    mats = [op] + task.siblings
    m, n, k = op.mnk()
    for x in mats:
        check_matmul_dtype(x)
    tile = None
    if opts.tile:
        try:
            tile = tuple(int(x) for x in opts.tile.lower().split("x"))
            assert len(tile) == 2
        except (ValueError, AssertionError):
            raise ScheduleError(f"convert-fusion-to-sched: tile={opts.tile!r} must read like 128x256", op) from None
    # Split-K (k_chunk): work item w is tile w % tiles of split w // tiles, over K-slices
    # [z * kcs, min(ktiles, (z + 1) * kcs)); it stores its f32 tile at rows z * M.. of the partials.
    nsplit, kc = op.splits, op.chunk
    eb = MATMUL_OPERANDS[F.dtype_name(F._elem(op.a))][0]
    slot_k = bk(eb)
    if kc is not None and kc % slot_k:
        raise ScheduleError(f"'fusion.matmul' k_chunk {kc}: the Hopper matmul splits K between its {slot_k}-element "
                            f"K-slices, so k_chunk must be a multiple of {slot_k}", op)
    if nsplit > 1 and len(mats) > 1:
        raise ScheduleError("'fusion.matmul' with k_chunk cannot share a main loop with another matmul", op)
    serial = op.serial is not None and nsplit > 1  # (one split is an ordinary matmul)
    if serial and n % 4:
        raise ScheduleError(f"'fusion.matmul' k_chunk {kc} serial: N={n}, but the f32 workspace the splits reduce into "
                            f"takes TMA reductions, whose rows must be a multiple of 16 bytes (N a multiple of 4); "
                            f"use fusion-split-k{{strategy=two-kernel}}", op)
    results = matmul_results(task)
    store = set(results) if task.store_results is None else task.store_results
    outputs = [o for o in dict.fromkeys(task.outputs) if o not in results or o in store]
    if not outputs:
        return None
    try:
        p = matmul_params(m, n, min(k, kc or k), eb, opts.sms, len(mats), tile, opts.stages,
                          opts.matmul_persistent, opts.matmul_pingpong, opts.matmul_cluster, opts.matmul_store,
                          tma_store_blocker(outputs, n), nsplit, opts.matmul_smem_reuse, serial,
                          staging_blocker(outputs))
    except ValueError as err:
        raise ScheduleError(f"'fusion.matmul' {m}x{n}x{k}: {err}", op) from None
    return p, outputs


def matmul_decision(p: MatmulParams) -> dict[str, object]:
    """A matmul schedule as the schedule options that reproduce it (what fusion-segment records).
    The pipeline depth is not among them: it follows from the tile and the store path, and the
    conversion's epilogue plan says how (`fuser.matmul_epilogue`)."""
    return {"tile": f"{p.bm}x{p.bn}", "matmul_persistent": int(p.persistent),
            "matmul_pingpong": int(p.pingpong), "matmul_cluster": p.cluster,
            "matmul_store": p.store}

