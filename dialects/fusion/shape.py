"""Shape `fusion` ops: broadcast, reshape, permute, and segment_set (a forced kernel boundary)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from .types import (
    _CONVERT_FORMAT,
    _check_dims_list,
    _check_tensor,
    _ConvertLike,
    _ConvertLikeExtra,
    _dims,
    _elem,
    _i64_array,
    _parse_int_list,
    _print_int_list,
)

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


SHAPE_OPS = (BroadcastOp, ReshapeOp, PermuteOp)
