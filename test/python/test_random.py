"""iota and the random numbers on the CPU (issue 31): Philox 4x32-10 against Random123's
known-answer vectors, the reference interpreter's uniform and normal numbers against their
distributions (mean, variance, a Kolmogorov-Smirnov test on 10^6 draws, no correlation between
neighbouring elements or consecutive offsets), the stream's independence from the result's
shape, iota against numpy, and dropout's API."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import fuser
from fuser.runtime import philox

N = 1_000_000
KS_CRITICAL = 1.949  # sqrt(-log(alpha / 2) / 2) for alpha = 0.001: the asymptotic Kolmogorov critical value


def _ks(sample: np.ndarray, cdf) -> float:
    """The Kolmogorov-Smirnov statistic of `sample` against `cdf` (a vectorized function)."""
    x = np.sort(sample.astype(np.float64))
    f = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _draw(kind: str, shape, dtype: str, seed: int, offset: int, p0: float = None, p1: float = None,
          precision: str = "native") -> np.ndarray:
    with fuser.FusionBuilder("draw") as fb:
        s = fb.input((), "i64", name="seed")
        o = fb.input((), "i64", name="offset")
        fn = fuser.uniform if kind == "uniform" else fuser.normal
        args = () if p0 is None else (p0, p1)
        fb.output(fn(shape, s, o, *args, dtype=dtype))
    return fuser.compile(fb).reference(np.int64(seed), np.int64(offset), precision=precision)


@pytest.mark.parametrize("ctr, key, want", [
    ([0, 0, 0, 0], [0, 0], "6627e8d5 e169c58d bc57ac4c 9b00dbd8"),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, "408f276d 41c83b0e a20bc7c6 6d5451fd"),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0], "d16cfe09 94fdcceb 5001e420 24126ea1"),
])
def test_philox_known_answers(ctr, key, want):
    got = philox.philox4x32(np.array([ctr], dtype=np.uint64), tuple(key))[0]
    assert " ".join(f"{int(w):08x}" for w in got) == want


def test_uniform_distribution():
    u = _draw("uniform", (N,), "f32", 1234, 0).astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / N)
    assert abs(u.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / N)  # var of (u - 1/2)^2 is 1/180
    assert _ks(u, lambda x: x) < KS_CRITICAL / math.sqrt(N)


def test_normal_distribution():
    z = _draw("normal", (N,), "f32", 99, 3).astype(np.float64)
    assert abs(z.mean()) < 5 / math.sqrt(N)
    assert abs(z.var() - 1.0) < 5 * math.sqrt(2 / N)
    assert _ks(z, _normal_cdf) < KS_CRITICAL / math.sqrt(N)
    # the even elements (r cos t) and the odd ones (r sin t) are each normal, and uncorrelated
    assert _ks(z[0::2], _normal_cdf) < KS_CRITICAL / math.sqrt(N / 2)
    assert abs(np.corrcoef(z[0::2], z[1::2])[0, 1]) < 5 / math.sqrt(N / 2)


def test_normal_mean_and_std():
    z = _draw("normal", (200_000,), "f32", 5, 0, 3.0, 0.5).astype(np.float64)
    assert abs(z.mean() - 3.0) < 5 * 0.5 / math.sqrt(len(z))
    assert abs(z.std() - 0.5) < 0.01


@pytest.mark.parametrize("kind", ["uniform", "normal"])
def test_no_correlation_between_neighbours_or_offsets(kind):
    a = _draw(kind, (N,), "f32", 7, 0).astype(np.float64)
    b = _draw(kind, (N,), "f32", 7, 1).astype(np.float64)
    c = _draw(kind, (N,), "f32", 8, 0).astype(np.float64)
    bound = 5 / math.sqrt(N)
    for lag in (1, 2, 3, 4, 5):
        assert abs(np.corrcoef(a[:-lag], a[lag:])[0, 1]) < bound, lag
    assert abs(np.corrcoef(a, b)[0, 1]) < bound  # consecutive offsets
    assert abs(np.corrcoef(a, c)[0, 1]) < bound  # neighbouring seeds
    assert np.mean(a == b) < 1e-3


@pytest.mark.parametrize("dtype, bits", [("f32", 24), ("f16", 11), ("bf16", 8), ("f64", 53)])
def test_uniform_grid_of_each_type(dtype, bits):
    """Every value is k * 2^-bits, exact in the type, in [0, 1); f16/bf16 share f32's words."""
    u = _draw("uniform", (4099,), dtype, 11, 2).astype(np.float64)
    k = u * 2.0 ** bits
    assert np.all(k == np.floor(k)) and u.min() >= 0 and u.max() < 1
    assert len(np.unique(u)) > min(2 ** bits, 4099) // 2
    if dtype in ("f16", "bf16"):
        f = _draw("uniform", (4099,), "f32", 11, 2).astype(np.float64)
        np.testing.assert_array_equal(np.floor(f * 2.0 ** bits) * 2.0 ** -bits, u)


