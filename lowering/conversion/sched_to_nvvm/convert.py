"""The pass: `convert-sched-to-nvvm`."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, gpu
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass

from fuser.dialects import sched
from fuser.dialects.sched.core import kernel_symbol
from fuser.lowering.analysis.bulk_sync import unsynced_signals
from fuser.lowering.analysis.wgmma_sync import inflight_readers

from .common import SchedToNVVMError, where
from .host import lower_host
from .kernel import lower_kernel


@dataclass(frozen=True)
class ConvertSchedToNVVM(ModulePass):
    """Lower sched kernels to llvm/nvvm inside a gpu.module and the host function to gpu ops."""

    name = "convert-sched-to-nvvm"

    index_bitwidth: int = 64
    """Width of the integer offsets fed to llvm.getelementptr (64, or 32 when buffers are < 2 GiB)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.index_bitwidth not in (32, 64):
            raise SchedToNVVMError(f"index-bitwidth must be 32 or 64, got {self.index_bitwidth}")
        kernels = [o for o in op.ops if isinstance(o, sched.KernelOp)]
        for o in op.walk():
            if isinstance(o, sched.KernelOp) and o.parent_op() is not op:
                raise SchedToNVVMError(f"'sched.kernel' @{o.sym_name.data}{where(o)} must be at module level")
        hosts = [o for o in op.ops if isinstance(o, func.FuncOp)]

        gpu_name = gpu_module_name(op) if kernels else None

        for k in kernels:  # the wgmma read-after-write syncs are sched-flush-wgmma's to place
            readers = inflight_readers(k)
            if readers:
                r = readers[0]
                raise SchedToNVVMError(f"'sched.kernel' @{k.sym_name.data}: '{r.name}'{where(r)} reads a "
                                       f"'sched.wgmma.mma_async' result before any 'sched.wgmma.wait_group 0'; "
                                       f"run sched-flush-wgmma before convert-sched-to-nvvm")
            signals = unsynced_signals(k)  # and the bulk-write syncs of a semaphore hand-over
            if signals:
                s = signals[0]
                raise SchedToNVVMError(f"'sched.kernel' @{k.sym_name.data}: 'sched.semaphore.signal'{where(s)} may "
                                       f"publish TMA stores or reductions that are not complete and fenced "
                                       f"(commit_group, wait_group 0, fence.proxy_async global); run "
                                       f"sched-insert-bulk-syncs before convert-sched-to-nvvm")
        if self.index_bitwidth == 32:
            for k in kernels:
                _check_32_bit_offsets(k)
        castui = ctx.get_optional_op("arith.index_castui")
        by_name = {k.sym_name.data: k for k in kernels}
        for h in hosts:
            lower_host(h, by_name, gpu_name)

        if not kernels:
            return
        contents: list[Operation] = []
        globals_: list[Operation] = []
        for k in kernels:
            fn, gl = lower_kernel(k, self.index_bitwidth, castui)
            globals_ += gl
            contents.append(fn)
            k.detach()
            k.erase(safe_erase=False)
        gmod = gpu.ModuleOp(StringAttr(gpu_name), Region(Block([*globals_, *contents])))  # type: ignore[arg-type]
        op.body.block.add_op(gmod)
        op.attributes["gpu.container_module"] = UnitAttr()


def gpu_module_name(op: ModuleOp) -> str:
    """The name of the gpu.module the conversion puts `op`'s kernels in: after the one host
    function that launches them, else "kernels", and unlike any other symbol of the module.
    ASCII like its kernels' names (`kernel_symbol`): xDSL reads an escaped name back as bytes."""
    hosts = [o for o in op.ops if isinstance(o, func.FuncOp)]
    launching = [h for h in hosts if any(isinstance(x, sched.LaunchOp) for x in h.walk())]
    name = f"{kernel_symbol(launching[0].sym_name.data)}_kernels" if len(launching) == 1 else "kernels"
    taken = {o.sym_name.data for o in op.ops if isinstance(getattr(o, "sym_name", None), StringAttr)}
    base, n = name, 0
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def _check_32_bit_offsets(k: sched.KernelOp) -> None:
    """32-bit element offsets reach 2^31 - 1 elements: refuse a buffer past that rather than
    wrap around (64-bit offsets, the default, address any size)."""
    bufs = [a.type for a in k.body.block.args] + [o.result.type for o in k.walk() if isinstance(o, sched.AllocOp)]
    for t in bufs:
        if isinstance(t, MemRefType) and all(d >= 0 for d in t.get_shape()):
            n = math.prod(t.get_shape())
            if n > 2**31 - 1:
                raise SchedToNVVMError(f"'sched.kernel' @{k.sym_name.data}{where(k)}: buffer {t} has {n} elements, past "
                                       f"the 2^31 - 1 that index-bitwidth=32 offsets reach; use index-bitwidth=64")

