"""Creation `fusion` ops: `iota` (values from each element's index) and the random numbers
`uniform` and `normal` (values from each element's index, a seed and an offset).

None of them reads a tensor at the element's index: iota reads nothing, the random ops read two
0-d `tensor<i64>` operands, the seed and the offset, which are runtime values (function
arguments, so a new seed or offset needs no recompile; a `fusion.full` spells a fixed one).
Every element's value is a function of its row-major linear index in the result (`i`) and of
those operands alone, never of how a kernel splits the work: the reference interpreter and every
schedule compute the same numbers.

The random stream (this file is its one definition; runtime/philox.py computes it in numpy,
lowering/emitters/random.py in kernels). Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3", SC'11), key = (seed mod 2^32, seed >> 32), counter = (b mod 2^32, b >> 32,
offset mod 2^32, offset >> 32) for block number b, gives four 32-bit words w0..w3 per block:

* `uniform` of f32 / f16 / bf16 (`m` = 24 / 11 / 8 mantissa bits): element i takes block i / 4,
  word w[i % 4]; u = (w >> (32 - m)) * 2^-m, exact in the type, in [0, 1); the value is
  low + u * (high - low) computed in f32 (the product and the sum each rounded, no fma) and
  rounded to the type.
* `uniform` of f64: element i takes block i / 2, words a = w[2 (i % 2)] and b = w[2 (i % 2) + 1];
  u = (a * 2^21 + (b >> 11)) * 2^-53; low + u * (high - low) in f64.
* `normal` (f32, f16, bf16; Box-Muller): element i takes block i / 4 and the word pair
  a = w[2 p], b = w[2 p + 1] with p = (i % 4) / 2; u1 = ((a >> 8) + 1) * 2^-24 in (0, 1],
  u2 = (b >> 8) * 2^-24; r = sqrt(-2 log u1), t = 2 pi u2 (in f32); the standard normal value is
  r cos t for even i and r sin t for odd i; the value is mean + std * z in f32, rounded to the
  type. (The kernels' log, sin and cos are not the reference's to the bit: normal numbers agree
  to float tolerance, uniform ones bit for bit.)
* `normal` of f64: element i takes block i / 2; u1 = ((w0 * 2^21 + (w1 >> 11)) + 1) * 2^-53 in
  (0, 1], u2 = (w2 * 2^21 + (w3 >> 11)) * 2^-53; r = sqrt(-2 log u1), t = 2 pi u2 in f64 (the
  f64 log, sin and cos of lowering/target/llvmir/libm_f64.py); r cos t for even i, r sin t for
  odd i; mean + std * z in f64.

Different offsets give independent streams of 2^64 blocks each: a caller that draws again takes
the next offset (0, 1, 2, ...), whatever the size of the draws. This is not torch's stream
(torch.rand with the same seed gives other numbers).
"""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects.builtin import Float64Type, FloatAttr, IntegerType, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .pointwise import _float_text
from .types import FLOAT_TYPES, INT_TYPES, _check_tensor, _print_attrs, is_unsigned, tensor

# Philox 4x32's multipliers and Weyl key increments (Salmon et al., table 2 and section 4.2).
PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
PHILOX_ROUNDS = 10
# The mantissa bits of a uniform number of each float type (its values are exact in the type).
UNIFORM_BITS = {"f32": 24, "f16": 11, "bf16": 8, "f64": 53}


def elements_per_block(dtype: str) -> int:
    """How many consecutive elements one Philox block (four 32-bit words) serves."""
    return 2 if dtype == "f64" else 4


IOTA_TYPES = FLOAT_TYPES + INT_TYPES
UNIFORM_TYPES = FLOAT_TYPES
NORMAL_TYPES = FLOAT_TYPES  # (f64: Box-Muller in f64, with the f64 log, sin and cos of libm_f64)
_EXACT = 2.0 ** 53  # an integer parameter beyond it would not be held exactly by its f64 property


def _parse_real(parser: Parser, keyword: str) -> FloatAttr:
    parser.parse_keyword(keyword)
    neg = parser.parse_optional_punctuation("-") is not None
    v = float(parser.parse_number())
    return FloatAttr(-v if neg else v, Float64Type())


def _real_text(v: float, t: Attribute) -> str:
    et = t.element_type if isinstance(t, TensorType) else t
    if isinstance(et, IntegerType) and math.isfinite(v) and v == int(v):
        return str(int(v))
    return _float_text(v)


class _Params:
    """Two f64 parameters spelled `<k0> <v0> <k1> <v1>` after the operands."""

    PARAMS: ClassVar[tuple[str, str]]

    def _param(self, k: int) -> float:
        return self.properties[self.PARAMS[k]].value.data

    def _check_params(self) -> None:
        for k in self.PARAMS:
            v = self.properties[k].value.data
            if not math.isfinite(v):
                raise VerifyException(f"'{self.name}' op {k} {v} is not finite")

    def _print_params(self, printer: Printer) -> None:
        for k in range(2):
            printer.print_string(f" {self.PARAMS[k]} {_real_text(self._param(k), self.result.type)}")


