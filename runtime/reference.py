"""Numpy reference interpreter for the fusion dialect.

It is the oracle for every numerical test and what `fuser-run` executes without a GPU.

Two precisions:

* ``"native"``: each op computes in float32 (f16/bf16 operands are upcast first; f64 ones in
  float64) and rounds its result to the op's declared element type, as the generated kernels do. Reductions and matmuls
  accumulate in float64 before that rounding, so the reference is at least as accurate as any
  accumulation order the GPU may pick.
* ``"f64"``: every float value is float64 throughout, and casts between float types do not
  round. Use it as the "exact" answer when checking tolerances.

i1 values are numpy ``bool``, i8 ... i64 values ``int8`` ... ``int64`` and u8 values ``uint8``
in both modes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from fuser.dialects.fusion import dtype_name, fp8
from fuser.dialects.fusion.layout import output_aliases, VIEW, arg_attrs, input_layout, inverse, output_order, res_attrs
from fuser.dialects.ir import parse_module
from fuser.runtime import philox
from fuser.runtime.arrays import ArgumentError, as_strided  # (the same error the GPU executor raises)


class UnsupportedOpError(NotImplementedError):
    """The interpreter has no semantics for an op."""


PRECISIONS = ("native", "f64")

NUMPY_DTYPES: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f64": np.dtype(np.float64),
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    **fp8.NUMPY,  # f8e4m3fn, f8e5m2: ml_dtypes' float8_e4m3fn, float8_e5m2
}
_FLOAT_NAMES = ("f32", "f16", "bf16", "f64")
_FP8_NUMPY = tuple(fp8.NUMPY.values())  # (ml_dtypes' float8_e5m2 has numpy kind "f", float8_e4m3fn "V")


def numpy_dtype(element_type: Attribute | str) -> np.dtype:
    """The numpy dtype holding values of an MLIR element type (or its short name)."""
    name = element_type if isinstance(element_type, str) else dtype_name(element_type)
    try:
        return NUMPY_DTYPES[name]
    except KeyError:
        raise TypeError(f"no numpy dtype for element type {name}") from None


def _tensor_type(v: SSAValue) -> TensorType:
    t = v.type
    if not isinstance(t, TensorType):
        raise TypeError(f"reference interpreter: value of type {t} is not a tensor")
    return t


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(_tensor_type(v).get_shape())


def _elem_name(v: SSAValue) -> str:
    return dtype_name(_tensor_type(v).element_type)


def _dtype_label(dt: np.dtype) -> str:
    return "bfloat16" if dt == NUMPY_DTYPES["bf16"] else {v: k for k, v in fp8.NUMPY.items()}.get(dt, dt.name)


# ------------------------------------------------------------------ parsing


def find_func(module: ModuleOp, func_name: str | None = None) -> FuncOp:
    """The func.func called `func_name`, or the module's only one."""
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if func_name is not None:
        for f in funcs:
            if f.sym_name.data == func_name:
                return f
        raise KeyError(f"no func.func @{func_name} in the module (have: {', '.join('@' + f.sym_name.data for f in funcs)})")
    if len(funcs) != 1:
        raise ValueError(f"the module has {len(funcs)} func.func ops; name the one to run")
    return funcs[0]


# -------------------------------------------------------------- the interpreter


class _Interp:
    def __init__(self, precision: str):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.f64 = precision == "f64"
        # The float type ops compute in.
        self.ftype = np.float64 if self.f64 else np.float32

    def up(self, x: np.ndarray) -> np.ndarray:
        """An operand in compute precision (floats only; masks and counts stay as they are; f64
        stays f64 in either precision, as the kernels compute it)."""
        if x.dtype == np.float64 or x.dtype in _FP8_NUMPY:  # (FP8 is moved and selected as its bits)
            return x
        if x.dtype.kind == "f" or x.dtype == NUMPY_DTYPES["bf16"]:
            return x.astype(self.ftype, copy=False)
        return x

    def round(self, x: np.ndarray, v: SSAValue) -> np.ndarray:
        """Round a computed value to the declared type of `v` (f64 mode keeps floats in float64)."""
        name = _elem_name(v)
        if self.f64 and name in _FLOAT_NAMES:
            dt = np.dtype(np.float64)
        elif name in fp8.NUMPY:  # torch's rounding (saturating for f8e4m3fn), not ml_dtypes' own
            out = np.asarray(x)
            out = out if out.dtype == fp8.NUMPY[name] else fp8.to_fp8(out, name)
            if out.shape != _shape(v):
                raise AssertionError(f"reference interpreter bug: computed shape {out.shape} for {v.type}")
            return out
        else:
            dt = numpy_dtype(name)
        out = np.asarray(x).astype(dt, copy=False)
        if out.shape != _shape(v):
            raise AssertionError(f"reference interpreter bug: computed shape {out.shape} for {v.type}")
        return out


def _erf64(x: np.ndarray) -> np.ndarray:
    """erf in float64 (numpy has none; math.erf is exact enough for a reference)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch.remainder: fmod, plus b where the result is nonzero and its sign differs from b's
    (the addition rounded in a's type, as torch does)."""
    r = np.fmod(a, b)
    return np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


def _is_float(x: np.ndarray) -> bool:
    return x.dtype.kind == "f" or x.dtype == NUMPY_DTYPES["bf16"] or x.dtype.name.startswith("float8")


