"""Normalizations on the GPU: var_mean, welford, layer norm and RMS norm against float64 numpy.

Each fusion is built with fuser.api, compiled, run on random inputs and compared with numpy in
float64 on the inputs as stored. Statistics are f32 whatever the input dtype, so they are held
to f32 tolerances for f32, bf16 and f16 inputs alike; outputs in bf16/f16 to one unit of their
last place. Shapes include extents that are not multiples of anything (7x33, 256x4097), a row
too long for one block (64x65536), many short rows (100000x64) and few long columns (3x16384
reduced over the first axis).

The Welford-or-two-pass choice is the `fusion-translate-welford{mode=...}` pass (put before
fusion-segment here; the default pipeline leaves it to fusion-segment, as mode=auto): `never` keeps
the Welford path, `always` rewrites to the two-pass form, `auto` lets the compiler choose; the
main cases run under all three. The hard case x = 1e4 + N(0, 1e-2) (f32) runs through both.

Skipped (by conftest.py) when no NVIDIA GPU is present.
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest

import fuser.api as fz
from norm_fusions import EPS, build_layer_norm, build_rms_norm, build_var_mean, build_welford

pytestmark = pytest.mark.gpu

DTYPES = ["f32", "bf16", "f16"]
MODES = ["never", "always", "auto"]
NP = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
UNIT = {"f32": 2.0 ** -24, "bf16": 2.0 ** -9, "f16": 2.0 ** -11}   # half an ulp, relative
TINY = {"f32": 2.0 ** -149, "bf16": 2.0 ** -133, "f16": 2.0 ** -24}  # subnormal spacing

# f32 statistics: mean and rstd to ~1e-5 relative (plus 1e-5 of the data's rms for a mean near
# 0), var / M2 to 1e-4 (plus 1e-5 of the mean square, for a variance near 0).
MEAN_RTOL, VAR_RTOL, STAT_ATOL = 1e-5, 1e-4, 1e-5

# The hard case 1e4 + N(0, 1e-2): the mean is 1e6 standard deviations from 0.
#  * two-pass (mode=always): the second pass sums d = x - mean_f32, exact in f32 (Sterbenz), so
#    sum(d^2) - sum(d)^2/N is good to ~1e-6. A two-pass that drops the sum(d)^2/N correction is
#    off by (mean_f32 - mean)^2 / var, up to ~5e-3 here: that is a bug this test catches.
#  * Welford (mode=never): the kernels reduce y = x - K (K the first element of the reduction,
#    exact by Sterbenz) and merge (avg, M2, n) states with the parallel formula, so nothing
#    cancels; an unshifted f32 Welford tree loses 0.8-2% here and fails this bound.
HARD_VAR_RTOL = {"always": 1e-4, "never": 1e-4, "auto": 1e-4}
HARD_MEAN_RTOL = 2e-6

# Rows in registers (most), in shared memory (16x49152 f32; 16x55296 f32, 216 KB, on chip since
# sched-alias-smem places the reduction scratch; 64x65536 bf16/f16), and too long for either
# (64x65536 f32: split Welford + a second pass); tails that are not multiples of a vector.
SHAPES = [(7, 33), (1000, 1000), (256, 4097), (3, 16384), (32768, 1024), (16, 49152), (16, 55296), (64, 65536),
          (100000, 64)]


def _id(shape):
    return "x".join(map(str, shape))


def pipeline(mode: str | None) -> str:
    """The default pipeline with fusion-translate-welford{mode} before its fusion-segment (None:
    the default pipeline, where fusion-segment takes the decision as mode=auto would)."""
    from fuser.passes.pipeline import NAMED_PIPELINES

    default = NAMED_PIPELINES["default"]
    assert "fusion-translate-welford" not in default and ",fusion-segment," in default
    return default if mode is None else default.replace(",fusion-segment,",
                                                        f",fusion-translate-welford{{mode={mode}}},fusion-segment,")


def test_pipeline_text():
    text = pipeline("always")
    assert "fusion-translate-welford{mode=always},fusion-segment," in text
    assert text.count("fusion-translate-welford") == 1


def _compile(fb, mode):
    return fz.compile(fb, pipeline(mode))


def _outs(got):
    return [np.asarray(g) for g in (got if isinstance(got, tuple) else (got,))]


# ------------------------------------------------------------------------------ inputs

_CACHE: dict = {}


def _input(shape, dt, kind="normal", seed=0):
    """Random input as stored (cached across modes: the big shapes are slow to draw)."""
    key = (tuple(shape), dt, kind, seed)
    if key not in _CACHE:
        if len(_CACHE) > 8:
            _CACHE.clear()
        rng = np.random.default_rng(zlib.crc32(repr(key).encode()))  # the same inputs in every run
        if kind == "hard":
            x = (1e4 + rng.standard_normal(shape) * 1e-2).astype(np.float32)
        else:
            x = (0.5 + 2.0 * rng.standard_normal(shape)).astype(np.float32)
        _CACHE[key] = x.astype(NP[dt])
    return _CACHE[key]


def _check_stat(got, want, what, rtol, atol):
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert np.all(np.isfinite(got)), f"{what}: NaN/Inf (unwritten or wrong)"
    err = np.abs(got - want)
    bad = err > rtol * np.abs(want) + atol
    if np.any(bad):
        i = np.unravel_index(np.argmax(err - rtol * np.abs(want)), err.shape)
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} out of tolerance (rtol {rtol:g}, atol "
                             f"{np.max(atol):.3g}); worst at {i}: got {got[i]!r}, expected {want[i]!r}")


def _check_out(got, want, dt, what, scale):
    """An output rounded to dt: one ulp of dt, plus f32 arithmetic on terms of size `scale`."""
    assert got.dtype == NP[dt], f"{what}: dtype {got.dtype}, expected {dt}"
    atol = 1e-5 * scale + TINY[dt]  # cancellation (y ~ 0 from terms ~ 1) leaves the f32 error absolute
    _check_stat(got, want, what, rtol=2 * UNIT[dt] + 1e-5, atol=atol)


# ----------------------------------------------------------------------------- fusions


def _moments(x, dim):
    x64 = np.asarray(x, dtype=np.float64)
    mean = x64.mean(dim, keepdims=True)
    m2 = ((x64 - mean) ** 2).sum(dim)
    ms = (x64 * x64).mean(dim)  # the mean square, for absolute tolerances
    return mean.squeeze(dim), m2, ms


# ------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dim", [1, 0], ids=["last", "first"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=_id)
def test_var_mean(shape, dt, dim, mode):
    x = _input(shape, dt)
    n = shape[dim]
    k = _compile(build_var_mean(shape, dt, dim), mode)
    var, mean = _outs(k(x))
    emean, m2, ms = _moments(x, dim)
    assert var.dtype == mean.dtype == np.float32
    _check_stat(mean, emean, "mean", MEAN_RTOL, STAT_ATOL * np.sqrt(ms))
    _check_stat(var, m2 / (n - 1), "var", VAR_RTOL, STAT_ATOL * ms)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dim", [1, 0], ids=["last", "first"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(7, 33), (256, 4097), (64, 65536), (100000, 64)], ids=_id)
def test_welford(shape, dt, dim, mode):
    x = _input(shape, dt)
    n = shape[dim]
    k = _compile(build_welford(shape, dt, dim), mode)
    avg, m2, cnt = _outs(k(x))
    emean, em2, ms = _moments(x, dim)
    assert avg.dtype == m2.dtype == np.float32 and cnt.dtype == np.int64
    assert np.all(cnt == n), f"N: expected {n}, got {np.unique(cnt)[:5]}"
    _check_stat(avg, emean, "avg", MEAN_RTOL, STAT_ATOL * np.sqrt(ms))
    _check_stat(m2, em2, "M2", VAR_RTOL, STAT_ATOL * ms * n)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dim", [1, 0], ids=["last", "first"])
@pytest.mark.parametrize("n_keep, n_red", [(64, 4096), (8, 65536), (1000, 1000), (3, 16384)],
                         ids=["64x4096", "8x65536", "1000x1000", "3x16384"])
def test_var_mean_hard_case(n_keep, n_red, dim, mode):
    """1e4 + N(0, 1e-2) in f32 through the Welford (never) and the two-pass (always) paths."""
    shape = (n_keep, n_red) if dim == 1 else (n_red, n_keep)
    x = _input(shape, "f32", kind="hard")
    k = _compile(build_var_mean(shape, "f32", dim), mode)
    var, mean = _outs(k(x))
    emean, m2, _ = _moments(x, dim)
    _check_stat(mean, emean, f"mean ({mode})", HARD_MEAN_RTOL, 0.0)
    _check_stat(var, m2 / (n_red - 1), f"var ({mode})", HARD_VAR_RTOL[mode], 0.0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=_id)
def test_layer_norm(shape, dt, mode):
    r, c = shape
    x = _input(shape, dt)
    w, b = _input((c,), dt, seed=1), _input((c,), dt, seed=2)
    k = _compile(build_layer_norm(shape, dt), mode)
    y, mean, rstd = _outs(k(x, w, b))
    x64, w64, b64 = (np.asarray(a, dtype=np.float64) for a in (x, w, b))
    emean = x64.mean(1, keepdims=True)
    evar = x64.var(1, keepdims=True)
    erstd = 1.0 / np.sqrt(evar + EPS)
    xn = (x64 - emean) * erstd
    ey = xn * w64 + b64
    assert mean.shape == rstd.shape == (r, 1) and mean.dtype == rstd.dtype == np.float32
    _check_stat(mean, emean, "mean", MEAN_RTOL, STAT_ATOL * np.sqrt((x64 * x64).mean(1, keepdims=True)))
    _check_stat(rstd, erstd, "rstd", MEAN_RTOL, 0.0)
    # f32 error of y = (x - mean) * rstd * w + b is relative to the terms it is computed from.
    _check_out(y, ey, dt, "y", scale=(np.abs(x64) + np.abs(emean)) * erstd * np.abs(w64) + np.abs(b64))


@pytest.mark.parametrize("shape, dt", [((2, 3, 50257), "bf16"), ((4, 33, 50257), "f16"), ((3, 2, 65536), "bf16"),
                                       ((5, 7, 4097), "f32")], ids=lambda v: _id(v) if isinstance(v, tuple) else v)
def test_log_softmax_of_rows_read_through_a_reshape(shape, dt):
    """A language model's loss input: log_softmax over x[B,T,V] read as B*T rows. The rows are
    cached in shared memory (V = 50257: one-element accesses; 65536 bf16: 16-byte vectors) or in
    registers (4097 f32), copied from x through the reshape."""
    from fuser.tools.bench.workloads import log_softmax

    b, t, v = shape
    x = _input(shape, dt)
    k = fz.compile(log_softmax(shape, dt, shape).build(shape, dt))
    (y,) = _outs(k(x))
    x64 = np.asarray(x, dtype=np.float64).reshape(b * t, v)
    z = x64 - x64.max(1, keepdims=True)
    want = z - np.log(np.exp(z).sum(1, keepdims=True))
    assert y.dtype == np.float32
    _check_stat(y, want, "log_softmax", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, dt", [((7, 50257), "bf16"), ((33, 32000), "bf16"), ((5, 4097), "f32"),
                                       ((9, 50264), "f16")], ids=lambda v: _id(v) if isinstance(v, tuple) else v)
def test_loss_gradient_whose_sum_is_of_the_labels(shape, dt):
    """A cross-entropy gradient onehot - softmax(x) * sum(onehot): the row's sum reads only the
    labels, so the kernel caches nothing and reads x once, after the sum (looped over a row of
    50257 or 50264, in registers for 32000 and 4097). One row's label is out of range (an
    ignored token: its sum is 0)."""
    from fuser.tools.sanitize import LABEL_ROWS

    r, c = shape
    x = _input(shape, dt)
    x64 = np.asarray(x, dtype=np.float64)
    lse = np.log(np.exp(x64 - x64.max(1, keepdims=True)).sum(1)) + x64.max(1)
    labels = np.random.default_rng(5).integers(0, c, r).astype(np.int64)
    labels[r // 2] = -100
    k = fz.compile(LABEL_ROWS.format(r=r, c=c, dt=dt))
    assert ("looped, nothing cached" if c > 50000 else "vectors/thread in registers") in k.ir("sched")
    (g,) = _outs(k(x, lse.astype(np.float32), labels))
    onehot = -(np.arange(c)[None, :] == labels[:, None]).astype(np.float64)
    p = np.exp(x64 - lse.astype(np.float32).astype(np.float64)[:, None])
    want = onehot - p * onehot.sum(1, keepdims=True)
    _check_out(g, want, dt, "grad", scale=p + 1.0)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=_id)
def test_rms_norm(shape, dt):
    r, c = shape
    x, w = _input(shape, dt), _input((c,), dt, seed=1)
    y = _outs(_compile(build_rms_norm(shape, dt), None)(x, w))[0]
    x64, w64 = np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64)
    xn = x64 / np.sqrt((x64 * x64).mean(1, keepdims=True) + EPS)
    _check_out(y, xn * w64, dt, "y", scale=np.abs(xn * w64))


@pytest.mark.parametrize("mode", [None] + MODES)
def test_unsupported_middle_dim_is_a_clear_error(mode):
    """var_mean over the middle dim of a rank-3 tensor: either a clear error naming the op, or
    (once supported) the right answer; never a wrong one."""
    shape = (8, 33, 40)
    t = "tensor<8x33x40xf32>"
    text = f"""
func.func @f(%x: {t}) -> (tensor<8x40xf32>, tensor<8x40xf32>) {{
  %v, %m = fusion.var_mean %x dims [1] correction 1 : {t} to tensor<8x40xf32>, tensor<8x40xf32>
  func.return %v, %m : tensor<8x40xf32>, tensor<8x40xf32>
}}"""
    try:
        k = fz.compile(text, pipeline(mode))
    except Exception as e:
        assert "fusion.var_mean" in str(e), f"the error must name the op: {e}"
        return
    x = _input(shape, "f32")
    var, mean = _outs(k(x))
    emean, m2, ms = _moments(x, 1)
    _check_stat(mean, emean, "mean", MEAN_RTOL, STAT_ATOL * np.sqrt(ms))
    _check_stat(var, m2 / 32, "var", VAR_RTOL, STAT_ATOL * ms)
