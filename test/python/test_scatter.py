"""Scatters (fusion.scatter: fuser.scatter, scatter_add, index_add, embedding_backward) on the
CPU: the reference interpreter against torch (the CPU build) for every dtype family, every dim
(negative ones too), duplicates, odd shapes and indices smaller than the input; the sorted form
that fusion-sort-scatters makes (chunked past one sort row too) against the unsorted one; the
defined result of out-of-range indices and FUSER_CHECK_INDICES; verifier and API errors; PTX
that ptxas takes for the unsorted loop, the sorted search and the shared-row vector path. The
GPU runs are in test_scatter_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

import fuser
from fuser.dialects.ir import FuserDiagnostic, parse_module
from fuser.lowering.target.ptx import assemble_ptx, find_ptxas
from fuser.passes.pipeline import build_pipeline, run_passes
from fuser.runtime.reference import NUMPY_DTYPES, find_func, run_reference

torch = pytest.importorskip("torch")

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64, "i1": torch.bool,
         "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}


def values(dt: str, shape, rng) -> np.ndarray:
    if dt == "i1":
        return rng.random(shape) < 0.5
    if dt in ("f32", "f16", "bf16", "f64"):
        return (rng.standard_normal(shape) * 4).astype(NUMPY_DTYPES[dt])
    info = np.iinfo(NUMPY_DTYPES[dt])
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(NUMPY_DTYPES[dt])


def as_torch(x: np.ndarray):
    if x.dtype == NUMPY_DTYPES["bf16"]:
        return torch.tensor(x.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(x))


def to_numpy(t) -> np.ndarray:
    return t.float().numpy().astype(NUMPY_DTYPES["bf16"]) if t.dtype == torch.bfloat16 else t.numpy()


def close(got: np.ndarray, want: np.ndarray, dt: str, exact: bool) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if exact or dt not in ("f32", "f16", "bf16", "f64"):
        np.testing.assert_array_equal(got, want)
    else:  # torch's CPU sums in the element type (bf16/f16 rounded at each step); ours in f32, once
        tol = {"f32": 1e-5, "f64": 1e-12, "f16": 4e-3, "bf16": 3e-2}[dt]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * 8)


def ref(fb, *arrays):
    """The reference interpreter on the fusion as built (the unsorted form)."""
    outs = run_reference(find_func(parse_module(fb.mlir())), list(arrays))
    return outs[0] if len(outs) == 1 else tuple(outs)


def sorted_reference(fb, arrays):
    """The reference interpreter on the IR after fusion-sort-scatters (the sorted form)."""
    m = parse_module(fb.mlir())
    run_passes(build_pipeline("canonicalize,fusion-sort-scatters"), m)
    text = str(m)
    assert "fusion.sort" in text
    return run_reference(find_func(m), arrays)


@pytest.mark.parametrize("dt", list(TORCH))
@pytest.mark.parametrize("dim", [0, 1, -1, -3])
def test_scatter_and_scatter_add_match_torch(dt, dim):
    rng = np.random.default_rng(abs(hash((dt, dim))) % 2**32)
    xs, ishape, sshape = (5, 7, 3), (4, 6, 3), (6, 7, 3)
    d = dim % 3
    ishape = tuple(19 if k == d else n for k, n in enumerate(ishape))  # 19 positions: sorted too (> 16)
    sshape = tuple(max(a, b) for a, b in zip(ishape, sshape))
    x, src = values(dt, xs, rng), values(dt, sshape, rng)
    # indices with repeats; each index line a permutation for scatter (torch's winner is then defined)
    index = rng.integers(-xs[d], xs[d], ishape)
    with fuser.FusionBuilder("s") as fb:
        a, i, s = fb.input(xs, dt), fb.input(ishape, "i64"), fb.input(sshape, dt)
        outs = [fuser.scatter(a, dim, i, s)] + ([] if dt == "i1" else [fuser.scatter_add(a, dim, i, s)])
        fb.output(*outs)
    got = ref(fb, x, index, src)
    got = list(got) if isinstance(got, tuple) else [got]
    ti = torch.from_numpy(np.where(index < 0, index + xs[d], index))
    tx, ts = as_torch(x), as_torch(src)
    if dt != "i1":
        close(got[1], to_numpy(tx.scatter_add(dim, ti, ts[tuple(slice(0, n) for n in ishape)])), dt, exact=False)
    # scatter: torch leaves the winner among repeats unspecified; compare where each target is hit once
    # and check ours is the last in index order elsewhere (the CPU's loop order agrees here)
    want = to_numpy(tx.scatter(dim, ti, ts[tuple(slice(0, n) for n in ishape)]))
    np.testing.assert_array_equal(got[0], want)
    for o, w in zip(sorted_reference(fb, [x, index, src]), got):
        np.testing.assert_array_equal(o, w)


@pytest.mark.parametrize("dt", ["f32", "bf16", "f16", "f64", "i32", "i64", "u8", "i8"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_matches_torch(dt, dim):
    rng = np.random.default_rng(7)
    xs = (13, 5, 9)
    d = dim % 3
    n = 41
    sshape = tuple(n if k == d else m for k, m in enumerate(xs))
    x, src = values(dt, xs, rng), values(dt, sshape, rng)
    index = rng.integers(0, xs[d], n)
    with fuser.FusionBuilder("ia") as fb:
        a, i, s = fb.input(xs, dt), fb.input((n,), "i32"), fb.input(sshape, dt)
        fb.output(fuser.index_add(a, dim, i, s), fuser.index_add(a, dim, i, s, alpha=2))
    got = ref(fb, x, index.astype(np.int32), src)
    ti = torch.from_numpy(index)
    close(got[0], to_numpy(as_torch(x).index_add(dim, ti, as_torch(src))), dt, exact=dt in ("i32", "i64", "u8", "i8"))
    close(got[1], to_numpy(as_torch(x).index_add(dim, ti, as_torch(src), alpha=2)), dt,
          exact=dt in ("i32", "i64", "u8", "i8"))
    for o, w in zip(sorted_reference(fb, [x, index.astype(np.int32), src]), got):
        np.testing.assert_array_equal(o, w)


def test_f32_sums_run_in_index_order():
    """Duplicates sum in index order from the input's value, as torch's CPU loop: bit-equal."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    src = (rng.standard_normal((300, 6)) * 1e3).astype(np.float32)
    index = rng.integers(0, 4, 300)
    with fuser.FusionBuilder("o") as fb:
        fb.output(fuser.index_add(fb.input((4, 6)), 0, fb.input((300,), "i64"), fb.input((300, 6))))
    got = ref(fb, x, index, src)
    np.testing.assert_array_equal(got, torch.from_numpy(x).index_add(0, torch.from_numpy(index), torch.from_numpy(src)).numpy())
    np.testing.assert_array_equal(sorted_reference(fb, [x, index, src])[0], got)


