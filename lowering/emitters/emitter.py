"""`KernelEmitter`: what every scheduler's emitter uses to add a kernel to the module: a
`sched.kernel` op before the host function, its launch in the host function, host workspaces,
and the map from fusion values to the kernel's memref arguments.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue

from fuser.dialects import sched
from fuser.dialects.sched.core import kernel_symbol
from fuser.lowering.emitters.kernel_builder import KernelBuilder, f32
from fuser.lowering.provenance import stamp
from fuser.lowering.heuristics.options import ScheduleOptions


class KernelEmitter:
    """Creates sched.kernel ops and their launches for one fusion function."""

    def __init__(self, name: str, module_block: Block, host: KernelBuilder, buffers: dict[SSAValue, SSAValue],
                 opts: ScheduleOptions):
        self.name = name
        self.module_block = module_block
        self.host = host
        self.buffers = buffers  # fusion value -> host memref
        self.opts = opts
        self.count = 0

    # A kernel over a fixed list of host buffers; `body(kb, args)` fills it.
    def kernel(self, host_bufs: list[SSAValue], grid, block, body, schedule: str = "", min_blocks: int = 0) -> None:
        """The kernel's shared buffers get their offsets, and it its `smem`, from sched-alias-smem.
        `min_blocks`: blocks an SM must hold at once (nvvm.minctasm: ptxas keeps the registers a
        thread uses within that occupancy)."""
        name = self.next_kernel_name()
        k = sched.KernelOp(name, [b.type for b in host_bufs], list(grid), list(block), 0)
        if schedule:  # the scheduler's decision, readable in the IR
            k.attributes["fuser.schedule"] = StringAttr(schedule)
        if min_blocks:
            k.attributes["nvvm.minctasm"] = IntegerAttr(min_blocks, i64)
        kb = KernelBuilder(k.body.block)
        body(kb, list(k.body.block.args))
        kb.emit(sched.ReturnOp())
        self.add_kernel(k, name, host_bufs)

    def next_kernel_name(self) -> str:
        """The name of the function's next kernel: <function>_k<count>, the function's name made a
        PTX identifier (`kernel_symbol`), and past any symbol the module already has (a function
        named f_k0 beside f)."""
        taken = {o.sym_name.data for o in self.module_block.ops if isinstance(getattr(o, "sym_name", None), StringAttr)}
        while True:
            name = f"{kernel_symbol(self.name)}_k{self.count}"
            self.count += 1
            if name not in taken:
                return name

    def add_kernel(self, kernel: Operation, name: str, host_bufs: list[SSAValue]) -> None:
        """Put a finished kernel op in the module and launch it on `host_bufs`."""
        # Kernels go before the host function so the module reads top-down.
        stamp(kernel)
        self.module_block.insert_op_before(kernel, self._host_func_op())
        self.host.emit(sched.LaunchOp(name, host_bufs))

    def _host_func_op(self):
        return self.host.b.insertion_point.block.parent_op()

    def workspace(self, shape: Sequence[int], zero: bool = False, *, dtype: Attribute = f32,
                  kept_zero: bool = False) -> SSAValue:
        """A host workspace: `zero` clears it before every call, `kept_zero` once at allocation
        (its kernels must leave it zero; see `sched.workspace`)."""
        return self.host.v(sched.WorkspaceOp(sched.memref(shape, dtype), zero, kept_zero))

    def kernel_buffers(self, values: Sequence[SSAValue], extra: Sequence[SSAValue] = ()) -> list[SSAValue]:
        return list(dict.fromkeys([self.buffers[v] for v in values] + list(extra)))

    def arg_map(self, host_bufs: list[SSAValue], kargs: list[SSAValue], values: Sequence[SSAValue]) -> dict:
        pos = {b: i for i, b in enumerate(host_bufs)}
        return {v: kargs[pos[self.buffers[v]]] for v in values if v in self.buffers}


class WorkspaceValue:
    """Stands for a scheduler-made workspace buffer inside the value->buffer maps."""

    def __init__(self, buf: SSAValue):
        self.buf = buf
        self.name_hint = "workspace"
