"""The unary math ops beyond exp/log/tanh on the GPU (erf, exp2, log2, log10, log1p, reciprocal,
floor, ceil, trunc, round, sign; sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh,
expm1, erfc, erfinv, lgamma), against torch in float64 from the same f32 / bf16 inputs, on an odd shape with the special
values (NaN, +-inf, +-0, halves) planted: the rounding ops, sign and 1/x exactly, the f32 helpers
to a few ulp (ex2.approx / lg2.approx underneath), the f64-computed helpers to one ulp (they are
correctly rounded on the host: test_libm_accuracy.py); and the tests of a float (isnan, isinf,
isfinite, isposinf, isneginf, signbit) as exact i1 masks."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fuser
from fuser.runtime.arrays import numpy_dtype

pytestmark = pytest.mark.gpu

SHAPE = (257, 129)
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, 1e-30, 3.0, -7.0]
torch = pytest.importorskip("torch")

# op -> (torch's function, input draw, accuracy: True exact, False a few ulp, "rounded" one ulp)
OPS = {
    "erf": (torch.erf, "normal", False),
    "exp2": (torch.exp2, "normal", False),
    "log2": (torch.log2, "positive", False),
    "log10": (torch.log10, "positive", False),
    "log1p": (torch.log1p, "above_minus_one", False),
    "reciprocal": (torch.reciprocal, "normal", True),
    "floor": (torch.floor, "normal", True),
    "ceil": (torch.ceil, "normal", True),
    "trunc": (torch.trunc, "normal", True),
    "round": (torch.round, "normal", True),
    "sign": (torch.sign, "normal", True),
    "sin": (torch.sin, "wide", "rounded"),
    "cos": (torch.cos, "wide", "rounded"),
    "tan": (torch.tan, "wide", "rounded"),
    "asin": (torch.asin, "unit", "rounded"),
    "acos": (torch.acos, "unit", "rounded"),
    "atan": (torch.atan, "wide", "rounded"),
    "sinh": (torch.sinh, "normal", "rounded"),
    "cosh": (torch.cosh, "normal", "rounded"),
    "asinh": (torch.asinh, "wide", "rounded"),
    "acosh": (torch.acosh, "positive", "rounded"),
    "atanh": (torch.atanh, "unit", "rounded"),
    "expm1": (torch.expm1, "normal", "rounded"),
    "erfc": (torch.erfc, "normal", "rounded"),
    "erfinv": (torch.erfinv, "unit", "rounded"),
    "lgamma": (torch.lgamma, "gamma", "rounded"),
}


def _torch64(fn, x: np.ndarray) -> np.ndarray:
    """torch's answer in float64 on the CPU, from the values the kernel reads."""
    return fn(torch.from_numpy(x.astype(np.float64))).numpy()


