"""Sorts (fuser.sort, argsort, topk) on the GPU against torch, on odd shapes and every dtype
family: rows of 1, 2, 3, 31, 33, 1000, 4097 and 16384 elements (a bitonic network of the whole
row in shared memory; short rows several to a block), topk of rows up to 100000 (each thread's
first k in registers, then a network of the candidates) and with a k too large for that, many
short rows, rank 1 and 3, another dim through the API's permute, forced block sizes, and a sort
whose producers and pointwise consumers share its kernel. Inputs have many ties, NaN, -0.0 and
0.0 and infinities; values and indices must be exactly torch's stable sort's (topk: its first
k; torch.topk's own values agree, up to the order of -0.0 and 0.0 among equal values)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import fuser
from fuser.runtime.reference import NUMPY_DTYPES
from cuda_torch import cuda_torch, torch_dtype

pytestmark = pytest.mark.gpu

SHAPES = [(1,), (2,), (3,), (4, 31), (3, 33), (5, 1000), (2, 4097), (2, 16384), (1000, 7), (3, 5, 33)]
DTYPES = ["f32", "bf16", "f16", "f64", "i32", "i64", "i16", "i1", "i8", "u8"]


def _input(torch, dt, shape, gen):
    cols = shape[-1]
    if dt == "i1":
        return torch.rand(shape, device="cuda", generator=gen) < 0.5
    if dt in ("f32", "bf16", "f16", "f64"):
        x = torch.randint(-50, 50, shape, device="cuda", generator=gen).double() / 4  # ties
        x = torch.where(torch.rand(shape, device="cuda", generator=gen) < 0.5,
                        torch.randn(shape, device="cuda", generator=gen, dtype=torch.float64) * 100, x)
        x[torch.rand(shape, device="cuda", generator=gen) < 0.1] = -0.0
        x[torch.rand(shape, device="cuda", generator=gen) < 0.1] = 0.0
        x[torch.rand(shape, device="cuda", generator=gen) < max(0.02, 2.0 / cols)] = float("nan")
        x[torch.rand(shape, device="cuda", generator=gen) < 0.02] = float("inf")
        x[torch.rand(shape, device="cuda", generator=gen) < 0.02] = float("-inf")
        return x.to(torch_dtype(dt))
    info = np.iinfo(NUMPY_DTYPES[dt])
    if dt == "i64":
        x = torch.randint(-2**63, 2**63 - 1, shape, dtype=torch.int64, device="cuda", generator=gen)
    else:
        x = torch.randint(int(info.min), int(info.max) + 1, shape, dtype=torch.int64, device="cuda", generator=gen)
    small = torch.randint(max(int(info.min), -3), 3, shape, dtype=torch.int64, device="cuda", generator=gen)
    x = torch.where(torch.rand(shape, device="cuda", generator=gen) < 0.5, small, x)
    x.view(-1)[:2] = torch.tensor([int(info.min), int(info.max)], device="cuda")[: x.numel()]
    return x.to(torch_dtype(dt))


def _stable(torch, x, dim, descending):
    """torch's stable sort on the CPU (bools through u8: the same order)."""
    xc = x.cpu()
    v, i = torch.sort(xc.to(torch.uint8) if xc.dtype == torch.bool else xc, dim=dim, descending=descending,
                      stable=True)
    return v.to(xc.dtype), i


def _same(torch, got, want, what, zero_signs=True):
    g = got.cpu()
    assert g.dtype == want.dtype and g.shape == want.shape, (what, g.dtype, want.dtype, g.shape, want.shape)
    same = g == want
    if g.is_floating_point():
        same |= g.isnan() & want.isnan()
        if zero_signs:
            same &= (g.signbit() == want.signbit()) | g.isnan()
    bad = (~same).nonzero()
    assert bad.numel() == 0, f"{what}: {bad.shape[0]} mismatches, first at {bad[:3].tolist()}: " \
        f"{g[tuple(bad[0])]} vs {want[tuple(bad[0])]}"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda v: "x".join(map(str, v)))
@pytest.mark.parametrize("dt", DTYPES)
def test_sort_matches_torch(dt, shape):
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(repr((dt, shape)).encode()))
    x = _input(torch, dt, shape, gen)
    with fuser.FusionBuilder(f"sort_{dt}") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(*fuser.sort(xi), *fuser.sort(xi, descending=True))
    v, i, dv, di = fuser.compile(fb)(x)
    for desc, (gv, gi) in ((False, (v, i)), (True, (dv, di))):
        wv, wi = _stable(torch, x, -1, desc)
        _same(torch, gv, wv, f"values (descending={desc})")
        _same(torch, gi, wi, f"indices (descending={desc})")


