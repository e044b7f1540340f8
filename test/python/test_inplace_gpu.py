"""In-place outputs (issue 32) on the GPU, against torch on CUDA: an optimizer-style update of
odd shapes written into the input's own storage (no output allocation: the returned tensor is
the input), an update beside a reduction of the same input (the reduction first, the update in place), a
flip into itself (staged), running statistics updated
in a reduction's epilogue, a KV-cache slot written through a slice, numpy and DeviceArray
inputs, and the PyTorch backend's batch norm and compiled in-place update on CUDA."""

from __future__ import annotations

import numpy as np
import pytest

import fuser
from cuda_torch import cuda_torch

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", [(1,), (1001,), (37, 129), (3, 5, 257)])
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_sgd_step_in_place(shape, dtype):
    torch = cuda_torch()
    tdt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    fb = fuser.FusionBuilder("sgd")
    p = fb.input(shape, dtype, name="p")
    g = fb.input(shape, dtype, name="g")
    fb.output(fuser.cast(fuser.cast(p, "f32") - fuser.cast(g, "f32") * 0.01, dtype), alias=p)
    c = fuser.compile(fb)
    gen = torch.Generator(device="cuda").manual_seed(0)
    P = torch.randn(shape, generator=gen, device="cuda").to(tdt)
    G = torch.randn(shape, generator=gen, device="cuda").to(tdt)
    ptr = P.data_ptr()
    for _ in range(2):  # the general path, then the cached torch call
        P0 = P.clone()
        out = c(P, G)
        assert out is P and P.data_ptr() == ptr
        tol = {"f32": 1e-6, "bf16": 8e-3, "f16": 1e-3}[dtype]  # an fma may round once where torch rounds twice
        torch.testing.assert_close(P, (P0.float() - G.float() * 0.01).to(tdt), rtol=tol, atol=tol)


