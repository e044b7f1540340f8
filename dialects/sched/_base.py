"""Building blocks shared by the sched op modules (private to the package).

- assembly helpers: integer lists `[a, b, c]` and indexed operands `%buf[%i, %j]`;
- operand checks: a shared-memory buffer with its indices, an mbarrier buffer;
- small op bases: ops with no operands (`sched.barrier`-like), and `wait_group N` ops.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, MemRefType, i64
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from fuser.dialects.sched.types import SHARED, memory_space

# ------------------------------------------------------------ assembly helpers


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _print_list(printer: Printer, vals: Sequence[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in vals) + "]")


def _parse_list(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def _parse_indexed(parser: Parser):
    v = parser.parse_unresolved_operand()
    idx = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
    return v, idx


def _print_indexed(printer: Printer, v: SSAValue, idx: Sequence[SSAValue]) -> None:
    printer.print_operand(v)
    printer.print_string("[")
    printer.print_list(idx, printer.print_operand)
    printer.print_string("]")


# -------------------------------------------------------------- operand checks


def _check_smem(op: IRDLOperation, what: str, buf: SSAValue, indices: Sequence[SSAValue]) -> MemRefType:
    t = buf.type
    if not isinstance(t, MemRefType) or memory_space(t) != SHARED:
        raise VerifyException(f"'{op.name}' op {what} must be a shared-memory (space 3) memref, got {t}")
    if len(indices) != t.get_num_dims():
        raise VerifyException(f"'{op.name}' op {what} has {len(indices)} indices for the rank-{t.get_num_dims()} buffer {t}")
    return t


def _check_mbarrier(op: IRDLOperation, buf: SSAValue, index: SSAValue | None = None) -> None:
    t = buf.type
    if not isinstance(t, MemRefType) or memory_space(t) != SHARED or t.element_type != i64 or t.get_num_dims() != 1:
        raise VerifyException(f"'{op.name}' op barrier operand must be a 1-D shared-memory i64 buffer "
                              f"(memref<Nxi64, 3>), got {t}")


# ------------------------------------------------------------------- op bases


class _NoOperandOp(IRDLOperation):
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


class _GroupCountOp(IRDLOperation):
    """Base of the `wait_group N` ops."""

    pending = prop_def(IntegerAttr)

    def _check_pending(self) -> None:
        n = self.pending.value.data
        if not 0 <= n <= 7:
            raise VerifyException(f"'{self.name}' op pending count {n} must be in 0..7")
