"""mbarrier ops (sm_90): transaction barriers in shared memory.

mbarriers live in shared `i64` buffers, and `%bars[%i]` names barrier i of one:
`sched.mbarrier.init` (expected arrivals per phase), `.arrive`, `.arrive_expect_tx` (arrive and
expect TMA bytes), `.wait` (spin on `try_wait.parity` with the phase's parity). The cluster-wide
arrive, `sched.mbarrier.arrive_cluster`, is in `cluster.py`.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, i64
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from fuser.dialects.sched._base import _check_mbarrier


class _BarrierAccess(IRDLOperation):
    """Base of the mbarrier ops: `%bars[%i]` names barrier i of a shared i64 buffer.

    The assembly is `%bars[%i][, TAIL] attr-dict : type(%bars)`. A subclass with an integer
    TAIL names it with `INT_PROP` (an integer property, checked against `INT_MIN` .. 2^20-1) and
    derives from `_BarrierIntAccess`; one whose TAIL is another index operand (or none) declares
    its `assembly_format`.
    """

    barriers = operand_def(MemRefType)
    index = operand_def(IndexType)

    INT_PROP: ClassVar[str | None] = None
    INT_MIN: ClassVar[int] = 0

    def verify_(self) -> None:
        _check_mbarrier(self, self.barriers)
        if self.INT_PROP is not None:
            v = getattr(self, self.INT_PROP).value.data
            if not self.INT_MIN <= v < 2**20:
                raise VerifyException(f"'{self.name}' op {self.INT_PROP} {v} must be in {self.INT_MIN} .. 2^20-1")


class _BarrierIntAccess(_BarrierAccess):
    """`%bars[%i], N attr-dict : type(%bars)` where N is the integer property `INT_PROP`.

    Custom syntax: N is a bare integer, where the declarative format would print the property
    (of any integer type) as `N : i64`. The constructor takes (barriers, index, N).
    """

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.barriers)
        printer.print_string("[")
        printer.print_operand(self.index)
        printer.print_string("]")
        printer.print_string(f", {getattr(self, self.INT_PROP).value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.barriers.type)

    @classmethod
    def parse(cls, parser: Parser):
        bars = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        idx = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        parser.parse_punctuation(",")
        n = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        bt = parser.parse_type()
        op = cls(parser.resolve_operand(bars, bt), parser.resolve_operand(idx, IndexType()), n)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class MBarrierInitOp(_BarrierIntAccess):
    """`sched.mbarrier.init %bars[%i], 1 : memref<4xi64, 3>`: expect `count` arrivals per phase."""

    name = "sched.mbarrier.init"
    count = prop_def(IntegerAttr)
    INT_PROP: ClassVar[str | None] = "count"
    INT_MIN: ClassVar[int] = 1

    def __init__(self, barriers: SSAValue, index: SSAValue, count: int):
        super().__init__(operands=[barriers, index], properties={"count": IntegerAttr(count, i64)})


@irdl_op_definition
class MBarrierArriveOp(_BarrierAccess):
    """`sched.mbarrier.arrive %bars[%i] : memref<4xi64, 3>`: one arrival on barrier i."""

    name = "sched.mbarrier.arrive"
    assembly_format = "$barriers `[` $index `]` attr-dict `:` type($barriers)"

    def __init__(self, barriers: SSAValue, index: SSAValue):
        super().__init__(operands=[barriers, index])


@irdl_op_definition
class MBarrierArriveExpectTxOp(_BarrierIntAccess):
    """`sched.mbarrier.arrive_expect_tx %bars[%i], 32768 : memref<4xi64, 3>`: arrive, and make the
    current phase also wait for `bytes` of asynchronous (TMA) transactions."""

    name = "sched.mbarrier.arrive_expect_tx"
    bytes = prop_def(IntegerAttr)
    INT_PROP: ClassVar[str | None] = "bytes"

    def __init__(self, barriers: SSAValue, index: SSAValue, nbytes: int):
        super().__init__(operands=[barriers, index], properties={"bytes": IntegerAttr(nbytes, i64)})


@irdl_op_definition
class MBarrierWaitOp(_BarrierAccess):
    """`sched.mbarrier.wait %bars[%i], %phase : memref<4xi64, 3>`: spin until the phase with the
    parity of `%phase` (an index; only bit 0 matters) of barrier i has completed."""

    name = "sched.mbarrier.wait"
    barriers = operand_def(MemRefType)
    index = operand_def(IndexType)
    phase = operand_def(IndexType)
    assembly_format = "$barriers `[` $index `]` `,` $phase attr-dict `:` type($barriers)"

    def __init__(self, barriers: SSAValue, index: SSAValue, phase: SSAValue):
        super().__init__(operands=[barriers, index, phase])
