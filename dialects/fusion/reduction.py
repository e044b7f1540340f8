"""Reduction `fusion` ops: reduce (sum, prod, max, min, any, all, argmax, argmin), welford and var_mean."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, Float32Type, Float64Type, IntegerAttr, StringAttr, TensorType, UnitAttr, i1, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .types import (
    DTYPE_NAMES,
    FLOAT_TYPES,
    INT_TYPES,
    stat_type,
    _check_dims_list,
    _check_tensor,
    _dims,
    _elem,
    _fmt,
    _i64_array,
    _parse_int_list,
    _print_attrs,
    _print_int_list,
)

REDUCE_KINDS = ("sum", "max", "min", "prod", "any", "all", "argmax", "argmin")
# What fusion.reduce takes: floats (accumulated in f32, f64 in f64), integers and masks (in i64 where they
# are added or multiplied). Welford and var_mean take floats only (torch refuses integers).
REDUCE_INPUT_TYPES = FLOAT_TYPES + INT_TYPES + (i1,)


def reduce_result_types(kind: str, et: Attribute) -> tuple[Attribute, ...]:
    """The element types a `fusion.reduce` of `kind` over elements of type `et` may have, the
    first being the default (torch's: a sum or product of integers or masks is i64; max and
    min keep the type, of masks they are any and all; any and all give masks, argmax and
    argmin i64 indices)."""
    if kind in ("any", "all"):
        return (i1,)
    if kind in ("argmax", "argmin"):
        return (i64,)
    if isinstance(et, Float64Type):
        return (et,)  # (accumulated in f64)
    if isinstance(et, FLOAT_TYPES):
        return (et, Float32Type()) if et != Float32Type() else (et,)
    if kind in ("sum", "prod"):
        return (i64,) if et in (i1, i64) else (i64, et)   # the input's type: the i64 result wrapped
    return (et,)


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

    def _verify_reduction(self, results: Sequence[SSAValue], names: Sequence[str],
                          allowed: tuple = FLOAT_TYPES) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type, allowed)
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

    Kinds: sum, prod, max, min (floats accumulated in f32, the result f32 or the input's type;
    f64 accumulated in f64, the result f64;
    integers and masks summed and multiplied in i64, wrapping, the result i64 or the input's
    type; max and min of integers in their type, of masks any and all); any and all (a mask:
    some / every element nonzero, NaN counting as nonzero); argmax and argmin (i64: the
    position of the first extreme element within the reduced dims, NaN counting as both the
    largest and the smallest; over one dim or over all of them, as torch's).
    """

    name = "fusion.reduce"
    kind = prop_def(StringAttr)
    result = result_def(TensorType)

    def __init__(self, kind: str, input: SSAValue, dims: Sequence[int], keepdim: bool = False, dtype: str | None = None):
        shape = _reduced_shape(_dims(input.type), dims, keepdim)
        props: dict[str, Attribute] = {"kind": StringAttr(kind), "dims": _i64_array(dims)}
        if keepdim:
            props["keepdim"] = UnitAttr()
        et = DTYPE_NAMES[dtype] if dtype else reduce_result_types(kind, _elem(input))[0]
        super().__init__(operands=[input], result_types=[TensorType(et, shape)], properties=props)

    def verify_(self) -> None:
        if self.kind.data not in REDUCE_KINDS:
            raise VerifyException(f"'fusion.reduce' op kind '{self.kind.data}' is not one of {', '.join(REDUCE_KINDS)}")
        kind, xt = self.kind.data, _elem(self.input)
        self._verify_reduction([self.result], ["result"], REDUCE_INPUT_TYPES)
        et, allowed = _elem(self.result), reduce_result_types(kind, xt)
        if et not in allowed:
            if isinstance(xt, FLOAT_TYPES) and kind in ("sum", "prod", "max", "min") and len(allowed) > 1:
                raise VerifyException(f"'fusion.reduce' op result element type {et} must be f32 or the input's {xt}")
            raise VerifyException(f"'fusion.reduce' op {kind} of {xt} has result element type {et}, expected "
                                  f"{' or '.join(str(a) for a in allowed)}")
        rank, dims = len(_dims(self.input.type)), self.reduced_dims
        if kind in ("argmax", "argmin") and len(dims) != 1 and sorted(dims) != list(range(rank)):
            raise VerifyException(f"'fusion.reduce' op {kind} reduces dims {dims} of {_fmt(self.input.type)}: "
                                  f"it takes one dim or all of them")

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
    """Welford statistics over `dims`: mean (avg), sum of squared deviations (M2) and count (N);
    avg and M2 are f32 (f64 for an f64 input, computed in f64).

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
        st = stat_type(_elem(input))
        super().__init__(operands=[input], result_types=[TensorType(st, shape), TensorType(st, shape), TensorType(i64, shape)],
                         properties=props)

    def verify_(self) -> None:
        self._verify_reduction([self.avg, self.m2, self.n], ["avg", "M2", "N"])
        st = stat_type(_elem(self.input))
        for r, n, et in ((self.avg, "avg", st), (self.m2, "M2", st), (self.n, "N", i64)):
            if _elem(r) != et:
                raise VerifyException(f"'fusion.welford' op result '{n}' must have element type {et}, got {_elem(r)}")

    @classmethod
    def parse(cls, parser: Parser):
        return _parse_multi_result_reduction(cls, parser, 3)

    def print(self, printer: Printer):
        _print_reduction_head(printer, self)


@irdl_op_definition
class VarMeanOp(_ReductionBase):
    """Variance (with Bessel-style `correction`) and mean over `dims`, accumulated in f32 (an f64
    input in f64, its results f64).

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
        st = stat_type(_elem(input))
        super().__init__(operands=[input], result_types=[TensorType(st, shape), TensorType(st, shape)], properties=props)

    def verify_(self) -> None:
        self._verify_reduction([self.var, self.mean], ["var", "mean"])
        if self.correction.value.data < 0:
            raise VerifyException(f"'fusion.var_mean' op correction must be >= 0, got {self.correction.value.data}")
        for r, n in ((self.var, "var"), (self.mean, "mean")):
            if _elem(r) != stat_type(_elem(self.input)):
                raise VerifyException(f"'fusion.var_mean' op result '{n}' must have element type "
                                      f"{stat_type(_elem(self.input))}, got {_elem(r)}")

    @classmethod
    def parse(cls, parser: Parser):
        def corr(p: Parser):
            p.parse_keyword("correction")
            return {"correction": IntegerAttr(p.parse_integer(), i64)}
        return _parse_multi_result_reduction(cls, parser, 2, corr)

    def print(self, printer: Printer):
        _print_reduction_head(printer, self, f" correction {self.correction.value.data}")

