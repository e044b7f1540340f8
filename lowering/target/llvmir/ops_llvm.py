"""Handlers for the `llvm` dialect's memory, aggregate, call and inline-asm ops, and for
`llvm.intr.*` intrinsics (its arithmetic, casts, select and constants are in ops_arith.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import DenseArrayBase, StringAttr, SymbolRefAttr
from xdsl.dialects.llvm import LLVMPointerType
from xdsl.ir import Operation

from .common import TranslationError, int_prop, op_name, prop
from .llvm_types import escape, llvm_type, mangle

if TYPE_CHECKING:
    from .function import FunctionTranslator

# memory


def _gep(ft: FunctionTranslator, op: Operation) -> None:
    ptr, *dynamic = op.operands
    raw = prop(op, "rawConstantIndices")
    raw_indices = list(raw.iter_values()) if isinstance(raw, DenseArrayBase) else []
    dyn = iter(dynamic)
    indices = []
    for idx in raw_indices:
        if idx == -2147483648:  # GEP_USE_SSA_VAL: take the next SSA index
            indices.append(ft.tv(next(dyn)))
        else:
            indices.append(f"i32 {idx}")
    inbounds = "inbounds " if prop(op, "inbounds") is not None else ""
    elem = llvm_type(prop(op, "elem_type"))
    text = f"getelementptr {inbounds}{elem}, {ft.tv(ptr)}, " + ", ".join(indices)
    ft.set_result(op, ft.e.inst(text, "p"))


def _mem_suffix(ft: FunctionTranslator, op: Operation) -> str:
    """`, align N` and `!nontemporal` / `!invariant.load` metadata of a load or store."""
    align = int_prop(op, "alignment")
    text = f", align {align}" if align else ""
    if prop(op, "nontemporal") is not None:
        text += ", !nontemporal " + ft.module.metadata("!{i32 1}")
    if prop(op, "invariant") is not None:
        text += ", !invariant.load " + ft.module.metadata("!{}")
    return text


def _check_ordering(op: Operation) -> None:
    if int_prop(op, "ordering"):
        raise TranslationError("atomic loads/stores are not supported")


def _load(ft: FunctionTranslator, op: Operation) -> None:
    _check_ordering(op)
    volatile = "volatile " if prop(op, "volatile_") is not None else ""
    ty = llvm_type(op.results[0].type)
    ptr = ft.tv(op.operands[0])
    ft.set_result(op, ft.e.inst(f"load {volatile}{ty}, {ptr}{_mem_suffix(ft, op)}"))


def _store(ft: FunctionTranslator, op: Operation) -> None:
    _check_ordering(op)
    volatile = "volatile " if prop(op, "volatile_") is not None else ""
    value, ptr = op.operands
    ft.e.emit(f"store {volatile}{ft.tv(value)}, {ft.tv(ptr)}{_mem_suffix(ft, op)}")


def _alloca(ft: FunctionTranslator, op: Operation) -> None:
    elem = llvm_type(prop(op, "elem_type"))
    align = int_prop(op, "alignment")
    text = f"alloca {elem}, {ft.tv(op.operands[0])}" + (f", align {align}" if align else "")
    res_type = op.results[0].type
    space = getattr(getattr(res_type, "addr_space", None), "data", 0)
    if space:
        text += f", addrspace({space})"
    ft.set_result(op, ft.e.inst(text, "p"))


# values without instructions


def _addressof(ft: FunctionTranslator, op: Operation) -> None:
    ref = prop(op, "global_name")
    if not isinstance(ref, SymbolRefAttr):
        raise TranslationError("missing global_name")
    ft.set_result(op, "@" + ref.root_reference.data)


def _undef(ft: FunctionTranslator, op: Operation) -> None:
    ft.set_result(op, "undef")


def _poison(ft: FunctionTranslator, op: Operation) -> None:
    ft.set_result(op, "poison")


def _zero(ft: FunctionTranslator, op: Operation) -> None:
    t = op.results[0].type
    ft.set_result(op, "null" if isinstance(t, LLVMPointerType) else "zeroinitializer")


# vectors and aggregates


def _extractelement(ft: FunctionTranslator, op: Operation) -> None:
    vec, pos = op.operands
    ft.set_result(op, ft.e.inst(f"extractelement {ft.tv(vec)}, {ft.tv(pos)}"))


def _insertelement(ft: FunctionTranslator, op: Operation) -> None:
    if hasattr(op, "vector") and hasattr(op, "value"):
        vec, value, pos = op.vector, op.value, op.index
    else:  # generic form, upstream operand order
        vec, value, pos = op.operands
    ft.set_result(op, ft.e.inst(f"insertelement {ft.tv(vec)}, {ft.tv(value)}, {ft.tv(pos)}"))


def _extractvalue(ft: FunctionTranslator, op: Operation) -> None:
    pos = ", ".join(str(i) for i in prop(op, "position").iter_values())
    ft.set_result(op, ft.e.inst(f"extractvalue {ft.tv(op.operands[0])}, {pos}"))


def _insertvalue(ft: FunctionTranslator, op: Operation) -> None:
    container, value = op.operands
    pos = ", ".join(str(i) for i in prop(op, "position").iter_values())
    ft.set_result(op, ft.e.inst(f"insertvalue {ft.tv(container)}, {ft.tv(value)}, {pos}"))


# calls


def _inline_asm(ft: FunctionTranslator, op: Operation) -> None:
    asm, constraints = prop(op, "asm_string"), prop(op, "constraints")
    if not isinstance(asm, StringAttr) or not isinstance(constraints, StringAttr):
        raise TranslationError("missing asm_string / constraints")
    ret = llvm_type(op.results[0].type) if op.results else "void"
    flags = ""
    if prop(op, "has_side_effects") is not None:
        flags += "sideeffect "
    if prop(op, "is_align_stack") is not None:
        flags += "alignstack "
    if int_prop(op, "asm_dialect") == 1:
        flags += "inteldialect "
    args = ", ".join(ft.tv(x) for x in op.operands)
    text = f'call {ret} asm {flags}"{escape(asm.data)}", "{escape(constraints.data)}"({args})'
    if op.results:
        ft.set_result(op, ft.e.inst(text))
    else:
        ft.e.emit(text)


def _call(ft: FunctionTranslator, op: Operation) -> None:
    callee = prop(op, "callee")
    if not isinstance(callee, SymbolRefAttr):
        raise TranslationError("indirect calls are not supported")
    ret = llvm_type(op.results[0].type) if op.results else "void"
    args = [(llvm_type(x.type), ft.v(x)) for x in op.operands]
    value = ft.e.call(ret, callee.root_reference.data, args, intrinsic=False)
    if op.results:
        ft.set_result(op, value)


def _intrinsic(ft: FunctionTranslator, op: Operation) -> None:
    """`llvm.intr.<name>` -> a call of `llvm.<name>.<mangled result type>`."""
    ty = llvm_type(op.results[0].type) if op.results else "void"
    base = "llvm." + op_name(op).removeprefix("llvm.intr.")
    fn = f"{base}.{mangle(ty)}"
    value = ft.e.call(ty, fn, [(llvm_type(x.type), ft.v(x)) for x in op.operands])
    if op.results:
        ft.set_result(op, value)


def _return(ft: FunctionTranslator, op: Operation) -> None:
    ft.e.emit(f"ret {ft.tv(op.operands[0])}" if op.operands else "ret void")


HANDLERS: dict[str, Callable[[FunctionTranslator, Operation], None]] = {
    "llvm.getelementptr": _gep,
    "llvm.load": _load,
    "llvm.store": _store,
    "llvm.alloca": _alloca,
    "llvm.mlir.addressof": _addressof,
    "llvm.mlir.undef": _undef,
    "llvm.mlir.poison": _poison,
    "llvm.mlir.zero": _zero,
    "llvm.extractelement": _extractelement,
    "llvm.insertelement": _insertelement,
    "llvm.extractvalue": _extractvalue,
    "llvm.insertvalue": _insertvalue,
    "llvm.inline_asm": _inline_asm,
    "llvm.call": _call,
    "llvm.return": _return,
}
PREFIX_HANDLERS: tuple[tuple[str, Callable[[FunctionTranslator, Operation], None]], ...] = (
    ("llvm.intr.", _intrinsic),
)
