"""The f32 math library: transcendental `math` ops expanded into NVVM intrinsics and fma.

LLVM's NVPTX backend has no libm, so each supported op becomes a helper function
`float @__fuser_<fn>f(float %x)` (internal, alwaysinline) that module.py defines once per module;
ops_arith.py extends f16/bf16 operands to f32, truncates the result, and does vectors lane by
lane. f64 operands have their own library, computed in f64 to f64 accuracy: libm_f64.py.

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
* sin cos tan asin acos atan sinh cosh asinh acosh atanh expm1 erfc erfinv erfcinv lgamma atan2:
  computed in f64 and rounded once (see the section below): correctly rounded on every sample
  of test/python/test_libm_accuracy.py, over the whole f32 range for sin, cos and tan; lgamma
  against mpmath at 100 bits over (0, 3), 400 floats around each of its zeros at 1 and 2 and
  around the twelve in (-8, -2), [2.5, 12], tiny x to subnormals, large x past the overflow
  point (4.085e36), negative non-integers to -8e6: at most 0.5 ulp (+1e-3) everywhere;
  erfcinv over (0, 2) down to 1e-45 and up to 2 - 1e-7 likewise.

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


# -------------------------------------------------------------------------------------------
# Trigonometric and hyperbolic functions: computed in f64 and rounded once to f32, so the
# polynomials are plain Taylor series (their truncation error is far below an f32 ulp) and the
# result is within about half an ulp of the true value. f64 costs more instructions than f32,
# but these ops appear in memory-bound kernels (rotary embeddings, activations).
# -------------------------------------------------------------------------------------------

# pi/2 as a sum of three doubles. Cody-Waite reduction r = x - k*pi/2 with one fma per part: the
# first is exact while |k| < 2^24 (|x| < 2.6e7), so r carries about 2^-52 relative error there;
# beyond, the error grows with k (about |x| * 2^-106 absolute).
PIO2 = (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33)
TWO_OVER_PI = 0.6366197723675814
# 2/pi = sum of TWO_OVER_PI_CHUNKS[i] * 2^(-26 (i + 1)): 208 bits, enough for every f32 |x| <= 2^128
TWO_OVER_PI_CHUNKS = (42722829, 48555073, 21659401, 56087029, 13858563, 28715353, 38736100, 4324945)
# sin r = r + r^3 * S(r^2), cos r = 1 + r^2 * C(r^2) on |r| <= pi/4: Taylor to r^13 and r^14.
SIN_TAYLOR = tuple((-1) ** (i + 1) / math.factorial(2 * i + 3) for i in range(6))
COS_TAYLOR = tuple((-1) ** (i + 1) / math.factorial(2 * i + 2) for i in range(7))
# atan h for |h| <= tan(pi/8) (after one argument halving): Taylor to h^21
ATAN_TAYLOR = tuple((-1) ** i / (2 * i + 1) for i in range(11))
LN2_HI, LN2_LO = 0.6931467056274414, 4.7493250390316726e-07  # LN2_HI * k exact for |k| < 2^11
EXP_TAYLOR = tuple(1 / math.factorial(i) for i in range(13))      # e^r, |r| <= ln2/2
EXPM1_TAYLOR = tuple(1 / math.factorial(i + 1) for i in range(14))  # (e^x - 1)/x, |x| < 1/2
# log m = 2 atanh(s), s = (m-1)/(m+1) in [-0.172, 0.172]: 2 * s * L(s^2), Taylor to s^21
LOG_TAYLOR = tuple(2 / (2 * i + 1) for i in range(11))
# erf a = a * T(a^2), Taylor: 2/sqrt(pi) * (-1)^n / (n! (2n + 1)), 34 terms (a < 2: below 1e-17)
ERF_TAYLOR = tuple(2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(34))
ERFC_SPLIT, ERFC_DEPTH = 2.0, 28  # the continued fraction at a >= 2 to 28 levels: below 1e-10 relative
# erfinv's first guess (Giles): p(w - 2.5) for w = -log(1 - a^2) < 5, else q(sqrt(w) - 3); z = p a
ERFINV_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                  -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
ERFINV_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
               0.00134934322, 0.000100950558, -0.000200214257)
ERFINV_NEWTON = 2  # the guess is good to ~1e-7 relative: two steps reach the f64 rounding
HYPER_CLAMP = 200.0  # e^200 is finite in f64 and infinite in f32: sinh/cosh saturate correctly


def _zeta_minus_one(k: int) -> float:
    """zeta(k) - 1 = sum over n >= 2 of n^-k (k >= 2), in float64: the first 63 terms summed
    exactly (fsum), the rest by Euler-Maclaurin to the B10 term (its error below 1e-20)."""
    n = 64
    head = math.fsum(m ** -k for m in range(2, n))
    bern = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66)
    tail = n ** (1 - k) / (k - 1) + 0.5 * n ** -k
    rising = k  # k (k + 1) ... (k + 2j - 2)
    for j, b in enumerate(bern, start=1):
        tail += b / math.factorial(2 * j) * rising * n ** (-k - 2 * j + 1)
        rising *= (k + 2 * j - 1) * (k + 2 * j)
    return head + tail


EULER_GAMMA = 0.5772156649015329
# lgamma(2 + t) = t * G(t), |t| <= 1/2 (Taylor: (1 - gamma) t + sum_k>=2 (-1)^k (zeta(k) - 1) / k t^k;
# the k-th term is below 4^-k / k there: 30 terms reach 1e-19)
LGAMMA_TAYLOR2 = (1 - EULER_GAMMA,) + tuple((-1) ** k * _zeta_minus_one(k) / k for k in range(2, 31))
# Stirling's series for z >= LGAMMA_STIRLING: (z - 1/2) log z - z + log(2 pi) / 2 + (1/z) S(1/z^2),
# S's terms B_2k / (2k (2k - 1)); the first term left out is below 3e-17 at z = 10.
LGAMMA_STIRLING = 10.0
LGAMMA_SHIFT = 8  # 2.5 <= x < 10: lgamma(x + 8) - log(x (x + 1) ... (x + 7))
STIRLING_SERIES = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400)
HALF_LOG_2PI = 0.9189385332046728
LOG_PI = 1.1447298858494002
# sin(pi r) = r * P(r^2) for |r| <= 1/2: Taylor, (-1)^k pi^(2k+1) / (2k+1)!, to r^25 (below 1e-18)
SINPI_TAYLOR = tuple((-1) ** k * math.pi ** (2 * k + 1) / math.factorial(2 * k + 1) for k in range(13))
ERFCINV_TINY = 1e-8  # erfc(z) = s below this: an asymptotic first guess (Giles' fit ends near 2^-24)
ERFCINV_NEWTON = 3   # log-space Newton steps for s < 1/2 (quadratic from ~1e-4 relative)


def _ext(e: Emitter, x: str) -> str:
    return e.inst(f"fpext float {x} to double")


def _round(e: Emitter, d: str) -> str:
    return e.inst(f"fptrunc double {d} to float")


def _reduce_pio2(e: Emitter, xd: str) -> tuple[str, str, str]:
    """(sin r, cos r, k mod 4 as a double) with x = k*pi/2 + r, |r| <= pi/4. Cody-Waite below
    |x| = 2^48 (measured correctly rounded to |x| = 1e15 on the host); above, a branch to the
    2/pi-chunk reduction (`_reduce_large`)."""
    k = e.dcall("rint", e.dbin("fmul", xd, e.d(TWO_OVER_PI)))
    nk = e.inst(f"fneg double {k}")
    r_small = xd
    for part in PIO2:
        r_small = e.dfma(nk, e.d(part), r_small)
    q_small = _mod4(e, k)
    is_big = e.dcmp("oge", e.dcall("fabs", xd), e.d(2.0 ** 48))  # (false for NaN: NaN flows on)
    entry, big, join = e.block, e.label("pio2_big"), e.label("pio2_join")
    e.emit(f"br i1 {is_big}, label %{big}, label %{join}")
    e.start_block(big)
    r_big, q_big = _reduce_large(e, xd)
    big_end = e.block
    e.emit(f"br label %{join}")
    e.start_block(join)
    r = e.inst(f"phi double [ {r_small}, %{entry} ], [ {r_big}, %{big_end} ]")
    q = e.inst(f"phi double [ {q_small}, %{entry} ], [ {q_big}, %{big_end} ]")
    r2 = e.dbin("fmul", r, r)
    sin_r = e.dfma(e.dbin("fmul", r, r2), e.dhorner(SIN_TAYLOR, r2), r)
    cos_r = e.dfma(r2, e.dhorner(COS_TAYLOR, r2), e.d(1.0))
    return sin_r, cos_r, q


def _mod4(e: Emitter, k: str) -> str:
    """k - 4 floor(k / 4): exact for any double k (k may exceed i64)."""
    return e.dbin("fsub", k, e.dbin("fmul", e.dcall("floor", e.dbin("fmul", k, e.d(0.25))), e.d(4.0)))


def _reduce_large(e: Emitter, xd: str) -> tuple[str, str]:
    """(r, k mod 4) for |x| >= 2^48, Payne-Hanek style in f64: x * 2/pi mod 4 as the sum of
    x * C_i mod 4 over the 26-bit chunks C_i of 2/pi (each product exact: 24 x 26 bits), summed
    with a running error term (TwoSum), so the fraction keeps ~100 bits whatever x's size."""
    total, err = e.d(0.0), e.d(0.0)
    for i, c in enumerate(TWO_OVER_PI_CHUNKS):
        p = e.dbin("fmul", xd, e.d(math.ldexp(c, -26 * (i + 1))))
        m = _mod4(e, p)
        s = e.dbin("fadd", total, m)  # TwoSum(total, m): s + its rounding error = total + m exactly
        bb = e.dbin("fsub", s, total)
        lost = e.dbin("fadd", e.dbin("fsub", total, e.dbin("fsub", s, bb)), e.dbin("fsub", m, bb))
        total, err = s, e.dbin("fadd", err, lost)
    k = e.dcall("rint", e.dbin("fadd", total, err))
    frac_hi = e.dbin("fsub", total, k)  # exact: total is within 1/2 + |err| of k
    r = e.dfma(frac_hi, e.d(PIO2[0]), e.dfma(frac_hi, e.d(PIO2[1]), e.dbin("fmul", err, e.d(PIO2[0]))))
    return r, _mod4(e, k)


