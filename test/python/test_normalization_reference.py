"""The reference interpreter's numerics for normalizations, against float64 numpy (CPU only).

var_mean, welford, layer norm (y, mean, rstd) and RMS norm, built with fuser.api, over the last
and the first axis, for f32/bf16/f16 inputs, including the hard case x = 1e4 + N(0, 1e-2) in f32
where the one-pass formula E[x^2] - E[x]^2 cancels catastrophically. The interpreter is the
oracle of the GPU tests (test_normalization_gpu.py), so it must be right to f32 rounding here.

numpy's answer is computed in float64 from the inputs *as stored* (after rounding to their
dtype), so the comparison measures the interpreter, not the input rounding.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fuser.api as fz
from norm_fusions import EPS, build_layer_norm, build_rms_norm, build_var_mean, build_welford
from fuser.runtime.reference import reference_from_text, run_reference

DTYPES = ["f32", "bf16", "f16"]
NP = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
# Largest relative error of one rounding to the type (half an ulp), for tolerances.
UNIT = {"f32": 2.0 ** -24, "bf16": 2.0 ** -9, "f16": 2.0 ** -11}
# The spacing of the type's subnormals: an absolute error floor for outputs rounded to it.
TINY = {"f32": 2.0 ** -149, "bf16": 2.0 ** -133, "f16": 2.0 ** -24}


def _rand(shape, dt, rng, loc=0.0, scale=1.0):
    return (loc + rng.standard_normal(shape) * scale).astype(np.float32).astype(NP[dt])


def _hard(shape, rng):
    """1e4 + N(0, 1e-2) in f32: the mean is 1e6 times the standard deviation."""
    return (1e4 + rng.standard_normal(shape) * 1e-2).astype(np.float32)


def _run(fb, *ins, precision="native"):
    return run_reference(fb.func, ins, precision)


def _close(got, want, rtol, atol=0.0, what=""):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol, err_msg=what)


# ------------------------------------------------------------------------ numpy (float64)


def np_layer_norm(x, w, b):
    x, w, b = (np.asarray(a, dtype=np.float64) for a in (x, w, b))
    mean = x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(x.var(-1, keepdims=True) + EPS)
    return (x - mean) * rstd * w + b, mean, rstd


def np_rms_norm(x, w):
    x, w = np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * w


# -------------------------------------------------------------------------------- tests

SHAPES = [(7, 33), (256, 4097), (3, 1000), (1000, 3), (1, 1), (2, 65536)]


@pytest.mark.parametrize("precision", ["native", "f64"])
@pytest.mark.parametrize("dim", [1, 0], ids=["last", "first"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_var_mean(shape, dt, dim, precision):
    rng = np.random.default_rng(hash((shape, dt, dim)) % 2**32)
    x = _rand(shape, dt, rng, loc=0.5, scale=2.0)
    x64 = x.astype(np.float64)
    n = shape[dim]
    for correction in (0, 1):
        v, m = _run(build_var_mean(shape, dt, dim, correction), x, precision=precision)
        assert v.dtype == np.float32 if precision == "native" else v.dtype == np.float64
        assert v.shape == m.shape == (shape[1 - dim],)
        _close(m, x64.mean(dim), rtol=4 * UNIT["f32"], atol=1e-12, what="mean")
        if n - correction <= 0:
            assert np.all(np.isnan(v)), "0/0 is NaN, as torch"
        else:
            _close(v, x64.var(dim, ddof=correction), rtol=4 * UNIT["f32"], atol=1e-30, what="var")


@pytest.mark.parametrize("dt", DTYPES)
def test_var_mean_keepdim_and_large_correction(dt):
    rng = np.random.default_rng(1)
    x = _rand((5, 2), dt, rng)
    v, m = _run(build_var_mean((5, 2), dt, 1, correction=2, keepdim=True), x)
    assert v.shape == m.shape == (5, 1)
    assert np.all(np.isnan(v) | np.isinf(v))  # N - correction = 0: M2/0, as torch
    v, m = _run(build_var_mean((5, 2), dt, 1, correction=3, keepdim=True), x)
    assert np.all(np.isinf(v) | np.isnan(v)) and not np.any(v < 0), "a negative denominator clamps to 0, never < 0"
    _close(m, x.astype(np.float64).mean(1, keepdims=True), rtol=4 * UNIT["f32"])


@pytest.mark.parametrize("dim", [1, 0], ids=["last", "first"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(7, 33), (256, 4097), (1000, 3)], ids=lambda s: "x".join(map(str, s)))
def test_welford(shape, dt, dim):
    rng = np.random.default_rng(2)
    x = _rand(shape, dt, rng, loc=-1.0, scale=3.0)
    x64 = x.astype(np.float64)
    for keepdim in (False, True):
        avg, m2, n = _run(build_welford(shape, dt, dim, keepdim), x)
        out_shape = (shape[0], 1) if keepdim and dim == 1 else (1, shape[1]) if keepdim else (shape[1 - dim],)
        assert avg.shape == m2.shape == n.shape == out_shape
        assert avg.dtype == m2.dtype == np.float32 and n.dtype == np.int64
        assert np.all(n == shape[dim])
        mean = x64.mean(dim, keepdims=keepdim)
        _close(avg, mean, rtol=4 * UNIT["f32"], atol=1e-12, what="avg")
        _close(m2, ((x64 - x64.mean(dim, keepdims=True)) ** 2).sum(dim, keepdims=keepdim), rtol=4 * UNIT["f32"],
               what="M2")


@pytest.mark.parametrize("dim", [1, 0], ids=["last", "first"])
@pytest.mark.parametrize("n_keep, n_red", [(4, 4096), (64, 1000), (3, 65536)], ids=["4x4096", "64x1000", "3x65536"])
def test_hard_case_var_mean_and_welford(n_keep, n_red, dim):
    """x = 1e4 + N(0, 1e-2) in f32: var ~ 1e-4 while mean^2 ~ 1e8; n_red elements per statistic."""
    shape = (n_keep, n_red) if dim == 1 else (n_red, n_keep)
    rng = np.random.default_rng(3)
    x = _hard(shape, rng)
    x64 = x.astype(np.float64)
    var = x64.var(dim, ddof=1)
    # The case is hard: the one-pass f32 formula gives 0, a negative number or garbage.
    n = np.float32(shape[dim])
    naive = (np.sum(x * x, axis=dim, dtype=np.float32) - np.sum(x, axis=dim, dtype=np.float32) ** 2 / n) / (n - 1)
    assert np.max(np.abs(naive - var) / var) > 0.5  # often exactly 0, or negative
    for precision in ("native", "f64"):
        v, m = _run(build_var_mean(shape, "f32", dim, 1), x, precision=precision)
        _close(v, var, rtol=4 * UNIT["f32"], what=f"var ({precision})")
        _close(m, x64.mean(dim), rtol=4 * UNIT["f32"], what=f"mean ({precision})")
        avg, m2, cnt = _run(build_welford(shape, "f32", dim), x, precision=precision)
        _close(m2, var * (shape[dim] - 1), rtol=4 * UNIT["f32"], what=f"M2 ({precision})")
        assert np.all(cnt == shape[dim])


@pytest.mark.parametrize("dt", DTYPES)
def test_var_mean_f16_values_whose_squares_overflow_f16(dt):
    """Values up to ~6e4 (x^2 overflows f16 and bf16-precision sums): statistics stay finite and exact."""
    rng = np.random.default_rng(4)
    x = _rand((16, 513), dt, rng, loc=3e4, scale=1e4)
    x64 = x.astype(np.float64)
    v, m = _run(build_var_mean((16, 513), dt, 1), x)
    assert np.all(np.isfinite(v))
    _close(v, x64.var(1, ddof=1), rtol=4 * UNIT["f32"])
    _close(m, x64.mean(1), rtol=4 * UNIT["f32"])


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(7, 33), (256, 4097), (3, 16384), (1000, 64)], ids=lambda s: "x".join(map(str, s)))
def test_layer_norm(shape, dt):
    rng = np.random.default_rng(5)
    r, c = shape
    x, w, b = _rand(shape, dt, rng, loc=1.0, scale=2.0), _rand((c,), dt, rng), _rand((c,), dt, rng)
    y, mean, rstd = _run(build_layer_norm(shape, dt), x, w, b)
    ey, emean, erstd = np_layer_norm(x, w, b)
    assert y.dtype == NP[dt] and y.shape == shape and mean.shape == rstd.shape == (r, 1)
    assert mean.dtype == rstd.dtype == np.float32
    _close(mean, emean, rtol=4 * UNIT["f32"], atol=1e-7)
    _close(rstd, erstd, rtol=8 * UNIT["f32"])
    # y is computed op by op in f32 and rounded once to dt: a few f32 roundings of |terms| ~ 3, then dt's.
    scale = np.abs(ey) + 3.0 * np.abs(np.asarray(w, np.float64))
    assert np.all(np.abs(y.astype(np.float64) - ey) <= 2 * UNIT[dt] * np.abs(ey) + 64 * UNIT["f32"] * scale + TINY[dt])
    y64, mean64, rstd64 = _run(build_layer_norm(shape, dt), x, w, b, precision="f64")
    _close(y64, ey, rtol=1e-9, atol=1e-9)
    _close(rstd64, erstd, rtol=1e-12)


def test_layer_norm_hard_case():
    """1e4 + N(0, 1e-2): the statistics are exact to f32 rounding; y's error in native precision is
    exactly the one of centring with the f32-rounded mean (inherent in an f32 mean)."""
    rng = np.random.default_rng(6)
    shape = (8, 4096)
    x = _hard(shape, rng)
    w, b = _rand((4096,), "f32", rng), _rand((4096,), "f32", rng)
    ey, emean, erstd = np_layer_norm(x, w, b)
    y, mean, rstd = _run(build_layer_norm(shape, "f32"), x, w, b)
    _close(mean, emean, rtol=4 * UNIT["f32"])
    _close(rstd, erstd, rtol=8 * UNIT["f32"])
    x64 = x.astype(np.float64)
    centred = (x64 - mean.astype(np.float64)) * erstd * w.astype(np.float64) + b.astype(np.float64)
    _close(y, centred, rtol=1e-5, atol=1e-4)
    y64, _, _ = _run(build_layer_norm(shape, "f32"), x, w, b, precision="f64")
    _close(y64, ey, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(7, 33), (256, 4097), (64, 65536)], ids=lambda s: "x".join(map(str, s)))
def test_rms_norm(shape, dt):
    rng = np.random.default_rng(8)
    x, w = _rand(shape, dt, rng, scale=3.0), _rand((shape[1],), dt, rng)
    (y,) = _run(build_rms_norm(shape, dt), x, w)
    want = np_rms_norm(x, w)
    assert y.dtype == NP[dt] and y.shape == shape
    bound = 2 * UNIT[dt] * np.abs(want) + 64 * UNIT["f32"] * np.abs(np.asarray(w, np.float64)) + TINY[dt]
    assert np.all(np.abs(y.astype(np.float64) - want) <= bound)
    (y64,) = _run(build_rms_norm(shape, dt), x, w, precision="f64")
    _close(y64, want, rtol=1e-9, atol=1e-12)


def test_var_mean_text_form_matches_builder():
    """The MLIR spelling the benchmark uses gives the same numbers as the builder's."""
    text = """
func.func @f(%x: tensor<33x7xbf16>) -> (tensor<7xf32>, tensor<7xf32>) {
  %v, %m = fusion.var_mean %x dims [0] correction 1 : tensor<33x7xbf16> to tensor<7xf32>, tensor<7xf32>
  func.return %v, %m : tensor<7xf32>, tensor<7xf32>
}"""
    x = _rand((33, 7), "bf16", np.random.default_rng(9))
    a = reference_from_text(text)(x)
    b = _run(build_var_mean((33, 7), "bf16", 0), x)
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p, q)
