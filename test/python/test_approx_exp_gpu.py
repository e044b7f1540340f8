"""fusion-approx-exp on the GPU: an exp rounded to bf16 or f16 computed as ex2.approx(x log2 e)
stays within one ulp of torch's accurately computed exp rounded the same way, and moves rarely
(only results that close to a rounding boundary); a softmax and the cross-entropy gradient,
whose sums keep the accurate exp, match torch as before."""

from __future__ import annotations

import pytest

import fuser
from cuda_torch import cuda_torch, torch_dtype
from fuser.tools.bench import workloads

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_narrow_exp_is_within_an_ulp_of_torch(dtype):
    torch = cuda_torch()
    n = 1 << 20
    text = f"""func.func @e(%x: tensor<{n}x{dtype}>) -> tensor<{n}x{dtype}> {{
  %y = fusion.exp %x : tensor<{n}x{dtype}>
  func.return %y : tensor<{n}x{dtype}>
}}"""
    k = fuser.compile(text)
    assert "math.exp2" in k.ir("sched") and "math.exp " not in k.ir("sched")
    hi = 80.0 if dtype == "bf16" else 11.0  # (results normal in bf16, finite in f16; ex2.approx.ftz
    # flushes f32 subnormals, as fuser's accurate exp does)
    x = (torch.rand(n, device="cuda") * 2 * hi - hi).to(torch_dtype(dtype))
    got = k(x)
    want = torch.exp(x.float()).to(torch_dtype(dtype))
    bits = torch.int16
    ulps = (got.view(bits).int() - want.view(bits).int()).abs()
    assert int(ulps.max()) <= 1
    assert float((ulps != 0).float().mean()) < 0.01


def test_cross_entropy_gradient_matches_torch():
    torch = cuda_torch()
    r, c = 64, 50257
    w = workloads.cross_entropy_fwd_bwd((r, c), "bf16", (r, c))
    k = fuser.compile(w.build((r, c), "bf16"))
    x = (torch.randn(r, c, device="cuda") * 4).to(torch.bfloat16)
    y = torch.randint(0, c, (r,), device="cuda")
    loss, dx = k(x, y)
    xx = x.detach().float().requires_grad_()
    ref = torch.nn.functional.cross_entropy(xx, y)
    (g,) = torch.autograd.grad(ref, xx)
    assert abs(float(loss) - float(ref)) <= 1e-5 * abs(float(ref))
    want = g.to(torch.bfloat16).float()
    assert float((dx.float() - want).abs().max()) <= 2 ** -8 * float(want.abs().max())
    assert float((dx.float() != want).float().mean()) < 1e-3
