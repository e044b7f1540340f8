"""Scans (cumsum, cumprod, cummax, cummin) on the GPU against torch, on odd shapes and every
dtype family: rows of 1, 7, 33, 1000, 4097 and 100000 elements (one warp per row for short
ones, a block of up to 512 threads and a loop of tiles with a carry for long ones), many short
rows, rank 1 and 3, another dim through the API's permute, forced block sizes (32 threads: many
tiles; 1024), and a scan whose producers and pointwise consumers share its kernel.

Sums and products of floats are checked against float64 (torch's own f32 order is another
rounding) within a bound of their roundings (a sum: the kernel's depth of additions times the
sum of magnitudes; a product: one f32 rounding per factor before the element; both plus the
rounding to the output type, which for bf16 is up to 2^-8 of the value: on the H100 a bf16
running product was 3.91e-3 off, its f32 value's rounding and a little more); everything else is exact against
torch on the CPU (max/min of floats included: NaN sticks, the later of equal elements is taken,
so -0.0 after 0.0 gives -0.0, as torch's CPU cummax/cummin)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import fuser
from fuser.runtime.reference import NUMPY_DTYPES
from cuda_torch import cuda_torch, torch_dtype

pytestmark = pytest.mark.gpu

FNS = {"sum": fuser.cumsum, "prod": fuser.cumprod, "max": fuser.cummax, "min": fuser.cummin}
SHAPES = [(1,), (7,), (3, 33), (5, 1000), (2, 4097), (2, 100000), (1000, 7), (3, 5, 33)]
DTYPES = ["f32", "bf16", "f16", "i32", "i64", "i1", "i8", "u8"]
EPS = {"f32": 2.0 ** -24, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}
DEPTH = 64  # roundings on an element's path: 8 in a thread, 5 shuffles, up to 32 warps (the carry's: below)


def _input(torch, kind, dt, shape, gen):
    n = int(np.prod(shape))
    cols = shape[-1]
    if dt == "i1":
        return torch.rand(shape, device="cuda", generator=gen) < (0.97 if kind == "prod" else 0.5)
    if dt in ("f32", "bf16", "f16"):
        if kind == "prod":  # factors whose running products stay near 1 over the whole row
            x = torch.exp(torch.randn(shape, device="cuda", generator=gen) / max(1.0, cols ** 0.5))
        elif kind in ("max", "min"):
            x = torch.randint(-20, 20, shape, device="cuda", generator=gen).float()  # ties
            x[torch.rand(shape, device="cuda", generator=gen) < 0.1] = -0.0
            x[torch.rand(shape, device="cuda", generator=gen) < 0.1] = 0.0
            x[torch.rand(shape, device="cuda", generator=gen) < 2.0 / max(1, cols)] = float("nan")
            x.view(-1)[: min(n, 2)] = float("-inf")
        else:
            x = torch.randn(shape, device="cuda", generator=gen)
        return x.to(torch_dtype(dt))
    info = np.iinfo(NUMPY_DTYPES[dt])
    if kind == "prod":
        odd = torch.tensor([-3, -1, 1, 3, 1, 1, 2, -1] if dt != "u8" else [1, 3, 1, 1, 2, 5, 1, 1], device="cuda")
        return odd[torch.randint(0, 8, shape, device="cuda", generator=gen)].to(torch_dtype(dt))
    if dt == "i64":
        x = torch.randint(-2**63, 2**63 - 1, shape, dtype=torch.int64, device="cuda", generator=gen)
    else:
        x = torch.randint(int(info.min), int(info.max) + 1, shape, dtype=torch.int64, device="cuda", generator=gen)
    x.view(-1)[:2] = torch.tensor([int(info.min), int(info.max)], device="cuda")[: x.numel()]
    return x.to(torch_dtype(dt))


def _torch_scan(torch, kind, t, dim=-1, dtype=None):
    if kind == "sum":
        return torch.cumsum(t, dim, dtype=dtype)
    if kind == "prod":
        return torch.cumprod(t, dim, dtype=dtype)
    return (torch.cummax if kind == "max" else torch.cummin)(t, dim).values


def _check(torch, kind, dt, x, got, dim=-1):
    xc = x.cpu()
    want = _torch_scan(torch, kind, xc, dim)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    g = got.cpu()
    if kind in ("sum", "prod") and dt in EPS:
        exact = _torch_scan(torch, kind, xc.double(), dim)
        if kind == "sum":
            depth = DEPTH + xc.shape[dim] // 256  # and one addition of the carry per tile (256 elements or more)
            bound = depth * 2.0 ** -24 * torch.cumsum(xc.double().abs(), dim) + EPS[dt] * exact.abs()
        else:  # every multiplication before an element rounds it (relative error u each, whatever the tree)
            count = torch.arange(1, xc.shape[dim] + 1, dtype=torch.float64)
            count = count.reshape([-1 if d == (dim % xc.ndim) else 1 for d in range(xc.ndim)])
            bound = (count * 2.0 ** -24 + EPS[dt]) * exact.abs()
        err = (g.double() - exact).abs()
        bad = (err > bound + 1e-30).nonzero()
        assert bad.numel() == 0, f"{bad.shape[0]} beyond the bound, first at {bad[:3].tolist()}: " \
            f"{g[tuple(bad[0])]} vs {exact[tuple(bad[0])]}"
        return
    same = (g == want) | (g.isnan() & want.isnan() if g.is_floating_point() else torch.zeros_like(g, dtype=torch.bool))
    if g.is_floating_point():  # and the sign of each zero
        same &= (g.signbit() == want.signbit()) | g.isnan()
    bad = (~same).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} mismatches, first at {bad[:3].tolist()}: " \
        f"{g[tuple(bad[0])]} vs {want[tuple(bad[0])]}"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda v: "x".join(map(str, v)))
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("kind", list(FNS))
def test_scan_matches_torch(kind, dt, shape):
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(repr((kind, dt, shape)).encode()))
    x = _input(torch, kind, dt, shape, gen)
    with fuser.FusionBuilder(f"{kind}_{dt}") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(FNS[kind](xi))
    got = fuser.compile(fb)(x)
    _check(torch, kind, dt, x, got)


@pytest.mark.parametrize("block", [32, 1024])
@pytest.mark.parametrize("kind,dt", [("sum", "f32"), ("max", "bf16"), ("prod", "i64"), ("min", "i32")])
def test_forced_block_sizes(kind, dt, block):
    """32 threads per row: a row of 100000 takes 391 tiles, each carrying the last one's total;
    1024 threads: 32 warps' totals through shared memory."""
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(block + len(kind))
    shape = (3, 100000)
    x = _input(torch, kind, dt, shape, gen)
    with fuser.FusionBuilder("forced") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(FNS[kind](xi))
    k = fuser.compile(fb, options={"block": block})
    assert f"{block} threads per row" in k.ir("sched")
    _check(torch, kind, dt, x, k(x))


