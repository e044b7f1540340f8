"""Element types, tensor checks and the assembly helpers shared by the `fusion` dialect's ops.

Every shape check in the dialect goes through `_dims`, the one place that would learn about
symbolic extents (`?`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    IntegerType,
    Signedness,
    TensorType,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, operand_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

# --------------------------------------------------------------------------- types

# What math, cmp, where, reductions and scans take: f16 and bf16 are computed in f32, f32 and f64
# each in its own registers (f64 never through f32).
FLOAT_TYPES = (Float32Type, Float16Type, BFloat16Type, Float64Type)
NARROW_FLOAT_TYPES = (Float32Type, Float16Type, BFloat16Type)  # the floats an op without an f64 form takes
ui8 = IntegerType(8, Signedness.UNSIGNED)
# Every element type a fusion tensor may have: inputs, outputs, intermediates, the operands of
# casts and shape ops. i1 is stored as one byte (0 or 1); f64 is computed in f64. The integers
# are MLIR's signless i8, i16, i32, i64 (two's complement, read as signed, as torch's int8 ...
# int64) and the unsigned ui8 (torch's uint8, short name "u8"); a kernel computes each in
# registers of its own width (a u8 as a signless i8 whose ops are the unsigned ones).
# The FP8 types (issue 34) are MLIR's f8E4M3FN and f8E5M2, torch's float8_e4m3fn and float8_e5m2
# (short names "f8e4m3fn", "f8e5m2"): storage types, as in torch, that no arithmetic takes; they
# are cast to and from every other type, moved by the shape ops as bytes, filled by `full` and
# selected by `where`. A kernel keeps them as their bits (a signless i8).
DTYPE_NAMES = {"f32": Float32Type(), "f16": Float16Type(), "bf16": BFloat16Type(), "i1": i1, "i8": i8, "i16": i16,
               "i32": i32, "i64": i64, "u8": ui8, "f64": Float64Type(), "f8e4m3fn": Float8E4M3FNType(),
               "f8e5m2": Float8E5M2Type()}
INT_DTYPES = ("i8", "i16", "i32", "i64", "u8")  # the integer types (i1, a mask, is not one of them)
FP8_TYPES = (Float8E4M3FNType, Float8E5M2Type)
FP8_DTYPES = ("f8e4m3fn", "f8e5m2")


def dtype_name(t: Attribute) -> str:
    """Short dtype name of an element type (f32, f16, bf16, i1, i8, ..., u8 for ui8)."""
    for name, ty in DTYPE_NAMES.items():
        if t == ty:
            return name
    return str(t)


def is_float(t: Attribute) -> bool:
    return isinstance(t, FLOAT_TYPES)


def is_fp8(t: Attribute) -> bool:
    """An FP8 element type (f8E4M3FN, f8E5M2): storage only, no arithmetic."""
    return isinstance(t, FP8_TYPES)


def is_integer(t: Attribute) -> bool:
    """An integer element type of DTYPE_NAMES other than i1 (i8, i16, i32, i64, ui8)."""
    return isinstance(t, IntegerType) and t.width.data > 1 and t in DTYPE_NAMES.values()


def stat_type(t: Attribute) -> Attribute:
    """The element type of the float statistics (welford's avg and M2, var_mean's var and mean)
    of an input of float type `t`: f64 for f64, else f32 (what they are accumulated in)."""
    return Float64Type() if isinstance(t, Float64Type) else Float32Type()


def is_unsigned(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED


def _dims(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _elem(v: SSAValue | Attribute) -> Attribute:
    t = v.type if isinstance(v, SSAValue) else v
    assert isinstance(t, TensorType)
    return t.element_type


def tensor(shape: Sequence[int], dtype: str | Attribute) -> TensorType:
    et = DTYPE_NAMES[dtype] if isinstance(dtype, str) else dtype
    return TensorType(et, list(shape))


def _fmt(t: Attribute) -> str:
    return str(t)


def unsupported_element(t: Attribute) -> str | None:
    """Why a tensor type cannot be a fusion value (None if it can): its element type must be one
    of DTYPE_NAMES, the types every scheduler stores, loads and casts."""
    if isinstance(t, TensorType) and t.element_type not in DTYPE_NAMES.values():
        return (f"element type {t.element_type} is not supported; fusion tensors hold "
                f"{', '.join(str(t) for t in DTYPE_NAMES.values())}")
    return None


def _check_tensor(op: Operation, what: str, t: Attribute, allowed: tuple[type, ...] | None = None) -> TensorType:
    if not isinstance(t, TensorType):
        raise VerifyException(f"'{op.name}' op {what} must be a ranked tensor, got {_fmt(t)}")
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"'{op.name}' op {what} has a dynamic extent ({_fmt(t)}); only static shapes are supported")
    if (why := unsupported_element(t)) is not None:
        raise VerifyException(f"'{op.name}' op {what}: {why}")
    if allowed is not None and not _allows(allowed, t.element_type):
        names = ", ".join(_names(allowed))
        if is_fp8(t.element_type):  # (torch raises "not implemented for 'Float8_e4m3fn'" there)
            raise VerifyException(f"'{op.name}' op {what} has element type {t.element_type}: FP8 tensors are "
                                  f"storage only, with no arithmetic, as in torch; cast to f32 or bf16 first "
                                  f"(fusion.cast); this op takes {names}")
        raise VerifyException(f"'{op.name}' op {what} has element type {t.element_type}, expected one of {names}")
    return t



def _check_innermost_row_op(op: Operation, t: TensorType, d: int, noun: str, verb: str, done: str, callers: str) -> None:
    """A row op (a scan, a sort) works along the innermost dim of a tensor of rank >= 1: the
    same three errors for each, in its words ("a scan takes", "scans dim", "is scanned")."""
    rank = t.get_num_dims()
    if rank == 0:
        raise VerifyException(f"'{op.name}' op operand #0 ('input') is {_fmt(t)}: a {noun} takes a tensor "
                              f"of rank 1 or more")
    if not 0 <= d < rank:
        raise VerifyException(f"'{op.name}' op dim {d} is out of range for {_fmt(t)}")
    if d != rank - 1:
        raise VerifyException(f"'{op.name}' op {verb} dim {d} of {_fmt(t)}: only the innermost dim ({rank - 1}) "
                              f"is {done}; permute the input so that dim {d} is last ({callers} do)")

def _allows(allowed: tuple, et: Attribute) -> bool:
    """`allowed` holds element types (instances: i8, ui8) or classes of them (Float32Type)."""
    return any(et == a if isinstance(a, Attribute) else isinstance(et, a) for a in allowed)


def _names(allowed: tuple) -> list[str]:
    """The dtype names of `allowed`: the floats sorted (bf16, f16, f32), then the others in order."""
    names = [dtype_name(a if isinstance(a, Attribute) else a()) for a in allowed]
    floats = [n for n in names if n in ("f32", "f16", "bf16", "f64")]
    return sorted(floats) + [n for n in names if n not in floats]


# What the integer and mask ops take (element types, for `_check_tensor`'s `allowed`).
INT_TYPES = tuple(DTYPE_NAMES[n] for n in INT_DTYPES)
NUMERIC_TYPES = FLOAT_TYPES + INT_TYPES          # arithmetic: add sub mul max min neg abs ...
ORDERED_TYPES = NUMERIC_TYPES + (i1,)            # cmp also takes masks
SELECT_TYPES = ORDERED_TYPES + FP8_TYPES         # where and full: every type (FP8 as its bits)


def _check_dims_list(op: Operation, dims: Sequence[int], rank: int, what: str = "dims") -> None:
    if len(set(dims)) != len(dims):
        raise VerifyException(f"'{op.name}' op {what} {list(dims)} has repeated entries")
    for d in dims:
        if not 0 <= d < rank:
            raise VerifyException(f"'{op.name}' op {what} entry {d} is out of range for rank {rank}")


# ---------------------------------------------------------------- assembly helpers


def _print_int_list(printer: Printer, values: Sequence[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


def _parse_int_list(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _print_attrs(printer: Printer, op: Operation, elided: Sequence[str]) -> None:
    printer.print_op_attributes(op.attributes, reserved_attr_names=elided)


# ----------------------------------------------- one tensor in, one tensor out


class _ConvertLike(IRDLOperation):
    """Base of the one-tensor-in, one-tensor-out ops written `fusion.X %x <extra> : T1 to T2`.

    Without `<extra>` a subclass declares `assembly_format = _CONVERT_FORMAT`; with one it derives
    from `_ConvertLikeExtra`.
    """

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


_CONVERT_FORMAT = "$input attr-dict `:` type($input) `to` type($result)"


class _ConvertLikeExtra(_ConvertLike):
    """`fusion.X %x <extra> : T1 to T2`, where a subclass prints and parses `<extra>` (properties).

    Custom syntax: the extras are bare integer lists (`dims [0]`, `[1, 0]`), where the declarative
    format would print the array properties (of any element type) as `array<i64: ...>`.
    """

    def _print_extra(self, printer: Printer) -> None:
        pass

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        return {}

    @classmethod
    def parse(cls, parser: Parser):
        x = parser.parse_unresolved_operand()
        props = cls._parse_extra(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        xt = parser.parse_type()
        parser.parse_keyword("to")
        t = parser.parse_type()
        op = cls.create(operands=[parser.resolve_operand(x, xt)], result_types=[t], properties=props)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.input)
        self._print_extra(printer)
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" to ")
        printer.print_attribute(self.result.type)

