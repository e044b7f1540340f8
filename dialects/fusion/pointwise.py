"""Pointwise `fusion` ops: unary and binary float math, cmp, where, cast and full."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (BFloat16Type, Float16Type, Float32Type, Float64Type, FloatAttr, IntegerType,
                                   StringAttr, TensorType, i1)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .types import (FLOAT_TYPES, INT_TYPES, NUMERIC_TYPES, ORDERED_TYPES, SELECT_TYPES, _CONVERT_FORMAT, _check_tensor, _ConvertLike,
                    _dims, _print_attrs, is_integer, is_unsigned, tensor)

# ------------------------------------------------------------------- unary ops


class _OneOperandForm:
    """The custom form `%r = fusion.<op> %x {attrs} : <operand type>` of ops with one operand,
    whose result type follows from the operand's (`_result_type`). (The declarative format
    could infer one type from the other only through a constraint variable, whose check would
    then replace verify_'s message for a result of another type: test/lit/fusion/invalid.mlir
    pins it.)"""

    @classmethod
    def _result_type(cls, t: Attribute) -> Attribute:
        return t

    @classmethod
    def parse(cls, parser: Parser):
        x = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls.create(operands=[parser.resolve_operand(x, t)], result_types=[cls._result_type(t)])
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.operands[0])
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.operands[0].type)


class UnaryOp(_OneOperandForm, IRDLOperation):
    """Elementwise float math (neg and abs: integers too, wrapping as torch: abs of i8's -128 is
    -128); result has the operand's type."""

    ELEMENTS: ClassVar[tuple] = FLOAT_TYPES  # the element types the op takes
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, attrs: dict[str, Attribute] | None = None):
        super().__init__(operands=[input], result_types=[input.type], attributes=attrs or {})

    def verify_(self) -> None:
        _check_tensor(self, "operand #0 ('input')", self.input.type, self.ELEMENTS)
        if self.result.type != self.input.type:
            raise VerifyException(f"'{self.name}' op result type {self.result.type} must equal the operand type {self.input.type}")


@irdl_op_definition
class NegOp(UnaryOp):
    """-x (integers wrap: -(-128) is -128 in i8, -1 is 255 in u8)"""

    name = "fusion.neg"
    ELEMENTS: ClassVar[tuple] = NUMERIC_TYPES


@irdl_op_definition
class AbsOp(UnaryOp):
    """|x| (integers wrap: |-128| is -128 in i8; u8 is its own)"""

    name = "fusion.abs"
    ELEMENTS: ClassVar[tuple] = NUMERIC_TYPES


# A unit attribute on fusion.exp: computed as 2^(x log2 e) with ex2.approx (relative error up to
# 2^-18 in f32) instead of fuser's accurate exp; set by fusion-approx-exp on exps whose value is
# only read rounded to bf16 or f16 (passes/approx_exp.py).
APPROX_ATTR = "fuser.approx"


@irdl_op_definition
class ExpOp(UnaryOp):
    """e^x (`{fuser.approx}`: see APPROX_ATTR)"""

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


@irdl_op_definition
class ErfOp(UnaryOp):
    """the error function, 2/sqrt(pi) * integral of e^-t^2 from 0 to x"""

    name = "fusion.erf"


@irdl_op_definition
class Exp2Op(UnaryOp):
    """2^x"""

    name = "fusion.exp2"


@irdl_op_definition
class Log2Op(UnaryOp):
    """base-2 logarithm"""

    name = "fusion.log2"


@irdl_op_definition
class Log10Op(UnaryOp):
    """base-10 logarithm"""

    name = "fusion.log10"


@irdl_op_definition
class Log1pOp(UnaryOp):
    """log(1 + x), accurate for small x"""

    name = "fusion.log1p"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """1/x (correctly rounded, as a division)"""

    name = "fusion.reciprocal"


@irdl_op_definition
class FloorOp(UnaryOp):
    """the largest integer <= x"""

    name = "fusion.floor"


@irdl_op_definition
class CeilOp(UnaryOp):
    """the smallest integer >= x"""

    name = "fusion.ceil"


@irdl_op_definition
class TruncOp(UnaryOp):
    """x rounded towards zero"""

    name = "fusion.trunc"


@irdl_op_definition
class RoundOp(UnaryOp):
    """x rounded to the nearest integer, halves to even (as torch.round and numpy.rint)"""

    name = "fusion.round"