@irdl_op_definition
class IotaOp(_Params, IRDLOperation):
    """`%r = fusion.iota start 0 step 2 : tensor<4x5xi32>`: element i (the row-major linear
    index) is start + i * step (nvFuser's iota, torch.arange; reshape a 1-d one for any shape).
    Floats compute f32(i) * step + start in f32 (each step rounded, then to f16/bf16), f64 in
    f64; integers in i64, wrapping to the type (start and step must be integers, at most 2^53)."""

    name = "fusion.iota"
    PARAMS: ClassVar[tuple[str, str]] = ("start", "step")
    start = prop_def(FloatAttr)
    step = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, shape, dtype: str | Attribute, start: float = 0.0, step: float = 1.0):
        super().__init__(result_types=[tensor(shape, dtype)],
                         properties={"start": FloatAttr(float(start), Float64Type()),
                                     "step": FloatAttr(float(step), Float64Type())})

    def verify_(self) -> None:
        t = _check_tensor(self, "result", self.result.type, IOTA_TYPES)
        self._check_params()
        if isinstance(t.element_type, IntegerType):
            for k in self.PARAMS:
                v = self.properties[k].value.data
                if v != int(v) or abs(v) > _EXACT:
                    raise VerifyException(f"'fusion.iota' op {k} {v} must be an integer of at most 2^53 in "
                                          f"magnitude for element type {t.element_type}")
            if is_unsigned(t.element_type) and self._param(0) < 0:
                raise VerifyException(f"'fusion.iota' op start {int(self._param(0))} is negative for the unsigned "
                                      f"element type {t.element_type}")

    @classmethod
    def parse(cls, parser: Parser):
        start, step = _parse_real(parser, "start"), _parse_real(parser, "step")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls.create(result_types=[t], properties={"start": start, "step": step})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        self._print_params(printer)
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


class RandomOp(_Params, IRDLOperation):
    """`%r = fusion.<op> %seed, %offset <p0> <v0> <p1> <v1> : tensor<...>`: random numbers of the
    result's type from the stream the module docstring defines; seed and offset are 0-d
    tensor<i64> values (read as unsigned 64-bit words)."""

    ELEMENTS: ClassVar[tuple]
    seed = operand_def(TensorType)
    offset = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())  # (a function of its operands: the same seed and offset, the same numbers)

    def __init__(self, seed: SSAValue, offset: SSAValue, shape, dtype: str | Attribute, p0: float, p1: float):
        super().__init__(operands=[seed, offset], result_types=[tensor(shape, dtype)],
                         properties={self.PARAMS[0]: FloatAttr(float(p0), Float64Type()),
                                     self.PARAMS[1]: FloatAttr(float(p1), Float64Type())})

    def verify_(self) -> None:
        for k, (what, v) in enumerate((("seed", self.seed), ("offset", self.offset))):
            if v.type != TensorType(i64, []):
                raise VerifyException(f"'{self.name}' op operand #{k} ('{what}') has type {v.type}, expected "
                                      "tensor<i64> (a 0-d i64 tensor: the seed and offset are runtime values)")
        _check_tensor(self, "result", self.result.type, self.ELEMENTS)
        self._check_params()

    @classmethod
    def parse(cls, parser: Parser):
        seed = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        offset = parser.parse_unresolved_operand()
        p0, p1 = _parse_real(parser, cls.PARAMS[0]), _parse_real(parser, cls.PARAMS[1])
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        scalar = TensorType(i64, [])
        op = cls.create(operands=[parser.resolve_operand(seed, scalar), parser.resolve_operand(offset, scalar)],
                        result_types=[t], properties={cls.PARAMS[0]: p0, cls.PARAMS[1]: p1})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.seed)
        printer.print_string(", ")
        printer.print_operand(self.offset)
        self._print_params(printer)
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class UniformOp(RandomOp):
    """Uniform random numbers in [low, high) (the rounding of low + u * (high - low) may reach
    high, as torch's may); f32, f16, bf16 or f64. `low 0.0 high 1.0` is torch.rand."""

    name = "fusion.uniform"
    ELEMENTS: ClassVar[tuple] = UNIFORM_TYPES
    PARAMS: ClassVar[tuple[str, str]] = ("low", "high")
    low = prop_def(FloatAttr)
    high = prop_def(FloatAttr)


@irdl_op_definition
class NormalOp(RandomOp):
    """Normal random numbers of mean `mean` and standard deviation `std` (Box-Muller); f32, f16
    or bf16. `mean 0.0 std 1.0` is torch.randn."""

    name = "fusion.normal"
    ELEMENTS: ClassVar[tuple] = NORMAL_TYPES
    PARAMS: ClassVar[tuple[str, str]] = ("mean", "std")
    mean = prop_def(FloatAttr)
    std = prop_def(FloatAttr)


RANDOM_OPS = (UniformOp, NormalOp)
CREATION_OPS = (IotaOp, UniformOp, NormalOp)
