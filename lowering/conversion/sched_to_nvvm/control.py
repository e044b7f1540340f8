"""Control flow and warp-level ops.

- a bound `sched.for` becomes an `scf.for` whose start is offset by the thread's position and whose step
  is multiplied by the binding's extent. The extents come from the kernel's static launch geometry, so
  the step is a constant. When the trip count is a constant that the binding covers, the loop becomes
  an `scf.if` (or, when it covers it exactly, straight-line code). The `sched.yield` of a loop that
  stays a loop becomes `scf.yield` when the walker reaches it, after the body;
- `sched.barrier` / `sched.shfl_xor` become `nvvm.barrier` / `nvvm.shfl.sync bfly` (an i64 or f64 as two
  shuffles of its 32-bit halves);
- `sched.griddepcontrol wait|launch_dependents` becomes `nvvm.griddepcontrol` of the same kind;
- `sched.return` becomes `llvm.return`.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import Float64Type, i32, i64
from xdsl.ir import Block, Region
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from fuser.dialects import sched
from fuser.dialects.nvvm import BarrierOp as NVVMBarrierOp
from fuser.dialects.nvvm import GridDepControlOp as NVVMGridDepControlOp
from fuser.dialects.nvvm import ShflKind, ShflOp

from .common import const_index
from .context import KernelContext, KernelPattern, lowers

f64 = Float64Type()


class LowerFor(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.ForOp, rewriter: PatternRewriter) -> None:
        k = self.k
        body = op.body.block
        yield_op = body.last_op
        assert isinstance(yield_op, sched.YieldOp)
        lb, ub, step = op.lb, op.ub, op.step
        inits = list(op.iter_args)
        clb, cub, cstep = const_index(lb), const_index(ub), const_index(step)
        trips = None
        if clb is not None and cub is not None and cstep is not None and cstep > 0:
            trips = max(0, -(-(cub - clb) // cstep))

        if trips == 0:  # never runs: the results are the inits
            for r, i in zip(op.results, inits):
                rewriter.replace_all_uses_with(r, i)
            rewriter.erase(op)
            return

        pos, count = k.binding(rewriter, op.bind.data)
        new_lb = k.add(rewriter, lb, k.mul(rewriter, pos, step))

        if trips is not None and trips <= count:
            # every thread runs at most one iteration: no loop
            lbv = k.value(new_lb)
            rewriter.replace_all_uses_with(body.args[0], lbv)
            for a, i in zip(body.args[1:], inits):
                rewriter.replace_all_uses_with(a, i)
            yielded = list(yield_op.arguments)
            rewriter.erase(yield_op)
            if trips == count:  # ... and exactly one: straight-line code
                rewriter.inline_block(body, InsertPoint.before(op))
                for r, y in zip(op.results, yielded):
                    rewriter.replace_all_uses_with(r, y)
                rewriter.erase(op)
                return
            cond = k.before(rewriter, arith.CmpiOp(lbv, ub, "slt"))
            then_block = Block()
            rewriter.inline_block(body, InsertPoint.at_end(then_block))
            then_block.add_op(scf.YieldOp(*yielded))
            else_region = Region(Block([scf.YieldOp(*inits)])) if inits else Region()
            rewriter.replace(op, scf.IfOp(cond, [r.type for r in op.results], Region(then_block), else_region))
            return

        new_step = k.mul(rewriter, step, count)
        region = rewriter.move_region_contents_to_new_regions(op.body)
        loop = scf.ForOp(k.value(new_lb), ub, k.value(new_step), inits, region)
        k.loops.add(loop)
        rewriter.replace(op, loop)


class LowerLoopYield(KernelPattern):
    """The terminator of a `sched.for` that became an `scf.for`. Any other `sched.yield` is misplaced;
    the kernel's last pattern reports it."""

    @lowers
    def match_and_rewrite(self, op: sched.YieldOp, rewriter: PatternRewriter) -> None:
        if op.parent_op() not in self.k.loops:
            return
        new = scf.YieldOp(*op.arguments)
        rewriter.replace(op, new)
        self.k.check_kept(new)


class LowerBarrier(RewritePattern):
    @lowers
    def match_and_rewrite(self, op: sched.BarrierOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, NVVMBarrierOp())


class LowerShflXor(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.ShflXorOp, rewriter: PatternRewriter) -> None:
        c = self.k.const

        def shfl(v):
            return ShflOp(ShflKind.BFLY, c(-1, i32), v, c(op.offset.value.data, i32), c(0x1F, i32))
        if op.value.type not in (i64, f64):
            rewriter.replace(op, shfl(op.value))
            return
        # A 64-bit value (i64, or an f64's bits) goes as its two 32-bit halves (shfl.sync moves 32 bits).
        ops: list = []
        bits = op.value
        if op.value.type == f64:
            ops.append(arith.BitcastOp(op.value, i64))
            bits = ops[-1].result
        lo = arith.TruncIOp(bits, i32)
        hi = arith.TruncIOp(arith.ShRUIOp(bits, c(32, i64)), i32)
        lo2, hi2 = shfl(lo), shfl(hi)
        wide = [arith.ExtUIOp(lo2, i64), arith.ExtUIOp(hi2, i64)]
        up = arith.ShLIOp(wide[1], c(32, i64))
        ops += [lo, hi.input.owner, hi, lo2, hi2, *wide, up, arith.OrIOp(wide[0], up)]
        if op.value.type == f64:
            ops.append(arith.BitcastOp(ops[-1].result, f64))
        rewriter.replace(op, ops)


class LowerGridDepControl(RewritePattern):
    @lowers
    def match_and_rewrite(self, op: sched.GridDepControlOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, NVVMGridDepControlOp(op.kind.data))


class LowerReturn(RewritePattern):
    @lowers
    def match_and_rewrite(self, op: sched.ReturnOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, llvm.ReturnOp())


def control_patterns(k: KernelContext) -> list[RewritePattern]:
    return [LowerFor(k), LowerLoopYield(k), LowerBarrier(), LowerShflXor(k), LowerGridDepControl(), LowerReturn()]