def _inputs(draw: str, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(35)
    n = math.prod(SHAPE)
    if draw == "positive":
        x = np.exp(rng.uniform(-20, 20, n))
    elif draw == "above_minus_one":
        x = np.concatenate([rng.uniform(-0.999, 1.0, n // 2), rng.uniform(-1e-4, 1e-4, n // 4),
                            np.exp(rng.uniform(-5, 20, n - n // 2 - n // 4))])
    elif draw == "gamma":  # lgamma: both signs (negative non-integers), its zeros at 1 and 2, up to overflow
        x = np.concatenate([rng.uniform(-10, 10, n // 2), 1 + rng.uniform(-1e-3, 1e-3, n // 8),
                            2 + rng.uniform(-1e-3, 1e-3, n // 8), -np.exp(rng.uniform(0, 15, n // 8)),
                            np.exp(rng.uniform(-100, 88, n - n // 2 - 3 * (n // 8)))])
    elif draw == "unit":
        x = rng.uniform(-1.0, 1.0, n)
    elif draw == "wide":  # small, rotary-embedding-sized and huge arguments (both reductions of sin)
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 39, n).astype(np.float64)
        x = np.clip(x, -3e38, 3e38)
    else:
        x = rng.standard_normal(n) * 4.0
    x[:len(SPECIAL)] = SPECIAL
    return x.astype(numpy_dtype(dtype)).reshape(SHAPE)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("op", list(OPS))
def test_op_on_the_gpu(op, dtype):
    fn, draw, exact = OPS[op]
    text = f"""func.func @{op}_{dtype}(%x: tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>) -> tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}> {{
  %y = fusion.{op} %x : tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>
  func.return %y : tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>
}}"""
    x = _inputs(draw, dtype)
    got = np.asarray(fuser.compile(text)(x)).astype(np.float64)
    want = _torch64(fn, x)
    if dtype == "bf16" or not exact:  # one rounding of the result to the output type
        want_t = want.astype(numpy_dtype(dtype)).astype(np.float64)
    else:
        want_t = want.astype(np.float32).astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want_t)), f"{op}: NaN where numpy has none, or none where it has"
    ok = ~np.isnan(want_t)
    g, w = got[ok], want_t[ok]
    assert np.array_equal(np.isinf(g), np.isinf(w)) and np.all(g[np.isinf(w)] == w[np.isinf(w)]), op
    fin = np.isfinite(w)
    if exact is True:
        assert np.array_equal(g[fin], w[fin]), f"{op}: {np.sum(g[fin] != w[fin])} elements differ"
    else:
        ulp = 2.0 ** -7 if dtype == "bf16" else 2.0 ** -21  # bf16: one rounding; f32: a few ulp of the helpers
        if exact == "rounded" and dtype == "f32":  # within one ulp of torch's float64, rounded
            ulp = 2.0 ** -23
        err = np.abs(g[fin] - w[fin])
        tiny = 2.0 ** -148 if exact == "rounded" and dtype == "f32" else 2.0 ** -22 if dtype == "f32" else 2.0 ** -9
        bound = ulp * np.abs(w[fin]) + tiny
        assert np.all(err <= bound), f"{op} {dtype}: worst error {np.max(err - bound):.3g} over the bound"


TESTS = {"isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite, "isposinf": torch.isposinf,
         "isneginf": torch.isneginf, "signbit": torch.signbit}


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("test", list(TESTS))
def test_float_test_on_the_gpu(test, dtype):
    """The i1 masks, exactly, with NaNs of both signs, both infinities and both zeros planted."""
    text = f"""func.func @{test}_{dtype}(%x: tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>) -> tensor<{SHAPE[0]}x{SHAPE[1]}xi1> {{
  %m = fusion.{test} %x : tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>
  func.return %m : tensor<{SHAPE[0]}x{SHAPE[1]}xi1>
}}"""
    x = _inputs("normal", dtype)
    x.ravel()[len(SPECIAL)] = -x.dtype.type(math.nan)  # a NaN with its sign bit set
    got = np.asarray(fuser.compile(text)(x))
    want = TESTS[test](torch.from_numpy(x.astype(np.float32))).numpy()
    assert got.dtype == np.bool_ and np.array_equal(got, want), f"{test} {dtype}: {np.sum(got != want)} differ"


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_clamp_and_frac_on_the_gpu(dtype):
    """The API's composites: clamp with a tensor lower bound and a scalar upper one, and frac,
    exactly torch's (NaN and infinities planted)."""
    with fuser.FusionBuilder(f"clamp_frac_{dtype}") as fb:
        x = fb.input(SHAPE, dtype, name="x")
        lo = fb.input(SHAPE, dtype, name="lo")
        fb.output(fuser.clamp(x, lo, 1.5), fuser.frac(x))
    x = _inputs("normal", dtype)
    lo = np.ascontiguousarray((x.astype(np.float32)[::-1] * 0.25).astype(x.dtype))  # another array, same type
    clamped, frac = (np.asarray(o) for o in fuser.compile(fb)(x, lo))
    tx, tlo = (torch.from_numpy(a.astype(np.float32)) for a in (x, lo))
    want_c = torch.clamp(tx, tlo, torch.tensor(1.5)).numpy().astype(x.dtype)
    want_f = torch.frac(tx).numpy().astype(x.dtype)  # (exact in f32; one rounding to bf16)
    np.testing.assert_array_equal(clamped.astype(np.float32), want_c.astype(np.float32))
    np.testing.assert_array_equal(frac.astype(np.float32), want_f.astype(np.float32))


def test_logical_ops_on_the_gpu():
    """logical_not / and / or / xor of masks, as torch's, on masks made in the same kernel and
    read from memory."""
    with fuser.FusionBuilder("masks") as fb:
        x = fb.input(SHAPE, "f32", name="x")
        m = fb.input(SHAPE, "i1", name="m")
        a = x > 0.0
        fb.output(fuser.logical_not(a), fuser.logical_and(a, m), fuser.logical_or(a, m), fuser.logical_xor(a, m))
    x = _inputs("normal", "f32")
    m = np.random.default_rng(3).random(SHAPE) < 0.5
    got = [np.asarray(o) for o in fuser.compile(fb)(x, m)]
    ta, tm = torch.from_numpy(x) > 0, torch.from_numpy(m)
    want = [torch.logical_not(ta), torch.logical_and(ta, tm), torch.logical_or(ta, tm), torch.logical_xor(ta, tm)]
    for g, w in zip(got, want):
        assert g.dtype == np.bool_ and np.array_equal(g, w.numpy())


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_addcmul_lerp_threshold_on_the_gpu(dtype):
    """The composites in one kernel against torch on the GPU, within an ulp of the output type
    (of the terms where their sum cancels)."""
    with fuser.FusionBuilder(f"composites_{dtype}") as fb:
        a, b, w = (fb.input(SHAPE, dtype, name=n) for n in "abw")
        fb.output(fuser.addcmul(a, b, w, value=0.5), fuser.lerp(a, b, w), fuser.threshold(a, 0.1, -2.0))
    rng = np.random.default_rng(8)
    xs = [_inputs("normal", dtype)] + [rng.standard_normal(SHAPE).astype(numpy_dtype(dtype)) for _ in range(2)]
    got = [np.asarray(o).astype(np.float32) for o in fuser.compile(fb)(*xs)]
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float32
    ta, tb, tw = (torch.from_numpy(x.astype(np.float32)).to(tdt).cuda() for x in xs)
    want = [torch.addcmul(ta, tb, tw, value=0.5), torch.lerp(ta, tb, tw), torch.nn.functional.threshold(ta, 0.1, -2.0)]
    ulp = 2.0 ** -8 if dtype == "bf16" else 2.0 ** -23
    for g, w_ in zip(got, want):
        w_ = w_.float().cpu().numpy()
        assert np.array_equal(np.isnan(g), np.isnan(w_))
        ok = ~np.isnan(w_)
        np.testing.assert_allclose(g[ok], w_[ok], rtol=ulp, atol=64 * ulp)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_atan2_on_the_gpu(dtype):
    """atan2 against torch in float64: one ulp (f32; the host JIT shows it correctly rounded),
    signed zeros, infinities and NaN of both operands planted against each other."""
    text = f"""func.func @atan2_{dtype}(%y: tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>, %x: tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>) -> tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}> {{
  %a = fusion.atan2 %y, %x : tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>
  func.return %a : tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>
}}"""
    y = _inputs("wide", dtype)
    x = np.ascontiguousarray(_inputs("normal", dtype)[::-1])
    special = np.array([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0])
    y.ravel()[:49], x.ravel()[:49] = np.repeat(special, 7), np.tile(special, 7)
    got = np.asarray(fuser.compile(text)(y, x)).astype(np.float64)
    want = torch.atan2(torch.from_numpy(y.astype(np.float64)), torch.from_numpy(x.astype(np.float64))).numpy()
    want_t = want.astype(numpy_dtype(dtype)).astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want_t))
    ok = ~np.isnan(want_t)
    assert np.array_equal(np.signbit(got[ok]), np.signbit(want_t[ok]))
    ulp = 2.0 ** -7 if dtype == "bf16" else 2.0 ** -23
    np.testing.assert_allclose(got[ok], want_t[ok], rtol=ulp, atol=2.0 ** -148)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_fmod_and_remainder_on_the_gpu(dtype):
    """fmod exactly as C's (numpy's) fmod, remainder as torch defines it (fmod, then + b where the
    signs differ, rounded once), on operands of every scale with zeros, infinities and NaN; and as
    torch's own kernels where the quotient is below 2^20 (torch's CPU fmod turns a quotient that
    overflows into NaN)."""
    with fuser.FusionBuilder(f"mods_{dtype}") as fb:
        a, b = (fb.input(SHAPE, dtype, name=n) for n in "ab")
        fb.output(fuser.fmod(a, b), fuser.remainder(a, b))
    a = _inputs("wide", dtype)
    b = np.ascontiguousarray(_inputs("wide", dtype)[::-1])
    got = [np.asarray(o).astype(np.float32) for o in fuser.compile(fb)(a, b)]
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        f = np.fmod(a32, b32)
        r = np.where((f != 0) & ((f < 0) != (b32 < 0)), f + b32, f)
        moderate = np.abs(a32 / b32) < 2.0 ** 20
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float32
    ta, tb = (torch.from_numpy(x).to(tdt).cuda() for x in (a32, b32))
    torch_says = [t.float().cpu().numpy() for t in (torch.fmod(ta, tb), torch.remainder(ta, tb))]
    for g, w, t in zip(got, [f, r], torch_says):
        w = w.astype(a.dtype).astype(np.float32)  # (bf16: the one rounding of the result)
        for want, where in ((w, np.ones_like(moderate)), (t, moderate)):
            same = ((g == want) & (np.signbit(g) == np.signbit(want))) | (np.isnan(g) & np.isnan(want)) | ~where
            assert same.all(), f"{np.sum(~same)} differ, e.g. a={a32[~same][:3]}, b={b32[~same][:3]}"


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: the same value and sign (so -0.0 is not 0.0), or both NaN."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    return ((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_lgamma_of_half_types_on_the_gpu(dtype):
    """lgamma of f16 and bf16: computed in f32 (from the f64 helper), rounded once more to the
    type; torch's float64 answer rounded to f32 and then to the type (the poles 0, -7 and 3's
    neighbours planted; f16's overflow at 65504 too)."""
    text = f"""func.func @lgamma_{dtype}(%x: tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>) -> tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}> {{
  %y = fusion.lgamma %x : tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>
  func.return %y : tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>
}}"""
    x = _inputs("gamma", dtype)
    got = np.asarray(fuser.compile(text)(x)).astype(np.float64)
    want = _torch64(torch.lgamma, x).astype(np.float32).astype(numpy_dtype(dtype)).astype(np.float64)
    same = _same_bits(got, want)
    assert same.all(), f"{np.sum(~same)} differ, e.g. x={x[~same][:4]}, got {got[~same][:4]}, want {want[~same][:4]}"


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_erfcinv_on_the_gpu(dtype):
    """erfcinv against torch.special.erfinv(1 - x) in float64 where 1 - x is exact (x >= 2^-29;
    f16's least subnormal 6e-8 is past it), and against the reference's erfcinv (its own
    float64 tail solve) below, down to f32's 1e-45: one rounding (f32: within one ulp) of the
    float64 answer; 0 -> inf, 2 -> -inf, outside [0, 2] and NaN -> NaN."""
    from fuser.runtime.reference import erfcinv as ref_erfcinv

    text = f"""func.func @erfcinv_{dtype}(%x: tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>) -> tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}> {{
  %y = fusion.erfcinv %x : tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>
  func.return %y : tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>
}}"""
    rng = np.random.default_rng(41)
    n = math.prod(SHAPE)
    x = np.concatenate([rng.uniform(0, 2, n // 2), 10.0 ** rng.uniform(-45, 0, n // 4),
                        2 - 10.0 ** rng.uniform(-7, 0, n - n // 2 - n // 4)])
    x[:9] = [0.0, -0.0, 2.0, 1.0, -0.5, 2.5, math.nan, math.inf, 1e-45]
    x = x.astype(numpy_dtype(dtype)).reshape(SHAPE)
    got = np.asarray(fuser.compile(text)(x)).astype(np.float64)
    x64 = x.astype(np.float64)
    safe = x64 >= 2.0 ** -29
    want = torch.special.erfinv(1 - torch.from_numpy(x64)).numpy()
    tail = np.vectorize(ref_erfcinv, otypes=[np.float64])(x64[~safe])
    want[~safe] = tail
    want_t = want.astype(np.float32).astype(numpy_dtype(dtype)).astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want_t))
    ok = ~np.isnan(want_t)
    assert np.array_equal(np.isinf(got[ok]), np.isinf(want_t[ok])) and np.all(got[ok][np.isinf(got[ok])] ==
                                                                             want_t[ok][np.isinf(got[ok])])
    fin = ok & np.isfinite(want_t)
    if dtype == "f32":
        np.testing.assert_allclose(got[fin], want_t[fin], rtol=2.0 ** -23, atol=2.0 ** -148)
    else:  # one rounding from a value within an f32 ulp: the type's nearest, or a neighbour on a tie
        np.testing.assert_allclose(got[fin], want_t[fin], rtol=2.0 ** -8 if dtype == "bf16" else 2.0 ** -11, atol=0)


NEXTAFTER_SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 1e-45, -1e-45, 1e-40, 6e-8, 65504.0,
                     3.3895e38, 1.5]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
def test_nextafter_on_the_gpu(dtype):
    """nextafter bit for bit as torch.nextafter on the GPU (same dtype, f64 included): every pair
    of the special values (signed zeros, infinities, NaN, subnormals, the largest finite
    values), a == b, and random operands of every scale, on an odd shape; the second output
    steps the first back (nextafter(nextafter(a, b), a) == a for finite a != b)."""
    with fuser.FusionBuilder(f"nextafter_{dtype}") as fb:
        a, b = (fb.input(SHAPE, dtype, name=n) for n in "ab")
        n1 = fuser.nextafter(a, b)
        fb.output(n1, fuser.nextafter(n1, a))
    rng = np.random.default_rng(43)
    n = math.prod(SHAPE)
    top = 300 if dtype == "f64" else 38 if dtype in ("f32", "bf16") else 4
    a = rng.standard_normal(n) * 10.0 ** rng.uniform(-top, top, n)
    b = rng.standard_normal(n) * 10.0 ** rng.uniform(-top, top, n)
    k = len(NEXTAFTER_SPECIAL)
    a[:k * k], b[:k * k] = np.repeat(NEXTAFTER_SPECIAL, k), np.tile(NEXTAFTER_SPECIAL, k)
    b[k * k:k * k + 500] = a[k * k:k * k + 500]  # a == b
    dt = numpy_dtype(dtype)
    a, b = (np.clip(v, -3e38, 3e38).astype(np.float32).astype(dt) if dtype != "f64" else v for v in (a, b))
    a, b = a.reshape(SHAPE), b.reshape(SHAPE)
    got, back = (np.asarray(o) for o in fuser.compile(fb)(a, b))
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}[dtype]
    ta, tb = (torch.from_numpy(v.astype(np.float64)).to(tdt).cuda() for v in (a, b))
    t1 = torch.nextafter(ta, tb)
    for g, w in ((got, t1), (back, torch.nextafter(t1, ta))):
        w = w.double().cpu().numpy()
        same = _same_bits(g, w)
        assert same.all(), f"{np.sum(~same)} differ: a={a[~same][:4]}, b={b[~same][:4]}, got {g[~same][:4]}, want {w[~same][:4]}"
    finite = np.isfinite(a.astype(np.float64)) & np.isfinite(b.astype(np.float64)) & (a != b) & \
        np.isfinite(got.astype(np.float64))
    assert np.array_equal(back[finite].astype(np.float64), a[finite].astype(np.float64))