@irdl_op_definition
class SignOp(UnaryOp):
    """1 for x > 0, -1 for x < 0, else 0 (NaN too, as torch.sign)"""

    name = "fusion.sign"


@irdl_op_definition
class SinOp(UnaryOp):
    """sine (radians)"""

    name = "fusion.sin"


@irdl_op_definition
class CosOp(UnaryOp):
    """cosine (radians)"""

    name = "fusion.cos"


@irdl_op_definition
class TanOp(UnaryOp):
    """tangent (radians)"""

    name = "fusion.tan"


@irdl_op_definition
class AsinOp(UnaryOp):
    """arcsine; NaN outside [-1, 1]"""

    name = "fusion.asin"


@irdl_op_definition
class AcosOp(UnaryOp):
    """arccosine; NaN outside [-1, 1]"""

    name = "fusion.acos"


@irdl_op_definition
class AtanOp(UnaryOp):
    """arctangent"""

    name = "fusion.atan"


@irdl_op_definition
class SinhOp(UnaryOp):
    """hyperbolic sine"""

    name = "fusion.sinh"


@irdl_op_definition
class CoshOp(UnaryOp):
    """hyperbolic cosine"""

    name = "fusion.cosh"


@irdl_op_definition
class AsinhOp(UnaryOp):
    """inverse hyperbolic sine"""

    name = "fusion.asinh"


@irdl_op_definition
class AcoshOp(UnaryOp):
    """inverse hyperbolic cosine; NaN below 1"""

    name = "fusion.acosh"


@irdl_op_definition
class AtanhOp(UnaryOp):
    """inverse hyperbolic tangent; NaN outside [-1, 1]"""

    name = "fusion.atanh"


@irdl_op_definition
class ErfcOp(UnaryOp):
    """1 - erf(x), accurate where erf(x) is near 1"""

    name = "fusion.erfc"


@irdl_op_definition
class ErfinvOp(UnaryOp):
    """the inverse of erf on (-1, 1); +-inf at +-1, NaN beyond"""

    name = "fusion.erfinv"


@irdl_op_definition
class ErfcinvOp(UnaryOp):
    """the inverse of erfc on (0, 2); +inf at 0, -inf at 2, NaN beyond"""

    name = "fusion.erfcinv"


@irdl_op_definition
class LgammaOp(UnaryOp):
    """log|gamma(x)|, as torch.lgamma; +inf at 0, the negative integers and +-inf"""

    name = "fusion.lgamma"


@irdl_op_definition
class Expm1Op(UnaryOp):
    """e^x - 1, accurate for small x"""

    name = "fusion.expm1"


@irdl_op_definition
class BitwiseNotOp(UnaryOp):
    """~x of an integer (every bit flipped); of an i1 mask, logical not"""

    name = "fusion.bitwise_not"
    ELEMENTS: ClassVar[tuple] = INT_TYPES + (i1,)


UNARY_OPS = [NegOp, AbsOp, ExpOp, LogOp, TanhOp, SqrtOp, RsqrtOp, ReluOp, SigmoidOp, SiluOp, GeluOp,
             ErfOp, Exp2Op, Log2Op, Log10Op, Log1pOp, ReciprocalOp, FloorOp, CeilOp, TruncOp, RoundOp, SignOp,
             SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp, Expm1Op, ErfcOp, ErfinvOp,
             ErfcinvOp, LgammaOp, BitwiseNotOp]

# ------------------------------------------------------------------ binary ops


class _TwoOperandForm:
    """The custom form `%r = fusion.<op> %a, %b {attrs} : <type>` of ops whose two operands and
    result have one type (see _OneOperandForm)."""

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
        printer.print_operand(self.operands[0])
        printer.print_string(", ")
        printer.print_operand(self.operands[1])
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.results[0].type)


class _SameTypeBinary(_TwoOperandForm, IRDLOperation):
    """Two operands and a result of one type (of ELEMENTS; LogicalBinaryOp: i1)."""

    ELEMENTS: ClassVar[tuple] = FLOAT_TYPES
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def _check_element(self, what: str, t: Attribute) -> None:
        _check_tensor(self, what, t, self.ELEMENTS)

    def verify_(self) -> None:
        lhs, rhs = self.lhs.type, self.rhs.type
        self._check_element("operand #0 ('lhs')", lhs)
        self._check_element("operand #1 ('rhs')", rhs)
        if rhs != lhs:
            raise VerifyException(
                f"'{self.name}' op operand #1 ('rhs') has type {rhs}, expected {lhs} "
                "(the type of operand #0 'lhs'); use fusion.broadcast or fusion.cast to match them")
        if self.result.type != lhs:
            raise VerifyException(f"'{self.name}' op result type {self.result.type} must equal the operand type {lhs}")


