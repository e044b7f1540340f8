"""The f64 erf family: erf, erfc, gelu (erf form), erfinv and erfcinv, computed in f64 registers
to within a few ulp of the correctly rounded result (libm_f64.py's companion; its helpers and
double-double arithmetic are used here).

* erf, erfc of |x| < 1/2: erf x = x T(x^2), erf's Taylor series (ERF_T, to x^29); erfc = 1 - that
  in one fma (erfc > 0.47 there).
* erfc(a), a >= 1/2: e^(-a^2) erfcx(a), a^2 a double-double (a two-product) and e^ of it reduced
  as libm_f64's exp (k ln 2 + r, r a double-double); erfcx(a) = e^(a^2) erfc(a) is smooth and
  slowly varying, fitted (tools/fit_erf_f64.py, Chebyshev interpolants at 120 bits): below a = 4
  on 14 intervals of width 1/4, a polynomial of degree 11 in a - centre each (a constant table
  the helper indexes), above as erfcx(a) = H(1/a^2) / a, H of degree 14 on [0, 1/16]; each fit
  within 2.3e-18 relative. erfcx multiplies e^r before the scaling by 2^k (one rounding fewer).
  erfc(-a) = 2 - erfc(a); erf(a) = 1 - erfc(a) (erfc <= 0.48 there), x's sign. a past 28 gives
  erfc 0 (e^-746 rounds to 0).
* gelu(x) = x/2 (1 + erf(x / sqrt 2)) = x/2 erfc(y), y = -x / sqrt 2 as a double-double (1/sqrt 2
  in two parts): erfc's argument enters e^(-y^2), whose condition number 2 y^2 would magnify the
  rounding of y a thousandfold at x = -40; the tail of y goes into y^2 exactly. (No 1 + erf: it
  cancels for large negative x.)
* erfinv(a) and erfcinv: z >= 0 with erfc(z) = s, a = 1 - s (both exact: erfinv's s = 1 - |x|
  for |x| >= 1/2, erfcinv's a = 1 - s and s = 2 - y for y > 1, by Sterbenz). Where a <= 0.53: Giles'
  single-precision erfinv (libm.py's first guess), then ERFINV_NEWTON Newton steps on
  erf(z) = a by the Taylor series (z < 0.52). Where a > 0.53: the first guess is Giles' (s >= 1e-8)
  or the asymptotic z^2 = -log s - log(z sqrt(pi) / (1 - 1/(2 z^2))) iterated (libm.py's), then
  ERFCINV_NEWTON Newton steps on log erfc(z) - log s = 0, with log erfc(z) = -z^2 + log erfcx(z):
  -z^2, log erfcx(z) and log s are double-doubles, so no erfc is formed and s may be subnormal
  (erfcinv(5e-324) = 27.2); its derivative is -2 / (sqrt(pi) erfcx(z)).

Accuracy on the host JIT against mpmath at 150 bits (test/python/test_libm_f64.py: sweeps over
every scale, subnormal arguments, erfc down to its underflow, erfinv to 1 - 2^-53, erfcinv of
subnormals), the largest distance from the correctly rounded result seen: erf 1 ulp, erfc 2,
gelu 3 (a result near the subnormal range: x/2, erfcx and e^r each round once), erfinv 1,
erfcinv 1. Special values as C's (erf, erfc) and torch's (gelu(-inf) is NaN, erfinv(+-1) = +-inf,
erfcinv(0) = inf, erfcinv(2) = -inf, NaN outside the domains).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .double_double import dd_add as _dd_add
from .double_double import fast_two_sum as _fast_two_sum
from .double_double import neg as _neg
from .double_double import two_prod as _two_prod
from .emitter import Emitter
from .libm import ERFCINV_TINY, ERFINV_CENTRAL, ERFINV_TAIL
from .libm_f64 import EXP_CLAMP, _expm1_r, _ki, _log_dd, _reduce_ln2, _scale

# erf x = x T(x^2) for |x| < 1/2: Taylor, 2/sqrt(pi) (-1)^n / (n! (2n + 1)), to x^29 (the next term
# is below 1e-21 of the sum there)
ERF_T = tuple(2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(15))
ERF_SMALL = 0.5      # below: the Taylor series; above: erfc's e^(-a^2) erfcx(a)
ERFC_ZERO = 28.0     # erfc(a) rounds to 0 past this (the argument is clamped there)
ERFCX_START, ERFCX_STEP, ERFCX_COUNT, ERFCX_DEGREE = 0.5, 0.25, 14, 11  # (tools/fit_erf_f64.py)
ERFCX_END = ERFCX_START + ERFCX_STEP * ERFCX_COUNT  # 4: above, ERFC_ASYM in 1/a^2
RSQRT2 = (0.7071067811865476, -4.833646656726457e-17)  # 1/sqrt 2 = RSQRT2[0] + RSQRT2[1] (to ~2^-107)
SQRT_PI = 1.7724538509055159
TWO_RSQRTPI = (1.1283791670955126, 1.533545961316588e-17)  # 2/sqrt(pi) in two parts
ERFINV_SPLIT = 0.53  # erfinv(0.53) = 0.511: the series below, erfcx's table (from 1/2) above
ERFINV_NEWTON = 3    # from Giles' ~1e-7: 1e-14, then the rounding (a third step to spare)
ERFCINV_NEWTON = 4   # from the asymptotic guess (~1e-5 relative at s = 1e-8) quadratically

# Fitted by tools/fit_erf_f64.py (its output, as printed):
# erfcx fits: largest relative error 1.08e-18
ERFCX_TABLE = (
    (0.5568138808733625, -0.43236181600380946, 0.286587745870984, -0.16882964988963145, 0.0905346073431822, -0.04489820811899434, 0.020824409581205183, -0.0091094151496145, 0.003782695592344603, -0.0014989110049978508, 0.0005726279630028807, -0.00020902552235554318),
    (0.464311583202669, -0.3158338964908418, 0.18795692377318324, -0.10091439212620508, 0.049828415330766374, -0.022925811484302092, 0.009922776927405338, -0.004069537716571997, 0.0015904622736063875, -0.0005950744833733481, 0.0002151254639998011, -7.453699259223779e-05),
    (0.3956980795529959, -0.2380584881012718, 0.1278822804390654, -0.06279394840488244, 0.0286195442415685, -0.012238784453081762, 0.004950303970110052, -0.0019056264622925678, 0.0007016112060703613, -0.00024806563878487813, 8.492529808226711e-05, -2.7946426854363904e-05),
    (0.3432958898621254, -0.18431546997466777, 0.0898621186469573, -0.040503371223401134, 0.017084991607308836, -0.006804603105271702, 0.002576220801453373, -0.0009320855876790578, 0.0003236480309824724, -0.00010823602609943266, 3.512107741543196e-05, -1.0984229225264013e-05),
    (0.30226120936348594, -0.14603023666418335, 0.06496207478418803, -0.02697791009325192, 0.010561485441294908, -0.0039261985004293435, 0.0013938043014166737, -0.0004746475809666588, 0.0001556244194861436, -4.92788416256037e-05, 1.517048304856743e-05, -4.5129266478763354e-06),
    (0.2694299851646704, -0.11801672272799837, 0.048148630049673506, -0.018492027589907062, 0.0067380391592858436, -0.002343281666485157, 0.0007814620151027614, -0.0002508686851985858, 7.777036805920015e-05, -2.334397535351131e-05, 6.825088897806641e-06, -1.9328737776272523e-06),
    (0.24267036461265454, -0.09703011749173075, 0.03648136494272671, -0.013004811325624343, 0.004423070437881948, -0.0014423146580439463, 0.00045271726469296746, -0.000137225850042588, 4.027789652111821e-05, -1.1474379300230261e-05, 3.1895965703813367e-06, -8.607452856247888e-07),
    (0.22050569220490668, -0.08097712912220592, 0.028185010539667616, -0.009358486060330226, 0.0029793030731892186, -0.0009130565045994084, 0.00027026462558966805, -7.74794345670608e-05, 2.1562659692597378e-05, -5.837295734523925e-06, 1.5445061172038061e-06, -3.975590526851062e-07),
    (0.201887554546017, -0.06846950572892327, 0.02215510200759342, -0.006874908639327039, 0.002054233414678852, -0.0005930183703165845, 0.00016585339783779465, -4.50437720128559e-05, 1.1903336404548716e-05, -3.066083366206015e-06, 7.73116712839936e-07, -1.9000972916777728e-07),
    (0.1860549346844711, -0.05856329265980373, 0.01768546828753539, -0.005145047555426323, 0.0014467282828418285, -0.0003942814969016999, 0.00010438965989396246, -2.6903207209950058e-05, 6.760716998204656e-06, -1.6591281372432145e-06, 3.9915700079401674e-07, -9.376698452878646e-08),
    (0.1724443521021736, -0.05060196645692752, 0.014313206924275094, -0.003915463212378573, 0.0010386921927957693, -0.0002678200439563404, 6.72515185476265e-05, -1.647401393361567e-05, 3.94254758306532e-06, -9.230038235388725e-07, 2.1212527312790106e-07, -4.768008973757825e-08),
    (0.1606310681265444, -0.044119457241337846, 0.011727899937029176, -0.0030251966359095845, 0.000758930645417035, -0.00018552228305063564, 4.42643134089325e-05, -1.0322921554276099e-05, 2.356108943527815e-06, -5.268966961883706e-07, 1.1581384103819385e-07, -2.4934974438139703e-08),
    (0.15028972247426936, -0.03877867915705971, 0.009717010529927907, -0.0023696773240473664, 0.000563465115128035, -0.00013084651268318616, 2.971550223531322e-05, -6.607947759617024e-06, 1.4404206611585437e-06, -3.080917173109355e-07, 6.484510248431812e-08, -1.3387321945469595e-08),
    (0.1411674197630518, -0.034331663931861184, 0.0081322220270897, -0.001879535717925734, 0.00042451056006370484, -9.382291907148985e-05, 2.0315582896824868e-05, -4.314295825695791e-06, 8.994204583879374e-07, -1.8423020778443085e-07, 3.717307786154712e-08, -7.3667067104296745e-09),
)
# a erfcx(a) in u = 1/a^2: largest relative error 2.28e-18
ERFC_ASYM = (0.5641895835477563, -0.28209479177386904, 0.42314218764985156, -1.0578554639025195, 3.7024928157795367, -16.66101998761309, 91.6160794774487, -594.1802412031337, 4392.878616129174, -35155.132863932005, 279805.96462867485, -1978572.782195217, 10918856.299325591, -39917389.13290984, 70499286.15749022)


def _erfcx_table(e: Emitter) -> str:
    """The module's constant table of ERFCX_TABLE (row-major, lowest degree first); its name."""
    name = "__fuser_erfcx_table"
    n = ERFCX_COUNT * (ERFCX_DEGREE + 1)
    values = ", ".join(f"double {c!r}" for row in ERFCX_TABLE for c in row)
    e.module.define_global(name, f"@{name} = internal unnamed_addr constant [{n} x double] [{values}]")
    return name


