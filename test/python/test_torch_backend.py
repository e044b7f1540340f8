"""The torch.compile backend (fuser.torch) on the CPU: ATen graphs from AOTAutograd, the
translation table, the capability-based partitioner, fallback to PyTorch and the backward pass,
each region run by fuser's reference interpreter and compared with eager PyTorch.

torch.compile is slow, so the per-entry cases share one compiled function (one region holding
all of them); each case is still its own test, and `test_every_entry_is_tested` checks that
every table entry was translated inside a region by some case.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as Fn  # noqa: E402

import fuser.torch as ft  # noqa: E402
from fuser.torch.partition import regions  # noqa: E402
from fuser.torch.translate import TABLE  # noqa: E402

aten = torch.ops.aten
prims = torch.ops.prims

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float16: dict(rtol=2e-3, atol=1e-3),
       torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2), torch.float64: dict(rtol=1e-12, atol=1e-12)}


def _inputs() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(29)
    a = torch.randn(4, 8, generator=g)
    return {
        "a": a, "b": torch.randn(4, 8, generator=g), "c": torch.randn(8, generator=g),
        "p": torch.rand(4, 8, generator=g) + 0.1,  # positive
        "h": torch.randn(4, 8, generator=g).half(), "bf": torch.randn(4, 8, generator=g).bfloat16(),
        "i": torch.randint(-5, 6, (4, 8), generator=g), "m": torch.rand(4, 8, generator=g) > 0.5,
        "i32": torch.randint(-2 ** 31, 2 ** 31 - 1, (4, 8), generator=g, dtype=torch.int32),
        "j32": torch.randint(-9, 10, (4, 8), generator=g, dtype=torch.int32) | 1,  # odd: never 0
        "k64": torch.randint(-2 ** 40, 2 ** 40, (4, 8), generator=g),
        "u8": torch.randint(0, 256, (4, 8), generator=g, dtype=torch.uint8),
        "v8": torch.randint(0, 256, (4, 8), generator=g, dtype=torch.uint8),
        "s8": torch.randint(-2, 11, (4, 8), generator=g, dtype=torch.int8),  # shift amounts, past 8 too
        "t8": torch.randint(-128, 128, (4, 8), generator=g, dtype=torch.int8),
        "u": torch.randn(4, 1, 8, generator=g),
        "wb": torch.randn(8, 16, generator=g).bfloat16(), "wt": torch.randn(16, 8, generator=g).bfloat16(),
        "cb": torch.randn(16, generator=g).bfloat16(), "xb": torch.randn(4, 16, generator=g).bfloat16(),
        "ix": torch.randint(0, 4, (4, 8), generator=g),  # indices (of dims of 4 or 8)
        "d": torch.randn(4, 8, generator=g, dtype=torch.float64),  # f64, computed in f64 (issue 31)
        # FP8 operands of _scaled_mm (K = 16: rows of 16 bytes) and its per-tensor scales (issue 34)
        "f8a": torch.randn(4, 16, generator=g).to(torch.float8_e4m3fn),
        "f8w": torch.randn(16, 16, generator=g).to(torch.float8_e4m3fn),
        "sa": torch.tensor(0.5), "sb": torch.tensor(1.5),
    }


# (test id, the table entries it exercises, the function of the inputs)
CASES: list[tuple[str, tuple, object]] = [
    ("add_tensor_broadcast", (aten.add.Tensor,), lambda T: T.a + T.c),
    ("add_mixed_dtypes", (aten.add.Tensor,), lambda T: T.a + T.h),
    ("add_alpha", (aten.add.Tensor,), lambda T: torch.add(T.a, T.b, alpha=2)),
    ("add_scalar", (aten.add.Scalar,), lambda T: aten.add.Scalar(T.a, 2.5)),
    ("sub_tensor", (aten.sub.Tensor,), lambda T: T.a - T.b),
    ("sub_scalar", (aten.sub.Scalar,), lambda T: aten.sub.Scalar(T.a, 1.5)),
    ("mul_tensor", (aten.mul.Tensor,), lambda T: T.a * T.b),
    ("mul_half_by_python_scalar", (aten.mul.Tensor,), lambda T: T.h * 0.1),
    ("mul_int_by_float", (aten.mul.Tensor,), lambda T: T.i * 0.5),
    ("mul_scalar", (aten.mul.Scalar,), lambda T: aten.mul.Scalar(T.bf, 3)),
    ("div_tensor", (aten.div.Tensor,), lambda T: T.a / T.p),
    ("div_scalar", (aten.div.Scalar,), lambda T: aten.div.Scalar(T.a, 3.0)),
    ("div_tensor_mode_none", (aten.div.Tensor_mode,), lambda T: aten.div.Tensor_mode(T.a, T.p, rounding_mode=None)),
    ("div_scalar_mode_none", (aten.div.Scalar_mode,), lambda T: aten.div.Scalar_mode(T.a, 4.0, rounding_mode=None)),
    ("neg", (aten.neg.default,), lambda T: -T.a),
    ("abs", (aten.abs.default,), lambda T: torch.abs(T.a)),
    ("exp", (aten.exp.default,), lambda T: torch.exp(T.a)),
    ("exp_bf16", (aten.exp.default,), lambda T: torch.exp(T.bf)),
    ("log", (aten.log.default,), lambda T: torch.log(T.p)),
    ("tanh", (aten.tanh.default,), lambda T: torch.tanh(T.a)),
    ("sqrt", (aten.sqrt.default,), lambda T: torch.sqrt(T.p)),
    ("rsqrt", (aten.rsqrt.default,), lambda T: torch.rsqrt(T.p)),
    ("reciprocal", (aten.reciprocal.default,), lambda T: torch.reciprocal(T.p)),
    ("relu", (aten.relu.default,), lambda T: torch.relu(T.a)),
    ("erf", (aten.erf.default,), lambda T: torch.erf(T.a)),
    ("exp2_bf16", (aten.exp2.default,), lambda T: torch.exp2(T.bf)),
    ("log2", (aten.log2.default,), lambda T: torch.log2(T.p)),
    ("log10", (aten.log10.default,), lambda T: torch.log10(T.p)),
    ("log1p", (aten.log1p.default,), lambda T: torch.log1p(T.p * 1e-3)),
    ("floor", (aten.floor.default,), lambda T: torch.floor(T.a * 3)),
    ("ceil_f16", (aten.ceil.default,), lambda T: torch.ceil(T.h * 3)),
    ("trunc", (aten.trunc.default,), lambda T: torch.trunc(T.a * 3)),
    ("round_halves_to_even", (aten.round.default,), lambda T: torch.round(T.a * 3 + 0.5)),
    ("sign", (aten.sign.default,), lambda T: torch.sign(T.a)),
    ("sin", (aten.sin.default,), lambda T: torch.sin(T.a * 100)),
    ("cos_bf16", (aten.cos.default,), lambda T: torch.cos(T.bf)),
    ("tan", (aten.tan.default,), lambda T: torch.tan(T.a)),
    ("asin", (aten.asin.default,), lambda T: torch.asin(torch.tanh(T.a))),
    ("acos_f16", (aten.acos.default,), lambda T: torch.acos(torch.tanh(T.h))),
    ("atan", (aten.atan.default,), lambda T: torch.atan(T.a * 10)),
    ("sinh", (aten.sinh.default,), lambda T: torch.sinh(T.a)),
    ("cosh", (aten.cosh.default,), lambda T: torch.cosh(T.a)),
    ("asinh", (aten.asinh.default,), lambda T: torch.asinh(T.a * 1e3)),
    ("acosh", (aten.acosh.default,), lambda T: torch.acosh(T.p + 1)),
    ("atanh", (aten.atanh.default,), lambda T: torch.atanh(torch.tanh(T.a))),
    ("expm1", (aten.expm1.default,), lambda T: torch.expm1(T.a * 1e-3)),
    ("erfc", (aten.erfc.default,), lambda T: torch.erfc(T.a * 3)),
    ("erfinv", (aten.erfinv.default,), lambda T: torch.erfinv(torch.tanh(T.a))),
    ("lgamma", (aten.lgamma.default,), lambda T: torch.lgamma(T.a * 4)),  # (negative values too)
    ("lgamma_bf16", (aten.lgamma.default,), lambda T: torch.lgamma(T.bf)),
    ("isnan", (aten.isnan.default,), lambda T: torch.isnan(torch.log(T.a))),
    ("isinf_bf16", (aten.isinf.default,), lambda T: torch.isinf(T.bf / (T.bf > 0))),
    ("isposinf", (aten.isposinf.default,), lambda T: torch.isposinf(T.a / (T.a > 0))),
    ("isneginf_f16", (aten.isneginf.default,), lambda T: torch.isneginf(-T.h / (T.h > 0))),
    ("signbit_of_minus_zero", (aten.signbit.default,), lambda T: torch.signbit(-T.relu_a)),
    ("logical_not", (aten.logical_not.default,), lambda T: torch.logical_not(T.m)),
    ("bitwise_not_of_a_mask", (aten.bitwise_not.default,), lambda T: ~(T.a > 0)),
    ("logical_and", (aten.logical_and.default,), lambda T: torch.logical_and(T.m, T.a > 0)),
    ("mask_and", (aten.bitwise_and.Tensor,), lambda T: T.m & (T.b > 0)),
    ("logical_or", (aten.logical_or.default,), lambda T: torch.logical_or(T.m, T.a > 0)),
    ("mask_or", (aten.bitwise_or.Tensor,), lambda T: T.m | (T.b > 0)),
    ("logical_xor", (aten.logical_xor.default,), lambda T: torch.logical_xor(T.m, T.a > 0)),
    ("mask_xor", (aten.bitwise_xor.Tensor,), lambda T: T.m ^ (T.b > 0)),
    # integer ops (issue 31)
    ("bitwise_and_i32", (aten.bitwise_and.Tensor,), lambda T: T.i32 & T.j32),
    ("bitwise_and_scalar_u8", (aten.bitwise_and.Scalar,), lambda T: aten.bitwise_and.Scalar(T.u8, 0x5A)),
    ("and_dunder_i32", (aten.bitwise_and.Tensor,), lambda T: aten.__and__.Tensor(T.i32, T.j32)),  # (traced as
    ("and_dunder_scalar_i64", (aten.bitwise_and.Scalar,), lambda T: aten.__and__.Scalar(T.i, 6)),  # bitwise_and)
    ("bitwise_or_i64", (aten.bitwise_or.Tensor,), lambda T: T.i | T.k64),
    ("bitwise_or_scalar_u8", (aten.bitwise_or.Scalar,), lambda T: aten.bitwise_or.Scalar(T.u8, 3)),
    ("or_dunder_u8", (aten.bitwise_or.Tensor,), lambda T: aten.__or__.Tensor(T.u8, T.v8)),
    ("or_dunder_scalar_i32", (aten.bitwise_or.Scalar,), lambda T: aten.__or__.Scalar(T.i32, 1)),
    ("bitwise_xor_u8", (aten.bitwise_xor.Tensor,), lambda T: T.u8 ^ T.v8),
    ("bitwise_xor_scalar_i32", (aten.bitwise_xor.Scalar,), lambda T: aten.bitwise_xor.Scalar(T.i32, -7)),
    ("xor_dunder_i64", (aten.bitwise_xor.Tensor,), lambda T: aten.__xor__.Tensor(T.i, T.k64)),
    ("xor_dunder_scalar_u8", (aten.bitwise_xor.Scalar,), lambda T: aten.__xor__.Scalar(T.u8, 255)),
    ("bitwise_not_i32", (aten.bitwise_not.default,), lambda T: ~T.i32),
    ("left_shift_i32", (aten.bitwise_left_shift.Tensor,), lambda T: torch.bitwise_left_shift(T.i32, T.s8.int())),
    ("left_shift_scalar_u8", (aten.bitwise_left_shift.Tensor_Scalar,), lambda T: torch.bitwise_left_shift(T.u8, 3)),
    ("lshift_dunder_i64", (aten.__lshift__.Tensor,), lambda T: aten.__lshift__.Tensor(T.i, T.s8.long())),
    ("lshift_dunder_scalar_i32", (aten.__lshift__.Scalar,), lambda T: aten.__lshift__.Scalar(T.i32, 9)),
    ("right_shift_i8", (aten.bitwise_right_shift.Tensor,), lambda T: torch.bitwise_right_shift(T.t8, T.s8)),
    ("right_shift_scalar_i32", (aten.bitwise_right_shift.Tensor_Scalar,),
     lambda T: torch.bitwise_right_shift(T.i32, 33)),
    ("rshift_dunder_u8", (aten.__rshift__.Tensor,), lambda T: aten.__rshift__.Tensor(T.u8, (T.s8 & 7).to(torch.uint8))),
    ("rshift_dunder_scalar_i64", (aten.__rshift__.Scalar,), lambda T: aten.__rshift__.Scalar(T.k64, 3)),
    ("gcd_i32", (aten.gcd.default,), lambda T: torch.gcd(T.i32, T.j32)),
    ("gcd_i8", (aten.gcd.default,), lambda T: torch.gcd(T.t8, T.s8)),
    ("remainder_int", (aten.remainder.Tensor,), lambda T: torch.remainder(T.i32, T.j32)),
    ("remainder_int_scalar", (aten.remainder.Scalar,), lambda T: torch.remainder(T.i, -4)),
    ("fmod_int", (aten.fmod.Tensor,), lambda T: torch.fmod(T.i32, T.j32)),
    ("fmod_int_scalar_u8", (aten.fmod.Scalar,), lambda T: torch.fmod(T.u8, 7)),
    ("div_floor_int", (aten.div.Tensor_mode,), lambda T: torch.div(T.i32, T.j32, rounding_mode="floor")),
    ("div_trunc_int", (aten.div.Tensor_mode,), lambda T: torch.div(T.i32, T.j32, rounding_mode="trunc")),
    ("div_trunc_float", (aten.div.Tensor_mode,), lambda T: torch.div(T.a * 10, T.p, rounding_mode="trunc")),
    ("div_scalar_mode_floor_int", (aten.div.Scalar_mode,),
     lambda T: aten.div.Scalar_mode(T.i32, 3, rounding_mode="floor")),
    ("floor_divide_int", (aten.floor_divide.default,), lambda T: torch.floor_divide(T.k64, T.j32.long())),
    ("floor_divide_scalar_u8", (aten.floor_divide.Scalar,), lambda T: aten.floor_divide.Scalar(T.u8, 7)),
    ("sigmoid", (aten.sigmoid.default,), lambda T: torch.sigmoid(T.a)),
    ("silu", (aten.silu.default,), lambda T: Fn.silu(T.a)),
    ("gelu_erf", (aten.gelu.default,), lambda T: Fn.gelu(T.a)),
    ("gelu_tanh_f16", (aten.gelu.default,), lambda T: Fn.gelu(T.h, approximate="tanh")),
    ("maximum", (aten.maximum.default,), lambda T: torch.maximum(T.a, T.b)),
    ("minimum", (aten.minimum.default,), lambda T: torch.minimum(T.a, T.c)),
    ("atan2", (aten.atan2.default,), lambda T: torch.atan2(T.a, T.b)),
    ("nextafter", (aten.nextafter.default,), lambda T: torch.nextafter(T.a, T.b)),
    ("nextafter_bf16", (aten.nextafter.default,), lambda T: torch.nextafter(T.bf, -T.bf)),
    ("fmod", (aten.fmod.Tensor,), lambda T: torch.fmod(T.a * 100, T.b)),
    ("fmod_scalar", (aten.fmod.Scalar,), lambda T: torch.fmod(T.a * 100, 0.75)),
    ("remainder", (aten.remainder.Tensor,), lambda T: torch.remainder(T.a * 100, T.b)),
    ("remainder_scalar_bf16", (aten.remainder.Scalar,), lambda T: torch.remainder(T.bf * 100, -0.75)),
    ("pow_2", (aten.pow.Tensor_Scalar,), lambda T: T.a ** 2),
    ("pow_3", (aten.pow.Tensor_Scalar,), lambda T: T.a ** 3),
    ("pow_1_5", (aten.pow.Tensor_Scalar,), lambda T: T.p ** 1.5),
    ("clamp", (aten.clamp.default,), lambda T: T.a.clamp(-0.5, 0.5)),
    ("clamp_min", (aten.clamp_min.default,), lambda T: aten.clamp_min(T.a, 0.1)),
    ("clamp_max", (aten.clamp_max.default,), lambda T: aten.clamp_max(T.a, 0.1)),
    ("clamp_tensor_bounds", (aten.clamp.Tensor,), lambda T: torch.clamp(T.a, T.c - 1.0, T.b)),
    ("clamp_min_tensor", (aten.clamp_min.Tensor,), lambda T: aten.clamp_min.Tensor(T.a, T.c)),
    ("clamp_max_tensor_bf16", (aten.clamp_max.Tensor,), lambda T: aten.clamp_max.Tensor(T.bf, T.bf * 0.5)),
    ("to_f16", (aten._to_copy.default,), lambda T: T.a.to(torch.float16)),
    ("to_bf16", (aten._to_copy.default,), lambda T: T.a.to(torch.bfloat16)),
    # FP8 (issue 34): a round trip through f8e4m3fn past its 448 (saturating), and an f8e5m2 output
    ("fp8_e4m3fn_round_trip", (aten._to_copy.default,),
     lambda T: (T.a * 300).to(torch.float8_e4m3fn).to(torch.bfloat16)),
    ("to_fp8_e5m2", (aten._to_copy.default,), lambda T: (T.bf * 3e4).to(torch.float8_e5m2)),
    ("bool_to_float", (aten._to_copy.default,), lambda T: T.m.float() * T.a),
    ("float_to_bool", (aten._to_copy.default,), lambda T: (T.a * 2).to(torch.bool)),
    ("float_to_i64", (aten._to_copy.default,), lambda T: (T.a * 4).to(torch.int64)),
    ("i64_to_float", (aten._to_copy.default,), lambda T: T.i.float() + T.a),
    ("f16_to_f64", (aten._to_copy.default,), lambda T: (T.h * 2).double()),
    # f64 computed in f64 (issue 31): math, a mixed f32/f64 promotion, reductions and statistics
    ("f64_math", (aten.sin.default, aten.exp.default, aten.mul.Tensor, aten.tanh.default),
     lambda T: torch.sin(T.d) * T.d.exp() + torch.tanh(T.d * 3)),
    ("f64_with_f32", (aten.add.Tensor,), lambda T: T.d + T.a),
    ("f64_sum_amax", (aten.sum.dim_IntList, aten.amax.default), lambda T: T.d.sum(-1) + T.d.amax(0).sum()),
    ("f64_var_mean", (aten.var_mean.correction,), lambda T: torch.var_mean(T.d.exp(), dim=1)[0] * T.d.mean(1)),
    ("f64_pow_atan2", (aten.pow.Tensor_Scalar, aten.atan2.default),
     lambda T: T.d.abs() ** 2.7 + torch.atan2(T.d, T.a.double())),
    ("f64_lgamma", (aten.lgamma.default,), lambda T: torch.lgamma(T.d * 4)),  # (the reflection too)
    ("convert_element_type", (prims.convert_element_type.default,),
     lambda T: prims.convert_element_type(T.a * 2, torch.float16)),
    ("eq_tensor", (aten.eq.Tensor,), lambda T: (T.a * 0) == T.b.clamp(0, 0)),
    ("ne_scalar", (aten.ne.Scalar,), lambda T: T.relu_a != 0),
    ("lt_tensor", (aten.lt.Tensor,), lambda T: T.a < T.b),
    ("le_scalar", (aten.le.Scalar,), lambda T: T.a <= 0.25),
    ("gt_mixed", (aten.gt.Tensor,), lambda T: T.h > T.a),
    ("ge_scalar", (aten.ge.Scalar,), lambda T: T.bf >= 0.5),
    ("eq_scalar", (aten.eq.Scalar,), lambda T: T.relu_a == 0),
    ("ne_tensor", (aten.ne.Tensor,), lambda T: T.a != T.relu_a),
    ("lt_scalar", (aten.lt.Scalar,), lambda T: T.a < -0.25),
    ("le_tensor", (aten.le.Tensor,), lambda T: T.a <= T.c),
    ("gt_scalar", (aten.gt.Scalar,), lambda T: T.a > 0.1),
    ("ge_tensor", (aten.ge.Tensor,), lambda T: T.a >= T.b),
    ("where", (aten.where.self,), lambda T: torch.where(T.a > 0, T.a, T.b)),
    ("where_scalar_other", (aten.where.ScalarOther,), lambda T: aten.where.ScalarOther(T.m, T.a, 0.5)),
    ("where_scalar_self", (aten.where.ScalarSelf,), lambda T: aten.where.ScalarSelf(T.m, -1.0, T.h)),
    ("where_scalar", (aten.where.Scalar,), lambda T: aten.where.Scalar(T.m, 2.0, -3.0) * T.a),
    ("sum_dim", (aten.sum.dim_IntList,), lambda T: T.a.sum(1)),
    ("sum_dims_keepdim", (aten.sum.dim_IntList,), lambda T: T.a.sum((0, 1), keepdim=True)),
    ("sum_f16", (aten.sum.dim_IntList,), lambda T: T.h.sum(0)),
    ("sum_all", (aten.sum.default,), lambda T: T.a.sum()),
    ("mean_dim", (aten.mean.dim,), lambda T: T.a.mean(0, keepdim=True)),
    ("mean_all_bf16", (aten.mean.default,), lambda T: T.bf.mean()),
    ("amax", (aten.amax.default,), lambda T: T.a.amax(1)),
    # integer and bool reductions, prod, any/all, argmax/argmin (issue 31)
    ("sum_i8_overflows_into_i64", (aten.sum.dim_IntList,), lambda T: T.t8.sum(1)),
    ("sum_bools_counts", (aten.sum.default,), lambda T: T.m.sum()),
    ("sum_i32_dtype_i64", (aten.sum.dim_IntList,), lambda T: T.i32.sum(0, dtype=torch.int64)),
    ("sum_u8_dtype_f32", (aten.sum.dim_IntList,), lambda T: T.u8.sum(1, dtype=torch.float32)),
    ("amax_i32", (aten.amax.default,), lambda T: T.i32.amax(0)),
    ("amin_u8_keepdim", (aten.amin.default,), lambda T: T.u8.amin(1, keepdim=True)),
    ("prod_dim", (aten.prod.dim_int,), lambda T: T.p.prod(1)),
    ("prod_all_i64_wraps", (aten.prod.default,), lambda T: T.k64.prod()),
    ("any_dim_of_floats", (aten.any.dim,), lambda T: (T.a * (T.b > 1)).any(1)),
    ("any_dims_u8", (aten.any.dims,), lambda T: torch.any(T.u8 // 200, dim=(0, 1))),
    ("all_default_i8", (aten.all.default,), lambda T: torch.all(T.t8)),
    ("any_default_bf16", (aten.any.default,), lambda T: torch.any(T.bf > 2)),
    ("all_dim_keepdim", (aten.all.dim,), lambda T: T.i.all(0, keepdim=True)),
    ("all_dims", (aten.all.dims,), lambda T: torch.all(T.m, dim=(0, 1))),
    ("argmax_dim_with_nan", (aten.argmax.default,), lambda T: torch.sqrt(T.a).argmax(1)),  # NaN where a < 0
    ("argmax_flat_ties", (aten.argmax.default,), lambda T: T.i.argmax()),
    ("argmin_keepdim_bf16", (aten.argmin.default,), lambda T: T.bf.argmin(0, keepdim=True)),
    ("amin_keepdim", (aten.amin.default,), lambda T: T.a.amin(0, keepdim=True)),
    # scans (issue 31)
    ("cumsum_last", (aten.cumsum.default,), lambda T: torch.cumsum(T.a * 2, 1)),
    ("cumsum_dim0_bf16", (aten.cumsum.default,), lambda T: torch.cumsum(T.bf, 0)),
    ("cumsum_bools_count", (aten.cumsum.default,), lambda T: torch.cumsum(T.m, 1)),
    ("cumsum_i8_dtype_i32", (aten.cumsum.default,), lambda T: torch.cumsum(T.t8, 1, dtype=torch.int32)),
    ("cumprod_dim", (aten.cumprod.default,), lambda T: torch.cumprod(T.p, 1)),
    ("cumprod_i64_wraps", (aten.cumprod.default,), lambda T: torch.cumprod(T.k64, 0)),
    # sorts (issue 32); ties in the integer, bool and bf16 inputs: indices must be the stable sort's
    ("sort_last", (aten.sort.default,), lambda T: torch.sort(T.a * 2, 1)[0]),
    ("sort_descending_indices_i", (aten.sort.default,), lambda T: torch.sort(T.i, 1, descending=True)[1]),
    ("sort_stable_dim0_bf16", (aten.sort.stable,), lambda T: torch.sort(T.bf, stable=True, dim=0)[0] + T.bf),
    ("sort_stable_bools_indices", (aten.sort.stable,), lambda T: torch.sort(T.m, stable=True, descending=True)[1]),
    ("argsort_u8", (aten.sort.default,), lambda T: torch.argsort(T.u8, 1)),
    ("argsort_stable_descending_i", (aten.sort.stable,), lambda T: torch.argsort(T.i, dim=0, descending=True, stable=True)),
    ("topk_values", (aten.topk.default,), lambda T: torch.topk(T.a, 3)[0] * 2),
    ("topk_smallest_indices_dim0", (aten.topk.default,), lambda T: torch.topk(T.b, 2, 0, largest=False)[1]),
    ("view", (aten.view.default,), lambda T: T.a.view(8, 4) * 2),
    ("reshape", (aten.reshape.default,), lambda T: aten.reshape.default(T.a * 2, [2, 16])),
    ("unsafe_view", (aten._unsafe_view.default,), lambda T: aten._unsafe_view(T.a * 2, [32])),
    ("unsqueeze", (aten.unsqueeze.default,), lambda T: (T.c * 2).unsqueeze(0) + T.a),
    ("squeeze_dim", (aten.squeeze.dim,), lambda T: (T.u * 2).squeeze(1)),
    ("squeeze_dims", (aten.squeeze.dims,), lambda T: aten.squeeze.dims(T.u * 2, [1])),
    ("squeeze_all", (aten.squeeze.default,), lambda T: (T.u * 2).squeeze()),
    ("permute", (aten.permute.default,), lambda T: (T.u * 2).permute(2, 0, 1)),
    ("t", (aten.t.default,), lambda T: (T.a * 2).t() + 1),
    ("transpose", (aten.transpose.int,), lambda T: (T.u * 2).transpose(0, 2) + 1),
    ("expand", (aten.expand.default,), lambda T: (T.c * 2).expand(4, 8) + 0),
    ("clone", (aten.clone.default,), lambda T: aten.clone(T.a * 2) + 1),
    ("alias", (aten.alias.default,), lambda T: aten.alias(T.a * 2) + 1),
    ("detach", (aten.detach.default,), lambda T: aten.detach(T.a * 2) + 1),
    ("full", (aten.full.default,), lambda T: torch.full((4, 8), 2.0) * T.a),
    ("native_dropout_backward", (aten.native_dropout_backward.default,),
     lambda T: aten.native_dropout_backward(T.a, T.m, 1.25)),
    ("native_dropout_backward_bf16", (aten.native_dropout_backward.default,),
     lambda T: aten.native_dropout_backward(T.bf, T.m, 1.25)),
    ("scalar_tensor", (aten.scalar_tensor.default,), lambda T: aten.scalar_tensor(1.5) * T.a),
    ("threshold_backward", (aten.threshold_backward.default,), lambda T: aten.threshold_backward(T.b, T.a, 0.0)),
    ("sigmoid_backward", (aten.sigmoid_backward.default,), lambda T: aten.sigmoid_backward(T.b, torch.sigmoid(T.a))),
    ("tanh_backward", (aten.tanh_backward.default,), lambda T: aten.tanh_backward(T.b, torch.tanh(T.a))),
    ("silu_backward", (aten.silu_backward.default,), lambda T: aten.silu_backward(T.b, T.a)),
    ("gelu_backward_erf", (aten.gelu_backward.default,), lambda T: aten.gelu_backward(T.b, T.a)),
    ("gelu_backward_tanh", (aten.gelu_backward.default,), lambda T: aten.gelu_backward(T.b, T.a, approximate="tanh")),
    ("var_mean", (aten.var_mean.correction,), lambda T: torch.var_mean(T.a, 1)[0] + torch.var_mean(T.a, 1)[1]),
    ("var_mean_keepdim_bf16", (aten.var_mean.correction,), lambda T: torch.var_mean(T.bf, 0, correction=0, keepdim=True)[0]),
    ("var", (aten.var.correction,), lambda T: T.a.var(0)),
    ("layer_norm", (aten.native_layer_norm.default,), lambda T: Fn.layer_norm(T.a, (8,), T.c, T.c)),
    ("layer_norm_bf16_no_affine", (aten.native_layer_norm.default,), lambda T: Fn.layer_norm(T.bf, (8,))),
    ("layer_norm_stats", (aten.native_layer_norm.default,),
     lambda T: aten.native_layer_norm(T.a, [8], T.c, None, 1e-5)[2] * 1),
    ("layer_norm_backward_input", (aten.native_layer_norm_backward.default,), lambda T: _lnb(T, True, True, True)[0]),
    ("layer_norm_backward_weight", (aten.native_layer_norm_backward.default,), lambda T: _lnb(T, True, True, True)[1]),
    ("layer_norm_backward_bias_only", (aten.native_layer_norm_backward.default,),
     lambda T: _lnb(T, False, False, True)[2]),
    ("mm", (aten.mm.default,), lambda T: T.bf @ T.wb),
    ("mm_transposed_b", (aten.mm.default, aten.t.default), lambda T: T.bf @ T.wt.t()),
    ("mm_transposed_a_of_computed", (aten.mm.default, aten.permute.default),
     lambda T: (T.bf * 2).permute(1, 0) @ T.xb),
    ("addmm_linear", (aten.addmm.default,), lambda T: Fn.linear(T.bf, T.wt, T.cb)),
    ("addmm_alpha_beta", (aten.addmm.default,), lambda T: torch.addmm(T.cb, T.bf, T.wb, beta=0.5, alpha=2.0)),
    ("scaled_mm_fp8", (aten._scaled_mm.default,),
     lambda T: torch._scaled_mm(T.f8a, T.f8w.t(), scale_a=T.sa, scale_b=T.sb, bias=T.cb, out_dtype=torch.bfloat16)),
    # shape and indexing ops (issue 32): index computations inside the region's kernels
    ("slice", (aten.slice.Tensor,), lambda T: T.a[1:3, ::3] * 2),
    ("slice_open_end_bf16", (aten.slice.Tensor,), lambda T: T.bf[:, 5:] + 1),
    ("select", (aten.select.int,), lambda T: T.a[:, 2] + T.b[-1, :4]),
    ("narrow", (aten.narrow.default,), lambda T: T.a.narrow(1, 2, 3) * T.b.narrow(1, -4, 3)),
    ("split", (aten.split.Tensor,), lambda T: sum(p.sum(1) for p in torch.split(T.a, 3, 1))),
    ("split_with_sizes", (aten.split_with_sizes.default,),
     lambda T: torch.cat(list(reversed(torch.split(T.i, [1, 5, 2], 1))), 1).float()),
    ("cat", (aten.cat.default,), lambda T: torch.cat([T.a, T.b * 2], 1)),
    ("cat_promotes", (aten.cat.default,), lambda T: torch.cat([T.a, T.h, T.m], 0) * 1),
    ("constant_pad_nd", (aten.constant_pad_nd.default,), lambda T: Fn.pad(T.a, [1, -2, 2, 0], value=3.0) - 1),
    ("constant_pad_nd_int", (aten.constant_pad_nd.default,), lambda T: Fn.pad(T.i32, [3, 3], value=-7).double()),
    ("flip", (aten.flip.default,), lambda T: torch.flip(T.a, [0, 1]) + T.b),
    ("triu", (aten.triu.default,), lambda T: torch.triu(T.a, 1) * 2),
    ("tril_bool", (aten.tril.default,), lambda T: torch.tril(T.m, -1) | T.m.flip(0)),
    ("gather", (aten.gather.default,), lambda T: torch.gather(T.a, 1, T.ix[:3, 2:4]) * 2),
    ("index_select", (aten.index_select.default,),
     lambda T: torch.index_select(T.bf, 1, T.ix[0]) + torch.index_select(T.a, 0, T.ix[1, :4].int())),
    ("embedding", (aten.embedding.default,), lambda T: Fn.embedding(T.ix, T.wb) * 2),
    ("compare_int", (aten.ne.Scalar, aten.lt.Tensor), lambda T: (T.ix != 2).float() + (T.k64 < T.i).float()),
    ("where_int", (aten.where.self, aten.scalar_tensor.default),
     lambda T: torch.where(T.m, T.i32, aten.scalar_tensor(-3, dtype=torch.int32))),
    ("zeros_like", (aten.zeros_like.default,), lambda T: torch.zeros_like(T.a) + T.b),
    ("full_like_int", (aten.full_like.default,), lambda T: torch.where(T.m, torch.full_like(T.ix, 7), T.ix)),
    ("scatter_value", (aten.scatter.value,),
     lambda T: torch.scatter(T.a, 1, T.ix[:, :1], -1.0) + torch.scatter(T.bf, 0, T.ix[1:2], 2.0).float()),
    ("scatter_value_int", (aten.scatter.value,), lambda T: torch.scatter(T.i, 1, T.ix[:, 1:2].flip(0), 9)),
    ("scatter_value_general", (aten.scatter.value,), lambda T: torch.scatter(T.a, 1, T.ix[:3, :5], 0.5) * 1),
    ("scatter_src", (aten.scatter.src,),
     lambda T: torch.scatter(T.b, 1, torch.argsort(T.a[:, :6], 1), T.a * 2)),  # (each row's positions distinct)
    ("scatter_src_int_dim0", (aten.scatter.src,), lambda T: torch.scatter(T.i32, 0, torch.argsort(T.b, 0), T.j32)),
    ("scatter_add", (aten.scatter_add.default,), lambda T: torch.scatter_add(T.a, 0, T.ix[:, :5], T.b) + 1),
    ("scatter_add_bf16_negative_dim", (aten.scatter_add.default,),
     lambda T: torch.scatter_add(T.bf, -1, T.ix, T.bf * 3)),
    ("scatter_add_int", (aten.scatter_add.default,), lambda T: torch.scatter_add(T.k64, 1, T.ix[:2], T.k64[:2])),
    ("index_add", (aten.index_add.default,), lambda T: torch.index_add(T.a, 0, T.ix[0, :6], torch.cat([T.b[:2], T.b[1:3], T.b[2:]]), alpha=2)),
    ("index_add_int_dim1", (aten.index_add.default,), lambda T: torch.index_add(T.i32, 1, T.ix[1], T.j32)),
    ("embedding_dense_backward", (aten.embedding_dense_backward.default,),
     lambda T: aten.embedding_dense_backward(T.a, T.ix[0, :4], 6, 2, False)),
    ("slice_backward", (aten.slice_backward.default,),
     lambda T: aten.slice_backward(T.a, [4, 12], 1, 2, 10, 1) + aten.slice_backward(T.b, [6, 8], 0, -4, 2 ** 63 - 1, 1).sum()),
    # a KV-cache slot write's pieces (issue 32): the slot replaced, the source cast to the destination's dtype
    ("slice_scatter", (aten.slice_scatter.default,),
     lambda T: aten.slice_scatter(T.a, T.b[:, :3] * 2, 1, 5, 8) + aten.slice_scatter(T.a, T.b[:1], 0, -1)),
    ("copy", (aten.copy.default,), lambda T: aten.copy(T.a, T.c) + aten.copy(T.b, T.bf) * 2),
]


def _lnb(T, *mask):
    """native_layer_norm_backward with the saved statistics of the forward."""
    _, mean, rstd = aten.native_layer_norm(T.a, [8], T.c, T.c, 1e-5)
    return aten.native_layer_norm_backward(T.b, T.a, [8], mean, rstd, T.c, T.c, list(mask))
CASE_IDS = [c[0] for c in CASES]
INPUT_NAMES = list(_inputs())


class _Inputs:  # attribute access to the inputs that Dynamo traces (it does not trace SimpleNamespace)
    def __init__(self, a, b, c, p, h, bf, i, m, i32, j32, k64, u8, v8, s8, t8, u, wb, wt, cb, xb, ix, d, f8a, f8w, sa, sb):
        self.a, self.b, self.c, self.p, self.h, self.bf, self.i, self.m, self.u = a, b, c, p, h, bf, i, m, u
        self.i32, self.j32, self.k64, self.u8, self.v8, self.s8, self.t8 = i32, j32, k64, u8, v8, s8, t8
        self.wb, self.wt, self.cb, self.xb, self.ix, self.d = wb, wt, cb, xb, ix, d
        self.f8a, self.f8w, self.sa, self.sb = f8a, f8w, sa, sb
        self.relu_a = torch.relu(a)


def _run_cases(*vals):
    T = _Inputs(*vals)
    return tuple(fn(T) for _, _, fn in CASES)


# Cases whose float results must be torch's bit for bit (a step of one ulp is within TOL)
EXACT_CASES = {"nextafter", "nextafter_bf16"}


@pytest.fixture(scope="module")
def cases():
    """Every case through one compiled function (one region), and through eager PyTorch."""
    be = ft.backend()
    vals = list(_inputs().values())
    got = torch.compile(_run_cases, backend=be, dynamic=False, fullgraph=True)(*vals)
    want = _run_cases(*vals)
    return be, dict(zip(CASE_IDS, got)), dict(zip(CASE_IDS, want))


@pytest.mark.parametrize("case", CASE_IDS)
def test_entry(cases, case):
    _, got, want = cases
    g, w = got[case], want[case]
    assert g.dtype == w.dtype and g.shape == w.shape and g.stride() == w.stride()
    if w.dtype in TOL and case not in EXACT_CASES:
        torch.testing.assert_close(g, w, **TOL[w.dtype])
    else:
        assert torch.equal(g, w)


def test_rounding_an_integer_tensor_stays_in_pytorch():
    """floor/round of an integer tensor is the identity in torch: fuser's float ops refuse it, so
    it runs in PyTorch, with the reason, and the result is torch's."""
    be = ft.backend()
    i = torch.randint(-5, 6, (4, 8))
    got = torch.compile(lambda x: torch.floor(x) + torch.round(x), backend=be, dynamic=False)(i)
    assert torch.equal(got, i + i)
    assert be.stats.torch_nodes.get("aten.floor.default") == 1, be.stats.torch_nodes


