"""The subset of upstream MLIR's `nvgpu` dialect that fuser's host functions use: the TMA
descriptor a host function makes for a kernel (upstream's names and syntax, so the lowered
host function is valid upstream MLIR).

    %u = memref.cast %a : memref<4096x4096xbf16> to memref<*xbf16>
    %d = nvgpu.tma.create.descriptor %u box[%c128, %c64] : memref<*xbf16> ->
           !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b,
                                       l2promo = l2promo_256b, oob = zero, interleave = none>

The runtime executes it (cuTensorMapEncodeTiled over the buffer the cast reads) and passes the
128-byte descriptor to the kernel by value.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, MemRefType, StringAttr, UnrankedMemRefType
from xdsl.ir import Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import IRDLOperation, irdl_attr_definition, irdl_op_definition, operand_def, result_def, var_operand_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

SWIZZLE = {0: "swizzle_none", 32: "swizzle_32b", 64: "swizzle_64b", 128: "swizzle_128b"}
_FIELDS = {"swizzle": tuple(SWIZZLE.values()), "l2promo": ("none", "l2promo_64b", "l2promo_128b", "l2promo_256b"),
           "oob": ("zero", "nan"), "interleave": ("none", "interleave_16b", "interleave_32b")}


@irdl_attr_definition
class TensorMapDescriptorType(ParametrizedAttribute, TypeAttribute):
    """`!nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b,
    l2promo = l2promo_256b, oob = zero, interleave = none>`: a TMA descriptor whose box is
    `tensor`'s shape (outermost first), landing in shared memory."""

    name = "nvgpu.tensormap.descriptor"
    tensor: MemRefType
    swizzle: StringAttr
    l2promo: StringAttr
    oob: StringAttr
    interleave: StringAttr

    def __init__(self, box: MemRefType, swizzle: str = "swizzle_128b", l2promo: str = "l2promo_256b",
                 oob: str = "zero", interleave: str = "none"):
        super().__init__(box, StringAttr(swizzle), StringAttr(l2promo), StringAttr(oob), StringAttr(interleave))

    @property
    def box_dims(self) -> list[int]:
        return list(self.tensor.get_shape())

    @property
    def swizzle_bytes(self) -> int:
        return {v: k for k, v in SWIZZLE.items()}[self.swizzle.data]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<tensor = ")
        printer.print_attribute(self.tensor)
        for field in _FIELDS:
            printer.print_string(f", {field} = {getattr(self, field).data}")
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence:
        with parser.in_angle_brackets():
            parser.parse_keyword("tensor")
            parser.parse_punctuation("=")
            tensor = parser.parse_type()
            values = []
            for field, allowed in _FIELDS.items():
                parser.parse_punctuation(",")
                parser.parse_keyword(field)
                parser.parse_punctuation("=")
                pos = parser.pos
                value = parser.parse_identifier()
                if value not in allowed:
                    parser.raise_error(f"!nvgpu.tensormap.descriptor: {field} must be one of {', '.join(allowed)}, "
                                       f"got {value}", pos, parser.pos)
                values.append(StringAttr(value))
        return [tensor, *values]

    def verify(self) -> None:
        for field, allowed in _FIELDS.items():
            if getattr(self, field).data not in allowed:
                raise VerifyException(f"!nvgpu.tensormap.descriptor: {field} must be one of {', '.join(allowed)}, "
                                      f"got {getattr(self, field).data}")
        if not isinstance(self.tensor, MemRefType) or not 1 <= len(self.tensor.get_shape()) <= 5:
            raise VerifyException(f"!nvgpu.tensormap.descriptor: tensor must be a memref of rank 1 to 5, "
                                  f"got {self.tensor}")


@irdl_op_definition
class TmaCreateDescriptorOp(IRDLOperation):
    """`nvgpu.tma.create.descriptor %unranked box[%d0, ...] : memref<*xT> -> !nvgpu.tensormap.descriptor<...>`:
    a TMA descriptor for the global buffer, made on the host, one box dimension per operand
    (they must equal the descriptor type's tensor shape)."""

    name = "nvgpu.tma.create.descriptor"
    tensor = operand_def(UnrankedMemRefType)
    boxDimensions = var_operand_def(IndexType)  # noqa: N815 (upstream's name)
    tensorMap = result_def(TensorMapDescriptorType)  # noqa: N815

    assembly_format = "$tensor `box` `[` $boxDimensions `]` attr-dict `:` type($tensor) `->` type($tensorMap)"

    def __init__(self, tensor: SSAValue | Operation, box: Sequence[SSAValue | Operation],
                 result_type: TensorMapDescriptorType):
        super().__init__(operands=[tensor, list(box)], result_types=[result_type])

    def verify_(self) -> None:
        rank = len(self.tensorMap.type.box_dims)
        if len(self.boxDimensions) != rank:
            raise VerifyException(f"'{self.name}' op has {len(self.boxDimensions)} box dimensions for a "
                                  f"descriptor of rank {rank}")
        if self.tensor.type.element_type != self.tensorMap.type.tensor.element_type:
            raise VerifyException(f"'{self.name}' op reads {self.tensor.type} but its descriptor's box holds "
                                  f"{self.tensorMap.type.tensor.element_type}")


NVGPU = Dialect("nvgpu", [TmaCreateDescriptorOp], [TensorMapDescriptorType])
