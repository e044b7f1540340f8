"""Give attention its causal flag back when its mask is the causal mask, before AOTAutograd.

Hugging Face's models (GPT-2, Llama and the rest of `transformers` 5) call
`scaled_dot_product_attention(q, k, v, is_causal=True)` with no mask when they run eagerly, but
under torch.compile they cannot tell that no padding mask will come, so they build the causal mask
as a tensor (`arange`s compared, `expand`ed to [B, 1, L, S]) and pass it as `attn_mask`. The
attention kernels then read a mask instead of skipping the blocks above the diagonal: on an H200
Llama's cuDNN attention took 6.9 ms a training step that way against 2.4 ms in eager PyTorch.

This pass, on the Dynamo graph (torch-level, before AOTAutograd traces forward and backward):
for each `scaled_dot_product_attention` with `is_causal=False` whose `attn_mask` is computed from
constants only (no graph input, parameter or module among its ancestors, no impure op), it runs
the mask's subgraph once, and if the mask selects exactly the lower triangle `tril(ones(L, S))`
(SDPA's own meaning of `is_causal`: top-left aligned) in every batch and head, it drops the mask
and sets `is_causal=True`. A boolean mask must be True exactly there; a float (additive) mask 0
there and -inf (or its dtype's lowest value) elsewhere. Anything else (a padding mask from the
inputs, a sliding window, a mask that would broadcast the output to more batches) is left alone.
Masks over MAX_MASK_ELEMENTS elements are not evaluated.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
import torch.fx as fx

log = logging.getLogger("fuser.torch")

SDPA = (torch._C._nn.scaled_dot_product_attention, torch.nn.functional.scaled_dot_product_attention)
# scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
_MASK, _CAUSAL = 3, 5
MAX_MASK_ELEMENTS = 1 << 28


def _arg(node: fx.Node, index: int, name: str, default: Any) -> Any:
    return node.args[index] if len(node.args) > index else node.kwargs.get(name, default)


def _constant_subgraph(mask: fx.Node) -> list[fx.Node] | None:
    """The nodes `mask` is computed from, in graph order, if none is an input, attribute, module
    call or impure op; else None."""
    seen: set[fx.Node] = set()
    stack = [mask]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        if n.op not in ("call_function", "call_method") or n.is_impure():
            return None
        seen.add(n)
        stack.extend(n.all_input_nodes)
    return [n for n in mask.graph.nodes if n in seen]


def _evaluate(nodes: list[fx.Node], mask: fx.Node) -> Any:
    """The value of `mask`, computed by a graph of copies of `nodes`."""
    g = fx.Graph()
    copies: dict[fx.Node, fx.Node] = {}
    for n in nodes:
        copies[n] = g.node_copy(n, lambda a: copies[a])
    g.output(copies[mask])
    with torch._subclasses.fake_tensor.unset_fake_temporarily(), torch.no_grad():
        return fx.GraphModule(torch.nn.Module(), g)()


def _example(node: Any) -> Any:
    return node.meta.get("example_value", node.meta.get("val")) if isinstance(node, fx.Node) else None


def is_causal_mask(mask: Any, query_shape: tuple[int, ...], key_shape: tuple[int, ...]) -> bool:
    """Whether attention with additive or boolean `mask` equals attention with is_causal=True for a
    query of `query_shape` and a key of `key_shape` ([..., L, E] and [..., S, E])."""
    if not isinstance(mask, torch.Tensor) or mask.dim() < 2 or len(query_shape) < 2:
        return False
    L, S = query_shape[-2], key_shape[-2]
    batch = tuple(query_shape[:-2])
    if tuple(mask.shape[-2:]) != (L, S) or mask.dim() > len(query_shape):
        return False
    try:  # the mask must not broadcast the output to more batches or heads than the query has
        if tuple(torch.broadcast_shapes(tuple(mask.shape[:-2]), batch)) != batch:
            return False
    except RuntimeError:
        return False
    lower = torch.ones(L, S, dtype=torch.bool, device=mask.device).tril()
    if mask.dtype == torch.bool:
        return bool(torch.equal(mask, lower.expand(mask.shape)))
    if not mask.dtype.is_floating_point:
        return False
    kept = mask == 0
    dropped = mask <= torch.finfo(mask.dtype).min  # -inf included
    return bool(torch.equal(kept, lower.expand(mask.shape)) and torch.equal(dropped, ~kept))


def restore_causal_attention(gm: fx.GraphModule) -> int:
    """Rewrite `gm`'s attention calls with a constant causal mask to is_causal=True (in place);
    returns how many were rewritten."""
    done = 0
    values: dict[fx.Node, Any] = {}  # each mask evaluated once (every layer's attention reads the same)
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in SDPA:
            continue
        mask = _arg(node, _MASK, "attn_mask", None)
        if not isinstance(mask, fx.Node) or _arg(node, _CAUSAL, "is_causal", False) is not False:
            continue
        q, k = _example(node.args[0]), _example(node.args[1] if len(node.args) > 1 else node.kwargs.get("key"))
        if not isinstance(q, torch.Tensor) or not isinstance(k, torch.Tensor) or \
                not all(isinstance(d, int) for d in (*q.shape, *k.shape)):
            continue  # (symbolic shapes: left as they are)
        nodes = _constant_subgraph(mask)
        if nodes is None:
            continue
        # a constant mask has a static shape: too big to evaluate at compile time, it stays
        mask_example = _example(mask)
        if isinstance(mask_example, torch.Tensor) and mask_example.numel() > MAX_MASK_ELEMENTS:
            continue
        if mask not in values:
            try:
                values[mask] = _evaluate(nodes, mask)
            except Exception as e:  # noqa: BLE001 - the graph keeps its mask
                log.info("attention mask %s not evaluated: %s", mask.name, e)
                values[mask] = None
        if not is_causal_mask(values[mask], tuple(q.shape), tuple(k.shape)):
            continue
        args, kwargs = list(node.args), dict(node.kwargs)
        for index, name, new in ((_MASK, "attn_mask", None), (_CAUSAL, "is_causal", True)):
            if len(args) > index:
                args[index] = new
            else:
                kwargs[name] = new
        node.args, node.kwargs = tuple(args), kwargs
        for n in reversed(nodes):  # the mask's subgraph, where nothing else reads it
            if not n.users:
                gm.graph.erase_node(n)
        done += 1
        log.info("attention %s: its mask %s is the causal mask; is_causal=True instead", node.name, mask.name)
    if done:
        gm.recompile()
    return done
