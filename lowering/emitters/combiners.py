"""Reduction states: how a kernel folds elements into a partial result and merges partials.

Every reduction kernel (row, column, persistent) is written once against this interface, so a
sum, a max and a Welford mean/variance share the loops, the warp shuffles and the shared-memory
and workspace steps; only the state and its two rules differ.

- `Fold` (sum/prod/max/min of floats): the state is one f32 (one f64 for f64 elements).
- `IntFold` (sum/prod/max/min of integers and masks; any/all of anything): one i64 (every
  integer widened by its sign, u8 and masks by zeros, so sums and products wrap in i64 as
  torch's and max/min compare in order), or for any/all one i32 holding 0 or 1.
- `ArgState` (argmax/argmin): (value, index): the value f32 for floats (f64 for f64), i64 for integers, the
  index the element's i64 position within the reduced dims. Two states merge by a total order
  (NaN first, then the value, then the lower index), so any merge order gives the first
  extreme, as torch's.
- `WelfordState`: the state is (avg, M2, n) in f32 (in f64 for f64 input). A thread folds its elements as shifted
  sums and `settle`s them into a state; two partial states merge with the parallel formula of
  Chan, Golub and LeVeque:
      n = na + nb,  delta = avg_b - avg_a,
      avg = avg_a + delta * nb / n,   M2 = M2_a + M2_b + delta^2 * na * nb / n
  which never forms a difference of two large sums, so a large mean with a small spread
  (1e4 + N(0, 1e-2)) keeps its variance.

Each state knows its components' types (`types`): shared-memory and workspace partials keep one
buffer per distinct type (`plane_groups`), so a float state's single f32 buffer is as before.

A mean that dwarfs the spread is the hard case in f32: a mean is only known to half an ulp of
itself (5e-4 at 1e4), a large error against deviations of 1e-2. So the kernels reduce *shifted*
data, y = x - K with K the first element of the same reduction (exact in f32 when x and K are
within a factor of two), and add K back to the mean at the end.
"""

from __future__ import annotations

import math

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, i1, i32, i64
from xdsl.ir import Attribute, SSAValue

from fuser.dialects import fusion as F
from fuser.lowering.emitters.evaluator import compute_type, emit_cast
from fuser.lowering.emitters.kernel_builder import KernelBuilder, combine, compute_float, reduce_identity

State = list[SSAValue]
Position = Callable[[], SSAValue] | None   # an element's index within the reduced dims, made on demand

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


class Fold:
    """sum / prod / max / min of floats: a one-value state in the compute type (f32, f64 for f64)."""

    width = 1

    def __init__(self, kind: str, elem: Attribute):
        self.kind = kind
        self.types = (compute_float(elem),)

    def identity(self, kb: KernelBuilder) -> State:
        return [kb.const(reduce_identity(self.kind), self.types[0])]

    def update(self, kb: KernelBuilder, s: State, x: SSAValue, pos: Position = None) -> State:
        return [combine(kb, self.kind, s[0], x)]

    def settle(self, kb: KernelBuilder, s: State) -> State:
        return s

    def merge(self, kb: KernelBuilder, a: State, b: State) -> State:
        return [combine(kb, self.kind, a[0], b[0])]

    def result(self, kb: KernelBuilder, s: State, et: Attribute) -> SSAValue:
        return s[0]


class IntFold:
    """sum / prod / max / min of integers and masks in an i64 (wrapping); any / all of any type
    in an i32 of 0 or 1 (the nonzero test of each element, NaN nonzero)."""

    width = 1

    def __init__(self, kind: str, elem: Attribute):
        self.kind, self.elem = kind, elem
        self.logical = kind in ("any", "all")
        self.types = (i32,) if self.logical else (i64,)

    def identity(self, kb: KernelBuilder) -> State:
        t = self.types[0]
        return [kb.const({"sum": 0, "prod": 1, "max": I64_MIN, "min": I64_MAX, "any": 0, "all": 1}[self.kind], t)]

    def convert(self, kb: KernelBuilder, x: SSAValue) -> SSAValue:
        """An element (in its compute type) as a state value."""
        if self.logical:
            return kb.v(arith.ExtUIOp(emit_cast(kb, x, i1, self.elem), i32))
        return emit_cast(kb, x, i64, self.elem)

    def update(self, kb: KernelBuilder, s: State, x: SSAValue, pos: Position = None) -> State:
        return self.merge(kb, s, [self.convert(kb, x)])

    def settle(self, kb: KernelBuilder, s: State) -> State:
        return s

    def merge(self, kb: KernelBuilder, a: State, b: State) -> State:
        op = {"sum": arith.AddiOp, "prod": arith.MuliOp, "max": arith.MaxSIOp, "min": arith.MinSIOp,
              "any": arith.OrIOp, "all": arith.AndIOp}[self.kind]
        return [kb.v(op(a[0], b[0]))]

    def result(self, kb: KernelBuilder, s: State, et: Attribute) -> SSAValue:
        """The state as a value of the result's element type `et` (in its compute type): a
        mask, or the i64 wrapped to a narrower integer (a u8's as its i8 bits)."""
        ct = compute_type(et)
        if self.logical:
            return kb.v(arith.CmpiOp(s[0], kb.const(0, i32), "ne"))
        return s[0] if ct == i64 else kb.v(arith.TruncIOp(s[0], ct))


