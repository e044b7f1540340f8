"""Scatters on the GPU (issue 32): fusion.scatter's kernels (the unsorted line loop and, after
fusion-sort-scatters, the sort kernel and the sorted segment pass) against the reference
interpreter bit for bit (both sum in index order, in f32) and against torch (scatter exactly
where each target is written once; scatter_add and index_add within the dtype's rounding), on
odd shapes, every dtype family, duplicates, negative and out-of-range indices, an index line past
one sort chunk, bf16; deterministic: two runs are bit-identical. The CPU side is test_scatter.py."""

from __future__ import annotations

import numpy as np
import pytest

import fuser
from fuser.runtime.reference import NUMPY_DTYPES
from cuda_torch import cuda_torch, torch_dtype

pytestmark = pytest.mark.gpu

DTYPES = ["f32", "bf16", "f16", "f64", "i32", "i64", "i16", "i8", "u8", "i1"]


def _values(torch, dt, shape, gen):
    if dt == "i1":
        return torch.rand(shape, device="cuda", generator=gen) < 0.5
    if dt in ("f32", "bf16", "f16", "f64"):
        return (torch.randn(shape, device="cuda", generator=gen, dtype=torch.float64) * 3).to(torch_dtype(dt))
    info = np.iinfo(NUMPY_DTYPES[dt])
    lo, hi = (int(info.min), int(info.max)) if dt != "i64" else (-2**62, 2**62)
    return torch.randint(lo, hi, shape, dtype=torch.int64, device="cuda", generator=gen).to(torch_dtype(dt))


def _np(t) -> np.ndarray:
    t = t.cpu()
    return t.float().numpy().astype(NUMPY_DTYPES["bf16"]) if str(t.dtype) == "torch.bfloat16" else t.numpy()


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8) if a.dtype == bool else a.view(f"u{a.dtype.itemsize}")


def _same_bits(got, want: np.ndarray, what: str) -> None:
    g = _np(got) if not isinstance(got, np.ndarray) else got
    assert g.dtype == want.dtype and g.shape == want.shape, (what, g.dtype, want.dtype, g.shape, want.shape)
    bad = np.argwhere(_bits(g) != _bits(want))
    assert bad.size == 0, f"{what}: {len(bad)} elements differ, first at {bad[0].tolist()}: " \
        f"{g[tuple(bad[0])]} vs {want[tuple(bad[0])]}"


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("dim,positions", [(0, 5), (1, 40), (-1, 3), (0, 333)])
def test_scatter_and_scatter_add(dt, dim, positions):
    """Odd shapes; an index smaller than the input in another dim; repeats; negative and
    out-of-range indices (the nearest end); lines short (a loop) and long (sorted)."""
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(hash((dt, dim, positions)) % 2**31)
    xs = (37, 29)
    d = dim % 2
    ishape = tuple(positions if k == d else n - 4 for k, n in enumerate(xs))
    x, src = _values(torch, dt, xs, gen), _values(torch, dt, ishape, gen)
    index = torch.randint(-xs[d] - 2, xs[d] + 2, ishape, device="cuda", generator=gen)
    with fuser.FusionBuilder("sc") as fb:
        a, i, s = fb.input(xs, dt), fb.input(ishape, "i64"), fb.input(ishape, dt)
        outs = [fuser.scatter(a, dim, i, s)] + ([] if dt == "i1" else [fuser.scatter_add(a, dim, i, s)])
        fb.output(*outs)
    k = fuser.compile(fb)
    got = k(x, index, src)
    got = list(got) if isinstance(got, tuple) else [got]
    want = k.reference(_np(x), _np(index), _np(src))
    want = list(want) if isinstance(want, tuple) else [want]
    for g, w, what in zip(got, want, ["scatter", "scatter_add"]):
        _same_bits(g, w, what)
    again = k(x, index, src)
    again = list(again) if isinstance(again, tuple) else [again]
    for g, h in zip(got, again):  # deterministic: bit-identical from run to run
        _same_bits(h, _np(g), "a second run")
    if dt not in ("i1",):
        inrange = torch.where(index < 0, index + xs[d], index).clamp(0, xs[d] - 1)
        ref = x.scatter_add(dim, inrange, src)
        if dt in ("f32", "f64"):
            torch.testing.assert_close(got[1], ref, rtol=1e-5, atol=1e-4)
        elif dt in ("bf16", "f16"):
            torch.testing.assert_close(got[1].float(), ref.float(), rtol=4e-2, atol=0.2)
        else:
            assert torch.equal(got[1], ref)


