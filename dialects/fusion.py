"""The `fusion` dialect: what to compute, with no schedule.

Values are builtin `tensor<...>` types of static shape (symbolic extents are a later step: every
shape check below goes through `_dims`, the one place that would learn about `?`).
Element types are f32, f16 and bf16 for data, i1 for masks and i64 for Welford counts.

Binary ops take operands of one type: broadcasting and casting are explicit ops
(`fusion.broadcast`, `fusion.cast`), so every implicit conversion is visible in the IR.
Constants are `fusion.full`, a tensor filled with one value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    BFloat16Type,
    BoolAttr,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

# --------------------------------------------------------------------------- types

FLOAT_TYPES = (Float32Type, Float16Type, BFloat16Type)
DTYPE_NAMES = {"f32": Float32Type(), "f16": Float16Type(), "bf16": BFloat16Type(), "i1": i1, "i64": i64,
               "f64": Float64Type()}


def dtype_name(t: Attribute) -> str:
    """Short dtype name of an element type (f32, f16, bf16, i1, i64)."""
    for name, ty in DTYPE_NAMES.items():
        if t == ty:
            return name
    return str(t)


def is_float(t: Attribute) -> bool:
    return isinstance(t, FLOAT_TYPES)


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


def _check_tensor(op: Operation, what: str, t: Attribute, allowed: tuple[type, ...] | None = None) -> TensorType:
    if not isinstance(t, TensorType):
        raise VerifyException(f"'{op.name}' op {what} must be a ranked tensor, got {_fmt(t)}")
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"'{op.name}' op {what} has a dynamic extent ({_fmt(t)}); only static shapes are supported")
    if allowed is not None and not isinstance(t.element_type, allowed):
        names = ", ".join(sorted(dtype_name(a()) for a in allowed if a not in (IntegerType,)))
        raise VerifyException(f"'{op.name}' op {what} has element type {t.element_type}, expected one of {names}")
    return t


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


# ------------------------------------------------------------------- unary ops


class UnaryOp(IRDLOperation):
    """Elementwise float math; result has the operand's type."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, attrs: dict[str, Attribute] | None = None):
        super().__init__(operands=[input], result_types=[input.type], attributes=attrs or {})

    def verify_(self) -> None:
        _check_tensor(self, "operand #0 ('input')", self.input.type, FLOAT_TYPES)
        if self.result.type != self.input.type:
            raise VerifyException(f"'{self.name}' op result type {self.result.type} must equal the operand type {self.input.type}")

    # Custom syntax: the one type is the operand's and the result's. The declarative format could
    # only infer one from the other through a constraint variable, whose check would then replace
    # verify_'s message for a result of another type (test/lit/fusion/invalid.mlir pins it).
    @classmethod
    def parse(cls, parser: Parser):
        x = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls.create(operands=[parser.resolve_operand(x, t)], result_types=[t])
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.input)
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class NegOp(UnaryOp):
    """-x"""

    name = "fusion.neg"


@irdl_op_definition
class AbsOp(UnaryOp):
    """|x|"""

    name = "fusion.abs"


