"""convert-sched-to-nvvm: lower a sched-level module to the nvvm level (docs/ir-levels.md).

Kernels become `llvm.func`s with the bare-pointer convention inside one `gpu.module`; the host
function launches them with `gpu.launch_func`. Inside a kernel, one `PatternRewriteWalker` applies the
patterns of each op family, sharing a `KernelContext` (pointers of buffers, hoisted registers and
constants, shared-memory globals, launch geometry):

- indices.py   parallel indices → `nvvm.read.ptx.sreg.*` cast to index
- memory.py    buffers (globals, dynamic-smem slices, allocas), collapse_shape views, load / store
- control.py   bound `sched.for` → `scf.for` / `scf.if` / straight-line code; barrier, shfl_xor, return
- tma.py       TMA copies and reductions, mbarriers, bulk-async groups, `fence.proxy.async`, the grid
               semaphores (`ld.acquire.gpu` spin, `st.release.gpu`)
- wgmma.py     wgmma fence / commit / descriptor / mma_async / wait_group, setmaxnreg, named barriers
- cluster.py   cluster barrier, `fence.mbarrier_init`, remote mbarrier arrive

Around them: common.py (the error, element sizes, index folding), context.py (the shared state),
kernel.py (one kernel to one `llvm.func`, the walker and the catch-all check), host.py (workspaces and
launches, a walk), convert.py (the pass).

Everything else of `arith`, `math`, `scf`, `vector`, `llvm` and `nvvm` passes through; any other op
inside a kernel is an error that names the op and the kernel.
"""

from fuser.dialects.gpu_ext import MemsetOp

from .common import SchedToNVVMError, element_bytes
from .convert import ConvertSchedToNVVM

__all__ = ["ConvertSchedToNVVM", "MemsetOp", "SchedToNVVMError", "element_bytes"]
