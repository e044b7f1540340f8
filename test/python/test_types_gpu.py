"""Booleans, integers, f64 and casts on the GPU (issue 28): every fusion with an i1 input or
output gave wrong values (LLVM packed vectors of i1 into bits; torch and numpy keep a byte per
bool), and casts from i1 or i64 to floats did not compile. Issue 31 added i8, i16, i32 and u8
(MLIR's ui8): casts between every pair, against the reference and against torch's own casts.

Checked against torch on the GPU where the fusion is a torch pattern (dropout backward,
scale-bias-ReLU forward and backward, a mask in arithmetic), else against the reference
interpreter; booleans and integers exactly, odd shapes included.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fuser import api
from fuser.runtime.reference import reference_from_text
from cuda_torch import cuda_torch

pytestmark = pytest.mark.gpu

SHAPES = [(1,), (7,), (1000003,), (4097, 4099)]
TYPES = ["f32", "f16", "bf16", "f64", "i1", "i8", "i16", "i32", "i64", "u8"]
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64,
      "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8}
INTS = ("i8", "i16", "i32", "i64", "u8")


def _t(shape, dt):
    """The tensor type of a shape and a dtype name (u8 is spelled ui8 in MLIR)."""
    return "tensor<" + "x".join(map(str, shape)) + "x" + {"u8": "ui8"}.get(dt, dt) + ">"


def _outputs(k, *args):
    got = k(*args)
    return got if isinstance(got, tuple) else (got,)


def _same(got, want, what=""):
    """Exact equality (NaN equal to NaN), with the count of differing elements on failure."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (what, g.shape, g.dtype, w.shape, w.dtype)
    if g.dtype.kind == "f" or g.dtype == NP["bf16"]:
        g, w = g.astype(np.float64), w.astype(np.float64)
        bad = ~((g == w) | (np.isnan(g) & np.isnan(w)))
    else:
        bad = g != w
    assert not bad.any(), f"{what}: {int(bad.sum())} of {bad.size} elements differ, first at {np.argwhere(bad)[0]}"


FZ200 = """
func.func @fz200(%in0: tensor<1000xbf16>, %in1: tensor<1000xf32>) -> (tensor<1xbf16>, tensor<1000xi1>, tensor<1xbf16>) {
  %0 = fusion.cast %in1 : tensor<1000xf32> to tensor<1000xbf16>
  %1 = fusion.sub %0, %in0 : tensor<1000xbf16>
  %2 = fusion.mul %in0, %1 : tensor<1000xbf16>
  %3 = fusion.relu %2 : tensor<1000xbf16>
  %4 = fusion.cmp lt, %3, %2 : tensor<1000xbf16>
  %5 = fusion.full 0.0 : tensor<1000xbf16>
  %6 = fusion.where %4, %3, %5 : tensor<1000xbf16>
  %7 = fusion.gelu %0 {approximate = "tanh"} : tensor<1000xbf16>
  %8 = fusion.abs %1 : tensor<1000xbf16>
  %9 = fusion.full 0.5 : tensor<1000xbf16>
  %10 = fusion.add %8, %9 : tensor<1000xbf16>
  %11 = fusion.rsqrt %10 : tensor<1000xbf16>
  %12 = fusion.reduce min %11 dims [0] keepdim : tensor<1000xbf16> to tensor<1xbf16>
  %13 = fusion.silu %12 : tensor<1xbf16>
  %14 = fusion.gelu %13 : tensor<1xbf16>
  func.return %14, %4, %12 : tensor<1xbf16>, tensor<1000xi1>, tensor<1xbf16>
}"""


def test_issue_reproducer_bool_output_never_true():
    """Output 1 is relu(x) < x, never true; the GPU returned true for 750 of 1000 elements."""
    rng = np.random.default_rng()
    a = rng.uniform(-2, 2, 1000).astype(np.float32).astype(ml_dtypes.bfloat16)
    b = rng.uniform(-2, 2, 1000).astype(np.float32)
    got = _outputs(api.compile(FZ200), a, b)
    want = reference_from_text(FZ200)(a, b, precision="native")
    assert not got[1].any()
    _same(got[1], want[1], "mask")
    _same(got[2], want[2], "min")


