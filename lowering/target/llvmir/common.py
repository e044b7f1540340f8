"""What every part of the translation shares: the error it raises and how it reads ops.

Ops may arrive registered (xDSL op classes) or in generic form without a registered definition,
so names and properties are read through these helpers rather than op-class attributes.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Attribute, Operation


class TranslationError(Exception):
    """An op, type or attribute the nvvm-level -> LLVM IR translation does not handle."""


def op_name(op: Operation) -> str:
    """The op's name, also for ops parsed in generic form without a registered definition."""
    name = getattr(op, "op_name", None)
    return name.data if isinstance(name, StringAttr) else op.name


def prop(op: Operation, name: str) -> Attribute | None:
    """A property or attribute of `op` (generic, unregistered ops keep them either way)."""
    if name in op.properties:
        return op.properties[name]
    return op.attributes.get(name)


def int_prop(op: Operation, name: str) -> int | None:
    """An integer property or attribute of `op`, or None when absent (or not an integer)."""
    attr = prop(op, name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None
