"""LLVM IR spellings of MLIR types and constants: `llvm_type`, exact float and integer literals,
dense constants, intrinsic name mangling and string escaping.

(Named `llvm_types` rather than `types` so that it never shadows the standard library module.)
"""

from __future__ import annotations

import functools
import math
import struct

from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
)
from xdsl.dialects.llvm import (
    LLVMArrayType,
    LLVMPointerType,
    LLVMStructType,
    LLVMVoidType,
)
from xdsl.ir import Attribute

from .common import TranslationError

_FLOAT_TYPES: dict[type, str] = {
    Float16Type: "half",
    BFloat16Type: "bfloat",
    Float32Type: "float",
    Float64Type: "double",
}


@functools.lru_cache(maxsize=4096)
def llvm_type(t: Attribute) -> str:
    """The LLVM IR spelling of an MLIR type (`index` is i64). Cached: types are immutable, and a
    wgmma accumulator's struct of 64 floats is spelled at every use (a quarter of the LLVM IR
    text's time, uncached)."""
    if isinstance(t, IndexType):
        return "i64"
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    if type(t) in _FLOAT_TYPES:
        return _FLOAT_TYPES[type(t)]
    if isinstance(t, (Float8E4M3FNType, Float8E5M2Type)):  # LLVM has no FP8 type: the bits
        return "i8"
    if isinstance(t, VectorType):
        shape = t.get_shape()
        if len(shape) != 1 or any(t.get_scalable_dims()):
            raise TranslationError(f"only fixed 1-D vectors are supported, got {t}")
        return f"<{shape[0]} x {llvm_type(t.get_element_type())}>"
    if isinstance(t, LLVMPointerType):
        space = t.addr_space.data if hasattr(t.addr_space, "data") else 0
        return "ptr" if space == 0 else f"ptr addrspace({space})"
    if isinstance(t, LLVMArrayType):
        return f"[{t.size.data} x {llvm_type(t.type)}]"
    if isinstance(t, LLVMStructType):
        return "{ " + ", ".join(llvm_type(e) for e in t.types.data) + " }"
    if isinstance(t, LLVMVoidType):
        return "void"
    raise TranslationError(f"cannot translate type {t}")


def mangle(ty: str) -> str:
    """Intrinsic name suffix of an LLVM type: float -> f32, <4 x half> -> v4f16."""
    if ty.startswith("<"):
        n, _, elt = ty[1:-1].partition(" x ")
        return f"v{n}{mangle(elt)}"
    return {"half": "f16", "bfloat": "bf16", "float": "f32", "double": "f64"}.get(ty, ty)


def element(ty: str) -> tuple[str, int | None]:
    """(element type, lane count or None for scalars)."""
    if ty.startswith("<"):
        n, _, elt = ty[1:-1].partition(" x ")
        return elt, int(n)
    return ty, None


def float_literal(value: float, ty: str) -> str:
    """An exact LLVM IR literal for a float of type `ty` (hex, so no rounding surprises)."""
    if ty == "double":
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if ty == "float":
        # LLVM spells float constants as the double holding the same value.
        (f,) = struct.unpack("<f", struct.pack("<f", value)) if math.isfinite(value) else (value,)
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", f))[0]
    if ty == "half":
        return "0xH%04X" % struct.unpack("<H", struct.pack("<e", value))[0]
    if ty == "bfloat":
        (bits,) = struct.unpack("<I", struct.pack("<f", value))
        if math.isnan(value):
            return "0xR7FC0"
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        return "0xR%04X" % bits
    raise TranslationError(f"not a float type: {ty}")


def int_literal(value: int, ty: str) -> str:
    """An LLVM IR literal for an integer of type `ty` (`true`/`false` for i1, else signed)."""
    width = int(ty[1:])
    if width == 1:
        return "true" if value & 1 else "false"
    value &= (1 << width) - 1
    if value >= 1 << (width - 1):  # print as signed
        value -= 1 << width
    return str(value)


def _scalar_literal(value: int | float, ty: str) -> str:
    return int_literal(int(value), ty) if ty.startswith("i") else float_literal(float(value), ty)


def constant_literal(attr: Attribute, t: Attribute) -> str:
    """The LLVM IR literal of a constant attribute (`arith.constant`, `llvm.mlir.constant`)."""
    ty = llvm_type(t)
    if isinstance(attr, IntegerAttr):
        return int_literal(attr.value.data, ty)
    if isinstance(attr, FloatAttr):
        return float_literal(attr.value.data, ty)
    if isinstance(attr, DenseIntOrFPElementsAttr):
        elt, n = element(ty)
        values = list(attr.get_values())
        if n is None:
            if len(values) != 1:
                raise TranslationError(f"dense constant {attr} does not fit {ty}")
            return _scalar_literal(values[0], elt)
        if len(values) == 1:
            values = values * n
        if all(v == 0 for v in values) and not any(
            isinstance(v, float) and math.copysign(1, v) < 0 for v in values
        ):
            return "zeroinitializer"
        return "<" + ", ".join(f"{elt} {_scalar_literal(v, elt)}" for v in values) + ">"
    raise TranslationError(f"cannot translate constant {attr} of type {t}")


def escape(s: str) -> str:
    """Escape a string for an LLVM IR string literal."""
    return "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "\\%02X" % ord(c) for c in s)