class BinaryOp(_SameTypeBinary):
    """Elementwise binary op; both operands and the result have one type: a float type, or an
    integer one for the ops that say so (their arithmetic wraps, as torch's)."""


@irdl_op_definition
class AddOp(BinaryOp):
    """a + b (integers wrap)"""

    name = "fusion.add"
    ELEMENTS: ClassVar[tuple] = NUMERIC_TYPES


@irdl_op_definition
class SubOp(BinaryOp):
    """a - b (integers wrap)"""

    name = "fusion.sub"
    ELEMENTS: ClassVar[tuple] = NUMERIC_TYPES


@irdl_op_definition
class MulOp(BinaryOp):
    """a * b (integers wrap)"""

    name = "fusion.mul"
    ELEMENTS: ClassVar[tuple] = NUMERIC_TYPES


@irdl_op_definition
class DivOp(BinaryOp):
    """a / b, true division of floats (integers divide by fusion.trunc_div or fusion.floor_div;
    the Python API takes true division of integers in f32, as torch promotes it)"""

    name = "fusion.div"


@irdl_op_definition
class MaxOp(BinaryOp):
    """max(a, b); NaN if either is NaN, and +0 above -0 (IEEE 754-2019 maximum, as torch.maximum)"""

    name = "fusion.max"
    ELEMENTS: ClassVar[tuple] = NUMERIC_TYPES


@irdl_op_definition
class MinOp(BinaryOp):
    """min(a, b); NaN if either is NaN, and -0 below +0 (IEEE 754-2019 minimum, as torch.minimum)"""

    name = "fusion.min"
    ELEMENTS: ClassVar[tuple] = NUMERIC_TYPES


@irdl_op_definition
class PowOp(BinaryOp):
    """a ** b; of integers by repeated squaring (wrapping), and for b < 0 as torch's CUDA kernel:
    1 for a = 1, +-1 for a = -1 (the sign of an odd b), else 0"""

    name = "fusion.pow"
    ELEMENTS: ClassVar[tuple] = NUMERIC_TYPES

@irdl_op_definition
class Atan2Op(BinaryOp):
    """the angle of the point (b, a) (a is y, b is x), in [-pi, pi], as C's atan2 and torch.atan2"""

    name = "fusion.atan2"


@irdl_op_definition
class FmodOp(BinaryOp):
    """a - trunc(a / b) * b, exactly (C's fmod, torch.fmod): a's sign; NaN for b = 0. Of
    integers C's %, and -1 for b = 0 (see fusion.trunc_div)"""

    name = "fusion.fmod"
    ELEMENTS: ClassVar[tuple] = NUMERIC_TYPES


@irdl_op_definition
class RemainderOp(BinaryOp):
    """a - floor(a / b) * b (torch.remainder, Python's %): fmod, plus b where its sign differs
    from b's. Of integers -1 for b = 0 (see fusion.trunc_div)"""

    name = "fusion.remainder"
    ELEMENTS: ClassVar[tuple] = NUMERIC_TYPES


@irdl_op_definition
class TruncDivOp(BinaryOp):
    """a / b of integers rounded toward zero (C's, torch.div(rounding_mode="trunc")). Defined
    everywhere, where C and LLVM are not: a / 0 is -1 (all bits set; u8: 255), and so are
    a % 0 and fmod(a, 0), what torch gives on an H100 for the 8-, 16- and 32-bit types (its
    64-bit division by 0 gives 2^32 - 1 for a >= 0, and its floor mode -2 for a < 0: artifacts
    of the GPU's division routine; torch raises on the CPU); the overflowing MIN / -1 wraps to
    MIN. fuser's kernels never divide by 0."""

    name = "fusion.trunc_div"
    ELEMENTS: ClassVar[tuple] = INT_TYPES


