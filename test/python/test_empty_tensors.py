"""Empty tensors (issue 32): a fusion with zero-size dims gives what torch gives (empty outputs,
a reduction's identity over an empty dim, a matmul with K = 0 zeros, a cat without its empty
pieces) and launches no kernel for the empty values; where torch refuses (the max of nothing)
the result is the documented identity. The reference interpreter agrees with the kernels."""

from __future__ import annotations

import re

import numpy as np
import pytest

import fuser
from fuser.runtime.reference import run_reference

torch = pytest.importorskip("torch")


def _fusion(shape, dtype="f32"):
    with fuser.FusionBuilder("empty") as fb:
        x = fb.input(shape, dtype, name="x")
        y = fb.input((4,), "f32", name="y")
        xf = fuser.cast(x, "f32")
        fb.output(fuser.exp(xf) * 2.0)                          # empty, as x
        fb.output(fuser.sum(x, -1))                             # sum over the last dim
        fb.output(fuser.amax(xf, -1))                           # -inf over an empty dim
        fb.output(fuser.cat([fuser.reshape(fuser.sum(xf, -1), [-1]), y], 0))
        fb.output(x)                                            # an input returned as is
    return fb


def _torch(x, y):
    xf = x.float()
    amax = xf.amax(-1) if x.shape[-1] else torch.full(x.shape[:-1], -torch.inf, device=x.device)
    return [torch.exp(xf) * 2.0, x.sum(-1), amax, torch.cat([xf.sum(-1).reshape(-1), y]), x]


SHAPES = [(0, 5), (3, 0), (2, 0, 7), (0,)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_reference_equals_torch(shape):
    x, y = torch.zeros(shape), torch.arange(4.0)
    got = run_reference(_fusion(shape).finish(), [x.numpy(), y.numpy()])
    for g, w in zip(got, _torch(x, y), strict=True):
        assert g.shape == tuple(w.shape)
        np.testing.assert_array_equal(g, w.numpy())


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_no_kernel_touches_an_empty_value(shape):
    sched = fuser.compile(_fusion(shape)).ir("sched")
    params = re.findall(r"sched\.kernel @\w+\((.*?)\) grid", sched)
    assert params, sched  # the cat of y and the reductions' identities are still written
    for p in params:
        assert not re.search(r"memref<(\d+x)*0x", p), p


def test_matmul_with_no_k_is_zeros():
    with fuser.FusionBuilder("k0") as fb:
        a, b = fb.input((64, 0), "bf16", name="a"), fb.input((0, 32), "bf16", name="b")
        fb.output(fuser.matmul(a, b))
    c = fuser.compile(fb)
    assert "sched.launch" in c.ir("sched")  # the zeros are written by a kernel
    np.testing.assert_array_equal(run_reference(fb.finish(), [np.zeros((64, 0), "float32").astype(a_dtype()),
                                                              np.zeros((0, 32), "float32").astype(a_dtype())])[0],
                                  np.zeros((64, 32)))


def a_dtype():
    import ml_dtypes
    return ml_dtypes.bfloat16


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_the_gpu_gives_what_torch_gives(shape):
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    x, y = torch.zeros(shape, device="cuda"), torch.arange(4.0, device="cuda")
    got = fuser.compile(_fusion(shape))(x, y)
    for g, w in zip(got, _torch(x, y), strict=True):
        assert g.shape == w.shape and g.device == w.device
        torch.testing.assert_close(g, w)
    np_got = fuser.compile(_fusion(shape))(x.cpu().numpy(), y.cpu().numpy())  # host arrays too
    assert [g.shape for g in np_got] == [tuple(w.shape) for w in _torch(x, y)]
