"""Accuracy of the f64 math library (lowering/target/llvmir/libm_f64.py) against mpmath.

The helpers are JIT-compiled for the host CPU from the same LLVM IR the kernels get (they use
LLVM's own intrinsics only: fma, rint, floor, sqrt, fabs, copysign, so the host computes what the
GPU computes) and compared with mpmath at 150 bits, rounded to double: random sweeps over every
scale (uniform over intervals and log-uniform over magnitudes from subnormals to the overflow
point), tiny and subnormal arguments, large ones, and the special values, whose results must
equal numpy's (C's) bit for bit, sign of zero and NaN included. The bounds asserted are the ones
libm_f64's docstring states.

The erf family (libm_erf_f64.py), measured the same way: erf 1 ulp, erfc 2, gelu (erf form,
x/2 erfc(-x / sqrt 2)) 3, erfinv 1, erfcinv 1 (against erfinv of 1 - s, or Newton's method on
log erfc at 150 bits where s < 1/2, subnormal s included); special values as C's or torch's.

lgamma (libm_lgamma_f64.py), against mpmath's loggamma: 1 ulp for x > -1/2 (around the zeros at 1
and 2 too), 2 ulp for x <= -1/2 where |lgamma| >= 1/10, an absolute 3e-17 below that and 2e-17
around the first negative zeros; special values as torch's.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

mpmath = pytest.importorskip("mpmath")

from fuser.lowering.target.llvmir import math_f64  # noqa: E402
from fuser.lowering.target.llvmir.emitter import Emitter  # noqa: E402

mp = mpmath.mp
mp.prec = 150


class _Module:
    """What the helpers ask of their module: intrinsic declarations and constant tables."""

    def __init__(self):
        self.lines: dict[str, str] = {}
        self.globals: dict[str, str] = {}

    def declare(self, fn, ret, args):
        self.lines[fn] = f"declare {ret} @{fn}({', '.join(args)})"

    def define_global(self, name, text):
        self.globals[name] = text


_ENGINES: list = []
_CACHE: dict[str, object] = {}


def helper(name: str):
    """The f64 helper of `math.<name>` (or arith.remf / math.powf), JIT-compiled and vectorized."""
    if name in _CACHE:
        return _CACHE[name]
    import llvmlite.binding as lb

    op = {"fmod": "arith.remf", "pow": "math.powf"}.get(name, f"math.{name}")
    two = op in math_f64.MATH_F64_2
    mod = _Module()
    e = Emitter(mod, "h")
    e.start_block("entry")
    params = ["%a", "%b"] if two else ["%x"]
    body = (math_f64.MATH_F64_2 if two else math_f64.MATH_F64)[op](e, *params)
    e.emit(f"ret double {body}")
    text = ("\n".join(mod.globals.values()) + "\n" + "\n".join(mod.lines.values()) + "\n"
            + f"define double @h({', '.join('double ' + p for p in params)}) {{\n" + "\n".join(e.lines) + "\n}")
    lb.initialize_native_target()
    lb.initialize_native_asmprinter()
    m = lb.parse_assembly(text)
    m.verify()
    assert "nvvm" not in str(m)
    engine = lb.create_mcjit_compiler(m, lb.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    _ENGINES.append(engine)
    proto = ctypes.CFUNCTYPE(ctypes.c_double, *([ctypes.c_double] * len(params)))
    fn = np.vectorize(proto(engine.get_function_address("h")), otypes=[np.float64])
    _CACHE[name] = fn
    return fn


def _mp1(f):
    def ref(x: float) -> float:
        with mpmath.workprec(150):
            try:
                v = f(mpmath.mpf(x))
            except (ValueError, ZeroDivisionError, OverflowError):
                return math.nan
            if isinstance(v, mpmath.mpc):
                return float(v.real) if v.imag == 0 else math.nan
            return float(v)
    return np.vectorize(ref, otypes=[np.float64])


def _ulp_err(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in ulps of want (the ulp of a subnormal: 2^-1074); 0 where both agree on
    inf/NaN, inf where they disagree."""
    both = (got == want) | (np.isnan(got) & np.isnan(want))
    ulp = np.spacing(np.abs(want))
    with np.errstate(all="ignore"):
        err = np.abs(got - want) / ulp
    err = np.where(both, 0.0, err)
    return np.where(np.isfinite(err), err, np.inf)