@irdl_op_definition
class FloorDivOp(BinaryOp):
    """a / b of integers rounded toward -inf (Python's //, torch.div(rounding_mode="floor"),
    torch.floor_divide); a / 0 is -1 and MIN / -1 wraps to MIN, as fusion.trunc_div"""

    name = "fusion.floor_div"
    ELEMENTS: ClassVar[tuple] = INT_TYPES


@irdl_op_definition
class BitwiseAndOp(BinaryOp):
    """a & b of integers; of i1 masks, logical and"""

    name = "fusion.bitwise_and"
    ELEMENTS: ClassVar[tuple] = INT_TYPES + (i1,)


@irdl_op_definition
class BitwiseOrOp(BinaryOp):
    """a | b of integers; of i1 masks, logical or"""

    name = "fusion.bitwise_or"
    ELEMENTS: ClassVar[tuple] = INT_TYPES + (i1,)


@irdl_op_definition
class BitwiseXorOp(BinaryOp):
    """a ^ b of integers; of i1 masks, logical xor"""

    name = "fusion.bitwise_xor"
    ELEMENTS: ClassVar[tuple] = INT_TYPES + (i1,)


@irdl_op_definition
class ShiftLeftOp(BinaryOp):
    """a << b (torch.bitwise_left_shift), wrapping; 0 where b < 0 or b >= the type's width, as
    torch defines it (LLVM's shl would be poison there)"""

    name = "fusion.bitwise_left_shift"
    ELEMENTS: ClassVar[tuple] = INT_TYPES


@irdl_op_definition
class ShiftRightOp(BinaryOp):
    """a >> b (torch.bitwise_right_shift): arithmetic for the signed types (the sign fills in),
    logical for u8; where b < 0 or b >= the width, a >> (width - 1) (the sign: 0 or -1; u8: 0)"""

    name = "fusion.bitwise_right_shift"
    ELEMENTS: ClassVar[tuple] = INT_TYPES


@irdl_op_definition
class LogicalShiftRightOp(BinaryOp):
    """a >> b with zeros shifted in whatever the type's sign (nvFuser's logical_right_shift);
    0 where b < 0 or b >= the width"""

    name = "fusion.logical_right_shift"
    ELEMENTS: ClassVar[tuple] = INT_TYPES


@irdl_op_definition
class GcdOp(BinaryOp):
    """the greatest common divisor (torch.gcd): Euclid's algorithm on |a| and |b| with C's %, so
    gcd(a, 0) = |a|, gcd(0, 0) = 0, and |MIN| wraps to MIN as torch's (gcd(-128, 6) in i8 is -2)"""

    name = "fusion.gcd"
    ELEMENTS: ClassVar[tuple] = INT_TYPES


@irdl_op_definition
class NextafterOp(BinaryOp):
    """the next value of a's type after a toward b, as C's nextafter and torch.nextafter: b where
    a == b (so nextafter(0.0, -0.0) is -0.0), the least subnormal with b's sign from a zero, NaN
    where either is NaN; every float type, f64 included (a step of the bits, nothing rounds)"""

    name = "fusion.nextafter"
    ELEMENTS: ClassVar[tuple] = FLOAT_TYPES


BITWISE_OPS = [BitwiseNotOp, BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, ShiftLeftOp, ShiftRightOp,
               LogicalShiftRightOp, GcdOp]
BINARY_OPS = [AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp, Atan2Op, FmodOp, RemainderOp, TruncDivOp, FloorDivOp,
              NextafterOp, BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, ShiftLeftOp, ShiftRightOp, LogicalShiftRightOp, GcdOp]

# ------------------------------------------------------------- other pointwise

CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CmpOp(IRDLOperation):
    """Elementwise comparison producing an i1 mask: `fusion.cmp lt, %a, %b : tensor<4xf32>`
    (floats, integers, u8 unsigned, and masks: false < true)."""

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
        _check_tensor(self, "operand #0 ('lhs')", self.lhs.type, ORDERED_TYPES)
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