def test_cases_run_in_fuser(cases):
    be, _, _ = cases
    assert be.stats.torch_nodes == {}, f"nodes left to PyTorch: {be.stats.torch_nodes}"
    assert be.stats.reference_calls >= 1 and be.stats.regions >= 1


# Entries that AOTAutograd never emits (CompositeImplicitAutograd ops, decomposed while tracing,
# and detach, which the backend decomposes): kept for graphs from elsewhere; their cases still run
# (as what they decompose into).
NOT_IN_ATEN_GRAPHS = {aten.reshape.default, aten.where.ScalarOther, aten.where.ScalarSelf, aten.where.Scalar,
                      aten.detach.default, aten.narrow.default}


# Random ops: fuser's stream is not torch's, so their cases check what the numbers must be
# (test_random_ops_run_in_fuser), not torch's values.
RANDOM_ENTRIES = {aten.rand_like.default, aten.randn_like.default, aten.native_dropout.default}


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_random_ops_run_in_fuser(device):
    """rand_like, randn_like and native_dropout in one region: fuser's Philox numbers, with a seed
    drawn from torch's generator on each call (repeatable under torch.manual_seed, new numbers
    on the next call); dropout's output is x * mask / (1 - p) for the mask it returns. On the
    GPU the region's kernels draw them (seeds drawn on the device)."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    be = ft.backend()

    def f(x, h):
        y, m = aten.native_dropout(x, 0.25, True)
        return y * 2.0, m, torch.rand_like(x) + 1.0, torch.randn_like(x) * 3.0, torch.rand_like(h)

    x, h = torch.randn(128, 257, device=device), torch.randn(16, 64, device=device).half()
    cf = torch.compile(f, backend=be, dynamic=False, fullgraph=True)
    cf(x, h)  # (compiling draws from torch's generator too)
    torch.manual_seed(5)
    y, m, u, n, uh = cf(x, h)
    torch.manual_seed(5)
    again = cf(x, h)
    later = cf(x, h)
    assert be.stats.torch_nodes == {}, be.stats.torch_nodes
    assert (be.stats.gpu_calls if device == "cuda" else be.stats.reference_calls) >= 4
    seen = {nd.target for r in be.regions() for nd in r.graph_module.graph.nodes if nd.op == "call_function"}
    assert RANDOM_ENTRIES <= seen
    assert all(torch.equal(a, b) for a, b in zip((y, m, u, n, uh), again))
    assert not torch.equal(u, later[2]) and not torch.equal(m, later[1])
    assert m.dtype == torch.bool and abs(m.float().mean().item() - 0.75) < 0.01
    torch.testing.assert_close(y, (x * m / 0.75) * 2.0)
    assert 1.0 <= u.min().item() and u.max().item() < 2.0 and abs(u.mean().item() - 1.5) < 0.01
    assert abs(n.mean().item()) < 0.05 and abs(n.std().item() - 3.0) < 0.05
    assert uh.dtype == torch.float16 and 0.0 <= uh.min().item() and uh.max().item() < 1.0


def test_a_region_without_inputs_stays_in_pytorch():
    """A region that reads no tensor (factories only: position ids from arange, before an op
    fuser leaves to PyTorch) is refused, so it stays in PyTorch: on CUDA a region's outputs must
    come from torch's allocator and stream (CUDA graph pools included), which the runtime takes
    from its tensor inputs."""
    import torch.fx as fx

    from fuser.torch.partition import FusionRegion, NoInputs, Stats

    g = fx.Graph()
    n = g.call_function(aten.full.default, ((4,), 2.0), {"dtype": torch.float32})
    n.meta["val"] = torch.empty(4)
    g.output(n)
    with pytest.raises(NoInputs, match="reads no tensor"):
        FusionRegion("r", fx.GraphModule(torch.nn.Module(), g), [], {}, Stats())


def test_every_entry_is_tested(cases):
    be, _, _ = cases
    seen = {n.target for r in be.regions() for n in r.graph_module.graph.nodes if n.op == "call_function"}
    seen |= RANDOM_ENTRIES  # (test_random_ops_run_in_fuser checks they are translated)
    cased = {op for _, ops, _ in CASES for op in ops} | RANDOM_ENTRIES
    assert set(TABLE) <= cased, f"entries without a case: {set(TABLE) - cased}"
    missing = set(TABLE) - seen - NOT_IN_ATEN_GRAPHS
    assert not missing, f"entries never translated inside a region: {missing}"


# ------------------------------------------------------------------ the rest of the path


def test_fallback_op_runs_in_torch():
    be = ft.backend()

    def f(x):
        return torch.roll(torch.exp(x) * 2, 1, 0).sort(dim=1).values + 1

    x = torch.randn(5, 7)
    torch.testing.assert_close(torch.compile(f, backend=be, dynamic=False)(x), f(x))
    (kind, gm), = be.graphs
    top = {n.target for n in gm.graph.nodes if n.op == "call_function"}
    assert aten.roll.default in top and aten.sort.default not in top  # (the sort is translated: issue 32)
    assert be.stats.torch_nodes == {"aten.roll.default": 1}
    assert len(regions(gm)) == 2 and be.stats.reference_calls == 2  # exp*2 before, sort + 1 after


def test_region_is_a_real_fusion():
    be = ft.backend()

    def f(x, b):
        return Fn.gelu(x * 2.0 + b, approximate="tanh").sum(-1)

    x, b = torch.randn(6, 16), torch.randn(16)
    torch.testing.assert_close(torch.compile(f, backend=be, dynamic=False)(x, b), f(x, b), rtol=1e-5, atol=1e-5)
    (r,) = be.regions()
    assert r.op_count == 4
    for op in ("fusion.mul", "fusion.add", "fusion.broadcast", "fusion.gelu", "fusion.reduce sum"):
        assert op in r.mlir, r.mlir


def test_inputs_that_are_not_dense_are_read_through_their_strides():
    """A slice (rows 16 elements apart, starting 3 in), a slice with steps, an expanded view and
    a transposed slice are declared with their strides (and storage offset within a 16-byte
    line), not copied (issue 32)."""
    be = ft.backend()

    def f(x, y, e, t):
        return torch.sigmoid(x) * y + e - t

    base = torch.randn(6, 16)
    x, y = base[:, 3:11], torch.randn(6, 24)[:, ::3]
    e, t = torch.randn(8).expand(6, 8), torch.randn(8, 7).t()[1:7]
    torch.testing.assert_close(torch.compile(f, backend=be, dynamic=False)(x, y, e, t), f(x, y, e, t))
    assert be.stats.contiguous_copies == 0
    (r,) = be.regions()
    assert r.input_layouts == [((16, 1), 3), ((24, 3), 0), ((0, 1), 0), ((1, 7), 1)], r.input_layouts
    assert "fusion.strides = array<i64: 16, 1>, fusion.offset = 3 : i64" in r.mlir, r.mlir
    assert "fusion.strides = array<i64: 0, 1>" in r.mlir, r.mlir


def test_permuted_inputs_and_outputs_are_not_copied():
    """An input stored in another dim order (an attention output [B, H, T, D] laid out as
    [B, T, H, D]) and transposed back by the region is a contiguous view at the boundary; an
    output torch records permuted is computed in its stored order (the transposes cancel)."""
    be = ft.backend()

    def f(x, b):
        y = x.transpose(1, 2) * 2 + b     # [B, T, H, D], contiguous in x's storage
        return y, (y + 1).transpose(1, 2)  # the second output: [B, H, T, D] stored as [B, T, H, D]

    x = torch.randn(2, 5, 3, 4).transpose(1, 2)  # [2, 3, 5, 4] stored as [2, 5, 3, 4]
    b = torch.randn(4)
    got, want = torch.compile(f, backend=be, dynamic=False)(x, b), f(x, b)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride()
    assert be.stats.contiguous_copies == 0
    (r,) = be.regions()
    assert r.input_orders == [None, None] and "tensor<2x5x3x4xf32>" in r.mlir.splitlines()[1]
    assert "fusion.permute" not in r.mlir, r.mlir  # both transposes cancel


def test_permuted_inputs_are_taken_in_their_stored_order():
    be = ft.backend()

    def f(x, y):
        return torch.exp(x) + y

    x, y = torch.randn(2, 5, 3, 4).transpose(1, 2), torch.randn(2, 3, 5, 4)
    torch.testing.assert_close(torch.compile(f, backend=be, dynamic=False)(x, y), f(x, y))
    (r,) = be.regions()
    assert r.input_orders == [[0, 2, 1, 3], None] and be.stats.contiguous_copies == 0


def test_outputs_with_overlapping_strides():
    """A region output torch records as an expanded view (stride 0) comes back row-major with
    the same values (regression: writing it into its recorded strides raised)."""
    be = ft.backend()

    def f(x):
        return torch.roll((x * 2).expand(3, 5), 1, 0)

    x = torch.randn(5)
    torch.testing.assert_close(torch.compile(f, backend=be, dynamic=False)(x), f(x))
    assert be.stats.regions == 1


def test_views_of_inputs_stay_views():
    """Views of region inputs are taken by PyTorch at the boundary: an output that is only a
    view of an input is PyTorch's view (no copy), and the fusion reads inputs in the shape it
    uses."""
    be = ft.backend()

    def f(x):
        v = x.view(4, 6)
        return v.t(), torch.exp(v) + 1

    x = torch.randn(24)
    got, want = torch.compile(f, backend=be, dynamic=False)(x), f(x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    (r,) = be.regions()
    assert "tensor<4x6xf32>" in r.mlir.splitlines()[1] and "fusion.reshape" not in r.mlir, r.mlir
    assert got[0].data_ptr() == x.data_ptr()


def test_transposed_inputs_are_read_in_place():
    """A 2-D input stored transposed (a saved `t()` of a weight) is taken as its contiguous
    transpose, not copied; a matmul reads it through its layout flag."""
    be = ft.backend()

    def f(x, w, a):
        return x @ w, torch.sigmoid(a) + 1

    x, w = torch.randn(4, 8).bfloat16(), torch.randn(16, 8).bfloat16().t()
    a = torch.randn(6, 4).t()
    for g, want in zip(torch.compile(f, backend=be, dynamic=False)(x, w, a), f(x, w, a)):
        torch.testing.assert_close(g, want, **TOL[want.dtype])
    assert be.stats.contiguous_copies == 0
    rs = be.regions()  # (two independent parts: two regions)
    assert sum(r.input_orders.count([1, 0]) for r in rs) == 2
    assert any("transpose_b : tensor<4x8xbf16>, tensor<16x8xbf16>" in r.mlir for r in rs), [r.mlir for r in rs]


def test_training_bf16_block_runs_matmuls_and_layer_norm_in_fuser():
    """LayerNorm -> Linear -> GELU -> Linear + residual in bf16: forward and backward regions hold
    addmm / mm (bias in the epilogue, transposed weights read in place) and the layer norm and
    its backward; loss and gradients match eager within bf16 tolerances."""
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.ln, self.fc1, self.fc2 = torch.nn.LayerNorm(d), torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

        def forward(self, x):
            return x + self.fc2(Fn.gelu(self.fc1(self.ln(x)), approximate="tanh"))

    m = Block().bfloat16()
    x = torch.randn(2, 8, 32).bfloat16()
    be = ft.backend()
    loss = torch.compile(m, backend=be, dynamic=False)(x).float().pow(2).mean()
    loss.backward()
    got = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    want = m(x).float().pow(2).mean()
    want.backward()
    torch.testing.assert_close(loss, want, rtol=1e-2, atol=1e-3)
    for g, p in zip(got, m.parameters()):
        assert (g.float() - p.grad.float()).norm() <= 2e-2 * p.grad.float().norm()
    assert be.stats.torch_nodes == {} and be.stats.contiguous_copies == 0, be.stats
    ops = {n.target for r in be.regions() for n in r.graph_module.graph.nodes if n.op == "call_function"}
    assert {aten.addmm.default, aten.mm.default, aten.native_layer_norm.default,
            aten.native_layer_norm_backward.default, aten.gelu_backward.default} <= ops


def test_training_mlp_gradients_match_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(12, 16), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(16, 16), torch.nn.SiLU(),
        torch.nn.Linear(16, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3),
        torch.nn.Sigmoid())
    x, target = torch.randn(10, 12), torch.rand(10, 3)

    def loss_fn(m, x):
        return Fn.mse_loss(m(x), target) + 0.1 * m(x).pow(2).mean()

    be = ft.backend()
    compiled = torch.compile(model, backend=be, dynamic=False)
    loss = loss_fn(compiled, x)
    loss.backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want_loss = loss_fn(model, x)
    want_loss.backward()
    torch.testing.assert_close(loss, want_loss, rtol=1e-5, atol=1e-6)
    for g, p in zip(got, model.parameters()):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-6)
    kinds = {k for k, _ in be.graphs}
    assert {"forward", "backward"} <= kinds
    assert any(regions(gm) for k, gm in be.graphs if k == "backward")
    ops = {n.target for r in be.regions() for n in r.graph_module.graph.nodes if n.op == "call_function"}
    assert {aten.gelu_backward.default, aten.threshold_backward.default, aten.tanh_backward.default} <= ops


def test_min_cut_partitioner_saves_fewer_activations_than_the_default():
    """partitioner="min_cut" (the default) recomputes a GELU written out as pointwise ops (HF
    GPT-2's gelu_new) in the backward instead of saving its intermediates; gradients are the
    default partitioner's."""
    class Gelu(torch.nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    def run(partitioner):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(12, 64), Gelu(), torch.nn.Linear(64, 3))
        be = ft.backend(partitioner=partitioner)
        torch._dynamo.reset()
        torch.compile(model, backend=be, dynamic=False)(torch.randn(10, 12)).square().mean().backward()
        (fw,) = [gm for kind, gm in be.graphs if kind == "forward"]
        (out,) = [n for n in fw.graph.nodes if n.op == "output"]
        saved = [o for o in out.args[0] if tuple(o.meta["val"].shape) == (10, 64)]
        return len(saved), [p.grad for p in model.parameters()]

    n_min_cut, grads = run("min_cut")
    n_default, want = run("default")
    assert n_min_cut == 2 < n_default  # the first linear's output and the second's input (tanh recomputed)
    for g, w in zip(grads, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="partitioner must be one of"):
        ft.backend(partitioner="greedy")


def _block_with_a_fallback():
    class Block(torch.nn.Module):
        def __init__(self, d=16):
            super().__init__()
            self.ln, self.fc = torch.nn.LayerNorm(d), torch.nn.Linear(d, d)

        def forward(self, x):
            return torch.roll(Fn.gelu(self.fc(self.ln(x))), 1, 1)

    torch.manual_seed(0)
    return Block().bfloat16(), torch.randn(2, 8, 16).bfloat16()


def test_explain_reports_regions_and_fallbacks():
    m, x = _block_with_a_fallback()
    before = [p.grad for p in m.parameters()]
    r = ft.explain(m, x)
    assert [g.kind for g in r.graphs] == ["forward", "backward"]
    fw = r.graphs[0]
    assert len(fw.regions) == 1 and fw.regions[0].symbol.startswith("fuser_")
    assert fw.regions[0].ops["aten.addmm.default"] == 1 and fw.regions[0].ops["aten.native_layer_norm.default"] == 1
    assert fw.regions[0].kernels is None  # CPU: the reference interpreter ran it
    assert fw.fallbacks == {"aten.roll.default": (1, "no entry for aten.roll.default")}
    assert r.fallback_counts()["aten.roll.default"] == 2  # forward and backward
    assert r.fused_share is None
    text = str(r)
    assert "forward graph: 1 regions" in text and "PyTorch: aten.roll.default x1" in text
    assert [p.grad for p in m.parameters()] == before  # explain leaves .grad alone


@pytest.mark.parametrize("setting, ir", [("1", False), ("ir", True)])
def test_fuser_torch_log(monkeypatch, caplog, setting, ir):
    monkeypatch.setenv("FUSER_TORCH_LOG", setting)
    m, x = _block_with_a_fallback()
    with caplog.at_level("INFO", logger="fuser.torch"):
        torch.compile(m, backend=ft.backend(), dynamic=False)(x)
    text = caplog.text
    assert "runs in PyTorch: no entry for aten.roll.default" in text
    assert "region fuser_region_0 (@fuser_" in text
    assert ("fusion.matmul" in text) == ir


def test_fuser_torch_log_off_by_default(monkeypatch, caplog):
    monkeypatch.delenv("FUSER_TORCH_LOG", raising=False)
    m, x = _block_with_a_fallback()
    with caplog.at_level("INFO", logger="fuser.torch"):
        torch.compile(m, backend=ft.backend(), dynamic=False)(x)
    assert "runs in PyTorch" not in caplog.text


def test_dynamic_shapes_fall_back_with_a_warning(caplog):
    be = ft.backend()
    f = torch.compile(lambda x: torch.exp(x) * 2, backend=be, dynamic=True)
    x = torch.randn(3, 5)
    with caplog.at_level("WARNING", logger="fuser.torch"):
        torch.testing.assert_close(f(x), torch.exp(x) * 2)
    assert "symbolic shapes: it runs in PyTorch; pass dynamic=False" in caplog.text
    assert be.stats.regions == 0


def test_equal_regions_are_one_fusion():
    """Regions with the same ops on the same types (every layer of a transformer) have the same
    fusion text and symbol, so they share compiled kernels."""
    be = ft.backend()

    def f(x, y):
        a = torch.sigmoid(x) * 2
        b = torch.roll(a, 1, 0)  # runs in PyTorch: splits the graph into two regions
        return torch.sigmoid(b) * 2

    x = torch.randn(4, 6)
    torch.testing.assert_close(torch.compile(f, backend=be, dynamic=False)(x, x), f(x, x))
    syms = [r.symbol for r in be.regions()]
    assert len(syms) == 2 and syms[0] == syms[1], syms


def test_entry_point_registers_the_backend():
    import torch._dynamo

    assert "fuser" in torch._dynamo.list_backends()
    assert torch._dynamo.lookup_backend("fuser") is ft.fuser_backend


def test_backend_options():
    be = ft.backend(pipeline="default", options={"sms": 66}, executor="torch")
    assert be.config["options"] == {"sms": 66}
    with pytest.raises(ValueError, match="executor"):
        ft.backend(executor="nope")
    x = torch.randn(3, 5)
    torch.testing.assert_close(torch.compile(lambda x: torch.exp(x) + 1, backend=be, dynamic=False)(x), torch.exp(x) + 1)
    assert be.stats.torch_calls == 1 and be.stats.reference_calls == 0


def test_unsupported_dtypes_fall_back():
    be = ft.backend()

    def f(x, i):
        return x.double().exp() + 1, (i * 3).sum(0)  # f64 math (in fuser, issue 31) and i64 math

    x, i = torch.randn(4, 4), torch.randint(0, 9, (4, 4))
    for g, w in zip(torch.compile(f, backend=be, dynamic=False)(x, i), f(x, i)):
        torch.testing.assert_close(g, w)
    assert "aten.exp.default" not in be.stats.torch_nodes  # f64 math is no longer refused


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_training_mlp_on_the_gpu_runs_fuser_kernels(dtype):
    """The same MLP on CUDA tensors: its regions compile to kernels (fuser.api.compile) and take
    the tensors in place; the loss and every gradient match eager."""
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(256, 256), torch.nn.SiLU(),
        torch.nn.Linear(256, 33), torch.nn.Sigmoid()).to("cuda", dtype)
    x, target = torch.randn(1000, 64, device="cuda", dtype=dtype), torch.rand(1000, 33, device="cuda", dtype=dtype)
    be = ft.backend()
    compiled = torch.compile(model, backend=be, dynamic=False)
    loss = Fn.mse_loss(compiled(x), target)
    loss.backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want = Fn.mse_loss(model(x), target)
    want.backward()
    tol = dict(rtol=2e-2, atol=2e-3) if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(loss, want, **tol)
    for g, p in zip(got, model.parameters()):
        torch.testing.assert_close(g, p.grad, **tol)
    assert be.stats.gpu_calls > 0 and be.stats.reference_calls == 0, be.stats