@pytest.mark.parametrize("kind,dt", [("sum", "bf16"), ("max", "f32"), ("prod", "i8"), ("min", "i1")])
def test_other_dims_through_a_permute(kind, dt):
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(7)
    shape = (37, 5, 1000)
    x = _input(torch, kind, dt, shape, gen)
    with fuser.FusionBuilder("dims") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(FNS[kind](xi, 0))
        fb.output(FNS[kind](xi, 1))
    a, b = fuser.compile(fb)(x)
    _check(torch, kind, dt, x, a, 0)
    _check(torch, kind, dt, x, b, 1)


def test_producers_and_consumers_share_the_scan_kernel():
    """exp(x) * 2 is recomputed in the scan's kernel; (cumsum + y) cast to bf16 and the running
    max of a mask (a running any) are stored from its registers; a row sum of the scan reads it
    back in a kernel of its own."""
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(11)
    x = (torch.randn(37, 4097, device="cuda", generator=gen) / 4).to(torch.bfloat16)
    y = torch.randn(37, 4097, device="cuda", generator=gen)
    with fuser.FusionBuilder("fused") as fb:
        xi = fb.input(x.shape, "bf16", name="x")
        yi = fb.input(y.shape, "f32", name="y")
        c = fuser.cumsum(fuser.exp(xi) * 2.0)
        fb.output((c.cast("f32") + yi).cast("bf16"))
        fb.output(fuser.sum(c, 1))
        fb.output(c)
    k = fuser.compile(fb)
    assert k.ir("sched").count("sched.kernel") == 2
    out, s, cg = k(x, y)
    cw = torch.cumsum((torch.exp(x.double()) * 2.0), 1)
    torch.testing.assert_close(cg.double(), cw, rtol=2 ** -7, atol=1e-3)
    torch.testing.assert_close(out.double(), (cg.float() + y).bfloat16().double(), rtol=0, atol=0)
    torch.testing.assert_close(s.float(), cg.float().sum(1).bfloat16().float(), rtol=2e-2, atol=1.0)


def test_torch_compile_runs_cumsum_and_cumprod_in_fuser():
    """aten.cumsum / aten.cumprod through the PyTorch backend, on CUDA: one region, the scans
    and their producers and consumers in fuser's kernels."""
    torch = cuda_torch()
    ft = pytest.importorskip("fuser.torch")
    be = ft.backend()

    def f(x, i):
        return torch.cumsum(torch.exp(x) * 0.5, 1) + x, torch.cumprod(i, 0), torch.cumsum(x.bfloat16(), 0)

    gen = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(333, 1025, device="cuda", generator=gen) / 8
    i = torch.randint(-3, 4, (333, 65), device="cuda", generator=gen)
    a, b, c = torch.compile(f, backend=be, dynamic=False, fullgraph=True)(x, i)
    assert be.stats.torch_nodes == {}, be.stats.torch_nodes
    assert be.stats.gpu_calls >= 1
    wa = torch.cumsum(torch.exp(x.double()) * 0.5, 1) + x.double()
    torch.testing.assert_close(a.double(), wa, rtol=1e-5, atol=1e-3)
    assert torch.equal(b, torch.cumprod(i.cpu(), 0).cuda())
    torch.testing.assert_close(c.float(), torch.cumsum(x.bfloat16().double(), 0).float(), rtol=2 ** -7, atol=0.05)