@irdl_op_definition
class ExpOp(UnaryOp):
    """e^x"""

    name = "fusion.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """natural logarithm"""

    name = "fusion.log"


@irdl_op_definition
class TanhOp(UnaryOp):
    """hyperbolic tangent"""

    name = "fusion.tanh"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """square root"""

    name = "fusion.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """1/sqrt(x)"""

    name = "fusion.rsqrt"


@irdl_op_definition
class ReluOp(UnaryOp):
    """max(x, 0)"""

    name = "fusion.relu"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """1/(1+e^-x)"""

    name = "fusion.sigmoid"


@irdl_op_definition
class SiluOp(UnaryOp):
    """x*sigmoid(x)"""

    name = "fusion.silu"


@irdl_op_definition
class GeluOp(UnaryOp):
    """GELU; `approximate` is "none" (erf form, the default) or "tanh"."""

    name = "fusion.gelu"

    def verify_(self) -> None:
        super().verify_()
        approx = self.attributes.get("approximate")
        if approx is not None and not (isinstance(approx, StringAttr) and approx.data in ("none", "tanh")):
            raise VerifyException(f"'fusion.gelu' op attribute 'approximate' must be \"none\" or \"tanh\", got {approx}")

    @property
    def approximate(self) -> str:
        a = self.attributes.get("approximate")
        return a.data if isinstance(a, StringAttr) else "none"


UNARY_OPS = [NegOp, AbsOp, ExpOp, LogOp, TanhOp, SqrtOp, RsqrtOp, ReluOp, SigmoidOp, SiluOp, GeluOp]

# ------------------------------------------------------------------ binary ops


class BinaryOp(IRDLOperation):
    """Elementwise binary op; both operands and the result have one type."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        _check_tensor(self, "operand #0 ('lhs')", self.lhs.type, FLOAT_TYPES)
        _check_tensor(self, "operand #1 ('rhs')", self.rhs.type, FLOAT_TYPES)
        if self.rhs.type != self.lhs.type:
            raise VerifyException(
                f"'{self.name}' op operand #1 ('rhs') has type {self.rhs.type}, expected {self.lhs.type} "
                "(the type of operand #0 'lhs'); use fusion.broadcast or fusion.cast to match them")
        if self.result.type != self.lhs.type:
            raise VerifyException(f"'{self.name}' op result type {self.result.type} must equal the operand type {self.lhs.type}")

    # Custom syntax: the one type is both operands' and the result's (see UnaryOp).
    @classmethod
    def parse(cls, parser: Parser):
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls.create(operands=[parser.resolve_operand(a, t), parser.resolve_operand(b, t)], result_types=[t])
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class AddOp(BinaryOp):
    """a + b"""

    name = "fusion.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """a - b"""

    name = "fusion.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """a * b"""

    name = "fusion.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """a / b"""

    name = "fusion.div"


@irdl_op_definition
class MaxOp(BinaryOp):
    """max(a, b); NaN if either is NaN"""

    name = "fusion.max"


@irdl_op_definition
class MinOp(BinaryOp):
    """min(a, b); NaN if either is NaN"""

    name = "fusion.min"


@irdl_op_definition
class PowOp(BinaryOp):
    """a ** b"""

    name = "fusion.pow"

BINARY_OPS = [AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp]

# ------------------------------------------------------------- other pointwise

CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CmpOp(IRDLOperation):
    """Elementwise comparison producing an i1 mask: `fusion.cmp lt, %a, %b : tensor<4xf32>`."""

    name = "fusion.cmp"
    predicate = prop_def(StringAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, predicate: str, lhs: SSAValue, rhs: SSAValue):
        rt = TensorType(i1, _dims(lhs.type))
        super().__init__(operands=[lhs, rhs], result_types=[rt], properties={"predicate": StringAttr(predicate)})

    def verify_(self) -> None:
        if self.predicate.data not in CMP_PREDICATES:
            raise VerifyException(f"'fusion.cmp' op predicate '{self.predicate.data}' is not one of {', '.join(CMP_PREDICATES)}")
        _check_tensor(self, "operand #0 ('lhs')", self.lhs.type, FLOAT_TYPES)
        if self.rhs.type != self.lhs.type:
            raise VerifyException(f"'fusion.cmp' op operand #1 ('rhs') has type {self.rhs.type}, expected {self.lhs.type}")
        if self.result.type != TensorType(i1, _dims(self.lhs.type)):
            raise VerifyException(f"'fusion.cmp' op result must be {TensorType(i1, _dims(self.lhs.type))}, got {self.result.type}")

    # Custom syntax: the predicate is a bare identifier, and the i1 result type is derived from the
    # operands' type.
    @classmethod
    def parse(cls, parser: Parser):
        pred = parser.parse_identifier()
        parser.parse_punctuation(",")
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        rt = TensorType(i1, _dims(t)) if isinstance(t, TensorType) else t
        op = cls.create(operands=[parser.resolve_operand(a, t), parser.resolve_operand(b, t)], result_types=[rt],
                        properties={"predicate": StringAttr(pred)})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(f" {self.predicate.data}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)


@irdl_op_definition
class WhereOp(IRDLOperation):
    """`cond ? a : b` elementwise: `fusion.where %c, %a, %b : tensor<4xf32>`."""

    name = "fusion.where"
    cond = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, cond: SSAValue, a: SSAValue, b: SSAValue):
        super().__init__(operands=[cond, a, b], result_types=[a.type])

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #1 ('lhs')", self.lhs.type, FLOAT_TYPES)
        c = _check_tensor(self, "operand #0 ('cond')", self.cond.type)
        if c != TensorType(i1, _dims(t)):
            raise VerifyException(f"'fusion.where' op operand #0 ('cond') has type {c}, expected {TensorType(i1, _dims(t))}")
        if self.rhs.type != t:
            raise VerifyException(f"'fusion.where' op operand #2 ('rhs') has type {self.rhs.type}, expected {t}")
        if self.result.type != t:
            raise VerifyException(f"'fusion.where' op result type {self.result.type} must be {t}")

    # Custom syntax: the condition's i1 type is derived from the one type spelled.
    @classmethod
    def parse(cls, parser: Parser):
        ops = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            ops.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        ct = TensorType(i1, _dims(t)) if isinstance(t, TensorType) else t
        resolved = [parser.resolve_operand(ops[0], ct), parser.resolve_operand(ops[1], t), parser.resolve_operand(ops[2], t)]
        op = cls.create(operands=resolved, result_types=[t])
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


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


@irdl_op_definition
class CastOp(_ConvertLike):
    """Elementwise dtype conversion: `fusion.cast %x : tensor<4xbf16> to tensor<4xf32>`."""

    name = "fusion.cast"
    assembly_format = _CONVERT_FORMAT

    def __init__(self, input: SSAValue, dtype: str | Attribute):
        super().__init__(operands=[input], result_types=[tensor(_dims(input.type), dtype)])

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        r = _check_tensor(self, "result", self.result.type)
        if _dims(t) != _dims(r):
            raise VerifyException(f"'fusion.cast' op changes the shape: {t} to {r}; a cast changes only the element type")


@irdl_op_definition
class BroadcastOp(_ConvertLikeExtra):
    """Insert new dimensions: `fusion.broadcast %b dims [0] : tensor<4xf32> to tensor<3x4xf32>`.

    `dims` lists the result dimensions that are new; the operand's dimensions map, in order,
    to the remaining result dimensions and must match their extents.
    """

    name = "fusion.broadcast"
    dims = prop_def(DenseArrayBase)

    def __init__(self, input: SSAValue, shape: Sequence[int], dims: Sequence[int]):
        super().__init__(operands=[input], result_types=[TensorType(_elem(input), list(shape))],
                         properties={"dims": _i64_array(dims)})

    def _print_extra(self, printer: Printer) -> None:
        printer.print_string(" dims ")
        _print_int_list(printer, self.dims.get_values())

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        parser.parse_keyword("dims")
        return {"dims": _i64_array(_parse_int_list(parser))}

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        r = _check_tensor(self, "result", self.result.type)
        new = list(self.dims.get_values())
        _check_dims_list(self, new, r.get_num_dims())
        if r.element_type != t.element_type:
            raise VerifyException(f"'fusion.broadcast' op result element type {r.element_type} differs from the operand's {t.element_type}")
        kept = [d for i, d in enumerate(_dims(r)) if i not in new]
        if tuple(kept) != _dims(t):
            raise VerifyException(
                f"'fusion.broadcast' op operand #0 ('input') has shape {list(_dims(t))}, but the result {r} with new dims "
                f"{new} keeps dimensions of extents {kept}")


@irdl_op_definition
class ReshapeOp(_ConvertLike):
    """Row-major reshape to a shape with the same number of elements."""

    name = "fusion.reshape"
    assembly_format = _CONVERT_FORMAT

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        r = _check_tensor(self, "result", self.result.type)
        if t.element_count() != r.element_count() or t.element_type != r.element_type:
            raise VerifyException(f"'fusion.reshape' op cannot reshape {t} to {r}: element counts or types differ")


@irdl_op_definition
class PermuteOp(_ConvertLikeExtra):
    """Transpose: result dim i is operand dim perm[i]."""

    name = "fusion.permute"
    perm = prop_def(DenseArrayBase)

    def _print_extra(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_int_list(printer, self.perm.get_values())

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        return {"perm": _i64_array(_parse_int_list(parser))}

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        r = _check_tensor(self, "result", self.result.type)
        perm = list(self.perm.get_values())
        if sorted(perm) != list(range(t.get_num_dims())):
            raise VerifyException(f"'fusion.permute' op permutation {perm} is not a permutation of rank {t.get_num_dims()}")
        if tuple(_dims(t)[p] for p in perm) != _dims(r) or r.element_type != t.element_type:
            raise VerifyException(f"'fusion.permute' op result {r} does not match {t} permuted by {perm}")


@irdl_op_definition
class SegmentSetOp(_ConvertLike):
    """Identity that forces a kernel boundary: its operand is written to memory."""

    name = "fusion.segment_set"
    assembly_format = _CONVERT_FORMAT

    def verify_(self) -> None:
        if self.result.type != self.input.type:
            raise VerifyException(f"'fusion.segment_set' op result type {self.result.type} must equal operand type {self.input.type}")


@irdl_op_definition
class FullOp(IRDLOperation):
    """A tensor filled with one value: `fusion.full 2.0 : tensor<4x5xf32>`."""

    name = "fusion.full"
    value = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: float, shape: Sequence[int], dtype: str | Attribute = "f32"):
        super().__init__(result_types=[tensor(shape, dtype)], properties={"value": FloatAttr(float(value), Float64Type())})

    def verify_(self) -> None:
        _check_tensor(self, "result", self.result.type, FLOAT_TYPES)

    # Custom syntax: the value is a bare float literal, with inf and nan as keywords.
    @classmethod
    def parse(cls, parser: Parser):
        neg = parser.parse_optional_punctuation("-") is not None
        if parser.parse_optional_keyword("inf"):
            v = math.inf
        elif parser.parse_optional_keyword("nan"):
            v = math.nan
        else:
            v = float(parser.parse_number())
        v = -v if neg else v
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls.create(result_types=[t], properties={"value": FloatAttr(v, Float64Type())})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(f" {_float_text(self.value.value.data)}")
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


def _float_text(v: float) -> str:
    """A float literal that the parser reads back to the same value (inf and nan as keywords)."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    s = repr(v)
    return s.replace("e", ".0e") if "e" in s and "." not in s else s