def test_precompile_fills_the_disk_cache_in_parallel(tmp_path, monkeypatch):
    """precompile compiles a graph's distinct CUDA fusions in worker processes; the backend's
    own compile then finds each in the disk cache. (Compiling needs no GPU; the regions are
    marked as CUDA ones.)"""
    import fuser.api as fa
    from fuser.torch.partition import _COMPILED, precompile

    from fuser.runtime import cache

    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))  # the workers' cache
    monkeypatch.setenv("FUSER_CACHE", "1")
    monkeypatch.setattr(cache, "_default", cache.KernelCache(tmp_path, disk=True, max_bytes=0))  # and ours
    be = ft.backend()

    def f(x):
        a = torch.sigmoid(x) * 2
        b = torch.roll(a, 1, 0)
        return torch.tanh(b) + 1

    torch.compile(f, backend=be, dynamic=False)(torch.randn(4, 64))
    rs = be.regions()
    assert len({r.symbol for r in rs}) == 2
    for r in rs:
        r.device = "cuda"
        _COMPILED.pop(r._key(), None)
    assert precompile(rs, workers=2) > 0
    for r in rs:
        assert fa.compile(r.mlir, stages=False).result.cached  # the call the region makes on first use
    assert be.stats.fusions_compiled == 2 and be.stats.fusions_loaded == 0
    from fuser.torch.partition import _POOL
    pids = [p.pid for p in _POOL.procs]
    assert len(pids) == 2 and _POOL.workers(2)[0].pid == pids[0]  # kept for the next graph
    assert precompile(rs[:1], workers=2) == 0.0  # one fusion: nothing to do in parallel