def test_update_beside_a_sum_of_the_input():
    torch = cuda_torch()
    fb = fuser.FusionBuilder("twice")
    x = fb.input((257, 33), "f32", name="x")
    fb.output(x * 2.0 + 1.0, alias=x)
    fb.output(fuser.sum(x, dims=[1]))
    c = fuser.compile(fb)
    assert "fuser.staged_aliases" not in c.ir("sched")  # the sum's kernel runs first
    X = torch.randn(257, 33, device="cuda")
    X0 = X.clone()
    out, s = c(X)
    assert out is X
    torch.testing.assert_close(s, X0.sum(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(X, X0 * 2 + 1)


@pytest.mark.parametrize("n", [1, 31, 1001, 4099])
def test_flip_into_itself_is_staged(n):
    torch = cuda_torch()
    fb = fuser.FusionBuilder("flip")
    x = fb.input((n,), "f32", name="x")
    fb.output(fuser.flip(x, [0]), alias=x)
    c = fuser.compile(fb)
    assert ("fuser.staged_aliases" in c.ir("sched")) == (n > 1)  # (a flip of one element launches nothing)
    X = torch.randn(n, device="cuda")
    want = X.flip(0)
    assert c(X) is X
    torch.testing.assert_close(X, want, rtol=0, atol=0)


@pytest.mark.parametrize("n", [2, 3])
def test_inputs_swapped_or_rotated_in_place(n):
    """x_k returned into x_{k+1}'s storage (the last one negated): a swap and a rotation, each
    output holding the inputs' values from before the call (fuzz seed 11271021)."""
    torch = cuda_torch()
    fb = fuser.FusionBuilder("rotate")
    xs = [fb.input((37, 129), "f32", name=f"x{k}") for k in range(n)]
    for k, x in enumerate(xs):
        fb.output(-x if k == n - 1 else x, alias=xs[(k + 1) % n])
    c = fuser.compile(fb)
    X = [torch.randn(37, 129, device="cuda") for _ in range(n)]
    X0 = [x.clone() for x in X]
    outs = c(*X)
    for k in range(n):
        assert outs[k] is X[(k + 1) % n]
        torch.testing.assert_close(X[(k + 1) % n], -X0[k] if k == n - 1 else X0[k], rtol=0, atol=0)


def test_an_input_returned_beside_its_own_update():
    torch = cuda_torch()
    fb = fuser.FusionBuilder("keep")
    x = fb.input((37, 129), "f32", name="x")
    fb.output(x)
    fb.output(x * 2.0, alias=x)
    X = torch.randn(37, 129, device="cuda")
    X0 = X.clone()
    old, new = fuser.compile(fb)(X)
    assert new is X
    torch.testing.assert_close(old, X0, rtol=0, atol=0)
    torch.testing.assert_close(X, X0 * 2, rtol=0, atol=0)


@pytest.mark.parametrize("seed", range(40))
def test_random_inplace_fusions(seed):
    """inplace_cases.py's random mixes of in-place and plain outputs on CUDA tensors: each
    in-place output is its input tensor, holding what torch computes from the inputs as passed."""
    from inplace_cases import random_inplace

    torch = cuda_torch()
    fb, shape, n, outputs = random_inplace(seed)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    X = [torch.randn(shape, device="cuda", generator=gen) for _ in range(n)]
    X0 = [x.cpu().numpy() for x in X]
    got = fuser.compile(fb)(*X)
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(outputs)
    for o, (into, f) in zip(got, outputs):
        if into is not None:
            assert o is X[into]
        np.testing.assert_array_equal(o.cpu().numpy(), f(X0))


def test_running_stats_in_reduction_epilogue():
    torch = cuda_torch()
    fb = fuser.FusionBuilder("stats")
    x = fb.input((6, 7, 13, 11), "f32", name="x")
    r = fb.input((7,), "f32", name="r")
    fb.output(r * 0.9 + fuser.sum(x, dims=[0, 2, 3]) * (0.1 / (6 * 13 * 11)), alias=r)
    c = fuser.compile(fb)
    assert "fuser.staged_aliases" not in c.ir("sched")
    X, R = torch.randn(6, 7, 13, 11, device="cuda"), torch.randn(7, device="cuda")
    R0 = R.clone()
    assert c(X, R) is R
    torch.testing.assert_close(R, R0 * 0.9 + X.mean((0, 2, 3)) * 0.1, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pos", [0, 5, 60])
def test_kv_cache_slot_write(pos):
    """cache[:, pos:pos+3] = new, as a cat of the cache's slices around the slot, written into the cache."""
    torch = cuda_torch()
    B, S, H, L = 3, 63, 17, 3
    fb = fuser.FusionBuilder("kv")
    cache = fb.input((B, S, H), "bf16", name="cache")
    new = fb.input((B, L, H), "bf16", name="new")
    parts = [fuser.slice(cache, 1, 0, pos), new, fuser.slice(cache, 1, pos + L, S)]
    fb.output(fuser.cat([q for q in parts if q.shape[1]], dim=1), alias=cache)
    c = fuser.compile(fb)
    C = torch.randn(B, S, H, device="cuda").bfloat16()
    N = torch.randn(B, L, H, device="cuda").bfloat16()
    want = C.clone()
    want[:, pos:pos + L] = N
    assert c(C, N) is C
    torch.testing.assert_close(C, want, rtol=0, atol=0)


def test_numpy_and_device_array_inputs():
    cuda_torch()
    from fuser.runtime.arrays import DeviceArray
    fb = fuser.FusionBuilder("axpy")
    p = fb.input((1001,), "f32", name="p")
    g = fb.input((1001,), "f32", name="g")
    fb.output(p + g, alias=p)
    c = fuser.compile(fb)
    P, G = np.arange(1001, dtype=np.float32), np.ones(1001, np.float32)
    assert c(P, G) is P
    np.testing.assert_array_equal(P, np.arange(1001, dtype=np.float32) + 1)
    D = DeviceArray((1001,), "f32")
    D.buffer.copy_from_host(np.arange(1001, dtype=np.float32))
    assert c(D, G) is D
    np.testing.assert_array_equal(D.numpy(), np.arange(1001, dtype=np.float32) + 1)


def test_backend_batch_norm_on_cuda():
    torch = cuda_torch()
    from fuser.torch.backend import FuserBackend
    torch.manual_seed(0)
    eager = torch.nn.BatchNorm2d(7).cuda()
    mine = torch.nn.BatchNorm2d(7).cuda()
    mine.load_state_dict(eager.state_dict())
    b = FuserBackend()
    f = torch.compile(mine, backend=b)
    for step in range(3):
        x = torch.randn(5, 7, 9, 11, device="cuda") * (step + 1) + step
        torch.testing.assert_close(f(x), eager(x), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mine.running_mean, eager.running_mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(mine.running_var, eager.running_var, rtol=1e-5, atol=1e-6)
    assert b.stats.inplace_outputs == 2 and b.stats.gpu_calls >= 3


def test_backend_kv_cache_write_on_cuda():
    torch = cuda_torch()
    from fuser.torch.backend import FuserBackend

    def write(cache, new, pos: int):
        cache[:, pos:pos + new.shape[1]] = new
        return cache

    b = FuserBackend()
    f = torch.compile(write, backend=b, dynamic=False)
    C = torch.randn(3, 257, 8, 64, device="cuda").bfloat16()
    N = torch.randn(3, 1, 8, 64, device="cuda").bfloat16()
    C2 = C.clone()
    ptr = C.data_ptr()
    out = f(C, N, 100)
    write(C2, N, 100)
    assert C.data_ptr() == ptr and torch.equal(C, C2) and torch.equal(out, C2)
    assert b.stats.inplace_outputs == 1 and b.stats.gpu_calls == 1
