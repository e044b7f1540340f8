"""What every part of convert-sched-to-nvvm shares: the error, element sizes, index folding, the
entry-block builder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import IndexType, IntAttr, IntegerAttr, MemRefType, i32
from xdsl.ir import Attribute, Block, Operation, SSAValue

from fuser.dialects import sched
from fuser.dialects.ir import dense_array, location_of
from fuser.lowering.provenance import stamp


class SchedToNVVMError(Exception):
    """The pass met something it cannot lower; the message names the op and the kernel."""


PASSTHROUGH_DIALECTS = frozenset({"arith", "math", "scf", "vector", "llvm", "nvvm"})
"""Dialects whose ops stay as they are inside a kernel (as long as they touch no memref)."""

HOPPER_OPS = frozenset({
    sched.MBarrierInitOp, sched.MBarrierArriveOp, sched.MBarrierArriveExpectTxOp, sched.MBarrierWaitOp,
    sched.TmaLoadOp, sched.TmaStoreOp, sched.TmaReduceOp, sched.BulkCommitGroupOp, sched.BulkWaitGroupOp,
    sched.FenceProxyAsyncOp, sched.SetMaxNRegOp, sched.NamedBarrierOp, sched.WgmmaFenceOp, sched.WgmmaCommitGroupOp,
    sched.WgmmaDescOp, sched.WgmmaMmaAsyncOp, sched.WgmmaWaitGroupOp, sched.ClusterBarrierOp, sched.FenceMBarrierInitOp,
    sched.MBarrierArriveClusterOp,
})
"""The kernel ops of sched's Hopper and cluster extensions (their presence raises the alignment of dynamic
shared memory)."""


def where(op: Operation) -> str:
    loc = location_of(op)
    return "" if loc == "<unknown>" else f" at {loc}"


def element_bytes(t: Attribute) -> int:
    """Storage size of a memref element type in bytes, an unsupported type being this pass's error."""
    try:
        return sched.element_bytes(t)
    except ValueError as e:
        raise SchedToNVVMError(str(e)) from None


def const_index(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr) and isinstance(v.type, IndexType):
        return op.value.value.data
    return None


def fold(v: int | SSAValue) -> int | SSAValue:
    if isinstance(v, SSAValue):
        c = const_index(v)
        return v if c is None else c
    return v


def ptr_type(space: int) -> llvm.LLVMPointerType:
    return llvm.LLVMPointerType(IntAttr(space))


def low_bit(n: int) -> int:
    return n & -n if n else 1 << 30


def static_strides(t: MemRefType, at: str) -> tuple[list[int], int]:
    strides, offset = t.get_strides(), t.get_offset()
    if strides is None or offset is None or any(s is None for s in strides):
        raise SchedToNVVMError(f"buffer type {t}{at} has no static strided layout")
    return list(strides), offset  # type: ignore[arg-type]


def row_major(t: MemRefType) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(t.get_shape()):
        out.append(acc)
        acc *= d
    return tuple(out[::-1])


class EntryBuilder:
    """Inserts ops at the top of a block in creation order (hoisted constants, special registers,
    buffer pointers), creating each integer constant once."""

    def __init__(self, block: Block):
        self.block = block
        self._last: Operation | None = None
        self._consts: dict[tuple[int, Attribute], SSAValue] = {}

    def insert(self, op: Operation) -> Operation:
        stamp(op)  # the op it was hoisted for (lowering/provenance.py)
        if self._last is not None:
            self.block.insert_op_after(op, self._last)
        elif self.block.first_op is not None:
            self.block.insert_op_before(op, self.block.first_op)
        else:
            self.block.add_op(op)
        self._last = op
        return op

    def const(self, value: int, t: Attribute = IndexType()) -> SSAValue:
        key = (value, t)
        if key not in self._consts:
            self._consts[key] = self.insert(arith.ConstantOp(IntegerAttr(value, t))).results[0]
        return self._consts[key]


@dataclass
class Buffer:
    """Where a memref value lives after lowering."""

    ptr: SSAValue
    type: MemRefType
    align_cap: int | None = None  # largest alignment the base pointer guarantees (dynamic smem)


def gep(ptr: SSAValue, indices: Sequence[int], elem: Attribute, result_type: Attribute,
        ssa_indices: Sequence[SSAValue] = ()) -> llvm.GEPOp:
    """llvm.GEPOp(ptr, indices, elem, ssa_indices, result_type), with its constant indices cached."""
    return llvm.GEPOp.build(operands=[ptr, list(ssa_indices)], result_types=[result_type], properties={
        "rawConstantIndices": dense_array(i32, tuple(indices)), "elem_type": elem,
        "noWrapFlags": IntegerAttr(0, 32)})