class ArgState:
    """argmax / argmin: (value, index); see the module's docstring for the order."""

    width = 2

    def __init__(self, kind: str, elem: Attribute):
        self.largest = kind == "argmax"
        self.elem = elem
        self.floats = F.is_float(elem)
        self.types = (compute_float(elem) if self.floats else i64, i64)

    def identity(self, kb: KernelBuilder) -> State:
        if self.floats:
            v = kb.const(-math.inf if self.largest else math.inf, self.types[0])
        else:
            v = kb.const(I64_MIN if self.largest else I64_MAX, i64)
        return [v, kb.const(I64_MAX, i64)]   # any element's index is lower: it wins a tie

    def update(self, kb: KernelBuilder, s: State, x: SSAValue, pos: Position = None) -> State:
        assert pos is not None, "argmax/argmin need each element's position"
        v = x if self.floats else emit_cast(kb, x, i64, self.elem)
        return self.merge(kb, s, [v, kb.v(arith.IndexCastOp(pos(), i64))])

    def settle(self, kb: KernelBuilder, s: State) -> State:
        return s

    def merge(self, kb: KernelBuilder, a: State, b: State) -> State:
        (va, ia), (vb, ib) = a, b
        earlier = kb.v(arith.CmpiOp(ib, ia, "slt"))
        if self.floats:
            b_nan = kb.v(arith.CmpfOp(vb, vb, "uno"))
            a_nan = kb.v(arith.CmpfOp(va, va, "uno"))
            beyond = kb.v(arith.CmpfOp(vb, va, "ogt" if self.largest else "olt"))   # false with a NaN
            same = kb.v(arith.OrIOp(kb.v(arith.CmpfOp(vb, va, "oeq")), kb.andi(a_nan, b_nan)))
            # b wins: NaN against a number, a larger (smaller) number, or the same and earlier.
            b_first = kb.v(arith.OrIOp(kb.andi(b_nan, kb.v(arith.XOrIOp(a_nan, kb.const(1, i1)))), beyond))
        else:
            beyond = kb.v(arith.CmpiOp(vb, va, "sgt" if self.largest else "slt"))
            same = kb.v(arith.CmpiOp(vb, va, "eq"))
            b_first = beyond
        take_b = kb.v(arith.OrIOp(b_first, kb.andi(same, earlier)))
        return [kb.v(arith.SelectOp(take_b, vb, va)), kb.v(arith.SelectOp(take_b, ib, ia))]

    def result(self, kb: KernelBuilder, s: State, et: Attribute) -> SSAValue:
        return s[1]