def _logspace(rng, lo_exp: float, hi_exp: float, n: int, signed: bool = True) -> np.ndarray:
    x = 10.0 ** rng.uniform(lo_exp, hi_exp, n)
    return x * rng.choice([-1.0, 1.0], n) if signed else x


# name -> (mpmath function, domain sampler(rng) -> inputs, max ulp)
def _cases():
    def wide(lo, hi, signed=True):
        return lambda rng: np.concatenate([_logspace(rng, lo, hi, 1500, signed),
                                           rng.uniform(-1, 1, 500) * (1.0 if signed else 0) + (0 if signed else 1)])
    sub = np.array([5e-324, -5e-324, 2.2e-308, 1e-310, -3e-320, 1e-300, 1e-20, -1e-20])
    return {
        "exp": (mpmath.exp, lambda r: np.concatenate([r.uniform(-745, 709.7, 2000), r.uniform(-1, 1, 500), sub]), 1.0),
        "exp2": (lambda x: mpmath.power(2, x), lambda r: np.concatenate([r.uniform(-1074, 1023.9, 2000),
                                                                         r.uniform(-1, 1, 500), sub]), 1.0),
        "expm1": (mpmath.expm1, lambda r: np.concatenate([r.uniform(-50, 709.7, 1500), _logspace(r, -320, 1, 1000),
                                                          sub]), 1.0),
        "log": (mpmath.log, lambda r: np.concatenate([_logspace(r, -323, 308, 2000, False),
                                                      r.uniform(0.5, 2, 1000), np.abs(sub)]), 0.51),
        "log2": (mpmath.log2 if hasattr(mpmath, "log2") else (lambda x: mpmath.log(x, 2)),
                 lambda r: np.concatenate([_logspace(r, -323, 308, 2000, False), r.uniform(0.5, 2, 1000)]), 0.51),
        "log10": (mpmath.log10, lambda r: np.concatenate([_logspace(r, -323, 308, 2000, False),
                                                          r.uniform(0.5, 2, 1000)]), 0.51),
        "log1p": (mpmath.log1p, lambda r: np.concatenate([_logspace(r, -320, 308, 2000, False),
                                                          -_logspace(r, -320, -1e-9, 1000, False), sub]), 1.0),
        "sinh": (mpmath.sinh, lambda r: np.concatenate([r.uniform(-710.4, 710.4, 1500), _logspace(r, -320, 1.5, 1000),
                                                        sub]), 2.0),
        "cosh": (mpmath.cosh, lambda r: np.concatenate([r.uniform(-710.4, 710.4, 1500), _logspace(r, -320, 1.5, 1000)]), 2.0),
        "tanh": (mpmath.tanh, lambda r: np.concatenate([r.uniform(-25, 25, 1500), _logspace(r, -320, 1.5, 1000), sub]), 2.0),
        "asinh": (mpmath.asinh, wide(-320, 308), 2.0),
        "acosh": (mpmath.acosh, lambda r: np.concatenate([1 + _logspace(r, -16, 0, 1000, False),
                                                          _logspace(r, 0, 308, 1500, False)]), 2.0),
        "atanh": (mpmath.atanh, lambda r: np.concatenate([r.uniform(-1, 1, 1500), _logspace(r, -320, -0.0001, 1000),
                                                          sub]), 2.0),
        "atan": (mpmath.atan, wide(-320, 308), 2.0),
        "asin": (mpmath.asin, lambda r: np.concatenate([r.uniform(-1, 1, 2000), _logspace(r, -320, 0, 1000), sub]), 2.0),
        "acos": (mpmath.acos, lambda r: np.concatenate([r.uniform(-1, 1, 2000), _logspace(r, -320, 0, 1000), sub]), 2.0),
        "sin": (mpmath.sin, lambda r: np.concatenate([r.uniform(-10, 10, 1000), _logspace(r, -320, 308, 2000),
                                                      r.uniform(2.0 ** 29, 2.0 ** 31, 500), sub]), 1.0),
        "cos": (mpmath.cos, lambda r: np.concatenate([r.uniform(-10, 10, 1000), _logspace(r, -320, 308, 2000),
                                                      r.uniform(2.0 ** 29, 2.0 ** 31, 500)]), 1.0),
        "tan": (mpmath.tan, lambda r: np.concatenate([r.uniform(-10, 10, 1000), _logspace(r, -320, 308, 2000),
                                                      r.uniform(2.0 ** 29, 2.0 ** 31, 500), sub]), 2.0),
        "rsqrt": (lambda x: 1 / mpmath.sqrt(x), lambda r: np.concatenate([_logspace(r, -323, 308, 2000, False),
                                                                          np.abs(sub)]), 1.0),
    }