def _ordered_zeros(fn: Callable, negative_wins: bool, a, b) -> np.ndarray:
    """fn (np.minimum or np.maximum) with zeros of both signs ordered -0 < +0: where both are
    zero, the negative one if `negative_wins`, else the positive one (numpy's returns its first)."""
    a, b = np.asarray(a), np.asarray(b)
    r = fn(a, b)
    if not _is_float(r):
        return r
    pick_a = np.signbit(a) == negative_wins
    return np.where((a == 0) & (b == 0), np.where(pick_a, a, b), r).astype(r.dtype, copy=False)


def ieee_minimum(a, b) -> np.ndarray:
    """IEEE 754-2019 minimum: NaN propagates and -0 is below +0, as the kernels' min.NaN and
    torch.minimum."""
    return _ordered_zeros(np.minimum, True, a, b)


def ieee_maximum(a, b) -> np.ndarray:
    """IEEE 754-2019 maximum: NaN propagates and +0 is above -0."""
    return _ordered_zeros(np.maximum, False, a, b)


def ieee_extreme(kind: str, x: np.ndarray, axis, keepdims: bool = False, **kw) -> np.ndarray:
    """np.max / np.min over `axis` with a zero result signed as IEEE 754-2019 has it: the max of
    zeros is +0 if any is +0, the min -0 if any is -0 (numpy keeps whichever zero it met first)."""
    r = (np.max if kind == "max" else np.min)(x, axis=axis, keepdims=keepdims, **kw)
    if not _is_float(np.asarray(r)):
        return r
    signed = np.signbit(x) if kind == "min" else ~np.signbit(x)
    wanted = np.any((x == 0) & signed, axis=axis, keepdims=keepdims)  # a zero of the winning sign
    zero = np.zeros((), np.asarray(r).dtype)
    return np.where(np.asarray(r) == 0, np.where(wanted == (kind == "max"), zero, -zero), r).astype(
        np.asarray(r).dtype, copy=False)


def erfinv(x: float) -> float:
    """The inverse error function in float64: z with erf(z) = x. Newton's method on erfc's
    side (1 - |x| exact for a float32 x) above 1/2, on erf's below, from a bracketing start,
    until the step stops shrinking (a method of our own, independent of the kernels' helper)."""
    if math.isnan(x) or abs(x) > 1:
        return math.nan
    if abs(x) == 1:
        return math.copysign(math.inf, x)
    a, z = abs(x), 0.0
    lo, hi = 0.0, 6.0  # erf(6) rounds to 1 in float64: every a < 1 here lies below it
    for _ in range(200):
        r = (math.erf(z) - a) if a <= 0.5 else ((1.0 - a) - math.erfc(z))
        if r == 0:
            break
        lo, hi = (z, hi) if r < 0 else (lo, z)
        step = r / (2.0 / math.sqrt(math.pi) * math.exp(-z * z))
        nz = z - step
        if not lo < nz < hi:  # outside the bracket: bisect
            nz = 0.5 * (lo + hi)
        if nz == z:
            break
        z = nz
    return math.copysign(z, x)


def erfcinv(y: float) -> float:
    """The inverse of erfc in float64: z with erfc(z) = y, y in [0, 2]. With s = y (or 2 - y,
    exact, the result negated) in (0, 1]: s >= 1/2 is erfinv(1 - s) (1 - s exact there); below,
    Newton's method on log(math.erfc(z) / s) (erfc keeps its relative accuracy in the tail, where
    1 - s would round away what s holds; in log space the steps stay quadratic from afar, where
    Newton on erfc itself crawls) inside a bracket that each step narrows, bisecting where a step
    leaves it. Accurate while erfc(z) is a normal double (s >= 2.2e-308)."""
    if math.isnan(y) or not 0 <= y <= 2:
        return math.nan
    if y in (0, 2):
        return math.inf if y == 0 else -math.inf
    s, sign = (y, 1.0) if y <= 1 else (2.0 - y, -1.0)
    if s >= 0.5:
        return sign * erfinv(1.0 - s)
    lo, hi = 0.0, 27.3  # erfc(27.3) is below every positive double s can be
    z = min(math.sqrt(-math.log(s)), hi / 2)
    for _ in range(300):
        c = math.erfc(z)
        if c == s:
            break
        lo, hi = (z, hi) if c > s else (lo, z)
        slope = 2.0 / math.sqrt(math.pi) * math.exp(-z * z)
        nz = z + math.log(c / s) * c / slope if c > 0 and slope > 0 else 0.5 * (lo + hi)
        if not lo < nz < hi:
            nz = 0.5 * (lo + hi)
        if nz == z:
            break
        z = nz
    return sign * z


def lgamma(x: float) -> float:
    """log|gamma(x)| in float64 (Python's math.lgamma), +inf at the poles (0 and the negative
    integers, where math.lgamma raises) and at +-inf, as torch.lgamma."""
    if math.isnan(x):
        return math.nan
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    return math.lgamma(x)