TOPK = [((5, 1000), 8), ((3, 33), 1), ((3, 33), 33), ((2, 4097), 16), ((4, 32000), 8), ((2, 100000), 5),
        ((3, 1000), 17), ((2, 4097), 300), ((1000, 7), 3), ((1,), 1), ((2,), 2)]


@pytest.mark.parametrize("shape,k", TOPK, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
@pytest.mark.parametrize("dt", ["f32", "bf16", "f16", "f64", "i32", "i64", "i1", "i8", "u8"])
def test_topk_matches_torch(dt, shape, k):
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(repr((dt, shape, k)).encode()))
    x = _input(torch, dt, shape, gen)
    with fuser.FusionBuilder(f"topk_{dt}") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(*fuser.topk(xi, k), *fuser.topk(xi, k, largest=False))
    v, i, sv, si = fuser.compile(fb)(x)
    for largest, (gv, gi) in ((True, (v, i)), (False, (sv, si))):
        wv, wi = _stable(torch, x, -1, largest)
        _same(torch, gv, wv[..., :k], f"values (largest={largest})")
        _same(torch, gi, wi[..., :k], f"indices (largest={largest})")
        if dt != "i1":  # torch.topk's values on the GPU (it has no bool topk)
            tv = torch.topk(x, k, largest=largest).values
            _same(torch, gv, tv.cpu(), f"torch.topk values (largest={largest})", zero_signs=False)


@pytest.mark.parametrize("block", [32, 1024])
@pytest.mark.parametrize("dt,k", [("f32", None), ("bf16", 8), ("i64", None), ("u8", 3)])
def test_forced_block_sizes(dt, k, block):
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(block + len(dt))
    shape = (3, 5000)
    x = _input(torch, dt, shape, gen)
    with fuser.FusionBuilder("forced") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(*(fuser.sort(xi, descending=True) if k is None else fuser.topk(xi, k)))
    c = fuser.compile(fb, options={"block": block})
    assert f"{block} threads per row" in c.ir("sched")
    v, i = c(x)
    wv, wi = _stable(torch, x, -1, True)
    n = k or shape[-1]
    _same(torch, v, wv[..., :n], "values")
    _same(torch, i, wi[..., :n], "indices")


@pytest.mark.parametrize("dt", ["bf16", "i32", "i1"])
def test_other_dims_through_a_permute(dt):
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(7)
    shape = (37, 5, 100)
    x = _input(torch, dt, shape, gen)
    with fuser.FusionBuilder("dims") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(fuser.argsort(xi, 0), *fuser.sort(xi, 1, descending=True), *fuser.topk(xi, 2, 0, largest=False))
    a, v1, i1, v0, i0 = fuser.compile(fb)(x)
    _same(torch, a, _stable(torch, x, 0, False)[1], "argsort dim 0")
    wv, wi = _stable(torch, x, 1, True)
    _same(torch, v1, wv, "values dim 1")
    _same(torch, i1, wi, "indices dim 1")
    wv, wi = _stable(torch, x, 0, False)
    _same(torch, v0, wv[:2], "topk values dim 0")
    _same(torch, i0, wi[:2], "topk indices dim 0")


def test_producers_and_consumers_share_the_sort_kernel():
    """e = exp(x) * 2 is recomputed in the sort's kernel (and written by a pointwise kernel, to
    check against); values + y and indices * 2 are stored from it; a row sum of the values reads
    them back in a kernel of its own."""
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(11)
    x = (torch.randn(37, 4097, device="cuda", generator=gen) / 4).to(torch.bfloat16)
    y = torch.randn(37, 8, device="cuda", generator=gen)
    with fuser.FusionBuilder("fused") as fb:
        xi = fb.input(x.shape, "bf16", name="x")
        yi = fb.input(y.shape, "f32", name="y")
        e = fuser.exp(xi) * 2.0
        v, i = fuser.topk(e, 8)
        fb.output(v.cast("f32") + yi, i * 2, fuser.sum(v, 1), v, e)
    k = fuser.compile(fb)
    assert k.ir("sched").count("sched.kernel") == 3  # the sort, the row sum, e's own pointwise kernel
    a, b, s, vg, e = k(x, y)
    wv, wi = _stable(torch, e, -1, True)
    _same(torch, vg, wv[:, :8], "values")
    _same(torch, b, wi[:, :8] * 2, "indices * 2")
    torch.testing.assert_close(a.cpu(), wv[:, :8].float() + y.cpu(), rtol=0, atol=0)
    torch.testing.assert_close(s.float().cpu(), wv[:, :8].float().sum(1).bfloat16().float(), rtol=2e-2, atol=0.1)