CASES = _cases()
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, 100.0, 1e308, -1e308,
                     5e-324, -5e-324, 710.0, -746.0, 1e22, 2.0 ** 60])
NUMPY = {"exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
         "log1p": np.log1p, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
         "acosh": np.arccosh, "atanh": np.arctanh, "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos,
         "sin": np.sin, "cos": np.cos, "tan": np.tan, "rsqrt": lambda x: 1 / np.sqrt(x)}


def _assert_accurate(name: str, cases: dict, seed: int) -> None:
    """helper(name) on the case's draw is within its bound (ulp) of mpmath at 150 bits."""
    ref, draw, bound = cases[name]
    xs = draw(np.random.default_rng(seed))
    got, want = helper(name)(xs), _mp1(ref)(xs)
    err = _ulp_err(got, want)
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{name}({xs[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: {err[worst]:.3f} ulp"


@pytest.mark.parametrize("name", list(CASES))
def test_f64_helper_accuracy_against_mpmath(name):
    _assert_accurate(name, CASES, 31)


@pytest.mark.parametrize("name", list(CASES))
def test_f64_helper_special_values_match_c(name):
    fn = helper(name)
    with np.errstate(all="ignore"):
        want = NUMPY[name](SPECIALS)
        ref = _mp1(CASES[name][0])(SPECIALS)
    got = fn(SPECIALS)
    for x, g, w, r in zip(SPECIALS, got, want, ref):
        if np.isnan(w):
            assert np.isnan(g), (name, x, g, w)
        elif np.isinf(w) or w == 0:
            assert g == w and np.signbit(g) == np.signbit(w), (name, x, g, w)
        else:  # a finite value: within the bound of the mpmath result
            assert _ulp_err(np.array([g]), np.array([r]))[0] <= CASES[name][2], (name, x, g, r)


def test_f64_sin_cos_huge_arguments():
    """The Payne-Hanek reduction across the exponent range, including its chunk boundaries."""
    rng = np.random.default_rng(5)
    xs = np.concatenate([np.ldexp(rng.uniform(1, 2, 64), e) for e in range(30, 1024, 7)])
    xs = np.concatenate([xs, [1e300, 1.7976931348623157e308, 2.0 ** 1023, 6381956970095103.0 * 2.0 ** 797,
                              5.319372648326541e255]])
    for name in ("sin", "cos"):
        got, want = helper(name)(xs), _mp1(getattr(mpmath, name))(xs)
        err = _ulp_err(got, want)
        assert err.max() <= 1.0, (name, xs[int(np.argmax(err))], err.max())


def test_f64_pow_against_mpmath():
    rng = np.random.default_rng(9)
    a = np.concatenate([_logspace(rng, -300, 300, 2000, False), rng.uniform(0, 4, 1000)])
    b = np.concatenate([rng.uniform(-300, 300, 1000) / np.maximum(np.abs(np.log10(a[:1000])), 1),
                        rng.uniform(-40, 40, 2000)])
    got = helper("pow")(a, b)

    def ref(x, y):
        with mpmath.workprec(200):
            return float(mpmath.power(mpmath.mpf(x), mpmath.mpf(y)))
    want = np.vectorize(ref, otypes=[np.float64])(a, b)
    err = _ulp_err(got, want)
    worst = int(np.argmax(err))
    assert err[worst] <= 1.0, (a[worst], b[worst], got[worst], want[worst], err[worst])
    sa = np.array([0.0, 0.0, 0.0, np.inf, np.inf, 0.5, 0.5, 2.0, 2.0, 1.0, 1.0, np.nan, 3.0, 1e-310, 10.0])
    sb = np.array([2.0, -2.0, 0.0, 2.0, -2.0, np.inf, -np.inf, np.inf, -np.inf, np.nan, np.inf, 2.0, np.nan,
                   0.5, 308.0])
    with np.errstate(all="ignore"):
        want = np.power(sa, sb)
    got = helper("pow")(sa, sb)
    for x, y, g, w in zip(sa, sb, got, want):
        if x == 0 and y == 0:
            continue  # b == 0 is fusion.pow's (the evaluator answers 1 before the helper)
        assert (np.isnan(g) and np.isnan(w)) or g == w or _ulp_err(np.array([g]), np.array([w]))[0] <= 1, (x, y, g, w)


def test_f64_atan2_against_mpmath_and_c():
    rng = np.random.default_rng(3)
    y = np.concatenate([_logspace(rng, -300, 300, 1500), rng.uniform(-2, 2, 500)])
    x = np.concatenate([_logspace(rng, -300, 300, 1500), rng.uniform(-2, 2, 500)])
    got = helper("atan2")(y, x)
    want = np.vectorize(lambda a, b: float(mpmath.atan2(mpmath.mpf(a), mpmath.mpf(b))), otypes=[np.float64])(y, x)
    err = _ulp_err(got, want)
    assert err.max() <= 2.0, (y[int(np.argmax(err))], x[int(np.argmax(err))], err.max())
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0])
    yy, xx = np.meshgrid(vals, vals)
    got, want = helper("atan2")(yy.ravel(), xx.ravel()), np.arctan2(yy.ravel(), xx.ravel())
    for a, b, g, w in zip(yy.ravel(), xx.ravel(), got, want):
        assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (a, b, g, w)


def test_f64_fmod_is_exact():
    rng = np.random.default_rng(4)
    a = np.concatenate([_logspace(rng, -320, 308, 2000), rng.uniform(-100, 100, 500)])
    b = np.concatenate([_logspace(rng, -320, 308, 2000), rng.uniform(-3, 3, 500)])
    specials_a = np.array([0.0, -0.0, 5.0, -5.0, np.inf, np.nan, 1.0, 5e-324, 1e308])
    specials_b = np.array([1.0, 1.0, 0.0, np.inf, 2.0, 2.0, np.nan, 3e-324, 5e-324])
    a, b = np.concatenate([a, specials_a]), np.concatenate([b, specials_b])
    got = helper("fmod")(a, b)
    with np.errstate(all="ignore"):
        want = np.fmod(a, b)  # C's fmod: exact
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(a[~same][:5], b[~same][:5], got[~same][:5], want[~same][:5]))