def test_embedding_backward_matches_autograd():
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 50, (3, 17))
    ids[0, :5] = 7  # repeats, and the padding row
    grad = rng.standard_normal((3, 17, 24)).astype(np.float32)
    for padding_idx in (None, 7):
        with fuser.FusionBuilder("eb") as fb:
            g, i = fb.input((3, 17, 24)), fb.input((3, 17), "i64")
            fb.output(fuser.embedding_backward(g, i, 50, padding_idx=padding_idx))
        got = ref(fb, grad, ids)
        w = torch.zeros(50, 24, requires_grad=True)
        torch.nn.functional.embedding(torch.from_numpy(ids), w, padding_idx=padding_idx).backward(torch.from_numpy(grad))
        np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(sorted_reference(fb, [grad, ids])[0], got)


def test_sorted_form_in_chunks():
    """An index line longer than one sort row is sorted as chunks (the last padded), applied in order."""
    from fuser.dialects import fusion as F
    n = F.SCATTER_CHUNK + 1000
    rng = np.random.default_rng(11)
    ids = rng.integers(-30, 30, n)
    src = rng.standard_normal((n, 3)).astype(np.float32)
    x = rng.standard_normal((30, 3)).astype(np.float32)
    with fuser.FusionBuilder("ch") as fb:
        a, i, s = fb.input((30, 3)), fb.input((n,), "i64"), fb.input((n, 3))
        fb.output(fuser.index_add(a, 0, i, s), fuser.scatter(a, 0, fuser.broadcast_to(fuser.reshape(i, (n, 1)), (n, 3)), s))
    m = parse_module(fb.mlir())
    run_passes(build_pipeline("canonicalize,fusion-sort-scatters"), m)
    assert str(m).count("tensor<1x2x8692xi64>") >= 2  # two chunks of 8692 (17384 positions, 8 of them pad)
    got = ref(fb, x, ids, src)
    for o, w in zip(run_reference(find_func(m), [x, ids, src]), got):
        np.testing.assert_array_equal(o, w)
    want = torch.from_numpy(x).index_add(0, torch.from_numpy(ids % 30), torch.from_numpy(src)).numpy()
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-4)