def _by_quadrant(e: Emitter, q: str, values: tuple[str, str, str, str]) -> str:
    """values[q] for q in 0..3 (compared as doubles: a NaN q takes values[0], itself NaN then)."""
    out = values[0]
    for i in (1, 2, 3):
        out = e.select(e.dcmp("oeq", q, e.d(float(i))), "double", values[i], out)
    return out


def _keep_zero(e: Emitter, xd: str, r: str) -> str:
    """x itself where x is +-0 (the reduction's x - 0 * pi/2 turns -0 into +0; sin and tan are odd)."""
    return e.select(e.dcmp("oeq", xd, e.d(0.0)), "double", xd, r)


def _sin(e: Emitter, x: str) -> str:
    xd = _ext(e, x)
    s, c, q = _reduce_pio2(e, xd)
    ns, nc = e.inst(f"fneg double {s}"), e.inst(f"fneg double {c}")
    return _round(e, _keep_zero(e, xd, _by_quadrant(e, q, (s, c, ns, nc))))


def _cos(e: Emitter, x: str) -> str:
    s, c, q = _reduce_pio2(e, _ext(e, x))
    ns, nc = e.inst(f"fneg double {s}"), e.inst(f"fneg double {c}")
    return _round(e, _by_quadrant(e, q, (c, ns, nc, s)))


