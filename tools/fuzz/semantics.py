"""The fuzzer's own float64 semantics, written apart from the reference interpreter: what each op
of a case computes (`_Semantics._numpy`), the rounding error it carries (`_magnitude`), where
its answer may go either way (`_dontcare`), the evaluation of a whole case
(`_Semantics.expected`), and how close a kernel's output must come (`TOLERANCE`, `mismatch`).

The evaluation (`_Gen.expected`, from the `_Semantics` mixin here) has the kernels' semantics,
torch's: floats in float64, i1 as bool, i8 ... i64 and u8 as numpy's int8 ... int64 and uint8;
a cast to a float rounds to nearest even (f64 and integer values to f16 or bf16 through f32, as
torch converts them); float -> i32 or i64 truncates toward zero, saturating at its limits, NaN ->
0 (the GPU's cvt.rzi), -> i8 or i16 so through i32 and wraps (torch on CUDA); float -> u8
truncates to i64 so and wraps (torch's rule); integer
-> integer wraps or extends (u8 by zeros); -> i1 is `!= 0` (NaN -> true); i1 -> a number is 0
or 1.

Values stay in a modest range (inputs in [-2, 2], exp only of tanh, log, sqrt and rsqrt only of
1 + |v|, pow of 1 + |v| to a tanh, division by 1 + |v|, reduction sums scaled by 1/extent), so a
float32 kernel and the float64 reference agree to a
tolerance that fits the output dtype plus the rounding each output's computation amplifies (its
magnitude: what a sum added up, what a function's slope scales), and any real mismatch is a bug.

Near-ties. Every value is either exact, one the kernel must give bit for bit (inputs,
constants, casts, neg, abs, relu, max, min, where, shape ops, segment_set and max/min reductions
of exact values; every i1 and i64 value), or carries the rounding of float32 arithmetic, within
the bound `mismatch` allows it (the TOLERANCE of its `level`, f32 or the f16/bf16 it was cast to,
plus its magnitude's slack). A comparison, or a cast to i1 or i64, of an inexact value may go
either way where its operands are within that bound of each other (of 0, of an integer step):
those elements are don't-care, and so is every element computed from one. So comparisons
mostly take exact operands (an input against a constant, a value against its own row max: eq
is then one-hot), which are checked everywhere; reductions never read a value that may hold a
don't-care element (it would blank a whole row). `mismatch` compares i1 and i64 outputs exactly
(counting the elements that differ), exact float outputs bit for bit, the others to their
tolerance; don't-care elements are skipped.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from fuser.dialects.fusion.fp8 import matmul_accumulation_bound
from fuser.runtime.reference import erfinv as _erfinv
from fuser.runtime.reference import ieee_extreme, ieee_maximum, ieee_minimum

_ERFINV = np.vectorize(_erfinv, otypes=[np.float64])
_LGAMMA = np.vectorize(lambda x: math.inf if x <= 0 and x == math.floor(x) else math.lgamma(x) if math.isfinite(x)
                       else abs(x), otypes=[np.float64])


def _digamma(x):
    """lgamma's slope: psi(x) by psi(x) = psi(x + 1) - 1/x up to x >= 8, then its asymptotic
    series; psi(1 - x) - pi / tan(pi x) (the reflection) for x < 1/2; infinite at the poles."""
    def one(v: float) -> float:
        if not math.isfinite(v) or (v <= 0 and v == math.floor(v)):
            return math.inf
        if v < 0.5:
            return one(1.0 - v) - math.pi / math.tan(math.pi * v)
        acc = 0.0
        while v < 8:
            acc -= 1.0 / v
            v += 1.0
        r = 1.0 / (v * v)
        return acc + math.log(v) - 0.5 / v - r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r / 240)))
    return np.vectorize(one, otypes=[np.float64])(x)


def _erfcinv(x):
    """erfcinv from the reference's erfinv: x - 1 is exact for the fuzzer's x in (1/2, 3/2)."""
    return -_ERFINV(np.asarray(x, dtype=np.float64) - 1.0)


def _nextafter(a, b, dtype: str):
    """nextafter on the grid of `dtype`, from numpy's own nextafter (ml_dtypes' for bf16), b
    where a == b (C's rule; numpy's f16 gives a there, which differs for zeros of two signs)."""
    t = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}[dtype]
    x, y = np.asarray(a, dtype=np.float64).astype(t), np.asarray(b, dtype=np.float64).astype(t)
    return np.where(x == y, y, np.nextafter(x, y)).astype(np.float64)

LOWP = ("f16", "bf16")
FP8 = ("f8e4m3fn", "f8e5m2")  # (issue 34) storage types: casts, shape ops, where and full only
# Per FP8 type: (mantissa bits, least normal exponent, largest finite value); f8e4m3fn saturates
# there (inf too), f8e5m2 overflows to inf (torch's rules)
_FP8_FORMAT = {"f8e4m3fn": (3, -6, 448.0), "f8e5m2": (2, -14, 57344.0)}
INTS = ("i8", "i16", "i32", "i64", "u8")  # the integer types (named as the dialect's short names)
DISCRETE = ("i1",) + INTS
_NP_INT = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8}
# The largest magnitude an integer type holds (as `Value.bound` counts it)
MLIR_NAMES = {"u8": "ui8", "f8e4m3fn": "f8E4M3FN", "f8e5m2": "f8E5M2"}  # short dtype name -> MLIR's spelling
INT_LIMIT = {"i8": 128.0, "i16": 32768.0, "i32": 2.0 ** 31, "i64": 2.0 ** 63, "u8": 255.0}


@dataclass
class Value:
    name: str
    kind: str  # "full" (R x C), "row" (R), "col" (C), and the others of `_Gen.shape`
    dtype: str = "f32"
    exact: bool = False  # the kernel must give the evaluation's value bit for bit (i1, integers: always)
    level: str = "f32"   # an inexact float's error is within this dtype's TOLERANCE (and its magnitude)
    dc: bool = False     # may hold don't-care elements (see the module docstring)
    bound: float = 0.0   # an integer's largest magnitude, or a float's that holds one (inf: none
    #                      worth scaling back into range)


@dataclass
class Step:
    """One op of the fuzzer's own float64 semantics, written apart from the reference interpreter."""
    outs: list[str]
    fn: object              # operand values -> result value(s)
    operands: list[str]
    mag: object             # (operand values, their magnitudes) -> result magnitude(s)
    dc: object              # (operand values, their don't-care masks or None, margins) -> don't-care mask or None
    needs_margin: bool = False
    unrounded: object = None  # fn as the reference interpreter's f64 mode has it (float casts keep float64)


