"""Handlers for `nvvm` ops: special registers, barriers, warp shuffles, and the Hopper ops (wgmma
groups and mbarriers as LLVM intrinsics; bulk-copy groups and setmaxregister as the inline PTX
statement they stand for; the rest of Hopper's instructions still arrive as `llvm.inline_asm`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import DenseArrayBase
from xdsl.ir import Operation

from .common import TranslationError, int_prop, op_name, prop
from .llvm_types import escape, llvm_type

if TYPE_CHECKING:
    from .function import FunctionTranslator

_SHFL_KINDS = ("bfly", "up", "down", "idx")


def _read_sreg(ft: FunctionTranslator, op: Operation) -> None:
    """`nvvm.read.ptx.sreg.<reg>` -> `i32 @llvm.nvvm.read.ptx.sreg.<reg>()`."""
    fn = "llvm.nvvm.read.ptx.sreg." + op_name(op).removeprefix("nvvm.read.ptx.sreg.")
    ft.set_result(op, ft.e.call("i32", fn, []))


def _barrier(ft: FunctionTranslator, op: Operation) -> None:
    segments = prop(op, "operandSegmentSizes")
    sizes = list(segments.iter_values()) if isinstance(segments, DenseArrayBase) else [0, 0]
    operands = list(op.operands)
    bar_id = ft.v(operands[0]) if sizes[0] else "0"
    if sizes[1]:
        count = ft.v(operands[sizes[0]])
        ft.e.call(
            "void",
            "llvm.nvvm.barrier.cta.sync.aligned.count",
            [("i32", bar_id), ("i32", count)],
        )
    else:
        ft.e.call("void", "llvm.nvvm.barrier.cta.sync.aligned.all", [("i32", bar_id)])


def _barrier_arrive(ft: FunctionTranslator, op: Operation) -> None:
    operands = list(op.operands)  # [id,] count
    bar_id = ft.v(operands[0]) if len(operands) == 2 else "0"
    count = ft.v(operands[-1])
    ft.e.call("void", "llvm.nvvm.barrier.cta.arrive.aligned.count", [("i32", bar_id), ("i32", count)])


def _shfl(ft: FunctionTranslator, op: Operation) -> None:
    kind_attr = prop(op, "kind")
    kind = getattr(getattr(kind_attr, "data", None), "value", None)
    if kind not in _SHFL_KINDS:
        raise TranslationError(f"unknown shuffle kind {kind_attr}")
    mask, val, offset, clamp = op.operands
    vty = llvm_type(val.type)
    if vty not in ("i32", "float"):
        raise TranslationError(f"shuffle of {vty} (only i32 and f32)")
    suffix = "f32" if vty == "float" else "i32"
    ret = vty
    if prop(op, "return_value_and_is_valid") is not None:
        suffix += "p"
        ret = f"{{ {vty}, i1 }}"
    args = [("i32", ft.v(mask)), (vty, ft.v(val)), ("i32", ft.v(offset)), ("i32", ft.v(clamp))]
    ft.set_result(op, ft.e.call(ret, f"llvm.nvvm.shfl.sync.{kind}.{suffix}", args))


# Hopper: wgmma groups and mbarriers


def _wgmma_fence(ft: FunctionTranslator, op: Operation) -> None:
    ft.e.call("void", "llvm.nvvm.wgmma.fence.sync.aligned", [])


def _wgmma_commit(ft: FunctionTranslator, op: Operation) -> None:
    ft.e.call("void", "llvm.nvvm.wgmma.commit_group.sync.aligned", [])


def _wgmma_wait(ft: FunctionTranslator, op: Operation) -> None:
    n = int_prop(op, "group")
    if n is None:
        raise TranslationError("missing 'group'")
    ft.e.call("void", "llvm.nvvm.wgmma.wait_group.sync.aligned", [("i64", str(n))])


def _mbarrier_init(ft: FunctionTranslator, op: Operation) -> None:
    addr, count = op.operands
    args = [(llvm_type(addr.type), ft.v(addr)), ("i32", ft.v(count))]
    ft.e.call("void", "llvm.nvvm.mbarrier.init.shared", args)


def _mbarrier_arrive(ft: FunctionTranslator, op: Operation) -> None:
    (addr,) = op.operands
    args = [(llvm_type(addr.type), ft.v(addr))]
    ft.set_result(op, ft.e.call("i64", "llvm.nvvm.mbarrier.arrive.shared", args))


# Hopper ops that this translation writes as inline PTX, the statement NVPTX would emit for them
# (the same text the kernels carried as llvm.inline_asm before these ops existed).


def _ptx(ft: FunctionTranslator, text: str) -> None:
    ft.e.emit(f'call void asm sideeffect "{escape(text)}", "~{{memory}}"()')


def _bulk_wait(ft: FunctionTranslator, op: Operation) -> None:
    read = ".read" if "read" in op.attributes else ""
    _ptx(ft, f"cp.async.bulk.wait_group{read} {int_prop(op, 'group')};")


def _expect_tx(ft: FunctionTranslator, op: Operation) -> None:
    """PTX's `mbarrier.arrive.expect_tx` on the 32-bit shared address (the `_` sink: no state)."""
    addr, tx = op.operands
    a32 = ft.e.inst(f"ptrtoint {ft.tv(addr)} to i32")
    ft.e.emit('call void asm sideeffect "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", '
              f'"r,r,~{{memory}}"(i32 {a32}, {ft.tv(tx)})')