def _erfcx(e: Emitter, a: str) -> str:
    """erfcx(a) = e^(a^2) erfc(a) for a in [ERFCX_START, ERFC_ZERO]: the interval's polynomial
    below ERFCX_END (index clamped, so any a reads inside the table), H(1/a^2) / a above."""
    table = _erfcx_table(e)
    n = ERFCX_COUNT * (ERFCX_DEGREE + 1)
    inside = e.dcall("minnum", e.dcall("maxnum", a, e.d(ERFCX_START)), e.d(ERFCX_END - ERFCX_STEP / 2))
    idx_f = e.dcall("floor", e.dbin("fmul", e.dbin("fsub", inside, e.d(ERFCX_START)), e.d(1 / ERFCX_STEP)))
    s = e.dbin("fsub", a, e.dfma(idx_f, e.d(ERFCX_STEP), e.d(ERFCX_START + ERFCX_STEP / 2)))  # a - centre
    base = e.inst(f"mul i64 {e.inst(f'fptosi double {idx_f} to i64')}, {ERFCX_DEGREE + 1}")

    def coeff(j: int) -> str:
        ptr = e.inst(f"getelementptr inbounds [{n} x double], ptr @{table}, i64 0, i64 {e.inst(f'add i64 {base}, {j}')}")
        return e.inst(f"load double, ptr {ptr}")
    near = coeff(ERFCX_DEGREE)
    for j in range(ERFCX_DEGREE - 1, -1, -1):
        near = e.dfma(near, s, coeff(j))
    u = e.dbin("fdiv", e.d(1.0), e.dbin("fmul", a, a))
    far = e.dbin("fdiv", e.dhorner(ERFC_ASYM, u), a)
    return e.select(e.dcmp("olt", a, e.d(ERFCX_END)), "double", near, far)