TOLERANCE = {"f64": 1e-12, "f32": 2e-4, "bf16": 2e-2, "f16": 4e-3,
             "f8e4m3fn": 0.13, "f8e5m2": 0.26}  # (FP8: an inexact value cast may round one ulp away)


ROUNDING_SLACK = 16 * 2.0 ** -24
"""Rounding a float32 kernel may add to an element, per unit of its magnitude (see `_Semantics._magnitude`):
16 float32 epsilons, for the summation order and the approximate exp/log/division."""


# Where rounding to the output dtype gives infinity: half of an ulp past the largest finite value.
OVERFLOW = {"f16": 65520.0, "bf16": 3.3961e38, "f32": 3.4028235677973366e38}  # (f32: a running product of
#   factors up to 257 passed it at element 160 in GPU fuzz seeds 9900120 and 9902309: inf is right)


_INDEXED = ("gather", "index_select")  # reads where an index tensor says
_INDEX_MAPS = ("slice", "pad", "cat", "flip", *_INDEXED)  # shape ops that move elements to other indices
_EXACT_OPS = {"neg", "abs", "relu", "max", "min", "where", "cast", "broadcast", "reshape", "permute", "segment_set",
              "uniform", "iota", "nextafter", *_INDEX_MAPS}  # (the kernels' uniform numbers are the
#   reference's, bit for bit; nextafter is a step on its type's grid: nothing rounds)


def _derive(op: str, rhs: str, operands: list[Value], dtype: str) -> tuple[bool, str, bool]:
    """(exact, level, dc) of an op's result (see Value). Ops that only move, select or compare
    values, and casts (the evaluation rounds as the kernel does), keep exactness; arithmetic in
    float32 loses it."""
    dc = any(o.dc for o in operands)
    inexact = [o for o in operands if not o.exact]
    if dtype in DISCRETE:  # exact, except where an inexact operand may flip it
        return True, "f64", dc or bool(inexact)
    if op in _STEP:  # an integer (or sign) of its operand: exact, but may flip as a comparison may
        return True, "f64", dc or bool(inexact)
    keeps = op in _EXACT_OPS or (op in ("reduce", "scan") and rhs.split()[1] in ("max", "min")) or \
        (op == "scatter" and not _scatter_adds(rhs))
    if op == "full" or (keeps and not inexact):
        return True, "f64", dc
    # (a cast rounds to its type, and so does a normal draw of f16 or bf16: its inexact value
    # may cross one of that type's rounding boundaries; a scatter that adds adds in its own
    # type, the only arithmetic the generator makes in f16 or bf16)
    # (an f64 result of f64 operands is computed in f64: f64's tolerance, unless an operand carries more)
    rounds_to_type = op in ("cast", "normal") or (op in ("scatter", "scatter_add_atomic") and _scatter_adds(rhs))
    floor = "f64" if dtype == "f64" and not rounds_to_type else "f32"
    level = max([o.level for o in inexact] + [floor] + ([dtype] if rounds_to_type else []),
                key=TOLERANCE.__getitem__)
    return False, level, dc


def _reduction(kind: str, axis: tuple, keep: bool):
    """fusion.reduce of `kind`, as torch's: integers and masks summed and multiplied in int64
    (wrapping), floats in float64; any/all the nonzero test (NaN is nonzero); argmax/argmin the
    first extreme's index within the reduced dims (numpy's, which counts NaN as both extremes),
    over one dim or all of them."""
    def wide(x):
        return x.astype(np.int64) if x.dtype.kind in "biu" else x

    def arg(x):
        fn = np.argmax if kind == "argmax" else np.argmin
        kept = [d for d in range(x.ndim) if d not in axis]
        flat = np.transpose(x, kept + sorted(axis)).reshape([x.shape[d] for d in kept] + [-1])
        out = fn(flat, axis=-1)
        return out.reshape([1 if d in axis else x.shape[d] for d in range(x.ndim)]) if keep else out
    fns = {"sum": lambda x: np.sum(wide(x), axis=axis, keepdims=keep),
           "prod": lambda x: np.prod(wide(x), axis=axis, keepdims=keep),
           "max": lambda x: ieee_extreme("max", x, axis, keep), "min": lambda x: ieee_extreme("min", x, axis, keep),
           "any": lambda x: np.any(x != 0, axis=axis, keepdims=keep),
           "all": lambda x: np.all(x != 0, axis=axis, keepdims=keep), "argmax": arg, "argmin": arg}
    return fns[kind]


def _scan(kind: str):
    """fusion.scan of `kind` along the last axis, as torch's cumsum / cumprod / cummax / cummin:
    integers and masks summed and multiplied in int64 (wrapping), floats in float64, a sum from
    +0.0; a running max (min) takes each element that is >= (<=) it or NaN, so NaN sticks and
    of equal elements the later one is taken (a zero's sign included)."""
    def extreme(x):
        if x.dtype.kind != "f":
            return (np.maximum if kind == "max" else np.minimum).accumulate(x, axis=-1)
        out = np.empty_like(x)
        run = x[..., 0].copy()
        out[..., 0] = run
        for i in range(1, x.shape[-1]):
            e = x[..., i]
            take = ((e >= run) if kind == "max" else (e <= run)) | np.isnan(e)
            run = np.where(take, e, run)
            out[..., i] = run
        return out

    def wide(x):
        return x.astype(np.int64) if x.dtype.kind in "biu" else x
    return {"sum": lambda x: np.cumsum(wide(x), axis=-1) + (0.0 if x.dtype.kind == "f" else 0),
            "prod": lambda x: np.cumprod(wide(x), axis=-1), "max": extreme, "min": extreme}[kind]