# ------------------------------------------------------------------- reductions

REDUCE_KINDS = ("sum", "max", "min")


def _reduced_shape(shape: Sequence[int], dims: Sequence[int], keepdim: bool) -> list[int]:
    if keepdim:
        return [1 if i in dims else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in dims]


class _ReductionBase(IRDLOperation):
    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase)
    keepdim = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())

    @property
    def reduced_dims(self) -> list[int]:
        return list(self.dims.get_values())

    def _verify_reduction(self, results: Sequence[SSAValue], names: Sequence[str]) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type, FLOAT_TYPES)
        dims = self.reduced_dims
        if not dims:
            raise VerifyException(f"'{self.name}' op reduces no dimension: 'dims' is empty")
        _check_dims_list(self, dims, t.get_num_dims())
        expect = _reduced_shape(_dims(t), dims, self.keepdim is not None)
        for r, n in zip(results, names):
            rt = _check_tensor(self, f"result '{n}'", r.type)
            if list(_dims(rt)) != expect:
                raise VerifyException(
                    f"'{self.name}' op result '{n}' has shape {list(_dims(rt))}, expected {expect} "
                    f"(reducing dims {dims} of {t}{' with keepdim' if self.keepdim else ''})")


def _print_reduction_head(printer: Printer, op: _ReductionBase, extra: str = "") -> None:
    printer.print_string(" ")
    printer.print_operand(op.input)
    printer.print_string(" dims ")
    _print_int_list(printer, op.reduced_dims)
    printer.print_string(extra)
    if op.keepdim is not None:
        printer.print_string(" keepdim")
    _print_attrs(printer, op, [])
    printer.print_string(" : ")
    printer.print_attribute(op.input.type)
    printer.print_string(" to ")
    printer.print_list([r.type for r in op.results], printer.print_attribute)


