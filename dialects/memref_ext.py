"""`memref.cast` with upstream's custom syntax (xDSL 0.74's op has none, so it printed only in
the generic form): `%u = memref.cast %a : memref<4096x4096xbf16> to memref<*xbf16>`. The host
functions use it for the unranked view a TMA descriptor is made from."""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType, UnrankedMemRefType
from xdsl.irdl import IRDLOperation, base, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect


@irdl_op_definition
class CastOp(IRDLOperation):
    """The same view of a buffer with another (or no) static shape."""

    name = "memref.cast"
    source = operand_def(base(MemRefType) | base(UnrankedMemRefType))
    dest = result_def(base(MemRefType) | base(UnrankedMemRefType))
    traits = traits_def(NoMemoryEffect())

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.source)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" to ")
        printer.print_attribute(self.dest.type)

    @classmethod
    def parse(cls, parser: Parser) -> CastOp:
        src = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_t = parser.parse_type()
        parser.parse_keyword("to")
        dst_t = parser.parse_type()
        return cls.create(operands=[parser.resolve_operand(src, src_t)], result_types=[dst_t], attributes=attributes)


def memref_dialect():
    """xDSL's memref dialect with this `memref.cast` in place of its own."""
    from xdsl.ir import Dialect

    ops = [CastOp if op is memref.CastOp else op for op in memref.MemRef.operations]
    return Dialect("memref", ops, list(memref.MemRef.attributes))