def test_the_forward_precompiles_its_backward_too(monkeypatch):
    """AOTAutograd compiles a backward when it first runs; the backend takes the backward split
    off with the forward and precompiles both graphs' fusions in the forward's one batch, so the
    backward's compiles fill idle workers instead of starting after the forward's. The early
    regions are the ones the backward compiler makes later (the same fusion text: its compile
    then finds them in the disk cache)."""
    import importlib
    fb = importlib.import_module("fuser.torch.backend")  # (the package's `backend` is the function)

    batches = []
    monkeypatch.setattr(fb, "precompile", lambda rs, workers: batches.append([r.mlir for r in rs]) or 0.0)
    real = fb.FuserBackend._backward_regions  # (only CUDA regions are precompiled: say these are)
    monkeypatch.setattr(fb.FuserBackend, "_backward_regions", lambda self, config, wanted: real(self, config, True))
    be = ft.backend()
    lin = torch.nn.Linear(64, 32)

    def f(x):
        return (torch.tanh(lin(x)) * 2).sum()

    x = torch.randn(8, 64, requires_grad=True)
    torch.compile(f, backend=be, dynamic=False)(x).backward()
    assert [k for k, _ in be.graphs] == ["forward", "backward"] and len(batches) == 2
    forward_batch, backward_batch = batches
    fw = [r.mlir for r in regions(be.graphs[0][1])]
    assert backward_batch and forward_batch == fw + backward_batch
    assert be.stats.graphs == 2  # (the early partition of the backward is not counted twice)