def _tan(e: Emitter, x: str) -> str:
    xd = _ext(e, x)
    s, c, q = _reduce_pio2(e, xd)
    t, cot = e.dbin("fdiv", s, c), e.dbin("fdiv", c, s)
    ncot = e.inst(f"fneg double {cot}")
    return _round(e, _keep_zero(e, xd, _by_quadrant(e, q, (t, ncot, t, ncot))))


def _atan_d(e: Emitter, xd: str) -> str:
    """atan in f64: |x| > 1 through pi/2 - atan(1/|x|), then one halving
    atan b = 2 atan(b / (1 + sqrt(1 + b^2))), then Taylor; the sign of x restored."""
    a = e.dcall("fabs", xd)
    inv = e.dcmp("ogt", a, e.d(1.0))
    b = e.select(inv, "double", e.dbin("fdiv", e.d(1.0), a), a)
    h = e.dbin("fdiv", b, e.dbin("fadd", e.d(1.0), e.dcall("sqrt", e.dfma(b, b, e.d(1.0)))))
    at = e.dbin("fmul", e.d(2.0), e.dbin("fmul", h, e.dhorner(ATAN_TAYLOR, e.dbin("fmul", h, h))))
    at = e.select(inv, "double", e.dbin("fsub", e.d(PIO2[0]), at), at)
    return e.dcall("copysign", at, xd)


def _atan(e: Emitter, x: str) -> str:
    return _round(e, _atan_d(e, _ext(e, x)))


def _asin(e: Emitter, x: str) -> str:
    # atan(x / sqrt((1 - x)(1 + x))): the product is exact in f64; |x| > 1 gives sqrt(<0) = NaN
    xd = _ext(e, x)
    root = e.dcall("sqrt", e.dbin("fmul", e.dbin("fsub", e.d(1.0), xd), e.dbin("fadd", e.d(1.0), xd)))
    return _round(e, _atan_d(e, e.dbin("fdiv", xd, root)))


def _acos(e: Emitter, x: str) -> str:
    # 2 atan(sqrt((1 - x) / (1 + x))): x = -1 gives 2 atan(inf) = pi; |x| > 1 a NaN
    xd = _ext(e, x)
    q = e.dbin("fdiv", e.dbin("fsub", e.d(1.0), xd), e.dbin("fadd", e.d(1.0), xd))
    return _round(e, e.dbin("fmul", e.d(2.0), _atan_d(e, e.dcall("sqrt", q))))


def _exp_d(e: Emitter, xd: str) -> str:
    """e^x in f64 for |x| <= 700: 2^k * e^r with r = x - k ln2 (two-part ln2), Taylor for e^r,
    2^k built in the exponent bits."""
    k = e.dcall("rint", e.dbin("fmul", xd, e.d(1.4426950408889634)))
    nk = e.inst(f"fneg double {k}")
    r = e.dfma(nk, e.d(LN2_LO), e.dfma(nk, e.d(LN2_HI), xd))
    p = e.dhorner(EXP_TAYLOR, r)
    ki = e.inst(f"freeze i64 {e.inst(f'fptosi double {k} to i64')}")  # (a NaN x: any k, p is NaN)
    bits = e.inst(f"shl i64 {e.inst(f'add i64 {ki}, 1023')}, 52")
    return e.dbin("fmul", p, e.inst(f"bitcast i64 {bits} to double"))