@pytest.mark.parametrize("shape", SHAPES)
def test_dropout_backward_matches_torch(shape):
    torch = cuda_torch()
    t, tk = _t(shape, "bf16"), _t(shape, "i1")
    tf = _t(shape, "f32")
    text = f"""
func.func @dropout_bwd(%g: {t}, %keep: {tk}) -> {t} {{
  %gf = fusion.cast %g : {t} to {tf}
  %kf = fusion.cast %keep : {tk} to {tf}
  %s = fusion.full 1.25 : {tf}
  %a = fusion.mul %gf, %kf : {tf}
  %b = fusion.mul %a, %s : {tf}
  %r = fusion.cast %b : {tf} to {t}
  func.return %r : {t}
}}"""
    g = torch.randn(shape, device="cuda").to(torch.bfloat16)
    keep = torch.rand(shape, device="cuda") < 0.8
    got = api.compile(text)(g, keep)
    want = (g.float() * keep.float() * 1.25).to(torch.bfloat16)
    assert torch.equal(got, want), int((got != want).sum())


@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (1, 1000003), (4097, 4099)])
def test_scale_bias_relu_forward_and_backward_match_torch(shape):
    """The forward returns the ReLU mask (a bool output); the backward takes it (a bool input)."""
    torch = cuda_torch()
    t, tm, tb = _t(shape, "bf16"), _t(shape, "i1"), _t(shape[-1:], "bf16")
    fwd = f"""
func.func @sbr_fwd(%x: {t}, %scale: {tb}, %bias: {tb}) -> ({t}, {tm}) {{
  %s = fusion.broadcast %scale dims [0] : {tb} to {t}
  %b = fusion.broadcast %bias dims [0] : {tb} to {t}
  %xs = fusion.mul %x, %s : {t}
  %y = fusion.add %xs, %b : {t}
  %z = fusion.full 0.0 : {t}
  %m = fusion.cmp gt, %y, %z : {t}
  %r = fusion.where %m, %y, %z : {t}
  func.return %r, %m : {t}, {tm}
}}"""
    bwd = f"""
func.func @sbr_bwd(%g: {t}, %m: {tm}, %scale: {tb}) -> {t} {{
  %z = fusion.full 0.0 : {t}
  %gm = fusion.where %m, %g, %z : {t}
  %s = fusion.broadcast %scale dims [0] : {tb} to {t}
  %dx = fusion.mul %gm, %s : {t}
  func.return %dx : {t}
}}"""
    x = torch.randn(shape, device="cuda").to(torch.bfloat16)
    scale = torch.randn(shape[-1:], device="cuda").to(torch.bfloat16)
    bias = torch.randn(shape[-1:], device="cuda").to(torch.bfloat16)
    g = (torch.randn(shape, device="cuda") * 12).to(torch.bfloat16)
    r, m = api.compile(fwd)(x, scale, bias)
    y = x * scale + bias  # bf16 ops, each rounded, as the fusion's
    assert torch.equal(m, y > 0), int((m != (y > 0)).sum())
    assert torch.equal(r, torch.relu(y))
    dx = api.compile(bwd)(g, m, scale)
    want = torch.where(m, g, torch.zeros_like(g)) * scale
    assert torch.equal(dx, want), int((dx != want).sum())


@pytest.mark.parametrize("shape", SHAPES)
def test_a_mask_in_arithmetic_matches_torch(shape):
    """x + (x > 0.5) in f32, and the mask's count as an i64 output (a bool sum counts)."""
    torch = cuda_torch()
    t, tm, ti = _t(shape, "f32"), _t(shape, "i1"), _t(shape, "i64")
    text = f"""
func.func @mask_math(%x: {t}) -> ({t}, {ti}) {{
  %h = fusion.full 0.5 : {t}
  %m = fusion.cmp gt, %x, %h : {t}
  %mf = fusion.cast %m : {tm} to {t}
  %y = fusion.add %x, %mf : {t}
  %mi = fusion.cast %m : {tm} to {ti}
  func.return %y, %mi : {t}, {ti}
}}"""
    x = torch.randn(shape, device="cuda")
    y, mi = api.compile(text)(x)
    assert torch.equal(y, x + (x > 0.5).float())
    assert torch.equal(mi, (x > 0.5).long())