def test_cpu_graphs_do_not_partition_their_backward_early(monkeypatch):
    """Only CUDA regions are precompiled, so a CPU graph's forward leaves its backward alone."""
    import importlib
    fb = importlib.import_module("fuser.torch.backend")

    batches = []
    monkeypatch.setattr(fb, "precompile", lambda rs, workers: batches.append(len(rs)) or 0.0)
    be = ft.backend()
    x = torch.randn(8, 64, requires_grad=True)
    torch.compile(lambda x: (torch.tanh(x) * 2).sum(), backend=be, dynamic=False)(x).backward()
    assert batches == [len(regions(be.graphs[0][1])), len(regions(be.graphs[1][1]))]


def test_compile_workers_start_when_a_cuda_graph_arrives(monkeypatch):
    """The backend starts precompile's workers as soon as Dynamo hands it a graph of CUDA
    tensors, so their start and imports overlap AOTAutograd and the partitioning (a GPT-2 step's
    first batch waited ~8 s for fresh workers); a CPU graph starts none, nor does
    compile_workers=1 or the disk cache turned off."""
    import importlib
    fb = importlib.import_module("fuser.torch.backend")
    started = []
    monkeypatch.setattr(fb, "start_compile_workers", lambda n: started.append(n))

    class FakeCuda(torch.Tensor):
        is_cuda = property(lambda self: True)

    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    cpu, cuda = torch.randn(4), torch.Tensor._make_subclass(FakeCuda, torch.randn(4))
    be = ft.backend(compile_workers=3)
    be._aot = lambda gm, xs, **kw: gm.forward
    be(gm, [cpu])
    assert started == []
    be(gm, [cpu, cuda])
    assert started == [3]
    ref = ft.backend(executor="reference")
    ref._aot = be._aot
    ref(gm, [cuda])
    assert started == [3]

    from fuser.torch import partition
    calls = []
    monkeypatch.setattr(partition._POOL, "workers", lambda n: calls.append(n))
    partition.start_compile_workers(1)
    monkeypatch.setenv("FUSER_CACHE", "0")
    partition.start_compile_workers(4)
    assert calls == []
    monkeypatch.delenv("FUSER_CACHE")
    partition.start_compile_workers(4)
    assert calls == [4]