def _clamp_abs(e: Emitter, xd: str) -> str:
    """min(|x|, HYPER_CLAMP), NaN kept."""
    a = e.dcall("fabs", xd)
    return e.select(e.dcmp("ogt", a, e.d(HYPER_CLAMP)), "double", e.d(HYPER_CLAMP), a)


def _expm1_d(e: Emitter, xd: str) -> str:
    """e^x - 1 in f64 for x <= HYPER_CLAMP: Taylor below |x| = 1/2, else e^x - 1."""
    small = e.dbin("fmul", xd, e.dhorner(EXPM1_TAYLOR, xd))
    big = e.dbin("fsub", _exp_d(e, xd), e.d(1.0))
    return e.select(e.dcmp("olt", e.dcall("fabs", xd), e.d(0.5)), "double", small, big)


def _expm1(e: Emitter, x: str) -> str:
    xd = _ext(e, x)
    c = e.select(e.dcmp("ogt", xd, e.d(HYPER_CLAMP)), "double", e.d(HYPER_CLAMP), xd)
    c = e.select(e.dcmp("olt", c, e.d(-HYPER_CLAMP)), "double", e.d(-HYPER_CLAMP), c)
    return _round(e, _expm1_d(e, c))


def _sinh(e: Emitter, x: str) -> str:
    # (m + m / (m + 1)) / 2 with m = e^|x| - 1: no cancellation for small |x|
    xd = _ext(e, x)
    m = _expm1_d(e, _clamp_abs(e, xd))
    s = e.dbin("fmul", e.d(0.5), e.dbin("fadd", m, e.dbin("fdiv", m, e.dbin("fadd", m, e.d(1.0)))))
    return _round(e, e.dcall("copysign", s, xd))


def _cosh(e: Emitter, x: str) -> str:
    ex = _exp_d(e, _clamp_abs(e, _ext(e, x)))
    return _round(e, e.dbin("fmul", e.d(0.5), e.dbin("fadd", ex, e.dbin("fdiv", e.d(1.0), ex))))


def _log_d(e: Emitter, yd: str) -> str:
    """log y in f64 for normal doubles: y = m 2^k with m in [sqrt(1/2), sqrt(2)), log m by
    its atanh series; 0 gives -inf, negatives and NaN a NaN, inf stays inf."""
    bits = e.inst(f"bitcast double {yd} to i64")
    k = e.inst(f"sub i64 {e.inst(f'lshr i64 {bits}, 52')}, 1023")
    mantissa = e.inst(f"and i64 {bits}, 4503599627370495")  # the low 52 bits
    m = e.inst(f"bitcast i64 {e.inst(f'or i64 {mantissa}, 4607182418800017408')} to double")  # exponent of 1.0
    big = e.dcmp("ogt", m, e.d(math.sqrt(2.0)))
    m = e.select(big, "double", e.dbin("fmul", m, e.d(0.5)), m)
    k = e.inst(f"add i64 {k}, {e.inst(f'zext i1 {big} to i64')}")
    s = e.dbin("fdiv", e.dbin("fsub", m, e.d(1.0)), e.dbin("fadd", m, e.d(1.0)))
    logm = e.dbin("fmul", s, e.dhorner(LOG_TAYLOR, e.dbin("fmul", s, s)))
    kd = e.inst(f"sitofp i64 {k} to double")
    r = e.dfma(kd, e.d(LN2_HI), e.dfma(kd, e.d(LN2_LO), logm))
    r = e.select(e.dcmp("oeq", yd, e.d(math.inf)), "double", e.d(math.inf), r)
    r = e.select(e.dcmp("oeq", yd, e.d(0.0)), "double", e.d(-math.inf), r)
    return e.select(e.dcmp("ult", yd, e.d(0.0)), "double", e.d(math.nan), r)  # (ult: NaN too)


def _log1p_d(e: Emitter, td: str) -> str:
    """log(1 + t) in f64: log(u) * t / (u - 1) with u = 1 + t, which corrects u's rounding."""
    u = e.dbin("fadd", td, e.d(1.0))
    um1 = e.dbin("fsub", u, e.d(1.0))
    log_u = _log_d(e, u)
    r = e.dbin("fdiv", e.dbin("fmul", log_u, td), um1)
    r = e.select(e.dcmp("oeq", um1, e.d(0.0)), "double", td, r)
    r = e.select(e.dcmp("oeq", u, e.d(math.inf)), "double", u, r)
    return e.select(e.dcmp("ole", u, e.d(0.0)), "double", log_u, r)  # t = -1: -inf; below: NaN


