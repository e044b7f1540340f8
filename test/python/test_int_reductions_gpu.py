"""Reductions of issue 31 on the GPU against torch on CUDA: sums, products, max and min of integer
and bool tensors (exact: i64 accumulation, wrapping), prod of floats, any/all of every type
(NaN is true) and argmax/argmin (the first extreme; NaN counts as both), on odd shapes through
every reduction scheduler: inner rows (split into chunks when few and long: 3 x 1000003), outer
columns (1027 x 33 over dim 0, a tall split one), a middle dim through a permuted view, all
dims, the joint row-and-column kernel and the normalization (persistent) kernel."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import fuser
from fuser.runtime.reference import NUMPY_DTYPES
from cuda_torch import cuda_torch, torch_dtype

pytestmark = pytest.mark.gpu

FNS = {"sum": fuser.sum, "prod": fuser.prod, "max": fuser.amax, "min": fuser.amin, "any": fuser.any,
       "all": fuser.all, "argmax": fuser.argmax, "argmin": fuser.argmin}
# (shape, dims): inner split, outer, inner, middle (permuted view), all dims, tall outer (split)
SHAPES = [((3, 1000003), 1), ((1027, 33), 0), ((1027, 33), 1), ((5, 37, 9), 1), ((1027, 33), None),
          ((200003, 3), 0)]


def _input(torch, kind, dt, shape, gen):
    """Values that make each kind's hard cases likely: long runs of zeros (any) or nonzeros
    (all), few distinct values (ties for argmax/argmin; the first must win), NaNs, sums that
    overflow the narrow types, odd factors whose products wrap in i64."""
    n = int(np.prod(shape))
    if dt == "i1":
        x = torch.rand(shape, device="cuda", generator=gen) < (0.999 if kind == "all" else 0.001 if kind == "any" else 0.5)
        return x
    if kind == "prod" and dt not in ("f32", "bf16"):
        odd = torch.tensor([-3, -1, 1, 3, 1, 1], device="cuda")
        return odd[torch.randint(0, 6, shape, device="cuda", generator=gen)].to(torch_dtype(dt))
    if dt in ("f32", "bf16", "f16"):
        if kind == "prod":
            x = torch.rand(shape, device="cuda", generator=gen) * 0.2 + 0.9
        elif kind.startswith("arg"):
            x = torch.randint(-20, 20, shape, device="cuda", generator=gen).float()  # ties
            nan = torch.rand(shape, device="cuda", generator=gen) < 3.0 / max(1, shape[-1])
            x[nan] = float("nan")
            x.view(-1)[: min(n, 4)] = float("inf")
        elif kind in ("any", "all"):
            x = torch.randn(shape, device="cuda", generator=gen)
            rare = torch.rand(shape, device="cuda", generator=gen) < 0.0005
            x = torch.where(~rare if kind == "any" else rare, torch.zeros_like(x), x)
            x.view(-1)[n // 2] = float("nan")   # NaN is nonzero
            x.view(-1)[: min(n, 3)] = -0.0      # -0.0 is zero
        else:
            x = torch.randn(shape, device="cuda", generator=gen)
        return x.to(torch_dtype(dt))
    info = np.iinfo(NUMPY_DTYPES[dt])
    if kind.startswith("arg") or kind in ("any", "all"):
        lo, hi = (-3, 4) if dt != "u8" else (0, 4)
        x = torch.randint(lo, hi, shape, device="cuda", generator=gen)
        if kind == "all":
            x = torch.where(x == 0, torch.ones_like(x), x)
            x.view(-1)[n // 3] = 0
        if kind == "any":
            x = torch.where(torch.rand(shape, device="cuda", generator=gen) < 0.001, x, torch.zeros_like(x))
        return x.to(torch_dtype(dt))
    x = torch.randint(int(info.min), int(info.max), shape, dtype=torch.int64, device="cuda", generator=gen,
                      ) if dt != "i64" else torch.randint(-2**63, 2**63 - 1, shape, dtype=torch.int64, device="cuda",
                                                            generator=gen)
    x.view(-1)[:2] = torch.tensor([int(info.min), int(info.max)], device="cuda")[: x.numel()]
    return x.to(torch_dtype(dt))


def _torch_reduce(torch, kind, x, dims):
    if kind in ("argmax", "argmin"):
        y = x.to(torch.uint8) if x.dtype == torch.bool else x
        return (torch.argmax if kind == "argmax" else torch.argmin)(y, dim=dims)
    dims_ = tuple(range(x.ndim)) if dims is None else dims
    if kind == "sum":
        return torch.sum(x, dim=dims_)
    if kind == "prod":
        y = x
        for d in sorted([dims_] if isinstance(dims_, int) else dims_, reverse=True):
            y = torch.prod(y, dim=d)
        return y
    if kind in ("any", "all"):
        return (torch.any if kind == "any" else torch.all)(x != 0 if x.dtype != torch.bool else x, dim=dims_)
    return (torch.amax if kind == "max" else torch.amin)(x, dim=dims_)


CASES = ([("sum", dt) for dt in ("i1", "i8", "u8", "i16", "i32", "i64")]
         + [("prod", dt) for dt in ("i8", "i32", "i64", "f32")]
         + [(k, dt) for k in ("max", "min") for dt in ("i1", "i8", "u8", "i16", "i32", "i64")]
         + [(k, dt) for k in ("any", "all") for dt in ("f32", "bf16", "i8", "u8", "i1")]
         + [(k, dt) for k in ("argmax", "argmin") for dt in ("f32", "bf16", "i8", "u8", "i64", "i1")])


@pytest.mark.parametrize("shape,dims", SHAPES, ids=lambda v: str(v).replace(" ", ""))
@pytest.mark.parametrize("kind,dt", CASES, ids=lambda v: str(v))
def test_reduction_matches_torch(kind, dt, shape, dims):
    torch = cuda_torch()
    if kind == "prod" and dt == "f32" and shape[0] * shape[-1] > 100_000:
        pytest.skip("an f32 product of 10^5 factors leaves f32's range whatever the order")
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(repr((kind, dt, shape, dims)).encode()))
    x = _input(torch, kind, dt, shape, gen)
    with fuser.FusionBuilder(f"{kind}_{dt}") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(FNS[kind](xi, dims))
    got = fuser.compile(fb)(x)
    want = _torch_reduce(torch, kind, x, dims)
    if kind in ("any", "all"):
        assert got.dtype == torch.bool
    if kind == "prod" and dt == "f32":
        torch.testing.assert_close(got, want, rtol=2e-4, atol=0)
        return
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    bad = (got != want).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} mismatches, first at {bad[:3].tolist()}: " \
        f"{got[tuple(bad[0])] if got.ndim else got} vs {want[tuple(bad[0])] if want.ndim else want}"


def test_sums_that_overflow_narrow_types_and_wrap_in_i64():
    """An i8 sum exceeds i8 (torch's result is i64); sum(dtype=i8) wraps it; i64 sums wrap."""
    torch = cuda_torch()
    x8 = torch.full((5, 100003), 127, dtype=torch.int8, device="cuda")
    x64 = torch.full((5, 1027), 2**62 + 12345, dtype=torch.int64, device="cuda")
    with fuser.FusionBuilder("overflow") as fb:
        a = fb.input(x8.shape, "i8", name="a")
        b = fb.input(x64.shape, "i64", name="b")
        fb.output(fuser.sum(a, 1))
        fb.output(fuser.sum(a, 1, dtype="i8"))
        fb.output(fuser.sum(b, 1))
    s, s8, s64 = fuser.compile(fb)(x8, x64)
    assert torch.equal(s, x8.sum(1)) and s[0].item() == 127 * x8.shape[1]
    assert torch.equal(s8, x8.sum(1, dtype=torch.int8))
    assert torch.equal(s64, x64.sum(1))


@pytest.mark.parametrize("dt", ["f32", "bf16", "i32"])
def test_argmax_ties_and_nans_first_wins(dt):
    """Every element equal: index 0 everywhere; NaNs: the first NaN of each row wins both."""
    torch = cuda_torch()
    x = torch.full((1027, 4099), 7, dtype=torch_dtype(dt), device="cuda")
    y = torch.randn(1027, 4099, device="cuda").to(torch_dtype(dt) if dt != "i32" else torch.float32)
    if dt != "i32":
        y[::3, 4000] = float("nan")
        y[::3, 4050] = float("nan")
        y[::6, 17] = float("nan")
    with fuser.FusionBuilder("ties") as fb:
        a = fb.input(x.shape, dt, name="a")
        b = fb.input(y.shape, dt if dt != "i32" else "f32", name="b")
        for v in (a, b):
            fb.output(fuser.argmax(v, 1))
            fb.output(fuser.argmin(v, 0, keepdim=True))
        fb.output(fuser.argmax(b))
    outs = fuser.compile(fb)(x, y)
    wants = [x.argmax(1), x.argmin(0, keepdim=True), y.argmax(1), y.argmin(0, keepdim=True), y.argmax()]
    for i, (g, w) in enumerate(zip(outs, wants)):
        assert torch.equal(g, w), (i, (g != w).nonzero()[:3].tolist())


def test_joint_and_normalization_kernels_of_integer_reductions():
    """A column sum and a row argmax of one input (the joint kernel); x - rowmax(x) of i16 and
    an f32 row argmax feeding the row (the normalization kernel)."""
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randint(-2**31, 2**31 - 1, (1027, 4099), dtype=torch.int64, device="cuda", generator=gen).to(torch.int32)
    h = torch.randint(-30000, 30000, (333, 777), device="cuda", generator=gen).to(torch.int16)
    f = torch.randint(-9, 9, (129, 50001), device="cuda", generator=gen).float()
    with fuser.FusionBuilder("joint") as fb:
        xi = fb.input(x.shape, "i32", name="x")
        hi = fb.input(h.shape, "i16", name="h")
        fi = fb.input(f.shape, "f32", name="f")
        fb.output(fuser.sum(xi, 0))
        fb.output(fuser.argmax(xi, 1))
        fb.output(hi - fuser.amax(hi, 1, keepdim=True))
        fb.output(fuser.sum(hi, 1))
        fb.output(fi * fuser.argmax(fi, 1, keepdim=True).cast("f32"))
        fb.output(fuser.all(fi, 1))
    k = fuser.compile(fb)
    sched = k.ir("sched")
    assert "joint row and column reduction" in sched and "persistent" in sched
    outs = k(x, h, f)
    am = f.argmax(1, keepdim=True)
    wants = [x.sum(0), x.argmax(1), h - h.amax(1, keepdim=True), h.sum(1), f * am.float(), f.all(1)]
    for g, w in zip(outs, wants):
        assert g.dtype == w.dtype and torch.equal(g, w)