# ------------------------------------------------------------------ the erf family (libm_erf_f64)


def _gelu_mp(x):
    return x / 2 * mpmath.erfc(-x / mpmath.sqrt(2))


def _erfinv_mp(x):
    if abs(x) > 1:
        raise ValueError
    return mpmath.erfinv(x) if abs(x) < 1 else mpmath.inf * mpmath.sign(x)


def _erfcinv_mp(y):
    """z with erfc(z) = y: erfinv(1 - s) for s >= 1/2 (1 - s exact in 150 bits), else Newton's
    method on log erfc(z) = log s at 150 bits (s may be subnormal); s = y or 2 - y (negated)."""
    if not 0 <= y <= 2:
        raise ValueError
    if y in (0, 2):
        return mpmath.inf if y == 0 else -mpmath.inf
    s, sign = (y, 1) if y <= 1 else (2 - y, -1)
    if s >= 0.5:
        return sign * mpmath.erfinv(1 - s)
    ls, z = mpmath.log(s), mpmath.sqrt(-mpmath.log(s))
    for _ in range(200):
        c = mpmath.erfc(z)
        step = (mpmath.log(c) - ls) * mpmath.sqrt(mpmath.pi) * c / (-2 * mpmath.exp(-z * z))
        z -= step
        if abs(step) < mpmath.mpf(2) ** -140 * z:
            break
    return sign * z


