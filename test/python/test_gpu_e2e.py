"""End to end on the GPU: fusion IR -> PTX -> launch, checked against the reference interpreter.

Random inputs are drawn fresh for every case; sizes include ones that are not multiples of the
block or the vector width. Skipped (by conftest.py) when no NVIDIA GPU is present.
"""

from __future__ import annotations

import numpy as np
import pytest

from fuser import api
from fuser.runtime.reference import reference_from_text

pytestmark = pytest.mark.gpu

TOL = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}


def _np_dtype(dt):
    if dt == "bf16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return {"f32": np.float32, "f16": np.float16}[dt]


def _rand(shape, dt, rng, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(_np_dtype(dt))


def _check(text, inputs, dt, tol=None):
    k = api.compile(text)
    got = k(*inputs)
    got = got if isinstance(got, tuple) else (got,)
    # The kernel rounds every op's result to its dtype (f32 for f32 fusions): compare with the
    # reference that rounds the same way. Exact float64 would turn a cancellation in x*y+z on a
    # few random elements into an arbitrary relative error, whatever the kernel does.
    ref = reference_from_text(text)(*inputs, precision="native")
    ref = ref if isinstance(ref, (tuple, list)) else (ref,)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        g64, r64 = np.asarray(g, dtype=np.float64), np.asarray(r, dtype=np.float64)
        assert g64.shape == r64.shape
        assert np.all(np.isfinite(g64)), "output has NaN/Inf (unwritten or wrong)"
        # Below the dtype's smallest normal number it has no relative precision left (a one-element
        # f16 result of 1e-7 is two subnormal steps): measure against that floor there.
        floor = float(np.finfo(np.float16).tiny if dt == "f16" else np.finfo(np.float32).tiny)
        err = np.linalg.norm(g64 - r64) / max(np.linalg.norm(r64), floor * np.sqrt(r64.size), 1e-30)
        assert err < (tol or TOL[dt]), f"relative error {err:.3e}"


def _shape_str(shape, dt):
    return "tensor<" + "x".join(map(str, shape)) + ("x" if shape else "") + dt + ">"


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("shape", [(1,), (7,), (1000003,), (3, 5), (4097, 4099), (256, 1024)])
def test_gelu_mul_add_bias(dt, shape):
    rng = np.random.default_rng()
    t, tb = _shape_str(shape, dt), _shape_str(shape[-1:], dt)
    new = "[" + ", ".join(str(i) for i in range(len(shape) - 1)) + "]"
    bias = (f"%bb = fusion.broadcast %b dims {new} : {tb} to {t}" if len(shape) > 1
            else f"%bb = fusion.add %b, %b : {t}")
    text = f"""
func.func @f(%x: {t}, %y: {t}, %z: {t}, %b: {tb}) -> {t} {{
  %m = fusion.mul %x, %y : {t}
  %a = fusion.add %m, %z : {t}
  {bias}
  %s = fusion.add %a, %bb : {t}
  %g = fusion.gelu %s : {t}
  func.return %g : {t}
}}"""
    ins = [_rand(shape, dt, rng) for _ in range(3)] + [_rand(shape[-1:], dt, rng)]
    _check(text, ins, dt)


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("shape", [(3, 5), (4097, 4099), (64, 8192), (2, 1 << 20), (1000, 7)])
@pytest.mark.parametrize("kind", ["sum", "max"])
def test_row_reduction_of_fused_expression(dt, shape, kind):
    rng = np.random.default_rng()
    t = _shape_str(shape, dt)
    text = f"""
func.func @f(%x: {t}, %y: {t}) -> tensor<{shape[0]}xf32> {{
  %m = fusion.mul %x, %y : {t}
  %e = fusion.tanh %m : {t}
  %r = fusion.reduce {kind} %e dims [1] : {t} to tensor<{shape[0]}xf32>
  func.return %r : tensor<{shape[0]}xf32>
}}"""
    _check(text, [_rand(shape, dt, rng), _rand(shape, dt, rng)], dt, tol=1e-4 if dt == "f32" else None)


@pytest.mark.parametrize("dt", ["f32", "bf16"])
@pytest.mark.parametrize("shape", [(3, 5), (4097, 4099), (262144, 16), (5, 1 << 16)])
def test_outer_sum(dt, shape):
    rng = np.random.default_rng()
    t = _shape_str(shape, dt)
    text = f"""
func.func @f(%x: {t}) -> tensor<{shape[1]}xf32> {{
  %r = fusion.reduce sum %x dims [0] : {t} to tensor<{shape[1]}xf32>
  func.return %r : tensor<{shape[1]}xf32>
}}"""
    _check(text, [_rand(shape, dt, rng)], dt, tol=1e-4 if dt == "f32" else None)


@pytest.mark.parametrize("n", [1, 7, 1000003, 1 << 24])
def test_whole_tensor_sum(n):
    rng = np.random.default_rng()
    text = f"""
func.func @f(%x: tensor<{n}xf32>) -> tensor<f32> {{
  %r = fusion.reduce sum %x dims [0] : tensor<{n}xf32> to tensor<f32>
  func.return %r : tensor<f32>
}}"""
    _check(text, [_rand((n,), "f32", rng)], "f32", tol=1e-4)


def test_reduction_epilogue_and_keepdim():
    rng = np.random.default_rng()
    text = """
func.func @f(%x: tensor<300x1000xf32>) -> (tensor<300x1xf32>, tensor<300x1xf32>) {
  %m = fusion.reduce max %x dims [1] keepdim : tensor<300x1000xf32> to tensor<300x1xf32>
  %two = fusion.full 2.0 : tensor<300x1xf32>
  %y = fusion.mul %m, %two : tensor<300x1xf32>
  func.return %m, %y : tensor<300x1xf32>, tensor<300x1xf32>
}"""
    _check(text, [_rand((300, 1000), "f32", rng)], "f32")


def test_torch_tensors_zero_copy():
    torch = pytest.importorskip("torch")
    text = """
func.func @f(%x: tensor<4096x1024xf32>) -> tensor<4096x1024xf32> {
  %y = fusion.sigmoid %x : tensor<4096x1024xf32>
  func.return %y : tensor<4096x1024xf32>
}"""
    x = torch.randn(4096, 1024, device="cuda")
    y = api.compile(text)(x)
    assert isinstance(y, torch.Tensor) and y.is_cuda
    torch.testing.assert_close(y, torch.sigmoid(x), rtol=1e-5, atol=1e-6)


def test_pow_special_cases_and_accuracy():
    """fusion.pow, expanded into exp2/log2: C's powf special cases (negative bases with integer
    and fractional exponents, zeros, x ** 0, 1 ** y) and its accuracy against float64."""
    rng = np.random.default_rng()
    n = 4099
    x = rng.uniform(-4, 4, n).astype(np.float32)
    y = np.where(rng.random(n) < 0.5, rng.integers(-3, 4, n), rng.uniform(-3, 3, n)).astype(np.float32)
    x[:8] = [0.0, 0.0, 0.0, -2.0, -2.0, 1.0, np.nan, 3.0]
    y[:8] = [2.0, -1.0, 0.0, 3.0, 0.5, np.nan, 0.0, 0.25]
    t = f"tensor<{n}xf32>"
    text = f"func.func @p(%x: {t}, %y: {t}) -> {t} {{\n  %z = fusion.pow %x, %y : {t}\n  func.return %z : {t}\n}}"
    got = np.asarray(api.compile(text)(x, y), dtype=np.float64)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(got[np.isinf(got)], want[np.isinf(want)])
    fin = np.isfinite(want)
    rel = np.abs(got[fin] - want[fin]) / np.maximum(np.abs(want[fin]), 1e-30)
    assert rel.max() < 2e-5, f"max relative error {rel.max():.2e}"


@pytest.mark.parametrize("exponent", [2.0, 3.0])
def test_pow_of_a_constant_square_or_cube(exponent):
    """x ** 2 and x ** 3 with a constant exponent are multiplications (as torch's CUDA pow): the
    special cases as powf's (signed zeros, infinities, NaN, overflow) and within 1.5 ulp."""
    rng = np.random.default_rng(7)
    n = 4099
    x = rng.uniform(-40, 40, n).astype(np.float32)
    x[:9] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e13, -1e13, 1.0, -1.0]
    t = f"tensor<{n}xf32>"
    text = (f"func.func @p(%x: {t}) -> {t} {{\n  %c = fusion.full {exponent} : {t}\n"
            f"  %z = fusion.pow %x, %c : {t}\n  func.return %z : {t}\n}}")
    k = api.compile(text)
    assert "math.log2" not in k.ir("sched")
    got = np.asarray(k(x))
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), exponent)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[np.isinf(got)], want.astype(np.float32)[np.isinf(got)])
    assert np.array_equal(np.signbit(got[:2]), np.signbit(want[:2].astype(np.float32)))
    fin = np.isfinite(got)
    rel = np.abs(got[fin] - want[fin]) / np.maximum(np.abs(want[fin]), 1e-30)
    assert rel.max() < 1.5 * 2.0 ** -23, f"max relative error {rel.max():.2e}"


@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_gelu_keeps_its_relative_accuracy_far_below_zero(dt):
    """gelu(x) for x in [-13, -3]: values from -4e-3 down to -1.5e-38, each within a few ulp of
    x/2 erfc(-x/sqrt 2) (1 + erf(x/sqrt 2) in f32 lost all of it: gelu(-5) was 5% off)."""
    import math

    x = np.linspace(-13.0, -3.0, 4099).astype(np.float32).astype(_np_dtype(dt))
    t = _shape_str(x.shape, dt)
    k = api.compile(f"func.func @f(%x: {t}) -> {t} {{\n  %g = fusion.gelu %x : {t}\n  func.return %g : {t}\n}}")
    got = np.asarray(k(x), dtype=np.float64)
    xd = x.astype(np.float64)
    want = 0.5 * xd * np.vectorize(math.erfc)(-xd / math.sqrt(2.0))
    rel = np.abs(got - want) / np.abs(want)
    assert rel.max() < (2e-6 if dt == "f32" else 8e-3), (float(rel.max()), float(xd[np.argmax(rel)]))