@irdl_op_definition
class ReduceOp(_ReductionBase):
    """`fusion.reduce sum %x dims [1] keepdim : tensor<3x4xbf16> to tensor<3x1xf32>`.

    Accumulation is in f32 whatever the input type; the result type may be f32 or the input's.
    """

    name = "fusion.reduce"
    kind = prop_def(StringAttr)
    result = result_def(TensorType)

    def __init__(self, kind: str, input: SSAValue, dims: Sequence[int], keepdim: bool = False, dtype: str | None = None):
        shape = _reduced_shape(_dims(input.type), dims, keepdim)
        props: dict[str, Attribute] = {"kind": StringAttr(kind), "dims": _i64_array(dims)}
        if keepdim:
            props["keepdim"] = UnitAttr()
        et = DTYPE_NAMES[dtype] if dtype else _elem(input)
        super().__init__(operands=[input], result_types=[TensorType(et, shape)], properties=props)

    def verify_(self) -> None:
        if self.kind.data not in REDUCE_KINDS:
            raise VerifyException(f"'fusion.reduce' op kind '{self.kind.data}' is not one of {', '.join(REDUCE_KINDS)}")
        self._verify_reduction([self.result], ["result"])
        et = _elem(self.result)
        if et != Float32Type() and et != _elem(self.input):
            raise VerifyException(f"'fusion.reduce' op result element type {et} must be f32 or the input's {_elem(self.input)}")

    # Custom syntax: the kind is a bare identifier and `dims` a bare integer list (the declarative
    # format would print the array property of any element type as `array<i64: ...>`).
    @classmethod
    def parse(cls, parser: Parser):
        kind = parser.parse_identifier()
        x = parser.parse_unresolved_operand()
        parser.parse_keyword("dims")
        props: dict[str, Attribute] = {"kind": StringAttr(kind), "dims": _i64_array(_parse_int_list(parser))}
        if parser.parse_optional_keyword("keepdim"):
            props["keepdim"] = UnitAttr()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        xt = parser.parse_type()
        parser.parse_keyword("to")
        rt = parser.parse_type()
        op = cls.create(operands=[parser.resolve_operand(x, xt)], result_types=[rt], properties=props)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(f" {self.kind.data}")
        _print_reduction_head(printer, self)


