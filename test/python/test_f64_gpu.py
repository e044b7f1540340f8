"""f64 computed in f64 on the GPU (issue 31), against torch in float64 on the CPU: every unary
and binary op the dialect takes on f64, cmp and where, every reduction (sum, prod, max, min,
argmax, argmin, mean, var_mean, welford) along the row and the column, the scans, a fused chain,
and normal's moments, on odd shapes with NaN, infinities, zeros and subnormals planted.

Bounds: the rounding ops, arithmetic, max/min, fmod, remainder, nextafter, cmp and where exactly
torch's; the transcendental helpers (erf and erfc too) within 4 ulp of torch's; gelu's erf form,
erfinv and erfcinv against references of their own (torch's cancel or lose accuracy near +-1) (libm_f64.py is within 2 ulp of the
correctly rounded result on the host, test_libm_f64.py; torch's own CPU libm adds up to 1); lgamma
within 4 ulp of torch's, and an absolute 1e-16 near its zeros;
reductions to the rounding of a different summation order."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fuser

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

SHAPE = (67, 301)
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, 1e-300, 5e-324, -3e-320, 3.0, -7.0,
           1e300, -1e300]
T = f"tensor<{SHAPE[0]}x{SHAPE[1]}xf64>"

def _np(fn):
    """A numpy float64 function as a torch one (sqrt: numpy's is correctly rounded, as the GPU's
    sqrt.rn.f64; torch's CPU build gave 0.7071067811865475 for sqrt(0.5))."""
    return lambda t: torch.from_numpy(fn(t.numpy()))


def _np2(fn):
    return lambda a, b: torch.from_numpy(fn(a.numpy(), b.numpy()))


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch.remainder's rule on C's exact fmod (torch's CPU fmod of a huge quotient or a
    subnormal divisor is a - b trunc(a / b): NaN where C's is exact)."""
    r = np.fmod(a, b)
    fix = (r != 0) & ((r < 0) != (b < 0))
    return np.where(fix, r + b, r)


# op -> (torch function, input draw, ulp bound (0: exact))
UNARY = {
    "neg": (torch.neg, "normal", 0), "abs": (torch.abs, "normal", 0), "relu": (torch.relu, "normal", 0),
    "floor": (torch.floor, "normal", 0), "ceil": (torch.ceil, "normal", 0), "trunc": (torch.trunc, "normal", 0),
    "round": (torch.round, "normal", 0), "sign": (torch.sign, "normal", 0),
    "reciprocal": (torch.reciprocal, "normal", 0), "sqrt": (_np(np.sqrt), "positive", 0),
    "rsqrt": (torch.rsqrt, "positive", 2),
    "exp": (torch.exp, "exp", 4), "exp2": (torch.exp2, "exp", 4), "expm1": (torch.expm1, "exp", 4),
    "log": (torch.log, "positive", 4), "log2": (torch.log2, "positive", 4), "log10": (torch.log10, "positive", 4),
    "log1p": (torch.log1p, "above_minus_one", 4),
    "sin": (torch.sin, "wide", 4), "cos": (torch.cos, "wide", 4), "tan": (torch.tan, "wide", 4),
    "asin": (torch.asin, "unit", 4), "acos": (torch.acos, "unit", 4), "atan": (torch.atan, "wide", 4),
    "sinh": (torch.sinh, "hyper", 4), "cosh": (torch.cosh, "hyper", 4), "tanh": (torch.tanh, "normal", 4),
    "asinh": (torch.asinh, "wide", 4), "acosh": (torch.acosh, "positive", 4), "atanh": (torch.atanh, "unit", 4),
    "sigmoid": (torch.sigmoid, "normal", 4), "silu": (torch.nn.functional.silu, "normal", 4),
    "erf": (torch.erf, "normal", 4), "erfc": (torch.erfc, "erfc", 4),
}
BINARY = {
    "add": (torch.add, 0), "sub": (torch.sub, 0), "mul": (torch.mul, 0), "div": (torch.div, 0),
    "max": (torch.maximum, 0), "min": (torch.minimum, 0), "fmod": (_np2(np.fmod), 0),
    "remainder": (_np2(_remainder), 0),
    "nextafter": (torch.nextafter, 0), "pow": (torch.pow, 4), "atan2": (torch.atan2, 4),
}


def _inputs(draw: str, seed: int = 35) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = math.prod(SHAPE)
    if draw == "positive":
        x = np.exp(rng.uniform(-700, 700, n))
    elif draw == "above_minus_one":
        x = np.concatenate([rng.uniform(-0.999999, 1.0, n // 2), rng.uniform(-1e-9, 1e-9, n // 4),
                            np.exp(rng.uniform(-5, 700, n - n // 2 - n // 4))])
    elif draw == "unit":
        x = rng.uniform(-1.0, 1.0, n)
    elif draw == "exp":
        x = rng.uniform(-745, 710, n)
    elif draw == "hyper":  # (past 709.78 torch's CPU sinh and cosh overflow early; test_libm_f64 covers it)
        x = rng.uniform(-709, 709, n)
    elif draw == "erfc":  # down to erfc's underflow (27.2) and to 2 below
        x = np.concatenate([rng.uniform(-6.0, 28.0, n // 2), rng.standard_normal(n - n // 2)])
    elif draw == "gelu":  # gelu's tail, to its underflow near x = -38.6
        x = np.concatenate([rng.uniform(-40.0, 10.0, n // 2), rng.standard_normal(n - n // 2) * 3.0])
    elif draw == "wide":  # small, rotary-embedding-sized and huge (both reductions of sin)
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n).astype(np.float64)
    else:
        x = rng.standard_normal(n) * 4.0
    x[:len(SPECIAL)] = SPECIAL
    return x.reshape(SHAPE)


def _check(op: str, got: np.ndarray, want: np.ndarray, ulps: int) -> None:
    assert got.dtype == np.float64
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{op}: NaN mismatch at {np.argwhere(np.isnan(got) != np.isnan(want))[:3]}"
    ok = ~np.isnan(want)
    g, w = got[ok], want[ok]
    if ulps == 0:
        same = (g == w) & ((np.signbit(g) == np.signbit(w)) | (op == "relu"))  # (relu(-0) is max(-0, 0) = +0)
        assert same.all(), f"{op}: {np.sum(~same)} differ, e.g. {g[~same][:3]} vs {w[~same][:3]}"
        return
    inf = np.isinf(w)
    assert np.array_equal(g[inf], w[inf]), f"{op}: infinities differ"
    fin = ~inf
    err = np.abs(g[fin] - w[fin]) / np.spacing(np.abs(w[fin]))
    worst = int(np.argmax(err)) if err.size else 0
    assert err.size == 0 or err[worst] <= ulps, f"{op}: {err[worst]:.1f} ulp at {g[fin][worst]!r} vs {w[fin][worst]!r}"


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_f64_on_the_gpu(op):
    fn, draw, ulps = UNARY[op]
    x = _inputs(draw)
    got = np.asarray(fuser.compile(f"func.func @u(%x: {T}) -> {T} {{\n  %y = fusion.{op} %x : {T}\n"
                                   f"  func.return %y : {T}\n}}")(x))
    with np.errstate(all="ignore"):
        want = fn(torch.from_numpy(x)).numpy()
    _check(op, got, want, ulps)


def test_gelu_tanh_f64_on_the_gpu():
    x = _inputs("normal")
    got = np.asarray(fuser.compile(f'func.func @g(%x: {T}) -> {T} {{\n  %y = fusion.gelu %x {{approximate = "tanh"}} : '
                                   f"{T}\n  func.return %y : {T}\n}}")(x))
    want = torch.nn.functional.gelu(torch.from_numpy(x), approximate="tanh").numpy()
    fin = np.isfinite(want)
    # (x / (1 + e^(-2u)) against torch's 0.5 x (1 + tanh u): the tail for x < 0 cancels in torch's)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-13, atol=1e-15)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split of a double into two 26-bit halves (numpy rounds each operation: no fma
    contraction), for |a| < 1e300."""
    t = 134217729.0 * a
    hi = t - (t - a)
    return hi, a - hi


def _gelu_erf_f64(x: np.ndarray) -> np.ndarray:
    """x/2 erfc(y), y = yh + yl = -x / sqrt 2 to ~2^-106 (Dekker's product, 1/sqrt 2 in two parts),
    erfc(yh + yl) = erfc(yh) (1 - 2 yh yl) where yh > 0 (e^(-y^2)'s slope; condition 2 y^2): within
    ~2 ulp of the true value, where torch's 0.5 x (1 + erf(x / sqrt 2)) cancels for x << 0."""
    c_hi, c_lo = 0.7071067811865476, -4.833646656726457e-17
    with np.errstate(all="ignore"):
        y = -np.where(np.abs(x) < 1e300, x, 0.0)
        yh = y * c_hi
        (a1, a2), (b1, b2) = _split(y), _split(np.full_like(y, c_hi))
        yl = (((a1 * b1 - yh) + a1 * b2 + a2 * b1) + a2 * b2) + y * c_lo
        e = np.vectorize(math.erfc, otypes=[np.float64])(-x * c_hi)
        corr = np.where((yh > 0) & (yh < 28), 1.0 - 2.0 * yh * yl, 1.0)
        return 0.5 * x * e * corr


def test_gelu_erf_f64_on_the_gpu():
    """gelu's erf form in f64 (libm_erf_f64: x/2 erfc(-x / sqrt 2), within 3 ulp on the host)
    against a double-double-corrected erfc; -inf gives NaN and +inf inf, as torch's."""
    x = _inputs("gelu")
    got = np.asarray(fuser.compile(f"func.func @g(%x: {T}) -> {T} {{\n  %y = fusion.gelu %x : {T}\n"
                                   f"  func.return %y : {T}\n}}")(x))
    want = _gelu_erf_f64(x)
    # where the reference's erfc may be subnormal, 20 of its ulps (2^-1074) more
    deep = np.abs(want) < 1e-290
    _check("gelu", np.where(deep, 0.0, got), np.where(deep, 0.0, want), 6)
    assert np.all(np.abs(got[deep] - want[deep]) <= 6 * np.spacing(np.abs(want[deep])) + 20 * 5e-324)
    assert np.isnan(got.ravel()[2]) and got.ravel()[1] == math.inf  # (SPECIAL: -inf, inf)
    torch_ok = x > -1  # where torch's own form hardly cancels (1 + erf(-0.71) = 0.32)
    np.testing.assert_allclose(got[torch_ok], torch.nn.functional.gelu(torch.from_numpy(x)).numpy()[torch_ok],
                               rtol=1e-14, atol=1e-300)


def test_erfinv_and_erfcinv_f64_on_the_gpu():
    """erfinv over (-1, 1) up to 1 - 2^-53 and erfcinv over (0, 2) down to 1e-300, against the
    reference interpreter's float64 Newton solutions (math.erf / math.erfc, ~1 ulp; torch's
    erfinv loses accuracy near +-1 and torch has no erfcinv); the specials as torch's."""
    from fuser.runtime.reference import erfcinv, erfinv

    rng = np.random.default_rng(36)
    n = math.prod(SHAPE)
    x = np.concatenate([rng.uniform(-1, 1, n // 2), 1 - 10.0 ** rng.uniform(-15.9, 0, n // 4),
                        -(10.0 ** rng.uniform(-300, 0, n - n // 2 - n // 4))])
    x[:8] = [1.0, -1.0, 0.0, -0.0, math.nan, 1.5, -math.inf, 5e-324]
    y = np.concatenate([rng.uniform(0, 2, n // 2), 10.0 ** rng.uniform(-300, 0, n // 4),
                        2 - 10.0 ** rng.uniform(-15.9, 0, n - n // 2 - n // 4)])
    y[:7] = [0.0, 2.0, 1.0, math.nan, -0.5, 2.5, math.inf]
    text = f"""func.func @i(%x: {T}, %y: {T}) -> ({T}, {T}) {{
  %a = fusion.erfinv %x : {T}
  %b = fusion.erfcinv %y : {T}
  func.return %a, %b : {T}, {T}
}}"""
    a, b = (np.asarray(v) for v in fuser.compile(text)(x.reshape(SHAPE), y.reshape(SHAPE)))
    want_a = np.vectorize(erfinv, otypes=[np.float64])(x).reshape(SHAPE)
    want_b = np.vectorize(erfcinv, otypes=[np.float64])(y).reshape(SHAPE)
    _check("erfinv", a, want_a, 4)
    _check("erfcinv", b, want_b, 4)
    specials = torch.erfinv(torch.tensor(x[:8])).numpy()
    assert np.array_equal(a.ravel()[:8], specials, equal_nan=True)
    assert np.array_equal(np.signbit(a.ravel()[:4]), np.signbit(specials[:4]))
    assert b.ravel()[0] == math.inf and b.ravel()[1] == -math.inf and b.ravel()[2] == 0.0
    assert np.isnan(b.ravel()[3:7]).all()

def _lgamma_inputs() -> np.ndarray:
    """Every branch of libm_lgamma_f64: (0, 10), around the zeros at 1 and 2, Stirling's range to
    the overflow, tiny and subnormal of both signs, the reflection over (-20, -1/2) and around its
    first zeros, large negative non-integers, the specials (poles: 0, -0, -7, -1e300)."""
    rng = np.random.default_rng(37)
    n = math.prod(SHAPE)
    k = n // 8
    x = np.concatenate([rng.uniform(0, 10, k), 1 + rng.uniform(-1e-3, 1e-3, k // 2), 2 + rng.uniform(-1e-3, 1e-3, k // 2),
                        10.0 ** rng.uniform(1, 305.4, k), 10.0 ** rng.uniform(-323, -0.31, k) * rng.choice([-1, 1], k),
                        rng.uniform(-20, -0.5, k), rng.uniform(-4.1, -2.3, k), -(10.0 ** rng.uniform(1.3, 15.6, k))])
    x = np.concatenate([x, rng.uniform(-8, 8, n - x.size)])
    x[:len(SPECIAL)] = SPECIAL
    return x.reshape(SHAPE)


def _check_lgamma(x: np.ndarray, got: np.ndarray) -> None:
    """Against torch's float64 lgamma (C's): 4 ulp where |lgamma| >= 1/10 (the helper is within
    2 of the correctly rounded result, test_libm_f64.py; C's adds a little), an absolute 1e-16
    below (near lgamma's zeros, where the reflection's terms cancel); poles, infinities and NaN
    as torch's (x past ~2.556e305 is left out: torch's overflows a little early)."""
    keep = ~(x > 2.5e305)
    want = torch.lgamma(torch.from_numpy(x)).numpy()
    assert np.array_equal(got[keep & ~np.isfinite(want)], want[keep & ~np.isfinite(want)], equal_nan=True)
    small = np.isfinite(want) & (np.abs(want) < 0.1)
    assert small.sum() > 100 and np.max(np.abs(got - want)[small]) <= 1e-16
    _check("lgamma", got[keep & ~small], want[keep & ~small], 4)


def test_lgamma_f64_on_the_gpu():
    x = _lgamma_inputs()
    got = np.asarray(fuser.compile(f"func.func @l(%x: {T}) -> {T} {{\n  %y = fusion.lgamma %x : {T}\n"
                                   f"  func.return %y : {T}\n}}")(x))
    _check_lgamma(x, got)



@pytest.mark.parametrize("op", list(BINARY))
def test_binary_f64_on_the_gpu(op):
    fn, ulps = BINARY[op]
    a, b = _inputs("normal", 1), _inputs("normal", 2)
    b.ravel()[len(SPECIAL):2 * len(SPECIAL)] = SPECIAL  # specials against specials and numbers
    if op == "pow":
        a = np.abs(a) * np.where(np.arange(a.size).reshape(SHAPE) % 3 == 0, -1, 1)
        b.ravel()[::5] = np.round(b.ravel()[::5])  # integer exponents of negative bases
    if op == "fmod" or op == "remainder":  # quotients up to 2^1000 (the exact remainder's loop)
        a.ravel()[::7] *= 1e300
    got = np.asarray(fuser.compile(f"func.func @b(%x: {T}, %y: {T}) -> {T} {{\n  %z = fusion.{op} %x, %y : {T}\n"
                                   f"  func.return %z : {T}\n}}")(a, b))
    with np.errstate(all="ignore"):
        want = fn(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    _check(op, got, want, ulps)


def test_cmp_and_where_f64_on_the_gpu():
    a, b = _inputs("normal", 3), _inputs("normal", 4)
    b.ravel()[:50] = a.ravel()[:50]
    b.ravel()[50:60] = np.nextafter(a.ravel()[50:60], np.inf)  # one ulp apart: not equal in f64 (equal in f32)
    text = f"""func.func @c(%x: {T}, %y: {T}) -> ({T.replace('f64', 'i1')}, {T}) {{
  %m = fusion.cmp lt, %x, %y : {T}
  %e = fusion.cmp eq, %x, %y : {T}
  %w = fusion.where %e, %x, %y : {T}
  func.return %m, %w : {T.replace('f64', 'i1')}, {T}
}}"""
    m, w = (np.asarray(v) for v in fuser.compile(text)(a, b))
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    assert np.array_equal(m, (ta < tb).numpy())
    _check("where", w, torch.where(ta == tb, ta, tb).numpy(), 0)


@pytest.mark.parametrize("shape,dim", [((67, 4099), 1), ((4099, 67), 0), ((3, 131071), 1), ((1027, 33), 1)])
def test_reductions_f64_on_the_gpu(shape, dim):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape) * 1e3 + 1e6  # a large mean over a small spread: f32 would lose it
    x.ravel()[5] = -0.0
    out = [d for i, d in enumerate(shape) if i != dim]
    r, ri = f"tensor<{out[0]}xf64>", f"tensor<{out[0]}xi64>"
    t = f"tensor<{shape[0]}x{shape[1]}xf64>"
    text = f"""func.func @r(%x: {t}) -> ({r}, {r}, {r}, {r}, {ri}, {ri}, {r}, {r}, {r}, {r}) {{
  %s = fusion.reduce sum %x dims [{dim}] : {t} to {r}
  %sc = fusion.mul %x, %x : {t}
  %p0 = fusion.full 1.0000001 : {t}
  %pp = fusion.pow %p0, %sc : {t}
  %p = fusion.reduce prod %pp dims [{dim}] : {t} to {r}
  %mx = fusion.reduce max %x dims [{dim}] : {t} to {r}
  %mn = fusion.reduce min %x dims [{dim}] : {t} to {r}
  %ax = fusion.reduce argmax %x dims [{dim}] : {t} to {ri}
  %an = fusion.reduce argmin %x dims [{dim}] : {t} to {ri}
  %v, %m = fusion.var_mean %x dims [{dim}] correction 1 : {t} to {r}, {r}
  %a, %q, %n = fusion.welford %x dims [{dim}] : {t} to {r}, {r}, {ri}
  func.return %s, %p, %mx, %mn, %ax, %an, %v, %m, %a, %q : {r}, {r}, {r}, {r}, {ri}, {ri}, {r}, {r}, {r}, {r}
}}"""
    got = [np.asarray(v) for v in fuser.compile(text)(x)]
    tx = torch.from_numpy(x)
    n = shape[dim]
    want_prod = torch.prod(torch.pow(torch.tensor(1.0000001, dtype=torch.float64), tx * tx), dim=dim).numpy()
    want = [tx.sum(dim).numpy(), want_prod, tx.amax(dim).numpy(), tx.amin(dim).numpy(), tx.argmax(dim).numpy(),
            tx.argmin(dim).numpy(), tx.var(dim, correction=1).numpy(), tx.mean(dim).numpy(), tx.mean(dim).numpy(),
            (tx.var(dim, correction=0) * n).numpy()]
    names = ["sum", "prod", "max", "min", "argmax", "argmin", "var", "mean", "avg", "M2"]
    for name, g, w in zip(names, got, want):
        if name in ("max", "min", "argmax", "argmin"):
            assert np.array_equal(g, w), name
        else:
            assert g.dtype == np.float64, name
            # var: 1e6 mean, 1e3 spread: in f32 (2^-24 * 1e6 = 0.06 per element) it would be off by 1e-4
            np.testing.assert_allclose(g, w, rtol=1e-11 if name != "prod" else 1e-9, err_msg=name)


def test_scans_f64_on_the_gpu():
    rng = np.random.default_rng(9)
    shape = (37, 5003)
    x = rng.standard_normal(shape)
    x.ravel()[100] = math.nan
    t = f"tensor<{shape[0]}x{shape[1]}xf64>"
    text = f"""func.func @s(%x: {t}) -> ({t}, {t}, {t}) {{
  %c = fusion.scan sum %x dim 1 : {t} to {t}
  %m = fusion.scan max %x dim 1 : {t} to {t}
  %e = fusion.exp %x : {t}
  %p0 = fusion.full 0.001 : {t}
  %e2 = fusion.mul %e, %p0 : {t}
  %e3 = fusion.exp %e2 : {t}
  %p = fusion.scan prod %e3 dim 1 : {t} to {t}
  func.return %c, %m, %p : {t}, {t}, {t}
}}"""
    c, m, p = (np.asarray(v) for v in fuser.compile(text)(x))
    tx = torch.from_numpy(x)
    np.testing.assert_allclose(c, torch.cumsum(tx, 1).numpy(), rtol=1e-11, atol=1e-10)
    assert np.array_equal(m, torch.cummax(tx, 1).values.numpy(), equal_nan=True)
    np.testing.assert_allclose(p, torch.cumprod(torch.exp(torch.exp(tx) * 0.001), 1).numpy(), rtol=1e-11)


def test_fused_f64_chain_with_a_normalization_on_the_gpu():
    """A layer-norm-like chain in f64: exp, a row reduction, a broadcast back, sqrt and a division."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((129, 1031))
    with fuser.FusionBuilder("f64_chain") as fb:
        xi = fb.input((129, 1031), "f64", name="x")
        var, mean = fuser.var_mean(xi, 1, keepdim=True)
        y = (xi - mean) * fuser.rsqrt(var + 1e-12)
        fb.output(fuser.tanh(y) * 2.0 + fuser.sin(y))
    got = np.asarray(fuser.compile(fb)(x))
    tx = torch.from_numpy(x)
    v, m = torch.var_mean(tx, 1, keepdim=True)
    ty = (tx - m) * torch.rsqrt(v + 1e-12)
    np.testing.assert_allclose(got, (torch.tanh(ty) * 2.0 + torch.sin(ty)).numpy(), rtol=1e-12, atol=1e-13)


def test_normal_f64_on_the_gpu_matches_the_reference():
    t = "tensor<100003xf64>"
    text = f"""func.func @n(%s: tensor<i64>, %o: tensor<i64>) -> {t} {{
  %r = fusion.normal %s, %o mean 1.0 std 3.0 : {t}
  func.return %r : {t}
}}"""
    k = fuser.compile(text)
    got = np.asarray(k(np.array(123, np.int64), np.array(4, np.int64)))
    want = np.asarray(k.reference(np.array(123, np.int64), np.array(4, np.int64)))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    assert abs(got.mean() - 1.0) < 0.05 and abs(got.std() - 3.0) < 0.05
