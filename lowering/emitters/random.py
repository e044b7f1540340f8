"""The creation ops inside kernels: `fusion.iota` and the random numbers `fusion.uniform` and
`fusion.normal` at a multi-index, as dialects/fusion/creation.py defines them (the reference
computes the same in runtime/philox.py).

An element's value depends on its row-major linear index alone (and the seed and offset), so
every schedule computes the same numbers. One Philox block (ten rounds of two 32 x 32 -> 64-bit
multiplies, `arith.mului_extended`) serves 4 consecutive elements (2 of f64): where
the lanes asked for are whole blocks (a vector of 4 or 8 along a last dim that is a multiple of
4), each block is computed once, as it is where they lie in one block; elsewhere each element
computes its block and picks its words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import Float64Type, IntegerType, i32, i64
from xdsl.ir import SSAValue

from fuser.dialects import fusion as F
from fuser.dialects.fusion.creation import PHILOX_M, PHILOX_ROUNDS, PHILOX_W, UNIFORM_BITS, elements_per_block
from fuser.lowering.common import shape_of
from fuser.lowering.emitters.kernel_builder import KernelBuilder, f32

f64 = Float64Type()


def _u32(kb: KernelBuilder, v: int) -> SSAValue:
    """An i32 constant of the 32-bit word `v` (signless: held as its two's complement)."""
    v &= 0xFFFFFFFF
    return kb.const(v - (1 << 32) if v >= 1 << 31 else v, i32)


def _lo_hi(kb: KernelBuilder, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The low and high 32-bit words of an i64."""
    return kb.v(arith.TruncIOp(x, i32)), kb.v(arith.TruncIOp(kb.v(arith.ShRUIOp(x, kb.const(32, i64))), i32))


def philox(kb: KernelBuilder, ctr: Sequence[SSAValue], key: Sequence[SSAValue]) -> list[SSAValue]:
    """Philox 4x32-10 of four i32 counter words under two i32 key words: four i32 words."""
    c, (k0, k1) = list(ctr), key
    for r in range(PHILOX_ROUNDS):
        rk0 = k0 if r == 0 else kb.v(arith.AddiOp(k0, _u32(kb, r * PHILOX_W[0])))
        rk1 = k1 if r == 0 else kb.v(arith.AddiOp(k1, _u32(kb, r * PHILOX_W[1])))
        (lo0, hi0), (lo1, hi1) = (kb.emit(arith.MulUIExtendedOp(c[j], _u32(kb, m), i32)).results
                                  for j, m in ((0, PHILOX_M[0]), (2, PHILOX_M[1])))
        c = [kb.v(arith.XOrIOp(kb.v(arith.XOrIOp(hi1, c[1])), rk0)), lo1,
             kb.v(arith.XOrIOp(kb.v(arith.XOrIOp(hi0, c[3])), rk1)), lo0]
    return c


def _unit(kb: KernelBuilder, w: SSAValue, bits: int, plus_one: bool = False) -> SSAValue:
    """(w >> (32 - bits)) (+ 1) * 2^-bits as f32: exact."""
    x = kb.v(arith.ShRUIOp(w, kb.const(32 - bits, i32)))
    if plus_one:
        x = kb.v(arith.AddiOp(x, kb.const(1, i32)))
    return kb.fmul(kb.v(arith.UIToFPOp(x, f32)), kb.cf(2.0 ** -bits))


def _unit_f64(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    """(a * 2^21 + (b >> 11)) * 2^-53 as f64: exact."""
    hi = kb.v(arith.ShLIOp(kb.v(arith.ExtUIOp(a, i64)), kb.const(21, i64)))
    lo = kb.v(arith.ExtUIOp(kb.v(arith.ShRUIOp(b, kb.const(11, i32))), i64))
    bits = kb.v(arith.OrIOp(hi, lo))
    return kb.v(arith.MulfOp(kb.v(arith.UIToFPOp(bits, f64)), kb.const(2.0 ** -53, f64)))


def _box_muller(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The two standard normal values (r cos t, r sin t) of the word pair (a, b), in f32."""
    u1, u2 = _unit(kb, a, 24, plus_one=True), _unit(kb, b, 24)
    r = kb.math1(mathd.SqrtOp, kb.fmul(kb.cf(-2.0), kb.math1(mathd.LogOp, u1)))
    t = kb.fmul(kb.cf(2.0 * math.pi), u2)
    return kb.fmul(r, kb.math1(mathd.CosOp, t)), kb.fmul(r, kb.math1(mathd.SinOp, t))


def _box_muller_f64(kb: KernelBuilder, w: Sequence[SSAValue]) -> tuple[SSAValue, SSAValue]:
    """The two standard normal values (r cos t, r sin t) of a block's four words, in f64."""
    one = kb.const(1, i64)
    hi = kb.v(arith.ShLIOp(kb.v(arith.ExtUIOp(w[0], i64)), kb.const(21, i64)))
    lo = kb.v(arith.ExtUIOp(kb.v(arith.ShRUIOp(w[1], kb.const(11, i32))), i64))
    bits = kb.v(arith.AddiOp(kb.v(arith.OrIOp(hi, lo)), one))
    u1 = kb.v(arith.MulfOp(kb.v(arith.UIToFPOp(bits, f64)), kb.const(2.0 ** -53, f64)))
    u2 = _unit_f64(kb, w[2], w[3])
    r = kb.math1(mathd.SqrtOp, kb.fmul(kb.const(-2.0, f64), kb.math1(mathd.LogOp, u1)))
    t = kb.fmul(kb.const(2.0 * math.pi, f64), u2)
    return kb.fmul(r, kb.math1(mathd.CosOp, t)), kb.fmul(r, kb.math1(mathd.SinOp, t))


def _finish(kb: KernelBuilder, op: F.RandomOp, z: SSAValue) -> SSAValue:
    """The unit value `z` (u, or a standard normal) scaled and shifted by the op's parameters
    (z * (high - low) + low, or z * std + mean: a product and a sum, each rounded), rounded to
    the result's type (f16 and bf16 back in f32, the compute type)."""
    dtype = F.dtype_name(F._elem(op.result))
    p0, p1 = op._param(0), op._param(1)
    scale, shift = (p1 - p0, p0) if isinstance(op, F.UniformOp) else (p1, p0)
    if dtype == "f64":
        return kb.v(arith.AddfOp(kb.v(arith.MulfOp(z, kb.const(scale, f64))), kb.const(shift, f64)))
    return kb.round_to(kb.fadd(kb.fmul(z, kb.cf(scale)), kb.cf(shift)), F._elem(op.result))


def _block_values(kb: KernelBuilder, op: F.RandomOp, w: list[SSAValue]) -> list[SSAValue]:
    """The values of the elements one block serves, in order."""
    dtype = F.dtype_name(F._elem(op.result))
    if isinstance(op, F.NormalOp) and dtype == "f64":
        return [_finish(kb, op, z) for z in _box_muller_f64(kb, w)]
    if isinstance(op, F.NormalOp):
        return [_finish(kb, op, z) for p in range(2) for z in _box_muller(kb, w[2 * p], w[2 * p + 1])]
    if dtype == "f64":
        return [_finish(kb, op, _unit_f64(kb, w[2 * p], w[2 * p + 1])) for p in range(2)]
    return [_finish(kb, op, _unit(kb, x, UNIFORM_BITS[dtype])) for x in w]


def _select(kb: KernelBuilder, k: SSAValue, vals: Sequence[SSAValue]) -> SSAValue:
    """vals[k] for an i64 `k` in range."""
    out = vals[0]
    for j in range(1, len(vals)):
        out = kb.v(arith.SelectOp(kb.v(arith.CmpiOp(k, kb.const(j, i64), "eq")), vals[j], out))
    return out


def _element_value(kb: KernelBuilder, op: F.RandomOp, w: list[SSAValue], slot: SSAValue) -> SSAValue:
    """The value of the element at `slot` (i64) of its block: its words picked before any float
    math, so that one element costs one conversion (a normal one Box-Muller pair)."""
    dtype = F.dtype_name(F._elem(op.result))
    if isinstance(op, F.NormalOp) and dtype == "f64":
        c, s = _box_muller_f64(kb, w)
        return _finish(kb, op, kb.v(arith.SelectOp(kb.v(arith.TruncIOp(slot, IntegerType(1))), s, c)))
    if isinstance(op, F.NormalOp):
        pair = kb.v(arith.ShRUIOp(slot, kb.const(1, i64)))
        a, b = _select(kb, pair, [w[0], w[2]]), _select(kb, pair, [w[1], w[3]])
        c, s = _box_muller(kb, a, b)
        odd = kb.v(arith.TruncIOp(slot, IntegerType(1)))
        return _finish(kb, op, kb.v(arith.SelectOp(odd, s, c)))
    if dtype == "f64":
        return _finish(kb, op, _unit_f64(kb, _select(kb, slot, [w[0], w[2]]), _select(kb, slot, [w[1], w[3]])))
    return _finish(kb, op, _unit(kb, _select(kb, slot, w), UNIFORM_BITS[dtype]))


def emit_random(kb: KernelBuilder, op: F.RandomOp, seed: SSAValue, offset: SSAValue, idx: list[SSAValue],
                lanes: int) -> list[SSAValue]:
    """The values of `op`'s result at `idx` and the `lanes` - 1 elements after it along the last
    dim (idx's last coordinate a multiple of `lanes`); `seed` and `offset` are i64 scalars."""
    shape = shape_of(op.result)
    per = elements_per_block(F.dtype_name(F._elem(op.result)))
    key = _lo_hi(kb, seed)
    off = _lo_hi(kb, offset)
    lin = kb.v(arith.IndexCastOp(kb.linearize(idx, shape), i64))

    def words(block: SSAValue) -> list[SSAValue]:
        return philox(kb, [*_lo_hi(kb, block), *off], key)

    shift = kb.const(per.bit_length() - 1, i64)  # (per is 2 or 4)
    if lanes % per == 0 and shape and shape[-1] % per == 0:  # whole blocks: lin is a multiple of per
        first = kb.v(arith.ShRUIOp(lin, shift))
        return [v for g in range(lanes // per)
                for v in _block_values(kb, op, words(kb.v(arith.AddiOp(first, kb.const(g, i64)))))]
    one_block = per % lanes == 0 and shape and shape[-1] % lanes == 0  # the lanes share lin's block
    w = words(kb.v(arith.ShRUIOp(lin, shift))) if one_block else None
    out = []
    for k in range(lanes):
        i = kb.v(arith.AddiOp(lin, kb.const(k, i64))) if k else lin
        slot = kb.v(arith.AndIOp(i, kb.const(per - 1, i64)))
        out.append(_element_value(kb, op, w or words(kb.v(arith.ShRUIOp(i, shift))), slot))
    return out


def emit_iota(kb: KernelBuilder, op: F.IotaOp, idx: list[SSAValue], lanes: int) -> list[SSAValue]:
    """start + i * step at `idx` and the lanes after it (see `emit_random`): integers in i64,
    wrapping to the type; floats f32(i) * step + start in f32 (rounded to f16/bf16), f64 in f64."""
    et = F._elem(op.result)
    start, step = op._param(0), op._param(1)
    lin = kb.v(arith.IndexCastOp(kb.linearize(idx, shape_of(op.result)), i64))
    out = []
    for k in range(lanes):
        i = kb.v(arith.AddiOp(lin, kb.const(k, i64))) if k else lin
        if isinstance(et, IntegerType):
            v = kb.v(arith.AddiOp(kb.v(arith.MuliOp(i, kb.const(int(step), i64))), kb.const(int(start), i64)))
            out.append(v if et.width.data == 64 else kb.v(arith.TruncIOp(v, IntegerType(et.width.data))))
        elif isinstance(et, Float64Type):
            x = kb.v(arith.SIToFPOp(i, f64))
            out.append(kb.v(arith.AddfOp(kb.v(arith.MulfOp(x, kb.const(step, f64))), kb.const(start, f64))))
        else:
            x = kb.v(arith.SIToFPOp(i, f32))
            out.append(kb.round_to(kb.fadd(kb.fmul(x, kb.cf(step)), kb.cf(start)), et))
    return out