_SUB = np.array([5e-324, -5e-324, 2.2e-308, 1e-310, -3e-320, 1e-300, 1e-20, -1e-20])
# name -> (mpmath function, sampler, the bound in ulp: the largest error measured on these sweeps
# and the specials, rounded up to an integer)
ERF_CASES = {
    "erf": (mpmath.erf, lambda r: np.concatenate([r.uniform(-6, 6, 2000), r.uniform(-0.6, 0.6, 500),
                                                  _logspace(r, -320, 1.5, 1000), _SUB]), 1.0),
    "erfc": (mpmath.erfc, lambda r: np.concatenate([r.uniform(-6, 28, 2000), r.uniform(-0.6, 0.6, 500),
                                                    _logspace(r, -320, 1.45, 1000), _SUB]), 2.0),
    "gelu": (_gelu_mp, lambda r: np.concatenate([r.uniform(-40, 10, 2000), r.uniform(-1.5, 1.5, 500),
                                                 _logspace(r, -320, 2, 1000), _SUB]), 3.0),
    "erfinv": (_erfinv_mp, lambda r: np.concatenate([r.uniform(-1, 1, 2000), 1 - _logspace(r, -16, 0, 500, False),
                                                     _logspace(r, -320, 0, 800), _SUB,
                                                     [0.5, 0.53, 0.5300000000000001, 1 - 2.0 ** -53]]), 1.0),
    "erfcinv": (_erfcinv_mp, lambda r: np.concatenate([r.uniform(0, 2, 2000), _logspace(r, -323.3, 0.3, 1000, False),
                                                       2 - _logspace(r, -16, 0, 300, False),
                                                       1 + _logspace(r, -300, -1, 300), np.abs(_SUB)]), 1.0),
}
# special values and what C / torch give (erf, erfc: C's; gelu, erfinv, erfcinv: torch's)
ERF_SPECIALS = {
    "erf": [(0.0, 0.0), (-0.0, -0.0), (np.inf, 1.0), (-np.inf, -1.0), (np.nan, np.nan), (6.0, 1.0), (-30.0, -1.0)],
    "erfc": [(0.0, 1.0), (-0.0, 1.0), (np.inf, 0.0), (-np.inf, 2.0), (np.nan, np.nan), (28.0, 0.0), (1e300, 0.0),
             (-30.0, 2.0)],
    "gelu": [(0.0, 0.0), (-0.0, -0.0), (np.inf, np.inf), (-np.inf, np.nan), (np.nan, np.nan), (-1e300, -0.0),
             (1e300, 1e300), (-40.0, -0.0)],
    "erfinv": [(0.0, 0.0), (-0.0, -0.0), (1.0, np.inf), (-1.0, -np.inf), (1.5, np.nan), (-np.inf, np.nan),
               (np.nan, np.nan)],
    "erfcinv": [(1.0, 0.0), (0.0, np.inf), (2.0, -np.inf), (-0.5, np.nan), (2.5, np.nan), (np.inf, np.nan),
                (np.nan, np.nan)],
}


@pytest.mark.parametrize("name", list(ERF_CASES))
def test_f64_erf_family_accuracy_against_mpmath(name):
    _assert_accurate(name, ERF_CASES, 32)


@pytest.mark.parametrize("name", list(ERF_SPECIALS))
def test_f64_erf_family_special_values(name):
    xs = np.array([x for x, _ in ERF_SPECIALS[name]])
    got = helper(name)(xs)
    for (x, w), g in zip(ERF_SPECIALS[name], got):
        assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (name, x, g, w)


def test_f64_erfcinv_inverts_erfc_down_to_subnormals():
    """erfcinv(erfc(z)) within a few ulp of z wherever erfc(z) keeps 40 bits (z <= 26.5)."""
    z = np.random.default_rng(33).uniform(0.5, 26.5, 2000)
    back = helper("erfcinv")(helper("erfc")(z))
    assert np.max(np.abs(back - z) / z) < 1e-13


# ------------------------------------------------------------------ lgamma (libm_lgamma_f64)


def _lgamma_mp(x: float) -> float:
    """log|gamma(x)| at 150 bits, rounded to double; +inf at the poles and at +-inf."""
    if not math.isfinite(x) or (x <= 0 and x == math.floor(x)):
        return math.inf if not math.isnan(x) else math.nan
    with mpmath.workprec(150):
        return float(mpmath.loggamma(mpmath.mpf(x)).real)


_LGAMMA_MP = np.vectorize(_lgamma_mp, otypes=[np.float64])
# The first negative zeros of lgamma (to double; the sweeps around them are relative to their
# distance from the pole beside them, which shrinks as 1/n!)
LGAMMA_NEG_ZEROS = (-2.4570247382208006, -2.7476826467274127, -3.14358088834998, -3.955294284858598,
                    -4.039361839740537, -4.991544640560048, -5.0082181683225935, -5.998607480080875,
                    -6.001385294453155, -8.000024800270682, -10.99999997494789)


