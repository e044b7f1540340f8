"""The f64 lgamma: log|gamma(x)| computed in f64 registers, carried as a double-double (~106 bits,
double_double.py) to one rounding at the end (libm_f64.py's companion; its log is used here).

With a = |x| (x itself where |x| < 1/2), t an exact shift of a into [-1/2, 1/2) and
G(t) = lgamma(2 + t) / t (LGAMMA_G2, a polynomial of degree 20 fitted by tools/fit_lgamma_f64.py,
within 2e-17 relative with its coefficients rounded; t G(t) = t c0 + t^2 H(t) with t c0 a
double-double, c0 in two parts):

* |x| < 1/2: lgamma(x) = x G(x) - log(|x| (1 + x)), the product a double-double (|x| times the
  TwoSum of 1 + x); x's sign kept (gamma(2 + x) = x (1 + x) gamma(x) holds on (-1, 0) too), so
  tiny and subnormal x of either sign give -log|x| - gamma x with no reflection.
* a in [1/2, 3/2): t = a - 1 (exact), lgamma(a) = t G(t) - log a: the zero at 1 is t's, so the
  result keeps its relative accuracy there.
* a in [3/2, 8): m = floor(a - 3/2) in 0 .. 6, t = a - (m + 2) (exact), lgamma(a) =
  t G(t) + log((a - 1) (a - 2) ... (a - m)), every factor exact and the product a double-double
  (the zero at 2 is t's, with m = 0).
* a >= 8: Stirling, (a - 1/2)(log a - 1) + log(2 pi) / 2 - 1/2 + (1/a) S(1/a^2), log a a double-double
  (libm_f64's `_log_dd`; the branches share one), the product by a two-product, S's ten terms
  (B_2k / (2k (2k - 1)), to B_20; the first left out is below 2e-18 at a = 8). Past
  a ~ 2.556e305 the result overflows to +inf (as torch's).
* x <= -1/2: the reflection lgamma(x) = log(pi / (a |sin(pi a)|)) - lgamma(a), a = -x, with
  lgamma(a) as above (a double-double), |r| = |a - rint(a)| exact, sin(pi |r|) a double-double
  (`_sinpi_dd`: pi r + r^3 Q(r^2) to 1/4, cos(pi s) of s = 1/2 - |r| above, pi in two parts),
  a sin(pi |r|) a double-double and log pi in two parts.
* Poles: x = +-0, the negative integers (every x <= -2^52) and +-inf give +inf (torch's); NaN
  gives NaN.

Accuracy on the host JIT against mpmath at 150 bits (test/python/test_libm_f64.py: sweeps of
(0, 8], of Stirling's range to the overflow, of tiny and subnormal arguments of both signs, around
the zeros at 1 and 2, of negative non-integers to -2^52 and around the first negative zeros), the
largest distance from the correctly rounded result: 1 ulp for x > -1/2 (the zeros at 1 and 2
included: the exact shift t carries the zero, so the accuracy stays relative there); 2 ulp for
x <= -1/2 where |lgamma(x)| >= 1/10. Below that, near the negative zeros (x near -2.457, -2.748,
-3.144, -3.955, ...), the error is absolute, not relative: at most 2e-17 measured (3e-17
asserted), as the reflection's two terms cancel there. Special values as torch's (+inf at the
poles and at +-inf); the overflow comes where the true value passes the largest double (torch's
CPU lgamma gives +inf from ~2.5564e305, a little early).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .double_double import dd_add as _dd_add
from .double_double import fast_two_sum as _fast_two_sum
from .double_double import neg as _neg
from .double_double import two_prod as _two_prod
from .double_double import two_sum as _two_sum
from .emitter import Emitter
from .libm_f64 import PI, _log_dd

# Fitted by tools/fit_lgamma_f64.py (its output, as printed):
# G(t) = lgamma(2 + t) / t: fit error 3.64e-20 relative, 1.89e-17 with the coefficients rounded
LGAMMA_G2 = (0.42278433509846713, 0.3224670334241132, -0.06735230105319809, 0.02058080842778463, -0.007385551028674025, 0.0028905103307344045, -0.0011927539116998527, 0.0005096695250241955, -0.00022315475858818615, 9.94575066878814e-05, -4.4926233820610826e-05, 2.0507291996563825e-05, -9.439526202058818e-06, 4.374223481082048e-06, -2.0389077825677104e-06, 9.584207048594987e-07, -4.508168225446838e-07, 2.0193835401136915e-07, -9.558178101635195e-08, 6.472569840064724e-08, -3.085985478390577e-08)
LGAMMA_G2_C0_LO = 4.942915152430645e-18
STIRLING = (0.08333333333333333, -0.002777777777777778, 0.0007936507936507937, -0.0005952380952380953, 0.0008417508417508417, -0.0019175269175269176, 0.00641025641025641, -0.029550653594771242, 0.17964437236883057, -1.3924322169059011)
SINPI_Q = (-5.16771278004997, 2.5501640398773455, -0.5992645293207921, 0.08214588661112823, -0.0073704309457143504, 0.00046630280576761255, -2.1915353447830217e-05, 7.952054001475513e-07, -2.2948428997269873e-08)
COSPI_C = (4.0587121264167685, -1.3352627688545895, 0.2353306303588932, -0.02580689139001406, 0.0019295743094039231, -0.0001046381049248457, 4.303069587032947e-06, -1.3878952462213771e-07, 3.604730797462501e-09)
HALF_LOG_2PI = (0.9189385332046728, -3.8782941580672414e-17)
LOG_PI = (1.1447298858494002, 1.0265951162707826e-17)

LGAMMA_STIRLING = 8.0  # from here Stirling's series; below, shifts into [3/2, 5/2)
LGAMMA_SHIFTS = 6      # (a - 1) ... (a - m), m <= 6 below LGAMMA_STIRLING
NO_FRACTION = 2.0 ** 52  # every double from here is an integer


def _log_of_dd(e: Emitter, wh: str, wl: str) -> tuple[str, str]:
    """log(wh + wl) as a double-double, |wl| <= 2^-52 wh: log wh + log(1 + q), q = wl / wh."""
    lh, ll = _log_dd(e, wh)
    q = e.dbin("fdiv", wl, wh)
    return lh, e.dbin("fadd", ll, e.dfma(e.dbin("fmul", e.d(-0.5), q), q, q))


def _lgamma_core(e: Emitter, v: str) -> tuple[str, str]:
    """lgamma(v) as a double-double for |v| < 1/2 (either sign) and v >= 1/2 (the module
    docstring's first four cases; v = 0 and v = inf are the caller's)."""
    a = e.dcall("fabs", v)
    r0 = e.dcmp("olt", a, e.d(0.5))
    r1 = e.dcmp("olt", a, e.d(1.5))
    big = e.dcmp("oge", a, e.d(LGAMMA_STIRLING))
    # the shift: t = v, a - 1 or a - (m + 2), all exact
    m = e.dcall("floor", e.dbin("fsub", a, e.d(1.5)))
    t2 = e.dbin("fsub", a, e.dbin("fadd", m, e.d(2.0)))
    t = e.select(r0, "double", v, e.select(r1, "double", e.dbin("fsub", a, e.d(1.0)), t2))
    # t G(t) = t c0 + t^2 H(t): t c0 a double-double (c0 in two parts), the rest rounded once
    tg, tgl = _two_prod(e, t, e.d(LGAMMA_G2[0]))
    tgl = e.dfma(e.dbin("fmul", t, t), e.dhorner(LGAMMA_G2[1:], t), e.dfma(t, e.d(LGAMMA_G2_C0_LO), tgl))
    tg, tgl = _fast_two_sum(e, tg, tgl)
    # what the log is taken of: |v| (1 + v), a, or (a - 1) ... (a - m), each a double-double
    u, c = _two_sum(e, e.d(1.0), v)
    p0, p0l = _two_prod(e, a, u)
    p0l = e.dfma(a, c, p0l)
    ph, pl = e.d(1.0), e.d(0.0)
    for k in range(1, LGAMMA_SHIFTS + 1):
        f = e.select(e.dcmp("ole", e.d(float(k)), m), "double", e.dbin("fsub", a, e.d(float(k))), e.d(1.0))
        ph, err = _two_prod(e, ph, f)
        pl = e.dfma(pl, f, err)
    ph, pl = _fast_two_sum(e, ph, pl)
    not_r0 = e.inst(f"xor i1 {r0}, true")
    plain = e.inst(f"or i1 {big}, {e.inst(f'and i1 {r1}, {not_r0}')}")  # (log a)
    wh = e.select(r0, "double", p0, e.select(plain, "double", a, ph))
    wl = e.select(r0, "double", p0l, e.select(plain, "double", e.d(0.0), pl))
    lh, ll = _log_of_dd(e, wh, wl)
    # below 8: t G(t) -+ the log (minus below 3/2)
    minus = r1
    sh = e.select(minus, "double", _neg(e, lh), lh)
    sl = e.select(minus, "double", _neg(e, ll), ll)
    small = _dd_add(e, (tg, tgl), (sh, sl))
    # Stirling: a (log a - 1) - (log a - 1) / 2 + log(2 pi) / 2 - 1/2 + S(1/a^2) / a
    l1 = e.dbin("fsub", lh, e.d(1.0))  # exact (log a >= 2)
    qh, ql = _two_prod(e, a, l1)
    ql = e.dfma(a, ll, ql)
    st = _dd_add(e, (qh, ql), (e.dbin("fmul", e.d(-0.5), l1), e.dbin("fmul", e.d(-0.5), ll)))
    rz = e.dbin("fdiv", e.d(1.0), a)
    series = e.dbin("fmul", rz, e.dhorner(STIRLING, e.dbin("fmul", rz, rz)))
    st = _dd_add(e, st, (e.d(HALF_LOG_2PI[0] - 0.5), e.dbin("fadd", e.d(HALF_LOG_2PI[1]), series)))  # (exact)
    # past ~2.556e305 the product overflows: +inf (its tail would be a NaN)
    over = e.dcmp("oeq", qh, e.d(math.inf))
    hi = e.select(big, "double", e.select(over, "double", e.d(math.inf), st[0]), small[0])
    lo = e.select(big, "double", e.select(over, "double", e.d(0.0), st[1]), small[1])
    return hi, lo


def _pi_times(e: Emitter, r: str) -> tuple[str, str]:
    """pi r as a double-double (pi in two parts)."""
    h, l = _two_prod(e, r, e.d(PI[0]))
    return h, e.dfma(r, e.d(PI[1]), l)


def _sinpi_dd(e: Emitter, r: str) -> tuple[str, str]:
    """sin(pi r) as a double-double for r in [0, 1/2]: pi r + r^3 Q(r^2) up to 1/4, above
    cos(pi s) = 1 - (pi s)^2 / 2 + s^4 C(s^2), s = 1/2 - r (exact); the polynomial parts are at
    most a tenth of the result, so their roundings stay near 1e-17 of it."""
    ph, pl = _pi_times(e, r)
    r2 = e.dbin("fmul", r, r)
    near = _dd_add(e, (ph, pl), (e.dbin("fmul", e.dbin("fmul", r, r2), e.dhorner(SINPI_Q, r2)), e.d(0.0)))
    s = e.dbin("fsub", e.d(0.5), r)
    qh, ql = _pi_times(e, s)
    hh, hl = _two_prod(e, qh, qh)
    hl = e.dfma(e.dbin("fadd", qh, qh), ql, hl)  # (pi s)^2
    s2 = e.dbin("fmul", s, s)
    tail = e.dbin("fmul", e.dbin("fmul", s2, s2), e.dhorner(COSPI_C, s2))
    far = _dd_add(e, (e.d(1.0), tail), (e.dbin("fmul", e.d(-0.5), hh), e.dbin("fmul", e.d(-0.5), hl)))
    up = e.dcmp("ogt", r, e.d(0.25))
    return e.select(up, "double", far[0], near[0]), e.select(up, "double", far[1], near[1])


def _lgamma(e: Emitter, x: str) -> str:
    a = e.dcall("fabs", x)
    reflect = e.dcmp("ole", x, e.d(-0.5))
    core_h, core_l = _lgamma_core(e, e.select(reflect, "double", a, x))
    # the reflection: log pi - log(a |sin(pi r)|) - lgamma(a)
    ra = e.dcall("fabs", e.dbin("fsub", a, e.dcall("rint", a)))  # exact, in [0, 1/2]
    sh, sl = _sinpi_dd(e, ra)
    mh, ml = _two_prod(e, a, sh)
    ml = e.dfma(a, sl, ml)
    mh, ml = _fast_two_sum(e, mh, ml)
    lh, ll = _log_of_dd(e, mh, ml)
    refl = _dd_add(e, (e.d(LOG_PI[0]), e.d(LOG_PI[1])), (_neg(e, lh), _neg(e, ll)))
    refl = _dd_add(e, refl, (_neg(e, core_h), _neg(e, core_l)))
    hi = e.select(reflect, "double", refl[0], core_h)
    lo = e.select(reflect, "double", refl[1], core_l)
    r = e.dbin("fadd", hi, lo)
    r = e.select(e.dcmp("oeq", core_h, e.d(math.inf)), "double", e.d(math.inf), r)
    # poles: +-0, the negative integers (ra = 0: every x <= -2^52 too), +-inf
    pole = e.inst(f"and i1 {reflect}, {e.dcmp('oeq', ra, e.d(0.0))}")
    pole = e.inst(f"or i1 {pole}, {e.dcmp('oeq', a, e.d(0.0))}")
    pole = e.inst(f"or i1 {pole}, {e.dcmp('oeq', a, e.d(math.inf))}")
    r = e.select(pole, "double", e.d(math.inf), r)
    return e.select(e.dcmp("uno", x, x), "double", x, r)


# math op name -> the body of its f64 helper double(double %x) (math_f64.MATH_F64 has them all)
LGAMMA_F64: dict[str, Callable[[Emitter, str], str]] = {
    "math.lgamma": _lgamma,
}
