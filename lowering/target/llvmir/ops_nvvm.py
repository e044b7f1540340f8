"""Handlers for the `nvvm` ops that LLVM has intrinsics for: special registers, barriers, warp
shuffles, wgmma groups, mbarrier init/arrive, the cluster barrier, the mbarrier-init fence and
griddepcontrol.
The others (wgmma.mma_async, TMA stores and
reductions, bulk groups, proxy fences, expect_tx, setmaxregister) arrive as `llvm.inline_asm`,
rewritten by `convert-nvvm-to-llvm` (lowering/conversion/nvvm_to_llvm.py) before translation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import DenseArrayBase
from xdsl.ir import Operation

from .common import TranslationError, int_prop, op_name, prop
from .llvm_types import llvm_type

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


def _void_intrinsic(name: str) -> Callable[[FunctionTranslator, Operation], None]:
    return lambda ft, op: ft.e.call("void", name, [])


def _griddepcontrol(ft: FunctionTranslator, op: Operation) -> None:
    """`nvvm.griddepcontrol wait|launch_dependents` -> `llvm.nvvm.griddepcontrol.wait|launch.dependents`."""
    kind = prop(op, "kind")
    name = getattr(getattr(kind, "data", None), "value", None)
    if name not in ("wait", "launch_dependents"):
        raise TranslationError(f"unknown griddepcontrol kind {kind}")
    ft.e.call("void", "llvm.nvvm.griddepcontrol." + name.replace("_", "."), [])


def _cluster_barrier_half(ft: FunctionTranslator, op: Operation) -> None:
    """`nvvm.cluster.arrive` / `.wait` [{aligned}] -> `llvm.nvvm.barrier.cluster.arrive[.aligned]`."""
    half = op_name(op).removeprefix("nvvm.cluster.")
    ft.e.call("void", f"llvm.nvvm.barrier.cluster.{half}" + (".aligned" if "aligned" in op.attributes else ""), [])


HANDLERS: dict[str, Callable[[FunctionTranslator, Operation], None]] = {
    "nvvm.cluster.arrive": _cluster_barrier_half,
    "nvvm.cluster.wait": _cluster_barrier_half,
    "nvvm.fence.mbarrier.init": _void_intrinsic("llvm.nvvm.fence.mbarrier_init.release.cluster"),
    "nvvm.griddepcontrol": _griddepcontrol,
    "nvvm.barrier": _barrier,
    "nvvm.barrier.arrive": _barrier_arrive,
    "nvvm.shfl.sync": _shfl,
    "nvvm.wgmma.fence.aligned": _wgmma_fence,
    "nvvm.wgmma.commit.group.sync.aligned": _wgmma_commit,
    "nvvm.wgmma.wait.group.sync.aligned": _wgmma_wait,
    "nvvm.mbarrier.init": _mbarrier_init,
    "nvvm.mbarrier.arrive": _mbarrier_arrive,
}
PREFIX_HANDLERS: tuple[tuple[str, Callable[[FunctionTranslator, Operation], None]], ...] = (
    ("nvvm.read.ptx.sreg.", _read_sreg),
)