def _asinh(e: Emitter, x: str) -> str:
    # log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x| (a^2 fits in f64 for every f32)
    xd = _ext(e, x)
    a = e.dcall("fabs", xd)
    a2 = e.dbin("fmul", a, a)
    t = e.dbin("fadd", a, e.dbin("fdiv", a2, e.dbin("fadd", e.d(1.0), e.dcall("sqrt", e.dbin("fadd", a2, e.d(1.0))))))
    t = e.select(e.dcmp("oeq", a, e.d(math.inf)), "double", a, t)  # (inf / inf above)
    return _round(e, e.dcall("copysign", _log1p_d(e, t), xd))


def _acosh(e: Emitter, x: str) -> str:
    # log1p((x - 1) + sqrt((x - 1)(x + 1))): x < 1 gives sqrt(<0) = NaN
    xd = _ext(e, x)
    xm1 = e.dbin("fsub", xd, e.d(1.0))
    t = e.dbin("fadd", xm1, e.dcall("sqrt", e.dbin("fmul", xm1, e.dbin("fadd", xd, e.d(1.0)))))
    return _round(e, _log1p_d(e, t))


def _atanh(e: Emitter, x: str) -> str:
    # log1p(2x / (1 - x)) / 2: x = 1 gives inf, -1 gives -inf, |x| > 1 a NaN
    xd = _ext(e, x)
    t = e.dbin("fdiv", e.dbin("fmul", e.d(2.0), xd), e.dbin("fsub", e.d(1.0), xd))
    return _round(e, e.dbin("fmul", e.d(0.5), _log1p_d(e, t)))


def _erfc(e: Emitter, x: str) -> str:
    """erfc in f64, for a = |x|: below ERFC_SPLIT, 1 - erf(a) by erf's Taylor series (erfc(2) is
    4.7e-3, so the subtraction loses little); above, exp(-a^2) / sqrt(pi) times the continued
    fraction 1 / (a + (1/2) / (a + 1 / (a + (3/2) / (a + ...)))) to ERFC_DEPTH levels, evaluated
    by its forward recurrence (all terms positive: stable, one division). a is clamped at 26
    (erfc(26) is 0 in f32; e^-676 is a normal double). erfc(-a) = 2 - erfc(a)."""
    return _round(e, _erfc_d(e, _ext(e, x)))  # (NaN: |NaN| fails every compare and stays NaN)


def _erfc_d(e: Emitter, xd: str) -> str:
    """erfc of a double (`_erfc`'s method), as a double."""
    a = e.dcall("fabs", xd)
    a = e.select(e.dcmp("ogt", a, e.d(26.0)), "double", e.d(26.0), a)
    entry, far, join = e.block, e.label("erfc_far"), e.label("erfc_join")
    near = e.dbin("fsub", e.d(1.0), e.dbin("fmul", a, e.dhorner(ERF_TAYLOR, e.dbin("fmul", a, a))))
    e.emit(f"br i1 {e.dcmp('oge', a, e.d(ERFC_SPLIT))}, label %{far}, label %{join}")
    e.start_block(far)
    # convergents A_k / B_k of a + a_1 / (a + a_2 / (a + ...)), a_k = k / 2
    a_prev, a_cur, b_prev, b_cur = e.d(1.0), a, e.d(0.0), e.d(1.0)
    for k in range(1, ERFC_DEPTH + 1):
        ak = e.d(k / 2.0)
        a_prev, a_cur = a_cur, e.dfma(a, a_cur, e.dbin("fmul", ak, a_prev))
        b_prev, b_cur = b_cur, e.dfma(a, b_cur, e.dbin("fmul", ak, b_prev))
    gauss = _exp_d(e, e.inst(f"fneg double {e.dbin('fmul', a, a)}"))
    tail = e.dbin("fdiv", e.dbin("fmul", gauss, b_cur), e.dbin("fmul", a_cur, e.d(math.sqrt(math.pi))))
    far_end = e.block
    e.emit(f"br label %{join}")
    e.start_block(join)
    c = e.inst(f"phi double [ {near}, %{entry} ], [ {tail}, %{far_end} ]")
    return e.select(e.dcmp("olt", xd, e.d(0.0)), "double", e.dbin("fsub", e.d(2.0), c), c)