def test_out_of_range_indices_land_on_the_nearest_end(monkeypatch):
    x = np.zeros((4, 2), np.float32)
    src = np.arange(10, dtype=np.float32).reshape(5, 2)
    index = np.array([9, -9, -1, 4, 0])
    with fuser.FusionBuilder("oob") as fb:
        fb.output(fuser.index_add(fb.input((4, 2)), 0, fb.input((5,), "i64", name="ids"), fb.input((5, 2))))
    c = fuser.compile(fb)
    got = c.reference(x, index, src)
    want = np.zeros((4, 2), np.float32)
    for j, t in enumerate([3, 0, 3, 3, 0]):
        want[t] += src[j]
    np.testing.assert_array_equal(got, want)
    monkeypatch.setenv("FUSER_CHECK_INDICES", "1")
    with pytest.raises(IndexError, match=r"fusion.scatter along dim 0 \(extent 4\).*'ids'.* -9.*write the nearest end"):
        c.reference(x, index, src)


def test_an_empty_src_leaves_the_input():
    with fuser.FusionBuilder("e") as fb:
        a = fb.input((4, 3))
        fb.output(fuser.index_add(a, 0, fb.input((0,), "i64"), fb.input((0, 3))) * 2)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    c = fuser.compile(fb)
    np.testing.assert_array_equal(c.reference(x, np.zeros(0, np.int64), np.zeros((0, 3), np.float32)), x * 2)


BAD = [
    ("%r = fusion.scatter %x, %i, %s dim 2 : tensor<4x3xf32>, tensor<5x3xi64>, tensor<5x3xf32> to tensor<4x3xf32>",
     "dim 2 is out of range for rank 2"),
    ("%r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<5x3xf32>, tensor<5x3xf32> to tensor<4x3xf32>",
     "operand #1 ('index') has element type f32, expected i32 or i64"),
    ("%r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<5x3xi64>, tensor<5x3xf16> to tensor<4x3xf32>",
     "operand #2 ('src') has element type f16, expected f32"),
    ("%r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<5x3xi64>, tensor<5x4xf32> to tensor<4x3xf32>",
     "operand #2 ('src') tensor<5x4xf32> is larger than the input"),
    ("%r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<6x3xi64>, tensor<5x3xf32> to tensor<4x3xf32>",
     "must have src's rank and its extent 5 along dim 0"),
    ("%r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<5x2xi64>, tensor<5x3xf32> to tensor<4x3xf32>",
     "expected src's 3 or 1"),
    ("%r = fusion.scatter %x, %i, %s dim 0 add : tensor<4x3xi1>, tensor<5x3xi64>, tensor<5x3xi1> to tensor<4x3xi1>",
     "'add' takes no masks"),
    ("%r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<5x3xi64>, tensor<5x3xf32> to tensor<4x4xf32>",
     "result type tensor<4x4xf32> must equal"),
    ("%r = fusion.scatter %x, %i, %s, %o dim 0 : tensor<4x3xf32>, tensor<1x2x4xi64>, tensor<5x3xf32>, tensor<1x2x4xi32> "
     "to tensor<4x3xf32>", "operand #3 ('order')"),
    ("%r = fusion.scatter %x, %i, %s, %o dim 0 : tensor<4x3xf32>, tensor<1x3x4xi64>, tensor<5x3xf32>, tensor<1x3x4xi64> "
     "to tensor<4x3xf32>", "3 chunks of 4 do not cover the 5 index positions"),
]


