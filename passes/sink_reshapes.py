"""fusion-sink-reshapes: move `fusion.reshape`s past elementwise ops, towards their uses.

A linear layer written for a [batch, seq, hidden] tensor reshapes to 2-D for the matmul and back
to 3-D after it, and everything elementwise after that (bias, activation, residual add) then runs
on the 3-D view:

    %mm = fusion.matmul %x, %w : ... -> tensor<8192x768xf32>
    %y  = fusion.cast %mm : tensor<8192x768xf32> to tensor<8192x768xbf16>
    %r  = fusion.reshape %y : tensor<8192x768xbf16> to tensor<8x1024x768xbf16>
    %o  = fusion.add %r, %res : tensor<8x1024x768xbf16>

A matmul's epilogue is computed at the matmul's [M, N] positions, so an elementwise op of another
shape cannot join it and costs a kernel of its own and a round trip through memory. This pass
rewrites an elementwise op whose operands are reshapes of one shape S into the same op on S,
followed by one reshape of its result:

    %a  = fusion.reshape %res : tensor<8x1024x768xbf16> to tensor<8192x768xbf16>
    %o2 = fusion.add %y, %a : tensor<8192x768xbf16>
    %o  = fusion.reshape %o2 : tensor<8192x768xbf16> to tensor<8x1024x768xbf16>

Its other operands must follow at no cost: a `fusion.full` (made again in S), a function
argument (reshaped: a reshape of a stored value is only an index computation), a broadcast
of a value that varies only along the trailing dims the reshape keeps (a bias; broadcast again
in S), or an elementwise op of such operands, up to MAX_CLONE_DEPTH ops deep (made again in S:
a kernel recomputes elementwise ops anyway). A reshape of a reshape becomes one reshape, or none
when it gives back its input's shape, so a 2-D -> 3-D -> 2-D round trip in front of a matmul
operand disappears. Reshapes stop at
reductions, matmuls, broadcasts, permutes and `segment_set`. Reshapes are row-major, so the
values are unchanged.

Only a reshape of a computed value moves (one of a function argument is already free), and a
move takes the reshape one op further from the arguments, so the rewriting ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import fusion as F
from fuser.lowering.common import shape_of

# Ops computed element by element from operands of their own shape.
_ELEMENTWISE = tuple(F.UNARY_OPS + F.BINARY_OPS + F.FLOAT_TEST_OPS + F.LOGICAL_OPS + [F.CmpOp, F.WhereOp, F.CastOp])
# How deep an elementwise operand computed in the reshaped shape is made again in the other one.
MAX_CLONE_DEPTH = 6


@dataclass(frozen=True)
class SinkReshapes(ModulePass):
    """Move fusion.reshape below elementwise ops (and fold reshape chains), so that the ops run
    in the shape of the value before the reshape (a matmul's [M, N], where its epilogue runs)."""

    name = "fusion-sink-reshapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            sink_reshapes(fn.body.block)
            for seg in [o for o in fn.body.block.ops if isinstance(o, F.SegmentOp)]:
                if "fuser.segment" not in seg.attributes:  # hand-written, not planned yet: cut as the rest is
                    sink_reshapes(seg.body.block)


def sink_reshapes(block: Block) -> int:
    """Rewrite `block` (a fusion function's body); returns the number of rewrites."""
    count = 0
    changed = True
    while changed:
        changed = False
        for op in list(block.ops):
            if op.parent is None:  # erased by an earlier rewrite of this sweep
                continue
            if isinstance(op, F.ReshapeOp):
                done = _fold(op)
            elif isinstance(op, _ELEMENTWISE):
                done = _sink(op)
            else:
                done = False
            if done:
                count += 1
                changed = True
    _erase_dead(block)
    return count


def _erase_dead(block: Block) -> None:
    """Fusion ops nothing reads any more (the reshapes and fulls the rewrites left behind)."""
    for op in reversed(list(block.ops)):
        if op.dialect_name() == "fusion" and op.results and not any(r.uses for r in op.results):
            block.erase_op(op)


def _fold(op: F.ReshapeOp) -> bool:
    """reshape(reshape(x)) -> reshape(x); a reshape to its input's own shape -> its input."""
    src = op.input
    if isinstance(src.owner, F.ReshapeOp):
        src = src.owner.input
    if src.type == op.result.type:
        op.result.replace_all_uses_with(src)
        op.parent_block().erase_op(op)
        return True
    if src is not op.input:
        op.operands[0] = src
        return True
    return False


def _kept_suffix(t: tuple[int, ...], s: tuple[int, ...]) -> int:
    """How many trailing dims a reshape between shapes t and s keeps as they are."""
    k = 0
    while k < min(len(t), len(s)) and t[len(t) - 1 - k] == s[len(s) - 1 - k]:
        k += 1
    return k


def _sink(op: Operation) -> bool:
    """Rewrite elementwise `op` on reshapes of shape S into the op on S and one reshape."""
    moved = [x for x in op.operands if isinstance(x.owner, F.ReshapeOp) and not isinstance(x.owner.input.owner, Block)]
    if not moved:
        return False
    s = shape_of(moved[0].owner.input)
    t = shape_of(op.results[0])
    block = op.parent_block()
    new_operands: list[SSAValue] = []
    made: list[Operation] = []  # ops to insert before `op`
    for x in op.operands:
        y = _in_shape(x, t, s, made)
        if y is None:
            for m in made:  # not inserted: let go of their operands' uses
                m.drop_all_references()
            return False
        new_operands.append(y)
    for m in made:
        block.insert_op_before(m, op)
    res = op.results[0]
    new = type(op).create(operands=new_operands, result_types=[TensorType(F._elem(res), list(s))],
                          properties=dict(op.properties), attributes=dict(op.attributes))
    new.location = op.location
    block.insert_op_before(new, op)
    back = F.ReshapeOp.create(operands=[new.results[0]], result_types=[res.type])
    back.location = op.location
    block.insert_op_before(back, op)
    new.results[0].name_hint = res.name_hint
    back.results[0].name_hint = res.name_hint
    res.replace_all_uses_with(back.results[0])
    block.erase_op(op)
    return True


def _in_shape(x: SSAValue, t: tuple[int, ...], s: tuple[int, ...], made: list[Operation],
              depth: int = 0) -> SSAValue | None:
    """Operand `x` (of shape t) as a value of shape s at no cost, or None. An elementwise op of
    such operands is made again in s (it is recomputed in a kernel anyway), up to a few ops deep."""
    owner = x.owner
    if isinstance(owner, F.ReshapeOp) and shape_of(owner.input) == s:
        return owner.input
    if isinstance(owner, F.FullOp):
        full = F.FullOp.create(result_types=[TensorType(F._elem(x), list(s))], properties=dict(owner.properties))
        made.append(full)
        return full.result
    if isinstance(owner, Block):  # a function argument: its reshape is an index computation
        r = F.ReshapeOp.create(operands=[x], result_types=[TensorType(F._elem(x), list(s))])
        made.append(r)
        return r.result
    if isinstance(owner, F.BroadcastOp):
        k = _kept_suffix(t, s)
        lead_t, lead_s = len(t) - k, len(s) - k
        new = set(owner.dims.get_values())
        if math.prod(t[:lead_t]) != math.prod(s[:lead_s]) or not set(range(lead_t)) <= new:
            return None  # the broadcast input varies along dims the reshape regroups
        dims = list(range(lead_s)) + [d - lead_t + lead_s for d in sorted(new) if d >= lead_t]
        b = F.BroadcastOp(owner.input, s, dims)
        made.append(b)
        return b.result
    if isinstance(owner, _ELEMENTWISE) and depth < MAX_CLONE_DEPTH:
        operands = []
        for y in owner.operands:
            z = _in_shape(y, t, s, made, depth + 1)
            if z is None:
                return None
            operands.append(z)
        clone = type(owner).create(operands=operands, result_types=[TensorType(F._elem(x), list(s))],
                                   properties=dict(owner.properties), attributes=dict(owner.attributes))
        clone.location = owner.location
        made.append(clone)
        return clone.results[0]
    return None