def _erfc_pos(e: Emitter, ah: str, al: str, times: str | None = None) -> str:
    """erfc(ah + al) (times `times`, if given) for ah in [1/2, ERFC_ZERO] (|al| <= 2^-52 ah):
    e^(-(ah + al)^2) erfcx(ah), the square a double-double and e^ of it as libm_f64's exp, erfcx
    (and the factor) folded in before the scaling by 2^k, so a subnormal result rounds once."""
    ph, pl = _two_prod(e, ah, ah)
    pl = e.dfma(e.dbin("fmul", e.d(2.0), ah), al, pl)
    xh, xl = _neg(e, ph), _neg(e, pl)
    xh = e.select(e.dcmp("olt", xh, e.d(EXP_CLAMP[0])), "double", e.d(EXP_CLAMP[0]), xh)
    k, rh, rl = _reduce_ln2(e, xh, xl)
    g = _erfcx(e, ah)
    if times is not None:
        g = e.dbin("fmul", g, times)
    return _scale(e, e.dfma(g, _expm1_r(e, rh, rl), g), _ki(e, k))


def _erf_series(e: Emitter, x: str) -> str:
    """T(x^2), erf x = x T(x^2) for |x| < ERF_SMALL."""
    return e.dhorner(ERF_T, e.dbin("fmul", x, x))