class FloatTestOp(_OneOperandForm, IRDLOperation):
    """An i1 mask of a property of each float element: `%m = fusion.isnan %x : tensor<4xf32>`
    (the type written is the operand's; the result is i1 of its shape)."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[self._result_type(input.type)])

    @classmethod
    def _result_type(cls, t: Attribute) -> Attribute:
        return TensorType(i1, _dims(t)) if isinstance(t, TensorType) else t

    def verify_(self) -> None:
        _check_tensor(self, "operand #0 ('input')", self.input.type, FLOAT_TYPES)
        want = TensorType(i1, _dims(self.input.type))
        if self.result.type != want:
            raise VerifyException(f"'{self.name}' op result must be {want}, got {self.result.type}")


@irdl_op_definition
class IsNanOp(FloatTestOp):
    """x is NaN"""

    name = "fusion.isnan"


@irdl_op_definition
class IsInfOp(FloatTestOp):
    """x is +inf or -inf"""

    name = "fusion.isinf"


@irdl_op_definition
class IsFiniteOp(FloatTestOp):
    """x is neither NaN nor infinite"""

    name = "fusion.isfinite"


@irdl_op_definition
class IsPosInfOp(FloatTestOp):
    """x is +inf"""

    name = "fusion.isposinf"


@irdl_op_definition
class IsNegInfOp(FloatTestOp):
    """x is -inf"""

    name = "fusion.isneginf"


@irdl_op_definition
class SignbitOp(FloatTestOp):
    """x's sign bit is set (-0.0 and negative NaNs included, as torch.signbit)"""

    name = "fusion.signbit"


FLOAT_TEST_OPS = [IsNanOp, IsInfOp, IsFiniteOp, IsPosInfOp, IsNegInfOp, SignbitOp]


def _check_i1(op: Operation, what: str, t: Attribute) -> None:
    _check_tensor(op, what, t)
    if t.element_type != i1:
        raise VerifyException(f"'{op.name}' op {what} has element type {t.element_type}, expected i1 (a mask)")


@irdl_op_definition
class LogicalNotOp(_OneOperandForm, IRDLOperation):
    """not m, of an i1 mask"""

    name = "fusion.logical_not"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[input.type])

    def verify_(self) -> None:
        _check_i1(self, "operand #0 ('input')", self.input.type)
        if self.result.type != self.input.type:
            raise VerifyException(f"'{self.name}' op result type {self.result.type} must equal the operand type {self.input.type}")


class LogicalBinaryOp(_SameTypeBinary):
    """Elementwise and / or / xor of two i1 masks of one type."""

    def _check_element(self, what: str, t: Attribute) -> None:
        _check_i1(self, what, t)


@irdl_op_definition
class LogicalAndOp(LogicalBinaryOp):
    """a and b"""

    name = "fusion.logical_and"


@irdl_op_definition
class LogicalOrOp(LogicalBinaryOp):
    """a or b"""

    name = "fusion.logical_or"


@irdl_op_definition
class LogicalXorOp(LogicalBinaryOp):
    """a xor b (a != b)"""

    name = "fusion.logical_xor"


LOGICAL_OPS = [LogicalNotOp, LogicalAndOp, LogicalOrOp, LogicalXorOp]


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
        t = _check_tensor(self, "operand #1 ('lhs')", self.lhs.type, SELECT_TYPES)
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
class FullOp(IRDLOperation):
    """A tensor filled with one value: `fusion.full 2.0 : tensor<4x5xf32>`, `fusion.full -3 :
    tensor<4xi8>` (of an integer type or i1: an integer in its range, at most 2^53 in magnitude,
    since the value is held as a float64)."""

    name = "fusion.full"
    value = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: float, shape: Sequence[int], dtype: str | Attribute = "f32"):
        super().__init__(result_types=[tensor(shape, dtype)], properties={"value": FloatAttr(float(value), Float64Type())})

    def verify_(self) -> None:
        t = _check_tensor(self, "result", self.result.type, SELECT_TYPES)  # (every type)
        v = self.value.value.data
        et = t.element_type
        if isinstance(et, IntegerType) and not (math.isfinite(v) and v == int(v)):
            raise VerifyException(f"'fusion.full' op value {v} is not an integer, as its element type {et} needs")
        if isinstance(et, IntegerType):
            w = et.width.data
            lo, hi = (0, 2 ** w - 1) if is_unsigned(et) or w == 1 else (-(2 ** (w - 1)), 2 ** (w - 1) - 1)
            if not lo <= v <= hi:
                raise VerifyException(f"'fusion.full' op value {int(v)} is out of the range of {et} [{lo}, {hi}]")
            if abs(v) > 2 ** 53:
                raise VerifyException(f"'fusion.full' op value {int(v)} is beyond 2^53, where its float64 "
                                      "property would not hold it exactly")

    # Custom syntax: the value is a bare float literal, with inf and nan as keywords; a hex
    # integer literal is, as in MLIR, the bit pattern of the element type (0x7F800000 : f32 is inf).
    @classmethod
    def parse(cls, parser: Parser):
        start = parser.pos
        hex_bits = None
        neg = parser.parse_optional_punctuation("-") is not None
        if parser.parse_optional_keyword("inf"):
            v = math.inf
        elif parser.parse_optional_keyword("nan"):
            v = math.nan
        else:
            tok = parser._current_token  # its text tells a hex literal, as in xDSL's own float attribute parser
            v = parser.parse_number()
            if tok.text[:2] in ("0x", "0X"):
                hex_bits, hex_span = v, (start, tok.span.end)
                if neg:
                    parser.raise_error("a hexadecimal float literal is a bit pattern and takes no '-'", *hex_span)
            v = float(v)
        v = -v if neg else v
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if hex_bits is not None:
            v = _float_from_bits(parser, hex_bits, t, hex_span)
        op = cls.create(result_types=[t], properties={"value": FloatAttr(v, Float64Type())})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        v = self.value.value.data
        bits = _nan_bits(v, self.result.type) if math.isnan(v) else None
        if isinstance(self.result.type, TensorType) and isinstance(self.result.type.element_type, IntegerType) \
                and math.isfinite(v) and v == int(v):
            printer.print_string(f" {int(v)}")  # an integer type's value as an integer literal
        else:
            printer.print_string(f" {_float_text(v) if bits is None else bits}")
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


