"""Thread-block-cluster ops, as inline PTX: the cluster barrier (arrive.release + wait.acquire), the
fence that publishes mbarrier inits to the cluster, and an arrive on the same mbarrier in another CTA
(`mapa` to its shared::cluster address)."""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from fuser.dialects import sched

from .context import KernelContext, KernelPattern


class LowerClusterBarrier(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sched.ClusterBarrierOp, rewriter: PatternRewriter) -> None:
        KernelContext.asm_statement(rewriter, op, "barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;")


class LowerFenceMBarrierInit(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sched.FenceMBarrierInitOp, rewriter: PatternRewriter) -> None:
        KernelContext.asm_statement(rewriter, op, "fence.mbarrier_init.release.cluster;")


class LowerMBarrierArriveCluster(KernelPattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sched.MBarrierArriveClusterOp, rewriter: PatternRewriter) -> None:
        k = self.k
        addr = k.smem_u32(rewriter, op, op.barriers, [op.index])
        k.asm(rewriter, "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, $0, $1;\n"
                        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}",
              "r,r,~{memory}", [addr, k.i32_of(rewriter, op.cta)])
        rewriter.erase(op)


def cluster_patterns(k: KernelContext) -> list[RewritePattern]:
    return [LowerClusterBarrier(), LowerFenceMBarrierInit(), LowerMBarrierArriveCluster(k)]