def _erfinv(e: Emitter, x: str) -> str:
    """erfinv in f64: Giles' single-precision approximation ("Approximating the erfinv
    function", GPU Computing Gems) as the first guess for z = erfinv(a), a = |x|, then
    ERFINV_NEWTON Newton steps on erf(z) = a, the residual taken as erf(z) - a by erf's Taylor
    series while a <= 1/2 and as (1 - a) - erfc(z) above (1 - a is exact for an f32 a); x's
    sign at the end. +-1 -> +-inf, |x| > 1 -> NaN (the log of a negative), NaN -> NaN."""
    xd = _ext(e, x)
    a = e.dcall("fabs", xd)
    one_minus = e.dbin("fsub", e.d(1.0), a)
    w = e.inst(f"fneg double {_log_d(e, e.dbin('fmul', one_minus, e.dbin('fadd', e.d(1.0), a)))}")
    central = e.dhorner(ERFINV_CENTRAL, e.dbin("fsub", w, e.d(2.5)))
    tail = e.dhorner(ERFINV_TAIL, e.dbin("fsub", e.dcall("sqrt", w), e.d(3.0)))
    z = e.dbin("fmul", e.select(e.dcmp("olt", w, e.d(5.0)), "double", central, tail), a)
    small = e.dcmp("ole", a, e.d(0.5))
    for _ in range(ERFINV_NEWTON):
        by_erf = e.dbin("fsub", e.dbin("fmul", z, e.dhorner(ERF_TAYLOR, e.dbin("fmul", z, z))), a)
        by_erfc = e.dbin("fsub", one_minus, _erfc_d(e, z))
        residual = e.select(small, "double", by_erf, by_erfc)
        slope = e.dbin("fmul", e.d(2 / math.sqrt(math.pi)), _exp_d(e, e.inst(f"fneg double {e.dbin('fmul', z, z)}")))
        z = e.dbin("fsub", z, e.dbin("fdiv", residual, slope))
    z = e.select(e.dcmp("oeq", a, e.d(1.0)), "double", e.d(math.inf), z)
    bad = e.dcmp("ugt", a, e.d(1.0))  # (also NaN)
    z = e.select(bad, "double", e.d(math.nan), z)
    return _round(e, e.dcall("copysign", z, xd))


def _giles_guess(e: Emitter, a: str, w: str) -> str:
    """Giles' single-precision erfinv(a) from w = -log(1 - a^2) (`_erfinv`'s first guess)."""
    central = e.dhorner(ERFINV_CENTRAL, e.dbin("fsub", w, e.d(2.5)))
    tail = e.dhorner(ERFINV_TAIL, e.dbin("fsub", e.dcall("sqrt", w), e.d(3.0)))
    return e.dbin("fmul", e.select(e.dcmp("olt", w, e.d(5.0)), "double", central, tail), a)


def _erfcinv(e: Emitter, x: str) -> str:
    """erfcinv in f64: z with erfc(z) = y. With s = y (y <= 1) or 2 - y (exact; the result then
    negated), z >= 0 solves erfc(z) = s. For s >= 1/2 as `_erfinv` does for a = 1 - s (exact
    there): Giles' guess, ERFINV_NEWTON Newton steps on erf(z) = a. Below, where 1 - s would
    round (s of 1e-45 is an f32), s itself is the data: the guess is Giles' from
    w = -log(s (2 - s)), or for s < ERFCINV_TINY, past his fit, the asymptotic
    z^2 = -log s - log(z sqrt(pi) / (1 - 1/(2 z^2))) iterated three times from z = sqrt(-log s);
    then ERFCINV_NEWTON Newton steps on log(erfc(z) / s) = 0, which is nearly linear in z^2 out
    there. 0 -> inf, 2 -> -inf, outside [0, 2] and NaN -> NaN."""
    yd = _ext(e, x)
    upper = e.dcmp("ogt", yd, e.d(1.0))
    s = e.select(upper, "double", e.dbin("fsub", e.d(2.0), yd), yd)
    a = e.dbin("fsub", e.d(1.0), s)
    w = e.inst(f"fneg double {_log_d(e, e.dbin('fmul', s, e.dbin('fsub', e.d(2.0), s)))}")
    guess = _giles_guess(e, a, w)
    minus_log_s = e.inst(f"fneg double {_log_d(e, s)}")
    z = e.dcall("sqrt", minus_log_s)
    for _ in range(3):
        z2 = e.dbin("fmul", z, z)
        corr = e.dbin("fsub", e.d(1.0), e.dbin("fdiv", e.d(0.5), z2))
        arg = e.dbin("fdiv", e.dbin("fmul", z, e.d(math.sqrt(math.pi))), corr)
        z = e.dcall("sqrt", e.dbin("fsub", minus_log_s, _log_d(e, arg)))
    z = e.select(e.dcmp("olt", s, e.d(ERFCINV_TINY)), "double", z, guess)
    near = e.dcmp("oge", s, e.d(0.5))
    for i in range(max(ERFINV_NEWTON, ERFCINV_NEWTON)):
        zz = e.dbin("fmul", z, z)
        slope = e.dbin("fmul", e.d(2 / math.sqrt(math.pi)), _exp_d(e, e.inst(f"fneg double {zz}")))
        c = _erfc_d(e, z)
        by_erf = e.dbin("fdiv", e.dbin("fsub", e.dbin("fmul", z, e.dhorner(ERF_TAYLOR, zz)), a), slope)
        # log(erfc(z) / s) over its derivative -slope / erfc(z), negated: the same step sign as erf's
        by_log = e.inst(f"fneg double {e.dbin('fdiv', e.dbin('fmul', _log_d(e, e.dbin('fdiv', c, s)), c), slope)}")
        step = e.select(near, "double", by_erf if i < ERFINV_NEWTON else e.d(0.0), by_log)
        z = e.dbin("fsub", z, step)
    z = e.select(e.dcmp("oeq", s, e.d(0.0)), "double", e.d(math.inf), z)
    z = e.select(upper, "double", e.inst(f"fneg double {z}"), z)
    bad = e.inst(f"or i1 {e.dcmp('ult', yd, e.d(0.0))}, {e.dcmp('ogt', yd, e.d(2.0))}")  # (ult: NaN too)
    return _round(e, e.select(bad, "double", e.d(math.nan), z))


