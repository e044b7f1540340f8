"""Reduction states: how a kernel folds elements into a partial result and merges partials.

Every reduction kernel (row, column, persistent) is written once against this interface, so a
sum, a max and a Welford mean/variance share the loops, the warp shuffles and the shared-memory
and workspace steps; only the state and its two rules differ.

- `Fold` (sum/max/min): the state is one f32.
- `WelfordState`: the state is (avg, M2, n) in f32. A thread folds its elements as shifted
  sums and `settle`s them into a state; two partial states merge with the parallel formula of
  Chan, Golub and LeVeque:
      n = na + nb,  delta = avg_b - avg_a,
      avg = avg_a + delta * nb / n,   M2 = M2_a + M2_b + delta^2 * na * nb / n
  which never forms a difference of two large sums, so a large mean with a small spread
  (1e4 + N(0, 1e-2)) keeps its variance.

A mean that dwarfs the spread is the hard case in f32: a mean is only known to half an ulp of
itself (5e-4 at 1e4), a large error against deviations of 1e-2. So the kernels reduce *shifted*
data, y = x - K with K the first element of the same reduction (exact in f32 when x and K are
within a factor of two), and add K back to the mean at the end.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import SSAValue

from fuser.dialects import fusion as F
from fuser.lowering.common import is_welford
from fuser.lowering.emitters.kernel_builder import KernelBuilder, combine, reduce_identity

State = list[SSAValue]


class Fold:
    """sum / max / min: a one-value state."""

    width = 1

    def __init__(self, kind: str):
        self.kind = kind

    def identity(self, kb: KernelBuilder) -> State:
        return [kb.cf(reduce_identity(self.kind))]

    def update(self, kb: KernelBuilder, s: State, x: SSAValue) -> State:
        return [combine(kb, self.kind, s[0], x)]

    def settle(self, kb: KernelBuilder, s: State) -> State:
        return s

    def merge(self, kb: KernelBuilder, a: State, b: State) -> State:
        return [combine(kb, self.kind, a[0], b[0])]


class WelfordState:
    """(avg, M2, n), merged with the parallel formula.

    Within one thread, elements are folded as shifted sums (sum y, sum y^2, n) of y = x - K:
    two multiply-adds per element instead of a division, and since y is of the order of the
    spread, sum y^2 - (sum y)^2 / n does not cancel. `settle` turns those sums into the
    (avg, M2, n) state that merges across lanes, threads, blocks and chunks.
    """

    width = 3

    def identity(self, kb: KernelBuilder) -> State:
        z = kb.cf(0.0)
        return [z, z, z]   # both as sums and as a state: nothing seen

    def update(self, kb: KernelBuilder, s: State, x: SSAValue) -> State:
        s1, s2, n = s
        return [kb.fadd(s1, x), kb.fadd(s2, kb.fmul(x, x)), kb.fadd(n, kb.cf(1.0))]

    def settle(self, kb: KernelBuilder, s: State) -> State:
        s1, s2, n = s
        avg = kb.fdiv(s1, kb.fmax(n, kb.cf(1.0)))
        m2 = kb.fmax(kb.fsub(s2, kb.fmul(s1, avg)), kb.cf(0.0))
        return [avg, m2, n]

    def merge(self, kb: KernelBuilder, a: State, b: State) -> State:
        avg_a, m2_a, n_a = a
        avg_b, m2_b, n_b = b
        n = kb.fadd(n_a, n_b)
        # nb / max(n, 1): both states empty gives 0, not 0/0.
        w = kb.fdiv(n_b, kb.fmax(n, kb.cf(1.0)))
        delta = kb.fsub(avg_b, avg_a)
        avg = kb.fadd(avg_a, kb.fmul(delta, w))
        m2 = kb.fadd(kb.fadd(m2_a, m2_b), kb.fmul(kb.fmul(delta, delta), kb.fmul(n_a, w)))
        return [avg, m2, n]


def select_state(kb: KernelBuilder, cond: SSAValue, a: State, b: State) -> State:
    return [kb.v(arith.SelectOp(cond, x, y)) for x, y in zip(a, b)]


def state_for(op) -> Fold | WelfordState:
    if isinstance(op, F.ReduceOp):
        return Fold(op.kind.data)
    return WelfordState()


def reduced_count(op) -> int:
    shape = op.input.type.get_shape()
    return math.prod(shape[d] for d in op.reduced_dims)


def finalize(kb: KernelBuilder, op, s: State, shift: SSAValue | None = None) -> dict[SSAValue, SSAValue]:
    """The op's results as scalars from its final state (f32; Welford's N as an i64 constant).
    `shift` is what was subtracted from every element before a Welford update."""
    if isinstance(op, F.ReduceOp):
        return {op.result: s[0]}
    avg, m2, _ = s
    if shift is not None:
        avg = kb.fadd(avg, shift)
    n = reduced_count(op)
    if isinstance(op, F.WelfordOp):
        count = kb.v(arith.ConstantOp(IntegerAttr(n, i64)))
        return {op.avg: avg, op.m2: m2, op.n: count}
    # var_mean: as torch, a non-positive denominator divides by zero (inf, or NaN for 0/0).
    denom = max(n - op.correction.value.data, 0)
    return {op.var: kb.fdiv(m2, kb.cf(float(denom))), op.mean: avg}


class Joint:
    """Several reductions reduced together: their states side by side, merged part by part, so
    one round of shuffles and one shared-memory step serve them all."""

    def __init__(self, parts: list):
        self.parts = parts
        self.width = sum(p.width for p in parts)

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