@pytest.mark.parametrize("dt", ["bf16", "f32", "f16", "i32"])
@pytest.mark.parametrize("tokens,vocab,width", [(300, 1000, 64), (20001, 501, 24), (8193, 50257, 40), (7, 13, 3)])
def test_index_add_rows(dt, tokens, vocab, width):
    """The embedding backward's shape: index_add along dim 0 of a shared id line (T past one sort
    chunk of 16384 too), many repeats; bit-identical to the reference and from run to run."""
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(tokens + vocab)
    w = _values(torch, dt, (vocab, width), gen)
    g = _values(torch, dt, (tokens, width), gen) if dt != "i32" else torch.randint(
        -1000, 1000, (tokens, width), device="cuda", generator=gen, dtype=torch.int32)
    ids = torch.randint(0, min(vocab, 97), (tokens,), device="cuda", generator=gen)
    with fuser.FusionBuilder("ia") as fb:
        fb.output(fuser.index_add(fb.input(w.shape, dt), 0, fb.input(ids.shape, "i64"), fb.input(g.shape, dt)))
    k = fuser.compile(fb)
    got, again = k(w, ids, g), k(w, ids, g)
    _same_bits(again, _np(got), "a second run")
    _same_bits(got, k.reference(_np(w), _np(ids), _np(g)), "index_add")
    ref = w.double().index_add(0, ids, g.double()) if dt != "i32" else w.index_add(0, ids, g)
    if dt == "i32":
        assert torch.equal(got, ref)
    else:
        tol = {"f32": (1e-5, 1e-3), "bf16": (1e-2, 0.5), "f16": (2e-3, 0.1)}[dt]
        torch.testing.assert_close(got.double(), ref.to(got.dtype).double(), rtol=tol[0], atol=tol[1])


def test_embedding_backward_matches_autograd():
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(5)
    ids = torch.randint(0, 1000, (4, 2049), device="cuda", generator=gen)
    ids[0, :300] = 17
    grad = torch.randn(4, 2049, 96, device="cuda", generator=gen).to(torch.bfloat16)
    with fuser.FusionBuilder("eb") as fb:
        fb.output(fuser.embedding_backward(fb.input(grad.shape, "bf16"), fb.input(ids.shape, "i64"), 1000,
                                           padding_idx=3))
    k = fuser.compile(fb)
    got = k(grad, ids)
    wgt = torch.zeros(1000, 96, device="cuda", dtype=torch.float32, requires_grad=True)
    torch.nn.functional.embedding(ids, wgt, padding_idx=3).backward(grad.float())
    torch.testing.assert_close(got.float(), wgt.grad.bfloat16().float(), rtol=1e-2, atol=1e-2)
    _same_bits(k(grad, ids), _np(got), "a second run")


@pytest.mark.parametrize("dt", ["f32", "f64", "i32", "i64"])
@pytest.mark.parametrize("tokens", [7, 8193])
def test_atomic_variant(dt, tokens):
    """deterministic=False (fusion.scatter_add_atomic: a copy, then red.global.add per element):
    integers exactly torch's; floats within the rounding of a sum in any order."""
    torch = cuda_torch()
    gen = torch.Generator(device="cuda").manual_seed(tokens)
    w = _values(torch, dt, (501, 40), gen) if dt in ("f32", "f64") else torch.randint(
        -1000, 1000, (501, 40), device="cuda", generator=gen).to(torch_dtype(dt))
    g = _values(torch, dt, (tokens, 40), gen) if dt in ("f32", "f64") else torch.randint(
        -1000, 1000, (tokens, 40), device="cuda", generator=gen).to(torch_dtype(dt))
    ids = torch.randint(-501, 501, (tokens,), device="cuda", generator=gen)
    with fuser.FusionBuilder("at") as fb:
        fb.output(fuser.index_add(fb.input(w.shape, dt), 0, fb.input(ids.shape, "i64"), fb.input(g.shape, dt),
                                  deterministic=False))
    k = fuser.compile(fb)
    assert "red.global.add" in k.ptx
    got = k(w, ids, g)
    ref = w.double().index_add(0, ids % 501, g.double())
    if dt in ("i32", "i64"):
        assert torch.equal(got, ref.to(got.dtype))
    else:
        torch.testing.assert_close(got.double(), ref, rtol=1e-5 if dt == "f32" else 1e-12, atol=1e-3 if dt == "f32" else 1e-9)
