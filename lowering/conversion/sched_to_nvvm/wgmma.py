"""Warpgroup ops: wgmma, `setmaxnreg` and named barriers.

wgmma fence / commit_group / wait_group, `setmaxnreg` and the named barriers become the upstream
`nvvm.wgmma.*`, `nvvm.setmaxregister`, `nvvm.barrier` and `nvvm.barrier.arrive` ops; the
descriptor is arithmetic on the tile's shared address; `wgmma.mma_async` is upstream's
`nvvm.wgmma.mma_async` (its PTX comes from convert-nvvm-to-llvm). Accumulators stay
`vector<N x f32>` values, put in and taken out of the op's struct around it; a
`sched.wgmma.wait_group` re-defines the ones it passes through an empty asm tied to them, so no
read can be scheduled before the wait.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, i32, i64
from xdsl.dialects import llvm
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from fuser.dialects import nvvm, sched
from fuser.dialects.ir import position

from .context import KernelContext, KernelPattern, lowers


class LowerWgmmaFence(RewritePattern):
    @lowers
    def match_and_rewrite(self, op: sched.WgmmaFenceOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, nvvm.WgmmaFenceAlignedOp())


class LowerWgmmaCommitGroup(RewritePattern):
    @lowers
    def match_and_rewrite(self, op: sched.WgmmaCommitGroupOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, nvvm.WgmmaGroupSyncAlignedOp())


class LowerWgmmaDesc(KernelPattern):
    """The 64-bit matrix descriptor: address bits 4..17, leading / stride byte offsets, swizzle mode."""

    @lowers
    def match_and_rewrite(self, op: sched.WgmmaDescOp, rewriter: PatternRewriter) -> None:
        k = self.k
        addr = k.smem_u32(rewriter, op, op.buffer, op.indices)
        a64 = k.before(rewriter, arith.ExtUIOp(addr, i64))
        lo = k.before(rewriter, arith.ShRUIOp(k.before(rewriter, arith.AndIOp(a64, k.const(0x3FFFF, i64))),
                                              k.const(4, i64)))
        layout = {128: 1, 64: 2, 32: 3, 0: 0}[op.swizzle.value.data]
        hi = ((op.lbo.value.data >> 4) << 16) | ((op.sbo.value.data >> 4) << 32) | (layout << 62)
        if hi >= 1 << 63:
            hi -= 1 << 64
        rewriter.replace(op, arith.OrIOp(lo, k.const(hi, i64)))


class LowerWgmmaMmaAsync(KernelPattern):
    """`nvvm.wgmma.mma_async` on the accumulators as upstream's struct of f32 (one per register):
    the `vector<N x f32>` is unpacked into it and packed back from the result."""

    @lowers
    def match_and_rewrite(self, op: sched.WgmmaMmaAsyncOp, rewriter: PatternRewriter) -> None:
        k = self.k
        n = op.n.value.data
        st = llvm.LLVMStructType.from_type_list([Float32Type()] * (n // 2))
        acc = k.before(rewriter, llvm.UndefOp(st))
        for i, x in enumerate(k.unpack(rewriter, op.acc)):
            acc = k.before(rewriter, llvm.InsertValueOp(position(i), acc, x))
        res = k.before(rewriter, nvvm.WgmmaMmaAsyncOp(acc, op.desc_a, op.desc_b, n, op.ab_type.data,
                                                      op.trans_a is not None, op.trans_b is not None))
        vec = k.pack(rewriter, res, 0, op.acc.type)
        rewriter.replace_all_uses_with(op.result, vec)
        rewriter.erase(op)


class LowerWgmmaWaitGroup(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.WgmmaWaitGroupOp, rewriter: PatternRewriter) -> None:
        k = self.k
        rewriter.insert(nvvm.WgmmaWaitGroupSyncOp(op.pending.value.data))
        if op.values:
            scalars = [x for v in op.values for x in k.unpack(rewriter, v)]
            total = len(scalars)
            st = llvm.LLVMStructType.from_type_list([Float32Type()] * total)
            cons = ",".join(["=f"] * total + [str(i) for i in range(total)])
            res = k.asm(rewriter, "// wgmma.wait_group: accumulators ready", cons, scalars, st)
            start = 0
            for r, v in zip(op.outs, op.values):
                vec = k.pack(rewriter, res, start, v.type)
                start += v.type.get_shape()[0]
                rewriter.replace_all_uses_with(r, vec)
        rewriter.erase(op)


class LowerSetMaxNReg(RewritePattern):
    @lowers
    def match_and_rewrite(self, op: sched.SetMaxNRegOp, rewriter: PatternRewriter) -> None:
        action = {"inc": "increase", "dec": "decrease"}[op.action.data]
        rewriter.replace(op, nvvm.SetMaxRegisterOp(action, op.count.value.data))


class LowerNamedBarrier(KernelPattern):
    """`bar.sync|arrive id, n` as upstream's `nvvm.barrier` / `nvvm.barrier.arrive` with an id and a
    thread count."""

    @lowers
    def match_and_rewrite(self, op: sched.NamedBarrierOp, rewriter: PatternRewriter) -> None:
        bar_id, count = self.k.const(op.id.value.data, i32), self.k.const(op.count.value.data, i32)
        new = nvvm.BarrierOp(bar_id, count) if op.action.data == "sync" else nvvm.BarrierArriveOp(bar_id, count)
        rewriter.replace(op, new, new_results=[])


def wgmma_patterns(k: KernelContext) -> list[RewritePattern]:
    return [LowerWgmmaFence(), LowerWgmmaCommitGroup(), LowerWgmmaDesc(k), LowerWgmmaMmaAsync(k),
            LowerWgmmaWaitGroup(k), LowerSetMaxNReg(), LowerNamedBarrier(k)]