def _sort(descending: bool, k: int):
    """fusion.sort along the last axis, as torch's stable sort: (the first k values, their int64
    positions). Equal elements keep their order (in both directions); NaN is above everything
    (all NaNs equal) and -0.0 equals 0.0: ordered by (NaN or not, value, position)."""
    def fn(x):
        x = np.asarray(x)
        if x.dtype.kind == "f":
            nan = np.isnan(x)
            key = np.where(nan, 0.0, x.astype(np.float64)) + 0.0  # (-0.0 + 0.0 is 0.0)
            # NaN last ascending (first descending), then by value
            cols = (np.where(nan, 1, 0), key) if not descending else (np.where(nan, 0, 1), -key)
        else:
            key = x.astype(np.int64)
            cols = (np.zeros_like(key), key if not descending else ~key)  # (~ reverses int64 order exactly)
        pos = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
        order = np.lexsort((pos, cols[1], cols[0]), axis=-1)[..., :k].astype(np.int64)  # (the last key first)
        return np.take_along_axis(x, order, -1), order
    return fn


def _elems(rhs: str) -> list[str]:
    """The element types of the tensor types in an op's text, in order (short names: u8 for ui8,
    f8e4m3fn for f8E4M3FN, f8e5m2 for f8E5M2)."""
    short = {v: k for k, v in MLIR_NAMES.items()}
    return [short.get(t, t) for t in re.findall(r"[<x]([a-z]+\d*|f8E4M3FN|f8E5M2)>", rhs)]


def _as(x, dtype: str) -> np.ndarray:
    """A value as the evaluation holds it: i1 as bool, integers as their numpy type, floats as
    float64."""
    return np.asarray(x).astype(_NP_INT.get(dtype, np.float64), copy=False)


def _round_to(x, dtype: str) -> np.ndarray:
    """A float64 value rounded to a float dtype (nearest, ties to even), as float64. f16 and bf16
    go through float32, as torch converts f64 (and i64) values to them and the kernels do: one
    rounding from f32, f16 and bf16 values, two from f64 ones."""
    x = np.asarray(x, dtype=np.float64)
    if dtype == "f64":
        return x
    if dtype in FP8:
        return _round_fp8(x.astype(np.float32).astype(np.float64), dtype)
    y = x.astype(np.float32)
    if dtype in LOWP:
        y = y.astype(np.float16 if dtype == "f16" else ml_dtypes.bfloat16)
    return y.astype(np.float64)


def _round_fp8(x: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values (already f32 ones) rounded to an FP8 type's grid, nearest with ties to
    even, as float64: the grid step of x's binade (the subnormals' below the least normal
    exponent); f8e4m3fn saturating at +-448 (inf too), f8e5m2 overflowing to +-inf past 57344;
    NaN stays NaN."""
    mant, emin, top = _FP8_FORMAT[dtype]
    if dtype == "f8e4m3fn":
        x = np.clip(x, -top, top)  # (NaN stays NaN)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        e = np.maximum(np.floor(np.log2(np.abs(x))), emin)
        step = np.exp2(e - mant)
        y = np.where(np.isfinite(x) & (x != 0), np.round(x / step) * step, x)  # (np.round: ties to even)
    if dtype == "f8e4m3fn":
        return np.clip(y, -top, top)
    return np.where(np.abs(y) > top, np.copysign(np.inf, y), y)


def _trunc_i64(x) -> np.ndarray:
    """float -> i64: toward zero, saturating at the i64 limits, NaN -> 0."""
    t = np.trunc(np.asarray(x, dtype=np.float64))
    out = np.zeros(t.shape, np.int64)
    inside = (t > -2.0 ** 63) & (t < 2.0 ** 63)
    out[inside] = t[inside].astype(np.int64)
    out[t >= 2.0 ** 63] = np.iinfo(np.int64).max
    out[t <= -2.0 ** 63] = np.iinfo(np.int64).min
    return out


def _trunc_int(x, dst: str) -> np.ndarray:
    """float -> an integer type: toward zero, i32 and i64 saturating at their limits (NaN -> 0),
    i8 and i16 wrapping the saturated i32 (torch on CUDA); u8 through i64, wrapping."""
    return _trunc_unwrapped(x, dst).astype(_NP_INT[dst])


def _trunc_unwrapped(x, dst: str) -> np.ndarray:
    """The int64 a float cast to `dst` holds before it wraps to `dst`'s width: i64 (and u8's
    route) saturated at i64, the rest at i32 (i8 and i16 wrap what i32 holds: torch on CUDA).
    Two floats whose casts may differ differ here, even where their wrapped results agree."""
    t = _trunc_i64(x)
    if dst in ("i64", "u8"):
        return t
    info = np.iinfo(np.int32)
    return np.clip(t, info.min, info.max)


def _creation(op: str, rhs: str, shape: tuple[int, ...], rounding: bool = True):
    """fusion.iota, uniform and normal of the op's text: iota computed as the kernels do (f32(i)
    * step + start in f32, f64 in f64, integers in i64 wrapping); the random numbers from the
    stream's numpy form (runtime/philox.py), which the kernels must match (uniform bit for bit).
    `rounding=False`: in float64, unrounded, as the reference's f64 mode."""
    from fuser.runtime import philox

    params = {k: float(v) for k, v in re.findall(r"(start|step|low|high|mean|std) (-?[\d.e+-]+)", rhs)}
    dtype, n = _elems(rhs)[-1], math.prod(shape)
    ft = np.float64 if dtype == "f64" or not rounding else np.float32

    def done(x: np.ndarray) -> np.ndarray:
        x = x.astype(np.float64)
        return (_round_to(x, dtype) if rounding else x).reshape(shape)
    if op == "iota" and dtype in INTS:
        i = np.arange(n, dtype=np.int64) * np.int64(params["step"]) + np.int64(params["start"])
        return lambda: i.astype(_NP_INT[dtype]).reshape(shape)
    if op == "iota":
        return lambda: done(np.arange(n).astype(ft) * ft(params["step"]) + ft(params["start"]))
    if op == "uniform":
        return lambda seed, off: done(philox.uniform(n, dtype, int(seed), int(off), params["low"], params["high"], ft))
    return lambda seed, off: done(philox.normal(n, int(seed), int(off), params["mean"], params["std"], ft, dtype))


