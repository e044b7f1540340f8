"""Reductions of issue 31 on the CPU: the reference interpreter's sum, prod, max, min, any, all,
argmax and argmin of every type against torch's (the CPU build here), the API's result types and
dtype= as torch's, and the refusals (var_mean of integers, argmax over two of three dims). The
GPU runs are in test_int_reductions_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

import fuser
from fuser.runtime.reference import NUMPY_DTYPES

torch = pytest.importorskip("torch")

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i1": torch.bool, "i8": torch.int8,
         "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}
FNS = {"sum": fuser.sum, "prod": fuser.prod, "max": fuser.amax, "min": fuser.amin, "any": fuser.any,
       "all": fuser.all, "argmax": fuser.argmax, "argmin": fuser.argmin}


def _input(dt: str, shape, rng) -> np.ndarray:
    """Few distinct values (ties), zeros, the type's ends; floats with NaN and -0.0."""
    if dt == "i1":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dt in ("f32", "f16", "bf16"):
        x = rng.integers(-4, 5, shape).astype(np.float32) * 0.5
        x[rng.random(shape) < 0.05] = np.nan
        x.flat[0] = -0.0
        return x.astype(NUMPY_DTYPES[dt])
    info = np.iinfo(NUMPY_DTYPES[dt])
    x = rng.integers(int(info.min), int(info.max), shape, endpoint=True, dtype=np.int64)
    x[rng.random(shape) < 0.3] = 0
    x[rng.random(shape) < 0.3] = 1
    return x.astype(NUMPY_DTYPES[dt])


def _torch_of(x: np.ndarray, dt: str):
    return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16) if dt == "bf16" else torch.from_numpy(x)


def _want(kind, t, dims):
    if kind in ("argmax", "argmin"):
        t = t.to(torch.uint8) if t.dtype == torch.bool else t
        return (torch.argmax if kind == "argmax" else torch.argmin)(t, dim=dims)
    d = tuple(range(t.ndim)) if dims is None else dims
    if kind == "prod":
        out = t
        for a in sorted(d, reverse=True):
            out = torch.prod(out, dim=a)
        return out
    if kind in ("any", "all"):
        return (torch.any if kind == "any" else torch.all)(t if t.dtype == torch.bool else t != 0, dim=d)
    return {"sum": torch.sum, "max": torch.amax, "min": torch.amin}[kind](t, dim=d)


@pytest.mark.parametrize("dims", [(1,), (0, 2), None], ids=["mid", "ends", "all"])
@pytest.mark.parametrize("dt", ["f32", "bf16", "i1", "i8", "i16", "i32", "i64", "u8"])
@pytest.mark.parametrize("kind", list(FNS))
def test_reference_matches_torch(kind, dt, dims):
    if kind.startswith("arg") and dims == (0, 2):
        pytest.skip("argmax/argmin take one dim or all of them")
    shape = (5, 7, 9)
    x = _input(dt, shape, np.random.default_rng(len(kind) * 97 + len(dt)))
    with fuser.FusionBuilder("r") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(FNS[kind](xi, dims[0] if kind.startswith("arg") and dims else dims))
    got = fuser.compile(fb).reference(x)
    want = _want(kind, _torch_of(x, dt), dims[0] if kind.startswith("arg") and dims else dims)
    if want.dtype == torch.bfloat16:
        want = want.float()
        got = got.astype(np.float32)
    want = want.numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    if kind in ("sum", "prod") and dt in ("f32", "bf16"):
        np.testing.assert_allclose(got, want, rtol=1e-2 if dt == "bf16" else 1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def test_result_types_and_dtype_follow_torch():
    with fuser.FusionBuilder("t") as fb:
        i8 = fb.input((3, 4), "i8", name="a")
        b = fb.input((3, 4), "i1", name="b")
        h = fb.input((3, 4), "bf16", name="h")
        assert fuser.sum(i8, 1).dtype == "i64" and fuser.sum(b).dtype == "i64" and fuser.prod(b, 0).dtype == "i64"
        assert fuser.amax(i8, 1).dtype == "i8" and fuser.amin(b, 1).dtype == "i1"
        assert fuser.any(h, 1).dtype == "i1" and fuser.all(i8).dtype == "i1"
        assert fuser.argmax(h).dtype == "i64" and fuser.argmax(h).shape == ()
        assert fuser.argmin(i8, 1, keepdim=True).shape == (3, 1) and fuser.argmax(h, keepdim=True).shape == (1, 1)
        assert fuser.sum(i8, 1, dtype="i8").dtype == "i8"            # wrapped, no cast of the input
        assert fuser.sum(h, 1, dtype="f32").dtype == "f32"           # f32 accumulation named, no cast
        assert fuser.sum(i8, 1, dtype="f16").dtype == "f16"          # the input cast to f16 first
        with pytest.raises(ValueError, match="dtype i1 is not a result type of sum"):
            fuser.sum(b, 1, dtype="i1")
        fb.output(fuser.sum(i8, 1))
    text = fb.mlir()
    assert text.count("fusion.cast") == 1 and "tensor<3x4xi8> to tensor<3x4xf16>" in text


def test_statistics_of_integers_are_refused_as_torch():
    with fuser.FusionBuilder("t") as fb:
        x = fb.input((3, 4), "i32", name="x")
        for fn in (lambda: fuser.var_mean(x, 1), lambda: fuser.welford(x, 1)):
            with pytest.raises(TypeError, match="floating-point tensors only"):
                fn()
        with pytest.raises(ValueError, match="argmax reduces dims \\[0, 1\\].*one dim or all"):
            fb._emit(fuser.api.F.ReduceOp("argmax", fb.input((2, 3, 4), "f32", name="y").value, [0, 1]))
        fb.output(x)


def test_sums_wrap_in_i64_and_prod_of_bools_is_all():
    x = np.full((2, 3), 2 ** 62, dtype=np.int64)
    with fuser.FusionBuilder("w") as fb:
        xi = fb.input(x.shape, "i64", name="x")
        bi = fb.input(x.shape, "i1", name="b")
        fb.output(fuser.sum(xi, 1))
        fb.output(fuser.prod(bi, 1))
    s, p = fuser.compile(fb).reference(x, np.array([[1, 1, 1], [1, 0, 1]], np.bool_))
    assert s.tolist() == [-(2 ** 62), -(2 ** 62)]   # 3 * 2^62 wraps
    assert p.tolist() == [1, 0] and p.dtype == np.int64