def test_f64_lgamma_accuracy_against_mpmath():
    """x > -1/2 (the zeros at 1 and 2 included, where the shift t = x - 1 or x - 2 is exact and
    carries the zero): 1 ulp. x <= -1/2 (the reflection): 2 ulp where |lgamma| >= 1/10, and an
    absolute 3e-17 below (the reflection's two terms cancel near lgamma's negative zeros)."""
    r = np.random.default_rng(34)
    xs = np.concatenate([r.uniform(0, 8, 2000), r.uniform(8, 300, 500), _logspace(r, 1, 305.4, 500, False),
                         _logspace(r, -323.5, -0.31, 600), 1 + _logspace(r, -17, -2, 300), 2 + _logspace(r, -16, -2, 300),
                         r.uniform(-20, -0.5, 2000), r.uniform(-4.1, -2.3, 600), -_logspace(r, 1.3, 15.65, 300, False), _SUB,
                         [0.5, 1.5, 2.5, 3.5, 7.5, 8.0, np.nextafter(8.0, 0), 0.49999999999999994, -0.5,
                          -0.5000000000000001, 2.5563e305]])
    got, want = helper("lgamma")(xs), _LGAMMA_MP(xs)
    err = _ulp_err(got, want)
    upper = xs > -0.5
    worst = int(np.argmax(np.where(upper, err, 0)))
    assert err[worst] <= 1.0, f"lgamma({xs[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: {err[worst]:.3f} ulp"
    far = ~upper & (np.abs(want) >= 0.1)
    worst = int(np.argmax(np.where(far, err, 0)))
    assert err[worst] <= 2.0, f"lgamma({xs[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: {err[worst]:.3f} ulp"
    near = ~upper & (np.abs(want) < 0.1)
    assert near.sum() > 50 and np.max(np.abs(got - want)[near]) <= 3e-17


def test_f64_lgamma_around_its_negative_zeros():
    """Around each of the first negative zeros, within a thousandth of its distance from the pole
    beside it: absolute error 2e-17 (lgamma's values there are down to 1e-20)."""
    r = np.random.default_rng(35)
    for z in LGAMMA_NEG_ZEROS:
        gap = abs(z - round(z))
        xs = np.concatenate([z + r.uniform(-1e-3, 1e-3, 150) * gap, [z, np.nextafter(z, 0), np.nextafter(z, -30)]])
        got, want = helper("lgamma")(xs), _LGAMMA_MP(xs)
        assert np.max(np.abs(want)) < 1e-2 * max(1.0, -math.log(gap))  # (near the zero indeed)
        i = int(np.argmax(np.abs(got - want)))
        assert abs(got[i] - want[i]) <= 2e-17, f"lgamma({xs[i]!r}) = {got[i]!r}, want {want[i]!r}"


# (x, torch.lgamma's float64 value): the poles, +-inf, NaN, subnormals, the overflow (torch's CPU
# lgamma gives inf from ~2.5564e305, a little early: the true value is finite to ~2.5563e305...
# past which it rounds up; both below agree), the half-integers
LGAMMA_SPECIALS = [(0.0, np.inf), (-0.0, np.inf), (1.0, 0.0), (2.0, 0.0), (-1.0, np.inf), (-2.0, np.inf),
                   (-1e300, np.inf), (-2.0 ** 52, np.inf), (np.inf, np.inf), (-np.inf, np.inf), (np.nan, np.nan),
                   (5e-324, 744.4400719213812), (-5e-324, 744.4400719213812), (1e-310, 713.8013788281542),
                   (2.5563e305, 1.7951029165623062e308), (2.56e305, np.inf), (1.7976931348623157e308, np.inf),
                   (0.5, 0.5723649429247001), (-0.5, 1.2655121234846454), (-1.5, 0.860047015376481),
                   (3.0, 0.6931471805599453), (8.0, 8.525161361065415),
                   (-4503599627370495.5, -1.5782258434492883e+17)]


def test_f64_lgamma_special_values():
    xs = np.array([x for x, _ in LGAMMA_SPECIALS])
    got = helper("lgamma")(xs)
    for (x, w), g in zip(LGAMMA_SPECIALS, got):
        assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (x, g, w)
