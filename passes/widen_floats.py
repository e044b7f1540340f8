"""fusion-widen-floats: compute bf16 and f16 elementwise math in f32, rounding only what leaves it.

A fusion op on bf16 (or f16) tensors is defined as its f32 result rounded to bf16, as PyTorch's
eager kernels compute it; a chain of them rounds after every op. GPT-2's tanh GELU backward,
translated from its ATen graph, is 24 bf16 ops: the kernel spends as many instructions rounding
(a cvt to bf16 and a shift back per op) as computing, and runs at 60% of its bandwidth floor.
Inductor and nvFuser compute such chains in f32 and round once where a value is stored; this
pass does the same, as an explicit rewrite:

    %a = fusion.mul %x, %y : tensor<4xbf16>               %xw = fusion.cast %x : bf16 to f32
    %b = fusion.tanh %a : tensor<4xbf16>         ==>     %yw = fusion.cast %y : bf16 to f32
    func.return %b                                         %aw = fusion.mul %xw, %yw : f32
                                                           %bw = fusion.tanh %aw : f32
                                                           %b  = fusion.cast %bw : f32 to bf16

Widened: float unary and binary ops and `fusion.where` whose result is bf16 or f16; a view
(reshape, broadcast, permute) or a cast of a widened value is taken of its f32 value. Everything
else (matmuls, reductions, comparisons, gathers, outputs) reads the value rounded to its type,
as before. The results therefore differ from eager's by the roundings skipped (less error, not
more); PyTorch's backend runs this unless asked for eager's roundings (`eager_rounding=True`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float16Type, ModuleOp, TensorType, f32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import fusion as F

# (nextafter steps one ulp of its own type: in f32 it would step one of f32's)
_MATH = tuple(op for op in [*F.UNARY_OPS, *F.BINARY_OPS, F.WhereOp]
              if not op.__name__.startswith(("Bitwise", "Shift", "LogicalShift", "Gcd", "Nextafter")))
_VIEWS = (F.ReshapeOp, F.BroadcastOp, F.PermuteOp)


@dataclass(frozen=True)
class WidenFloats(ModulePass):
    """Compute bf16/f16 elementwise chains in f32, rounding once where a value leaves them."""

    name = "fusion-widen-floats"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            widen_floats(fn.body.block)


def _narrow(t) -> bool:
    return isinstance(t, TensorType) and isinstance(t.element_type, (BFloat16Type, Float16Type))


def _wide_type(t: TensorType) -> TensorType:
    return TensorType(f32, t.get_shape())


def widen_floats(block: Block) -> int:
    """Rewrite `block` (a fusion function's body); returns the number of ops now computed in f32."""
    wide: dict[SSAValue, SSAValue] = {}  # a bf16/f16 value -> the same value in f32 (unrounded, if computed here)

    def widened(v: SSAValue, before: Operation) -> SSAValue:
        if v in wide:
            return wide[v]
        if not _narrow(v.type):  # (a where's i1 condition)
            return v
        cast = F.CastOp(v, f32)
        block.insert_op_before(cast, before)
        wide[v] = cast.result
        return cast.result

    count = 0
    for op in list(block.ops):
        if isinstance(op, F.CastOp) and op.input in wide:  # rounded once, from the f32 value
            src = wide[op.input]
            if op.result.type.element_type == f32:
                op.result.replace_all_uses_with(src)
            elif src.type != op.input.type:
                op.operands = [src]
            continue
        if len(op.results) != 1 or not _narrow(op.results[0].type):
            continue
        result = op.results[0]
        if isinstance(op, _VIEWS):
            if op.operands[0] not in wide:
                continue
            operands = [wide[op.operands[0]]]
        elif isinstance(op, _MATH):
            operands = [widened(v, op) for v in op.operands]
        else:
            continue
        new = op.__class__.create(operands=operands, result_types=[_wide_type(result.type)],
                                  properties=dict(op.properties), attributes=dict(op.attributes))
        rounded = F.CastOp(new.results[0], result.type.element_type)
        block.insert_ops_before([new, rounded], op)
        result.replace_all_uses_with(rounded.result)
        block.erase_op(op)
        wide[rounded.result] = new.results[0]
        count += 1
    _erase_unused_casts(block)
    return count


def _erase_unused_casts(block: Block) -> None:
    """The roundings no op reads any more (every reader took the f32 value)."""
    for op in reversed(list(block.ops)):
        if isinstance(op, F.CastOp) and not op.result.uses:
            block.erase_op(op)