def _cast(x: np.ndarray, src: str, dst: str, rounding: bool = True) -> np.ndarray:
    """fusion.cast's semantics (torch's). `rounding=False`: float targets keep float64, as the
    reference interpreter's f64 mode has them (FP8 targets round in either: the reference
    keeps FP8 values FP8)."""
    if dst in FP8:
        rounding = True
    if dst == "i1":
        return x != 0  # NaN is true
    if dst in INTS:
        return x.astype(_NP_INT[dst]) if src in DISCRETE else _trunc_int(x, dst)
    if src in INTS and rounding and dst != "f64":  # to the nearest float32 (then f16 or bf16)
        return _round_to(x.astype(np.float32), dst)
    y = x.astype(np.float64)  # i1: 0 or 1; integers: exact up to 2^53
    return _round_to(y, dst) if rounding else y


def _scatter_adds(rhs: str) -> bool:
    return rhs.startswith("fusion.scatter_add_atomic") or " add" in rhs.split(" : ")[0].split(" dim ")[1]


def _scatter(rhs: str):
    """fusion.scatter from its text: x with src's elements written (added) along dim where the
    index says, position after position (the last wins; sums in order); indices below 0 from
    the end, the rest clamped to the nearest end. Masks (don't-care) are or-ed where added."""
    dim, add = int(re.search(r" dim (\d+)", rhs).group(1)), _scatter_adds(rhs)

    def scatter(x, index, src):
        out = np.array(x, copy=True)
        n = out.shape[dim]
        i = np.asarray(index).astype(np.int64)
        i = np.broadcast_to(np.clip(np.where(i < 0, i + n, i), 0, n - 1), np.shape(src))
        grid = np.indices(np.shape(src)[:dim] + (1,) + np.shape(src)[dim + 1:], sparse=True)
        with np.errstate(over="ignore"):
            for j in range(np.shape(src)[dim]):
                at = tuple(np.take(i, [j], axis=dim) if k == dim else g for k, g in enumerate(grid))
                v = np.take(src, [j], axis=dim)
                out[at] = (out[at] | v if out.dtype == bool else out[at] + v) if add else v
        return out
    return scatter


def _int_list(rhs: str, key: str) -> list[int]:
    return [int(d) for d in re.search(key + r" \[([-\d, ]*)\]", rhs).group(1).split(",") if d.strip()]


def _index_map(op: str, rhs: str):
    """The numpy function of a fusion.slice, pad, cat or flip, from its text."""
    if op == "slice":
        sl = tuple(slice(a, b, k) for a, b, k in zip(_int_list(rhs, "start"), _int_list(rhs, "stop"),
                                                     _int_list(rhs, "step")))
        return lambda x: x[sl]
    if op == "flip":
        dims = tuple(_int_list(rhs, "dims"))
        return lambda x: np.flip(x, dims)
    if op in _INDEXED:
        dim = int(re.search(r" dim (\d+)", rhs).group(1))

        def read(x, index):
            n = x.shape[dim]
            i = np.asarray(index).astype(np.int64)
            i = np.clip(np.where(i < 0, i + n, i), 0, n - 1)
            return np.take_along_axis(x, i, dim) if op == "gather" else np.take(x, i, axis=dim)
        return read
    if op == "cat":
        dim = int(re.search(r" dim (\d+)", rhs).group(1))
        return lambda *xs: np.concatenate(xs, axis=dim)
    low, high = _int_list(rhs, "low"), _int_list(rhs, "high")

    def pad(x, value):
        x = x[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, lo, hi in zip(x.shape, low, high))]
        return np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)], constant_values=np.asarray(value).item())
    return pad


def _dims_of(rhs: str) -> tuple[int, ...]:
    """The `dims [...]` of an op's text."""
    return tuple(int(d) for d in re.search(r"dims \[([\d, ]*)\]", rhs).group(1).split(","))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_ERF = np.vectorize(math.erf, otypes=[np.float64])
_ERFC = np.vectorize(math.erfc, otypes=[np.float64])


def _gelu_slope(x):
    return 0.5 * (1.0 + _ERF(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


_SLOPE = {  # derivatives of the unary ops that are not plain sign changes (gelu's tanh form: the erf form's, close)
    "tanh": lambda x: 1.0 - np.tanh(x) ** 2, "exp": np.exp, "log": lambda x: 1.0 / x,
    "sigmoid": lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)),
    "silu": lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))), "gelu": _gelu_slope,
    "sqrt": lambda x: 0.5 / np.sqrt(x), "rsqrt": lambda x: 0.5 * x ** -1.5,
    "erf": lambda x: 2.0 / math.sqrt(math.pi) * np.exp(-x * x), "exp2": lambda x: math.log(2.0) * np.exp2(x),
    "log2": lambda x: 1.0 / (x * math.log(2.0)), "log10": lambda x: 1.0 / (x * math.log(10.0)),
    "log1p": lambda x: 1.0 / (1.0 + x), "reciprocal": lambda x: 1.0 / (x * x),
    "sin": np.cos, "cos": np.sin, "tan": lambda x: 1.0 / np.cos(x) ** 2, "atan": lambda x: 1.0 / (1.0 + x * x),
    "asin": lambda x: 1.0 / np.sqrt(1.0 - x * x), "acos": lambda x: 1.0 / np.sqrt(1.0 - x * x),
    "sinh": np.cosh, "cosh": np.sinh, "asinh": lambda x: 1.0 / np.sqrt(x * x + 1.0),
    "acosh": lambda x: 1.0 / np.sqrt(x * x - 1.0), "atanh": lambda x: 1.0 / (1.0 - x * x), "expm1": np.exp,
    "erfc": lambda x: 2.0 / math.sqrt(math.pi) * np.exp(-x * x),
    "erfinv": lambda x: math.sqrt(math.pi) / 2.0 * np.exp(_ERFINV(x) ** 2),
    "erfcinv": lambda x: math.sqrt(math.pi) / 2.0 * np.exp(_erfcinv(x) ** 2), "lgamma": _digamma,
}
# Step functions: an exact result, don't-care where an inexact operand's error bound reaches a step
_STEP = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.rint,
         "sign": lambda x: (x > 0).astype(np.float64) - (x < 0).astype(np.float64)}
