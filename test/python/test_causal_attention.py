"""The backend's causal-attention rewrite (fuser/frontend/torch/causal_attention.py) on the CPU:
which masks are the causal mask, which graphs are rewritten, and that a rewritten model computes
what eager PyTorch computes, forward and backward."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as Fn  # noqa: E402

import fuser.torch as ft  # noqa: E402
from fuser.torch.causal_attention import is_causal_mask, restore_causal_attention  # noqa: E402

Q = (2, 3, 6, 4)  # [B, H, L, E]


def _lower(L: int = 6, S: int = 6) -> torch.Tensor:
    return torch.ones(L, S, dtype=torch.bool).tril()


@pytest.mark.parametrize("mask", [
    _lower(), _lower().expand(2, 1, 6, 6), _lower().expand(2, 3, 6, 6).clone(),
    torch.zeros(6, 6).masked_fill(~_lower(), float("-inf")),
    torch.zeros(1, 1, 6, 6, dtype=torch.bfloat16).masked_fill(~_lower(), torch.finfo(torch.bfloat16).min),
], ids=["bool", "bool_expanded", "bool_full", "float_inf", "bf16_lowest"])
def test_causal_masks_are_recognized(mask):
    assert is_causal_mask(mask, Q, Q)


def _window(w: int) -> torch.Tensor:
    i = torch.arange(6)
    return (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < w)


@pytest.mark.parametrize("mask, q, k", [
    (_window(3), Q, Q),                                        # a sliding window
    (torch.ones(6, 6, dtype=torch.bool), Q, Q),                # no mask at all
    (_lower().T.contiguous(), Q, Q),                           # the upper triangle
    (torch.ones(6, 8, dtype=torch.bool).tril(2), Q, (2, 3, 8, 4)),  # bottom-right aligned: not SDPA's is_causal
    (_lower().expand(4, 1, 6, 6), Q, Q),                       # broadcasts the output to 4 batches
    (_lower().expand(2, 1, 6, 6).clone().index_put_((torch.tensor([1]), torch.tensor([0]), torch.tensor([5]),
                                                    torch.tensor([0])), torch.tensor(False)), Q, Q),  # one padded key
    (torch.zeros(6, 6).masked_fill(~_lower(), -1e4), Q, Q),    # a finite penalty changes the weights
    (_lower().int(), Q, Q),                                    # an integer mask is not SDPA's
    (_lower()[:5], Q, Q),                                      # the wrong shape
], ids=["window", "all", "upper", "bottom_right", "broadcasts", "padded", "finite", "int", "shape"])
def test_other_masks_are_not(mask, q, k):
    assert not is_causal_mask(mask, q, k)


class CausalByMask(nn.Module):
    """Attention as Hugging Face's models write it under torch.compile: the causal mask built from
    aranges and expanded to the batch."""

    def __init__(self, window: int | None = None, float_mask: bool = False):
        super().__init__()
        self.proj = nn.Linear(8, 3 * 8)
        self.window, self.float_mask = window, float_mask

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.proj(x).view(b, s, 3, 2, 4).permute(2, 0, 3, 1, 4)
        i = torch.arange(s, device=x.device)
        mask = i[None, :] <= i[:, None]
        if self.window is not None:
            mask = mask & (i[:, None] - i[None, :] < self.window)
        mask = mask[None, None].expand(b, 1, s, s)
        if self.float_mask:
            mask = torch.zeros(b, 1, s, s, device=x.device).masked_fill(~mask, float("-inf"))
        return Fn.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum(1)


class MaskFromInput(CausalByMask):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        b, s, _ = x.shape
        q, k, v = self.proj(x).view(b, s, 3, 2, 4).permute(2, 0, 3, 1, 4)
        return Fn.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum(1)


def _dynamo_graph(model: nn.Module, *args: torch.Tensor) -> tuple[torch.fx.GraphModule, list]:
    """The torch-level graph Dynamo hands a backend, and its example inputs."""
    graphs = []

    def keep(gm, example_inputs):
        graphs.append((gm, example_inputs))
        return gm.forward

    torch._dynamo.reset()
    torch.compile(model, backend=keep)(*args)
    return graphs[0]


def _sdpa_calls(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and "scaled_dot_product" in str(n.target)]


@pytest.mark.parametrize("float_mask", [False, True])
def test_a_constant_causal_mask_becomes_is_causal(float_mask):
    model, x = CausalByMask(float_mask=float_mask), torch.randn(2, 6, 8)
    gm, inputs = _dynamo_graph(model, x)
    with torch.no_grad():
        before = gm(*inputs)
    assert restore_causal_attention(gm) == 1
    (call,) = _sdpa_calls(gm)
    assert call.kwargs.get("attn_mask") is None and call.kwargs.get("is_causal") is True
    # the mask's subgraph is gone with it
    assert not any(n.op == "call_function" and n.target is torch.arange for n in gm.graph.nodes)
    with torch.no_grad():
        torch.testing.assert_close(gm(*inputs), before)


@pytest.mark.parametrize("model, args", [
    (CausalByMask(window=3), (torch.randn(2, 6, 8),)),
    (MaskFromInput(), (torch.randn(2, 6, 8), _lower().expand(2, 1, 6, 6))),
], ids=["window", "mask_from_input"])
def test_other_graphs_are_left_alone(model, args):
    gm, _ = _dynamo_graph(model, *args)
    before = gm.code
    assert restore_causal_attention(gm) == 0
    assert gm.code == before


@pytest.mark.parametrize("causal_attention", [True, False])
def test_through_the_backend(causal_attention):
    """Forward and backward through fuser match eager, with the rewrite and without it."""
    torch.manual_seed(0)
    model, x = CausalByMask(), torch.randn(2, 6, 8)
    ref = model(x)
    ref.square().sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    torch._dynamo.reset()
    be = ft.backend(causal_attention=causal_attention)
    out = torch.compile(model, backend=be)(x)
    out.square().sum().backward()
    assert be.stats.causal_masks == (1 if causal_attention else 0)
    torch.testing.assert_close(out, ref)
    for p, g in zip(model.parameters(), grads):
        torch.testing.assert_close(p.grad, g)


class TwoLayers(nn.Module):
    """Two attentions reading one mask, as a model's layers do."""

    def __init__(self):
        super().__init__()
        self.a, self.b = CausalByMask(), CausalByMask()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        i = torch.arange(s, device=x.device)
        mask = (i[None, :] <= i[:, None])[None, None].expand(b, 1, s, s)
        out = x
        for layer in (self.a, self.b):
            q, k, v = layer.proj(out).view(b, s, 3, 2, 4).permute(2, 0, 3, 1, 4)
            out = Fn.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(b, s, 8)
        return out


def test_a_mask_read_by_every_layer_is_evaluated_once(monkeypatch):
    from fuser.torch import causal_attention

    calls = []
    evaluate = causal_attention._evaluate
    monkeypatch.setattr(causal_attention, "_evaluate", lambda nodes, mask: calls.append(mask) or evaluate(nodes, mask))
    model, x = TwoLayers(), torch.randn(2, 6, 8)
    gm, inputs = _dynamo_graph(model, x)
    with torch.no_grad():
        before = gm(*inputs)
    assert restore_causal_attention(gm) == 2 and len(calls) == 1
    assert all(c.kwargs.get("is_causal") is True for c in _sdpa_calls(gm))
    with torch.no_grad():
        torch.testing.assert_close(gm(*inputs), before)