def nextafter(a: np.ndarray, b: np.ndarray, name: str) -> np.ndarray:
    """C's nextafter (torch.nextafter) on the grid of float type `name` (f16, bf16, f32, f64),
    elementwise: b where a == b (signed zeros: nextafter(0.0, -0.0) is -0.0), NaN where either
    is NaN, else the neighbour of a toward b, found from a's sign-and-magnitude bits (an
    unsigned integer one step further from or closer to zero; from a zero, the least
    subnormal with b's sign). numpy's own nextafter gives a, not b, for f16 zeros of either
    sign, and bf16 is not numpy's."""
    dt = numpy_dtype(name)
    a, b = np.asarray(a).astype(dt), np.asarray(b).astype(dt)
    ut = np.dtype(f"u{dt.itemsize}")
    sign = ut.type(1 << (8 * dt.itemsize - 1))
    ua, ub = a.view(ut), b.view(ut)
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    magnitude, one = ua & ~sign, ut.type(1)
    with np.errstate(over="ignore"):
        further = magnitude + one  # (the largest finite value steps to inf)
        closer = magnitude - one
    bigger = (fb > fa) == (fa > 0)  # away from zero: toward b, with a on b's far side from 0
    stepped = np.where(bigger, further, closer) | (ua & sign)
    bits = np.where(fa == 0, (ub & sign) | one, stepped).astype(ut)
    out = np.where(fa == fb, ub, bits).astype(ut).view(dt)
    return np.where(np.isnan(fa) | np.isnan(fb), dt.type(np.nan), out).astype(dt)


def _int_quotient(a: np.ndarray, b: np.ndarray, floor: bool) -> np.ndarray:
    """Integer division rounded toward zero (or -inf), defined everywhere as fusion.trunc_div
    says: a / 0 is -1 (all bits set: 255 in u8), MIN / -1 wraps to MIN."""
    signed = a.dtype.kind == "i"
    zero, minus_one = b == 0, (b == -1) if signed else np.zeros(b.shape, bool)
    safe = np.where(zero | minus_one, b.dtype.type(1), b)
    q = np.floor_divide(a, safe)
    if not floor and signed:  # floor -> toward zero where the exact quotient is negative and inexact
        r = a - q * safe
        q = q + ((r != 0) & ((a < 0) != (safe < 0))).astype(a.dtype)
    q = np.where(minus_one, np.negative(a), q)
    return np.where(zero, np.array(-1).astype(a.dtype), q).astype(a.dtype)


def _int_rem(a: np.ndarray, b: np.ndarray, floor: bool) -> np.ndarray:
    """a - q b for fusion.trunc_div's q (fmod: the dividend's sign) or fusion.floor_div's
    (remainder: the divisor's); -1 (all bits set) for b = 0, 0 for b = -1."""
    q = _int_quotient(a, b, floor)
    r = a - q * b  # (wraps as the kernels do; exact where it matters)
    return np.where(b == 0, np.array(-1).astype(a.dtype), r).astype(a.dtype)


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a ** b of integers by repeated squaring, wrapping; for b < 0 as torch's CUDA kernel: 1 for
    a = 1, +-1 for a = -1 (-1 for an odd b), else 0."""
    out, base = np.ones_like(a), a.copy()
    e = np.where(b < 0, 0, b).astype(b.dtype) if b.dtype.kind == "i" else b.copy()
    while np.any(e > 0):
        out = np.where((e & 1) == 1, out * base, out)
        base = base * base
        e = e >> 1
    if b.dtype.kind == "i":
        odd = (b & 1) == 1
        negative = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(a.dtype)
        out = np.where(b < 0, negative, out)
    return out.astype(a.dtype)


def _shift(a: np.ndarray, b: np.ndarray, kind: str) -> np.ndarray:
    """a << b, a >> b (arithmetic for signed types, logical for u8) or a logical a >> b, as torch
    defines them where C does not: a shift by b < 0 or b >= the width gives 0, or for an
    arithmetic right shift a >> (width - 1)."""
    width = a.dtype.itemsize * 8
    inside = (b >= 0) & (b < width)
    s = np.where(inside, b, 0).astype(np.uint64)
    bits = a.astype(np.int64).astype(np.uint64) & np.uint64((1 << width) - 1)  # a's bits, unsigned
    if kind == "left":
        r = (bits << s) & np.uint64((1 << width) - 1)
        out = np.where(inside, r, 0)
    elif kind == "logical" or a.dtype.kind == "u":
        out = np.where(inside, bits >> s, 0)
    else:  # arithmetic: numpy's >> of a signed integer fills in the sign
        return np.where(inside, a >> s.astype(a.dtype), a >> a.dtype.type(width - 1)).astype(a.dtype)
    return out.astype(np.uint64).astype(a.dtype.str.replace("i", "u")).view(a.dtype) if a.dtype.kind == "i" \
        else out.astype(a.dtype)


def _gcd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch.gcd: Euclid's algorithm on |a| and |b| (|MIN| wraps to MIN) with C's remainder."""
    x, y = np.abs(a), np.abs(b)  # (numpy's abs wraps as C's does)
    while np.any(x != 0):
        nz = x != 0
        safe = np.where(nz, x, a.dtype.type(1))
        r = np.fmod(y, safe) if a.dtype.kind == "i" else y % safe  # (C's %: the dividend's sign)
        x, y = np.where(nz, r, x), np.where(nz, x, y)
    return y.astype(a.dtype)


# Binary ops of integer operands (the others are numpy's own, which wrap)
_INT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "fusion.trunc_div": lambda a, b: _int_quotient(a, b, floor=False),
    "fusion.floor_div": lambda a, b: _int_quotient(a, b, floor=True),
    "fusion.fmod": lambda a, b: _int_rem(a, b, floor=False),
    "fusion.remainder": lambda a, b: _int_rem(a, b, floor=True),
    "fusion.pow": _int_pow,
    "fusion.bitwise_left_shift": lambda a, b: _shift(a, b, "left"),
    "fusion.bitwise_right_shift": lambda a, b: _shift(a, b, "right"),
    "fusion.logical_right_shift": lambda a, b: _shift(a, b, "logical"),
    "fusion.gcd": _gcd,
}


