"""fusion-approx-exp: compute an exponential that only feeds 16-bit float outputs as
2^(x log2 e) with the hardware's ex2.approx (the usual fast-math exp of GPU kernels).

fuser's f32 exp (lowering/target/llvmir/libm.py) is accurate to 2-3 ulp, at about 11
instructions an element: clamps, an fma-computed correction for the rounding of x log2 e, and
inf handling around one ex2.approx. Without the correction, the rounding of x log2 e gives a
relative error of at most |x log2 e| 2^-24 ln 2 (2^-18 at the edge of the range, |x| = 88): 1/500
of a bf16 ulp and 1/128 of an f16 ulp. Where the value is rounded to such a type before anything
else reads it, that error moves a result by one ulp only when it lies that close to a rounding
boundary, as any two correct f32 implementations may.

An exp is marked `{fuser.approx}` (convert-fusion-to-sched then emits exp2(x * log2 e)) when
every path from it to the fusion's results goes through arithmetic that keeps relative error
(add, sub, mul, div, neg, where's values, broadcasts, reshapes, permutes) and ends in a cast to
bf16 or f16, or in a result of those types. An exp whose own type is bf16 or f16 is rounded at
once and is always marked. An f32 exp with other readers as well (a reduction: a softmax's or a
loss's sum of exponentials, which keeps the accurate form) is split in two: the 16-bit paths
read a marked copy. In a row kernel that loops over a long row, the output pass computes the
exponential again anyway, so the copy costs nothing there and the loss gradient's output pass
gets the cheap one.

Comparisons, reductions, matmuls, integer casts and f32 or f64 results read exp's value
unrounded, so an exp reaching them stays accurate. f64 exps are never marked.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import fusion as F

APPROX = F.APPROX_ATTR
_NARROW = ("bf16", "f16")
# Ops through which exp's error stays small against the magnitudes it is combined with (what a
# 16-bit rounding of the result is measured against): the paths to a narrow output may use them.
_KEEPS_ERROR = (F.AddOp, F.SubOp, F.MulOp, F.DivOp, F.NegOp, F.WhereOp, F.BroadcastOp, F.ReshapeOp,
                F.PermuteOp)


@dataclass(frozen=True)
class ApproxExp(ModulePass):
    """Mark (or split off) the exponentials that only reach bf16/f16 results (see the module)."""

    name = "fusion-approx-exp"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            approx_exps(fn.body.block)


def _narrow(v: SSAValue) -> bool:
    return F.dtype_name(F._elem(v)) in _NARROW


def approx_exps(block: Block) -> int:
    """Mark or split the exps of `block` and of the segments in it; returns how many were marked."""
    ops = list(block.walk())
    # Whether each value reaches only narrow results: users come after their operands in the
    # walk (a segment's ops after the segment), so one backward sweep sees every user first.
    narrow_only: dict[SSAValue, bool] = {}
    for op in reversed(ops):
        for r in op.results:
            narrow_only[r] = all(_use_reaches_narrow(u.operation, r, narrow_only) for u in r.uses)
    marked = 0
    for op in ops:
        if not isinstance(op, F.ExpOp) or APPROX in op.attributes:
            continue
        if _narrow(op.result):
            op.attributes[APPROX] = UnitAttr()
            marked += 1
            continue
        if F.dtype_name(F._elem(op.result)) != "f32":
            continue
        uses = list(op.result.uses)
        good = [u for u in uses if _use_reaches_narrow(u.operation, op.result, narrow_only)]
        if not good:
            continue
        marked += 1
        if len(good) == len(uses):
            op.attributes[APPROX] = UnitAttr()
            continue
        copy = F.ExpOp(op.input, attrs={**op.attributes, APPROX: UnitAttr()})
        if op.result.name_hint:
            copy.result.name_hint = f"{op.result.name_hint}_approx"
        op.parent_block().insert_op_after(copy, op)
        for u in good:
            u.operation.operands[u.index] = copy.result
    return marked


def _use_reaches_narrow(user: Operation, value: SSAValue, narrow_only: dict[SSAValue, bool]) -> bool:
    if isinstance(user, (func.ReturnOp, F.YieldOp)):
        return _narrow(value)
    if isinstance(user, F.CastOp):
        return _narrow(user.result)
    if isinstance(user, F.WhereOp) and user.operands[0] is value:  # (a condition is i1: not exp's)
        return False
    if isinstance(user, _KEEPS_ERROR) and len(user.results) == 1:
        return narrow_only.get(user.results[0], False)
    return False
