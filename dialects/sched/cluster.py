"""Thread-block cluster ops (sm_90): synchronisation across the CTAs of a cluster.

A `sched.kernel` launched with `cluster [n, 1, 1]` (n >= 2) may use `sched.cluster.barrier`,
`sched.fence.mbarrier_init` and `sched.mbarrier.arrive_cluster` (an arrival on a peer CTA's
mbarrier), and may multicast TMA loads (`sched.tma.load ... multicast MASK`, checked here by
`_check_multicast`).
"""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def
from xdsl.utils.exceptions import VerifyException

from fuser.dialects.sched._base import _NoOperandOp
from fuser.dialects.sched.core import KernelOp
from fuser.dialects.sched.mbarrier import _BarrierAccess


def _cluster_size(op: IRDLOperation) -> int | None:
    """CTAs in the cluster of the enclosing sched.kernel (1 without one), None outside a kernel."""
    p = op.parent_op()
    while p is not None and not isinstance(p, KernelOp):
        p = p.parent_op()
    if p is None:
        return None
    return math.prod(p.cluster.get_values()) if p.cluster is not None else 1


def _need_cluster(op: IRDLOperation) -> int | None:
    n = _cluster_size(op)
    if n is not None and n < 2:
        raise VerifyException(f"'{op.name}' op needs a sched.kernel launched with a cluster of 2 or more CTAs "
                              f"(`cluster [2, 1, 1]`)")
    return n


def _check_multicast(op: IRDLOperation, mask: int) -> None:
    if not 1 <= mask <= 0xFFFF:
        raise VerifyException(f"'{op.name}' op multicast mask {mask} must be in 1 .. 0xFFFF (one bit per CTA rank)")
    n = _need_cluster(op)
    if n is not None and mask >> n:
        raise VerifyException(f"'{op.name}' op multicast mask {mask} names CTA rank {mask.bit_length() - 1}, "
                              f"but the kernel's cluster has {n} CTAs")


@irdl_op_definition
class ClusterBarrierOp(_NoOperandOp):
    """`sched.cluster.barrier`: every thread of every CTA of the cluster arrives (release) and
    waits (acquire), as `barrier.cluster.arrive.release` + `barrier.cluster.wait.acquire`. Use it
    after mbarrier init (peers arrive on or multicast into this CTA's barriers) and before exit
    (no CTA may leave while a peer can still reach its shared memory)."""

    name = "sched.cluster.barrier"
    VERIFY_READS_CONTEXT: ClassVar[bool] = True  # the enclosing kernel (dialects/ir.py)

    def verify_(self) -> None:
        _need_cluster(self)


@irdl_op_definition
class FenceMBarrierInitOp(_NoOperandOp):
    """`fence.mbarrier_init.release.cluster`: make this thread's mbarrier inits visible to the
    other CTAs of the cluster (before the cluster barrier that publishes them)."""

    name = "sched.fence.mbarrier_init"


@irdl_op_definition
class MBarrierArriveClusterOp(_BarrierAccess):
    """`sched.mbarrier.arrive_cluster %bars[%i], cta %r : memref<4xi64, 3>`: one arrival on barrier
    i of the CTA of rank %r in the cluster: the same shared-memory offset in that CTA (`mapa`),
    which may be this CTA itself. Default semantics (release, CTA scope), as CUTLASS's cluster
    barrier arrive: an explicit `.release.cluster` made the 2-CTA matmul 33% slower on an H100."""

    name = "sched.mbarrier.arrive_cluster"
    VERIFY_READS_CONTEXT: ClassVar[bool] = True  # the enclosing kernel (dialects/ir.py)
    barriers = operand_def(MemRefType)
    index = operand_def(IndexType)
    cta = operand_def(IndexType)
    assembly_format = "$barriers `[` $index `]` `,` `cta` $cta attr-dict `:` type($barriers)"

    def __init__(self, barriers: SSAValue, index: SSAValue, cta: SSAValue):
        super().__init__(operands=[barriers, index, cta])

    def verify_(self) -> None:
        super().verify_()
        n = _need_cluster(self)
        c = self.cta.owner.value.value.data if isinstance(self.cta.owner, arith.ConstantOp) else None
        if n is not None and c is not None and not 0 <= c < n:
            raise VerifyException(f"'{self.name}' op CTA rank {c} is outside the kernel's cluster of {n} CTAs")


CLUSTER_OPS = [ClusterBarrierOp, FenceMBarrierInitOp, MBarrierArriveClusterOp]
