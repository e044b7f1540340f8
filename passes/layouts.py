"""fusion-layouts: apply the memory layouts a fusion function declares at its boundary (issue 32).

An argument with `fusion.strides` (and `fusion.offset`) becomes its 1-D storage, `tensor<N x T>`
with N the elements the view reaches, read through a `fusion.as_strided` that every use of the
argument now reads: the kernels that read the input compute its addresses from the strides (an
index computation, as `fusion.slice` is), so a transposed, sliced or expanded (stride 0) array is
read in place, never copied. The argument records its view's shape as `fusion.view`.

A result with `fusion.stride_order` is returned as the dense `fusion.permute` of its value in
that order (outermost dim first), so the kernel computing it writes that layout (through the
transpose scheduler where the innermost dim moves); the result records its logical shape as
`fusion.view`, and the runtime hands back the permuted view.

Declarations are checked here, naming the function and the argument or result. Idempotent: an
argument or result that has a `fusion.view` is done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import fusion as F
from fuser.dialects.fusion.layout import (STRIDE_ORDER, STRIDES, VIEW, LayoutError, arg_attrs, input_layout,
                                          output_order, res_attrs)
from fuser.dialects.fusion.types import _i64_array

__all__ = ["FusionLayouts", "apply_layouts", "LayoutError"]


@dataclass(frozen=True)
class FusionLayouts(ModulePass):
    """Strided arguments read through `fusion.as_strided`; results returned in their stride order."""

    name = "fusion-layouts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            if fn.body.blocks:
                apply_layouts(fn)


def apply_layouts(fn: func.FuncOp) -> int:
    """Rewrite `fn`'s declared layouts as above; returns how many arguments and results changed."""
    block = fn.body.block
    changed = 0
    args = list(block.args)
    new_arg_attrs = [arg_attrs(fn, i) for i in range(len(args))]
    last_view = None
    for i, a in enumerate(args):
        layout = input_layout(fn, i)
        if layout is None or VIEW in new_arg_attrs[i]:
            continue
        t = a.type
        storage = block.insert_arg(TensorType(t.element_type, [layout.span]), i)
        storage.name_hint = a.name_hint
        view = F.AsStridedOp(storage, layout.shape, layout.strides, layout.offset)
        view.location = fn.location
        if last_view is not None:  # (in argument order, before the body's first op)
            block.insert_op_after(view, last_view)
        elif block.first_op is None:
            block.add_op(view)
        else:
            block.insert_op_before(view, block.first_op)
        a.replace_all_uses_with(view.result)
        block.erase_arg(a)
        _into_segments(view)
        if list(view.result.uses):
            last_view = view
        else:  # (read by hand-written segments only)
            block.erase_op(view)
        new_arg_attrs[i][VIEW] = _i64_array(layout.shape)
        changed += 1
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise LayoutError(f"@{fn.sym_name.data} has no func.return")
    n_res = len(ret.operands)
    new_res_attrs = [res_attrs(fn, j) for j in range(n_res)]
    for j in range(n_res):
        if STRIDE_ORDER not in new_res_attrs[j] or VIEW in new_res_attrs[j]:
            continue
        order = output_order(fn, j)
        v = ret.operands[j]  # (read again: growing a segment replaces its results)
        if list(order) != list(range(len(order))):
            p = _permuted(v, order, ret)
            ret.operands = [p if n == j else o for n, o in enumerate(ret.operands)]
        new_res_attrs[j][VIEW] = _i64_array(v.type.get_shape())
        changed += 1
    if not changed:
        return 0
    values = list(ret.operands)
    fn.function_type = FunctionType.from_lists([a.type for a in block.args], [v.type for v in values])
    fn.arg_attrs = ArrayAttr([DictionaryAttr(d) for d in new_arg_attrs])
    if any(new_res_attrs):
        fn.res_attrs = ArrayAttr([DictionaryAttr(d) for d in new_res_attrs])
    return changed


def _into_segments(view: F.AsStridedOp) -> None:
    """A hand-written `fusion.segment` that reads the strided argument takes its storage and
    reads it through its own `fusion.as_strided` (so its kernels read the input in place, as
    without the segment, instead of a copy made outside it)."""
    storage = view.input
    for use in list(view.result.uses):
        seg = use.operation
        if not isinstance(seg, F.SegmentOp):
            continue
        k = use.index
        body = seg.body.block
        old = body.args[k]
        inner = body.insert_arg(storage.type, k)
        inner.name_hint = old.name_hint
        again = F.AsStridedOp(inner, view.result.type.get_shape(), view.strides.get_values(), view.offset.data)
        again.location = view.location
        body.insert_op_before(again, body.first_op)
        old.replace_all_uses_with(again.result)
        body.erase_arg(old)
        seg.operands = [storage if n == k else o for n, o in enumerate(seg.operands)]


def _permuted(v: SSAValue, order: Sequence[int], ret: func.ReturnOp) -> SSAValue:
    """The dense permute of returned value `v` in `order`: made where `v` is made, inside the
    hand-written segment that yields it (as a further result), else before the return."""
    shape = tuple(v.type.get_shape())
    ptype = TensorType(v.type.element_type, [shape[d] for d in order])

    def permute(x, before):
        p = F.PermuteOp.create(operands=[x], result_types=[ptype], properties={"perm": _i64_array(order)})
        p.location = ret.location
        p.result.name_hint = v.name_hint
        before.parent_block().insert_op_before(p, before)
        return p.result
    seg = v.owner
    if not isinstance(seg, F.SegmentOp):
        return permute(v, ret)
    y = seg.body.block.last_op
    inner = permute(y.operands[v.index], y)
    alone = len(list(v.uses)) == 1  # only the return reads it: the segment yields the permute instead
    at = v.index if alone else len(y.operands)
    y.operands = [inner if n == at else o for n, o in enumerate(y.operands)] + ([] if alone else [inner])
    types = [ptype if n == at else r.type for n, r in enumerate(seg.outputs)] + ([] if alone else [ptype])
    region = seg.detach_region(seg.body)
    grown = F.SegmentOp(list(seg.inputs), types, region, seg.scheduler_name)
    grown.attributes.update(seg.attributes)
    grown.location = seg.location
    seg.parent_block().insert_op_before(grown, seg)
    for n, (old, new) in enumerate(zip(seg.outputs, grown.outputs)):
        new.name_hint = old.name_hint
        if n != at:
            old.replace_all_uses_with(new)
    seg.parent_block().erase_op(seg, safe_erase=False)
    grown.outputs[at].name_hint = v.name_hint
    return grown.outputs[at]


def has_layouts(fn: func.FuncOp) -> bool:
    """Whether `fn` declares any layout (a strided argument or a result's stride order)."""
    return any(STRIDES in arg_attrs(fn, i) for i in range(len(fn.body.block.args))) or \
        any(STRIDE_ORDER in res_attrs(fn, j) for j in range(len(fn.function_type.outputs.data)))