class WelfordState:
    """(avg, M2, n), merged with the parallel formula.

    Within one thread, elements are folded as shifted sums (sum y, sum y^2, n) of y = x - K:
    two multiply-adds per element instead of a division, and since y is of the order of the
    spread, sum y^2 - (sum y)^2 / n does not cancel. `settle` turns those sums into the
    (avg, M2, n) state that merges across lanes, threads, blocks and chunks.
    """

    width = 3

    def __init__(self, elem: Attribute):
        t = compute_float(elem)
        self.types = (t, t, t)

    def c(self, kb: KernelBuilder, value: float) -> SSAValue:
        return kb.const(value, self.types[0])

    def identity(self, kb: KernelBuilder) -> State:
        z = self.c(kb, 0.0)
        return [z, z, z]   # both as sums and as a state: nothing seen

    def update(self, kb: KernelBuilder, s: State, x: SSAValue, pos: Position = None) -> State:
        s1, s2, n = s
        return [kb.fadd(s1, x), kb.fadd(s2, kb.fmul(x, x)), kb.fadd(n, self.c(kb, 1.0))]

    def settle(self, kb: KernelBuilder, s: State) -> State:
        s1, s2, n = s
        avg = kb.fdiv(s1, kb.fmax(n, self.c(kb, 1.0)))
        m2 = kb.fmax(kb.fsub(s2, kb.fmul(s1, avg)), self.c(kb, 0.0))
        return [avg, m2, n]

    def merge(self, kb: KernelBuilder, a: State, b: State) -> State:
        avg_a, m2_a, n_a = a
        avg_b, m2_b, n_b = b
        n = kb.fadd(n_a, n_b)
        # nb / max(n, 1): both states empty gives 0, not 0/0.
        w = kb.fdiv(n_b, kb.fmax(n, self.c(kb, 1.0)))
        delta = kb.fsub(avg_b, avg_a)
        avg = kb.fadd(avg_a, kb.fmul(delta, w))
        m2 = kb.fadd(kb.fadd(m2_a, m2_b), kb.fmul(kb.fmul(delta, delta), kb.fmul(n_a, w)))
        return [avg, m2, n]


def select_state(kb: KernelBuilder, cond: SSAValue, a: State, b: State) -> State:
    return [kb.v(arith.SelectOp(cond, x, y)) for x, y in zip(a, b)]


def state_for(op) -> Fold | IntFold | ArgState | WelfordState:
    if not isinstance(op, F.ReduceOp):
        return WelfordState(F._elem(op.input))
    kind, elem = op.kind.data, F._elem(op.input)
    if kind in ("argmax", "argmin"):
        return ArgState(kind, elem)
    if kind in ("any", "all") or not F.is_float(elem):
        return IntFold(kind, elem)
    return Fold(kind, elem)


def needs_position(op) -> bool:
    """Whether the op's state folds each element's position (argmax, argmin)."""
    return isinstance(op, F.ReduceOp) and op.kind.data in ("argmax", "argmin")


def plane_groups(types) -> list[tuple[Attribute, list[int]]]:
    """The distinct types of a state's components, in order of first appearance, each with the
    components of that type: a buffer of partial states holds one plane per component, in one
    buffer per type."""
    groups: dict = {}
    for c, t in enumerate(types):
        groups.setdefault(t, []).append(c)
    return list(groups.items())


def reduced_count(op) -> int:
    shape = op.input.type.get_shape()
    return math.prod(shape[d] for d in op.reduced_dims)


def finalize(kb: KernelBuilder, op, s: State, shift: SSAValue | None = None) -> dict[SSAValue, SSAValue]:
    """The op's results as scalars from its final state (f32; Welford's N as an i64 constant).
    `shift` is what was subtracted from every element before a Welford update."""
    if isinstance(op, F.ReduceOp):
        return {op.result: state_for(op).result(kb, s, F._elem(op.result))}
    avg, m2, _ = s
    if shift is not None:
        avg = kb.fadd(avg, shift)
    n = reduced_count(op)
    if isinstance(op, F.WelfordOp):
        count = kb.v(arith.ConstantOp(IntegerAttr(n, i64)))
        return {op.avg: avg, op.m2: m2, op.n: count}
    # var_mean: as torch, a non-positive denominator divides by zero (inf, or NaN for 0/0).
    denom = max(n - op.correction.value.data, 0)
    return {op.var: kb.fdiv(m2, kb.const(float(denom), m2.type)), op.mean: avg}


class Joint:
    """Several reductions reduced together: their states side by side, merged part by part, so
    one round of shuffles and one shared-memory step serve them all."""

    def __init__(self, parts: list):
        self.parts = parts
        self.width = sum(p.width for p in parts)
        self.types = tuple(t for p in parts for t in p.types)

    def split(self, s: State) -> list[State]:
        out, at = [], 0
        for p in self.parts:
            out.append(s[at:at + p.width])
            at += p.width
        return out

    def identity(self, kb: KernelBuilder) -> State:
        return [x for p in self.parts for x in p.identity(kb)]

    def merge(self, kb: KernelBuilder, a: State, b: State) -> State:
        return [x for p, sa, sb in zip(self.parts, self.split(a), self.split(b)) for x in p.merge(kb, sa, sb)]
