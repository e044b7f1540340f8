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