def _parse_multi_result_reduction(cls, parser: Parser, nresults: int, extra=None):
    x = parser.parse_unresolved_operand()
    parser.parse_keyword("dims")
    props: dict[str, Attribute] = {"dims": _i64_array(_parse_int_list(parser))}
    if extra:
        props.update(extra(parser))
    if parser.parse_optional_keyword("keepdim"):
        props["keepdim"] = UnitAttr()
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    xt = parser.parse_type()
    parser.parse_keyword("to")
    types = [parser.parse_type()]
    for _ in range(nresults - 1):
        parser.parse_punctuation(",")
        types.append(parser.parse_type())
    op = cls.create(operands=[parser.resolve_operand(x, xt)], result_types=types, properties=props)
    op.attributes.update(attrs)
    return op


@irdl_op_definition
class WelfordOp(_ReductionBase):
    """Welford statistics over `dims`: mean (avg), sum of squared deviations (M2) and count (N).

    `%avg, %m2, %n = fusion.welford %x dims [1] : tensor<8x64xf32> to tensor<8xf32>, tensor<8xf32>, tensor<8xi64>`
    """

    name = "fusion.welford"
    avg = result_def(TensorType)
    m2 = result_def(TensorType)
    n = result_def(TensorType)

    def __init__(self, input: SSAValue, dims: Sequence[int], keepdim: bool = False):
        shape = _reduced_shape(_dims(input.type), dims, keepdim)
        props: dict[str, Attribute] = {"dims": _i64_array(dims)}
        if keepdim:
            props["keepdim"] = UnitAttr()
        f32 = Float32Type()
        super().__init__(operands=[input], result_types=[TensorType(f32, shape), TensorType(f32, shape), TensorType(i64, shape)],
                         properties=props)

    def verify_(self) -> None:
        self._verify_reduction([self.avg, self.m2, self.n], ["avg", "M2", "N"])
        for r, n, et in ((self.avg, "avg", Float32Type()), (self.m2, "M2", Float32Type()), (self.n, "N", i64)):
            if _elem(r) != et:
                raise VerifyException(f"'fusion.welford' op result '{n}' must have element type {et}, got {_elem(r)}")

    @classmethod
    def parse(cls, parser: Parser):
        return _parse_multi_result_reduction(cls, parser, 3)

    def print(self, printer: Printer):
        _print_reduction_head(printer, self)