def _clamp_far(e: Emitter, a: str) -> str:
    """a in [ERF_SMALL, ERFC_ZERO] (NaN: ERF_SMALL; the callers select NaN apart)."""
    return e.dcall("minnum", e.dcall("maxnum", a, e.d(ERF_SMALL)), e.d(ERFC_ZERO))


def _keep_nan(e: Emitter, x: str, r: str) -> str:
    return e.select(e.dcmp("uno", x, x), "double", x, r)


def _erf(e: Emitter, x: str) -> str:
    a = e.dcall("fabs", x)
    near = e.dbin("fmul", x, _erf_series(e, x))
    far = e.dcall("copysign", e.dbin("fsub", e.d(1.0), _erfc_pos(e, _clamp_far(e, a), e.d(0.0))), x)
    return _keep_nan(e, x, e.select(e.dcmp("olt", a, e.d(ERF_SMALL)), "double", near, far))


def _erfc(e: Emitter, x: str) -> str:
    a = e.dcall("fabs", x)
    near = e.dfma(_neg(e, x), _erf_series(e, x), e.d(1.0))
    c = _erfc_pos(e, _clamp_far(e, a), e.d(0.0))
    far = e.select(e.dcmp("olt", x, e.d(0.0)), "double", e.dbin("fsub", e.d(2.0), c), c)
    return _keep_nan(e, x, e.select(e.dcmp("olt", a, e.d(ERF_SMALL)), "double", near, far))


