"""Handlers for structured control flow: `scf.for` and `scf.if` become LLVM basic blocks.

- `scf.for` becomes a header/body/exit loop with phi nodes in the header for the induction
  variable and the iteration arguments (signed compare unless `unsignedCmp`).
- `scf.if` becomes branches and a merge block with a phi per result; the else block is left out
  when it neither yields values nor holds ops.
(`scf.yield` is consumed by FunctionTranslator.emit_block, which returns its operands.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.ir import Operation

from .common import op_name, prop
from .llvm_types import llvm_type

if TYPE_CHECKING:
    from .function import FunctionTranslator


def _for(ft: FunctionTranslator, op: Operation) -> None:
    e = ft.e
    lb, ub, step, *inits = op.operands
    body = op.regions[0].blocks.first
    iv, *iter_args = body.args
    ity = llvm_type(iv.type)
    pre = e.block
    header, body_label, exit_label = e.label("for.header"), e.label("for.body"), e.label("for.exit")
    e.emit(f"br label %{header}")
    e.start_block(header)
    phi_at = len(e.lines)
    iv_name = e.fresh("iv")
    ft.values[iv] = iv_name
    arg_names = []
    for arg in iter_args:
        ft.values[arg] = e.fresh("acc")
        arg_names.append(ft.values[arg])
    pred = "ult" if prop(op, "unsignedCmp") is not None else "slt"
    cond = e.inst(f"icmp {pred} {ity} {iv_name}, {ft.v(ub)}")
    e.emit(f"br i1 {cond}, label %{body_label}, label %{exit_label}")
    e.start_block(body_label)
    yielded = ft.emit_block(body)
    nxt = e.inst(f"add {ity} {iv_name}, {ft.v(step)}")
    latch = e.block
    e.emit(f"br label %{header}")
    # The phis go at the top of the header, now that the latch values are known.
    phis = [f"  {iv_name} = phi {ity} [ {ft.v(lb)}, %{pre} ], [ {nxt}, %{latch} ]"]
    for arg, name, init, y in zip(iter_args, arg_names, inits, yielded, strict=True):
        t = llvm_type(arg.type)
        phis.append(f"  {name} = phi {t} [ {ft.v(init)}, %{pre} ], [ {ft.v(y)}, %{latch} ]")
    e.lines[phi_at:phi_at] = phis
    e.start_block(exit_label)
    for res, name in zip(op.results, arg_names, strict=True):
        ft.values[res] = name


def _if(ft: FunctionTranslator, op: Operation) -> None:
    e = ft.e
    (cond,) = op.operands
    then_region, else_region = op.regions
    has_else = bool(else_region.blocks) and (
        bool(op.results) or any(op_name(o) != "scf.yield" for o in else_region.blocks.first.ops)
    )
    then_label, merge = e.label("if.then"), e.label("if.end")
    else_label = e.label("if.else") if has_else else merge
    e.emit(f"br i1 {ft.v(cond)}, label %{then_label}, label %{else_label}")
    incoming: list[tuple[list[str], str]] = []  # (values, predecessor block)
    e.start_block(then_label)
    then_vals = ft.emit_region(then_region)
    incoming.append(([ft.v(x) for x in then_vals], e.block))
    e.emit(f"br label %{merge}")
    if has_else:
        e.start_block(else_label)
        else_vals = ft.emit_region(else_region)
        incoming.append(([ft.v(x) for x in else_vals], e.block))
        e.emit(f"br label %{merge}")
    e.start_block(merge)
    for i, res in enumerate(op.results):
        t = llvm_type(res.type)
        edges = ", ".join(f"[ {vals[i]}, %{blk} ]" for vals, blk in incoming)
        ft.values[res] = e.inst(f"phi {t} {edges}")


HANDLERS: dict[str, Callable[[FunctionTranslator, Operation], None]] = {
    "scf.for": _for,
    "scf.if": _if,
}
