"""Upstream `gpu` ops that xDSL 0.74's gpu dialect lacks, with upstream's names and syntax, so
the host side of lowered IR stays valid upstream MLIR.
"""

from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_result_def, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer

@irdl_op_definition
class MemsetOp(IRDLOperation):
    """`gpu.memset %dst, %value : memref<...>, T` (upstream syntax; async form not modelled)."""

    name = "gpu.memset"
    asyncDependencies = var_operand_def(gpu.AsyncTokenType)
    dst = operand_def(MemRefType)
    value = operand_def()
    asyncToken = opt_result_def(gpu.AsyncTokenType)

    def __init__(self, dst: SSAValue | Operation, value: SSAValue | Operation):
        super().__init__(operands=[[], dst, value], result_types=[[]])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.dst)
        printer.print_string(", ")
        printer.print_operand(self.value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.dst.type)
        printer.print_string(", ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> MemsetOp:
        dst = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        val = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        dst_t = parser.parse_type()
        parser.parse_punctuation(",")
        val_t = parser.parse_type()
        op = cls(parser.resolve_operand(dst, dst_t), parser.resolve_operand(val, val_t))
        op.attributes.update(attrs)
        return op


GPU_EXT_OPS = [MemsetOp]
