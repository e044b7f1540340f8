"""Sorting (fusion.sort: fuser.sort, argsort, topk) on the CPU: the reference interpreter against
torch (the CPU build here) for every element type, both directions, along the last dim and
(through the API's permute) another one; torch's NaN, -0.0 and stable tie rules; topk's first k;
the verifier's refusals; the planner's sort segment with its producers and its pointwise
consumers (the epilogue); the refusal of rows too long for the kernel; PTX that ptxas takes for
odd shapes in both kernel modes. The GPU runs are in test_sort_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

import fuser
from fuser.dialects.ir import FuserDiagnostic, parse_module
from fuser.lowering.heuristics.sort import SORT_SELECT_MAX_K, sort_params
from fuser.lowering.target.ptx import assemble_ptx, find_ptxas
from fuser.passes.pipeline import build_pipeline, run_passes
from fuser.runtime.reference import NUMPY_DTYPES

torch = pytest.importorskip("torch")

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64, "i1": torch.bool,
         "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}
DTYPES = list(TORCH)


def sort_input(dt: str, shape, rng) -> np.ndarray:
    """Values with many ties; floats with NaN, -0.0, 0.0 and infinities among them."""
    if dt == "i1":
        return rng.random(shape) < 0.5
    if dt in ("f32", "f16", "bf16", "f64"):
        x = rng.integers(-8, 8, shape).astype(np.float64) / 2
        x[rng.random(shape) < 0.05] = np.nan
        x[rng.random(shape) < 0.1] = -0.0
        x[rng.random(shape) < 0.03] = np.inf
        x[rng.random(shape) < 0.03] = -np.inf
        return x.astype(NUMPY_DTYPES[dt])
    info = np.iinfo(NUMPY_DTYPES[dt])
    x = rng.integers(info.min, info.max, shape, endpoint=True, dtype=np.int64)
    small = rng.integers(max(info.min, -3), 3, shape)  # ties
    x = np.where(rng.random(shape) < 0.5, small, x)
    return x.astype(NUMPY_DTYPES[dt])


def as_torch(x: np.ndarray, dt: str):
    if dt == "bf16":
        return torch.tensor(x.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(x))


def same_values(got: np.ndarray, want, zero_signs: bool = True) -> None:
    """Exactly equal, NaN to NaN, and each zero with its sign (unless `zero_signs` is False)."""
    if want.dtype == torch.bfloat16:
        want, got = want.float(), got.astype(np.float32)
    want = want.numpy()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (got, want)
    if got.dtype.kind == "f" and zero_signs:
        num = ~np.isnan(want)
        assert np.array_equal(np.signbit(got[num]), np.signbit(want[num]))


def same_indices(got: np.ndarray, want) -> None:
    assert got.dtype == np.int64 and got.shape == tuple(want.shape), (got.dtype, got.shape, want.shape)
    assert np.array_equal(got, want.numpy()), (got, want)


@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("dt", DTYPES)
def test_sort_reference_matches_torch(dt, descending, dim):
    shape = (5, 7, 33)
    rng = np.random.default_rng(len(dt) * 31 + 7 * dim + descending)
    x = sort_input(dt, shape, rng)
    with fuser.FusionBuilder("s") as fb:
        xi = fb.input(shape, dt, name="x")
        v, i = fuser.sort(xi, dim, descending)
        fb.output(v, i, fuser.argsort(xi, dim, descending))
    v, i, a = fuser.compile(fb).reference(x)
    tv, ti = torch.sort(as_torch(x, dt), dim=dim, descending=descending, stable=True)
    same_values(v, tv)
    same_indices(i, ti)
    same_indices(a, ti)


@pytest.mark.parametrize("k", [1, 3, 33])
@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
@pytest.mark.parametrize("dt", DTYPES)
def test_topk_reference_is_the_stable_sorts_first_k(dt, largest, k):
    shape = (6, 33)
    x = sort_input(dt, shape, np.random.default_rng(k * 5 + largest))
    with fuser.FusionBuilder("t") as fb:
        xi = fb.input(shape, dt, name="x")
        fb.output(*fuser.topk(xi, k, largest=largest), *fuser.topk(xi, k, 0, largest=largest) if k <= 6 else ())
    outs = fuser.compile(fb).reference(x)
    for n, (v, i) in enumerate(zip(outs[::2], outs[1::2])):
        d = 1 - n
        tv, ti = torch.sort(as_torch(x, dt), dim=d, descending=largest, stable=True)
        same_values(v, tv.narrow(d, 0, k))
        same_indices(i, ti.narrow(d, 0, k))
        # and torch.topk's values (its order among equal values, -0.0 and 0.0, is its own;
        # torch's CPU topk takes no bools)
        if dt != "i1":
            same_values(v, torch.topk(as_torch(x, dt), k, d, largest=largest).values, zero_signs=False)


def test_nan_zero_and_ties_follow_torch():
    x = np.array([[1, np.nan, 3, 0, -0.0, 3, np.nan, -np.inf], [0, -0.0, 0, -0.0, 0, 1, 1, np.inf],
                  [-np.nan, 2, -1, np.nan, 7, -0.0, 2, 2]], np.float32)
    with fuser.FusionBuilder("nan") as fb:
        xi = fb.input(x.shape, "f32", name="x")
        fb.output(*fuser.sort(xi), *fuser.sort(xi, descending=True), *fuser.topk(xi, 4), *fuser.topk(xi, 4, largest=False))
    outs = fuser.compile(fb).reference(x)
    t = torch.from_numpy(x)
    wants = [*torch.sort(t, stable=True), *torch.sort(t, descending=True, stable=True)]
    s, si = torch.sort(t, descending=True, stable=True)
    wants += [s[:, :4], si[:, :4]]
    s, si = torch.sort(t, stable=True)
    wants += [s[:, :4], si[:, :4]]
    for n, (g, w) in enumerate(zip(outs, wants)):
        (same_values if n % 2 == 0 else same_indices)(g, w)


def test_zero_d_empty_and_k_zero():
    with fuser.FusionBuilder("z") as fb:
        s = fb.input((), "f32")
        e = fb.input((3, 0), "i32")
        x = fb.input((2, 5), "bf16")
        v, i = fuser.sort(s)
        ev, ei = fuser.sort(e, descending=True)
        kv, ki = fuser.topk(x, 0)
        assert v.shape == () and i.shape == () and i.dtype == "i64"
        assert ev.shape == (3, 0) and kv.shape == (2, 0) and ki.dtype == "i64"
        fb.output(v, i, ev, ei, kv, ki)
    outs = fuser.compile(fb).reference(np.float32(2.5), np.zeros((3, 0), np.int32),
                                       np.ones((2, 5), NUMPY_DTYPES["bf16"]))
    assert outs[0] == np.float32(2.5) and outs[1] == 0
    assert [o.shape for o in outs[2:]] == [(3, 0), (3, 0), (2, 0), (2, 0)]


def test_api_errors():
    with fuser.FusionBuilder("e") as fb:
        x = fb.input((3, 4), "f32")
        with pytest.raises(ValueError, match="dim 2 is out of range"):
            fuser.sort(x, 2)
        with pytest.raises(ValueError, match=r"topk: k 5 is out of range for dim 1 of extent 4"):
            fuser.topk(x, 5)
        with pytest.raises(ValueError, match=r"topk: k -1 is out of range"):
            fuser.topk(x, -1)
        with pytest.raises(TypeError, match="k must be an integer"):
            fuser.topk(x, 1.5)
        with pytest.raises(TypeError, match="dim must be an integer"):
            fuser.argsort(x, None)
        fb.output(fuser.argsort(x))


BAD = [
    ("fusion.sort %x dim 0 : tensor<3x4xf32> to tensor<3x4xf32>, tensor<3x4xi64>",
     "'fusion.sort' op sorts dim 0 of tensor<3x4xf32>: only the innermost dim (1) is sorted"),
    ("fusion.sort %x dim 2 : tensor<3x4xf32> to tensor<3x4xf32>, tensor<3x4xi64>",
     "'fusion.sort' op dim 2 is out of range for tensor<3x4xf32>"),
    ("fusion.sort %x dim 1 k 5 : tensor<3x4xf32> to tensor<3x5xf32>, tensor<3x5xi64>",
     "'fusion.sort' op k 5 is out of range for operand #0 ('input') tensor<3x4xf32>: k must be in [0, 4]"),
    ("fusion.sort %x dim 1 descending k 2 : tensor<3x4xf32> to tensor<3x4xf32>, tensor<3x4xi64>",
     "'fusion.sort' op result #0 ('values') has shape [3, 4], expected [3, 2] (the input's with k along the sorted dim)"),
    ("fusion.sort %x dim 1 : tensor<3x4xf32> to tensor<3x4xf32>, tensor<3x5xi64>",
     "'fusion.sort' op result #1 ('indices') has shape [3, 5], expected [3, 4] (the input's)"),
    ("fusion.sort %x dim 1 : tensor<3x4xf32> to tensor<3x4xf32>, tensor<3x4xi32>",
     "'fusion.sort' op result #1 ('indices') has element type i32, expected i64"),
    ("fusion.sort %x dim 1 : tensor<3x4xf32> to tensor<3x4xf16>, tensor<3x4xi64>",
     "'fusion.sort' op result #0 ('values') has element type f16, expected f32 (the input's)"),
    ("fusion.sort %x dim 0 : tensor<f32> to tensor<f32>, tensor<i64>", "a sort takes a tensor of rank 1 or more"),
]


@pytest.mark.parametrize("body,message", BAD, ids=[m for _, m in BAD])
def test_verifier_names_op_and_operand(body, message):
    xt = body.split(" : ")[1].split(" to ")[0]
    vt, it = body.split(" to ")[1].split(", ")
    text = (f"func.func @f(%x: {xt}) -> ({vt}, {it}) {{\n  %v, %i = {body}\n  func.return %v, %i : {vt}, {it}\n}}")
    with pytest.raises(FuserDiagnostic) as err:
        parse_module(text)
    assert message in str(err.value)


def test_round_trip():
    text = ("func.func @f(%x: tensor<3x40xbf16>) -> (tensor<3x8xbf16>, tensor<3x8xi64>) {\n"
            "  %v, %i = fusion.sort %x dim 1 descending k 8 : tensor<3x40xbf16> to tensor<3x8xbf16>, tensor<3x8xi64>\n"
            "  func.return %v, %i : tensor<3x8xbf16>, tensor<3x8xi64>\n}")
    assert "fusion.sort %x dim 1 descending k 8 : tensor<3x40xbf16> to tensor<3x8xbf16>, tensor<3x8xi64>" in \
        str(parse_module(text))


def test_planner_fuses_producers_and_consumers_into_the_sort_kernel():
    """exp(x) * 2 feeds the sort (recomputed in its kernel); values + y and indices * 2 are
    computed from what the kernel holds (an epilogue): one sort kernel; a sum of the values, of
    another shape, is a kernel of its own."""
    with fuser.FusionBuilder("fused") as fb:
        x = fb.input((37, 1000), "bf16", name="x")
        y = fb.input((37, 8), "f32", name="y")
        v, i = fuser.topk(fuser.exp(x) * 2.0, 8)
        fb.output(v.cast("f32") + y, i * 2)
        fb.output(fuser.sum(v, 1))
    k = fuser.compile(fb)
    seg = k.ir("sched")
    assert seg.count("sched.kernel") == 2
    assert "sort of 37 rows of 1000, first 8 kept" in seg
    m = parse_module(k.ir("fusion"))
    run_passes(build_pipeline("fusion-segment"), m)
    plan = str(m)
    assert plan.count('fusion.segment "sort"') == 1 and plan.count("fusion.segment") == 2
    assert "'fusion.sort' descending along dim 1 of [37, 1000], the first 8 with 2 output(s) computed from it" in plan
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((37, 1000)).astype(NUMPY_DTYPES["bf16"]) / 4
    yv = rng.standard_normal((37, 8)).astype(np.float32)
    a, b, c = k.reference(xv, yv)
    tv, ti = torch.sort(torch.exp(as_torch(xv, "bf16")) * 2.0, descending=True, stable=True)
    tv, ti = tv[:, :8], ti[:, :8]
    np.testing.assert_array_equal(a, (tv.float() + torch.from_numpy(yv)).numpy())
    np.testing.assert_array_equal(b, (ti * 2).numpy())


def test_long_rows_are_refused_naming_the_limit():
    p = sort_params(4, 16384, 16384, 4)
    assert p.mode == "network" and p.net == 16384
    with fuser.FusionBuilder("long") as fb:
        x = fb.input((2, 16385), "f32", name="x")
        fb.output(*fuser.sort(x))
    with pytest.raises(FuserDiagnostic, match=r"'fusion.sort' rows of 16385 elements of 4 byte\(s\) do not fit the "
                                              r"sort kernel: it sorts a row in shared memory, at most 16384"):
        fuser.compile(fb)
    # topk with a small k takes rows of any length (each thread keeps its k in registers)
    p = sort_params(4, 1 << 20, SORT_SELECT_MAX_K, 4)
    assert p.mode == "select" and p.net == p.bx * SORT_SELECT_MAX_K


SHAPES = [((1,), None), ((7,), None), ((3, 33), None), ((2, 1000), None), ((2, 4097), None), ((300, 5), None),
          ((2, 3, 1), None), ((3, 1000), 8), ((2, 32000), 8), ((5, 33), 33), ((4, 100000), 16), ((4, 100), 17)]
SORT_TYPES = ["f32", "bf16", "f16", "f64", "i1", "i8", "u8", "i16", "i32", "i64"]
# Every geometry (short rows, a warp, a block, the longest whole row, topk's select walk) in f32,
# and every type (its ordering key) in a whole-row sort and a topk: each case costs a compile and
# a ptxas run, so not the whole cross product.
PTX_CASES = ([("f32", shape, k) for shape, k in SHAPES]
             + [(dt, shape, k) for dt in SORT_TYPES[1:] for shape, k in (((3, 33), None), ((3, 1000), 8))]
             + [("bf16", (2, 4097), None), ("f64", (4, 100000), 16)])


@pytest.mark.parametrize("dt,shape,k", PTX_CASES, ids=str)
def test_ptx_is_assembled(dt, shape, k):
    if shape[-1] > 16384 and k is None:
        pytest.skip("too long to sort whole")
    with fuser.FusionBuilder("p") as fb:
        x = fb.input(shape, dt, name="x")
        fb.output(*(fuser.sort(x, descending=True) if k is None else fuser.topk(x, k)))
    ptx = fuser.compile(fb).ptx
    assert "bar.sync" in ptx
    if find_ptxas():
        assemble_ptx(ptx, "sm_90a")