@irdl_op_definition
class VarMeanOp(_ReductionBase):
    """Variance (with Bessel-style `correction`) and mean over `dims`, accumulated in f32.

    `%var, %mean = fusion.var_mean %x dims [1] correction 1 : tensor<8x64xbf16> to tensor<8xf32>, tensor<8xf32>`
    """

    name = "fusion.var_mean"
    correction = prop_def(IntegerAttr)
    var = result_def(TensorType)
    mean = result_def(TensorType)

    def __init__(self, input: SSAValue, dims: Sequence[int], correction: int = 1, keepdim: bool = False):
        shape = _reduced_shape(_dims(input.type), dims, keepdim)
        props: dict[str, Attribute] = {"dims": _i64_array(dims), "correction": IntegerAttr(correction, i64)}
        if keepdim:
            props["keepdim"] = UnitAttr()
        f32 = Float32Type()
        super().__init__(operands=[input], result_types=[TensorType(f32, shape), TensorType(f32, shape)], properties=props)

    def verify_(self) -> None:
        self._verify_reduction([self.var, self.mean], ["var", "mean"])
        if self.correction.value.data < 0:
            raise VerifyException(f"'fusion.var_mean' op correction must be >= 0, got {self.correction.value.data}")
        for r, n in ((self.var, "var"), (self.mean, "mean")):
            if _elem(r) != Float32Type():
                raise VerifyException(f"'fusion.var_mean' op result '{n}' must have element type f32, got {_elem(r)}")

    @classmethod
    def parse(cls, parser: Parser):
        def corr(p: Parser):
            p.parse_keyword("correction")
            return {"correction": IntegerAttr(p.parse_integer(), i64)}
        return _parse_multi_result_reduction(cls, parser, 2, corr)

    def print(self, printer: Printer):
        _print_reduction_head(printer, self, f" correction {self.correction.value.data}")