def _cast_inputs(src, n, rng):
    """Values that exercise a cast: ordinary ones, halves (ties), large, signed zeros, and for
    floats inf and NaN; integers up to 2**62."""
    if src == "i1":
        return rng.integers(0, 2, n).astype(np.bool_)
    if src == "i64":
        mags = rng.choice([1, 100, 2**24 + 1, 2**40 + 3, 2**62 + 5], n)
        return (rng.integers(-1000, 1000, n) * mags // 1000).astype(np.int64)
    if src in INTS:  # the whole range, its ends included
        info = np.iinfo(NP[src])
        x = rng.integers(info.min, int(info.max) + 1, n, dtype=np.int64)
        x[:4] = [info.min, info.max, 0, 1]
        return x.astype(NP[src])
    x = rng.standard_normal(n) * rng.choice([0.5, 3.0, 1e3, 1e6, 1e20], n)
    x[:8] = [0.0, -0.0, 0.5, -2.5, np.inf, -np.inf, np.nan, 1e30]
    with np.errstate(over="ignore"):
        return x.astype(NP[src])


@pytest.mark.parametrize("src", TYPES)
def test_every_cast_matches_the_reference_exactly(src):
    """One kernel casts an input of type `src` to every type (bool and integer results exactly;
    float results bit for bit, NaN for NaN), 4099 elements."""
    n = 4099
    outs = [d for d in TYPES if d != src]
    body = "\n".join(f"  %c{i} = fusion.cast %x : {_t((n,), src)} to {_t((n,), d)}" for i, d in enumerate(outs))
    text = (f"func.func @casts(%x: {_t((n,), src)}) -> ({', '.join(_t((n,), d) for d in outs)}) {{\n{body}\n"
            f"  func.return {', '.join(f'%c{i}' for i in range(len(outs)))} : {', '.join(_t((n,), d) for d in outs)}\n}}")
    x = _cast_inputs(src, n, np.random.default_rng(len(src)))
    got = _outputs(api.compile(text), x)
    want = reference_from_text(text)(x, precision="native")
    for d, g, w in zip(outs, got, want):
        _same(g, w, f"{src} -> {d}")


@pytest.mark.parametrize("src", TYPES)
def test_every_cast_matches_torch(src):
    """Casts from `src` to every type against torch's own on the GPU (`Tensor.to`), 4099
    elements, bit for bit. Float -> integer inputs are kept inside the target's range (where
    C++ defines the conversion) except for u8, whose out-of-range rule torch defines (through
    int64, wrapping: -1.5 -> 255); torch's CUDA casts to i8, i16, i32 and i64 beyond the range
    are what the GPU's cvt gives, which `test_out_of_range_float_to_int_matches_torch` pins."""
    torch = cuda_torch()
    n = 4099
    x = _cast_inputs(src, n, np.random.default_rng(7 + len(src)))
    outs = [d for d in TYPES if d != src]
    body = "\n".join(f"  %c{i} = fusion.cast %x : {_t((n,), src)} to {_t((n,), d)}" for i, d in enumerate(outs))
    text = (f"func.func @casts(%x: {_t((n,), src)}) -> ({', '.join(_t((n,), d) for d in outs)}) {{\n{body}\n"
            f"  func.return {', '.join(f'%c{i}' for i in range(len(outs)))} : {', '.join(_t((n,), d) for d in outs)}\n}}")
    if src in ("f32", "f16", "bf16", "f64"):  # finite, inside i8's range, ties and signed zeros kept
        xf = x.astype(np.float64)
        x = np.where(np.isfinite(xf), np.clip(xf, -128.0, 127.0), xf).astype(NP[src])
    tx = torch.from_numpy(x.view(np.int16) if src == "bf16" else x).cuda()
    if src == "bf16":
        tx = tx.view(torch.bfloat16)
    got = _outputs(api.compile(text), tx)
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64, "i1": torch.bool,
           "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}
    for d, g in zip(outs, got):
        want = tx.to(tdt[d])
        if src in ("f32", "f16", "bf16", "f64") and d in INTS + ("i1",):
            ok = ~torch.isnan(tx)  # NaN to an integer: undefined in C++ (fuser: 0); to i1: true
            if d == "i1":
                ok = torch.ones_like(ok)
            assert torch.equal(g[ok], want[ok]), (src, d, int((g[ok] != want[ok]).sum()))
        else:
            assert torch.equal(g, want) or (g.is_floating_point() and torch.equal(g.isnan(), want.isnan()) and
                                            torch.equal(g[~g.isnan()], want[~want.isnan()])), (src, d)


@pytest.mark.parametrize("dst", ["i8", "i16", "i32"])
def test_out_of_range_float_to_int_matches_torch(dst):
    """Beyond the target's range fuser saturates into i32 and wraps that into i8 and i16 (what the
    reference computes; cvt.rzi.s32 and a truncation); this checks that torch's CUDA cast does
    the same (C++ leaves it undefined; torch on the CPU gives other values), 1000003 elements of
    f32 up to 1e12 in magnitude. (On an H100, 2026-11-26, torch's i8 and i16 casts wrapped.)"""
    torch = cuda_torch()
    n = 1000003
    x = torch.randn(n, device="cuda") * torch.tensor([1e2, 1e5, 1e9, 1e12], device="cuda")[torch.arange(n, device="cuda") % 4]
    text = f"""
func.func @sat(%x: {_t((n,), "f32")}) -> {_t((n,), dst)} {{
  %y = fusion.cast %x : {_t((n,), "f32")} to {_t((n,), dst)}
  func.return %y : {_t((n,), dst)}
}}"""
    got = api.compile(text)(x)
    want = x.to({"i8": torch.int8, "i16": torch.int16, "i32": torch.int32}[dst])
    ref = reference_from_text(text)(x.cpu().numpy())[0]
    _same(got.cpu().numpy(), ref, f"f32 -> {dst} against the reference")
    assert torch.equal(got, want), int((got != want).sum())


@pytest.mark.parametrize("dt", ["i1", "i8", "i16", "i32", "i64", "u8", "f64"])
def test_transposes_of_bools_integers_and_doubles(dt):
    shape = (1000, 1027)
    t, tt = _t(shape, dt), _t(shape[::-1], dt)
    text = f"""
func.func @tr(%x: {t}) -> {tt} {{
  %y = fusion.permute %x [1, 0] : {t} to {tt}
  func.return %y : {tt}
}}"""
    x = _cast_inputs(dt, shape[0] * shape[1], np.random.default_rng(1)).reshape(shape)
    _same(_outputs(api.compile(text), x)[0], x.T, dt)


def test_a_mask_crossing_a_segment_boundary_and_feeding_reductions():
    r, c = 33, 1000
    t, tm = _t((r, c), "f32"), _t((r, c), "i1")
    text = f"""
func.func @seg(%x: {t}, %k: {tm}) -> ({_t((r,), "f32")}, {tm}, {_t((c,), "f32")}) {{
  %z = fusion.full 0.0 : {t}
  %c = fusion.cmp gt, %x, %z : {t}
  %s = fusion.segment_set %c : {tm} to {tm}
  %w = fusion.where %s, %x, %z : {t}
  %kf = fusion.cast %k : {tm} to {t}
  %p = fusion.mul %w, %kf : {t}
  %rs = fusion.reduce sum %p dims [1] : {t} to {_t((r,), "f32")}
  %cs = fusion.reduce sum %p dims [0] : {t} to {_t((c,), "f32")}
  func.return %rs, %s, %cs : {_t((r,), "f32")}, {tm}, {_t((c,), "f32")}
}}"""
    rng = np.random.default_rng()
    x = rng.standard_normal((r, c)).astype(np.float32)
    k = rng.integers(0, 2, (r, c)).astype(np.bool_)
    got = _outputs(api.compile(text), x, k)
    want = reference_from_text(text)(x, k, precision="native")
    _same(got[1], want[1], "mask")
    for g, w in (got[0], want[0]), (got[2], want[2]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)


def test_welford_count_used_as_a_float():
    t = _t((33, 1000), "f32")
    text = f"""
func.func @wf(%x: {t}) -> ({_t((33,), "f32")}, {_t((33,), "i64")}) {{
  %avg, %m2, %n = fusion.welford %x dims [1] : {t} to {_t((33,), "f32")}, {_t((33,), "f32")}, {_t((33,), "i64")}
  %nf = fusion.cast %n : {_t((33,), "i64")} to {_t((33,), "f32")}
  %v = fusion.div %m2, %nf : {_t((33,), "f32")}
  func.return %v, %n : {_t((33,), "f32")}, {_t((33,), "i64")}
}}"""
    x = np.random.default_rng().standard_normal((33, 1000)).astype(np.float32)
    v, n = _outputs(api.compile(text), x)
    _same(n, np.full(33, 1000, np.int64), "count")
    np.testing.assert_allclose(v, x.var(axis=1), rtol=1e-4)


def test_a_matmul_epilogue_writes_a_mask_and_an_integer_cast():
    m, n, k = 256, 264, 136
    text = f"""
func.func @mm(%a: {_t((m, k), "bf16")}, %b: {_t((k, n), "bf16")}) -> ({_t((m, n), "i1")}, {_t((m, n), "i64")}) {{
  %c = fusion.matmul %a, %b : {_t((m, k), "bf16")}, {_t((k, n), "bf16")} -> {_t((m, n), "f32")}
  %z = fusion.full 0.0 : {_t((m, n), "f32")}
  %p = fusion.cmp gt, %c, %z : {_t((m, n), "f32")}
  %i = fusion.cast %c : {_t((m, n), "f32")} to {_t((m, n), "i64")}
  func.return %p, %i : {_t((m, n), "i1")}, {_t((m, n), "i64")}
}}"""
    rng = np.random.default_rng()
    # small integers: every product and sum is exact, so the signs and truncations are exact too
    a = rng.integers(-3, 4, (m, k)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-3, 4, (k, n)).astype(ml_dtypes.bfloat16)
    p, i = _outputs(api.compile(text), a, b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    _same(p, exact > 0, "mask")
    _same(i, exact.astype(np.int64), "cast")

