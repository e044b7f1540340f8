"""fusion-fold-empty: fold away the values with no elements (issue 32), so no kernel runs over them.

A tensor with a zero extent has nothing to compute, but what is computed from it may not be
empty: a reduction over an empty dim gives its identity, a matmul with K = 0 gives zeros, a pad
of an empty tensor is all pad value, and a cat reads only its other operands. This pass rewrites
a fusion function so that no op reads an empty value:

- every op with an empty result is replaced by `fusion.full 0` of its type (nothing reads it
  but other such ops, the ops below, and the function's return);
- `fusion.reduce` of an empty input gives the identity of its kind: sum 0, prod 1, any false,
  all true, max -inf and min +inf (the least and greatest integer of an integer type); argmax
  and argmin, which torch refuses on an empty dim, give 0;
- `fusion.welford` of an empty input gives avg NaN, m2 0, count 0; `fusion.var_mean` gives NaN
  for both (0 / 0, as torch's);
- `fusion.matmul` with K = 0 gives zeros; `fusion.pad` of an empty operand gives its pad value
  broadcast; `fusion.cat` drops its empty operands; `fusion.scatter` of an empty src gives its
  input;
- any other op with a non-empty result that reads an empty value (an index_select of an empty
  dim, which torch refuses) gives zeros.

The empty values left are `fusion.full`s that the function returns: fusion-segment cuts no kernel
for them and the runtime allocates them with no memory. Then the ops nothing reads are erased.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import fusion as F


def is_empty(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and 0 in v.type.get_shape()


@dataclass(frozen=True)
class FoldEmpty(ModulePass):
    """Fold the empty values of every fusion function (and hand-written segment)."""

    name = "fusion-fold-empty"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            if fn.body.blocks:
                fold_empty(fn.body.block)


def fold_empty(block: Block) -> int:
    """Rewrite `block`; returns the number of ops replaced."""
    count = 0
    for op in list(block.ops):
        if op is block.last_op or op.dialect_name() != "fusion" or isinstance(op, F.SegmentOp):
            continue
        if isinstance(op, F.FullOp):
            continue
        if any(is_empty(r) for r in op.results) and all(is_empty(r) for r in op.results):
            _replace(op, [_full(block, op, r.type, 0.0) for r in op.results])
        elif isinstance(op, F.CatOp) and any(is_empty(x) for x in op.inputs):
            kept = [x for x in op.inputs if not is_empty(x)]
            new = kept[0] if len(kept) == 1 else _insert(block, op, F.CatOp(kept, op.dim.data)).result
            _replace(op, [new])
        elif isinstance(op, (F.ScatterOp, F.ScatterAddAtomicOp)) and is_empty(op.src):  # (nothing written: the input)
            _replace(op, [op.input])
        elif isinstance(op, F.PadOp) and is_empty(op.input):
            shape = op.result.type.get_shape()
            _replace(op, [_insert(block, op, F.BroadcastOp(op.value, shape, list(range(len(shape))))).result])
        elif any(is_empty(x) for x in op.operands):
            _replace(op, [_full(block, op, r.type, _empty_value(op, i)) for i, r in enumerate(op.results)])
        else:
            continue
        count += 1
    if count:
        _erase_unread(block)
    return count


def _empty_value(op: Operation, i: int) -> float:
    """Result `i` of `op` when what it reads has no elements (see the module docstring)."""
    if isinstance(op, F.ReduceOp):
        kind, et = op.kind.data, F._elem(op.result)
        if kind in ("max", "min") and isinstance(et, IntegerType):
            w = et.width.data
            lo, hi = (0, 2 ** w - 1) if F.is_unsigned(et) or w == 1 else (-(2 ** (w - 1)), 2 ** (w - 1) - 1)
            return float(lo if kind == "max" else hi)
        return {"sum": 0.0, "prod": 1.0, "any": 0.0, "all": 1.0, "max": -math.inf, "min": math.inf}.get(kind, 0.0)
    if isinstance(op, F.WelfordOp):
        return (math.nan, 0.0, 0.0)[i]
    if isinstance(op, F.VarMeanOp):
        return math.nan
    return 0.0


def _insert(block: Block, before: Operation, new: Operation) -> Operation:
    new.location = before.location
    block.insert_op_before(new, before)
    return new


def _full(block: Block, before: Operation, t: TensorType, value: float) -> SSAValue:
    return _insert(block, before, F.FullOp(value, t.get_shape(), t.element_type)).result


def _replace(op: Operation, values: list[SSAValue]) -> None:
    for r, v in zip(op.results, values):
        v.name_hint = r.name_hint
        r.replace_all_uses_with(v)
    op.parent_block().erase_op(op)


def _erase_unread(block: Block) -> None:
    for op in reversed(list(block.ops)):
        if op.dialect_name() == "fusion" and op.results and not any(r.uses for r in op.results):
            block.erase_op(op)
