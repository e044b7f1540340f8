"""`FunctionTranslator`: the body of one `llvm.func` as LLVM IR instructions.

It names SSA values, walks blocks and regions, and dispatches each op by name to a handler
`handler(translator, op)`. The handlers live beside the dialect they translate (ops_arith.py,
ops_scf.py, ops_llvm.py, ops_nvvm.py), each module exporting a `HANDLERS` table (op name ->
handler) and, where a family of ops shares a name prefix, `PREFIX_HANDLERS`; this module merges
them into one table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.ir import Block, Operation, Region, SSAValue

from . import ops_arith, ops_llvm, ops_nvvm, ops_scf
from .common import TranslationError, op_name
from .emitter import Emitter
from .llvm_types import llvm_type

if TYPE_CHECKING:
    from .module import ModuleTranslator

Handler = Callable[["FunctionTranslator", Operation], None]


def _merge(*tables: dict[str, Handler]) -> dict[str, Handler]:
    merged: dict[str, Handler] = {}
    for table in tables:
        for name, handler in table.items():
            if name in merged:
                raise AssertionError(f"two handlers for '{name}'")
            merged[name] = handler
    return merged


# op name -> handler, and (name prefix, handler) for ops not found there
HANDLERS: dict[str, Handler] = _merge(
    ops_arith.HANDLERS, ops_scf.HANDLERS, ops_llvm.HANDLERS, ops_nvvm.HANDLERS
)
PREFIX_HANDLERS: tuple[tuple[str, Handler], ...] = (
    *ops_nvvm.PREFIX_HANDLERS,
    *ops_llvm.PREFIX_HANDLERS,
)


def handler_for(name: str) -> Handler | None:
    """The handler translating ops called `name`, or None if the translation has none."""
    handler = HANDLERS.get(name)
    if handler is None:
        handler = next((h for prefix, h in PREFIX_HANDLERS if name.startswith(prefix)), None)
    return handler


class FunctionTranslator:
    def __init__(self, module: ModuleTranslator, func: Operation, name: str):
        self.module = module
        self.func = func
        self.name = name
        self.e = Emitter(module, name)
        self.values: dict[SSAValue, str] = {}
        self.subprogram = module.subprogram(func, name)  # its debug-info scope, or "" (no location)

    # --- values -------------------------------------------------------------------------
    def v(self, value: SSAValue) -> str:
        """The LLVM name (or literal) of an SSA value."""
        try:
            return self.values[value]
        except KeyError:
            raise TranslationError(f"value {value} used before definition (in @{self.name})")

    def tv(self, value: SSAValue) -> str:
        """`type name` of an SSA value, as instruction operands spell it."""
        return f"{llvm_type(value.type)} {self.v(value)}"

    def set_result(self, op: Operation, value: str) -> None:
        self.values[op.results[0]] = value

    def error(self, op: Operation, why: str = "") -> TranslationError:
        where = f"in @{self.name}"
        loc = getattr(op, "location", None)
        if hasattr(loc, "filename") and hasattr(loc, "line"):
            where += f" at {loc.filename.data}:{loc.line.data}:{loc.column.data}"
        return TranslationError(f"cannot translate '{op_name(op)}' ({where})" + (f": {why}" if why else ""))

    # --- regions ------------------------------------------------------------------------
    def emit_block(self, block: Block) -> list[SSAValue]:
        """Emit the ops of `block`; return the operands of its `scf.yield` (if any)."""
        for op in block.ops:
            if op_name(op) == "scf.yield":
                return list(op.operands)
            self.emit_op(op)
        return []

    def emit_region(self, region: Region) -> list[SSAValue]:
        if len(region.blocks) != 1:
            raise TranslationError(f"only single-block regions are supported (in @{self.name})")
        return self.emit_block(region.blocks.first)

    def translate(self) -> list[str]:
        """The lines of the function body (the caller writes the `define` line and braces)."""
        body = self.func.regions[0]
        if len(body.blocks) != 1:
            raise TranslationError(
                f"llvm.func @{self.name}: only single-block bodies are supported "
                "(use scf.for / scf.if for control flow)"
            )
        block = body.blocks.first
        for i, arg in enumerate(block.args):
            self.values[arg] = f"%arg{i}"
        self.e.start_block("entry")
        self.emit_block(block)
        return self.e.lines

    # --- ops ----------------------------------------------------------------------------
    def emit_op(self, op: Operation) -> None:
        name = op_name(op)
        outer = self.e.dbg  # restored after: a loop's closing instructions belong to the loop
        self.e.dbg = self.module.debug_location(op, self.subprogram) or outer
        try:
            handler = handler_for(name)
            if handler is None:
                raise self.error(op)
            handler(self, op)
        except TranslationError as err:
            if f"(in @{self.name}" in str(err):
                raise
            raise self.error(op, str(err)) from err
        except (AttributeError, KeyError, IndexError, ValueError, TypeError) as err:
            raise self.error(op, f"malformed op ({type(err).__name__}: {err})") from err
        finally:
            self.e.dbg = outer