# (bits, mantissa bits) of the float types a hex literal may spell.
_FLOAT_BITS = {Float16Type: (16, 10), BFloat16Type: (16, 7), Float32Type: (32, 23), Float64Type: (64, 52)}


def _float_from_bits(parser: Parser, bits: int, t: Attribute, span: tuple[int, int]) -> float:
    """The value whose bit pattern in the element type of tensor type `t` is `bits`. A NaN keeps
    its sign and payload, widened into the f64 the op stores (the payload's top bits)."""
    elem = t.element_type if isinstance(t, TensorType) else t
    if type(elem) not in _FLOAT_BITS:
        parser.raise_error(f"a hexadecimal float literal needs a float element type, got {elem}", *span)
    width, mant = _FLOAT_BITS[type(elem)]
    if bits >= 1 << width:
        parser.raise_error(f"hexadecimal float literal 0x{bits:X} does not fit the {width} bits of {elem}", *span)
    exp_ones = (1 << (width - 1 - mant)) - 1
    frac = bits & ((1 << mant) - 1)
    if (bits >> mant) & exp_ones == exp_ones and frac:
        f64 = (bits >> (width - 1)) << 63 | 0x7FF << 52 | frac << (52 - mant)
        return struct.unpack("<d", f64.to_bytes(8, "little"))[0]
    if isinstance(elem, BFloat16Type):  # bf16 is the top half of an f32
        bits, width = bits << 16, 32
    return struct.unpack({16: "<e", 32: "<f", 64: "<d"}[width], bits.to_bytes(width // 8, "little"))[0]


def _nan_bits(v: float, t: Attribute) -> str | None:
    """NaN `v` as the hex bit pattern of `t`'s element type, or None where the `nan` keyword
    spells it (the positive quiet NaN without payload)."""
    elem = t.element_type if isinstance(t, TensorType) else t
    if type(elem) not in _FLOAT_BITS:
        return None
    width, mant = _FLOAT_BITS[type(elem)]
    f64 = int.from_bytes(struct.pack("<d", v), "little")
    frac = (f64 & ((1 << 52) - 1)) >> (52 - mant) or 1 << (mant - 1)  # a payload cut to nothing stays NaN
    if f64 >> 63 == 0 and frac == 1 << (mant - 1):
        return None
    bits = (f64 >> 63) << (width - 1) | ((1 << (width - 1 - mant)) - 1) << mant | frac
    return f"0x{bits:0{width // 4}X}"


def _float_text(v: float) -> str:
    """A float literal that the parser reads back to the same value (inf and nan as keywords)."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    s = repr(v)
    return s.replace("e", ".0e") if "e" in s and "." not in s else s


POINTWISE_OPS = tuple(UNARY_OPS + BINARY_OPS + FLOAT_TEST_OPS + LOGICAL_OPS + [CmpOp, WhereOp, CastOp, FullOp])
