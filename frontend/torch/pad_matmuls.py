"""Pad matmuls whose operands' rows are not 16-byte aligned, before partitioning.

A bf16/f16 `mm` or `addmm` whose operand is stored with rows of an odd number of elements (GPT-2's
50257-wide vocabulary in the LM head's backward: `grad_logits @ W` and `grad_logits.t() @ h`)
can be read neither by fuser's TMA loads nor by cuBLAS's fast kernels: on the H100 the two took
8.8 ms per step in cuBLAS's fallback kernels. Padding the short dim with zeros to a multiple of 8
costs one copy of the operand, and a zero-padded K adds nothing to the products:

- K: both operands padded along K (`constant_pad_nd`), the product unchanged;
- M, when A is stored transposed (its rows are M long): A padded along M, the product's extra
  rows dropped by a slice of the leading dim (which keeps it contiguous).

An operand that is a transpose of a contiguous tensor is padded in its stored layout and
transposed again (no transposing copy); a padding of the same tensor is made once, so
`grad_logits` is copied once for both of the LM head's backward matmuls. N (the product's rows)
is left as it is: its slice would not be contiguous. Only matmuls of at least PAD_MIN_MACS
multiply-adds are padded: below that the copy is not paid back.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx as fx

aten = torch.ops.aten

PAD_MIN_MACS = 1 << 27
HALF = (torch.bfloat16, torch.float16)
ALIGN = 8  # elements of 2 bytes in 16 bytes
_TRANSPOSES = (aten.t.default, aten.permute.default, aten.transpose.int)


def _example(target: Any, args: tuple) -> Any:
    """The example value (a fake tensor on the inputs' device) of target(*args)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    vals = [a.meta["val"] if isinstance(a, fx.Node) else a for a in args]
    mode = next((v.fake_mode for v in vals if hasattr(v, "fake_mode")), None) or FakeTensorMode()
    with mode:
        fakes = [mode.from_tensor(v) if isinstance(v, torch.Tensor) and not hasattr(v, "fake_mode") else v for v in vals]
        return target(*fakes)


def _is_transpose(n: Any) -> bool:
    """A 2-D transpose of a contiguous 2-D tensor."""
    if not isinstance(n, fx.Node) or n.op != "call_function" or n.target not in _TRANSPOSES:
        return False
    src = n.args[0]
    v = src.meta.get("val") if isinstance(src, fx.Node) else None
    if not isinstance(v, torch.Tensor) or v.dim() != 2 or not v.is_contiguous():
        return False
    if n.target is aten.permute.default:
        return [int(d) % 2 for d in n.args[1]] == [1, 0]
    return True


def _rows(v: torch.Tensor) -> int:
    """The stored row length of a 2-D tensor (its contiguous dim's extent)."""
    return v.shape[1] if v.stride(1) == 1 else v.shape[0]


class _Padder:
    def __init__(self, graph: fx.Graph) -> None:
        self.graph = graph
        self.made: dict[tuple, fx.Node] = {}

    def node(self, target: Any, args: tuple, before: fx.Node) -> fx.Node:
        with self.graph.inserting_before(before):
            n = self.graph.call_function(target, args)
        n.meta["val"] = _example(target, args)
        return n

    def pad(self, x: fx.Node, pad0: int, pad1: int, before: fx.Node) -> fx.Node:
        """x (2-D) with pad0 zero rows and pad1 zero columns added at the ends."""
        if _is_transpose(x):  # pad the stored tensor, then transpose it again
            src = x.args[0]
            key = (src, pad1, pad0)
            if key not in self.made:
                self.made[key] = self.node(aten.constant_pad_nd.default, (src, [0, pad0, 0, pad1]), before)
            return self.node(aten.t.default, (self.made[key],), before)
        key = (x, pad0, pad1)
        if key not in self.made:
            self.made[key] = self.node(aten.constant_pad_nd.default, (x, [0, pad1, 0, pad0]), before)
        return self.made[key]


def pad_unaligned_matmuls(gm: fx.GraphModule) -> int:
    """Rewrite the graph's unaligned half-precision mm / addmm as described above; returns how many."""
    padder, count = _Padder(gm.graph), 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target not in (aten.mm.default, aten.addmm.default):
            continue
        ai = 0 if n.target is aten.mm.default else 1
        a, b = n.args[ai], n.args[ai + 1]
        if not (isinstance(a, fx.Node) and isinstance(b, fx.Node)):
            continue
        va, vb = a.meta.get("val"), b.meta.get("val")
        if not (isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor) and va.dim() == 2 and vb.dim() == 2
                and va.dtype in HALF and vb.dtype == va.dtype):
            continue
        (m, k), nn = va.shape, vb.shape[1]
        if m * k * nn < PAD_MIN_MACS:
            continue
        a_rows_k, b_rows_k = va.stride(1) == 1, vb.stride(1) != 1
        if (_rows(vb) % ALIGN and not b_rows_k) or (ai == 1 and m % ALIGN and not a_rows_k):
            continue  # N unaligned (the product's rows), or an addmm's bias would need padding too
        pad_k = -k % ALIGN if k % ALIGN and (a_rows_k or b_rows_k) else 0
        pad_m = -m % ALIGN if m % ALIGN and not a_rows_k else 0
        if not (pad_k or pad_m):
            continue
        # the padded operands must come out aligned (a transposed operand's other dim too)
        if (not a_rows_k and not _is_transpose(a) and k % ALIGN) or (b_rows_k and not _is_transpose(b) and nn % ALIGN):
            continue
        new_a = padder.pad(a, pad_m, pad_k, n)
        new_b = padder.pad(b, pad_k, 0, n) if pad_k else b
        args = list(n.args)
        args[ai], args[ai + 1] = new_a, new_b
        out = padder.node(n.target, tuple(args), n)
        out.kwargs = dict(n.kwargs)
        if pad_m:
            out = padder.node(aten.slice.Tensor, (out, 0, 0, m), n)
        n.replace_all_uses_with(out)
        gm.graph.erase_node(n)
        count += 1
    if count:
        gm.graph.lint()
        gm.recompile()
    return count


__all__ = ["pad_unaligned_matmuls", "PAD_MIN_MACS"]