def test_uniform_low_high_as_the_kernels_round():
    u = _draw("uniform", (1000,), "f32", 1, 1)
    v = _draw("uniform", (1000,), "f32", 1, 1, -2.0, 5.0)
    np.testing.assert_array_equal(v, u * np.float32(7.0) + np.float32(-2.0))
    assert v.min() >= -2.0 and v.max() <= 5.0


def test_stream_depends_on_the_linear_index_only():
    """A value is the same whatever the result's shape: element i of every shape is one number."""
    flat = _draw("uniform", (2 * 3 * 37,), "f32", 42, 9)
    np.testing.assert_array_equal(_draw("uniform", (2, 3, 37), "f32", 42, 9).reshape(-1), flat)
    np.testing.assert_array_equal(_draw("uniform", (37,), "f32", 42, 9), flat[:37])
    n1, n2 = _draw("normal", (6, 37), "f32", 3, 3), _draw("normal", (222,), "f32", 3, 3)
    np.testing.assert_array_equal(n1.reshape(-1), n2)


def test_f64_precision_gives_the_same_numbers():
    """The fuzzer's checker runs the reference in f64: the words (and so u) are the same."""
    a = _draw("uniform", (999,), "bf16", 4, 4, precision="f64")
    b = _draw("uniform", (999,), "bf16", 4, 4)
    np.testing.assert_array_equal(a, b.astype(np.float64))
    z64 = _draw("normal", (999,), "f32", 4, 4, precision="f64")
    np.testing.assert_allclose(z64, _draw("normal", (999,), "f32", 4, 4), atol=1e-5)


def test_negative_and_large_seeds_are_their_bits():
    a = _draw("uniform", (64,), "f32", -1, 2**62)
    w = philox.philox4x32(np.array([[0, 0, 0, 2**30]], dtype=np.uint64), (0xFFFFFFFF, 0xFFFFFFFF))[0]
    np.testing.assert_array_equal(a[:4], (w >> 8).astype(np.float32) * np.float32(2.0 ** -24))


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64", "u8"])
def test_iota_matches_numpy(dtype):
    integer = dtype[0] in "iu"
    start, step = (5, 3) if integer else (0.5, 0.25)
    with fuser.FusionBuilder("iota") as fb:
        fb.output(fuser.iota(23, start, step, dtype, builder=fb), fuser.iota((3, 4), 1, -2, "i64", builder=fb))
    a, b = fuser.compile(fb).reference()
    npdt = {"bf16": ml_dtypes.bfloat16, "u8": np.uint8}.get(dtype, np.dtype(dtype.replace("f", "float").replace("i", "int")
                                                                              if dtype[0] != "u" else "uint8"))
    want = (np.arange(23) * step + start)
    np.testing.assert_array_equal(a, want.astype(np.float32).astype(npdt) if not integer else want.astype(npdt))
    np.testing.assert_array_equal(b, (1 - 2 * np.arange(12)).reshape(3, 4))