_IDENTITY = lambda x: x  # noqa: E731
# Tests of a float (i1 results): may flip where an inexact operand's error bound reaches an edge
_TESTS = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "isposinf": np.isposinf,
          "isneginf": np.isneginf, "signbit": np.signbit}
_LOGICAL = {"logical_not": np.logical_not, "logical_and": np.logical_and, "logical_or": np.logical_or,
            "logical_xor": np.logical_xor}
def _remainder(a, b):
    """torch.remainder: fmod, plus b where it is nonzero and its sign differs from b's."""
    r = np.fmod(a, b)
    return np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


def _wrap(q: np.ndarray, dtype) -> np.ndarray:
    """Python integers (an object array) wrapped into a numpy integer dtype, two's complement."""
    bits = np.iinfo(dtype).bits
    m = np.vectorize(lambda v: v % (1 << bits), otypes=[object])(q)
    return m.astype(np.uint64).astype(dtype) if bits == 64 else m.astype(np.int64).astype(dtype)


def _int_divide(a, b, floor: bool, remainder: bool):
    """Integer division of the fuzzer's own: in Python's unbounded integers, then wrapped (so
    MIN / -1 comes out as MIN), a / 0 = a % 0 = -1 (fusion.trunc_div's definition)."""
    dt = np.result_type(a, b)

    def one(x, y):
        if y == 0:
            return -1  # all bits set, quotient and remainder alike
        q = x // y if floor else (abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1)
        return x - q * y if remainder else q
    out = np.vectorize(lambda x, y: one(int(x), int(y)), otypes=[object])(a, b)
    return _wrap(out, dt)


def _int_power(a, b):
    """a ** b in Python's integers, wrapped; b < 0: 1 for 1, +-1 for -1, else 0 (torch's CUDA)."""
    dt = np.result_type(a, b)

    def one(x, y):
        if y < 0:
            return 1 if x == 1 else (-1 if y % 2 else 1) if x == -1 else 0
        return pow(x, y, 1 << 64)
    return _wrap(np.vectorize(lambda x, y: one(int(x), int(y)), otypes=[object])(a, b), dt)


def _int_shift(a, b, kind: str):
    """Shifts in Python's integers: out of [0, width) a left or logical shift gives 0, an
    arithmetic right shift the sign (-1 or 0); else the exact shift of the value (of its
    unsigned bits for a logical one), wrapped."""
    dt = np.result_type(a, b)
    width, signed = np.iinfo(dt).bits, np.iinfo(dt).min < 0

    def one(x, y):
        if not 0 <= y < width:
            return (-1 if x < 0 else 0) if kind == "right" and signed else 0
        if kind == "left":
            return x << y
        return (x % (1 << width)) >> y if kind == "logical" else x >> y
    return _wrap(np.vectorize(lambda x, y: one(int(x), int(y)), otypes=[object])(a, b), dt)


def _int_gcd(a, b):
    """torch.gcd: Euclid on the wrapped |a| and |b| with C's remainder (toward zero), wrapped."""
    dt = np.result_type(a, b)
    bits, signed = np.iinfo(dt).bits, np.iinfo(dt).min < 0

    def wrap(v):
        v %= 1 << bits
        return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v

    def one(x, y):
        x, y = wrap(abs(x)), wrap(abs(y))
        while x != 0:
            q = abs(y) // abs(x) * (1 if (y < 0) == (x < 0) else -1)  # toward zero
            x, y = wrap(y - q * x), x
        return y
    return _wrap(np.vectorize(lambda x, y: one(int(x), int(y)), otypes=[object])(a, b), dt)


# Ops of integer operands whose numpy spelling does not wrap or divide as the dialect does
_INT_NUMPY = {
    "pow": _int_power, "trunc_div": lambda a, b: _int_divide(a, b, False, False),
    "floor_div": lambda a, b: _int_divide(a, b, True, False), "fmod": lambda a, b: _int_divide(a, b, False, True),
    "remainder": lambda a, b: _int_divide(a, b, True, True),
    "bitwise_left_shift": lambda a, b: _int_shift(a, b, "left"),
    "bitwise_right_shift": lambda a, b: _int_shift(a, b, "right" if np.iinfo(a.dtype).min < 0 else "logical"),
    "logical_right_shift": lambda a, b: _int_shift(a, b, "logical"), "gcd": _int_gcd,
}


_NUMPY = {
    "neg": np.negative, "abs": np.abs, "tanh": np.tanh, "exp": np.exp, "log": np.log,
    "sigmoid": _sigmoid, "relu": lambda x: np.maximum(x, 0.0), "silu": lambda x: x * _sigmoid(x),
    "gelu": lambda x: 0.5 * x * _ERFC(-x / math.sqrt(2.0)),  # (1 + erf would cancel for x << 0)
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "max": ieee_maximum, "min": ieee_minimum,
    "div": np.divide, "pow": np.power, "where": np.where, "segment_set": _IDENTITY,
    "erf": _ERF, "exp2": np.exp2, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "reciprocal": lambda x: 1.0 / x, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "expm1": np.expm1, "atan2": np.arctan2, "fmod": np.fmod,
    "remainder": _remainder,
    "erfc": np.vectorize(math.erfc, otypes=[np.float64]), "erfinv": _ERFINV, "erfcinv": _erfcinv,
    "lgamma": _LGAMMA, **_STEP, **_TESTS,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "bitwise_not": np.invert,
    **_LOGICAL,
}
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal}


