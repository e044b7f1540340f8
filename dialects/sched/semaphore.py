"""Grid semaphores: per-slot i32 counters in global memory through which CTAs take turns.

- `sched.semaphore.wait %sems[%i] until %v` spins until `sems[i] == v`, reading with acquire
  semantics at GPU scope: what the CTA that set the value wrote before its release is visible
  to this thread after the wait;
- `sched.semaphore.signal %sems[%i], %v` stores `v` with release semantics at GPU scope.

Only the generic proxy is ordered by these: TMA stores and reductions (async proxy) around them
need `sched.bulk.wait_group 0` and `sched.fence.proxy_async global`, which the pass
`sched-insert-bulk-syncs` places.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, MemRefType, i32
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def
from xdsl.utils.exceptions import VerifyException

from fuser.dialects.sched.types import GLOBAL, memory_space


def _check_semaphores(op: IRDLOperation, sems: SSAValue) -> None:
    t = sems.type
    try:
        is_global = isinstance(t, MemRefType) and memory_space(t) == GLOBAL
    except ValueError:
        is_global = False
    if not is_global or t.element_type != i32 or t.get_num_dims() != 1:
        raise VerifyException(f"'{op.name}' op semaphore operand 'sems' must be a 1-D global i32 buffer "
                              f"(memref<Nxi32>), got {t}")


class _SemaphoreOp(IRDLOperation):
    """sems[index] and a value: what both semaphore ops take."""

    sems = operand_def(MemRefType)
    index = operand_def(IndexType)
    value = operand_def(IndexType)

    def __init__(self, sems: SSAValue, index: SSAValue, value: SSAValue):
        super().__init__(operands=[sems, index, value])

    def verify_(self) -> None:
        _check_semaphores(self, self.sems)


@irdl_op_definition
class SemaphoreWaitOp(_SemaphoreOp):
    """`sched.semaphore.wait %sems[%i] until %v : memref<Nxi32>`: spin until sems[i] == v (acquire, GPU scope)."""

    name = "sched.semaphore.wait"
    assembly_format = "$sems `[` $index `]` `until` $value attr-dict `:` type($sems)"


@irdl_op_definition
class SemaphoreSignalOp(_SemaphoreOp):
    """`sched.semaphore.signal %sems[%i], %v : memref<Nxi32>`: sems[i] = v (release, GPU scope)."""

    name = "sched.semaphore.signal"
    assembly_format = "$sems `[` $index `]` `,` $value attr-dict `:` type($sems)"


SEMAPHORE_OPS = [SemaphoreWaitOp, SemaphoreSignalOp]
