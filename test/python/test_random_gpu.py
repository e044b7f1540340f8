"""iota and the random numbers on the GPU (issue 31): the kernels' uniform numbers equal the
reference interpreter's bit for bit (normal ones to float tolerance) for odd shapes and several
schedules (vector widths, block sizes), a new offset gives new numbers without recompiling, the
kernels' numbers pass the statistical tests, iota equals torch.arange, and fused dropout (with
its mask) and dropout + residual + layer norm agree with torch given the same mask."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fuser
from fuser.tools.bench import workloads
from cuda_torch import cuda_torch

pytestmark = pytest.mark.gpu

SHAPES = [(7, 9), (1000003,), (33, 128), (5, 3, 17), (4, 1024)]
SCHEDULES = ["default", "default{vector=1}", "default{vector=2 block=64}", "default{block=1024}"]


def _fusion(kind: str, shape, dtype: str, extra=None):
    with fuser.FusionBuilder(f"{kind}_{dtype}") as fb:
        s, o = fb.input((), "i64", name="seed"), fb.input((), "i64", name="offset")
        fn = fuser.uniform if kind == "uniform" else fuser.normal
        r = fn(shape, s, o, *((-1.0, 3.0) if kind == "uniform" else (0.5, 2.0)), dtype=dtype)
        fb.output(r if extra is None else extra(r))
    return fb


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("pipeline", SCHEDULES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16", "f64"])
def test_uniform_equals_the_reference_bit_for_bit(dtype, shape, pipeline):
    c = fuser.compile(_fusion("uniform", shape, dtype), pipeline=pipeline)
    for seed, offset in ((0, 0), (123456789, 7), (-5, 2**40 + 3)):
        got = c(np.int64(seed), np.int64(offset))
        np.testing.assert_array_equal(_bits(got), _bits(c.reference(np.int64(seed), np.int64(offset))))


@pytest.mark.parametrize("pipeline", SCHEDULES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_normal_equals_the_reference(dtype, shape, pipeline):
    c = fuser.compile(_fusion("normal", shape, dtype), pipeline=pipeline)
    got = c(np.int64(31), np.int64(4)).astype(np.float32)
    want = c.reference(np.int64(31), np.int64(4)).astype(np.float32)
    tol = 1e-4 if dtype == "f32" else 2e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_new_offset_new_numbers_without_recompiling():
    c = fuser.compile(_fusion("uniform", (4099,), "f32"))
    a, b = c(np.int64(1), np.int64(0)), c(np.int64(1), np.int64(1))
    assert np.mean(a == b) < 0.01
    np.testing.assert_array_equal(c(np.int64(1), np.int64(0)), a)  # and the same offset again
    np.testing.assert_array_equal(b, c.reference(np.int64(1), np.int64(1)))


def test_fused_with_other_ops_and_a_reduction():
    """uniform inside a larger pointwise expression and a row sum: the same numbers."""
    def extra(r):
        return fuser.sum(fuser.exp(r) * 2.0, [1])
    c = fuser.compile(_fusion("uniform", (37, 1000), "f32", extra))
    np.testing.assert_allclose(c(np.int64(9), np.int64(9)), c.reference(np.int64(9), np.int64(9)), rtol=1e-5)


def test_kernel_statistics():
    torch = cuda_torch()
    n = 1_000_000
    u = torch.as_tensor(fuser.compile(_fusion("uniform", (n,), "f32"))(np.int64(77), np.int64(0))).double()
    u = (u + 1.0) / 4.0  # low -1, high 3 back to [0, 1)
    assert abs(u.mean().item() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    x = torch.sort(u).values
    ks = torch.max(torch.maximum(torch.arange(1, n + 1, dtype=torch.float64) / n - x,
                                 x - torch.arange(n, dtype=torch.float64) / n)).item()
    assert ks < 1.949 / math.sqrt(n)
    z = torch.as_tensor(fuser.compile(_fusion("normal", (n,), "f32"))(np.int64(77), np.int64(1))).double()
    z = (z - 0.5) / 2.0
    assert abs(z.mean().item()) < 5 / math.sqrt(n) and abs(z.var().item() - 1) < 5 * math.sqrt(2 / n)
    assert abs(torch.corrcoef(torch.stack([z[:-1], z[1:]]))[0, 1].item()) < 5 / math.sqrt(n)


@pytest.mark.parametrize("dtype", ["i64", "i32", "f32", "bf16", "f64"])
def test_iota_equals_torch_arange(dtype):
    torch = cuda_torch()
    integer = dtype[0] == "i"
    start, end, step = (3, 1000003, 7) if integer else (0.5, 700.0, 0.25)
    with fuser.FusionBuilder("arange") as fb:
        fb.output(fuser.arange(start, end, step, dtype=dtype, builder=fb))
    out = fuser.compile(fb)().numpy()  # (a DeviceArray: no input to give back the kind of; bf16 is ml_dtypes')
    got = torch.as_tensor(out.astype(np.float32)).to(torch.bfloat16) if dtype == "bf16" else torch.as_tensor(out)
    tdt = {"i64": torch.int64, "i32": torch.int32, "f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64}
    # (torch's bf16 arange rounds i * step and the sum each to bf16; fuser computes in f32 and
    # rounds once: torch's f32 arange rounded to bf16)
    want = torch.arange(start, end, step, dtype=tdt["f32" if dtype == "bf16" else dtype], device="cuda")
    want = want.to(tdt[dtype]).cpu()
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_dropout_matches_torch_given_the_mask(dtype):
    torch = cuda_torch()
    tdt = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    shape, p = (129, 1031), 0.2
    with fuser.FusionBuilder("dropout") as fb:
        x = fb.input(shape, dtype, name="x")
        g = fb.input(shape, dtype, name="g")
        s, o = fb.input((), "i64", name="seed"), fb.input((), "i64", name="offset")
        y, m = fuser.dropout(fuser.relu(x), p, s, o)
        fb.output(y, m, fuser.dropout_backward(g, m, p))
    c = fuser.compile(fb)
    xt = torch.randn(shape, device="cuda", dtype=tdt)
    gt = torch.randn(shape, device="cuda", dtype=tdt)
    seed, off = torch.tensor(5, device="cuda"), torch.tensor(6, device="cuda")
    y, m, dx = c(xt, gt, seed, off)
    assert m.dtype == torch.bool and abs(m.float().mean().item() - (1 - p)) < 0.01
    torch.testing.assert_close(y, (torch.relu(xt).float() * m * (1 / (1 - p))).to(tdt), rtol=0, atol=0)
    torch.testing.assert_close(dx, torch.ops.aten.native_dropout_backward(gt, m, 1 / (1 - p)), rtol=0, atol=0)
    import ml_dtypes
    host = [t.cpu().view(torch.int16).numpy().view(ml_dtypes.bfloat16) if t.dtype == torch.bfloat16
            else t.cpu().numpy() for t in (xt, gt, seed, off)]
    _, mm, _ = c.reference(*host)  # the kernel's mask is the reference's
    np.testing.assert_array_equal(mm, m.cpu().numpy())


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_dropout_residual_layer_norm_forward_and_backward(dtype):
    """The bench rows' fusions: outputs against torch given the fusion's own mask."""
    torch = cuda_torch()
    torch.manual_seed(0)
    for w in (workloads.dropout_residual_layer_norm(dtype, (1000, 768), (1000, 768)),
              workloads.dropout_residual_layer_norm_backward(dtype, (1000, 768), (1000, 768))):
        inputs = [torch.randn(s, device="cuda", dtype=torch.float32).to(workloads.torch_dtype(torch, d))
                  for s, d in w.inputs(w.shape, dtype)]
        got = fuser.compile(w.fusion())(*inputs)
        if w.check is not None:  # (the forward: torch's result recomputed from fuser's mask)
            assert w.check(got, inputs) <= w.rtol
        else:
            want = w.torch_fn(*inputs)
            for g, r in zip(got, want):
                assert g.dtype == r.dtype
                assert ((g.double() - r.double()).norm() / r.double().norm()).item() <= w.rtol
