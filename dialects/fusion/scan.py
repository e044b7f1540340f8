"""The scan `fusion` op: inclusive prefix sums, products, maxima and minima along a tensor's
innermost dim (torch's cumsum, cumprod, cummax and cummin values)."""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, i1, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .reduction import reduce_result_types
from .types import DTYPE_NAMES, FLOAT_TYPES, INT_TYPES, _check_innermost_row_op, _check_tensor, _dims, _elem

SCAN_KINDS = ("sum", "prod", "max", "min")
# What fusion.scan takes: floats (scanned in f32, f64 in f64), integers and masks (summed and multiplied in
# i64, as torch's cumsum/cumprod; max and min in their order).
SCAN_INPUT_TYPES = FLOAT_TYPES + INT_TYPES + (i1,)


def scan_result_types(kind: str, et: Attribute) -> tuple[Attribute, ...]:
    """The element types a `fusion.scan` of `kind` over elements of type `et` may have, the
    first being the default, as torch's: a running sum or product of integers or masks is i64
    (or the input's type, wrapped), of floats the input's type (or f32); a running max or min
    keeps the type. (The same rule as `fusion.reduce`'s.)"""
    return reduce_result_types(kind, et)


@irdl_op_definition
class ScanOp(IRDLOperation):
    """`%c = fusion.scan sum %x dim 1 : tensor<3x4xbf16> to tensor<3x4xbf16>`.

    The inclusive scan of `kind` along dim `dim`, which must be the innermost: element i of a
    row is the sum (product, maximum, minimum) of its elements 0..i. Floats are scanned in f32 (f64 in f64)
    and each result rounded to the result type (a running sum starts from +0.0, as torch's CPU
    cumsum: it is never -0.0); integers and masks are summed and multiplied in
    i64, wrapping (the result i64, or the input's type wrapped), and their max and min taken in
    their order (of masks: a running any and all). A running max (min) of floats is torch's
    cummax (cummin) value: NaN, once seen, is the result from there on, and of equal elements
    the later one is taken (so -0.0 after 0.0 gives -0.0).
    """

    name = "fusion.scan"
    kind = prop_def(StringAttr)
    dim = prop_def(IntegerAttr)
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, kind: str, input: SSAValue, dim: int = -1, dtype: str | None = None):
        shape = list(_dims(input.type))
        if dim < 0:
            dim += len(shape)
        et = DTYPE_NAMES[dtype] if dtype else scan_result_types(kind, _elem(input))[0]
        super().__init__(operands=[input], result_types=[TensorType(et, shape)],
                         properties={"kind": StringAttr(kind), "dim": IntegerAttr(dim, i64)})

    @property
    def scan_dim(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        kind = self.kind.data
        if kind not in SCAN_KINDS:
            raise VerifyException(f"'fusion.scan' op kind '{kind}' is not one of {', '.join(SCAN_KINDS)}")
        t = _check_tensor(self, "operand #0 ('input')", self.input.type, SCAN_INPUT_TYPES)
        _check_innermost_row_op(self, t, self.scan_dim, "scan", "scans", "scanned", "fuser.cumsum and its siblings")
        rt = _check_tensor(self, "result 'result'", self.result.type)
        if _dims(rt) != _dims(t):
            raise VerifyException(f"'fusion.scan' op result 'result' has shape {list(_dims(rt))}, expected "
                                  f"{list(_dims(t))} (the input's)")
        et, xt = _elem(self.result), _elem(self.input)
        allowed = scan_result_types(kind, xt)
        if et not in allowed:
            raise VerifyException(f"'fusion.scan' op {kind} of {xt} has result element type {et}, expected "
                                  f"{' or '.join(str(a) for a in allowed)}")

    @classmethod
    def parse(cls, parser: Parser):
        kind = parser.parse_identifier()
        x = parser.parse_unresolved_operand()
        parser.parse_keyword("dim")
        dim = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        xt = parser.parse_type()
        parser.parse_keyword("to")
        rt = parser.parse_type()
        op = cls.create(operands=[parser.resolve_operand(x, xt)], result_types=[rt],
                        properties={"kind": StringAttr(kind), "dim": IntegerAttr(dim, i64)})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(f" {self.kind.data} ")
        printer.print_operand(self.input)
        printer.print_string(f" dim {self.scan_dim}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" to ")
        printer.print_attribute(self.result.type)
