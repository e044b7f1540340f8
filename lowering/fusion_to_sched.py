"""convert-fusion-to-sched: partition a fusion into kernels and schedule each one.

Segmentation. Pointwise and shape ops are recomputed inside whichever kernel needs them, so
they never cost a trip through memory. Two sets of values matter:
- *stored* values are written to a buffer: every function output, and the results of
  reductions, matmuls and `fusion.segment_set`s that a later kernel reads;
- *materialized* values are the ones a kernel reads back from a buffer instead of recomputing:
  function arguments aside, only the results of reductions, matmuls and `segment_set`s.
A pointwise function output is stored but never read back: a kernel that needs it (another
output, an epilogue, a reduction's input) recomputes it from its own inputs, so no kernel
depends on the store of a sibling output, in the same kernel or another.
Each reduction op becomes one reduction kernel (two when a row is too long for one block);
function outputs that are pointwise in a reduction's results, of the reduced shape, are computed
in that kernel's epilogue; the remaining outputs are grouped by shape into pointwise kernels.

Schedulers (the heuristics are the `*_params` functions; pass options override them):
- pointwise: each thread handles one 16-byte vector of the output per iteration of a
  grid-stride loop; a grid of up to `sms * 8` blocks keeps every SM full.
- inner reduction (trailing dims): `bx` threads per row, `by` rows per block; vector loads
  along the row, warp shuffles and a shared-memory step combine the threads of a row.
  Few long rows split into chunks: partials go to a workspace and a second kernel folds them.
- outer reduction (leading dims): each thread owns a vector of columns and walks rows; the
  rows of a block are folded through shared memory; tall inputs split rows across blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (Float32Type, FloatAttr, FunctionType, IntegerAttr, ModuleOp, StringAttr, TensorType,
                                   i1, i64)
from xdsl.dialects import arith
from xdsl.ir import Block, Region, SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.lowering.combiners import finalize, is_welford, select_state, state_for
from fuser.lowering.kernel_builder import KernelBuilder, f32
from fuser.lowering.schedulers.options import ScheduleOptions, SchedulingPass

SHAPE_OPS = (F.BroadcastOp, F.ReshapeOp, F.PermuteOp)
REDUCTION_OPS = (F.ReduceOp, F.WelfordOp, F.VarMeanOp)


class ScheduleError(Exception):
    """A fusion no scheduler accepts; the message names the op and the reason."""

    def __init__(self, message: str, op=None):
        super().__init__(message)
        self.op = op  # reported with its source location


def shape_of(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def elem_bytes(t) -> int:
    return {"f32": 4, "f16": 2, "bf16": 2, "i1": 1, "i64": 8, "f64": 8}[F.dtype_name(t)]


def next_pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def vector_lanes(last_extent: int, max_bytes: int, limit: int = 0) -> int:
    """Widest power-of-two lane count with 16-byte accesses that divides the last extent."""
    lanes = max(1, 16 // max_bytes)
    if limit:
        lanes = min(lanes, limit)
    while lanes > 1 and last_extent % lanes:
        lanes //= 2
    return lanes


# ------------------------------------------------------------------ heuristics


def pointwise_params(total_vectors: int, sms: int, block: int = 0) -> tuple[int, int]:
    """(threads per block, blocks): enough blocks to fill every SM, no more than the work."""
    block = block or 256
    grid = max(1, min(math.ceil(total_vectors / block), sms * 8))
    return block, grid


def inner_reduction_params(rows: int, row_vectors: int, sms: int, block: int = 0) -> tuple[int, int, int]:
    """(bx threads per row, by rows per block, chunks per row)."""
    bx = min(1024, max(32, next_pow2(math.ceil(row_vectors / 4))))
    if block:
        bx = min(bx, block)
    by = max(1, 256 // bx)
    blocks = math.ceil(rows / by)
    chunks = 1
    if blocks < 2 * sms and row_vectors >= bx * 16:
        chunks = min(math.ceil(4 * sms / blocks), row_vectors // (bx * 8))
    return bx, by, max(1, chunks)


def outer_reduction_params(rows: int, col_vectors: int, sms: int) -> tuple[int, int, int]:
    """(bx threads over column vectors, by threads over rows, row chunks).

    Few rows (split-K's S partial products): no thread row is left without a row; its threads go
    to the columns. Rows too few to split into chunks but blocks too few to fill the machine: up
    to 32 thread rows of at least 8 rows each, over column runs of at least 8 vectors (128 bytes).
    """
    bx = min(32, next_pow2(col_vectors))
    by = max(1, 256 // bx) if bx < 32 else 8
    while by > 1 and by // 2 >= rows:
        by //= 2
        bx = min(2 * bx, next_pow2(col_vectors), 256)
    blocks_x = math.ceil(col_vectors / bx)
    chunks = 1
    if blocks_x < 4 * sms:
        chunks = max(1, min(math.ceil(4 * sms / blocks_x), rows // (by * 16)))
    while chunks == 1 and blocks_x < 4 * sms and bx > 8 and by < 32 and rows >= 16 * by:
        bx, by = bx // 2, 2 * by
        blocks_x = math.ceil(col_vectors / bx)
    return bx, by, chunks


# ------------------------------------------------------------------ evaluator


class Evaluator:
    """Emits the f32 scalars of a fusion value at a multi-index.

    `lanes` > 1 asks for that many consecutive elements along the value's last dimension
    (lane 0 at `idx`, whose last coordinate is a multiple of `lanes`). Materialized values and
    function arguments are loaded from their buffers; everything else is recomputed.
    """

    def __init__(self, kb: KernelBuilder, buffers: dict[SSAValue, SSAValue],
                 overrides: dict[SSAValue, SSAValue] | None = None, index_maps: dict | None = None):
        self.kb = kb
        self.buffers = buffers          # fusion value -> kernel memref argument (or a shared-memory copy)
        self.overrides = overrides if overrides is not None else {}  # fusion value -> f32 scalar in registers
        self.index_maps = index_maps or {}  # fusion value -> f(index) -> index into its buffer
        self.memo: dict = {}

    def __call__(self, v: SSAValue, idx: Sequence[SSAValue], lanes: int = 1) -> list[SSAValue]:
        key = (v, tuple(idx), lanes)
        if key not in self.memo:
            self.memo[key] = self._eval(v, list(idx), lanes)
        return self.memo[key]

    def _per_lane(self, fn: Callable[[list[SSAValue]], list[SSAValue]], idx: list[SSAValue], lanes: int) -> list[SSAValue]:
        out = []
        for k in range(lanes):
            lane_idx = idx[:-1] + [self.kb.add(idx[-1], k)] if idx else idx
            out += fn(lane_idx)
        return out

    def _eval(self, v: SSAValue, idx: list[SSAValue], lanes: int) -> list[SSAValue]:
        kb = self.kb
        if v in self.overrides:
            return [self.overrides[v]] * lanes
        if v in self.buffers:
            buf = self.buffers[v]
            if v in self.index_maps:
                idx = self.index_maps[v](idx)
            if not idx:  # rank-0 tensor
                return [kb.ext(kb.load(buf, [], 1)[0])] * lanes
            vals = kb.load(buf, idx, lanes)
            return [kb.ext(x) if F.is_float(x.type) else x for x in vals]
        op = v.owner
        if isinstance(op, F.FullOp):
            return [kb.cf(_round_const(op.value.value.data, F._elem(v)))] * lanes
        if isinstance(op, F.BroadcastOp):
            new = set(op.dims.get_values())
            rank = len(shape_of(v))
            sub = [i for d, i in enumerate(idx) if d not in new]
            if (rank - 1) in new:  # last dim is new: every lane reads the same element
                return self(op.input, sub, 1) * lanes
            return self(op.input, sub, lanes)
        if isinstance(op, F.ReshapeOp):
            out_shape, in_shape = shape_of(v), shape_of(op.input)
            lin = kb.linearize(idx, out_shape)
            if lanes > 1 and in_shape and in_shape[-1] % lanes == 0:
                return self(op.input, kb.delinearize(lin, in_shape), lanes)
            return [x for k in range(lanes) for x in self(op.input, kb.delinearize(kb.add(lin, k), in_shape), 1)]
        if isinstance(op, F.PermuteOp):
            perm = list(op.perm.get_values())
            def at(ix: list[SSAValue]) -> list[SSAValue]:
                sub = [None] * len(perm)
                for i, p in enumerate(perm):
                    sub[p] = ix[i]
                return sub
            if lanes > 1 and perm[-1] == len(perm) - 1:
                return self(op.input, at(idx), lanes)
            return self._per_lane(lambda ix: self(op.input, at(ix), 1), idx, lanes)
        if isinstance(op, F.CastOp):
            xs = self(op.input, idx, lanes)
            t = F._elem(v)
            if t == i64 and all(F.is_float(x.type) for x in xs):  # truncation toward zero
                return [kb.v(arith.FPToSIOp(x, i64)) for x in xs]
            if t == i1 and all(F.is_float(x.type) for x in xs):   # nonzero is true
                return [kb.v(arith.CmpfOp(x, kb.cf(0.0), "une")) for x in xs]
            return [kb.round_to(x, t) for x in xs]
        if isinstance(op, F.UnaryOp):
            return [emit_unary(kb, op, x) for x in self(op.input, idx, lanes)]
        if isinstance(op, F.BinaryOp):
            a, b = self(op.lhs, idx, lanes), self(op.rhs, idx, lanes)
            return [self._round(emit_binary(kb, op, x, y), v) for x, y in zip(a, b)]
        if isinstance(op, F.CmpOp):
            a, b = self(op.lhs, idx, lanes), self(op.rhs, idx, lanes)
            pred = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}[op.predicate.data]
            return [kb.v(arith.CmpfOp(x, y, pred)) for x, y in zip(a, b)]
        if isinstance(op, F.WhereOp):
            c, a, b = self(op.cond, idx, lanes), self(op.lhs, idx, lanes), self(op.rhs, idx, lanes)
            return [kb.v(arith.SelectOp(ci, x, y)) for ci, x, y in zip(c, a, b)]
        raise ScheduleError(f"'{op.name}' cannot be recomputed inside a kernel")

    def _round(self, x: SSAValue, v: SSAValue) -> SSAValue:
        # f16/bf16 ops round their result, as the reference does.
        return self.kb.round_to(x, F._elem(v))


def _round_const(x: float, t) -> float:
    import numpy as np
    if F.dtype_name(t) == "f16":
        return float(np.float16(x))
    if F.dtype_name(t) == "bf16":
        bits = np.array([x], dtype=np.float32).view(np.uint32)[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])
    return float(np.float32(x))


def emit_unary(kb: KernelBuilder, op: F.UnaryOp, x: SSAValue) -> SSAValue:
    one = kb.cf(1.0)
    half = kb.cf(0.5)
    r: SSAValue
    match op:
        case F.NegOp():
            r = kb.v(arith.NegfOp(x))
        case F.AbsOp():
            r = kb.math1(mathd.AbsFOp, x)
        case F.ExpOp():
            r = kb.math1(mathd.ExpOp, x)
        case F.LogOp():
            r = kb.math1(mathd.LogOp, x)
        case F.TanhOp():
            r = kb.math1(mathd.TanhOp, x)
        case F.SqrtOp():
            r = kb.math1(mathd.SqrtOp, x)
        case F.RsqrtOp():
            r = kb.math1(mathd.RsqrtOp, x)
        case F.ReluOp():
            r = kb.fmax(x, kb.cf(0.0))
        case F.SigmoidOp():
            r = kb.fdiv_approx(one, kb.fadd(one, kb.math1(mathd.ExpOp, kb.v(arith.NegfOp(x)))))
        case F.SiluOp():
            r = kb.fdiv_approx(x, kb.fadd(one, kb.math1(mathd.ExpOp, kb.v(arith.NegfOp(x)))))
        case F.GeluOp() if op.approximate == "tanh":
            # 0.5*x*(1 + tanh(u)) == x / (1 + exp(-2u)): one exp and one division, no branch.
            # A huge divisor (exp -> inf for very negative u) gives 0, the right limit.
            u2 = kb.fmul(kb.cf(-2.0 * math.sqrt(2.0 / math.pi)),
                         kb.fadd(x, kb.fmul(kb.cf(0.044715), kb.fmul(x, kb.fmul(x, x)))))
            r = kb.fdiv_approx(x, kb.fadd(one, kb.math1(mathd.ExpOp, u2)))
        case F.GeluOp():
            r = kb.fmul(kb.fmul(half, x), kb.fadd(one, kb.math1(mathd.ErfOp, kb.fmul(x, kb.cf(1.0 / math.sqrt(2.0))))))
        case _:
            raise ScheduleError(f"'{op.name}' has no lowering")
    return kb.round_to(r, F._elem(op.result))


def emit_binary(kb: KernelBuilder, op: F.BinaryOp, a: SSAValue, b: SSAValue) -> SSAValue:
    match op:
        case F.AddOp():
            return kb.fadd(a, b)
        case F.SubOp():
            return kb.fsub(a, b)
        case F.MulOp():
            return kb.fmul(a, b)
        case F.DivOp():
            return kb.fdiv(a, b)
        case F.MaxOp():
            return kb.fmax(a, b)
        case F.MinOp():
            return kb.fmin(a, b)
        case F.PowOp():
            return kb.v(mathd.PowFOp(a, b))
    raise ScheduleError(f"'{op.name}' has no lowering")


# ------------------------------------------------------------------ planning


@dataclass
class Task:
    """One kernel to emit (a reduction may emit two)."""

    kind: str                     # "pointwise" | "reduction" | "normalization" | "matmul" | "segment"
    order: int
    level: int
    op: object = None             # the reduction, matmul or segment_set op
    outputs: list[SSAValue] = field(default_factory=list)  # values this kernel writes
    group: object = None          # a normalization task's NormGroup


def _leaves(v: SSAValue, materialized: set[SSAValue], args: set[SSAValue], seen=None) -> set[SSAValue]:
    """Materialized values and arguments that computing `v` in registers reads."""
    seen = set() if seen is None else seen
    if v in seen:
        return set()
    seen.add(v)
    if v in materialized or v in args:
        return {v}
    out: set[SSAValue] = set()
    for o in v.owner.operands:
        out |= _leaves(o, materialized, args, seen)
    return out


def _pointwise_path_only(v: SSAValue, targets: set[SSAValue], materialized, args) -> bool:
    """True if every route from `v` to `targets` crosses only elementwise ops (same index)."""
    if v in targets:
        return True
    if v in materialized or v in args:
        return True
    op = v.owner
    reaches = any(t in _leaves(o, materialized | targets, args) for o in op.operands for t in targets)
    if not reaches:
        return True
    if isinstance(op, SHAPE_OPS) or not isinstance(op, F.POINTWISE_OPS):
        return False
    return all(_pointwise_path_only(o, targets, materialized, args) for o in op.operands)


@dataclass
class Plan:
    tasks: list[Task]
    stored: list[SSAValue]        # values written to a buffer (function outputs first)
    materialized: set[SSAValue]   # values kernels read from their buffer rather than recompute
    groups: list = field(default_factory=list)  # normalization groups considered, with decisions


def plan_fusion(fn: func.FuncOp, opts: ScheduleOptions = ScheduleOptions()) -> Plan:
    """Partition `fn` into kernel tasks as the schedulers would with `opts` (builds no IR)."""
    body = fn.body.block
    ret = body.last_op
    args = set(body.args)
    for op in body.ops:
        if op is not ret and op.dialect_name() != "fusion":
            raise ScheduleError(f"'{op.name}' is not a fusion op; convert-fusion-to-sched expects fusion IR", op)
    outputs = list(ret.operands)
    order = {op: i for i, op in enumerate(body.ops)}
    # Only kernel boundaries are read back; pointwise outputs are recomputed by their readers
    # (reading one back would race with, or precede, the kernel that writes it).
    materialized: set[SSAValue] = set()
    for op in body.ops:
        if isinstance(op, REDUCTION_OPS + (F.SegmentSetOp, F.MatmulOp)):
            materialized |= set(op.results)

    level: dict[SSAValue, int] = {a: 0 for a in args}

    def lvl(v: SSAValue) -> int:
        if v in level:
            return level[v]
        op = v.owner
        if isinstance(op, REDUCTION_OPS + (F.SegmentSetOp, F.MatmulOp)):
            deps = set().union(*(_leaves(o, materialized - set(op.results), args) for o in op.operands))
            level[v] = 1 + max((lvl(d) for d in deps), default=0)
        else:
            deps = _leaves(v, materialized - {v}, args)
            level[v] = max((lvl(d) for d in deps), default=0)
        return level[v]

    tasks: list[Task] = []
    pointwise_outputs = [o for o in dict.fromkeys(outputs) if o not in materialized and o not in args]
    for op in body.ops:
        if isinstance(op, REDUCTION_OPS):
            # Every result is written: later kernels may read any of them.
            tasks.append(Task("reduction", order[op], lvl(op.results[0]), op, list(op.results)))
        elif isinstance(op, F.MatmulOp):
            tasks.append(Task("matmul", order[op], lvl(op.result), op, [op.result]))
        elif isinstance(op, F.SegmentSetOp):
            tasks.append(Task("segment", order[op], lvl(op.result), op, [op.result]))
    # Epilogues: outputs of a reduction's (or matmul's) shape, pointwise in its result.
    for t in tasks:
        if t.kind not in ("reduction", "matmul"):
            continue
        if t.kind == "matmul" and t.op.k_chunk is not None:  # split-K partials: the sum's kernel has the epilogue
            continue
        rs = set(t.op.results)
        r = t.op.results[0]
        for o in list(pointwise_outputs):
            if o in args or shape_of(o) != shape_of(r):
                continue
            deps = _leaves(o, materialized - {o}, args)
            if not (rs & deps) or any(lvl(d) >= t.level for d in deps if d not in rs):
                continue
            if _pointwise_path_only(o, rs, materialized - {o} - rs, args):
                t.outputs.append(o)
                pointwise_outputs.remove(o)
    groups: dict[tuple, Task] = {}
    for o in pointwise_outputs:
        key = (lvl(o), shape_of(o))
        if key not in groups:
            groups[key] = Task("pointwise", order[o.owner], key[0])
            tasks.append(groups[key])
        groups[key].outputs.append(o)
    from fuser.lowering.matmul import fuse_matmul_tasks  # horizontal matmul fusion, stored results
    tasks = fuse_matmul_tasks(tasks, outputs, materialized, args)
    tasks.sort(key=lambda t: (t.level, t.kind == "pointwise", t.order))
    groups = []
    if opts.persistent:
        from fuser.lowering.normalization import form_groups  # it builds on this module
        tasks, groups = form_groups(tasks, materialized, args, lvl, opts)
    _skip_unread_results(tasks, outputs, materialized, args)
    written = [r for t in tasks for r in t.outputs if not _unstored_matmul_result(t, r)]
    stored = [v for v in dict.fromkeys(list(outputs) + written) if v not in args]
    return Plan(tasks, stored, materialized, groups)


def _unstored_matmul_result(t: Task, v: SSAValue) -> bool:
    """A matmul result that only its own epilogue reads stays in registers (no buffer)."""
    if t.kind != "matmul":
        return False
    results = {t.op.result} | {s.result for s in getattr(t, "siblings", [])}
    return v in results and v not in t.store_results


def _task_reads(t: Task, materialized: set, args: set) -> set[SSAValue]:
    """Materialized values and arguments the kernel(s) of task `t` read from memory."""
    reads: set[SSAValue] = set()
    for o in t.outputs:
        reads |= _leaves(o, materialized - {o}, args)
    ops = [t.op] + list(getattr(t, "siblings", [])) + (list(t.group.ops) if t.group is not None else [])
    for op in ops:
        if op is None:
            continue
        for x in op.operands:
            reads |= _leaves(x, materialized - set(op.results), args)
    return reads


def _skip_unread_results(tasks: list[Task], outputs, materialized: set, args: set) -> None:
    """Drop from a reduction task's outputs the results that are not function outputs and that
    no other kernel reads: the outputs its epilogue computes from them (`bias + sum`, a cast)
    take them from registers, so storing them would be pure extra traffic. (Split-K's sum of
    partials followed by the epilogue is the case that matters.)"""
    outs = set(outputs)
    for t in tasks:
        if t.kind != "reduction":
            continue
        results = set(t.op.results)
        candidates = [r for r in t.outputs if r in results and r not in outs]
        if not candidates:
            continue
        read = set().union(*(_task_reads(u, materialized, args) for u in tasks if u is not t))
        keep = [o for o in t.outputs if o not in candidates or o in read]
        if any(o not in results for o in keep):  # the kernel still stores something
            t.outputs = keep


# ------------------------------------------------------------------ kernels


class KernelEmitter:
    """Creates sched.kernel ops and their launches for one fusion function."""

    def __init__(self, name: str, module_block: Block, host: KernelBuilder, buffers: dict[SSAValue, SSAValue],
                 opts: ScheduleOptions):
        self.name = name
        self.module_block = module_block
        self.host = host
        self.buffers = buffers  # fusion value -> host memref
        self.opts = opts
        self.count = 0

    # A kernel over a fixed list of host buffers; `body(kb, args)` fills it.
    def kernel(self, host_bufs: list[SSAValue], grid, block, body, schedule: str = "", smem: int = 0) -> None:
        """`smem`: bytes of dynamic shared memory (buffers placed there with an `offset`)."""
        name = f"{self.name}_k{self.count}"
        self.count += 1
        k = sched.KernelOp(name, [b.type for b in host_bufs], list(grid), list(block), smem)
        if schedule:  # the scheduler's decision, readable in the IR
            k.attributes["fuser.schedule"] = StringAttr(schedule)
        kb = KernelBuilder(k.body.block)
        body(kb, list(k.body.block.args))
        kb.emit(sched.ReturnOp())
        # Kernels go before the host function so the module reads top-down.
        self.module_block.insert_op_before(k, self._host_func_op())
        self.host.emit(sched.LaunchOp(name, host_bufs))

    def _host_func_op(self):
        return self.host.b.insertion_point.block.parent_op()

    def workspace(self, shape: Sequence[int], zero: bool = False) -> SSAValue:
        return self.host.v(sched.WorkspaceOp(sched.memref(shape, f32), zero))

    def kernel_buffers(self, values: Sequence[SSAValue], extra: Sequence[SSAValue] = ()) -> list[SSAValue]:
        return list(dict.fromkeys([self.buffers[v] for v in values] + list(extra)))

    def arg_map(self, host_bufs: list[SSAValue], kargs: list[SSAValue], values: Sequence[SSAValue]) -> dict:
        pos = {b: i for i, b in enumerate(host_bufs)}
        return {v: kargs[pos[self.buffers[v]]] for v in values if v in self.buffers}

    # ----------------------------------------------------------- pointwise
    def pointwise(self, outputs: list[SSAValue], materialized: set, args: set) -> None:
        shape = shape_of(outputs[0])
        # A segment_set's buffer is filled from its operand's expression.
        expr = {o: (o.owner.input if isinstance(o.owner, F.SegmentSetOp) else o) for o in outputs}
        leaves = set().union(*(_leaves(expr[o], materialized - {o}, args) for o in outputs))
        reads = sorted(leaves, key=lambda v: str(v.name_hint))
        all_vals = list(outputs) + reads
        max_bytes = max(elem_bytes(F._elem(v)) for v in all_vals)
        total = math.prod(shape)
        lanes = vector_lanes(shape[-1], max_bytes, self.opts.vector) if shape else 1
        nvec = total // lanes
        block, grid = pointwise_params(nvec, self.opts.sms, self.opts.block)
        host_bufs = self.kernel_buffers(list(outputs) + reads)

        def body(kb: KernelBuilder, kargs):
            amap = self.arg_map(host_bufs, kargs, all_vals)
            loop = sched.ForOp(kb.c(0), kb.c(nvec), kb.c(1), [], Block(arg_types=[sched.IndexType()]), bind="grid.x")
            kb.emit(loop)
            lb = kb.at(loop.body.block)
            i = loop.body.block.args[0]
            idx = lb.delinearize(lb.mul(i, lanes), shape) if shape else []
            ev = Evaluator(lb, {v: amap[v] for v in reads})
            for o in outputs:
                vals = ev(expr[o], idx, lanes)
                t = F._elem(o)
                lb.store([lb.trunc(x, t) if F.is_float(t) else x for x in vals], amap[o], idx)
            lb.emit(sched.YieldOp())

        self.kernel(host_bufs, (grid, 1, 1), (block, 1, 1), body)

    # ----------------------------------------------------------- reductions
    def reduction(self, task: Task, materialized: set, args: set) -> None:
        op = task.op
        in_shape = shape_of(op.input)
        dims = sorted(op.reduced_dims)
        rank = len(in_shape)
        if dims == list(range(rank - len(dims), rank)):
            self._inner(task, materialized, args, in_shape, rank - len(dims))
        elif dims == list(range(len(dims))):
            self._outer(task, materialized, args, in_shape, len(dims))
        else:
            note = op.attributes.get("fuser.welford")
            origin = f" ({note.data})" if note is not None else ""
            raise ScheduleError(f"'{op.name}'{origin} over dims {dims} of a rank-{rank} tensor: only leading or "
                                "trailing dimensions are supported; permute the input first", op)

    def finish(self, kb: KernelBuilder, outputs: Sequence[SSAValue], amap: dict, row: SSAValue,
               values: dict[SSAValue, SSAValue]) -> None:
        """Store `outputs` (reduced-shape values) for the linear row `row`; `values` are the
        reduction results already in registers. Outputs are computed here, never read back."""
        ev = Evaluator(kb, {v: b for v, b in amap.items() if v not in outputs}, values)
        for o in outputs:
            idx = kb.delinearize(row, shape_of(o))
            x = ev(o, idx, 1)[0]
            t = F._elem(o)
            kb.store([kb.trunc(x, t) if F.is_float(t) else x], amap[o], idx)

    def _epilogue_reads(self, task: Task, materialized: set, args: set) -> list[SSAValue]:
        results = set(task.op.results)
        leaves = set()
        for o in task.outputs:
            leaves |= _leaves(o, (materialized | results) - {o}, args)
        return sorted(leaves - results, key=lambda v: str(v.name_hint))

    def _input_reads(self, op, materialized: set, args: set) -> list[SSAValue]:
        return sorted(_leaves(op.input, materialized - set(op.results), args), key=lambda v: str(v.name_hint))

    def _partials(self, shape: Sequence[int], width: int) -> _WorkspaceValue:
        """A workspace of `width` partial-state planes: [width, *shape] f32."""
        ws = self.workspace([width, *shape])
        part = _WorkspaceValue(ws)
        self.buffers[part] = ws
        return part

    def _inner(self, task: Task, materialized: set, args: set, in_shape: tuple[int, ...], k: int) -> None:
        op = task.op
        st = state_for(op)
        row_shape, col_shape = in_shape[:k], in_shape[k:]
        rows, cols = math.prod(row_shape), math.prod(col_shape)
        in_reads = self._input_reads(op, materialized, args)
        max_bytes = max([elem_bytes(F._elem(v)) for v in in_reads] + [4 if not in_reads else 1])
        lanes = vector_lanes(col_shape[-1], max_bytes, self.opts.vector)
        row_vecs = cols // lanes
        bx, by, chunks = inner_reduction_params(rows, row_vecs, self.opts.sms, self.opts.block)
        if self.opts.split >= 1:
            chunks = self.opts.split

        shifted = is_welford(op)

        def first_of_row(kb, amap, row):
            # Welford's shift: the row's first element (see lowering/combiners.py).
            idx = kb.delinearize(row, row_shape) + [kb.c(0)] * len(col_shape)
            return kb.ext(Evaluator(kb, {v: amap[v] for v in in_reads})(op.input, idx, 1)[0])

        def prepare(kb, amap, row, n_lanes):
            # Loaded once before the loop: the shift of the row.
            return first_of_row(kb, amap, row) if shifted else None

        def fold_elements(kb, amap, row, vec, n_lanes, states, shift):
            idx = kb.delinearize(row, row_shape) + kb.delinearize(kb.mul(vec, n_lanes), col_shape)
            xs = [kb.ext(x) for x in Evaluator(kb, {v: amap[v] for v in in_reads})(op.input, idx, n_lanes)]
            if shift is not None:
                xs = [kb.fsub(x, shift) for x in xs]
            return [st.update(kb, s, x) for s, x in zip(states, xs)]

        def store(kb, amap, row, state):
            shift = first_of_row(kb, amap, row) if shifted else None
            self.finish(kb, task.outputs, amap, row, finalize(kb, op, state, shift))

        epi_reads = self._epilogue_reads(task, materialized, args)
        if chunks == 1:
            vals = list(task.outputs) + in_reads + epi_reads
            self._row_reduce_kernel(self.kernel_buffers(vals), vals, rows, row_vecs, lanes, bx, by, 1, st,
                                    fold_elements, store, prepare=prepare)
            return
        # Two kernels: partial states [*, row, chunk], then merge the chunks of each row.
        part = self._partials([rows, chunks], st.width)

        def store_partial(kb, amap, row, state, chunk):
            for c, x in enumerate(state):
                kb.store([x], amap[part], [kb.c(c), row, chunk])

        vals1 = in_reads + [part]
        self._row_reduce_kernel(self.kernel_buffers(vals1), vals1, rows, row_vecs, lanes, bx, by, chunks, st,
                                fold_elements, store_partial, prepare=prepare)

        def merge_partials(kb, amap, row, chunk, n_lanes, states, _pre):
            got = [kb.load(amap[part], [kb.c(c), row, chunk], 1)[0] for c in range(st.width)]
            return [st.merge(kb, states[0], got)]

        vals2 = list(dict.fromkeys(list(task.outputs) + epi_reads + (in_reads if shifted else []))) + [part]
        bx2 = min(1024, max(32, next_pow2(chunks)))
        self._row_reduce_kernel(self.kernel_buffers(vals2), vals2, rows, chunks, 1, bx2, max(1, 256 // bx2), 1, st,
                                merge_partials, store, settle=False)

    def _row_reduce_kernel(self, host_bufs, values, rows, row_vecs, lanes, bx, by, chunks, st, fold, store,
                           settle=True, prepare=None):
        """Rows of `row_vecs` vectors; `bx` threads per row, `by` rows per block, `chunks` blocks per row.

        `prepare(kb, amap, row, lanes)` runs once before the loop; `fold(kb, amap, row, vec, lanes,
        states, prepared)` folds one vector of the row into the per-lane states; `store(kb, amap,
        row, state[, chunk])` runs in one thread per row at the end.
        """
        vecs_per_chunk = math.ceil(row_vecs / chunks)
        w = st.width

        def body(kb: KernelBuilder, kargs):
            amap = self.arg_map(host_bufs, kargs, values)
            tx, ty = kb.tid("x"), kb.tid("y")
            row = kb.add(kb.mul(kb.bid("x"), by), ty)
            row_c = kb.v(arith.MinUIOp(row, kb.c(rows - 1)))  # clamp: tail rows compute row R-1, never store
            chunk = kb.bid("y") if chunks > 1 else None
            start = kb.mul(chunk, vecs_per_chunk) if chunk is not None else kb.c(0)
            end = kb.v(arith.MinUIOp(kb.add(start, vecs_per_chunk), kb.c(row_vecs))) if chunk is not None else kb.c(row_vecs)
            pre = prepare(kb, amap, row_c, lanes) if prepare else None
            init = st.identity(kb) * lanes
            loop = sched.ForOp(start, end, kb.c(1), init,
                               Block(arg_types=[sched.IndexType()] + [f32] * (w * lanes)), bind="thread.x")
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
                _if(kb, ok, lambda b: store(b, amap, row, state, chunk))
            else:
                _if(kb, ok, lambda b: store(b, amap, row, state))

        grid = (math.ceil(rows / by), chunks, 1)
        self.kernel(host_bufs, grid, (bx, by, 1), body)

    def _outer(self, task: Task, materialized: set, args: set, in_shape: tuple[int, ...], k: int) -> None:
        op = task.op
        st = state_for(op)
        row_shape, col_shape = in_shape[:k], in_shape[k:]
        rows, cols = math.prod(row_shape), math.prod(col_shape)
        in_reads = self._input_reads(op, materialized, args)
        max_bytes = max([elem_bytes(F._elem(v)) for v in in_reads] + [4 if not in_reads else 1])
        lanes = vector_lanes(col_shape[-1], max_bytes, self.opts.vector) if col_shape else 1
        col_vecs = cols // lanes
        bx, by, chunks = outer_reduction_params(rows, col_vecs, self.opts.sms)
        if self.opts.split >= 1:
            chunks = self.opts.split
        epi_reads = self._epilogue_reads(task, materialized, args)

        shifted = is_welford(op)

        def first_of_column(kb, amap, col_idx, n_lanes):
            # Welford's shift: the column's first element (see lowering/combiners.py).
            idx = [kb.c(0)] * len(row_shape) + col_idx
            return [kb.ext(x) for x in Evaluator(kb, {v: amap[v] for v in in_reads})(op.input, idx, n_lanes)]

        def prepare(kb, amap, cvec, n_lanes):
            # Loaded once before the loop: the shift of each column of the vector.
            col_idx = kb.delinearize(kb.mul(cvec, n_lanes), col_shape) if col_shape else []
            return first_of_column(kb, amap, col_idx, n_lanes) if shifted else None

        def fold_elements(kb, amap, row, cvec, n_lanes, states, shifts):
            col_idx = kb.delinearize(kb.mul(cvec, n_lanes), col_shape) if col_shape else []
            idx = kb.delinearize(row, row_shape) + col_idx
            xs = [kb.ext(x) for x in Evaluator(kb, {v: amap[v] for v in in_reads})(op.input, idx, n_lanes)]
            if shifts is not None:
                xs = [kb.fsub(x, k) for x, k in zip(xs, shifts)]
            return [st.update(kb, s, x) for s, x in zip(states, xs)]

        def store_out(kb, amap, col, state):
            col_idx = kb.delinearize(col, col_shape) if col_shape else []
            shift = first_of_column(kb, amap, col_idx, 1)[0] if shifted else None
            self.finish(kb, task.outputs, amap, col, finalize(kb, op, state, shift))

        if chunks == 1:
            vals = list(task.outputs) + in_reads + epi_reads
            self._col_reduce_kernel(self.kernel_buffers(vals), vals, rows, col_vecs, lanes, bx, by, 1, st,
                                    fold_elements, store_out, prepare=prepare)
            return
        part = self._partials([chunks, cols], st.width)

        def store_partial(kb, amap, col, state, chunk):
            for c, x in enumerate(state):
                kb.store([x], amap[part], [kb.c(c), chunk, col])

        vals1 = in_reads + [part]
        self._col_reduce_kernel(self.kernel_buffers(vals1), vals1, rows, col_vecs, lanes, bx, by, chunks, st,
                                fold_elements, store_partial, prepare=prepare)

        lanes2 = vector_lanes(cols, 4)

        def merge_partials(kb, amap, chunk, cvec, n_lanes, states, _pre):
            planes = [kb.load(amap[part], [kb.c(c), chunk, kb.mul(cvec, n_lanes)], n_lanes) for c in range(st.width)]
            return [st.merge(kb, s, [p[l] for p in planes]) for l, s in enumerate(states)]

        vals2 = list(dict.fromkeys(list(task.outputs) + epi_reads + (in_reads if shifted else []))) + [part]
        bx2, by2, _ = outer_reduction_params(chunks, cols // lanes2, self.opts.sms)
        self._col_reduce_kernel(self.kernel_buffers(vals2), vals2, chunks, cols // lanes2, lanes2, bx2, by2, 1, st,
                                merge_partials, store_out, settle=False)

    def _col_reduce_kernel(self, host_bufs, values, rows, col_vecs, lanes, bx, by, chunks, st, fold, store,
                           settle=True, prepare=None):
        """Columns in vectors of `lanes`: `bx` threads across column vectors, `by` threads (and
        `chunks` blocks) down the rows; the `by` partial states of a column meet in shared memory."""
        rows_per_chunk = math.ceil(rows / chunks)
        w = st.width

        def body(kb: KernelBuilder, kargs):
            amap = self.arg_map(host_bufs, kargs, values)
            tx, ty = kb.tid("x"), kb.tid("y")
            cvec = kb.add(kb.mul(kb.bid("x"), bx), tx)
            cvec_c = kb.v(arith.MinUIOp(cvec, kb.c(col_vecs - 1)))
            chunk = kb.bid("y") if chunks > 1 else None
            start = kb.mul(chunk, rows_per_chunk) if chunk is not None else kb.c(0)
            end = kb.v(arith.MinUIOp(kb.add(start, rows_per_chunk), kb.c(rows))) if chunk is not None else kb.c(rows)
            pre = prepare(kb, amap, cvec_c, lanes) if prepare else None
            loop = sched.ForOp(start, end, kb.c(1), st.identity(kb) * lanes,
                               Block(arg_types=[sched.IndexType()] + [f32] * (w * lanes)), bind="thread.y")
            kb.emit(loop)
            lb = kb.at(loop.body.block)
            r, *flat = loop.body.block.args
            states = fold(lb, amap, r, cvec_c, lanes, [flat[l * w:(l + 1) * w] for l in range(lanes)], pre)
            lb.emit(sched.YieldOp(*[x for s in states for x in s]))
            res = list(loop.results)
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
                smem = kb.v(sched.AllocOp(sched.memref([by, bx * lanes * w], f32, sched.SHARED)))
                for l, s in enumerate(states):
                    for c, x in enumerate(s):
                        kb.store([x], smem, [ty, kb.add(kb.mul(tx, lanes * w), l * w + c)])
                kb.emit(sched.BarrierOp())

                def slot(b: KernelBuilder, y, l, c):
                    return [y, b.add(b.mul(tx, lanes * w), l * w + c)]

                # Fold the `by` partial states of each column as a tree: every step halves the
                # rows still holding a state, all threads of those rows merging in parallel.
                assert by & (by - 1) == 0, "outer_reduction_params gives a power-of-two by"
                half = by // 2
                while half >= 1:
                    def merge_pair(b: KernelBuilder, half=half):
                        other = b.add(ty, half)
                        for l in range(lanes):
                            mine = [b.load(smem, slot(b, ty, l, c), 1)[0] for c in range(w)]
                            theirs = [b.load(smem, slot(b, other, l, c), 1)[0] for c in range(w)]
                            for c, x in enumerate(st.merge(b, mine, theirs)):
                                b.store([x], smem, slot(b, ty, l, c))
                    _if(kb, kb.lt(ty, half), merge_pair)
                    kb.emit(sched.BarrierOp())
                    half //= 2

                def store_row0(b: KernelBuilder):
                    emit_stores(b, [[b.load(smem, slot(b, b.c(0), l, c), 1)[0] for c in range(w)]
                                    for l in range(lanes)])
                _if(kb, kb.andi(kb.eq(ty, 0), kb.lt(cvec, col_vecs)), store_row0)
            else:
                _if(kb, kb.lt(cvec, col_vecs), lambda b: emit_stores(b, states))

        grid = (math.ceil(col_vecs / bx), chunks, 1)
        self.kernel(host_bufs, grid, (bx, by, 1), body)


class _WorkspaceValue:
    """Stands for a scheduler-made workspace buffer inside the value->buffer maps."""

    def __init__(self, buf: SSAValue):
        self.buf = buf
        self.name_hint = "workspace"


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
    w = len(state)
    smem = kb.v(sched.AllocOp(sched.memref([by * nwarps * w], f32, sched.SHARED)))
    lane, warp = kb.rem(tx, 32), kb.div(tx, 32)
    slot = kb.mul(kb.add(kb.mul(ty, nwarps), warp), w)
    _if(kb, kb.eq(lane, 0), lambda b: [b.store([x], smem, [b.add(slot, c)]) for c, x in enumerate(state)])
    kb.emit(sched.BarrierOp())
    src = kb.mul(kb.add(kb.mul(ty, nwarps), kb.v(arith.MinUIOp(lane, kb.c(nwarps - 1)))), w)
    got = [kb.load(smem, [kb.add(src, c)], 1)[0] for c in range(w)]
    state = select_state(kb, kb.lt(lane, nwarps), got, st.identity(kb))
    return warp_reduce(kb, st, state)

def _if(kb: KernelBuilder, cond: SSAValue, then: Callable[[KernelBuilder], None]) -> None:
    blk = Block()
    then(kb.at(blk))
    blk.add_op(scf.YieldOp())
    kb.emit(scf.IfOp(cond, [], Region(blk)))


# ------------------------------------------------------------------ the pass


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
        opts = self.schedule_options()
        plan = plan_fusion(fn, opts)
        body = fn.body.block
        args = list(body.args)
        outputs = list(body.last_op.operands)
        in_types = [sched.memref(shape_of(a), F._elem(a)) for a in args]
        out_types = [sched.memref(shape_of(o), F._elem(o)) for o in outputs]
        host_block = Block(arg_types=in_types + out_types)
        host_fn = func.FuncOp(fn.sym_name.data, FunctionType.from_lists(in_types + out_types, []), Region(host_block))
        host_fn.attributes["fuser.num_outputs"] = IntegerAttr(len(outputs), i64)
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
        for o, a in zip(outputs, out_args):
            if o in buffers:
                copies.append((o, a))
            else:
                buffers[o] = a
        for v in plan.stored:
            if v not in buffers:
                ws = host.v(sched.WorkspaceOp(sched.memref(shape_of(v), F._elem(v))))
                ws.name_hint = v.name_hint
                buffers[v] = ws
        em = KernelEmitter(fn.sym_name.data, module.body.block, host, buffers, opts)
        materialized = plan.materialized
        argset = set(args)
        for t in plan.tasks:
            if t.kind == "reduction":
                em.reduction(t, materialized, argset)
            elif t.kind == "normalization":
                from fuser.lowering.normalization import emit_persistent
                emit_persistent(em, t, materialized, argset)
            elif t.kind == "matmul":
                emit_matmul(em, t, materialized, argset)
            elif t.kind == "segment":
                em.pointwise([t.op.result], materialized, argset)
            else:
                em.pointwise(t.outputs, materialized, argset)
        for o, a in copies:
            _copy_kernel(em, o, a, materialized, argset)
        host.emit(func.ReturnOp())
        module.body.block.erase_op(fn)


def emit_matmul(em: KernelEmitter, task: Task, materialized: set, args: set) -> None:
    # The matmul scheduler lives in its own module (it imports this one).
    from fuser.lowering.matmul import emit_matmul as emit
    emit(em, task, materialized, args)


def _copy_kernel(em: KernelEmitter, src: SSAValue, dst: SSAValue, materialized, args) -> None:
    alias = _WorkspaceValue(dst)
    alias.type = src.type
    em.buffers[alias] = dst
    shape = shape_of(src)
    lanes = vector_lanes(shape[-1], elem_bytes(F._elem(src))) if shape else 1
    nvec = math.prod(shape) // lanes
    block, grid = pointwise_params(nvec, em.opts.sms, em.opts.block)
    host_bufs = [em.buffers[src], dst]

    def body(kb, kargs):
        loop = sched.ForOp(kb.c(0), kb.c(nvec), kb.c(1), [], Block(arg_types=[sched.IndexType()]), bind="grid.x")
        kb.emit(loop)
        lb = kb.at(loop.body.block)
        idx = lb.delinearize(lb.mul(loop.body.block.args[0], lanes), shape) if shape else []
        lb.store(lb.load(kargs[0], idx, lanes), kargs[1], idx)
        lb.emit(sched.YieldOp())

    em.kernel(host_bufs, (grid, 1, 1), (block, 1, 1), body)


def _has_tensor_signature(fn: func.FuncOp) -> bool:
    return any(isinstance(t, TensorType) for t in fn.function_type.inputs.data)