def test_precompile_queue_feeds_free_workers(tmp_path, monkeypatch):
    """More distinct fusions than workers: each is sent alone to whichever worker is free, and
    every one is compiled exactly once."""
    import fuser.api as fa
    from fuser.torch.partition import _COMPILED, precompile

    from fuser.runtime import cache

    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUSER_CACHE", "1")
    monkeypatch.setattr(cache, "_default", cache.KernelCache(tmp_path, disk=True, max_bytes=0))
    be = ft.backend()

    def f(x):
        for op in (torch.sigmoid, torch.tanh, torch.exp, torch.sin, torch.cos):
            x = torch.roll(op(x) * 2, 1, 0)
        return x

    torch.compile(f, backend=be, dynamic=False)(torch.randn(4, 64))
    rs = be.regions()
    assert len({r.symbol for r in rs}) == 5
    for r in rs:
        r.device = "cuda"
        _COMPILED.pop(r._key(), None)
    assert precompile(rs, workers=2) > 0
    assert be.stats.fusions_compiled == 5 and be.stats.fusions_loaded == 0
    assert all(fa.compile(r.mlir, stages=False).result.cached for r in rs)


def test_default_compile_workers(monkeypatch):
    """The CPUs this process may use, shared among torchrun's ranks on the machine, at most 16."""
    import os

    from fuser.torch.backend import default_compile_workers

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert default_compile_workers() == 16
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert default_compile_workers() == 8
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert default_compile_workers() == 1
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "x")
    assert default_compile_workers() == 2


