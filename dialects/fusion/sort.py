"""The sort `fusion` op: each row along a tensor's innermost dim sorted, with the i64 index each
value came from (torch's sort, argsort and topk).

`%v, %i = fusion.sort %x dim 1 : tensor<4x100xf32> to tensor<4x100xf32>, tensor<4x100xi64>`
sorts ascending; `descending` sorts the other way; `k 8` keeps the first 8 of each sorted row
(torch.topk: `descending k 8` is topk(x, 8, largest=True), `k 8` alone is largest=False).
"""

from __future__ import annotations

from xdsl.dialects.builtin import Float64Type, IntegerAttr, TensorType, UnitAttr, i1, i64
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .types import FLOAT_TYPES, INT_TYPES, _check_innermost_row_op, _check_tensor, _dims, _elem, _fmt

SORT_INPUT_TYPES = FLOAT_TYPES + (Float64Type,) + INT_TYPES + (i1,)
"""What fusion.sort takes: every float type, the integers and masks."""


@irdl_op_definition
class SortOp(IRDLOperation):
    """`%v, %i = fusion.sort %x dim 1 [descending] [k K] : tensor<RxNxT> to tensor<RxKxT>, tensor<RxKxi64>`.

    Sorts each row of `input` along dim `dim`, which must be the innermost, ascending (or
    `descending`), stably: elements that compare equal keep their order in the row (torch's
    sort(stable=True), in both directions). `values` holds the sorted elements, `indices` the
    position (i64) each came from. Floats are ordered as torch orders them: NaN is greater than
    everything (first when descending), all NaNs are equal, and -0.0 equals 0.0 (each value keeps
    its own sign and NaN bits: they are the input's elements, moved). Masks order false < true;
    u8 is unsigned. With `k K` only the first K of each sorted row
    are results (0 <= K <= the row's length): torch.topk(x, K, largest=descending), ties in the order the stable sort gives.
    """

    name = "fusion.sort"
    dim = prop_def(IntegerAttr)
    descending = opt_prop_def(UnitAttr)
    k = opt_prop_def(IntegerAttr)
    input = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, dim: int = -1, descending: bool = False, k: int | None = None):
        shape = list(_dims(input.type))
        if dim < 0:
            dim += len(shape)
        if k is not None and shape:
            shape[-1] = k
        props = {"dim": IntegerAttr(dim, i64)}
        if descending:
            props["descending"] = UnitAttr()
        if k is not None:
            props["k"] = IntegerAttr(k, i64)
        super().__init__(operands=[input], result_types=[TensorType(_elem(input), shape), TensorType(i64, shape)],
                         properties=props)

    @property
    def sort_dim(self) -> int:
        return self.dim.value.data

    @property
    def is_descending(self) -> bool:
        return self.descending is not None

    @property
    def row_length(self) -> int:
        return _dims(self.input.type)[-1]

    @property
    def kept(self) -> int:
        """The elements of each sorted row that are results: k, or the whole row."""
        return self.k.value.data if self.k is not None else self.row_length

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type, SORT_INPUT_TYPES)
        _check_innermost_row_op(self, t, self.sort_dim, "sort", "sorts", "sorted", "fuser.sort and fuser.topk")
        n = _dims(t)[-1]
        if self.k is not None:
            k = self.k.value.data
            if not 0 <= k <= n:
                raise VerifyException(f"'fusion.sort' op k {k} is out of range for operand #0 ('input') "
                                      f"{_fmt(t)}: k must be in [0, {n}] (the sorted dim's extent)")
        want = list(_dims(t)[:-1]) + [self.kept]
        for i, (what, r) in enumerate((("values", self.values), ("indices", self.indices))):
            rt = _check_tensor(self, f"result #{i} ('{what}')", r.type)
            if list(_dims(rt)) != want:
                raise VerifyException(f"'fusion.sort' op result #{i} ('{what}') has shape {list(_dims(rt))}, "
                                      f"expected {want}" + (" (the input's with k along the sorted dim)"
                                                            if self.k is not None else " (the input's)"))
        if _elem(self.values) != _elem(t):
            raise VerifyException(f"'fusion.sort' op result #0 ('values') has element type {_elem(self.values)}, "
                                  f"expected {_elem(t)} (the input's)")
        if _elem(self.indices) != i64:
            raise VerifyException(f"'fusion.sort' op result #1 ('indices') has element type {_elem(self.indices)}, "
                                  f"expected i64")

    @classmethod
    def parse(cls, parser: Parser):
        x = parser.parse_unresolved_operand()
        parser.parse_keyword("dim")
        props = {"dim": IntegerAttr(parser.parse_integer(), i64)}
        if parser.parse_optional_keyword("descending") is not None:
            props["descending"] = UnitAttr()
        if parser.parse_optional_keyword("k") is not None:
            props["k"] = IntegerAttr(parser.parse_integer(), i64)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        xt = parser.parse_type()
        parser.parse_keyword("to")
        vt = parser.parse_type()
        parser.parse_punctuation(",")
        it = parser.parse_type()
        op = cls.create(operands=[parser.resolve_operand(x, xt)], result_types=[vt, it], properties=props)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f" dim {self.sort_dim}")
        if self.is_descending:
            printer.print_string(" descending")
        if self.k is not None:
            printer.print_string(f" k {self.k.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" to ")
        printer.print_attribute(self.values.type)
        printer.print_string(", ")
        printer.print_attribute(self.indices.type)
