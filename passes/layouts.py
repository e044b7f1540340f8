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

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp, TensorType
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
        last_view = view
        a.replace_all_uses_with(view.result)
        block.erase_arg(a)
        new_arg_attrs[i][VIEW] = _i64_array(layout.shape)
        changed += 1
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise LayoutError(f"@{fn.sym_name.data} has no func.return")
    n_res = len(ret.operands)
    new_res_attrs = [res_attrs(fn, j) for j in range(n_res)]
    values = list(ret.operands)
    for j, v in enumerate(values):
        if STRIDE_ORDER not in new_res_attrs[j] or VIEW in new_res_attrs[j]:
            continue
        order = output_order(fn, j)
        shape = tuple(v.type.get_shape())
        if list(order) != list(range(len(order))):
            p = F.PermuteOp.create(operands=[v], result_types=[TensorType(v.type.element_type,
                                                                           [shape[d] for d in order])],
                                   properties={"perm": _i64_array(order)})
            p.location = ret.location
            p.result.name_hint = v.name_hint
            block.insert_op_before(p, ret)
            values[j] = p.result
        new_res_attrs[j][VIEW] = _i64_array(shape)
        changed += 1
    if not changed:
        return 0
    ret.operands = values
    fn.function_type = FunctionType.from_lists([a.type for a in block.args], [v.type for v in values])
    fn.arg_attrs = ArrayAttr([DictionaryAttr(d) for d in new_arg_attrs])
    if any(new_res_attrs):
        fn.res_attrs = ArrayAttr([DictionaryAttr(d) for d in new_res_attrs])
    return changed


def has_layouts(fn: func.FuncOp) -> bool:
    """Whether `fn` declares any layout (a strided argument or a result's stride order)."""
    return any(STRIDES in arg_attrs(fn, i) for i in range(len(fn.body.block.args))) or \
        any(STRIDE_ORDER in res_attrs(fn, j) for j in range(len(fn.function_type.outputs.data)))
