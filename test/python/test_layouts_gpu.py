"""Strided inputs read in place and outputs in a stride order (issue 32) on the GPU, against
torch on CUDA: every view of layout_cases.py (slices with steps, transposes, expands, gaps with
storage offsets, a 3-D permute of a stepped slice, an odd start) in every dtype family, outputs
row-major and reversed; reductions, a softmax, a matmul and a scan of strided inputs; numpy
and DeviceArray inputs; the PyTorch backend passing strided region inputs without copies."""

from __future__ import annotations

import numpy as np
import pytest
from layout_cases import VIEWS, declared, make_view, unary_fusion, unary_torch

import fuser
from fuser.dialects.fusion.layout import order_strides
from fuser.runtime.arrays import ArgumentError
from cuda_torch import cuda_torch

pytestmark = pytest.mark.gpu

FAMILIES = ["f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64", "u8", "i1"]


def _close(torch, got, want, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype in ("f32", "f16", "bf16"):  # exp in fuser's libm against torch's: a few ulps
        tol = {"f32": 1e-5, "f16": 1e-2, "bf16": 1.6e-2}[dtype]
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    else:
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("pipeline", ["default", "default{vector=1}"])
@pytest.mark.parametrize("dtype", FAMILIES)
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_strided_views_of_every_family(name, dtype, pipeline):
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(11)
    v = make_view(torch, name, dtype, gen, device="cuda")
    for order in (None, tuple(range(v.dim()))):  # row-major, and dim 0 innermost
        got = fuser.compile(unary_fusion(v, dtype, order=order), pipeline=pipeline)(v)
        _close(torch, got, unary_torch(torch, v, dtype), dtype)
        if order is not None:
            assert got.stride() == order_strides(v.shape, order), (got.stride(), order)


def test_vector_loads_of_aligned_rows_and_scalar_loads_of_odd_ones():
    """The aligned gapped rows are read with 16-byte loads; the odd start declares offset 1 and
    reads lane by lane; both equal torch exactly (a copy)."""
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(12)
    for name, vec in (("aligned_rows", True), ("odd_start", False)):
        v = make_view(torch, name, "f32", gen, device="cuda")
        strides, offset = declared(v)
        fb = fuser.FusionBuilder("copy_" + name)
        x = fb.input(tuple(v.shape), "f32", name="x", strides=strides, offset=offset)
        fb.output(x * 1.0)
        c = fuser.compile(fb)
        assert ("ld.global.v4" in c.ptx) == vec, name
        torch.testing.assert_close(c(v), v, rtol=0, atol=0)


def test_reductions_softmax_scan_and_matmul_of_strided_inputs():
    torch = cuda_torch()
    g = torch.Generator(device="cuda").manual_seed(13)
    xt = torch.randn(70, 33, generator=g, device="cuda").t()  # [33, 70], innermost stride 33
    fb = fuser.FusionBuilder("row_sums")
    x = fb.input(tuple(xt.shape), "f32", name="x", strides=xt.stride())
    fb.output(fuser.sum(x, [1]), fuser.sum(x, [0]))
    rows, cols = fuser.compile(fb)(xt)
    torch.testing.assert_close(rows, xt.sum(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(cols, xt.sum(0), rtol=1e-5, atol=1e-5)

    wide = torch.randn(9, 300, generator=g, device="cuda").bfloat16()
    xs = wide[:, 7:7 + 2 * 137:2]  # [9, 137], step 2, offset 7
    strides, offset = declared(xs)
    fb = fuser.FusionBuilder("softmax")
    x = fb.input(tuple(xs.shape), "bf16", name="x", strides=strides, offset=offset)
    f = x.cast("f32")
    e = fuser.exp(f - fuser.amax(f, [1], keepdim=True))
    fb.output((e / fuser.sum(e, [1], keepdim=True)).cast("bf16"), stride_order=[0, 1])
    got = fuser.compile(fb)(xs)
    torch.testing.assert_close(got, torch.softmax(xs.float(), 1).bfloat16(), rtol=1.6e-2, atol=1e-3)
    assert got.stride() == (1, 9)

    col = torch.randn(5, 1, generator=g, device="cuda").expand(5, 211)  # each row one value
    fb = fuser.FusionBuilder("scan")
    x = fb.input(tuple(col.shape), "f32", name="x", strides=col.stride())
    fb.output(fuser.cumsum(x, 1))
    torch.testing.assert_close(fuser.compile(fb)(col), col.cumsum(1), rtol=1e-5, atol=1e-4)

    a = torch.randn(256, 136, generator=g, device="cuda").bfloat16().t()[:, :192]  # [136, 192] transposed
    b = torch.randn(192, 200, generator=g, device="cuda").bfloat16()
    fb = fuser.FusionBuilder("mm")
    x = fb.input(tuple(a.shape), "bf16", name="a", strides=a.stride())
    y = fb.input(tuple(b.shape), "bf16", name="b")
    fb.output(fuser.matmul(x, y), stride_order=[0, 1])
    got = fuser.compile(fb)(a, b)
    torch.testing.assert_close(got.float(), (a.float() @ b.float()), rtol=2e-2, atol=2e-1)
    assert got.stride() == (1, 136)


def test_numpy_and_device_array_inputs():
    torch = cuda_torch()
    rng = np.random.default_rng(14)
    base = rng.standard_normal(400).astype(np.float32)
    xv = np.lib.stride_tricks.as_strided(base[5:], (6, 13), (4 * 60, 4 * 3))  # gaps, steps, offset 5
    fb = fuser.FusionBuilder("host")
    x = fb.input(xv.shape, "f32", name="x", strides=fuser.strides_of(xv), offset=5)
    fb.output(x * 2.0, stride_order=[0, 1])
    c = fuser.compile(fb)
    got = c(xv)
    np.testing.assert_array_equal(got, xv * 2)
    assert got.strides == (4, 24)
    dense = np.ascontiguousarray(xv)
    with pytest.raises(ArgumentError, match=r"compiled for the layout strides \(60, 3\) offset 5"):
        c(dense)
    # A DeviceArray output in stride order is a permuted view of its buffer
    fb = fuser.FusionBuilder("device")
    x = fb.input((7, 9), "f32", name="x")
    fb.output(fuser.neg(x), stride_order=[0, 1])
    c = fuser.compile(fb)
    t = torch.randn(7, 9, device="cuda")
    out = c(t)
    assert out.stride() == (1, 7)
    from fuser.runtime.arrays import DeviceArray
    dev = DeviceArray((7, 9), "f32")
    dev.buffer.copy_from_host(np.ascontiguousarray(t.cpu().numpy()))
    res = c(dev)
    assert isinstance(res, DeviceArray) and res.shape == (7, 9) and res.strides == (1, 7)
    assert res.__cuda_array_interface__["strides"] == (4, 28)
    np.testing.assert_array_equal(res.numpy(), -t.cpu().numpy())


def test_torch_backend_reads_strided_inputs_in_place():
    torch = cuda_torch()
    import fuser.torch as ft
    be = ft.backend()

    def f(x, y, e):
        return torch.sigmoid(x) * y + e

    base = torch.randn(6, 40, device="cuda")
    x = base[:, 3:35]                                   # rows 40 apart, 3 in
    y = torch.randn(6, 96, device="cuda")[:, ::3]       # steps
    e = torch.randn(32, device="cuda").expand(6, 32)    # expanded rows
    fn = torch.compile(f, backend=be, dynamic=False)
    torch.testing.assert_close(fn(x, y, e), f(x, y, e), rtol=1e-5, atol=1e-5)
    assert be.stats.contiguous_copies == 0 and be.stats.gpu_calls >= 1
    # another storage offset within a 16-byte line (copied into the compiled layout, or a
    # region compiled again): still right
    x2 = base[:, 2:34]
    torch.testing.assert_close(fn(x2, y, e), f(x2, y, e), rtol=1e-5, atol=1e-5)