def _gelu(e: Emitter, x: str) -> str:
    """x/2 erfc(y), y = yh + yl = -x / sqrt 2 (a double-double): below |yh| = 1/2 the series,
    1 - yh T(yh^2) - yl 2/sqrt(pi); above erfc(|y|) with the tail, 2 - it for y < 0; where y > 0
    x/2 multiplies erfcx before the scaling (a subnormal result rounds once), and past
    ERFC_ZERO the result is -0. -inf gives NaN as torch's (-inf times 1 + erf(-inf) = 0)."""
    half_x = e.dbin("fmul", e.d(0.5), x)
    nh = _neg(e, x)
    yh = e.dbin("fmul", nh, e.d(RSQRT2[0]))
    yl = e.dfma(nh, e.d(RSQRT2[1]), e.dfma(nh, e.d(RSQRT2[0]), _neg(e, yh)))
    a = e.dcall("fabs", yh)
    near = e.dfma(_neg(e, yl), e.d(2 / math.sqrt(math.pi)), e.dfma(_neg(e, yh), _erf_series(e, yh), e.d(1.0)))
    negative = e.dcmp("olt", yh, e.d(0.0))
    inside = e.dcmp("olt", a, e.d(ERFC_ZERO))
    al = e.select(negative, "double", _neg(e, yl), yl)
    al = e.select(inside, "double", al, e.d(0.0))  # (x = +-inf: yl is NaN)
    c = _erfc_pos(e, _clamp_far(e, a), al, e.select(negative, "double", e.d(1.0), half_x))
    lower = e.select(inside, "double", c, e.dcall("copysign", e.d(0.0), x))
    far = e.select(negative, "double", e.dbin("fmul", half_x, e.dbin("fsub", e.d(2.0), c)), lower)
    r = e.select(e.dcmp("olt", a, e.d(ERF_SMALL)), "double", e.dbin("fmul", half_x, near), far)
    r = e.select(e.dcmp("oeq", x, e.d(-math.inf)), "double", e.d(math.nan), r)
    return _keep_nan(e, x, r)


def _giles(e: Emitter, a: str, w: str) -> str:
    """Giles' single-precision erfinv(a) from w = -log(1 - a^2) (libm.py's coefficients)."""
    central = e.dhorner(ERFINV_CENTRAL, e.dbin("fsub", w, e.d(2.5)))
    tail = e.dhorner(ERFINV_TAIL, e.dbin("fsub", e.dcall("sqrt", w), e.d(3.0)))
    return e.dbin("fmul", e.select(e.dcmp("olt", w, e.d(5.0)), "double", central, tail), a)


def _log_hi(e: Emitter, y: str) -> str:
    hi, lo = _log_dd(e, y)
    return e.dbin("fadd", hi, lo)


