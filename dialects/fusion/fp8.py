"""The FP8 element types' value rules (issue 34), in numpy: what a cast to f8E4M3FN or f8E5M2
gives, torch's rule bit for bit (c10's fp8e4m3fn_from_fp32_value / fp8e5m2_from_fp32_value, the
same code on the CPU and on CUDA, checked against torch 2.13 here):

- every cast to FP8 goes through f32 (an f64 or an integer is first converted to f32, as
  torch's `static_cast<Float8_*>(double)` does), then rounds to nearest, ties to even;
- f8E4M3FN has no infinity: a finite value beyond its largest, 448 (and +-inf), SATURATES to
  +-448; NaN is NaN (0x7F with the input's sign bit: 0xFF for a negative NaN);
- f8E5M2 does not saturate: a value that rounds beyond 57344 (|x| >= 61440) is +-inf, NaN is
  0x7F with the sign bit;
- the way back (FP8 to f32) is exact; NaN stays NaN.

ml_dtypes' float8 types hold the values (their rounding is the same for values in range); the
saturation and the NaN encodings are torch's, applied here. The reference interpreter and the
kernels' constants (`fusion.full` of an FP8 type) use these; the kernels' casts compute the same
with the GPU's cvt (lowering/target/llvmir/ops_arith.py).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

NUMPY = {"f8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn), "f8e5m2": np.dtype(ml_dtypes.float8_e5m2)}
MAX = {"f8e4m3fn": 448.0, "f8e5m2": 57344.0}
# The least magnitude torch's f8E5M2 rounds to infinity (57344 + half its ulp of 8192: a tie,
# which goes to the even neighbour, the infinity's encoding).
E5M2_OVERFLOW = 61440.0
NAN_BITS = 0x7F  # torch's NaN of either type, | 0x80 for a negative one


def to_fp8(x: np.ndarray, name: str) -> np.ndarray:
    """`x` (any float or integer array) cast to FP8 type `name` by torch's rule; returns an array
    of ml_dtypes' type."""
    f = np.asarray(x).astype(np.float32)
    nan = np.isnan(f)
    sign = np.signbit(f)
    if name == "f8e4m3fn":
        f = np.clip(f, -MAX[name], MAX[name])  # saturate (inf too); NaN stays NaN
    bits = f.astype(NUMPY[name]).view(np.uint8)
    bits = np.where(nan, np.uint8(NAN_BITS) | np.where(sign, np.uint8(0x80), np.uint8(0)), bits).astype(np.uint8)
    return bits.view(NUMPY[name])


def to_f32(x: np.ndarray) -> np.ndarray:
    """An FP8 array's values as f32 (exact)."""
    return np.asarray(x).astype(np.float32)


def round_scalar(v: float, name: str) -> float:
    """Python float `v` as FP8 type `name` holds it (a `fusion.full`'s value)."""
    return float(to_f32(to_fp8(np.array([v]), name))[0])


def bits_of(v: float, name: str) -> int:
    """The bit pattern (0..255) of Python float `v` cast to FP8 type `name`."""
    return int(to_fp8(np.array([v]), name).view(np.uint8)[0])



# Hopper's FP8 wgmma (k = 32 a step) does not keep its f32 accumulator to float32's precision:
# each step's sum is truncated to 13 mantissa bits (e8m13), a relative error of up to 2^-13 of
# the running sum per step. (On an H200: a 300x264x640 e4m3 matmul's f32 result came back
# 3.9e-4 from float64 (norm-relative), within the 20 steps' 2.4e-3 below; GPU fuzz seeds 78378602
# and 19092101 differed from float64 by what this truncation gives.)
ACCUMULATOR_MANTISSA_BITS = 13
WGMMA_K_STEP = 32


def matmul_accumulation_error(k: int) -> float:
    """The relative error (of the sum of |products|) an FP8 matmul of inner size `k` may carry on
    Hopper, from the accumulator's truncation at each of its ceil(k / 32) steps."""
    return -(-k // WGMMA_K_STEP) * 2.0 ** -ACCUMULATOR_MANTISSA_BITS


def matmul_accumulation_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise, how far Hopper's FP8 matmul a @ b (a [M, K], b [K, N], exact values) may be
    from the exact product: 2^-13 of each step's running sum (its truncation), and 2^-13 of the
    sum of |products| once (the terms of a step aligned to a common exponent before they add).
    Tighter than matmul_accumulation_error's bound by about sqrt(K / 32) for sums that cancel."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    running = np.zeros((a.shape[0], b.shape[1]))
    bound = np.abs(a) @ np.abs(b)
    for k0 in range(0, a.shape[1], WGMMA_K_STEP):
        running = running + a[:, k0:k0 + WGMMA_K_STEP] @ b[k0:k0 + WGMMA_K_STEP]
        bound += np.abs(running)
    return bound * 2.0 ** -ACCUMULATOR_MANTISSA_BITS
