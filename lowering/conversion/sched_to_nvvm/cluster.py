"""Thread-block-cluster ops as upstream's nvvm ops: the cluster barrier (`nvvm.cluster.arrive` +
`nvvm.cluster.wait`, release and acquire by default), the fence that publishes mbarrier inits
to the cluster (`nvvm.fence.mbarrier.init`), and an arrive on the same mbarrier in another CTA
(`nvvm.mapa` to its shared::cluster address, then `nvvm.mbarrier.arrive` on it)."""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from fuser.dialects import nvvm, sched

from .context import KernelContext, KernelPattern, lowers


class LowerClusterBarrier(RewritePattern):
    @lowers
    def match_and_rewrite(self, op: sched.ClusterBarrierOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, [nvvm.ClusterArriveOp(), nvvm.ClusterWaitOp()], new_results=[])


class LowerFenceMBarrierInit(RewritePattern):
    @lowers
    def match_and_rewrite(self, op: sched.FenceMBarrierInitOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, nvvm.FenceMBarrierInitOp())


class LowerMBarrierArriveCluster(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.MBarrierArriveClusterOp, rewriter: PatternRewriter) -> None:
        k = self.k
        local, _ = k.address(rewriter, op, op.barriers, [op.index])
        remote = k.before(rewriter, nvvm.MapaOp(local, k.i32_of(rewriter, op.cta)))
        rewriter.replace(op, nvvm.MBarrierArriveOp(remote), new_results=[])


def cluster_patterns(k: KernelContext) -> list[RewritePattern]:
    return [LowerClusterBarrier(), LowerFenceMBarrierInit(), LowerMBarrierArriveCluster(k)]
