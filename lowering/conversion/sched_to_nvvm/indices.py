"""Parallel indices: `sched.thread_idx` / `block_idx` / `block_dim` / `grid_dim` read the PTX special
registers (`nvvm.read.ptx.sreg.*`, i32, cast to index once at the kernel's entry)."""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from fuser.dialects import sched

from .context import KernelContext, KernelPattern, lowers

_SREG = {sched.ThreadIdxOp: "tid", sched.BlockIdxOp: "ctaid", sched.BlockDimOp: "ntid", sched.GridDimOp: "nctaid"}


class LowerParallelIndex(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.ThreadIdxOp | sched.BlockIdxOp | sched.BlockDimOp | sched.GridDimOp,
                          rewriter: PatternRewriter) -> None:
        rewriter.replace_all_uses_with(op.results[0], self.k.sreg(_SREG[type(op)], op.dim.data))
        rewriter.erase(op)


def index_patterns(k: KernelContext) -> list[RewritePattern]:
    return [LowerParallelIndex(k)]
