"""The f64 math library: transcendental `math` ops of f64 operands, computed in f64 registers.

Each op becomes a helper `double @__fuser_<fn>(double %x)` (internal, alwaysinline) that
module.py defines once per module (`MATH_F64`, `MATH_F64_2` for two operands). Where a result must
be better than one f64 rounding of an intermediate, the helpers carry a double-double (a value as
an unevaluated sum hi + lo, ~106 bits: double_double.py). The quadrant selection and exact mod 4
of the trigonometric reduction are libm.py's (its f32 helpers compute those in f64 too). Constants (ln 2, pi/2, 2/pi)
come from decimal expansions (pi by Machin's formula in Python integers), split into doubles.

Accuracy, measured on the host (test/python/test_libm_f64.py: the same helpers JIT-compiled for
the CPU, against mpmath at 150 bits on random sweeps over every scale, tiny and subnormal
arguments, large ones and the special values, which match C's bit for bit). The figure after each
is the largest distance seen from the correctly rounded result, in ulp (0: correctly rounded on
every sample):

* log, log2, log10 (0): y = m 2^k, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s),
  s = (m - 1) / (m + 1), all in double-double (`_log_dd`, ~2^-100 relative), times log2(e) or
  log10(e) in double-double. log1p (1): log of u = 1 + x plus log1p(c / u) of TwoSum's remainder c.
* exp, exp2 (1): 2^k e^r, |r| <= ln2 / 2, r a double-double (Cody-Waite with a 41-bit ln 2
  head), e^r - 1 by its Taylor series; 2^k applied in two halves (a subnormal result rounds once).
* expm1 (1): the same e^r - 1, then 2^k (e^r - 1) + (2^k - 1) in one fma.
* sinh, cosh, tanh (1): from expm1 and exp; exp(|x| / 2)^2 / 2 past 700.
* asinh, atanh (1), acosh (2): log1p of an argument with a rounding or two; log(2x) past 2^28.
* atan (1): b = |x| or 1/|x|, b A(b^2) below tan(pi/8), else pi/4 + atan((b - 1) / (b + 1)),
  Taylor to h^45; asin, acos (2) through it; atan2 (2) of min/max, reflected with two-part pi/2
  and pi.
* sin, cos (1), tan (2): x = k pi/2 + r with r a double-double: Cody-Waite (three-part pi/2)
  below |x| = 2^30, above a Payne-Hanek reduction in f64 (x in a 26-bit and a 27-bit half, times
  24-bit chunks of 2/pi from a 1200-bit table, each product exact, summed mod 4 in three parts,
  which keeps the known hard cases, such as 6381956970095103 2^797 and 5.319372648326541e255,
  within 1 ulp); sin r and cos r by Taylor series to r^23 and r^24.
* rsqrt (1): 1 / sqrt(x), both IEEE (sqrt.rn.f64, div.rn.f64).
* pow(|a|, b) (1; `fusion.pow` takes the sign and special cases apart): e^(b log|a|) with log|a|
  a double-double and b log|a| one too; |a| = 1 gives 1.
* fmod (exact): the remainder of the 53-bit mantissas, by shift-and-remainder steps of 11 bits.

* erf (1), erfc (2), gelu's erf form (3), erfinv (1), erfcinv (1): libm_erf_f64.py (their own
  module, built on this one's exp and log; math_f64.py puts the two tables together).

* lgamma (1 ulp for x > -1/2; 2 ulp below where |lgamma| >= 1/10, an absolute 3e-17 near its
  negative zeros): libm_lgamma_f64.py (its own module, built on this one's log).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from decimal import Decimal, localcontext

from .double_double import dd_add as _dd_add
from .double_double import dd_mul as _dd_mul
from .double_double import fast_two_sum as _fast_two_sum
from .double_double import neg as _neg
from .double_double import two_prod as _two_prod
from .double_double import two_sum as _two_sum
from .emitter import Emitter
from .libm import _by_quadrant, _keep_zero, _mod4


# -------------------------------------------------------------------------------------------
# Constants
# -------------------------------------------------------------------------------------------


def _pi_fixed(bits: int) -> int:
    """floor(pi * 2^bits), by Machin's formula pi = 16 atan(1/5) - 4 atan(1/239) in integers."""
    guard = bits + 32
    one = 1 << guard

    def atan_inv(n: int) -> int:
        total, term, k, sign = 0, one // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total
    return (16 * atan_inv(5) - 4 * atan_inv(239)) >> 32


_PREC = 1300
_PI = _pi_fixed(_PREC)  # pi * 2^_PREC


def _dec(numer: int, shift: int) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 120
        return Decimal(numer) / (Decimal(2) ** shift)


def _split(d: Decimal, parts: int) -> tuple[float, ...]:
    out = []
    with localcontext() as ctx:
        ctx.prec = 120
        for _ in range(parts):
            f = float(d)
            out.append(f)
            d = d - Decimal(f)
    return tuple(out)


