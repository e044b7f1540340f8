"""Scans (fusion.scan: cumsum, cumprod, cummax, cummin) on the CPU: the reference interpreter
against torch (the CPU build here) for every kind and element type, along the last dim and
(through the API's permute) another one; torch's NaN and tie rules for cummax/cummin; result
types and dtype= as torch's; the verifier's refusals; the planner's scan segment with its
producers and its pointwise consumers (the epilogue); PTX that ptxas takes for odd shapes. The
GPU runs are in test_scan_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

import fuser
from fuser.dialects import fusion as F
from fuser.dialects.ir import FuserDiagnostic, parse_module
from fuser.lowering.target.ptx import assemble_ptx, find_ptxas
from fuser.runtime.reference import NUMPY_DTYPES

torch = pytest.importorskip("torch")

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i1": torch.bool, "i8": torch.int8,
         "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}
FNS = {"sum": fuser.cumsum, "prod": fuser.cumprod, "max": fuser.cummax, "min": fuser.cummin}


def _torch_scan(kind, t, dim):
    if kind == "sum":
        return torch.cumsum(t, dim)
    if kind == "prod":
        return torch.cumprod(t, dim)
    return (torch.cummax if kind == "max" else torch.cummin)(t, dim).values


def _input(kind, dt, shape, rng) -> np.ndarray:
    if dt == "i1":
        return rng.random(shape) < (0.9 if kind == "prod" else 0.5)
    if dt in ("f32", "f16", "bf16"):
        if kind == "prod":
            x = 1 + rng.standard_normal(shape) / 8
        elif kind in ("max", "min"):
            x = rng.integers(-6, 6, shape).astype(np.float64)  # ties
            x[rng.random(shape) < 0.05] = np.nan
            x[rng.random(shape) < 0.1] = -0.0
        else:
            x = rng.standard_normal(shape)
        return x.astype(NUMPY_DTYPES[dt])
    info = np.iinfo(NUMPY_DTYPES[dt])
    if kind == "prod":
        return rng.choice(np.array([-3, -1, 1, 3, 1, 1, 2])[: 7 if dt != "u8" else 7], shape).clip(info.min).astype(NUMPY_DTYPES[dt])
    return rng.integers(info.min, info.max, shape, endpoint=True, dtype=np.int64).astype(NUMPY_DTYPES[dt])


def _as_torch(x: np.ndarray, dt: str):
    if dt == "bf16":
        return torch.tensor(x.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(x))


def _compare(got: np.ndarray, want, kind: str, dt: str):
    if want.dtype == torch.bfloat16:
        want, got = want.float(), got.astype(np.float32)
    want = want.numpy()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if kind in ("sum", "prod") and dt in ("f32", "f16", "bf16"):
        tol = {"f32": 1e-5, "f16": 2e-3, "bf16": 2e-2}[dt]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 4, equal_nan=True)
    else:
        # exact, and -0.0 against 0.0 too (cummax/cummin take the later of equal elements)
        assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (got, want)
        if got.dtype.kind == "f":  # (a NaN's sign is not compared)
            num = ~np.isnan(want)
            assert np.array_equal(np.signbit(got[num]), np.signbit(want[num]))


@pytest.mark.parametrize("dim", [-1, 1, 0])
@pytest.mark.parametrize("dt", ["f32", "f16", "bf16", "i1", "i8", "i16", "i32", "i64", "u8"])
@pytest.mark.parametrize("kind", list(FNS))
def test_reference_matches_torch(kind, dt, dim):
    shape = (5, 7, 33)
    rng = np.random.default_rng(len(kind) * 101 + len(dt) * 7 + dim)
    x = _input(kind, dt, shape, rng)
    with fuser.FusionBuilder("r") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(FNS[kind](xi, dim))
    got = fuser.compile(fb).reference(x)
    _compare(got, _torch_scan(kind, _as_torch(x, dt), dim), kind, dt)


def test_nan_and_ties_follow_torch():
    """NaN sticks from where it appears; the later of equal elements is taken (a zero's sign)."""
    x = np.array([[1, np.nan, 3, 0, -0.0], [0, -0.0, 0, -0.0, 0], [-0.0, 2, -1, np.nan, 7], [2, 1, 2, -0.0, 0]],
                 np.float32)
    with fuser.FusionBuilder("nan") as fb:
        xi = fb.input(x.shape, "f32", name="x")
        fb.output(fuser.cummax(xi))
        fb.output(fuser.cummin(xi))
        fb.output(fuser.cumsum(xi))
    mx, mn, s = fuser.compile(fb).reference(x)
    t = torch.from_numpy(x)
    for got, want in ((mx, torch.cummax(t, 1).values), (mn, torch.cummin(t, 1).values), (s, torch.cumsum(t, 1))):
        _compare(got, want, "max", "f32")


def test_result_types_and_dtype_follow_torch():
    with fuser.FusionBuilder("t") as fb:
        b = fb.input((4, 9), "i1")
        i8 = fb.input((4, 9), "i8")
        h = fb.input((4, 9), "bf16")
        outs = [fuser.cumsum(b), fuser.cumprod(b), fuser.cummax(b), fuser.cummin(i8), fuser.cumsum(i8),
                fuser.cumsum(i8, dtype="i8"), fuser.cumsum(h), fuser.cumsum(h, dtype="f32"), fuser.cumprod(i8, dtype="f32"),
                fuser.cumsum(b, 0, dtype="i32")]
        assert [o.dtype for o in outs] == ["i64", "i64", "i1", "i8", "i64", "i8", "bf16", "f32", "f32", "i32"]
        fb.output(*outs)
    x = np.random.default_rng(3)
    bv, i8v, hv = x.random((4, 9)) < 0.5, x.integers(-128, 127, (4, 9)).astype(np.int8), \
        x.standard_normal((4, 9)).astype(NUMPY_DTYPES["bf16"])
    got = fuser.compile(fb).reference(bv, i8v, hv)
    tb, ti, th = torch.from_numpy(bv), torch.from_numpy(i8v), _as_torch(hv, "bf16")
    wants = [torch.cumsum(tb, 1), torch.cumprod(tb, 1), torch.cummax(tb, 1).values, torch.cummin(ti, 1).values,
             torch.cumsum(ti, 1), torch.cumsum(ti, 1, dtype=torch.int8), torch.cumsum(th, 1),
             torch.cumsum(th, 1, dtype=torch.float32), torch.cumprod(ti, 1, dtype=torch.float32),
             torch.cumsum(tb, 0, dtype=torch.int32)]
    for g, w in zip(got, wants):
        _compare(g, w, "sum" if w.dtype.is_floating_point else "max", "bf16" if w.dtype == torch.bfloat16 else "f32")


def test_wrapping_and_zero_d():
    x = np.full((2, 70), 2**62 + 12345, np.int64)
    u = np.full((2, 9), 200, np.uint8)
    with fuser.FusionBuilder("wrap") as fb:
        xi = fb.input(x.shape, "i64")
        ui = fb.input(u.shape, "u8")
        si = fb.input((), "f32")
        fb.output(fuser.cumsum(xi), fuser.cumprod(ui), fuser.cumsum(ui, dtype="u8"), fuser.cummax(si, 0))
    a, b, c, d = fuser.compile(fb).reference(x, u, np.float32(2.5))
    assert np.array_equal(a, torch.cumsum(torch.from_numpy(x), 1).numpy())
    assert np.array_equal(b, torch.cumprod(torch.from_numpy(u), 1).numpy())
    assert np.array_equal(c, torch.cumsum(torch.from_numpy(u), 1, dtype=torch.uint8).numpy())
    assert d.shape == () and d == np.float32(2.5)


def test_api_errors():
    with fuser.FusionBuilder("e") as fb:
        x = fb.input((3, 4), "f32")
        with pytest.raises(ValueError, match="dim 2 is out of range"):
            fuser.cumsum(x, 2)
        with pytest.raises(TypeError, match="dim must be an integer"):
            fuser.cummax(x, None)
        fb.output(fuser.cumsum(x))


BAD = [
    ("fusion.scan sum %x dim 0 : tensor<3x4xf32> to tensor<3x4xf32>",
     "'fusion.scan' op scans dim 0 of tensor<3x4xf32>: only the innermost dim (1) is scanned"),
    ("fusion.scan sum %x dim 2 : tensor<3x4xf32> to tensor<3x4xf32>", "'fusion.scan' op dim 2 is out of range"),
    ("fusion.scan mean %x dim 1 : tensor<3x4xf32> to tensor<3x4xf32>",
     "'fusion.scan' op kind 'mean' is not one of sum, prod, max, min"),
    ("fusion.scan sum %x dim 1 : tensor<3x4xf32> to tensor<3x5xf32>",
     "'fusion.scan' op result 'result' has shape [3, 5], expected [3, 4]"),
    ("fusion.scan sum %x dim 1 : tensor<3x4xi8> to tensor<3x4xi32>",
     "'fusion.scan' op sum of i8 has result element type i32, expected i64 or i8"),
    ("fusion.scan max %x dim 1 : tensor<3x4xbf16> to tensor<3x4xf16>",
     "'fusion.scan' op max of bf16 has result element type f16, expected bf16 or f32"),
    ("fusion.scan sum %x dim 1 : tensor<3x4xf64> to tensor<3x4xf32>",
     "'fusion.scan' op sum of f64 has result element type f32, expected f64"),
    ("fusion.scan sum %x dim 0 : tensor<f32> to tensor<f32>", "a scan takes a tensor of rank 1 or more"),
]


@pytest.mark.parametrize("body,message", BAD, ids=[m for _, m in BAD])
def test_verifier_names_op_and_operand(body, message):
    xt = body.split(" : ")[1].split(" to ")[0]
    rt = body.split(" to ")[1]
    text = f"func.func @f(%x: {xt}) -> {rt} {{\n  %0 = {body}\n  func.return %0 : {rt}\n}}"
    with pytest.raises(FuserDiagnostic) as err:
        parse_module(text)
    assert message in str(err.value)


def test_planner_fuses_producers_and_consumers_into_the_scan_kernel():
    """exp(x) * 2 feeds the scan (recomputed in its kernel), cumsum + y and its cast are computed
    from the registers (an epilogue): one scan kernel; an output of another shape keeps its own."""
    with fuser.FusionBuilder("fused") as fb:
        x = fb.input((37, 1000), "bf16", name="x")
        y = fb.input((37, 1000), "f32", name="y")
        c = fuser.cumsum(fuser.exp(x) * 2.0)
        fb.output((c.cast("f32") + y).cast("bf16"))
        fb.output(fuser.sum(c, 1))
    k = fuser.compile(fb)
    seg = k.ir("sched")
    assert seg.count("sched.kernel") == 2
    assert "scan of 37 rows of 1000" in seg
    fused = [line for line in k.ir("fusion").splitlines()]
    assert fused
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((37, 1000)).astype(NUMPY_DTYPES["bf16"]) / 4
    yv = rng.standard_normal((37, 1000)).astype(np.float32)
    out, s = k.reference(xv, yv)
    tx = _as_torch(xv, "bf16")
    cw = torch.cumsum(torch.exp(tx) * 2.0, 1)
    np.testing.assert_allclose(out.astype(np.float32), (cw.float() + torch.from_numpy(yv)).bfloat16().float().numpy(),
                               rtol=2e-2, atol=1e-1)


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 33), (2, 1000), (2, 4097), (1, 100000), (300, 5), (2, 3, 1)],
                         ids=str)
@pytest.mark.parametrize("kind,dt", [("sum", "f32"), ("max", "bf16"), ("prod", "i8"), ("min", "i1"), ("sum", "i64"),
                                     ("max", "f16"), ("sum", "u8")])
def test_ptx_is_assembled(kind, dt, shape):
    with fuser.FusionBuilder("p") as fb:
        x = fb.input(shape, dt, name="x")
        fb.output(FNS[kind](x))
    k = fuser.compile(fb)
    ptx = k.ptx
    assert "shfl.sync.bfly" in ptx
    if find_ptxas():
        assemble_ptx(ptx, "sm_90a")
