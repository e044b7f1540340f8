"""Types of the sched dialect: memory spaces of buffers, and the TMA descriptor type.

Buffers are builtin memrefs whose memory space is the NVPTX address space: none = global,
3 = shared, 5 = registers. `!sched.tensor_map<...>` is a TMA descriptor (CUtensorMap) made on
the host and passed to a kernel by value.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    Signedness,
    i64,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

# ------------------------------------------------------------------ memory spaces

GLOBAL, SHARED, REGISTER = 0, 3, 5
HOPPER_SMEM_PER_BLOCK = 232448  # bytes of dynamic shared memory one block may opt into on H100/H200
_SPACE_NAMES = {GLOBAL: "global", SHARED: "shared", REGISTER: "register"}


def memory_space(t: MemRefType) -> int:
    """NVPTX address space of a memref type (0 when it has none: global memory)."""
    ms = t.memory_space
    if isinstance(ms, NoneAttr):
        return GLOBAL
    if isinstance(ms, IntegerAttr):
        return ms.value.data
    raise ValueError(f"unsupported memory space {ms} in {t}")


def element_bytes(t: Attribute) -> int:
    """Storage size of an element type in bytes (i1 takes a byte)."""
    if isinstance(t, IntegerType):
        return max(1, (t.width.data + 7) // 8)
    if isinstance(t, AnyFloat):
        return t.bitwidth // 8
    raise ValueError(f"unsupported buffer element type {t}")


def storage_type(t: Attribute) -> Attribute:
    """The type an element is kept as in memory. i1 is one byte holding 0 or 1, as torch and
    numpy keep booleans (LLVM would pack a vector of i1 into bits); an unsigned or signed
    integer is the signless integer of its width (LLVM's integers have no sign); every other
    type is itself."""
    if t == IntegerType(1):
        return IntegerType(8)
    return IntegerType(t.width.data) if isinstance(t, IntegerType) else t


def value_type(t: Attribute) -> Attribute:
    """The type `sched.load` gives and `sched.store` takes for a buffer of element type `t`:
    a memref of ui8 (a u8 tensor; the runtime reads the sign from the buffer's type) holds
    signless i8 values, as arith and llvm take only signless integers (the ops that read them
    choose the unsigned forms); a memref of an FP8 type (f8E4M3FN, f8E5M2) holds its bits as
    signless i8 values (the casts that read or make them convert with the GPU's cvt); every other
    type is itself (i1 included: loaded `!= 0`)."""
    if isinstance(t, IntegerType) and t.signedness.data != Signedness.SIGNLESS:
        return IntegerType(t.width.data)
    if isinstance(t, (Float8E4M3FNType, Float8E5M2Type)):
        return IntegerType(8)
    return t


def memref(shape: Sequence[int], elem: Attribute, space: int = GLOBAL) -> MemRefType:
    ms = NoneAttr() if space == GLOBAL else IntegerAttr(space, i64)
    return MemRefType(elem, list(shape), memory_space=ms)


# ------------------------------------------------------------ !sched.tensor_map

_TMA_ELEMS = {"bf16": 2, "f16": 2, "f32": 4, "f8e4m3fn": 1, "f8e5m2": 1}


def _elem_name(t: Attribute) -> str | None:
    if isinstance(t, BFloat16Type):
        return "bf16"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float8E4M3FNType):
        return "f8e4m3fn"
    if isinstance(t, Float8E5M2Type):
        return "f8e5m2"
    return None


@irdl_attr_definition
class TensorMapType(ParametrizedAttribute, TypeAttribute):
    """A TMA descriptor (CUtensorMap, 128 bytes) for a global buffer, tiled by `box`.

    `!sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>`: `box` is in the
    buffer's dimension order (outermost first); `swizzle` is 0, 32, 64 or 128 (bytes). With a
    swizzle, the box's innermost extent spans at most that many bytes.
    """

    name = "sched.tensor_map"

    tensor: MemRefType
    box: ArrayAttr[IntAttr]
    swizzle: IntAttr

    def __init__(self, tensor: MemRefType, box: Sequence[int], swizzle: int = 128):
        super().__init__(tensor, ArrayAttr([IntAttr(b) for b in box]), IntAttr(swizzle))

    @property
    def box_dims(self) -> list[int]:
        return [b.data for b in self.box.data]

    @property
    def box_bytes(self) -> int:
        n = _TMA_ELEMS.get(_elem_name(self.tensor.element_type) or "", 0)
        for b in self.box_dims:
            n *= b
        return n

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.tensor)
        printer.print_string(", box [" + ", ".join(str(b) for b in self.box_dims) + "]")
        printer.print_string(f", swizzle {self.swizzle.data}>")

    @classmethod
    def parse_parameters(cls, parser) -> tuple:
        parser.parse_punctuation("<")
        t = parser.parse_type()
        parser.parse_punctuation(",")
        parser.parse_keyword("box")
        box = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        parser.parse_punctuation(",")
        parser.parse_keyword("swizzle")
        sw = parser.parse_integer()
        parser.parse_punctuation(">")
        return (t, ArrayAttr([IntAttr(b) for b in box]), IntAttr(sw))

    def verify(self) -> None:
        t = self.tensor
        if not isinstance(t, MemRefType) or memory_space(t) != GLOBAL:
            raise VerifyException(f"!sched.tensor_map: tensor must be a global memref, got {t}")
        en = _elem_name(t.element_type)
        if en is None:
            raise VerifyException(f"!sched.tensor_map: element type {t.element_type} is not bf16, f16, f32, f8E4M3FN or f8E5M2")
        box, shape = self.box_dims, list(t.get_shape())
        if len(box) != len(shape) or not 1 <= len(box) <= 5:
            raise VerifyException(f"!sched.tensor_map: box {box} must have one extent per dimension of {t} (1 to 5)")
        if any(not 1 <= b <= 256 for b in box):
            raise VerifyException(f"!sched.tensor_map: box extents must be 1..256, got {box}")
        eb = _TMA_ELEMS[en]
        if (box[-1] * eb) % 16:
            raise VerifyException(f"!sched.tensor_map: the box's inner extent {box[-1]} x {eb} bytes is not a multiple of 16 bytes")
        sw = self.swizzle.data
        if sw not in (0, 32, 64, 128):
            raise VerifyException(f"!sched.tensor_map: swizzle must be 0, 32, 64 or 128, got {sw}")
        if sw and box[-1] * eb > sw:
            raise VerifyException(f"!sched.tensor_map: the box's inner extent spans {box[-1] * eb} bytes, more than the {sw}-byte swizzle")
        if len(shape) > 1 and (shape[-1] * eb) % 16:
            raise VerifyException(f"!sched.tensor_map: rows of {t} are {shape[-1] * eb} bytes apart; TMA needs a multiple of 16 "
                                  f"(the inner extent must be a multiple of {16 // eb} elements)")