def _unbounded(magnitude: np.ndarray, value: np.ndarray) -> np.ndarray:
    """A magnitude that came out NaN at a value that is not: an unbounded (infinite) operand
    error times a zero slope (pow's log(1) times atan2's infinite slope at the origin). The error
    is still unbounded: inf, so the element is not compared, rather than NaN, which failed it."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(magnitude) & ~np.isnan(value.astype(np.float64)), np.inf, magnitude)


class _Semantics:
    """The float64 semantics of the ops a `_Gen` emits, as a mixin of it: the functions of one op
    (`_numpy`, `_magnitude`, `_dontcare`, which `_Gen.emit` records as a `Step`) read the case's
    shapes and matmul layout; `expected` runs the recorded steps on a case's inputs."""

    def _numpy(self, rhs: str, kind: str, rounding: bool = True):
        """The float64 function of one emitted op, from its text (`rounding=False`: float casts
        and constants keep float64, as in the reference interpreter's f64 mode)."""
        op = rhs.split()[0].removeprefix("fusion.")
        if op == "full":
            value, shape = float(rhs.split()[1]), self.shape(kind)
            if rounding or _elems(rhs)[-1] in FP8:  # the constant the kernel holds
                value = float(_round_to(np.float64(value), _elems(rhs)[-1]))
            return lambda: np.full(shape, value)
        if op == "cast":
            src, dst = _elems(rhs)
            return lambda x: _cast(x, src, dst, rounding)
        if op == "cmp":
            return _CMP[rhs.split()[1].rstrip(",")]
        if op == "gelu" and '"tanh"' in rhs:
            return _gelu_tanh
        if op == "broadcast":  # a row gains its last dim back, a column its leading ones
            full, added = self.shape("full"), _dims_of(rhs)
            return lambda x: np.broadcast_to(np.expand_dims(x, added), full)
        if op == "nextafter":
            dtype = _elems(rhs)[-1]
            return lambda a, b: _nextafter(a, b, dtype)
        if op in _INT_NUMPY and _elems(rhs)[-1] in INTS:
            return _INT_NUMPY[op]
        if op == "reduce":
            return _reduction(rhs.split()[1], _dims_of(rhs), "keepdim" in rhs)
        if op == "scan":
            return _scan(rhs.split()[1])
        if op == "permute":
            perm = tuple(int(d) for d in re.search(r"\[([\d, ]*)\]", rhs).group(1).split(","))
            return lambda x: np.transpose(x, perm)
        if op == "reshape":
            shape = self.shape(kind)
            return lambda x: np.reshape(x, shape)
        if op in _INDEX_MAPS:
            return _index_map(op, rhs)
        if op in ("scatter", "scatter_add_atomic"):
            return _scatter(rhs)
        if op == "matmul":
            ta, tb = self.ta, self.tb
            return lambda a, b: (a.T if ta else a) @ (b.T if tb else b)
        if op in ("iota", "uniform", "normal"):
            return _creation(op, rhs, self.shape(kind), rounding)
        return _NUMPY[op]

    def _magnitude(self, rhs: str, kind: str):
        """How one op scales the rounding error it is handed: the magnitude of its result, for an
        error bound of eps * magnitude. Sums add the magnitudes of their terms (so a sum that
        cancels keeps the size of what it added), products multiply them, and a function of x
        takes |f'(x)| * magnitude(x) + |f(x)|. (An i1 or i64 result's magnitude is its value:
        `expected` sets it.)"""
        op = rhs.split()[0].removeprefix("fusion.")
        if _elems(rhs)[-1] in DISCRETE and op not in ("cast", "full") or op in ("cmp", "where") and \
                _elems(rhs)[-1] in INTS:
            return lambda vals, mags: 0.0  # an integer or mask result is exact (`expected` sets its magnitude)
        fn = self._numpy(rhs, kind) if op != "full" else None
        if op == "full":
            value = abs(float(rhs.split()[1]))
            return lambda vals, mags: value
        if op in _INDEXED:  # the magnitudes of the elements read (the index is exact)
            return lambda vals, mags: fn(mags[0], vals[1])
        if op in ("scatter", "scatter_add_atomic"):  # the magnitudes moved (added) as the values are (the index is exact)
            return lambda vals, mags: fn(mags[0], vals[1], np.broadcast_to(mags[2], np.shape(vals[2])))
        if op == "matmul" and _elems(rhs)[0] in FP8:
            # the accumulator's truncation (fp8.matmul_accumulation_bound), as the magnitude whose
            # ROUNDING_SLACK is that bound
            ta, tb = self.ta, self.tb
            return lambda vals, mags: matmul_accumulation_bound(vals[0].T if ta else vals[0],
                                                                vals[1].T if tb else vals[1]) / ROUNDING_SLACK
        if op in ("broadcast", "reshape", "permute", "matmul", *_INDEX_MAPS):  # linear in each operand's magnitude
            return lambda vals, mags: fn(*mags)
        if op in ("cast", "segment_set", "neg", "abs", "relu"):
            return lambda vals, mags: mags[0]
        if op in _STEP:  # exact where it counts (don't-care where the operand's error may flip it)
            return lambda vals, mags: np.abs(fn(vals[0]))
        if op in ("iota", "uniform", "normal"):  # (normal: the kernels' log near 1 is off by 2^-22 absolute)
            return lambda vals, mags: np.abs(fn(*vals)) + (1.0 if op == "normal" else 0.0)
        if op == "reduce":
            axis, keep, red = _dims_of(rhs), "keepdim" in rhs, rhs.split()[1]
            if red == "prod":  # each factor's relative error, and a rounding per product
                def prod_magnitude(vals, mags):
                    n = np.prod([vals[0].shape[a] for a in axis])
                    rel = np.sum(mags[0] / np.abs(vals[0]), axis=axis, keepdims=keep)
                    return np.abs(fn(vals[0])) * (rel + n)
                return prod_magnitude
            return lambda vals, mags: np.sum(mags[0], axis=axis, keepdims=keep) if red == "sum" else \
                np.max(mags[0], axis=axis, keepdims=keep)
        if op == "scan":  # as a reduction of each prefix
            red = rhs.split()[1]
            if red == "prod":
                def scan_prod_magnitude(vals, mags):
                    count = np.arange(1, vals[0].shape[-1] + 1)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        rel = np.cumsum(mags[0] / np.abs(vals[0]), axis=-1)
                    return np.abs(fn(vals[0])) * (rel + count)
                return scan_prod_magnitude
            return lambda vals, mags: np.cumsum(mags[0], axis=-1) if red == "sum" else \
                np.maximum.accumulate(mags[0], axis=-1)
        if op in ("add", "sub"):
            return lambda vals, mags: mags[0] + mags[1]
        if op == "nextafter":  # a moved one step: a's error (a step the other way where b is within it)
            return lambda vals, mags: mags[0] + np.abs(fn(*vals))
        if op == "mul":
            return lambda vals, mags: mags[0] * mags[1]
        if op in ("max", "min"):
            return lambda vals, mags: np.maximum(mags[0], mags[1])
        if op == "cmp" or op in _TESTS or op in _LOGICAL:
            return lambda vals, mags: 0.0
        if op == "where":
            return lambda vals, mags: np.where(vals[0], mags[1], mags[2])
        if op == "div":  # a / b with |b| >= 1
            return lambda vals, mags: (mags[0] + np.abs(vals[0] / vals[1]) * mags[1]) / np.abs(vals[1])
        if op in ("fmod", "remainder"):  # a - n b: slope 1 in a, |n| in b (a jump where n changes)
            rounding = np.trunc if op == "fmod" else np.floor

            def mod_magnitude(vals, mags):
                with np.errstate(divide="ignore", invalid="ignore"):
                    n = np.abs(rounding(vals[0] / vals[1]))
                return mags[0] + np.where(np.isfinite(n), n, np.inf) * mags[1] + np.abs(_NUMPY[op](*vals))
            return mod_magnitude
        if op == "atan2":  # d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
            def atan2_magnitude(vals, mags):
                r2 = vals[0] * vals[0] + vals[1] * vals[1]
                with np.errstate(divide="ignore", invalid="ignore"):
                    slope = (np.abs(vals[1]) * mags[0] + np.abs(vals[0]) * mags[1]) / r2
                return np.where(r2 > 0, slope, np.inf) + np.abs(np.arctan2(vals[0], vals[1]))
            return atan2_magnitude
        if op == "pow":  # a ** t with a >= 1: d/da = t a^(t-1), d/dt = ln(a) a^t
            def pow_magnitude(vals, mags):
                p = np.power(vals[0], vals[1])
                return p * (np.abs(vals[1]) * mags[0] / vals[0] + np.abs(np.log(vals[0])) * mags[1]) + p
            return pow_magnitude
        slope = _SLOPE[op]
        return lambda vals, mags: np.abs(slope(vals[0])) * mags[0] + np.abs(fn(vals[0]))

    def _dontcare(self, op: str, rhs: str, kind: str, operands: list[Value], dtype: str):
        """The don't-care mask of an op's result, and whether it needs its operands' margins: an
        elementwise op's result is don't-care where any operand is; a comparison or a cast to
        i1/i64 also where an inexact operand's margin (its error bound) reaches the answer's
        edge; reductions and shape ops carry their operand's mask along."""
        if op in ("full", "matmul"):
            return (lambda vals, dcs, margins: None), False
        if op in ("broadcast", "reshape", "permute"):
            move = self._numpy(rhs, kind)
            return (lambda vals, dcs, margins: None if dcs[0] is None else move(dcs[0])), False
        if op in _INDEXED:  # the read elements' masks (the index is an input: exact)
            move = self._numpy(rhs, kind)
            return (lambda vals, dcs, margins: None if dcs[0] is None else move(np.broadcast_to(dcs[0], np.shape(vals[0])),
                                                                              vals[1])), False
        if op in ("scatter", "scatter_add_atomic"):  # each written element's mask moves with it; an added one joins the input's
            move = self._numpy(rhs, kind)

            def scattered(vals, dcs, margins):
                if dcs[0] is None and dcs[2] is None:
                    return None
                mask = [np.zeros(np.shape(v), bool) if dc is None else np.broadcast_to(dc, np.shape(v))
                        for v, dc in zip(vals, dcs)]
                return move(mask[0], vals[1], mask[2])
            return scattered, False
        if op in _INDEX_MAPS:  # each element's mask moves with it (a pad value is exact: never don't-care)
            move = self._numpy(rhs, kind)

            def moved(vals, dcs, margins):
                if all(d is None for d in dcs):
                    return None
                return move(*[np.zeros(np.shape(v), bool) if d is None else np.broadcast_to(d, np.shape(v))
                              for v, d in zip(vals, dcs)])
            return moved, False
        if op == "reduce":
            axis, keep = _dims_of(rhs), "keepdim" in rhs
            return (lambda vals, dcs, margins: None if dcs[0] is None else
                    np.any(dcs[0], axis=axis, keepdims=keep)), False
        if op == "scan":  # every later element of the row reads a don't-care one
            return (lambda vals, dcs, margins: None if dcs[0] is None else
                    np.logical_or.accumulate(dcs[0], axis=-1)), False
        flip = None
        from_float = bool(operands) and operands[0].dtype not in DISCRETE
        if op == "cmp":
            flip = lambda vals, m: np.abs(vals[0] - vals[1]) <= m  # noqa: E731
        elif op == "cast" and dtype == "i1" and from_float:
            flip = lambda vals, m: np.abs(vals[0]) <= m  # noqa: E731
        elif op == "cast" and dtype in INTS and from_float:
            # compared before wrapping: the ends of an interval 256 * k wide wrap to one i8 value
            flip = lambda vals, m: _trunc_unwrapped(vals[0] - m, dtype) != _trunc_unwrapped(vals[0] + m, dtype)  # noqa: E731
        elif op in ("fmod", "remainder"):  # its jump by b where a / b crosses an integer
            rounding = np.trunc if op == "fmod" else np.floor

            def flip(vals, m):
                with np.errstate(divide="ignore", invalid="ignore"):
                    q, dq = vals[0] / vals[1], m * (1.0 + np.abs(vals[0] / vals[1])) / np.abs(vals[1])
                    return (rounding(q - dq) != rounding(q + dq)) | ~np.isfinite(dq)
        elif op == "atan2":  # its 2 pi jump across the negative x axis (and any angle at the origin)
            flip = lambda vals, m: (vals[1] < m) & (np.abs(vals[0]) <= m)  # noqa: E731
        elif op in _STEP or op in _TESTS:
            step = _STEP.get(op) or _TESTS[op]
            flip = lambda vals, m: step(vals[0] - m) != step(vals[0] + m)  # noqa: E731
        elif op == "lgamma":  # a pole (0, -1, -2, ...) within the operand's error: +inf either side
            flip = lambda vals, m: np.ceil(vals[0] - m) <= np.minimum(np.floor(vals[0] + m), 0)  # noqa: E731

        def dc(vals, dcs, margins):
            out = functools.reduce(np.logical_or, [d for d in dcs if d is not None], None) \
                if any(d is not None for d in dcs) else None
            known = [m for m in margins or [] if m is not None]
            if flip is not None and known:
                m = sum(known)
                f = (m > 0) & flip(vals, m)
                out = f if out is None else out | f
            return out
        return dc, flip is not None

    # -------------------------------------------------------------- evaluation
    def evaluate(self, inputs: list[np.ndarray], rounding: bool = True) -> list[np.ndarray]:
        return self.expected(inputs, rounding)[0]

    def evaluate_with_magnitudes(self, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return self.expected(inputs)[:2]

    def expected(self, inputs: list[np.ndarray], rounding: bool = True):
        """The outputs (floats as float64, i1 as bool, i64 as int64), the magnitudes their
        rounding errors scale with (`_magnitude`) and their don't-care masks (None: none).
        `rounding=False` computes float casts and constants as the reference interpreter's f64
        mode does, in float64 without rounding."""
        env = {a.name: _as(x, a.dtype) for a, x in zip(self.args, inputs)}
        mag = {n: np.abs(x.astype(np.float64)) for n, x in env.items()}
        dc: dict[str, np.ndarray | None] = dict.fromkeys(env)
        for st in self.steps:
            vals = [env[o] for o in st.operands]
            fn = st.fn if rounding or st.unrounded is None else st.unrounded
            # exp(-x) of a very negative x: inf, and sigmoid 0, as meant; NaN only where made on purpose
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                out, m = fn(*vals), st.mag(vals, [mag[o] for o in st.operands])
                margins = [self._margin(o, env[o], mag[o]) for o in st.operands] if st.needs_margin else None
                d = st.dc(vals, [dc[o] for o in st.operands], margins)
            many = len(st.outs) > 1
            for n, x, y in zip(st.outs, out if many else [out], m if many else [m]):
                v = self.info[n]
                env[n] = _as(x, v.dtype)
                mag[n] = (np.abs(env[n].astype(np.float64)) if v.dtype in DISCRETE else
                          np.broadcast_to(_unbounded(np.asarray(y, dtype=np.float64), env[n]), env[n].shape))
                dc[n] = None if d is None else np.broadcast_to(d, env[n].shape)
        names = [v.name for v in self.outputs]
        return [env[n] for n in names], [mag[n] for n in names], [dc[n] for n in names]

    def _margin(self, name: str, x: np.ndarray, magnitude: np.ndarray) -> np.ndarray | None:
        """How far the kernel's value may be from `x`: None (not at all) for an exact value, else
        the bound `mismatch` allows it."""
        v = self.info[name]
        if v.exact or v.dtype in DISCRETE:
            return None
        scale = max(float(np.max(np.abs(x), where=np.isfinite(x), initial=0.0)), 1e-3)
        return TOLERANCE[v.level] * (np.abs(x) + scale) + ROUNDING_SLACK * magnitude

    def check_key(self, v: Value) -> str:
        """How `mismatch` compares an output: i1 and i64 exactly, an exact float bit for bit, an
        inexact one to the looser tolerance of its dtype and its level."""
        if v.dtype in DISCRETE:
            return v.dtype
        return "exact" if v.exact else max(v.dtype, v.level, key=TOLERANCE.__getitem__)


def mismatch(got, want, dtype: str, magnitude=None, dontcare=None) -> str | None:
    """None if `got` matches the float64 `want` for an output of `dtype`, else a short reason.

    i1 and i64 (and "exact", a float the kernel must give bit for bit): every element equal
    (NaN to NaN). Floats: elementwise
    |got - want| <= tol * (|want| + max(max|want|, 1e-3)) + ROUNDING_SLACK * magnitude:
    relative to the element, with an absolute floor scaled by the output's magnitude and never
    below 1e-3 * tol (a value that cancels to 0 in float32 and to 1e-32 in float64, the variance
    of a constant row, is rounding, since inputs are of order 1), plus the rounding that the
    computation itself amplifies: a sum of 1000 terms of order 1 that cancels to 1e-13 in
    float64 is 1e-5 in float32, and that is not a wrong answer either. Elements where
    `dontcare` is set are not compared."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return f"shape {g.shape} != {w.shape}"
    skip = np.zeros(w.shape, bool) if dontcare is None else np.asarray(dontcare, bool)
    if dtype in DISCRETE:  # compared as integers, so that an i1 byte of 2 is not taken for true
        bad = g.astype(np.int64) != w.astype(np.int64)
    else:
        g, w = g.astype(np.float64), w.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf; a bound past f64's range is inf
            if dtype == "exact":
                bad = ~((g == w) | (np.isnan(g) & np.isnan(w)))
            else:
                tol = TOLERANCE[dtype]
                finite = np.abs(w[np.isfinite(w)])  # (a NaN or inf in the output must not make it NaN)
                scale = float(np.max(finite)) if finite.size else 0.0
                slack = 0.0 if magnitude is None else ROUNDING_SLACK * np.asarray(magnitude, dtype=np.float64)
                allowed = tol * (np.abs(w) + max(scale, 1e-3)) + slack
                bad = ~(np.abs(g - w) <= allowed) & ~(np.isnan(g) & np.isnan(w))
                # an infinity matches only itself (the bound above is infinite there); equal ones
                # always (an integer past f16's range, cast, is inf in both: GPU fuzz seed 9080)
                bad = (bad | ((np.isinf(g) | np.isinf(w)) & ~np.isnan(w))) & (g != w)
                # A value past the dtype's largest finite one rounds to infinity (f16: from 65520 on):
                # the kernel's inf is right where the exact value is within its allowed error of that
                # threshold (tan near a pole of a matmul's result: -28.75 exactly, -inf in f16 on an
                # H100, GPU fuzz seed 9402803).
                limit = OVERFLOW.get(dtype)
                if limit is not None:
                    bad &= ~(np.isinf(g) & (np.sign(g) == np.sign(w)) & (np.abs(w) + allowed >= limit * (1 - tol)))
    bad &= ~skip
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), w.shape)
        unchecked = f" ({int(skip.sum())} don't-care)" if skip.any() else ""
        return (f"{int(bad.sum())} of {w.size} elements differ{unchecked}; first at {tuple(int(x) for x in i)}: "
                f"{g[i]} vs {w[i]}")
    return None