_LN2_DEC = Decimal("0.69314718055994530941723212145817656807550013436025525412068000949339362196969471560586332699641868754")
_LN10_DEC = Decimal("2.3025850929940456840179914546843642076011014886287729760333279009675726096773524802359972050895982983")
with localcontext() as _ctx:
    _ctx.prec = 120
    _PIO2_DEC = _dec(_PI, _PREC + 1)
    _LOG2E_DEC = 1 / _LN2_DEC
    _LOG10E_DEC = 1 / _LN10_DEC
    _LOG10_2_DEC = _LN2_DEC / _LN10_DEC
    _THIRD_DEC = Decimal(1) / 3

LN2 = _split(_LN2_DEC, 2)
# ln 2 with a 41-bit head: k * LN2_HEAD is exact for |k| < 2^12 (every k exp and log meet)
LN2_HEAD = struct.unpack("<d", struct.pack("<Q", struct.unpack("<Q", struct.pack("<d", LN2[0]))[0] & ~0xFFF))[0]
LN2_TAIL = _split(_LN2_DEC - Decimal(LN2_HEAD), 2)
LOG2E = _split(_LOG2E_DEC, 2)
LOG10E = _split(_LOG10E_DEC, 2)
PIO2 = _split(_PIO2_DEC, 3)   # pi/2 = PIO2[0] + PIO2[1] + PIO2[2] (to ~2^-160)
PI = (2 * PIO2[0], 2 * PIO2[1])
THIRD = _split(_THIRD_DEC, 2)
TWO_OVER_PI = 1 / PIO2[0]  # (k = rint(x * it): a k off by one only widens |r| a little)
# 2/pi in 24-bit chunks: 2/pi = sum of PH_CHUNKS[i] * 2^(-24 (i + 1)); 50 chunks (1200 bits), enough
# for the exponent of every double (the reduction reads chunks (E - 54) // 24 to that plus 7)
_TWO_OVER_PI_BITS = ((1 << (2 * _PREC + 1)) // _PI)  # floor(2/pi * 2^_PREC)
PH_CHUNKS = tuple((_TWO_OVER_PI_BITS >> (_PREC - 24 * (i + 1))) & 0xFFFFFF for i in range(50))
PH_TERMS = 8
CODY_WAITE_LIMIT = 2.0 ** 30

# log: atanh(s)/s = 1 + z/3 + z^2 Q(z), z = s^2 <= 0.0295: Q's terms 1/(2i+1), i = 2..17
LOG_Q = tuple(1 / (2 * i + 1) for i in range(2, 18))
# e^r - 1 = r + r^2 H(r), |r| <= 0.347: H's terms 1/(n+2)!, to r^16 / 16!
EXP_H = tuple(1 / math.factorial(n + 2) for n in range(15))
# sin r = r + r^3 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2) on |r| <= pi/4 (to r^23, r^24)
SIN_S = tuple((-1) ** (i + 1) / math.factorial(2 * i + 3) for i in range(11))
COS_C = tuple((-1) ** i / math.factorial(2 * i + 4) for i in range(11))
# atan h = h A(h^2) for |h| <= tan(pi/8) (after one halving): Taylor to h^45
ATAN_A = tuple((-1) ** i / (2 * i + 1) for i in range(23))
EXP_CLAMP = (-746.0, 710.0)   # e^-746 rounds to 0, e^710 overflows
BIG = 2.0 ** 28               # asinh / acosh: log(2x) beyond


def _ddc(e: Emitter, c: tuple[float, ...]) -> tuple[str, str]:
    return e.d(c[0]), e.d(c[1])


def _bits(e: Emitter, x: str) -> str:
    return e.inst(f"bitcast double {x} to i64")


def _pow2(e: Emitter, k: str) -> str:
    """2^k as a double for an i64 k in [-1022, 1023]."""
    biased = e.inst(f"add i64 {k}, 1023")
    return e.inst(f"bitcast i64 {e.inst(f'shl i64 {biased}, 52')} to double")


# -------------------------------------------------------------------------------------------
# exp family
# -------------------------------------------------------------------------------------------


def _expm1_r(e: Emitter, rh: str, rl: str) -> str:
    """e^(rh + rl) - 1 for |rh| <= 0.35, |rl| <= 2^-50 |rh|: rh + rh^2 H(rh), plus rl (1 + that)."""
    q = e.dfma(e.dbin("fmul", rh, rh), e.dhorner(EXP_H, rh), rh)
    return e.dfma(rl, e.dbin("fadd", q, e.d(1.0)), q)


def _scale(e: Emitter, p: str, k: str) -> str:
    """p * 2^k for an i64 k in [-1076, 1024], in two halves (one rounding for a subnormal)."""
    k1 = e.inst(f"ashr i64 {k}, 1")
    k2 = e.inst(f"sub i64 {k}, {k1}")
    return e.dbin("fmul", e.dbin("fmul", p, _pow2(e, k1)), _pow2(e, k2))


def _reduce_ln2(e: Emitter, xh: str, xl: str) -> tuple[str, str, str]:
    """(k as a double, rh, rl) with xh + xl = k ln2 + rh + rl, |rh| <= ln2/2 (+ a little)."""
    k = e.dcall("rint", e.dbin("fmul", xh, e.d(LOG2E[0])))
    nk = _neg(e, k)
    head = e.dfma(nk, e.d(LN2_HEAD), xh)  # exact: k LN2_HEAD is exact and within a factor 2 of xh
    th, tl = _two_prod(e, nk, e.d(LN2_TAIL[0]))
    rh, rl = _two_sum(e, head, th)
    rl = e.dbin("fadd", rl, e.dfma(nk, e.d(LN2_TAIL[1]), e.dbin("fadd", tl, xl)))
    return k, *_fast_two_sum(e, rh, rl)


def _ki(e: Emitter, k: str) -> str:
    return e.inst(f"freeze i64 {e.inst(f'fptosi double {k} to i64')}")  # (a NaN: any k; the value is NaN)


def _exp_dd(e: Emitter, xh: str, xl: str) -> str:
    """e^(xh + xl), xh clamped to EXP_CLAMP (NaN kept)."""
    lo, hi = EXP_CLAMP
    xh = e.select(e.dcmp("olt", xh, e.d(lo)), "double", e.d(lo), xh)
    xh = e.select(e.dcmp("ogt", xh, e.d(hi)), "double", e.d(hi), xh)
    k, rh, rl = _reduce_ln2(e, xh, xl)
    p = e.dbin("fadd", e.d(1.0), _expm1_r(e, rh, rl))
    return _scale(e, p, _ki(e, k))


def _exp(e: Emitter, x: str) -> str:
    return _exp_dd(e, x, e.d(0.0))


def _exp2(e: Emitter, x: str) -> str:
    x = e.select(e.dcmp("olt", x, e.d(-1080.0)), "double", e.d(-1080.0), x)
    x = e.select(e.dcmp("ogt", x, e.d(1030.0)), "double", e.d(1030.0), x)
    k = e.dcall("rint", x)
    f = e.dbin("fsub", x, k)  # exact
    th, tl = _two_prod(e, f, e.d(LN2[0]))
    tl = e.dfma(f, e.d(LN2[1]), tl)
    k = e.select(e.dcmp("olt", k, e.d(-1076.0)), "double", e.d(-1076.0), k)
    k = e.select(e.dcmp("ogt", k, e.d(1024.0)), "double", e.d(1024.0), k)
    p = e.dbin("fadd", e.d(1.0), _expm1_r(e, th, tl))
    return _scale(e, p, _ki(e, k))


def _expm1(e: Emitter, x: str) -> str:
    """2^k (e^r - 1) + (2^k - 1) in one fma (2^k - 1 exact for |k| <= 53); e^r - 1 itself where
    k = 0 (-0 kept); e^x past x = 40 (the -1 is below its ulp), -1 below x = -40."""
    c = e.select(e.dcmp("olt", x, e.d(-40.0)), "double", e.d(-40.0), x)
    c = e.select(e.dcmp("ogt", c, e.d(40.0)), "double", e.d(40.0), c)
    k, rh, rl = _reduce_ln2(e, c, e.d(0.0))
    em = _expm1_r(e, rh, rl)
    two_k = _pow2(e, _ki(e, k))
    r = e.dfma(two_k, em, e.dbin("fsub", two_k, e.d(1.0)))
    r = e.select(e.dcmp("oeq", k, e.d(0.0)), "double", em, r)
    r = e.select(e.dcmp("ogt", x, e.d(40.0)), "double", _exp(e, x), r)
    return e.select(e.dcmp("oeq", x, e.d(0.0)), "double", x, r)


def _half_exp_big(e: Emitter, a: str) -> str:
    """e^a / 2 for a >= 0, finite up to a = 710.47: (e^(a/2) / 2) e^(a/2) past 700."""
    t = _exp(e, e.dbin("fmul", a, e.d(0.5)))
    big = e.dbin("fmul", e.dbin("fmul", t, e.d(0.5)), t)
    return e.select(e.dcmp("ogt", a, e.d(700.0)), "double", big, e.dbin("fmul", e.d(0.5), _exp(e, a)))


def _sinh(e: Emitter, x: str) -> str:
    a = e.dcall("fabs", x)
    m = _expm1(e, a)
    mid = e.dbin("fmul", e.d(0.5), e.dbin("fadd", m, e.dbin("fdiv", m, e.dbin("fadd", m, e.d(1.0)))))
    r = e.select(e.dcmp("ogt", a, e.d(22.0)), "double", _half_exp_big(e, a), mid)
    return e.dcall("copysign", r, x)


def _cosh(e: Emitter, x: str) -> str:
    a = e.dcall("fabs", x)
    ex = _exp(e, e.select(e.dcmp("ogt", a, e.d(22.0)), "double", e.d(22.0), a))
    mid = e.dbin("fmul", e.d(0.5), e.dbin("fadd", ex, e.dbin("fdiv", e.d(1.0), ex)))
    return e.select(e.dcmp("ogt", a, e.d(22.0)), "double", _half_exp_big(e, a), mid)


def _tanh(e: Emitter, x: str) -> str:
    a = e.dcall("fabs", x)
    m = _expm1(e, e.dbin("fmul", e.d(2.0), e.select(e.dcmp("ogt", a, e.d(22.0)), "double", e.d(22.0), a)))
    t = e.dbin("fdiv", m, e.dbin("fadd", m, e.d(2.0)))
    t = e.select(e.dcmp("ogt", a, e.d(22.0)), "double", e.d(1.0), t)
    return e.dcall("copysign", t, x)


# -------------------------------------------------------------------------------------------
# log family
# -------------------------------------------------------------------------------------------


def _log_dd(e: Emitter, y: str) -> tuple[str, str]:
    """log y as a double-double (~2^-100 relative). 0 gives (-inf, 0), negatives and NaN
    (NaN, 0), inf (inf, 0); subnormals are scaled by 2^54 first."""
    sub = e.dcmp("olt", y, e.d(2.0 ** -1022))
    ys = e.select(sub, "double", e.dbin("fmul", y, e.d(2.0 ** 54)), y)
    bits = _bits(e, ys)
    bias = e.inst(f"select i1 {sub}, i64 1077, i64 1023")
    k = e.inst(f"sub i64 {e.inst(f'lshr i64 {bits}, 52')}, {bias}")
    mant = e.inst(f"and i64 {bits}, 4503599627370495")
    m = e.inst(f"bitcast i64 {e.inst(f'or i64 {mant}, 4607182418800017408')} to double")  # in [1, 2)
    big = e.dcmp("ogt", m, e.d(math.sqrt(2.0)))
    m = e.select(big, "double", e.dbin("fmul", m, e.d(0.5)), m)
    k = e.inst(f"add i64 {k}, {e.inst(f'zext i1 {big} to i64')}")
    f = e.dbin("fsub", m, e.d(1.0))  # exact
    dh, dl = _fast_two_sum(e, e.d(2.0), f)  # 2 + f
    sh = e.dbin("fdiv", f, dh)
    sl = e.dbin("fdiv", e.dbin("fsub", e.dfma(_neg(e, sh), dh, f), e.dbin("fmul", sh, dl)), dh)
    zh, zl = _two_prod(e, sh, sh)
    zl = e.dfma(e.dbin("fmul", e.d(2.0), sh), sl, zl)
    tail = e.dbin("fmul", e.dbin("fmul", zh, zh), e.dhorner(LOG_Q, zh))
    w = _dd_add(e, _dd_mul(e, (zh, zl), _ddc(e, THIRD)), (tail, e.d(0.0)))
    one_w = _dd_add(e, (e.d(1.0), e.d(0.0)), w)
    lh, ll = _dd_mul(e, (sh, sl), one_w)
    lh, ll = e.dbin("fmul", lh, e.d(2.0)), e.dbin("fmul", ll, e.d(2.0))
    kd = e.inst(f"sitofp i64 {k} to double")
    kh = e.dbin("fmul", kd, e.d(LN2_HEAD))  # exact
    t1, t2 = _two_prod(e, kd, e.d(LN2_TAIL[0]))
    kl = e.dfma(kd, e.d(LN2_TAIL[1]), t2)
    hi, lo = _dd_add(e, _dd_add(e, (kh, t1), (lh, ll)), (kl, e.d(0.0)))
    special = e.dcmp("une", e.dcall("fabs", e.dbin("fsub", y, y)), e.d(0.0))  # inf or NaN (inf - inf)
    special = e.inst(f"or i1 {special}, {e.dcmp('ole', y, e.d(0.0))}")
    val = e.select(e.dcmp("oeq", y, e.d(0.0)), "double", e.d(-math.inf), y)
    val = e.select(e.dcmp("olt", y, e.d(0.0)), "double", e.d(math.nan), val)
    return e.select(special, "double", val, hi), e.select(special, "double", e.d(0.0), lo)


def _log(e: Emitter, x: str) -> str:
    hi, lo = _log_dd(e, x)
    return e.dbin("fadd", hi, lo)


def _log_times(c: tuple[float, ...]) -> Callable[[Emitter, str], str]:
    def body(e: Emitter, x: str) -> str:
        hi, lo = _log_dd(e, x)
        rh, rl = _dd_mul(e, (hi, lo), _ddc(e, c))
        finite = e.dcmp("one", e.dcall("fabs", hi), e.d(math.inf))
        return e.select(finite, "double", e.dbin("fadd", rh, rl), hi)  # (NaN and +-inf as they are)
    return body


_log2 = _log_times(LOG2E)
_log10 = _log_times(LOG10E)


def _log1p(e: Emitter, x: str) -> str:
    """log(u) + c/u with u + c = 1 + x exactly (TwoSum); -0 and tiny x give x."""
    u, c = _two_sum(e, e.d(1.0), x)
    hi, lo = _log_dd(e, u)
    cu = e.dbin("fdiv", c, u)  # log(1 + cu) = cu - cu^2 / 2 (|cu| <= 2^-53)
    r = e.dbin("fadd", hi, e.dbin("fadd", lo, e.dfma(e.dbin("fmul", e.d(-0.5), cu), cu, cu)))
    r = e.select(e.dcmp("one", e.dcall("fabs", hi), e.d(math.inf)), "double", r, hi)
    r = e.select(e.dcmp("oeq", x, e.d(math.inf)), "double", x, r)
    return e.select(e.dcmp("oeq", x, e.d(0.0)), "double", x, r)


def _log_2x(e: Emitter, a: str) -> str:
    """log(2a) for large a: log a + ln 2 in double-double."""
    hi, lo = _log_dd(e, a)
    rh, rl = _dd_add(e, (hi, lo), _ddc(e, LN2))
    return e.select(e.dcmp("oeq", a, e.d(math.inf)), "double", a, e.dbin("fadd", rh, rl))


def _asinh(e: Emitter, x: str) -> str:
    a = e.dcall("fabs", x)
    small = e.select(e.dcmp("ogt", a, e.d(BIG)), "double", e.d(1.0), a)
    a2 = e.dbin("fmul", small, small)
    t = e.dbin("fadd", small, e.dbin("fdiv", a2, e.dbin("fadd", e.d(1.0), e.dcall("sqrt", e.dbin("fadd", a2, e.d(1.0))))))
    r = e.select(e.dcmp("ogt", a, e.d(BIG)), "double", _log_2x(e, a), _log1p(e, t))
    return e.dcall("copysign", r, x)


def _acosh(e: Emitter, x: str) -> str:
    small = e.select(e.dcmp("ogt", x, e.d(BIG)), "double", e.d(2.0), x)
    t = e.dbin("fsub", small, e.d(1.0))
    t = e.dbin("fadd", t, e.dcall("sqrt", e.dbin("fmul", t, e.dbin("fadd", small, e.d(1.0)))))  # x < 1: NaN
    r = e.select(e.dcmp("ogt", x, e.d(BIG)), "double", _log_2x(e, x), _log1p(e, t))
    return e.select(e.dcmp("ult", x, e.d(1.0)), "double", e.d(math.nan), r)  # (NaN too)


def _atanh(e: Emitter, x: str) -> str:
    """log1p(2a + 2a^2 / (1 - a)) / 2 below a = 1/2, log1p(2a / (1 - a)) / 2 above (fdlibm's
    split), x's sign; 1 gives inf, |x| > 1 a NaN."""
    a = e.dcall("fabs", x)
    one_m = e.dbin("fsub", e.d(1.0), a)
    t2 = e.dbin("fadd", a, a)
    low = e.dbin("fadd", t2, e.dbin("fdiv", e.dbin("fmul", t2, a), one_m))
    high = e.dbin("fdiv", t2, one_m)
    r = e.dbin("fmul", e.d(0.5), _log1p(e, e.select(e.dcmp("olt", a, e.d(0.5)), "double", low, high)))
    r = e.select(e.dcmp("ogt", a, e.d(1.0)), "double", e.d(math.nan), r)
    return e.dcall("copysign", r, x)


# -------------------------------------------------------------------------------------------
# Inverse trigonometric
# -------------------------------------------------------------------------------------------


def _atan_d(e: Emitter, x: str) -> str:
    """atan: b = |x| or 1/|x| (<= 1); b A(b^2) for b <= tan(pi/8), else pi/4 + atan t with
    t = (b - 1) / (b + 1) in [-tan(pi/8), 0]; pi/2 - atan b (pi/2, pi/4 in two parts) where
    |x| > 1; x's sign."""
    a = e.dcall("fabs", x)
    inv = e.dcmp("ogt", a, e.d(1.0))
    b = e.select(inv, "double", e.dbin("fdiv", e.d(1.0), a), a)
    mid = e.dcmp("ogt", b, e.d(0.41421356237309503))
    t = e.dbin("fdiv", e.dbin("fsub", b, e.d(1.0)), e.dbin("fadd", b, e.d(1.0)))
    h = e.select(mid, "double", t, b)
    ah = e.dbin("fmul", h, e.dhorner(ATAN_A, e.dbin("fmul", h, h)))
    at = e.select(mid, "double", e.dbin("fadd", e.d(PIO2[0] / 2), e.dbin("fadd", ah, e.d(PIO2[1] / 2))), ah)
    far = e.dbin("fsub", e.d(PIO2[0]), e.dbin("fsub", at, e.d(PIO2[1])))
    return e.dcall("copysign", e.select(inv, "double", far, at), x)


def _asin(e: Emitter, x: str) -> str:
    """atan(x / sqrt(1 - x^2)), 1 - x^2 as fma(-x, x, 1) below |x| = 1/2, (1 - x)(1 + x) above."""
    product = e.dbin("fmul", e.dbin("fsub", e.d(1.0), x), e.dbin("fadd", e.d(1.0), x))
    small = e.dcmp("olt", e.dcall("fabs", x), e.d(0.5))
    root = e.dcall("sqrt", e.select(small, "double", e.dfma(_neg(e, x), x, e.d(1.0)), product))
    return _atan_d(e, e.dbin("fdiv", x, root))  # |x| > 1: sqrt(<0) = NaN


def _acos(e: Emitter, x: str) -> str:
    q = e.dbin("fdiv", e.dbin("fsub", e.d(1.0), x), e.dbin("fadd", e.d(1.0), x))
    return e.dbin("fmul", e.d(2.0), _atan_d(e, e.dcall("sqrt", q)))


def _atan2(e: Emitter, y: str, x: str) -> str:
    """a = atan(min / max) of |y| and |x| (in [0, pi/4]: 0/0 counts as 0, inf/inf as 1), then
    pi/2 - a where |y| > |x|, pi - a where x < 0 or x is -0, pi/2 + a where both (the constants
    in two parts, so nothing rounds twice); y's sign: C's special cases fall out."""
    ay, ax = e.dcall("fabs", y), e.dcall("fabs", x)
    steep = e.dcmp("ogt", ay, ax)
    t = e.dbin("fdiv", e.select(steep, "double", ax, ay), e.select(steep, "double", ay, ax))
    t = e.select(e.inst(f"and i1 {e.dcmp('oeq', ay, e.d(0.0))}, {e.dcmp('oeq', ax, e.d(0.0))}"), "double", e.d(0.0), t)
    both_inf = e.inst(f"and i1 {e.dcmp('oeq', ay, e.d(math.inf))}, {e.dcmp('oeq', ax, e.d(math.inf))}")
    t = e.select(both_inf, "double", e.d(1.0), t)
    a = _atan_d(e, t)
    x_negative = e.inst(f"icmp slt i64 {_bits(e, x)}, 0")
    up = e.dbin("fsub", e.d(PIO2[0]), e.dbin("fsub", a, e.d(PIO2[1])))    # pi/2 - a
    back = e.dbin("fsub", e.d(PI[0]), e.dbin("fsub", a, e.d(PI[1])))      # pi - a
    over = e.dbin("fadd", e.d(PIO2[0]), e.dbin("fadd", a, e.d(PIO2[1])))  # pi/2 + a
    r = e.select(steep, "double", e.select(x_negative, "double", over, up), e.select(x_negative, "double", back, a))
    r = e.select(e.dcmp("uno", x, y), "double", e.d(math.nan), r)
    return e.dcall("copysign", r, y)


# -------------------------------------------------------------------------------------------
# sin, cos, tan
# -------------------------------------------------------------------------------------------


def _chunk_table(e: Emitter) -> str:
    """The module's constant table of 2/pi's 24-bit chunks (as doubles); its name."""
    name = "__fuser_two_over_pi_chunks"
    values = ", ".join(f"double {float(c)!r}" for c in PH_CHUNKS)
    e.module.define_global(name, f"@{name} = internal unnamed_addr constant [{len(PH_CHUNKS)} x double] [{values}]")
    return name


def _reduce_large(e: Emitter, x: str) -> tuple[str, str, str]:
    """(rh, rl, k mod 4) for |x| >= 2^30: x = M 2^(E - 52); chunks i < i0 = (E - 54) // 24 of 2/pi
    give multiples of 4 (dropped); x, scaled by 2^(-24 i0) and split into a 26-bit and a 27-bit
    half, times chunks i0 .. i0 + 7 (each product exact), each taken mod 4 and summed in
    double-double; the fraction times pi/2."""
    table = _chunk_table(e)
    top = e.inst(f"lshr i64 {_bits(e, x)}, 52")
    ex = e.inst(f"sub i64 {e.inst(f'and i64 {top}, 2047')}, 1077")  # E - 54
    below = e.inst(f"icmp slt i64 {ex}, 0")
    i0 = e.inst(f"sdiv i64 {e.inst(f'select i1 {below}, i64 0, i64 {ex}')}, 24")
    ax = e.dcall("fabs", x)
    xs = e.dbin("fmul", ax, _pow2(e, e.inst(f"mul i64 {i0}, -24")))
    xh = e.inst(f"bitcast i64 {e.inst(f'and i64 {_bits(e, xs)}, -134217728')} to double")  # top 26 bits
    xl = e.dbin("fsub", xs, xh)
    th, tl, tll = e.d(0.0), e.d(0.0), e.d(0.0)  # the sum in three parts (the fraction may cancel to 2^-62)
    for j in range(PH_TERMS):
        idx = e.inst(f"add i64 {i0}, {j}")
        ptr = e.inst(f"getelementptr inbounds [{len(PH_CHUNKS)} x double], ptr @{table}, i64 0, i64 {idx}")
        c = e.dbin("fmul", e.inst(f"load double, ptr {ptr}"), e.d(2.0 ** (-24 * (j + 1))))
        for part in (xh, xl):
            m = _mod4(e, e.dbin("fmul", part, c))
            th, err = _two_sum(e, th, m)
            tl, err2 = _two_sum(e, tl, err)
            tll = e.dbin("fadd", tll, err2)
        th = _mod4(e, th)
    k = e.dcall("rint", e.dbin("fadd", th, tl))
    fh, fm = _two_sum(e, e.dbin("fsub", th, k), tl)
    fm, fl = _two_sum(e, fm, tll)
    fh, fm = _two_sum(e, fh, fm)
    fh, fl = _fast_two_sum(e, fh, e.dbin("fadd", fm, fl))
    rh, rl = _dd_mul(e, (fh, fl), _ddc(e, PIO2))
    neg = e.dcmp("olt", x, e.d(0.0))
    rh = e.select(neg, "double", _neg(e, rh), rh)
    rl = e.select(neg, "double", _neg(e, rl), rl)
    q = _mod4(e, e.select(neg, "double", _neg(e, k), k))
    return rh, rl, q


def _reduce_pio2(e: Emitter, x: str) -> tuple[str, str, str]:
    """(rh, rl, k mod 4): x = k pi/2 + rh + rl, |rh| <= pi/4 (+ a little); Cody-Waite below
    CODY_WAITE_LIMIT (k PIO2[0] subtracted exactly, k PIO2[1] as a two-product), above a branch
    to `_reduce_large`."""
    k = e.dcall("rint", e.dbin("fmul", x, e.d(TWO_OVER_PI)))
    nk = _neg(e, k)
    r1 = e.dfma(nk, e.d(PIO2[0]), x)  # exact
    ph, pl = _two_prod(e, nk, e.d(PIO2[1]))
    rh, rl = _two_sum(e, r1, ph)
    rl = e.dbin("fadd", rl, e.dfma(nk, e.d(PIO2[2]), pl))
    rh, rl = _fast_two_sum(e, rh, rl)
    q = _mod4(e, k)
    is_big = e.dcmp("oge", e.dcall("fabs", x), e.d(CODY_WAITE_LIMIT))  # (false for NaN and inf? inf: NaN below)
    is_big = e.inst(f"and i1 {is_big}, {e.dcmp('one', e.dcall('fabs', x), e.d(math.inf))}")
    entry, big, join = e.block, e.label("pio2_big"), e.label("pio2_join")
    e.emit(f"br i1 {is_big}, label %{big}, label %{join}")
    e.start_block(big)
    bh, bl, bq = _reduce_large(e, x)
    big_end = e.block
    e.emit(f"br label %{join}")
    e.start_block(join)
    rh = e.inst(f"phi double [ {rh}, %{entry} ], [ {bh}, %{big_end} ]")
    rl = e.inst(f"phi double [ {rl}, %{entry} ], [ {bl}, %{big_end} ]")
    q = e.inst(f"phi double [ {q}, %{entry} ], [ {bq}, %{big_end} ]")
    return rh, rl, q


def _sin_cos(e: Emitter, rh: str, rl: str) -> tuple[str, str]:
    """(sin r, cos r) of r = rh + rl, |r| <= pi/4."""
    z = e.dbin("fmul", rh, rh)
    s = e.dbin("fadd", rh, e.dfma(e.dbin("fmul", rh, z), e.dhorner(SIN_S, z),
                                  e.dbin("fmul", rl, e.dfma(e.d(-0.5), z, e.d(1.0)))))
    hz = e.dbin("fmul", e.d(0.5), z)
    w = e.dbin("fsub", e.d(1.0), hz)
    corr = e.dbin("fsub", e.dbin("fsub", e.dbin("fsub", e.d(1.0), w), hz), e.dbin("fmul", rl, rh))
    c = e.dbin("fadd", w, e.dfma(e.dbin("fmul", z, z), e.dhorner(COS_C, z), corr))
    return s, c


def _trig(e: Emitter, x: str) -> tuple[str, str, str, str]:
    """(sin, cos, -sin, -cos) of the reduced argument, its quadrant; inf gives NaN (inf - inf)."""
    rh, rl, q = _reduce_pio2(e, x)
    s, c = _sin_cos(e, rh, rl)
    return s, c, q


def _sin(e: Emitter, x: str) -> str:
    s, c, q = _trig(e, x)
    return _keep_zero(e, x, _by_quadrant(e, q, (s, c, _neg(e, s), _neg(e, c))))


def _cos(e: Emitter, x: str) -> str:
    s, c, q = _trig(e, x)
    return _by_quadrant(e, q, (c, _neg(e, s), _neg(e, c), s))


def _tan(e: Emitter, x: str) -> str:
    s, c, q = _trig(e, x)
    t, ncot = e.dbin("fdiv", s, c), _neg(e, e.dbin("fdiv", c, s))
    return _keep_zero(e, x, _by_quadrant(e, q, (t, ncot, t, ncot)))


# -------------------------------------------------------------------------------------------
# rsqrt, pow, fmod
# -------------------------------------------------------------------------------------------


def _rsqrt(e: Emitter, x: str) -> str:
    return e.dbin("fdiv", e.d(1.0), e.dcall("sqrt", x))


def _pow(e: Emitter, a: str, b: str) -> str:
    """|a| ** b = e^(b log|a|): log|a| as a double-double, b log|a| as one (a two-product), e^ of
    it; |a| = 1 gives 1 (whatever b), and a product that is not finite or past the clamp its head
    alone (0 ** -inf = inf, 0.5 ** inf = 0, ...)."""
    aa = e.dcall("fabs", a)
    lh, ll = _log_dd(e, aa)
    th, tl = _two_prod(e, b, lh)
    tl = e.dfma(b, ll, tl)
    wild = e.dcmp("uge", e.dcall("fabs", th), e.d(740.0))  # (NaN too)
    tl = e.select(wild, "double", e.d(0.0), tl)
    r = _exp_dd(e, th, tl)
    return e.select(e.dcmp("oeq", aa, e.d(1.0)), "double", e.d(1.0), r)


def _fmod(e: Emitter, a: str, b: str) -> str:
    """C's fmod, exact: with |a| = Ma 2^Ea and |b| = Mb 2^Eb (53-bit integer mantissas,
    subnormals included), |a| mod |b| = (Ma 2^(Ea - Eb) mod Mb) 2^Eb, the power taken 11 bits a
    step (r < 2^53: r 2^11 fits a u64) in a loop. The result has a's sign; |a| < |b| gives a;
    b = 0, an infinite a or a NaN give NaN."""
    def split(x: str) -> tuple[str, str]:  # (mantissa, biased exponent: 1 for subnormals)
        bits = _bits(e, x)
        ex = e.inst(f"and i64 {e.inst(f'lshr i64 {bits}, 52')}, 2047")
        frac = e.inst(f"and i64 {bits}, 4503599627370495")
        normal = e.inst(f"icmp ne i64 {ex}, 0")
        full = e.inst(f"or i64 {frac}, 4503599627370496")
        m = e.inst(f"select i1 {normal}, i64 {full}, i64 {frac}")
        return m, e.inst(f"select i1 {normal}, i64 {ex}, i64 1")
    ma, ea = split(a)
    mb, eb = split(b)
    zero_b = e.inst(f"icmp eq i64 {mb}, 0")
    mb = e.inst(f"select i1 {zero_b}, i64 1, i64 {mb}")  # (b = 0: NaN below)
    d = e.inst(f"sub i64 {ea}, {eb}")
    neg_d = e.inst(f"icmp slt i64 {d}, 0")
    d = e.inst(f"select i1 {neg_d}, i64 0, i64 {d}")
    r0 = e.inst(f"urem i64 {ma}, {mb}")
    entry, head, body, done = e.block, e.label("fmod_head"), e.label("fmod_body"), e.label("fmod_done")
    e.emit(f"br label %{head}")
    e.start_block(head)
    r = e.fresh("r")
    left = e.fresh("d")
    e.lines.append(f"  {r} = phi i64 [ {r0}, %{entry} ], [ %{body}_r, %{body} ]")
    e.lines.append(f"  {left} = phi i64 [ {d}, %{entry} ], [ %{body}_d, %{body} ]")
    more = e.inst(f"icmp sgt i64 {left}, 0")
    e.emit(f"br i1 {more}, label %{body}, label %{done}")
    e.start_block(body)
    short = e.inst(f"icmp slt i64 {left}, 11")
    step = e.inst(f"select i1 {short}, i64 {left}, i64 11")
    e.emit(f"%{body}_r = urem i64 {e.inst(f'shl i64 {r}, {step}')}, {mb}")
    e.emit(f"%{body}_d = sub i64 {left}, {step}")
    e.emit(f"br label %{head}")
    e.start_block(done)
    # r 2^(eb - 1075), in two halves (exact: a multiple of b's ulp below |b|)
    p = e.inst(f"sub i64 {eb}, 1075")
    p1 = e.inst(f"ashr i64 {p}, 1")
    mag = e.dbin("fmul", e.dbin("fmul", e.inst(f"uitofp i64 {r} to double"), _pow2(e, p1)),
                 _pow2(e, e.inst(f"sub i64 {p}, {p1}")))
    res = e.dcall("copysign", mag, a)
    aa, ab = e.dcall("fabs", a), e.dcall("fabs", b)
    res = e.select(e.dcmp("olt", aa, ab), "double", a, res)
    bad = e.inst(f"or i1 {e.dcmp('oeq', ab, e.d(0.0))}, {e.dcmp('oeq', aa, e.d(math.inf))}")
    bad = e.inst(f"or i1 {bad}, {e.dcmp('uno', aa, ab)}")
    return e.select(bad, "double", e.d(math.nan), res)


# math op name -> the body of its f64 helper double(double %x)
MATH_F64: dict[str, Callable[[Emitter, str], str]] = {
    "math.exp": _exp,
    "math.exp2": _exp2,
    "math.expm1": _expm1,
    "math.log": _log,
    "math.log2": _log2,
    "math.log10": _log10,
    "math.log1p": _log1p,
    "math.rsqrt": _rsqrt,
    "math.tanh": _tanh,
    "math.sinh": _sinh,
    "math.cosh": _cosh,
    "math.asinh": _asinh,
    "math.acosh": _acosh,
    "math.atanh": _atanh,
    "math.sin": _sin,
    "math.cos": _cos,
    "math.tan": _tan,
    "math.asin": _asin,
    "math.acos": _acos,
    "math.atan": _atan_d,
}
# two-operand op name -> the body of its f64 helper double(double %a, double %b)
MATH_F64_2: dict[str, Callable[[Emitter, str, str], str]] = {
    "math.atan2": _atan2,
    "math.powf": _pow,
    "arith.remf": _fmod,
}