@pytest.mark.parametrize("line,message", BAD)
def test_verifier_names_the_op_and_operand(line, message):
    ops = [p for p in line.split(" : ")[1].split(" to ")[0].split(", ")]
    names = ["%x", "%i", "%s", "%o"][:len(ops)]
    args = ", ".join(f"{n}: {t}" for n, t in zip(names, ops))
    text = f"func.func @f({args}) {{\n  {line}\n  func.return\n}}"
    with pytest.raises((FuserDiagnostic, Exception), match="'fusion.scatter' op.*" + message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        m = parse_module(text)
        m.verify()


def test_api_errors():
    with fuser.FusionBuilder("e") as fb:
        x, i = fb.input((4, 3)), fb.input((5, 3), "i64")
        with pytest.raises(ValueError, match="reduce='mul'"):
            fuser.scatter(x, 0, i, fb.input((5, 3)), reduce="mul")
        with pytest.raises(ValueError, match="no smaller"):
            fuser.scatter(x, 0, i, fb.input((4, 3)))
        with pytest.raises(ValueError, match="must be 1-D"):
            fuser.index_add(x, 0, i, fb.input((5, 3)))
        with pytest.raises(ValueError, match=r"must have shape \[2, 3\]"):
            fuser.index_add(x, 0, fb.input((2,), "i64"), fb.input((3, 3)))
        with pytest.raises(TypeError, match="i32 or i64"):
            fuser.scatter_add(x, 0, fb.input((5, 3)), fb.input((5, 3)))
        fb.output(fuser.scatter(x, 1, i[:4] if False else fuser.slice(i, 0, 0, 4), 2.5))


@pytest.mark.parametrize("case", ["unsorted", "sorted_rows", "chunks_bf16", "ints_dim1", "scatter_value"])
def test_ptx_is_assembled(case):
    with fuser.FusionBuilder("p") as fb:
        if case == "unsorted":
            fb.output(fuser.scatter_add(fb.input((7, 5)), 1, fb.input((7, 3), "i32"), fb.input((7, 3))))
        elif case == "sorted_rows":
            fb.output(fuser.index_add(fb.input((1000, 64), "bf16"), 0, fb.input((333,), "i64"), fb.input((333, 64), "bf16")))
        elif case == "chunks_bf16":
            fb.output(fuser.embedding_backward(fb.input((20000, 24), "bf16"), fb.input((20000,), "i64"), 77))
        elif case == "ints_dim1":
            fb.output(fuser.scatter(fb.input((6, 50), "u8"), 1, fb.input((6, 40), "i64"), fb.input((6, 41), "u8")))
        else:
            x = fb.input((9, 11))
            fb.output(fuser.scatter(x, 1, fb.input((9, 1), "i64"), -1.0) + 1)
    ptx = fuser.compile(fb).ptx
    assert ptx.count(".entry") == (1 if case in ("unsorted", "scatter_value") else 2)
    if find_ptxas():
        assemble_ptx(ptx, "sm_90a")


@pytest.mark.parametrize("dt", ["f32", "f64", "i32", "i64"])
def test_atomic_variant(dt):
    """deterministic=False: fusion.scatter_add_atomic, its own two kernels (the copy, then one
    red.global.add per src element; a consumer reads the result back), the same sums in the
    reference; ptxas takes the adds."""
    rng = np.random.default_rng(2)
    x, src = values(dt, (37, 9), rng), values(dt, (40, 9), rng)
    ids = rng.integers(-37, 37, 40)
    with fuser.FusionBuilder("at") as fb:
        a, i, s = fb.input((37, 9), dt), fb.input((40,), "i64"), fb.input((40, 9), dt)
        fb.output(fuser.index_add(fuser.neg(a), 0, i, s, deterministic=False) * 2)
    assert "fusion.scatter_add_atomic" in fb.mlir()
    c = fuser.compile(fb)
    sched_ir = c.ir("sched")
    assert sched_ir.count("sched.kernel") == 3 and sched_ir.count("sched.atomic_add") == 1
    suffix = {"f32": "f32", "f64": "f64", "i32": "u32", "i64": "u64"}[dt]
    assert f"red.global.add.{suffix}" in c.ptx
    if find_ptxas():
        assemble_ptx(c.ptx, "sm_90a")
    want = as_torch(-x).index_add(0, torch.from_numpy(ids % 37), as_torch(src)) * 2
    close(c.reference(x, ids, src), to_numpy(want), dt, exact=False)


def test_atomic_variant_refusals():
    with fuser.FusionBuilder("e") as fb:
        x, i = fb.input((4, 3), "bf16"), fb.input((5,), "i64")
        with pytest.raises(ValueError, match="deterministic=False .* takes f32, f64, i32, i64, not bf16"):
            fuser.index_add(x, 0, i, fb.input((5, 3), "bf16"), deterministic=False)
        with pytest.raises(ValueError, match="sums only"):
            fuser.scatter(fb.input((4, 3)), 0, fb.input((5, 3), "i64"), fb.input((5, 3)), deterministic=False)
        fb.output(x)
    text = ("func.func @f(%x: tensor<4x3xbf16>, %i: tensor<5x3xi64>, %s: tensor<5x3xbf16>) {\n"
            "  %r = fusion.scatter_add_atomic %x, %i, %s dim 0 : tensor<4x3xbf16>, tensor<5x3xi64>, tensor<5x3xbf16> "
            "to tensor<4x3xbf16>\n  func.return\n}")
    with pytest.raises(Exception, match="'fusion.scatter_add_atomic' op operand #0 \\('input'\\) is tensor<4x3xbf16>"):
        parse_module(text).verify()