def _lgamma_positive(e: Emitter, a: str) -> str:
    """lgamma(a) in f64 for a >= 0 (inf at 0): below 2.5 from lgamma(2 + t) = t G(t), t = a - 2,
    a - 1 or a (exact), less log a (a in [1/2, 3/2)) or log(a (1 + a)) (a < 1/2); from 2.5
    Stirling's series at z = a + 8 (a < 10, less log(a (a + 1) ... (a + 7))) or at z = a."""
    low = e.dcmp("olt", a, e.d(2.5))
    below_half = e.dcmp("olt", a, e.d(0.5))
    below_1p5 = e.dcmp("olt", a, e.d(1.5))
    t = e.select(below_half, "double", a, e.select(below_1p5, "double", e.dbin("fsub", a, e.d(1.0)),
                                                    e.dbin("fsub", a, e.d(2.0))))
    taylor = e.dbin("fmul", t, e.dhorner(LGAMMA_TAYLOR2, t))
    shifted = e.dcmp("olt", a, e.d(LGAMMA_STIRLING))
    prod, term = e.d(1.0), a
    for _ in range(LGAMMA_SHIFT):
        prod = e.dbin("fmul", prod, term)
        term = e.dbin("fadd", term, e.d(1.0))
    z = e.select(shifted, "double", term, a)  # (term = a + 8)
    log_z = _log_d(e, z)
    rz = e.dbin("fdiv", e.d(1.0), z)
    series = e.dbin("fmul", rz, e.dhorner(STIRLING_SERIES, e.dbin("fmul", rz, rz)))
    stirling = e.dbin("fadd", e.dfma(e.dbin("fsub", z, e.d(0.5)), log_z, e.inst(f"fneg double {z}")),
                      e.dbin("fadd", e.d(HALF_LOG_2PI), series))
    # what is taken off: log of a (1 + a), a, 1 (a in [1.5, 2.5) or a >= 10) or the product
    low_arg = e.select(below_half, "double", e.dbin("fmul", a, e.dbin("fadd", a, e.d(1.0))),
                       e.select(below_1p5, "double", a, e.d(1.0)))
    arg = e.select(low, "double", low_arg, e.select(shifted, "double", prod, e.d(1.0)))
    return e.dbin("fsub", e.select(low, "double", taylor, stirling), _log_d(e, arg))


def _lgamma(e: Emitter, x: str) -> str:
    """log|gamma(x)| in f64, rounded once. x >= 0: `_lgamma_positive`; x < 0 by the reflection
    lgamma(x) = log(pi / (a |sin(pi a)|)) - lgamma(a), a = -x, sin(pi a) = +-sin(pi r) for the
    exact r = a - rint(a) in [-1/2, 1/2] (its Taylor series in r): a pole (x = 0 or a negative
    integer, every x <= -2^23) gives +inf as torch's; +-inf give +inf, NaN a NaN."""
    xd = _ext(e, x)
    a = e.dcall("fabs", xd)
    positive = _lgamma_positive(e, a)
    r = e.dbin("fsub", a, e.dcall("rint", a))
    sinpi = e.dcall("fabs", e.dbin("fmul", r, e.dhorner(SINPI_TAYLOR, e.dbin("fmul", r, r))))
    reflected = e.dbin("fsub", e.dbin("fsub", e.d(LOG_PI), _log_d(e, e.dbin("fmul", a, sinpi))), positive)
    out = e.select(e.dcmp("olt", xd, e.d(0.0)), "double", reflected, positive)
    out = e.select(e.dcmp("oeq", a, e.d(math.inf)), "double", e.d(math.inf), out)
    return _round(e, out)  # (NaN: every compare above fails, the NaN flows through)


def _atan2(e: Emitter, y: str, x: str) -> str:
    """atan(|y| / |x|) in f64, reflected to pi - it where x < 0 or x is -0, with y's sign: C's
    special cases fall out, save two made explicit (0 / 0 counts as 0, inf / inf as 1)."""
    yd, xd = _ext(e, y), _ext(e, x)
    ay, ax = e.dcall("fabs", yd), e.dcall("fabs", xd)
    t = e.dbin("fdiv", ay, ax)
    t = e.select(e.dcmp("oeq", ay, e.d(0.0)), "double", e.d(0.0), t)
    both_inf = e.inst(f"and i1 {e.dcmp('oeq', ay, e.d(math.inf))}, {e.dcmp('oeq', ax, e.d(math.inf))}")
    t = e.select(both_inf, "double", e.d(1.0), t)
    base = _atan_d(e, t)
    x_negative = e.inst(f"icmp slt i64 {e.inst(f'bitcast double {xd} to i64')}, 0")  # (-0 included)
    base = e.select(x_negative, "double", e.dbin("fsub", e.d(math.pi), base), base)
    base = e.select(e.dcmp("uno", xd, yd), "double", e.d(math.nan), base)  # (0 / NaN was made 0)
    return _round(e, e.dcall("copysign", base, yd))


