"""A small IR builder for sched kernels: constants, index math and f32 compute.

Schedulers describe *what* a kernel does; this class knows how each of those steps is spelled in
sched/arith/math/vector ops, so the schedulers read as algorithms rather than op soup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects import scf, vector
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from fuser.dialects import sched
from fuser.dialects.ir import position
from fuser.lowering.provenance import stamp

f32 = Float32Type()
index = IndexType()


class KernelBuilder:
    """Appends ops to a block; memoizes constants of the kernel."""

    def __init__(self, block: Block, consts: dict | None = None):
        self.b = Builder(InsertPoint.at_end(block))
        self._consts = consts if consts is not None else {}
        # linear index -> the in-range multi-index and shape it was built from (`linearize`), so
        # that a reshape and its inverse give back the same index values, not a division of a
        # product that LLVM cannot cancel (and loads of one element at two spellings of its index)
        self._linearized: dict[SSAValue, tuple[tuple[SSAValue, ...], tuple[int, ...]]] = {}
        # index arithmetic already emitted in this block, by (op, operands): one element's index
        # reached along two paths (two reshapes of one input) is then the same SSA values, so
        # that its loads can be shared (Evaluator) where LLVM would keep both behind a store
        self._index_ops: dict[tuple, SSAValue] = {}

    def at(self, block: Block) -> "KernelBuilder":
        """A builder for a nested block that shares this kernel's constants where visible."""
        return KernelBuilder(block, {})

    def emit(self, op: Operation) -> Operation:
        stamp(op)  # the fusion op it is emitted for (lowering/provenance.py)
        self.b.insert(op)
        return op

    def v(self, op: Operation) -> SSAValue:
        return self.emit(op).results[0]

    def serial_for(self, lb: SSAValue | int, ub: SSAValue | int, inits: Sequence[SSAValue],
                   body: Callable[["KernelBuilder", SSAValue, list[SSAValue]], Sequence[SSAValue]]) -> list[SSAValue]:
        """`for i in lb..ub` run by every thread (an scf.for): `body(kb, i, carried)` builds the
        body and returns the values carried to the next iteration; returns the last ones."""
        blk = Block(arg_types=[index] + [SSAValue.get(v).type for v in inits])
        inner = self.at(blk)
        ys = body(inner, blk.args[0], list(blk.args[1:]))
        inner.emit(scf.YieldOp(*ys))
        lb, ub = (self.c(x) if isinstance(x, int) else x for x in (lb, ub))
        return list(self.emit(scf.ForOp(lb, ub, self.c(1), list(inits), Region(blk))).results)

    def alloc(self, shape: list[int], elem: Attribute, name: str) -> SSAValue:
        """A named shared buffer; sched-alias-smem gives it its offset."""
        buf = self.v(sched.AllocOp(sched.memref(shape, elem, sched.SHARED)))
        buf.name_hint = name
        return buf

    # -------------------------------------------------------------- constants
    def c(self, n: int) -> SSAValue:
        key = ("index", n)
        if key not in self._consts:
            self._consts[key] = self.v(arith.ConstantOp(IntegerAttr(n, index)))
        return self._consts[key]

    def cf(self, x: float) -> SSAValue:
        key = ("f32", repr(x))
        if key not in self._consts:
            self._consts[key] = self.v(arith.ConstantOp(FloatAttr(x, f32)))
        return self._consts[key]

    def const(self, value: int | float, t: Attribute) -> SSAValue:
        """A constant of any scalar type (an integer or float of width `t`)."""
        key = (str(t), repr(value))
        if key not in self._consts:
            attr = IntegerAttr(int(value), t) if isinstance(t, (IntegerType, IndexType)) else FloatAttr(float(value), t)
            self._consts[key] = self.v(arith.ConstantOp(attr))
        return self._consts[key]

    # ------------------------------------------------------------ index math
    def _index_op(self, cls, a: SSAValue, b: SSAValue) -> SSAValue:
        key = (cls, a, b)
        if key not in self._index_ops:
            self._index_ops[key] = self.v(cls(a, b))
        return self._index_ops[key]

    def add(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        if isinstance(b, int):
            if b == 0:
                return a
            b = self.c(b)
        return self._index_op(arith.AddiOp, a, b)

    def mul(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        if isinstance(b, int):
            if b == 1:
                return a
            b = self.c(b)
        return self._index_op(arith.MuliOp, a, b)

    def div(self, a: SSAValue, n: int) -> SSAValue:
        return a if n == 1 else self._index_op(arith.DivUIOp, a, self.c(n))

    def rem(self, a: SSAValue, n: int) -> SSAValue:
        return self.c(0) if n == 1 else self._index_op(arith.RemUIOp, a, self.c(n))

    def lt(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        return self.v(arith.CmpiOp(a, self.c(b) if isinstance(b, int) else b, "ult"))

    def eq(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        return self.v(arith.CmpiOp(a, self.c(b) if isinstance(b, int) else b, "eq"))

    def andi(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(arith.AndIOp(a, b))

    def linearize(self, idx: Sequence[SSAValue], shape: Sequence[int]) -> SSAValue:
        acc = None
        for i, n in zip(idx, shape):
            acc = i if acc is None else self.add(self.mul(acc, n), i)
        if len(idx) > 1:
            self._linearized.setdefault(acc, (tuple(idx), tuple(shape)))
        return acc if acc is not None else self.c(0)

    def delinearize(self, lin: SSAValue, shape: Sequence[int]) -> list[SSAValue]:
        """The row-major multi-index of `lin` in `shape` (`lin` in range)."""
        if lin in self._linearized:
            return self.reindex(*self._linearized[lin], shape)
        return self._divide(lin, shape)

    def reindex(self, idx: Sequence[SSAValue], from_shape: Sequence[int], shape: Sequence[int]) -> list[SSAValue]:
        """The index in `shape` of the element at (in-range) `idx` in `from_shape`, the same
        elements in row-major order (a reshape). The values of `idx` carry over where they can:
        all of them where the shapes differ only in size-1 dims (whose index is 0), else those
        of the trailing dims both shapes have, the rest reindexed again; the rest is divided."""
        inner = [i for i, n in zip(idx, from_shape) if n != 1]
        src, dst = [n for n in from_shape if n != 1], [n for n in shape if n != 1]
        if src != dst:
            keep = 0
            while keep < min(len(src), len(dst)) - 1 and src[-1 - keep] == dst[-1 - keep]:
                keep += 1
            if keep:
                inner = self.reindex(inner[:-keep], src[:-keep], dst[:-keep]) + inner[-keep:]
            else:  # (a lone index may itself be a linearized one: a reshape undone)
                lin = self.linearize(inner, src)
                known = self._linearized.get(lin) if len(inner) == 1 else None
                inner = self.reindex(*known, dst) if known else self._divide(lin, dst)
        rest = iter(inner)
        return [self.c(0) if n == 1 else next(rest) for n in shape]

    def _divide(self, lin: SSAValue, shape: Sequence[int]) -> list[SSAValue]:
        out = []
        for k in range(len(shape) - 1, -1, -1):
            n = shape[k]
            out.append(self.rem(lin, n) if k > 0 else lin)
            lin = self.div(lin, n) if k > 0 else lin
        return out[::-1]

    def tid(self, d: str = "x") -> SSAValue:
        return self.v(sched.ThreadIdxOp(d))

    def bid(self, d: str = "x") -> SSAValue:
        return self.v(sched.BlockIdxOp(d))

    # ------------------------------------------------------------- f32 math
    def fadd(self, a, b):
        return self.v(arith.AddfOp(a, b))

    def fsub(self, a, b):
        return self.v(arith.SubfOp(a, b))

    def fmul(self, a, b):
        return self.v(arith.MulfOp(a, b))

    def fdiv(self, a, b):
        return self.v(arith.DivfOp(a, b))

    def fdiv_approx(self, a, b):
        """a / b as PTX div.approx.f32 (the `afn arcp` flags): at most 2 ulp for divisors in the
        normal range, 0 for |b| > 2^126. For our own expansions whose divisor is 1 + exp(.) >= 1
        (sigmoid, silu, gelu), where the IEEE division's ~40 instructions buy nothing. An f64
        division stays IEEE (f64 results are meant to be f64-accurate)."""
        if isinstance(SSAValue.get(a).type, Float64Type):
            return self.fdiv(a, b)
        return self.v(arith.DivfOp(a, b, flags=arith.FastMathFlagsAttr(["afn", "arcp"])))

    def fmax(self, a, b):
        return self.v(arith.MaximumfOp(a, b))

    def fmin(self, a, b):
        return self.v(arith.MinimumfOp(a, b))

    def math1(self, cls, a):
        return self.v(cls(a))

    def ext(self, x: SSAValue) -> SSAValue:
        """Widen a loaded f16/bf16 value to the f32 compute type; f32, f64 and integers (i1
        included) are computed in their own type."""
        return self.v(arith.ExtFOp(x, f32)) if isinstance(x.type, (Float16Type, BFloat16Type)) else x

    def trunc(self, x: SSAValue, t: Attribute) -> SSAValue:
        """A computed value as it is stored in a buffer of element type `t`: floats narrowed
        (f32 to f16/bf16); integers and masks as they are (a u8's i8 included)."""
        return x if x.type == sched.value_type(t) else self.v(arith.TruncFOp(x, t))

    def round_to(self, x: SSAValue, t: Attribute) -> SSAValue:
        """Round an f32 value to dtype `t` and back: the visible effect of a cast to t."""
        return x if t == f32 else self.ext(self.trunc(x, t))

    # ------------------------------------------------------------- memory
    def load(self, buf: SSAValue, idx: Sequence[SSAValue], lanes: int) -> list[SSAValue]:
        """Load `lanes` contiguous elements (along the last dim) as scalars (a ui8 buffer's as
        signless i8: `sched.value_type`)."""
        elem = sched.value_type(buf.type.element_type)
        if lanes == 1:
            return [self.v(sched.LoadOp(buf, idx, elem))]
        vec = self.v(sched.LoadOp(buf, idx, VectorType(elem, [lanes])))
        return [self.extract(vec, k) for k in range(lanes)]

    def store(self, vals: Sequence[SSAValue], buf: SSAValue, idx: Sequence[SSAValue]) -> None:
        if len(vals) == 1:
            self.emit(sched.StoreOp(vals[0], buf, idx))
            return
        vec = self.v(vector.BroadcastOp(vals[0], VectorType(vals[0].type, [len(vals)])))
        for k, x in enumerate(vals[1:], start=1):
            vec = self.v(vector.InsertOp.create(operands=[x, vec], result_types=[vec.type],
                                                properties={"static_position": position(k)}))
        self.emit(sched.StoreOp(vec, buf, idx))

    def extract(self, vec: SSAValue, k: int) -> SSAValue:
        return self.v(vector.ExtractOp.create(operands=[vec], result_types=[vec.type.element_type],
                                              properties={"static_position": position(k)}))


def compute_float(t: Attribute) -> Attribute:
    """The register type of float element type `t`: f64 for f64, f32 for f32, f16 and bf16."""
    return t if isinstance(t, Float64Type) else f32


def reduce_identity(kind: str) -> float:
    return {"sum": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}[kind]


def combine(kb: KernelBuilder, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
    if kind == "sum":
        return kb.fadd(a, b)
    if kind == "prod":
        return kb.fmul(a, b)
    if kind == "max":
        return kb.fmax(a, b)
    return kb.fmin(a, b)


def emit_if(kb: KernelBuilder, cond: SSAValue, then: Callable[[KernelBuilder], object]) -> None:
    """`scf.if cond` whose body `then(builder)` fills."""
    blk = Block()
    then(kb.at(blk))
    blk.add_op(scf.YieldOp())
    kb.emit(scf.IfOp(cond, [], Region(blk)))


def emit_if_else(kb: KernelBuilder, cond: SSAValue, then: Callable[[KernelBuilder], object],
                 other: Callable[[KernelBuilder], object]) -> None:
    """`scf.if cond` with both branches: `then(builder)` and `other(builder)` fill them."""
    tb, eb = Block(), Block()
    then(kb.at(tb))
    tb.add_op(scf.YieldOp())
    other(kb.at(eb))
    eb.add_op(scf.YieldOp())
    kb.emit(scf.IfOp(cond, [], Region(tb), Region(eb)))


__all__ = ["KernelBuilder", "combine", "emit_if", "emit_if_else", "reduce_identity", "compute_float", "f32", "index", "i1", "mathd"]