def _inverse(e: Emitter, a: str, s: str) -> str:
    """z >= 0 with erf(z) = a, erfc(z) = s, a + s = 1 exactly (a, s >= 0): by erf to
    a = ERFINV_SPLIT, by log erfc above (the module docstring); s = 0 gives inf."""
    slope0 = e.d(2 / math.sqrt(math.pi))
    # a <= 1/2: Newton on erf(z) = a, erf by its series (z <= 0.48)
    near = _giles(e, a, _neg(e, _log_hi(e, e.dbin("fmul", s, e.dbin("fadd", e.d(1.0), a)))))
    for _ in range(ERFINV_NEWTON):
        # erf(z) - a = (z c0 - a) + z (c0' + z^2 T'(z^2)), c0 = 2/sqrt(pi) in two parts: the big
        # term in one fma, so the residual's error is a small part of an ulp of a
        zz = e.dbin("fmul", near, near)
        rest = e.dfma(e.dbin("fmul", near, zz), e.dhorner(ERF_T[1:], zz), e.dbin("fmul", near, e.d(TWO_RSQRTPI[1])))
        residual = e.dbin("fadd", e.dfma(near, e.d(TWO_RSQRTPI[0]), _neg(e, a)), rest)
        slope = e.dbin("fmul", slope0, _exp_neg(e, zz))
        near = e.dbin("fsub", near, e.dbin("fdiv", residual, slope))
    # s < 1/2: Newton on log erfc(z) - log s = -z^2 + log erfcx(z) - log s = 0
    ls = _log_dd(e, s)
    minus_log_s = _neg(e, e.dbin("fadd", ls[0], ls[1]))
    w = _neg(e, _log_hi(e, e.dbin("fmul", s, e.dbin("fsub", e.d(2.0), s))))
    guess = _giles(e, a, w)
    z = e.dcall("sqrt", minus_log_s)
    for _ in range(3):
        z2 = e.dbin("fmul", z, z)
        corr = e.dbin("fsub", e.d(1.0), e.dbin("fdiv", e.d(0.5), z2))
        z = e.dcall("sqrt", e.dbin("fsub", minus_log_s, _log_hi(e, e.dbin("fdiv", e.dbin("fmul", z, e.d(SQRT_PI)), corr))))
    far = e.select(e.dcmp("olt", s, e.d(ERFCINV_TINY)), "double", z, guess)
    for _ in range(ERFCINV_NEWTON):
        zc = _clamp_far(e, far)
        g = _erfcx(e, zc)
        ph, pl = _two_prod(e, zc, zc)
        r = _dd_add(e, _log_dd(e, g), (_neg(e, ph), _neg(e, pl)))
        r = _dd_add(e, r, (_neg(e, ls[0]), _neg(e, ls[1])))
        # z - r / (-2 / (sqrt(pi) g))
        far = e.dfma(e.dbin("fmul", r[0], g), e.d(SQRT_PI / 2), zc)
    z = e.select(e.dcmp("ole", a, e.d(ERFINV_SPLIT)), "double", near, far)
    return e.select(e.dcmp("oeq", s, e.d(0.0)), "double", e.d(math.inf), z)


def _exp_neg(e: Emitter, zz: str) -> str:
    """e^-zz for zz in [0, 1] (the slope of erf below z = 1/2): libm_f64's exp reduction."""
    k, rh, rl = _reduce_ln2(e, _neg(e, zz), e.d(0.0))
    return _scale(e, e.dbin("fadd", e.d(1.0), _expm1_r(e, rh, rl)), _ki(e, k))


def _erfinv(e: Emitter, x: str) -> str:
    """x's sign on z = erfinv|x| (s = 1 - |x|, exact from |x| = 1/2 up; below, a alone drives
    the Newton steps); +-1 give +-inf, |x| > 1 and NaN a NaN."""
    a = e.dcall("fabs", x)
    z = _inverse(e, a, e.dbin("fsub", e.d(1.0), a))
    z = e.select(e.dcmp("ugt", a, e.d(1.0)), "double", e.d(math.nan), z)
    return e.dcall("copysign", z, x)


def _erfcinv(e: Emitter, y: str) -> str:
    """s = y (y <= 1) or 2 - y (then negated), a = 1 - s; 0 gives inf, 2 -inf, outside [0, 2]
    and NaN a NaN."""
    upper = e.dcmp("ogt", y, e.d(1.0))
    s = e.select(upper, "double", e.dbin("fsub", e.d(2.0), y), y)
    z = _inverse(e, e.dbin("fsub", e.d(1.0), s), s)
    z = e.select(upper, "double", _neg(e, z), z)
    bad = e.inst(f"or i1 {e.dcmp('ult', y, e.d(0.0))}, {e.dcmp('ogt', y, e.d(2.0))}")  # (ult: NaN too)
    return e.select(bad, "double", e.d(math.nan), z)


# math op name -> the body of its f64 helper double(double %x) (math_f64.MATH_F64 has them all)
ERF_F64: dict[str, Callable[[Emitter, str], str]] = {
    "math.erf": _erf,
    "math.erfc": _erfc,
    "math.gelu": _gelu,
    "math.erfinv": _erfinv,
    "math.erfcinv": _erfcinv,
}
