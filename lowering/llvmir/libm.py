"""The f32 math library: transcendental `math` ops expanded into NVVM intrinsics and fma.

LLVM's NVPTX backend has no libm, so each supported op becomes a helper function
`float @__fuser_<fn>f(float %x)` (internal, alwaysinline) that module.py defines once per module;
ops_arith.py extends f16/bf16 operands to f32, truncates the result, and does vectors lane by
lane. f64 transcendentals are not supported (TranslationError).

* exp(x): 2^(x*log2 e) with ex2.approx.ftz, plus an fma-computed correction for the rounding of
  x*log2 e (so the error does not grow with |x|): about 1 ulp given a correctly rounded ex2,
  and ex2.approx adds at most 2^-22 relative error: overall about 2-3 ulp (< 4e-7 relative).
  Results below 2^-126 flush to zero (ftz).
* exp2/log2/rsqrt: ex2.approx.ftz / lg2.approx / rsqrt.approx (about 2 ulp).
* log(x) = lg2.approx(x) * ln 2: relative error about 2 ulp except near x = 1 where lg2.approx's
  absolute error (about 2^-22) dominates; log1p uses the classic u = 1 + x correction.
* tanh(x): |x| < 0.55: x + x^3 * P(x^2) (degree-4 fit); else sign(x) * (1 - 2 / (exp(2|x|) + 1)).
* erf(x): |x| < 1: x * P(x^2) (degree-5 fit); else sign(x) * (1 - exp(R(min(|x|, 4) - 2.5)))
  with R a degree-8 fit of log(erfc); erfc(4) is below half an ulp of 1.

The polynomial coefficients below were fitted with numpy (least squares on Chebyshev nodes) and
are checked by test/python/test_nvvm_translation.py, which evaluates the same sequences in
numpy float32: max relative error about 1.2e-7 (exp), 1.9e-7 (tanh), 1.7e-7 (erf).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from .emitter import Emitter

# -------------------------------------------------------------------------------------------
# Polynomial coefficients (float32 values, lowest degree first).
# -------------------------------------------------------------------------------------------

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
EXP_CLAMP = (-104.0, 89.0)  # exp(-104) flushes to 0 (ftz), exp(89) overflows to inf

TANH_SMALL = 0.55
# tanh(x) = x + x^3 * P(x^2) for |x| < TANH_SMALL
TANH_POLY = (
    -0.33333316445350647,
    0.13332580029964447,
    -0.053851865231990814,
    0.02107025310397148,
    -0.006272607482969761,
)

ERF_SMALL = 1.0
# erf(x) = x * P(x^2) for |x| < ERF_SMALL
ERF_SMALL_POLY = (
    1.1283791065216064,
    -0.37612318992614746,
    0.11280130594968796,
    -0.02670994959771633,
    0.004916023463010788,
    -0.0005625396152026951,
)
ERF_CLAMP = 4.0
ERF_CENTER = 2.5
# log(erfc(t)) = R(t - ERF_CENTER) for ERF_SMALL <= t <= ERF_CLAMP
ERF_LARGE_POLY = (
    -7.806815147399902,
    -5.352680683135986,
    -0.9438936114311218,
    -0.01085851714015007,
    0.0021651603747159243,
    -0.0004201445553917438,
    7.739442662568763e-05,
    -1.3309389942151029e-05,
    1.6140616025950294e-06,
)

# -------------------------------------------------------------------------------------------
# Helper bodies: each takes the emitter of the helper function and its argument (%x) and
# returns the value to return.
# -------------------------------------------------------------------------------------------


def _exp(e: Emitter, x: str) -> str:
    lo, hi = EXP_CLAMP
    x = e.call("float", "llvm.maximum.f32", [("float", x), ("float", e.f(lo))])
    x = e.call("float", "llvm.minimum.f32", [("float", x), ("float", e.f(hi))])
    t = e.fbin("fmul", x, e.f(LOG2E))
    # err = x*log2e - t, exactly (fma), plus the part of log2e that float cannot hold.
    err = e.fma(x, e.f(LOG2E), e.inst(f"fneg float {t}"))
    err = e.fma(x, e.f(LOG2E - float(struct.unpack("<f", struct.pack("<f", LOG2E))[0])), err)
    p = e.call("float", "llvm.nvvm.ex2.approx.ftz.f", [("float", t)])
    # 2^(t + err) = 2^t * (1 + err*ln2); keep inf as inf (inf * small + inf could be NaN).
    r = e.fma(p, e.fbin("fmul", err, e.f(LN2)), p)
    is_inf = e.inst(f"fcmp oeq float {p}, {e.f(math.inf)}")
    return e.inst(f"select i1 {is_inf}, float {p}, float {r}")


def _exp2(e: Emitter, x: str) -> str:
    return e.call("float", "llvm.nvvm.ex2.approx.ftz.f", [("float", x)])


def _log2(e: Emitter, x: str) -> str:
    return e.call("float", "llvm.nvvm.lg2.approx.f", [("float", x)])


def _log(e: Emitter, x: str) -> str:
    return e.fbin("fmul", _log2(e, x), e.f(LN2))


def _log10(e: Emitter, x: str) -> str:
    return e.fbin("fmul", _log2(e, x), e.f(math.log10(2.0)))


def _log1p(e: Emitter, x: str) -> str:
    # log1p(x) = log(u) * x / (u - 1) with u = 1 + x (exact correction of u's rounding).
    u = e.fbin("fadd", x, e.f(1.0))
    um1 = e.fbin("fsub", u, e.f(1.0))
    scaled = e.fbin("fdiv", e.fbin("fmul", _log(e, u), x), um1)
    is_one = e.inst(f"fcmp oeq float {um1}, {e.f(0.0)}")
    is_inf = e.inst(f"fcmp oeq float {u}, {e.f(math.inf)}")
    r = e.inst(f"select i1 {is_one}, float {x}, float {scaled}")
    return e.inst(f"select i1 {is_inf}, float {u}, float {r}")


def _rsqrt(e: Emitter, x: str) -> str:
    return e.call("float", "llvm.nvvm.rsqrt.approx.f", [("float", x)])


def _tanh(e: Emitter, x: str) -> str:
    ax = e.call("float", "llvm.fabs.f32", [("float", x)])
    # small |x|: x + x^3 * P(x^2)
    s = e.fbin("fmul", x, x)
    small = e.fma(e.fbin("fmul", x, s), e.horner(TANH_POLY, s), x)
    # large |x|: 1 - 2 / (exp(2|x|) + 1), with the sign of x
    ex = _exp(e, e.fbin("fmul", ax, e.f(2.0)))
    big = e.fbin("fsub", e.f(1.0), e.fbin("fdiv", e.f(2.0), e.fbin("fadd", ex, e.f(1.0))))
    big = e.call("float", "llvm.copysign.f32", [("float", big), ("float", x)])
    is_small = e.inst(f"fcmp olt float {ax}, {e.f(TANH_SMALL)}")  # false for NaN -> big -> NaN
    return e.inst(f"select i1 {is_small}, float {small}, float {big}")


def _erf(e: Emitter, x: str) -> str:
    ax = e.call("float", "llvm.fabs.f32", [("float", x)])
    small = e.fbin("fmul", x, e.horner(ERF_SMALL_POLY, e.fbin("fmul", x, x)))
    t = e.call("float", "llvm.minimum.f32", [("float", ax), ("float", e.f(ERF_CLAMP))])
    r = e.horner(ERF_LARGE_POLY, e.fbin("fsub", t, e.f(ERF_CENTER)))
    big = e.fbin("fsub", e.f(1.0), _exp(e, r))
    big = e.call("float", "llvm.copysign.f32", [("float", big), ("float", x)])
    is_small = e.inst(f"fcmp olt float {ax}, {e.f(ERF_SMALL)}")
    return e.inst(f"select i1 {is_small}, float {small}, float {big}")


# math op name -> the body of its f32 helper
MATH_HELPERS: dict[str, Callable[[Emitter, str], str]] = {
    "math.exp": _exp,
    "math.exp2": _exp2,
    "math.log": _log,
    "math.log2": _log2,
    "math.log10": _log10,
    "math.log1p": _log1p,
    "math.rsqrt": _rsqrt,
    "math.tanh": _tanh,
    "math.erf": _erf,
}