def _fmod(e: Emitter, a: str, b: str) -> str:
    """C's fmod, exact (as `arith.remf` means; LLVM's `frem` on NVPTX is a - b * trunc(a / b),
    which loses the quotient's low bits). With a = Ma 2^Ea and b = Mb 2^Eb (24-bit integer
    mantissas, subnormals included), |a| mod |b| = ((Ma mod Mb) * (2^(Ea - Eb) mod Mb) mod Mb) 2^Eb
    for Ea >= Eb; 2^d mod Mb by square-and-multiply over d's 8 bits, in i64 (products < 2^48).
    The result has a's sign; |a| < |b| gives a; b = 0, an infinite a or a NaN give NaN."""
    def split(x: str) -> tuple[str, str]:  # (mantissa, exponent) with x = m 2^(e - 150)
        bits = e.inst(f"bitcast float {x} to i32")
        ex = e.inst(f"and i32 {e.inst(f'lshr i32 {bits}, 23')}, 255")
        frac = e.inst(f"and i32 {bits}, 8388607")
        normal = e.inst(f"icmp ne i32 {ex}, 0")
        m = e.inst(f"select i1 {normal}, i32 {e.inst(f'or i32 {frac}, 8388608')}, i32 {frac}")
        return e.inst(f"zext i32 {m} to i64"), e.inst(f"select i1 {normal}, i32 {ex}, i32 1")
    ma, ea = split(a)
    mb, eb = split(b)
    mb_safe = e.inst(f"select i1 {e.inst(f'icmp eq i64 {mb}, 0')}, i64 1, i64 {mb}")  # (b = 0: NaN below)
    d = e.inst(f"sub i32 {ea}, {eb}")
    d = e.inst(f"select i1 {e.inst(f'icmp slt i32 {d}, 0')}, i32 0, i32 {d}")
    power, base = e.inst(f"urem i64 1, {mb_safe}"), e.inst(f"urem i64 2, {mb_safe}")
    for bit in range(8):  # d <= 253
        on = e.inst(f"icmp ne i32 {e.inst(f'and i32 {d}, {1 << bit}')}, 0")
        times = e.inst(f"urem i64 {e.inst(f'mul i64 {power}, {base}')}, {mb_safe}")
        power = e.inst(f"select i1 {on}, i64 {times}, i64 {power}")
        base = e.inst(f"urem i64 {e.inst(f'mul i64 {base}, {base}')}, {mb_safe}")
    ma_mod = e.inst(f"urem i64 {ma}, {mb_safe}")
    r = e.inst(f"urem i64 {e.inst(f'mul i64 {ma_mod}, {power}')}, {mb_safe}")
    biased = e.inst(f"zext i32 {e.inst(f'add i32 {eb}, 873')} to i64")  # eb - 150 + 1023
    scale_bits = e.inst(f"shl i64 {biased}, 52")  # the double 2^(eb - 150)
    mag = e.dbin("fmul", e.inst(f"uitofp i64 {r} to double"), e.inst(f"bitcast i64 {scale_bits} to double"))
    a_d = _ext(e, a)
    res = e.dcall("copysign", mag, a_d)
    ad, bd = e.dcall("fabs", a_d), e.dcall("fabs", _ext(e, b))
    res = e.select(e.dcmp("olt", ad, bd), "double", a_d, res)  # (false for NaN, inf b: a kept)
    bad = e.inst(f"or i1 {e.dcmp('oeq', bd, e.d(0.0))}, {e.dcmp('oeq', ad, e.d(math.inf))}")
    bad = e.inst(f"or i1 {bad}, {e.dcmp('uno', ad, bd)}")
    return _round(e, e.select(bad, "double", e.d(math.nan), res))


# two-operand op name -> the body of its f32 helper float(float %a, float %b)
MATH_HELPERS2: dict[str, Callable[[Emitter, str, str], str]] = {"math.atan2": _atan2, "arith.remf": _fmod}

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
    "math.sin": _sin,
    "math.cos": _cos,
    "math.tan": _tan,
    "math.asin": _asin,
    "math.acos": _acos,
    "math.atan": _atan,
    "math.sinh": _sinh,
    "math.cosh": _cosh,
    "math.asinh": _asinh,
    "math.acosh": _acosh,
    "math.atanh": _atanh,
    "math.expm1": _expm1,
    "math.erfc": _erfc,
    "math.erfinv": _erfinv,
    "math.erfcinv": _erfcinv,
    "math.lgamma": _lgamma,
}
