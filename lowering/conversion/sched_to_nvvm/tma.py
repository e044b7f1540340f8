"""Asynchronous copies and their synchronisation: TMA loads (optionally multicast to a cluster),
stores and reductions, mbarriers, bulk-async groups, the async-proxy fences and grid semaphores.

mbarrier init / arrive / arrive.expect_tx, the bulk groups, the proxy fences and the TMA loads,
stores and reductions become the upstream ops (`nvvm.mbarrier.init`, `nvvm.mbarrier.arrive`,
`nvvm.mbarrier.arrive.expect_tx`, `nvvm.cp.async.bulk.commit.group`,
`nvvm.cp.async.bulk.wait_group`, `nvvm.fence.proxy`,
`nvvm.cp.async.bulk.tensor.shared.cluster.global`, `nvvm.cp.async.bulk.tensor.global.shared.cta`,
`nvvm.cp.async.bulk.tensor.reduce`) and the waits `nvvm.mbarrier.try_wait.parity`. A
`!sched.tensor_map` (made on the host by `nvgpu.tma.create.descriptor`, see host.py) is a kernel
parameter (see kernel.py); PTX takes TMA coordinates innermost first.

Semaphores are inline PTX on a global pointer: `wait` an `ld.acquire.gpu` spin loop, `signal`
an `st.release.gpu` (upstream's NVVM has no op for either).
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import IntAttr, i16, i32
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from fuser.dialects import nvvm, sched
from fuser.dialects.llvm_ext import AddrSpaceCastOp

from .context import KernelContext, KernelPattern, lowers


class LowerMBarrierInit(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.MBarrierInitOp, rewriter: PatternRewriter) -> None:
        ptr, _ = self.k.address(rewriter, op, op.barriers, [op.index])
        rewriter.replace(op, nvvm.MBarrierInitOp(ptr, self.k.const(op.count.value.data, i32)))


class LowerMBarrierArrive(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.MBarrierArriveOp, rewriter: PatternRewriter) -> None:
        ptr, _ = self.k.address(rewriter, op, op.barriers, [op.index])
        rewriter.replace(op, nvvm.MBarrierArriveOp(ptr), new_results=[])  # its arrival state goes unused


class LowerMBarrierArriveExpectTx(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.MBarrierArriveExpectTxOp, rewriter: PatternRewriter) -> None:
        k = self.k
        ptr, _ = k.address(rewriter, op, op.barriers, [op.index])
        rewriter.replace(op, nvvm.MBarrierArriveExpectTxOp(ptr, k.const(op.bytes.value.data, i32)))


# How long one try of an mbarrier wait may suspend the thread before it tries again (ns): the
# hint CUTLASS gives; the thread resumes as soon as the phase completes.
WAIT_SUSPEND_HINT_NS = 10_000_000


class LowerMBarrierWait(KernelPattern):
    """Upstream's `nvvm.mbarrier.try_wait.parity` on the phase's parity."""

    @lowers
    def match_and_rewrite(self, op: sched.MBarrierWaitOp, rewriter: PatternRewriter) -> None:
        k = self.k
        ptr, _ = k.address(rewriter, op, op.barriers, [op.index])
        phase = k.i32_of(rewriter, op.phase)
        parity = k.before(rewriter, arith.AndIOp(phase, k.const(1, i32)))
        rewriter.replace(op, nvvm.MBarrierTryWaitParityOp(ptr, parity, k.const(WAIT_SUSPEND_HINT_NS, i32)))


class LowerTmaLoad(KernelPattern):
    """Upstream's `nvvm.cp.async.bulk.tensor.shared.cluster.global`: the destination is this
    CTA's shared memory seen as a shared::cluster address (`llvm.addrspacecast` 3 -> 7); a
    multicast load carries its CTA mask as an i16."""

    @lowers
    def match_and_rewrite(self, op: sched.TmaLoadOp, rewriter: PatternRewriter) -> None:
        k = self.k
        tmap = k.tensor_map(op)
        dst, _ = k.address(rewriter, op, op.dst, op.dst_indices)
        dst = k.before(rewriter, AddrSpaceCastOp(dst, llvm.LLVMPointerType(IntAttr(7))))
        bar, _ = k.address(rewriter, op, op.barriers, [op.index])
        coords = [k.i32_of(rewriter, c) for c in reversed(op.coords)]  # PTX: innermost first
        mask = None
        if op.multicast is not None:
            # The box lands at the same CTA-relative offset in every CTA of the mask, and each of
            # them gets the complete_tx bytes on its barrier at the same offset as `bar`.
            mask = k.const(op.multicast.value.data, i16)
        rewriter.replace(op, nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(dst, tmap, coords, bar, mask))


def _box_from_smem(k: KernelContext, rewriter: PatternRewriter,
                   op: sched.TmaStoreOp | sched.TmaReduceOp) -> tuple[SSAValue, SSAValue, list[SSAValue]]:
    """(tensor map, shared pointer, i32 coordinates innermost first): what TMA stores and
    reductions take."""
    src, _ = k.address(rewriter, op, op.src, op.src_indices)
    return k.tensor_map(op), src, [k.i32_of(rewriter, c) for c in reversed(op.coords)]


class LowerTmaStore(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.TmaStoreOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, nvvm.CpAsyncBulkTensorSharedCtaToGlobalOp(*_box_from_smem(self.k, rewriter, op)))


class LowerTmaReduce(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.TmaReduceOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, nvvm.CpAsyncBulkTensorReduceOp(*_box_from_smem(self.k, rewriter, op), op.kind.data))


class LowerBulkGroup(RewritePattern):
    @lowers
    def match_and_rewrite(self, op: sched.BulkCommitGroupOp | sched.BulkWaitGroupOp, rewriter: PatternRewriter) -> None:
        if isinstance(op, sched.BulkCommitGroupOp):
            rewriter.replace(op, nvvm.CpAsyncBulkCommitGroupOp())
        else:
            rewriter.replace(op, nvvm.CpAsyncBulkWaitGroupOp(op.pending.value.data, op.read is not None))


# sched.fence.proxy_async's space -> upstream nvvm.fence.proxy's (kind, shared space)
_FENCE_PROXY_ASYNC = {"shared": ("async.shared", "cta"), "global": ("async.global", None)}


class LowerFenceProxyAsync(RewritePattern):
    @lowers
    def match_and_rewrite(self, op: sched.FenceProxyAsyncOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, nvvm.FenceProxyOp(*_FENCE_PROXY_ASYNC[op.fenced_space]))


class LowerSemaphore(KernelPattern):
    """wait: reload with acquire until the value matches; signal: one release store. Both at GPU
    scope (the CTAs taking turns may sit on any SM). The pointer goes in a 64-bit register."""

    @lowers
    def match_and_rewrite(self, op: sched.SemaphoreWaitOp | sched.SemaphoreSignalOp, rewriter: PatternRewriter) -> None:
        k = self.k
        ptr, _ = k.address(rewriter, op, op.sems, [op.index])
        value = k.i32_of(rewriter, op.value)
        if isinstance(op, sched.SemaphoreWaitOp):
            k.asm(rewriter, "{\n.reg .pred p;\n.reg .b32 sem;\nLAB_SEM_WAIT_${:uid}:\n"
                            "ld.acquire.gpu.global.b32 sem, [$0];\n"
                            "setp.ne.b32 p, sem, $1;\n"
                            "@p bra LAB_SEM_WAIT_${:uid};\n}", "l,r,~{memory}", [ptr, value])
        else:
            k.asm(rewriter, "st.release.gpu.global.b32 [$0], $1;", "l,r,~{memory}", [ptr, value])
        rewriter.erase(op)


def tma_patterns(k: KernelContext) -> list[RewritePattern]:
    return [LowerMBarrierInit(k), LowerMBarrierArrive(k), LowerMBarrierArriveExpectTx(k), LowerMBarrierWait(k),
            LowerTmaLoad(k), LowerTmaStore(k), LowerTmaReduce(k), LowerBulkGroup(), LowerFenceProxyAsync(),
            LowerSemaphore(k)]