def test_compile_worker_hands_back_what_another_process_is_compiling(monkeypatch):
    """With "wait": false a fusion another process holds (cache.Busy) comes back as "busy" for
    the caller's queue; without it, the worker waits for that fusion itself."""
    import fuser.api as fa
    from fuser.torch import compile_worker

    from fuser.runtime import cache

    calls = []

    def fake_compile(text, *, pipeline, options, stages, wait):
        calls.append((text, wait))
        if text == "held" and not wait:
            raise cache.Busy(text)
        return type("C", (), {"result": type("R", (), {"cached": text == "held"})(), "ptx": ""})()

    monkeypatch.setattr(fa, "compile", fake_compile)
    job = {"pipeline": "default", "options": None, "cache_dir": None, "texts": ["held", "free"]}
    got = compile_worker.run_job({**job, "wait": False})
    assert got.pop("seconds") >= 0 and got == {"compiled": 1, "loaded": 0, "failed": [], "busy": ["held"]}
    assert calls == [("held", False), ("free", False)]
    calls.clear()
    got = compile_worker.run_job(job)
    assert got.pop("seconds") >= 0 and got == {"compiled": 1, "loaded": 1, "failed": []}
    assert calls == [("held", False), ("free", False), ("held", True)]


def test_outputs_returned_before_their_reshape():
    """A Linear on a 3-D input is view -> addmm -> view: the region's reshapes sink below the
    bias and GELU (fusion-sink-reshapes), its fusion returns the 2-D values, and PyTorch views
    them back to 3-D at the boundary; the results still match eager."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 32).bfloat16()

    def f(x):
        y = lin(x)
        return y, Fn.gelu(y, approximate="tanh") * 2.0

    x = torch.randn(2, 5, 16).bfloat16()
    be = ft.backend()
    with torch.no_grad():
        got = torch.compile(f, backend=be, dynamic=False)(x)
        want = f(x)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.stride() == w.stride()
        torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-2)
    (r,) = be.regions()
    assert [s for _, s in r.fusion_output_views if s is not None] == [(2, 5, 32), (2, 5, 32)]
    assert "tensor<10x32xbf16>, tensor<10x32xbf16>" in r.mlir.splitlines()[1], r.mlir


def test_a_value_returned_twice_is_computed_once():
    """AOTAutograd returns a log-softmax twice (for the loss, and saved for the backward): the
    region's fusion computes and returns it once, and the second output is a view of the first."""
    be = ft.backend()

    def f(x):
        y = torch.log_softmax(x * 2.0, -1)
        return y, y.detach()

    x = torch.randn(4, 50)
    g1, g2 = torch.compile(f, backend=be, dynamic=False)(x)
    torch.testing.assert_close(g1, f(x)[0])
    torch.testing.assert_close(g2, f(x)[1])
    assert g1.untyped_storage().data_ptr() == g2.untyped_storage().data_ptr()
    (r,) = be.regions()
    assert r.mlir.count("func.return") == 1 and len(r.fusion_output_dtypes) == 1, r.mlir


def test_a_reshape_of_a_returned_value_is_a_view_of_it():
    """A backward layer returns a gradient as 8x1024x768 and, for the next matmul, as 8192x768:
    the fusion returns the value once and PyTorch views it (it recomputed it in a kernel of
    its own before); an output written in place keeps its own result."""
    be = ft.backend()

    def f(x):
        y = torch.tanh(x) * 3.0
        return y, y.reshape(-1, 8), (y + 1.0).sum(-1)

    x = torch.randn(2, 3, 8)
    got = torch.compile(f, backend=be, dynamic=False)(x)
    for g, w in zip(got, f(x)):
        assert g.shape == w.shape and g.stride() == w.stride()
        torch.testing.assert_close(g, w)
    assert got[0].untyped_storage().data_ptr() == got[1].untyped_storage().data_ptr()
    (r,) = be.regions()
    assert len(r.fusion_output_dtypes) == 2 and r.fusion_output_views[:2] == [(0, None), (0, (6, 8))], r.mlir
    assert "-> (tensor<2x3x8xf32>, tensor<2x3xf32>)" in r.mlir, r.mlir


def test_unaligned_matmuls_are_padded():
    """The LM head's backward: grad @ W and grad.t() @ h with an odd vocabulary (K and M of 1001,
    rows of 2002 bytes). Both are padded to aligned rows (grad once for both, its transpose read
    in place), run in fuser, and match eager; with pad_matmuls=False they stay in PyTorch."""
    from fuser.torch import pad_matmuls

    torch.manual_seed(0)
    g, w, h = (torch.randn(s).bfloat16() for s in ((1024, 1001), (1001, 256), (1024, 256)))
    assert 1024 * 1001 * 256 >= pad_matmuls.PAD_MIN_MACS

    def f(g, w, h):
        return g @ w, g.t() @ h

    for pad in (True, False):
        be = ft.backend(pad_matmuls=pad)
        got = torch.compile(f, backend=be, dynamic=False)(g, w, h)
        for x, y in zip(got, f(g, w, h)):
            assert x.shape == y.shape and x.is_contiguous()
            assert (x.float() - y.float()).norm() <= 1e-2 * y.float().norm()
        mms = [n for r in be.regions() for n in r.graph_module.graph.nodes if n.target is aten.mm.default]
        if pad:
            assert be.stats.padded_matmuls == 2 and len(mms) == 2, be.stats
            (gm,) = [gm for _, gm in be.graphs]
            # grad padded once (in the graph, or in a region: fuser translates the pad too)
            pads = [n for n in gm.graph.nodes if n.target is aten.constant_pad_nd.default]
            pads += [n for r in be.regions() for n in r.graph_module.graph.nodes if n.target is aten.constant_pad_nd.default]
            assert [p.args[0].name for p in pads].count("arg0_1") == 1, pads
        else:
            assert be.stats.padded_matmuls == 0 and not mms and be.stats.torch_nodes.get("aten.mm.default") == 2


def test_independent_parts_become_separate_regions():
    """Two independent chains (as a backward graph's per-layer weight gradients are) become two
    regions, whose equal fusions have one text and so one compiled kernel set; nodes that read
    the same outside value (a weight-gradient matmul and its bias sum) stay in one region."""
    be = ft.backend()

    def f(a, b, g, x):
        return (a * 2.0).exp(), (b * 2.0).exp(), g.sum(0), g * x

    ins = [torch.randn(8, 16) for _ in range(4)]
    got = torch.compile(f, backend=be, dynamic=False)(*ins)
    for x, y in zip(got, f(*ins)):
        torch.testing.assert_close(x, y)
    rs = be.regions()
    assert len(rs) == 3, [r.mlir for r in rs]
    texts = sorted(r.mlir for r in rs)
    assert sum(t == texts[0] for t in texts) == 2 or sum(t == texts[-1] for t in texts) == 2
    assert any("fusion.reduce" in r.mlir and "fusion.mul" in r.mlir for r in rs)


# ------------------------------------------------------------------ cudagraphs=True (plumbing, CPU)

def _backend_module():
    import sys

    return sys.modules[ft.FuserBackend.__module__]


def test_cudagraphs_option_needs_cuda(monkeypatch):
    assert ft.backend().cudagraphs is False  # off by default
    monkeypatch.setattr(_backend_module(), "_cuda_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"cudagraphs=True\) needs CUDA"):
        ft.backend(cudagraphs=True)
    monkeypatch.setattr(_backend_module(), "_cuda_available", lambda: True)
    with pytest.raises(ValueError, match="executor='auto' or 'torch'"):
        ft.backend(cudagraphs=True, executor="reference")
    assert ft.backend(cudagraphs=True, executor="torch").cudagraphs


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 32)
        self.ln = torch.nn.LayerNorm(32)

    def forward(self, x):
        return self.ln(Fn.gelu(self.fc(x)) + x)