def _setmaxregister(ft: FunctionTranslator, op: Operation) -> None:
    action = {"increase": "inc", "decrease": "dec"}[prop(op, "action").data]
    _ptx(ft, f"setmaxnreg.{action}.sync.aligned.u32 {int_prop(op, 'regCount')};")


def _fence_proxy(ft: FunctionTranslator, op: Operation) -> None:
    kind = prop(op, "kind").data.value
    space = prop(op, "space")
    _ptx(ft, f"fence.proxy.{kind}" + (f"::{space.data.value}" if space is not None else "") + ";")


def _tma_from_shared(ft: FunctionTranslator, op: Operation) -> None:
    """A TMA store or reduction: `[tmap, {coords}], [smem]` with the 32-bit shared address."""
    tmap, src, *coords = op.operands
    rank = len(coords)
    if op_name(op).endswith(".reduce"):
        kind = prop(op, "redKind").data.value
        instruction = f"cp.reduce.async.bulk.tensor.{rank}d.global.shared::cta.{kind}.tile.bulk_group"
    else:
        instruction = f"cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group"
    a32 = ft.e.inst(f"ptrtoint {ft.tv(src)} to i32")
    cs = ", ".join(f"${i + 1}" for i in range(rank))
    constraints = ",".join(["l"] + ["r"] * rank + ["r", "~{memory}"])
    args = ", ".join([ft.tv(tmap), *(ft.tv(c) for c in coords), f"i32 {a32}"])
    ft.e.emit(f'call void asm sideeffect "{escape(f"{instruction} [$0, {{{cs}}}], [${rank + 1}];")}", '
              f'"{constraints}"({args})')


HANDLERS: dict[str, Callable[[FunctionTranslator, Operation], None]] = {
    "nvvm.barrier": _barrier,
    "nvvm.barrier.arrive": _barrier_arrive,
    "nvvm.shfl.sync": _shfl,
    "nvvm.wgmma.fence.aligned": _wgmma_fence,
    "nvvm.wgmma.commit.group.sync.aligned": _wgmma_commit,
    "nvvm.wgmma.wait.group.sync.aligned": _wgmma_wait,
    "nvvm.mbarrier.init": _mbarrier_init,
    "nvvm.mbarrier.arrive": _mbarrier_arrive,
    "nvvm.mbarrier.arrive.expect_tx": _expect_tx,
    "nvvm.cp.async.bulk.commit.group": lambda ft, op: _ptx(ft, "cp.async.bulk.commit_group;"),
    "nvvm.cp.async.bulk.wait_group": _bulk_wait,
    "nvvm.setmaxregister": _setmaxregister,
    "nvvm.fence.proxy": _fence_proxy,
    "nvvm.cp.async.bulk.tensor.global.shared.cta": _tma_from_shared,
    "nvvm.cp.async.bulk.tensor.reduce": _tma_from_shared,
}
PREFIX_HANDLERS: tuple[tuple[str, Callable[[FunctionTranslator, Operation], None]], ...] = (
    ("nvvm.read.ptx.sreg.", _read_sreg),
)
