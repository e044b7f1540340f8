"""Programmatic dependent launch (sm_90): a kernel that overlaps the launch of the one before it.

Kernels launched one after another on a stream normally start only once the previous kernel
has finished and its writes are flushed, and the launch itself (CTAs dispatched, prologue) is
paid in the gap. A launch marked as dependent (`fuser.dependent_launch` on its `sched.launch`,
placed by the pass `sched-dependent-launch`) may start while the previous kernel still runs:
- `sched.griddepcontrol wait` blocks the thread until every kernel it depends on has completed
  and its memory operations are visible (PTX `griddepcontrol.wait`); nothing before it may
  touch memory that an earlier kernel writes or reads;
- `sched.griddepcontrol launch_dependents` lets the next kernel be dispatched once every CTA
  of this one has executed it or exited (PTX `griddepcontrol.launch_dependents`); it orders no
  memory, so it may come anywhere.
Without the dependent-launch attribute on the launch both are no-ops, so a kernel that holds
them is correct however it is launched.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import StringAttr
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from fuser.dialects.keyword_syntax import keyword_error, parse_keyword
from fuser.dialects.sched.core import KernelOp

GRIDDEP_KINDS = ("wait", "launch_dependents")


@irdl_op_definition
class GridDepControlOp(IRDLOperation):
    """`sched.griddepcontrol wait` | `sched.griddepcontrol launch_dependents` (see the module)."""

    name = "sched.griddepcontrol"
    VERIFY_READS_CONTEXT: ClassVar[bool] = True  # the enclosing kernel (dialects/ir.py)
    kind = prop_def(StringAttr)

    def __init__(self, kind: str):
        super().__init__(properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        if self.kind.data not in GRIDDEP_KINDS:
            raise VerifyException(keyword_error(self.name, "kind", GRIDDEP_KINDS, self.kind.data))
        p = self.parent_op()
        while p is not None and not isinstance(p, KernelOp):
            p = p.parent_op()
        if p is None and self.parent_op() is not None:
            raise VerifyException(f"'{self.name}' op must be inside a sched.kernel")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        op = cls(parse_keyword(parser, cls.name, "kind", GRIDDEP_KINDS))
        op.attributes.update(parser.parse_optional_attr_dict())
        return op