@pytest.mark.parametrize("skip", [None, "mutated inputs"])
def test_cudagraphs_option_wires_torchs_cuda_graph_trees(monkeypatch, skip):
    """With the CUDA pieces stood in for (this machine has none): forward and backward each go
    through torch's cudagraph_trees.cudagraphify_impl with their static inputs, and the training
    step computes what eager does; where torch's check refuses a graph, both run plainly."""
    from torch._dynamo.backends import cudagraphs as tcg
    from torch._inductor import cudagraph_trees

    monkeypatch.setattr(_backend_module(), "_cuda_available", lambda: True)
    monkeypatch.setattr(tcg, "check_for_skip", lambda gm, fixed: skip)
    monkeypatch.setattr(tcg, "get_device_index", lambda gm: 0)
    captured = []

    def cudagraphify_impl(model, inputs, static_input_idxs, **kw):
        captured.append((list(static_input_idxs), kw["is_backward"], kw["is_inference"], len(inputs)))

        def replay(new_inputs):
            out = model(new_inputs)
            assert new_inputs == []  # the boxed convention torch's trees check: the callee cleared them
            return out
        return replay

    monkeypatch.setattr(cudagraph_trees, "cudagraphify_impl", cudagraphify_impl)
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _Block()
    eager = _Block()
    eager.load_state_dict(model.state_dict())
    be = ft.backend(cudagraphs=True)
    compiled = torch.compile(model, backend=be, dynamic=False)
    x = torch.randn(4, 32, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    got, want = compiled(x), eager(x2)
    got.square().sum().backward()
    want.square().sum().backward()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(model.fc.weight.grad, eager.fc.weight.grad, rtol=1e-5, atol=1e-5)
    assert be.stats.regions > 0
    if skip is None:
        assert [c[1:3] for c in captured] == [(False, False), (True, False)]  # forward, then backward
        assert be.stats.cudagraph_skips == 0
    else:
        assert captured == [] and be.stats.cudagraph_skips == 1  # the forward refused; its backward follows it


@pytest.mark.parametrize("kwargs", [{}, {"ignore_index": 3}, {"reduction": "sum"}, {"reduction": "none"},
                                    {"weight": True, "ignore_index": 1}])
def test_cross_entropy_forward_and_backward_run_in_fuser(kwargs):
    """nll_loss's forward and backward are decomposed as Inductor does (a gather; the backward's
    one-hot is a scatter of -1 into zeros, fused as a select of iota == label) and run in fuser
    with the log-softmax around them; an ignored label contributes nothing, as in eager."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(37, 19, generator=g, dtype=torch.float32)
    labels = torch.randint(0, 19, (37,), generator=g)
    labels[::5] = kwargs.get("ignore_index", -100)
    kw = dict(kwargs)
    if kw.pop("weight", False):
        kw["weight"] = torch.rand(19, generator=g) + 0.5

    def f(x, y):
        loss = Fn.cross_entropy(x, y, **kw)
        return loss if loss.dim() == 0 else loss.sum()

    be = ft.backend()
    x1, x2 = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    got = torch.compile(f, backend=be, dynamic=False)(x1, labels)
    got.backward()
    want = f(x2, labels)
    want.backward()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x1.grad, x2.grad)
    fused = {str(n.target) for r in be.regions() for n in r.graph_module.graph.nodes if n.op == "call_function"}
    assert {"aten.gather.default", "aten.scatter.value"} <= fused, fused
    assert not any("nll_loss" in k or "scatter" in k or "gather" in k for k in be.stats.torch_nodes), be.stats.torch_nodes


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("dtype,padding_idx", [(torch.float32, None), (torch.float32, 3), (torch.bfloat16, None)])
def test_embedding_forward_and_backward_run_in_fuser(device, dtype, padding_idx):
    """nn.Embedding's lookup and its weight gradient (aten.embedding_dense_backward: the rows of
    the gradient summed by token id, deterministic, f32 accumulation; issue 32) run in fuser and
    give eager's gradient, with repeated ids and a padding row."""
    g = torch.Generator().manual_seed(8)
    emb = torch.nn.Embedding(53, 24, padding_idx=padding_idx).to(device=device, dtype=dtype)
    ids = torch.randint(0, 53, (3, 29), generator=g).to(device)
    ids[0, :9] = 3
    upstream = torch.randn(3, 29, 24, generator=g).to(device=device, dtype=dtype)

    def f(i):
        return (emb(i) * upstream).sum()

    be = ft.backend()
    got = torch.compile(f, backend=be, dynamic=False)(ids)
    got.backward()
    grad_fuser = emb.weight.grad.clone()
    emb.weight.grad = None
    want = f(ids)
    want.backward()
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else {}
    torch.testing.assert_close(got, want, **tol)
    torch.testing.assert_close(grad_fuser, emb.weight.grad, **tol)
    fused = {str(n.target) for r in be.regions() for n in r.graph_module.graph.nodes if n.op == "call_function"}
    assert {"aten.embedding.default", "aten.embedding_dense_backward.default"} <= fused, fused
    assert not any("embedding" in k for k in be.stats.torch_nodes), be.stats.torch_nodes


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_empty_tensors_run_in_fuser(device):
    """Zero-size dims (issue 32): pointwise results stay empty, reductions over an empty dim give
    their identity (sum 0, prod 1), a max over a non-empty dim stays empty, a cat with an empty part is the other part; the
    region runs in fuser, launching nothing for the empty values, and equals eager."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    be = ft.backend()

    def f(x, y, z):
        return (x * 2 + 1, x.sum(0), x.sum(1) + 3, torch.prod(x, 0), torch.amax(y, 0),
                torch.cat([z, x[:, :0]], 1) * 2, (y.exp() + 1).mean(0))

    x = torch.randn(0, 8, device=device)
    y = torch.randn(5, 0, device=device)
    z = torch.randn(0, 3, device=device)
    got = torch.compile(f, backend=be, dynamic=False)(x, y, z)
    want = f(x, y, z)
    assert be.stats.torch_nodes == {}, be.stats.torch_nodes
    assert be.stats.regions >= 1
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype and g.device == w.device
        torch.testing.assert_close(g, w, equal_nan=True)


def test_relayout_copies_into_the_compiled_layout():
    """A call's tensor whose strides or storage offset the compiled layout cannot take is copied
    into that layout (an expanded dim written once); overlapping strides of another kind give
    None (the region then runs in PyTorch)."""
    from fuser.torch.partition import _in_layout, _relayout

    base = torch.randn(6, 40)
    x = base[:, 2:34]
    assert _in_layout(base[:, 4:36], (40, 1), 0) or base.data_ptr() % 16  # (16-byte aligned storage)
    assert not _in_layout(x, (40, 1), 3) and not _in_layout(x, (41, 1), 2)
    y = _relayout(x, (40, 1), 3)
    assert y.stride() == (40, 1) and y.storage_offset() == 3 and torch.equal(y, x)
    e = torch.randn(5).expand(4, 5)
    z = _relayout(e.contiguous(), (0, 1), 0)
    assert z.stride() == (0, 1) and torch.equal(z, e)
    windows = torch.randn(10).as_strided((4, 3), (1, 1))  # sliding windows: overlapping, not expanded
    assert torch.equal(_relayout(windows.contiguous(), (1, 1), 0), windows)
    assert _relayout(torch.randn(4, 3), (1, 1), 0) is None  # values the windows cannot hold


def test_backward_partitioned_ahead_is_reused(monkeypatch):
    """The backward split off with its forward is partitioned then (its fusions precompile with
    the forward's); when AOTAutograd compiles the same graph later, that partition is taken, not
    made again: two partitions in all, and the backend's Stats count the backward's regions once."""
    import sys

    fb = sys.modules["fuser.torch.backend"]  # (the module; fuser.torch.backend is also the function)
    calls = []
    real = fb.partition_graph
    monkeypatch.setattr(fb, "partition_graph", lambda gm, config, stats, kind: calls.append(kind) or real(gm, config, stats, kind))

    def run(ahead: bool):
        calls.clear()
        be = ft.backend()
        if ahead:  # (a CPU run has no CUDA region to precompile: ask for the ahead partition anyway)
            orig = be._backward_regions
            monkeypatch.setattr(be, "_backward_regions", lambda config, wanted: orig(config, True))
        torch.manual_seed(0)
        lin = torch.nn.Linear(8, 16)
        x = torch.randn(4, 8)
        f = torch.compile(lambda x: Fn.gelu(lin(x), approximate="tanh").sum(), backend=be, dynamic=False)
        f(x).backward()
        return list(calls), be.stats, lin.weight.grad.clone()

    plain, s_plain, g_plain = run(False)
    ahead, s_ahead, g_ahead = run(True)
    assert plain == ["forward", "backward"] and ahead == ["forward", "backward"], (plain, ahead)
    assert (s_ahead.regions, s_ahead.fused_nodes) == (s_plain.regions, s_plain.fused_nodes)
    assert s_ahead.reference_calls == s_plain.reference_calls > 0
    assert s_ahead.partition_seconds > 0 and s_plain.precompile_seconds == 0  # (CPU: nothing to precompile)
    torch.testing.assert_close(g_ahead, g_plain)


@pytest.mark.parametrize("rowwise", [False, True])
def test_scaled_mm_is_an_fp8_matmul(rowwise):
    """torch._scaled_mm (FP8 A [M, K] and B the transpose of [N, K]) becomes one fusion.matmul on
    FP8 operands whose epilogue applies the scales (per tensor, or per row of A and column of B)
    and the bias in f32: the reference run equals torch's within bf16 rounding."""
    torch.manual_seed(0)
    m, n, k = 32, 48, 64
    a = torch.randn(m, k).to(torch.float8_e4m3fn)
    w = torch.randn(n, k).to(torch.float8_e4m3fn)
    sa = torch.rand(m, 1) + 0.5 if rowwise else torch.tensor(0.75)
    sb = torch.rand(1, n) + 0.5 if rowwise else torch.tensor(1.25)
    bias = torch.randn(n).bfloat16()

    def f(a, w, sa, sb, bias):
        return torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb, bias=bias, out_dtype=torch.bfloat16) * 2.0

    be = ft.backend()
    got = torch.compile(f, backend=be, dynamic=False)(a, w, sa, sb, bias)
    torch.testing.assert_close(got, f(a, w, sa, sb, bias), rtol=1.6e-2, atol=1e-2)
    (r,) = be.regions()
    assert "fusion.matmul" in r.mlir and "xf8E4M3FN>" in r.mlir and "transpose_b" in r.mlir, r.mlir
    assert be.stats.torch_nodes == {}, be.stats.torch_nodes
