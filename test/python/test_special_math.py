"""lgamma, erfcinv and nextafter (issue 31) on the CPU: the Python API builds them (and refuses
what torch refuses), the reference interpreter computes them as torch does, and they compile to
PTX for every type the dialect takes. Their kernels' accuracy: test_libm_accuracy.py (host JIT of
the f64 helpers) and test_unary_math_gpu.py (on the GPU against torch)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fuser
from fuser.runtime.arrays import numpy_dtype

torch = pytest.importorskip("torch")

SHAPE = (7, 33)
TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}
SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 1e-45, -1e-40, 6e-8, 65504.0, 3.3895e38]


def _same_bits(got, want) -> np.ndarray:
    g, w = np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64)
    return ((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))



@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
def test_nextafter_reference_is_torchs_bit_for_bit(dtype):
    """Every pair of the special values and random operands of every scale, a == b included:
    the reference's nextafter is torch's (CPU) bit for bit, signed zeros and NaN included."""
    k = len(SPECIAL)
    rng = np.random.default_rng(5)
    n = 600
    a = np.concatenate([np.repeat(SPECIAL, k), rng.standard_normal(n) * 10.0 ** rng.uniform(-40, 38, n)])
    b = np.concatenate([np.tile(SPECIAL, k), rng.standard_normal(n)])
    b[-50:] = a[-50:]
    dt = numpy_dtype(dtype)
    a, b = (v.astype(np.float32).astype(dt) if dtype != "f64" else v for v in (a, b))
    want = torch.nextafter(*(torch.from_numpy(v.astype(np.float64)).to(TORCH[dtype]) for v in (a, b)))
    from fuser.runtime.reference import nextafter
    got = nextafter(a, b, dtype)
    assert got.dtype == dt
    same = _same_bits(got, want.double().numpy())
    assert same.all(), (a[~same][:4], b[~same][:4], got[~same][:4])


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f64"])
def test_nextafter_api_and_reference(dtype):
    """fuser.nextafter through the API and the reference interpreter, in both precisions (the
    f64 mode steps on the declared type's grid too), with a Python number as b."""
    with fuser.FusionBuilder(f"na_{dtype}") as fb:
        a, b = fb.input(SHAPE, dtype, name="a"), fb.input(SHAPE, dtype, name="b")
        fb.output(fuser.nextafter(a, b), fuser.nextafter(a, 0.0))
    rng = np.random.default_rng(7)
    dt = numpy_dtype(dtype)
    av, bv = (rng.standard_normal(SHAPE).astype(dt) for _ in range(2))
    av.ravel()[:4] = [0.0, -0.0, np.inf, np.nan]
    c = fuser.compile(fb)
    ta, tb = (torch.from_numpy(v.astype(np.float64)).to(TORCH[dtype]) for v in (av, bv))
    want = [torch.nextafter(ta, tb), torch.nextafter(ta, torch.zeros_like(ta))]
    for precision in ("native", "f64"):
        got = c.reference(av, bv, precision=precision)
        for g, w in zip(got, want):
            assert _same_bits(g, w.double().numpy()).all(), precision


def test_nextafter_of_integers_is_refused_as_torch_does():
    fb = fuser.FusionBuilder("na_int")
    x = fb.input(SHAPE, "i32")
    with pytest.raises(TypeError, match="nextafter: operands must be float"):
        fuser.nextafter(x, x)
    with pytest.raises(RuntimeError):
        torch.nextafter(torch.ones(3, dtype=torch.int32), torch.ones(3, dtype=torch.int32))


def test_nextafter_toward_an_f64_number():
    """A Python number beside an f64 tensor is an f64 constant (fusion.full of f64), not rounded."""
    with fuser.FusionBuilder("na_f64") as fb:
        fb.output(fuser.nextafter(fb.input(SHAPE, "f64", name="y"), 0.1))
    y = np.full(SHAPE, 0.1)
    y.ravel()[:3] = [0.2, 0.0, -1.0]
    want = torch.nextafter(torch.from_numpy(y), torch.tensor(0.1, dtype=torch.float64)).numpy()
    assert _same_bits(fuser.compile(fb).reference(y), want).all()


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_lgamma_reference_is_torchs(dtype):
    """lgamma in the reference: torch's float64 answer rounded once (f16 and bf16 through f32, as
    the kernels round), poles (0, -0, negative integers) and +-inf +inf, NaN NaN; an integer
    tensor is computed in f32, as torch promotes it."""
    with fuser.FusionBuilder(f"lg_{dtype}") as fb:
        fb.output(fuser.lgamma(fb.input(SHAPE, dtype, name="x")))
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.uniform(-10, 10, 150), SPECIAL, [-3.0, -2.5, 0.5, 2.0, 1.0 + 2 ** -10]])
    x = np.resize(x, SHAPE).astype(numpy_dtype(dtype))
    got = fuser.compile(fb).reference(x)
    want = torch.lgamma(torch.from_numpy(x.astype(np.float64))).numpy().astype(np.float32).astype(x.dtype)
    assert _same_bits(got, want).all()
    assert fuser.lgamma(fuser.FusionBuilder("lg_int").input(SHAPE, "i64")).dtype == "f32"


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_erfcinv_reference(dtype):
    """erfcinv in the reference: torch.special.erfinv(1 - x) in float64 where 1 - x is exact,
    and erfc of the answer is x again (relative 1e-13) where it is not, down to 1e-45; 0 -> inf,
    2 -> -inf, NaN outside [0, 2]."""
    with fuser.FusionBuilder(f"eci_{dtype}") as fb:
        fb.output(fuser.erfcinv(fb.input(SHAPE, dtype, name="x")))
    rng = np.random.default_rng(10)
    n = math.prod(SHAPE)
    x = np.concatenate([[0.0, -0.0, 2.0, 1.0, -0.1, 2.1, math.nan, 1e-45], rng.uniform(0, 2, n // 2),
                        10.0 ** rng.uniform(-45, -1, n - n // 2 - 8)]).reshape(SHAPE).astype(numpy_dtype(dtype))
    c = fuser.compile(fb)
    got = c.reference(x).astype(np.float64)
    assert got.ravel()[0] == np.inf and got.ravel()[1] == np.inf and got.ravel()[2] == -np.inf
    assert got.ravel()[3] == 0.0 and np.isnan(got.ravel()[4:7]).all()
    x64 = x.astype(np.float64)
    exact = np.isfinite(got) & (x64 >= 2.0 ** -29)
    want = torch.special.erfinv(1 - torch.from_numpy(x64)).numpy().astype(np.float32).astype(x.dtype)
    assert _same_bits(got[exact], want[exact].astype(np.float64)).all()
    z = c.reference(x, precision="f64")
    tail = np.isfinite(z) & (x64 < 2.0 ** -29) & (x64 > 0)
    assert tail.sum() > 10
    back = np.array([math.erfc(v) for v in z[tail]])
    np.testing.assert_allclose(back, x64[tail], rtol=1e-13)


@pytest.mark.parametrize("op", ["lgamma", "erfcinv"])
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_unary_ops_compile_to_ptx(op, dtype):
    t = f"tensor<{SHAPE[0]}x{SHAPE[1]}x{dtype}>"
    fuser.compile(f"func.func @k(%x: {t}) -> {t} {{\n  %y = fusion.{op} %x : {t}\n  func.return %y : {t}\n}}\n",
                  wait=True)


def test_lgamma_of_f64_compiles_and_its_reference_is_float64():
    """lgamma of f64 (libm_lgamma_f64.py): compiles to PTX; the reference is log|gamma| in
    float64 (Python's), +inf at the poles and at +-inf, as torch's."""
    t = f"tensor<{SHAPE[0]}x{SHAPE[1]}xf64>"
    text = f"func.func @k(%x: {t}) -> {t} {{\n  %y = fusion.lgamma %x : {t}\n  func.return %y : {t}\n}}\n"
    c = fuser.compile(text, wait=True)
    x = np.random.default_rng(7).uniform(-6, 6, SHAPE)
    x[0, :6] = [0.0, -0.0, -3.0, np.inf, -np.inf, np.nan]
    got = c.reference(x)
    want = torch.lgamma(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
    assert got.dtype == np.float64 and np.isnan(got[0, 5]) and (got[0, :5] == np.inf).all()