def _in_f64(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """fn computed in float64 and rounded once to x's type, as the kernels compute it."""
    return lambda x: fn(x.astype(np.float64)).astype(x.dtype, copy=False)


def _gelu_erf(x: np.ndarray) -> np.ndarray:
    """x/2 (1 + erf(x / sqrt 2)) as x/2 erfc(-x / sqrt 2), which keeps its relative accuracy
    where 1 + erf cancels (x << 0); -inf gives NaN, as torch's."""
    xd = x.astype(np.float64)
    y = 0.5 * xd * np.vectorize(math.erfc, otypes=[np.float64])(-xd / math.sqrt(2.0))
    return y.astype(x.dtype, copy=False)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    c = x.dtype.type(math.sqrt(2.0 / math.pi))
    return x.dtype.type(0.5) * x * (1 + np.tanh(c * (x + x.dtype.type(0.044715) * x * x * x)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "fusion.neg": np.negative,
    "fusion.abs": np.abs,
    "fusion.exp": np.exp,
    "fusion.log": np.log,
    "fusion.tanh": np.tanh,
    "fusion.sqrt": np.sqrt,
    "fusion.rsqrt": lambda x: x.dtype.type(1) / np.sqrt(x),
    "fusion.relu": lambda x: np.maximum(x, x.dtype.type(0)),  # NaN stays NaN
    "fusion.sigmoid": _sigmoid,
    "fusion.silu": lambda x: x * _sigmoid(x),
    "fusion.erf": lambda x: _erf64(x).astype(x.dtype, copy=False),
    "fusion.exp2": np.exp2,
    "fusion.log2": np.log2,
    "fusion.log10": np.log10,
    "fusion.log1p": np.log1p,
    "fusion.sin": _in_f64(np.sin),
    "fusion.cos": _in_f64(np.cos),
    "fusion.tan": _in_f64(np.tan),
    "fusion.asin": _in_f64(np.arcsin),
    "fusion.acos": _in_f64(np.arccos),
    "fusion.atan": _in_f64(np.arctan),
    "fusion.sinh": _in_f64(np.sinh),
    "fusion.cosh": _in_f64(np.cosh),
    "fusion.asinh": _in_f64(np.arcsinh),
    "fusion.acosh": _in_f64(np.arccosh),
    "fusion.atanh": _in_f64(np.arctanh),
    "fusion.expm1": _in_f64(np.expm1),
    "fusion.erfc": _in_f64(np.vectorize(math.erfc, otypes=[np.float64])),
    "fusion.erfinv": _in_f64(np.vectorize(lambda x: erfinv(x), otypes=[np.float64])),
    "fusion.erfcinv": _in_f64(np.vectorize(lambda x: erfcinv(x), otypes=[np.float64])),
    "fusion.lgamma": _in_f64(np.vectorize(lambda x: lgamma(x), otypes=[np.float64])),
    "fusion.reciprocal": lambda x: x.dtype.type(1) / x,
    "fusion.floor": np.floor,
    "fusion.ceil": np.ceil,
    "fusion.trunc": np.trunc,
    "fusion.round": np.rint,  # halves to even, as torch.round
    "fusion.bitwise_not": np.invert,  # (of bools: logical not)
    "fusion.sign": lambda x: (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype),  # NaN -> 0, as torch.sign
}

_FLOAT_TESTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "fusion.isnan": np.isnan, "fusion.isinf": np.isinf, "fusion.isfinite": np.isfinite,
    "fusion.isposinf": np.isposinf, "fusion.isneginf": np.isneginf, "fusion.signbit": np.signbit,
}

_LOGICAL: dict[str, Callable[..., np.ndarray]] = {
    "fusion.logical_not": np.logical_not, "fusion.logical_and": np.logical_and,
    "fusion.logical_or": np.logical_or, "fusion.logical_xor": np.logical_xor,
}

_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "fusion.add": np.add,
    "fusion.sub": np.subtract,
    "fusion.mul": np.multiply,
    "fusion.div": np.divide,
    "fusion.max": ieee_maximum,  # both propagate NaN and order the zeros, as the dialect specifies
    "fusion.min": ieee_minimum,
    "fusion.pow": np.power,
    "fusion.fmod": np.fmod,  # exact, as C's
    "fusion.remainder": _remainder,
    "fusion.bitwise_and": np.bitwise_and,  # (of bools: logical and, or, xor)
    "fusion.bitwise_or": np.bitwise_or,
    "fusion.bitwise_xor": np.bitwise_xor,
    "fusion.atan2": lambda a, b: np.arctan2(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype, copy=False),
}

_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal}


def _dims_of(op: Operation, name: str = "dims") -> tuple[int, ...]:
    return tuple(int(d) for d in op.properties[name].get_values())