def test_iota_wraps_in_i8():
    with fuser.FusionBuilder("iota") as fb:
        fb.output(fuser.iota(300, 0, 1, "i8", builder=fb))
    np.testing.assert_array_equal(fuser.compile(fb).reference(), np.arange(300).astype(np.int8))


@pytest.mark.parametrize("args, want", [((5,), np.arange(5)), ((2, 11, 3), np.arange(2, 11, 3)),
                                        ((1.0, 2.0, 0.25), np.arange(1.0, 2.0, 0.25)),
                                        ((10, 0, -3), np.arange(10, 0, -3))])
def test_arange_is_torchs(args, want):
    with fuser.FusionBuilder("arange") as fb:
        t = fuser.arange(*args, builder=fb)
        fb.output(t)
    assert t.dtype == ("f32" if want.dtype.kind == "f" else "i64")
    np.testing.assert_array_equal(fuser.compile(fb).reference(), want)


def _dropout(p: float, shape=(64, 257), dtype="f32", train=True):
    with fuser.FusionBuilder("dropout") as fb:
        x = fb.input(shape, dtype, name="x")
        s, o = fb.input((), "i64", name="seed"), fb.input((), "i64", name="offset")
        y, m = fuser.dropout(x, p, s, o, train=train)
        g = fb.input(shape, dtype, name="g")
        fb.output(y, m, fuser.dropout_backward(g, m, p))
    return fb


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 1.0])
def test_dropout_reference(p):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 257)).astype(np.float32)
    g = rng.standard_normal((64, 257)).astype(np.float32)
    y, m, dx = fuser.compile(_dropout(p)).reference(x, np.int64(3), np.int64(0), g)
    assert m.dtype == np.bool_
    assert abs(m.mean() - (1 - p)) < 5 * math.sqrt(max(p * (1 - p), 1e-12) / m.size) + 1e-12
    scale = np.float32(1 / (1 - p)) if p < 1 else np.float32(0)
    np.testing.assert_array_equal(y, np.where(m, x * scale, 0).astype(np.float32))
    np.testing.assert_array_equal(dx, np.where(m, g * scale, 0).astype(np.float32))
    if 0 < p < 1:  # the mask is uniform < 1 - p of the stream
        u = _draw("uniform", (64, 257), "f32", 3, 0)
        np.testing.assert_array_equal(m, u < np.float32(1 - p))


def test_dropout_bf16_scales_in_f32_and_rounds_once():
    x = np.linspace(-3, 3, 64 * 257).reshape(64, 257).astype(ml_dtypes.bfloat16)
    y, m, _ = fuser.compile(_dropout(0.3, dtype="bf16")).reference(x, np.int64(1), np.int64(1), x)
    want = np.where(m, x.astype(np.float32) * np.float32(1 / 0.7), 0).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))


def test_dropout_eval_keeps_everything():
    x = np.ones((64, 257), np.float32)
    y, m, dx = fuser.compile(_dropout(0.5, train=False)).reference(x, np.int64(1), np.int64(1), x)
    assert m.all() and (y == x).all() and (dx == 2 * x).all()


def test_random_api_errors():
    with fuser.FusionBuilder("e") as fb:
        x = fb.input((4,), "f32")
        s32 = fb.input((), "i32")
        with pytest.raises(TypeError, match="0-d i64 tensor"):
            fuser.uniform((4,), s32, 0)
        with pytest.raises(TypeError, match="need builder="):
            fuser.uniform((4,), 1, 2)
        with pytest.raises(ValueError, match="'fusion.normal' op result has element type i32"):
            fuser.normal((4,), 1, 2, dtype="i32", builder=fb)
        with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
            fuser.dropout(x, 1.5, 1, 2)
        with pytest.raises(TypeError, match="expected a float tensor"):
            fuser.dropout(fuser.cast(x, "i32"), 0.5, 1, 2)
        with pytest.raises(ValueError, match="step must be nonzero"):
            fuser.arange(0, 4, 0, builder=fb)
        fb.output(x)