# ----------------------------------------------------------------------- matmul


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """`C[M,N] = A[M,K] @ B[K,N]` with f32 accumulation.

    Operands are given as stored: with `transpose_a` A is stored [K,M] (column-major MxK), with
    `transpose_b` B is stored [N,K]. The result's element type is f32, f16 or bf16.
    `%c = fusion.matmul %a, %b : tensor<128x64xbf16>, tensor<64x32xbf16> -> tensor<128x32xf32>`

    With `k_chunk KC` (split-K, made by fusion-split-k) the result is the S = ceil(K / KC)
    partial products, f32: `result[s] = A[:, s*KC : min(K, (s+1)*KC)] @ B[s*KC : ..., :]`, so
    `fusion.reduce sum %p dims [0]` gives the product back.
    `%p = fusion.matmul %a, %b k_chunk 1024 : tensor<128x4096xbf16>, tensor<4096x32xbf16> -> tensor<4x128x32xf32>`
    """

    name = "fusion.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    transpose_a = opt_prop_def(UnitAttr)
    transpose_b = opt_prop_def(UnitAttr)
    k_chunk = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, a: SSAValue, b: SSAValue, transpose_a: bool = False, transpose_b: bool = False, dtype: str = "f32",
                 k_chunk: int | None = None):
        sa, sb = _dims(a.type), _dims(b.type)
        m = sa[1] if transpose_a else sa[0]
        n = sb[0] if transpose_b else sb[1]
        props: dict[str, Attribute] = {}
        if transpose_a:
            props["transpose_a"] = UnitAttr()
        if transpose_b:
            props["transpose_b"] = UnitAttr()
        shape = [m, n]
        if k_chunk is not None:
            props["k_chunk"] = IntegerAttr(k_chunk, i64)
            k = sa[0] if transpose_a else sa[1]
            shape = [-(-k // k_chunk) if k_chunk > 0 else 0, m, n]
        super().__init__(operands=[a, b], result_types=[tensor(shape, dtype)], properties=props)

    def mnk(self) -> tuple[int, int, int]:
        sa, sb = _dims(self.a.type), _dims(self.b.type)
        m, k = (sa[1], sa[0]) if self.transpose_a else (sa[0], sa[1])
        n = sb[0] if self.transpose_b else sb[1]
        return m, n, k

    @property
    def chunk(self) -> int | None:
        """K elements per partial product (`k_chunk`), None for an ordinary matmul."""
        return None if self.k_chunk is None else self.k_chunk.value.data

    @property
    def splits(self) -> int:
        """S, the number of partial products (1 without `k_chunk`)."""
        kc = self.chunk
        return 1 if kc is None or kc <= 0 else -(-self.mnk()[2] // kc)

    def verify_(self) -> None:
        ta = _check_tensor(self, "operand #0 ('a')", self.a.type, FLOAT_TYPES)
        tb = _check_tensor(self, "operand #1 ('b')", self.b.type, FLOAT_TYPES)
        for what, t in (("operand #0 ('a')", ta), ("operand #1 ('b')", tb)):
            if t.get_num_dims() != 2:
                raise VerifyException(f"'fusion.matmul' op {what} must be 2-D, got {t}")
        if ta.element_type != tb.element_type:
            raise VerifyException(f"'fusion.matmul' op operand #1 ('b') has element type {tb.element_type}, expected {ta.element_type} like operand #0 ('a')")
        sa, sb = _dims(ta), _dims(tb)
        ka = sa[0] if self.transpose_a else sa[1]
        kb = sb[1] if self.transpose_b else sb[0]
        if ka != kb:
            raise VerifyException(f"'fusion.matmul' op contraction extents differ: operand #0 ('a') {ta} has K={ka}, operand #1 ('b') {tb} has K={kb}")
        m, n, k = self.mnk()
        rt = _check_tensor(self, "result", self.result.type, FLOAT_TYPES)
        kc = self.chunk
        if kc is None:
            if _dims(rt) != (m, n):
                raise VerifyException(f"'fusion.matmul' op result has shape {list(_dims(rt))}, expected {[m, n]}")
            return
        if kc <= 0:
            raise VerifyException(f"'fusion.matmul' op k_chunk must be positive, got {kc}")
        if rt.element_type != Float32Type():
            raise VerifyException(f"'fusion.matmul' op with k_chunk has element type {rt.element_type}; its partial "
                                  "products must be f32 (cast after the fusion.reduce sum)")
        want = [self.splits, m, n]
        if list(_dims(rt)) != want:
            raise VerifyException(f"'fusion.matmul' op result has shape {list(_dims(rt))}, expected {want} "
                                  f"(S = ceil(K / k_chunk) = ceil({k} / {kc}) partial products of {m}x{n})")

    # Custom syntax: `k_chunk` is a bare integer (the declarative format would print the property,
    # of any integer type, as `N : i64`).
    @classmethod
    def parse(cls, parser: Parser):
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        props: dict[str, Attribute] = {}
        for flag in ("transpose_a", "transpose_b"):
            if parser.parse_optional_keyword(flag):
                props[flag] = UnitAttr()
        if parser.parse_optional_keyword("k_chunk"):
            props["k_chunk"] = IntegerAttr(parser.parse_integer(), i64)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        at = parser.parse_type()
        parser.parse_punctuation(",")
        bt = parser.parse_type()
        parser.parse_punctuation("->")
        rt = parser.parse_type()
        op = cls.create(operands=[parser.resolve_operand(a, at), parser.resolve_operand(b, bt)], result_types=[rt],
                        properties=props)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.a)
        printer.print_string(", ")
        printer.print_operand(self.b)
        for flag in ("transpose_a", "transpose_b"):
            if getattr(self, flag) is not None:
                printer.print_string(f" {flag}")
        if self.k_chunk is not None:
            printer.print_string(f" k_chunk {self.chunk}")
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.a.type)
        printer.print_string(", ")
        printer.print_attribute(self.b.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


POINTWISE_OPS = tuple(UNARY_OPS + BINARY_OPS + [CmpOp, WhereOp, CastOp, FullOp])
SHAPE_OPS = (BroadcastOp, ReshapeOp, PermuteOp)

Fusion = Dialect(
    "fusion",
    [*UNARY_OPS, *BINARY_OPS, CmpOp, WhereOp, CastOp, BroadcastOp, ReshapeOp, PermuteOp, SegmentSetOp, FullOp,
     ReduceOp, WelfordOp, VarMeanOp, MatmulOp],
    [],
)