def _moments(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Mean and sum of squared deviations by the two-pass formula in float64, and the count."""
    x64 = x.astype(np.float64)
    n = int(np.prod([x.shape[d] for d in dims], dtype=np.int64))
    mean = np.mean(x64, axis=dims, keepdims=True)
    m2 = np.sum(np.square(x64 - mean), axis=dims, keepdims=keepdim)
    if not keepdim:
        mean = np.squeeze(mean, axis=dims)
    return mean, m2, n


def _cast(it: _Interp, x: np.ndarray, target: str) -> np.ndarray:
    """`fusion.cast` as torch defines it (and the kernels compute it): to i1 is `x != 0` (NaN is
    true); float to i32 or i64 truncates toward zero, saturating at the type's limits, NaN giving
    0 (the GPU's cvt.rzi, what torch gives on CUDA; torch on the CPU leaves out-of-range values
    undefined), to i8 or i16 so through i32 and wraps (torch on CUDA); float to u8 goes through
    i64 and wraps (torch's rule); bool to integer is
    0 or 1; integers convert by sign (u8: zero) extension or by wrapping. To a float type the
    caller rounds; in native precision integers and f64 values go through float32 first (as
    torch converts them to f16 and bf16). FP8 (dialects/fusion/fp8.py) converts through f32 both
    ways, as torch does: from FP8 exactly, to FP8 by torch's rounding (`round` applies it)."""
    if x.dtype in fp8.NUMPY.values():
        x = fp8.to_f32(x)
    if target in fp8.NUMPY:
        return x.astype(np.float32) if x.dtype.kind in "biuf" or x.dtype == NUMPY_DTYPES["bf16"] else x
    if target == "i1":
        return x != 0
    if target not in _FLOAT_NAMES:
        dt = numpy_dtype(target)
        if x.dtype.kind in "biu":
            return x.astype(dt)  # numpy wraps and extends as two's complement does
        if target == "u8":  # through i64, wrapping (torch's rule)
            return _trunc_signed(x, np.dtype(np.int64)).astype(dt)
        if dt.itemsize < 4:  # through i32, wrapping (torch's CUDA casts: cvt.rzi.s32)
            return _trunc_signed(x, np.dtype(np.int32)).astype(dt)
        return _trunc_signed(x, dt)
    if it.f64 or target == "f64":
        return x.astype(np.float64)
    return x.astype(np.float32)


def _trunc_signed(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Floats truncated toward zero into the signed integer dtype `dt`, saturating, NaN -> 0."""
    info = np.iinfo(dt)
    t = np.trunc(x.astype(np.float64))
    lo, hi = float(info.min), -float(info.min)  # -2**(w-1) and 2**(w-1), both exact
    out = np.where(np.isnan(t) | (t < lo) | (t >= hi), 0, t).astype(dt)
    return np.where(t >= hi, info.max, np.where(t < lo, info.min, out)).astype(dt)


def _eval_op(it: _Interp, op: Operation, ins: list[np.ndarray]) -> list[np.ndarray]:
    """Evaluate one op; results are rounded to their declared types by the caller."""
    name = op.name
    if name in _UNARY:
        return [_UNARY[name](it.up(ins[0]))]
    if name == "fusion.gelu":
        x = it.up(ins[0])
        return [_gelu_tanh(x) if op.approximate == "tanh" else _gelu_erf(x)]
    if name in _INT_BINARY and ins[0].dtype.kind in "iu":
        return [_INT_BINARY[name](ins[0], ins[1])]
    if name == "fusion.nextafter":  # on its type's grid in either precision: exact, nothing to widen
        return [nextafter(ins[0], ins[1], _elem_name(op.result))]
    if name in _BINARY:
        return [_BINARY[name](it.up(ins[0]), it.up(ins[1]))]
    if name == "fusion.cmp":
        return [_CMP[op.predicate.data](it.up(ins[0]), it.up(ins[1]))]
    if name in _FLOAT_TESTS:
        return [_FLOAT_TESTS[name](it.up(ins[0]))]
    if name in _LOGICAL:
        return [_LOGICAL[name](*ins)]
    if name == "fusion.where":
        return [np.where(ins[0], it.up(ins[1]), it.up(ins[2]))]
    if name == "fusion.cast":
        return [_cast(it, ins[0], _elem_name(op.result))]
    if name == "fusion.full":
        return [np.full(_shape(op.result), op.value.value.data, dtype=np.float64)]
    if name == "fusion.broadcast":
        x, out_shape = ins[0], _shape(op.result)
        new = set(_dims_of(op))
        # Give the operand a size-1 axis at every new dim, then let numpy expand those.
        with_ones = [1 if i in new else d for i, d in enumerate(out_shape)]
        return [np.broadcast_to(x.reshape(with_ones), out_shape).copy()]
    if name == "fusion.reshape":
        return [ins[0].reshape(_shape(op.result))]
    if name == "fusion.permute":
        return [np.transpose(ins[0], _dims_of(op, "perm")).copy()]
    if name == "fusion.slice":
        return [ins[0][tuple(slice(a, b, k) for a, b, k in zip(_dims_of(op, "start"), _dims_of(op, "stop"),
                                                                   _dims_of(op, "step")))].copy()]
    if name == "fusion.as_strided":
        x = np.ascontiguousarray(ins[0])
        shape, strides = _shape(op.result), _dims_of(op, "strides")
        if 0 in shape:
            return [np.empty(shape, x.dtype)]
        view = as_strided(x[op.offset.data:], shape, [s * x.itemsize for s in strides])
        return [view.copy()]
    if name == "fusion.pad":
        x = ins[0]
        low, high = _dims_of(op, "low"), _dims_of(op, "high")
        # Negative pads crop first; the rest is a constant pad.
        x = x[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, lo, hi in zip(x.shape, low, high))]
        return [np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)], constant_values=ins[1].item())]
    if name == "fusion.cat":
        return [np.concatenate(ins, axis=op.dim.data)]
    if name in ("fusion.gather", "fusion.index_select"):
        x, dim = ins[0], op.dim.data
        n = x.shape[dim]
        pos = ins[1].astype(np.int64)
        pos = np.clip(np.where(pos < 0, pos + n, pos), 0, max(n - 1, 0))  # (clamped: see the op)
        return [np.take_along_axis(x, pos, dim) if name == "fusion.gather" else np.take(x, pos, axis=dim)]
    if name in ("fusion.scatter", "fusion.scatter_add_atomic"):  # (atomic: the sums in index order)
        return [_scatter(op, ins)]
    if name == "fusion.flip":
        return [np.flip(ins[0], _dims_of(op)).copy()]
    if name == "fusion.segment_set":
        return [ins[0].copy()]
    if name == "fusion.reduce":
        return [_reduce(it, op.kind.data, ins[0], _dims_of(op), op.keepdim is not None)]
    if name == "fusion.scan":
        return [_scan(it, op.kind.data, ins[0])]
    if name == "fusion.sort":
        return _sort(ins[0], op.descending is not None, op.kept)
    if name == "fusion.welford":
        dims, keep = _dims_of(op), op.keepdim is not None
        mean, m2, n = _moments(ins[0], dims, keep)
        return [mean, m2, np.full(mean.shape, n, dtype=np.int64)]
    if name == "fusion.var_mean":
        dims, keep = _dims_of(op), op.keepdim is not None
        mean, m2, n = _moments(ins[0], dims, keep)
        # As torch: a non-positive denominator gives inf (or NaN for 0/0), never a negative variance.
        denom = max(n - op.correction.value.data, 0)
        return [m2 / np.float64(denom), mean]
    if name == "fusion.matmul":
        a, b = ins[0].astype(np.float64), ins[1].astype(np.float64)
        if op.transpose_a is not None:
            a = a.T
        if op.transpose_b is not None:
            b = b.T
        kc = op.chunk
        if not op.partial_products:  # serial split-K computes the product itself
            return [a @ b]
        # split-K: one partial product per K-chunk (the last may be shorter), stacked on axis 0
        k = a.shape[1]
        return [np.stack([a[:, s:s + kc] @ b[s:s + kc, :] for s in range(0, k, kc)])]
    if name in ("fusion.iota", "fusion.uniform", "fusion.normal"):
        return [_creation(it, op, ins)]
    raise UnsupportedOpError(f"reference interpreter: no semantics for op '{name}'")


def _reduce(it: _Interp, kind: str, x: np.ndarray, dims: list[int], keep: bool) -> np.ndarray:
    """fusion.reduce: floats summed and multiplied in float64, integers and masks in int64
    (wrapping, as the kernels' i64 accumulators); the caller rounds to the result type."""
    if kind in ("sum", "prod"):
        acc = x.astype(np.float64 if x.dtype.kind == "f" or x.dtype == NUMPY_DTYPES["bf16"] else np.int64)
        with np.errstate(over="ignore"):
            return (np.sum if kind == "sum" else np.prod)(acc, axis=tuple(dims), keepdims=keep)
    if kind in ("max", "min"):  # both propagate NaN; of masks they are any and all
        up = it.up(x)
        if up.dtype.kind in "iub":  # (over no elements: the type's least / greatest, as fusion-fold-empty)
            info = np.iinfo(up.dtype) if up.dtype.kind != "b" else None
            start = (info.min if kind == "max" else info.max) if info else kind == "min"
        else:  # (-inf / +inf over no elements)
            start = -np.inf if kind == "max" else np.inf
        return ieee_extreme(kind, up, tuple(dims), keep, initial=start)
    if kind in ("any", "all"):  # nonzero, NaN included
        return (np.any if kind == "any" else np.all)(x != 0, axis=tuple(dims), keepdims=keep)
    # argmax / argmin: the reduced dims moved last and flattened; numpy's arg functions take the
    # first extreme and count NaN as both extremes (the first NaN wins), as torch's do.
    kept = [d for d in range(x.ndim) if d not in dims]
    if x.size == 0:  # (over no elements: 0, as fusion-fold-empty; torch refuses)
        return np.zeros([1 if d in dims else x.shape[d] for d in range(x.ndim)] if keep else
                        [x.shape[d] for d in kept], np.int64)
    flat = np.transpose(x, kept + sorted(dims)).reshape([x.shape[d] for d in kept] + [-1])
    flat = flat.astype(np.float64) if flat.dtype == NUMPY_DTYPES["bf16"] else flat
    idx = (np.argmax if kind == "argmax" else np.argmin)(flat, axis=-1).astype(np.int64)
    return idx.reshape([1 if d in dims else x.shape[d] for d in range(x.ndim)]) if keep else idx


def _scan(it: _Interp, kind: str, x: np.ndarray) -> np.ndarray:
    """fusion.scan along the last axis: floats summed (from +0.0, so never to -0.0, as torch's
    CPU cumsum) and multiplied in float64 (as `_reduce`), integers and masks in int64 (wrapping); max and min as torch's cummax / cummin values:
    NaN propagates from where it appears, and of equal elements the later one is taken (the
    sign of a zero follows the last zero of the running extreme's value)."""
    if kind in ("sum", "prod"):
        acc = x.astype(np.float64 if x.dtype.kind == "f" or x.dtype == NUMPY_DTYPES["bf16"] else np.int64)
        with np.errstate(over="ignore", invalid="ignore"):
            if kind == "sum":  # from 0, as torch's CPU cumsum: a running sum is never -0.0
                return np.cumsum(acc, axis=-1) + (0.0 if acc.dtype.kind == "f" else 0)
            return np.cumprod(acc, axis=-1)
    x = it.up(x)
    out = (np.maximum if kind == "max" else np.minimum).accumulate(x, axis=-1)
    if x.dtype.kind == "f":
        # The running extreme is some element's value; where it is a zero, torch's result is the
        # last zero seen so far (>= / <= take the later of equal elements), with that zero's sign.
        pos = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
        last_zero = np.maximum.accumulate(np.where(x == 0, pos, -1), axis=-1)
        zeros = np.take_along_axis(x, np.maximum(last_zero, 0), axis=-1)
        out = np.where((out == 0) & (last_zero >= 0), zeros, out)
    return out


def _scatter(op: Operation, ins: list[np.ndarray]) -> np.ndarray:
    """fusion.scatter (dialects/fusion/shape.py): `input` with src's elements written (or, `add`,
    added) where the index says along dim, index position by index position in order (so the
    last wins where indices repeat, and sums run in index order: floats in f32 (f64 for f64)
    from the input's value, rounded once, integers wrapping). Indices below 0 count from the
    end, any still outside [0, extent) land on the nearest end. The sorted form's index is first
    put back in index order from its chunks (`order` says where each sorted position stood)."""
    x, index, src = ins[0], ins[1].astype(np.int64), ins[2]
    dim, n, extent = op.dim.data, ins[2].shape[op.dim.data], ins[0].shape[op.dim.data]
    if len(ins) == 4:  # sorted form: [lines..., K, C] back to [lines..., n], then dim put back in place
        order = ins[3].astype(np.int64)
        kc, c = index.shape[-2:]
        j = order + (np.arange(kc, dtype=np.int64) * c)[:, None]
        restored = np.zeros(index.shape[:-2] + (kc * c,), np.int64)
        np.put_along_axis(restored, j.reshape(index.shape[:-2] + (kc * c,)), index.reshape(restored.shape), -1)
        index = np.moveaxis(restored[..., :n], -1, dim)
    index = np.clip(np.where(index < 0, index + extent, index), 0, max(extent - 1, 0))
    index = np.broadcast_to(index, src.shape)
    acc_type = np.float64 if x.dtype == np.float64 else np.float32 if x.dtype.kind == "f" or x.dtype == NUMPY_DTYPES["bf16"] \
        else x.dtype
    add = op.name == "fusion.scatter_add_atomic" or op.add is not None
    out = x.astype(acc_type) if add else x.copy()
    grid = np.indices(src.shape[:dim] + (1,) + src.shape[dim + 1:], sparse=True)
    with np.errstate(over="ignore"):
        for j in range(n):  # index positions in order: no two positions of one step share an element
            at = tuple(np.take(index, [j], axis=dim) if d == dim else g for d, g in enumerate(grid))
            vals = np.take(src, [j], axis=dim)
            if add:
                out[at] = out[at] + vals.astype(acc_type)
            else:
                out[at] = vals
    return out.astype(x.dtype)


def _sort(x: np.ndarray, descending: bool, k: int) -> list[np.ndarray]:
    """fusion.sort along the last axis: the first `k` of each row stably sorted (equal elements
    keep their order, in both directions), with the int64 positions they came from. Floats in
    torch's order: NaN above everything (all NaNs equal), -0.0 equal to 0.0; the values are the
    input's elements (signs of zeros and NaN bits kept)."""
    key = x.astype(np.float64) if x.dtype == NUMPY_DTYPES["bf16"] else x
    if key.dtype.kind == "f":
        nan = np.isnan(key)
        finite = np.where(nan, 0.0, key)
        # lexsort: the last key is the primary one; -0.0 == 0.0 there, and lexsort is stable.
        order = np.lexsort((-finite, ~nan)) if descending else np.lexsort((finite, nan))
    else:
        # ~ reverses an integer's (or a mask's) order exactly, with no overflow at the minimum.
        order = np.argsort(~key if descending else key, axis=-1, kind="stable")
    order = order[..., :k].astype(np.int64)
    return [np.take_along_axis(x, order, -1), order]


def _creation(it: _Interp, op: Operation, ins: list[np.ndarray]) -> np.ndarray:
    """fusion.iota, uniform and normal (dialects/fusion/creation.py): from each element's linear
    index, floats computed in f32 (f64 for f64 results and in f64 precision), as the kernels do."""
    shape, dtype = _shape(op.result), _elem_name(op.result)
    n = math.prod(shape)
    ftype = np.float64 if it.f64 or dtype == "f64" else np.float32
    if op.name == "fusion.iota" and dtype not in _FLOAT_NAMES:  # in i64, wrapping
        i = np.arange(n, dtype=np.int64)
        out = i * np.int64(op.step.value.data) + np.int64(op.start.value.data)
    elif op.name == "fusion.iota":
        out = np.arange(n, dtype=np.int64).astype(ftype) * ftype(op.step.value.data) + ftype(op.start.value.data)
    else:
        seed, offset = int(ins[0]), int(ins[1])
        if op.name == "fusion.uniform":
            out = philox.uniform(n, dtype, seed, offset, op.low.value.data, op.high.value.data, ftype)
        else:
            out = philox.normal(n, seed, offset, op.mean.value.data, op.std.value.data, ftype, dtype)
    return out.reshape(shape)


def _check_args(func: FuncOp, args: Sequence[object]) -> list[np.ndarray]:
    params = func.body.block.args
    if len(args) != len(params):
        raise ArgumentError(f"@{func.sym_name.data} takes {len(params)} arguments, got {len(args)}")
    checked = []
    for i, (p, a) in enumerate(zip(params, args)):
        label = f"argument {i} ('%{p.name_hint or f'arg{i}'}')"
        if not isinstance(p.type, TensorType):
            raise ArgumentError(f"{label}: parameter type {p.type} is not a tensor")
        want_shape, want_dt = _shape(p), numpy_dtype(p.type.element_type)
        if not isinstance(a, np.ndarray):
            try:
                arr = np.asarray(a)
            except Exception:
                arr = None
            if arr is None or arr.dtype.kind in "USO":  # a string or an object: say what it was
                raise ArgumentError(f"{label}: expected {p.type}, got {type(a).__name__}") from None
            a = arr
        layout = input_layout(func, i)
        if layout is not None and VIEW in arg_attrs(func, i):  # (after fusion-layouts: the view's shape)
            if a.shape != layout.shape or a.dtype != want_dt:
                raise ArgumentError(f"{label}: expected a view of shape {layout.shape} of {p.type}, got "
                                    f"{_dtype_label(a.dtype)} array of shape {a.shape}")
            storage = np.zeros(want_shape, want_dt)
            if a.size:
                as_strided(storage[layout.offset:], layout.shape, [k * a.itemsize for k in layout.strides])[...] = a
            a = storage
        elif a.shape != want_shape or a.dtype != want_dt:
            raise ArgumentError(f"{label}: expected {p.type}, got {_dtype_label(a.dtype)} array of shape {a.shape}")
        checked.append(a)
    return checked


def _laid_out(func: FuncOp, j: int, x: np.ndarray) -> np.ndarray:
    """Result j as the runtime returns it: in its `fusion.stride_order` (a permuted view of a
    dense array), else row-major."""
    order = output_order(func, j)
    if order is None:
        return np.asarray(x, order="C")  # (np.ascontiguousarray would turn a 0-d result into shape (1,))
    back = inverse(order)
    if VIEW in res_attrs(func, j):  # after fusion-layouts: x is the dense array in that order
        return np.transpose(np.asarray(x, order="C"), back)
    return np.transpose(np.ascontiguousarray(np.transpose(x, order)), back)


def run_reference(func_op: FuncOp | ModuleOp, args: Sequence[np.ndarray], precision: str = "native") -> list[np.ndarray]:
    """Evaluate a fusion-level func.func on numpy arrays; returns its results in order.

    Arguments must match the parameter types exactly (numpy dtype per `NUMPY_DTYPES`, shape).
    A module holding a single func.func is accepted too.

    An in-place output (`fusion.alias = I`) is written into argument I after every result is
    computed (each reads the inputs as they were passed), and that argument's array is what
    the call returns for it, as on the GPU; an argument that is not a writeable numpy array
    (a list, a read-only array) is left alone and the result returned as a new array.
    """
    func = find_func(func_op) if isinstance(func_op, ModuleOp) else func_op
    if not isinstance(func.body.block.last_op, ReturnOp):
        raise ValueError(f"@{func.sym_name.data} has no func.return")
    with np.errstate(all="ignore"):  # inf/NaN results are values here, not errors
        outs = _run_block(_Interp(precision), func.body.block, _check_args(func, args))
    results = [_laid_out(func, j, x) for j, x in enumerate(outs)]
    aliases = output_aliases(func)
    # a result that is (a view of) an argument an in-place output writes (an input returned as
    # is, or swapped into another input) is copied first, so that it keeps the input's values
    written = [args[i] for i in aliases.values() if isinstance(args[i], np.ndarray)]
    for j, r in enumerate(results):
        if any(np.may_share_memory(r, a) for a in written):  # (bounds only: cheap, and a copy too many is harmless)
            results[j] = r.copy()
    for j, i in aliases.items():
        a = args[i]
        if isinstance(a, np.ndarray) and a.flags.writeable and a.shape == results[j].shape \
                and a.dtype == results[j].dtype:
            np.copyto(a, results[j])
            results[j] = a
    return results


def _run_block(it: _Interp, block, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The values of `block`'s terminator's operands, given its arguments; a `fusion.segment`
    runs its body the same way."""
    env: dict[SSAValue, np.ndarray] = dict(zip(block.args, args))
    for op in block.ops:
        ins = [env[v] for v in op.operands]
        if op is block.last_op:
            return ins
        if op.name == "fusion.segment":
            outs = _run_block(it, op.regions[0].block, ins)
        else:
            outs = _eval_op(it, op, ins)
        for r, x in zip(op.results, outs, strict=True):
            env[r] = it.round(x, r)
    raise ValueError("a block without a terminator")


def reference_from_text(mlir_text: str, func_name: str | None = None, precision: str = "native"):
    """Parse fusion-level MLIR text and return `f(*arrays, precision=...)`, which runs the
    function (`func_name`, or the module's only one) in the interpreter. `f.func_op` is the op."""
    func = find_func(parse_module(mlir_text, "<string>"), func_name)

    def run(*arrays: np.ndarray, precision: str = precision) -> list[np.ndarray]:
        return run_reference(func, arrays, precision)

    run.func_op = func  # type: ignore[attr-defined]
    return run
