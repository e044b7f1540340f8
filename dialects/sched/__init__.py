"""The `sched` dialect: kernel IR with an explicit schedule.

A module at this level holds one `sched.kernel` per kernel and a host `func.func` that
allocates workspaces (`sched.workspace`) and launches kernels in order (`sched.launch`).

Inside a kernel:
- buffers are memrefs; the memory space is the memref's address space, as in NVPTX:
  none = global (kernel arguments, workspaces), 3 = shared (`sched.alloc`), 5 = registers
  (`sched.alloc`, a per-thread array that must be indexed with constants to stay in registers);
- parallel indices are explicit (`sched.thread_idx x`, `sched.block_idx x`, ...);
- `sched.for ... bind(P)` is a loop whose iterations are spread over the parallel index P
  (`thread.x`: the threads of a block; `block.x`: the blocks of the grid; `grid.x`: every thread
  of the grid, i.e. a grid-stride loop); serial loops are plain `scf.for`;
- `sched.load` / `sched.store` move a scalar or a short vector (contiguous along the last
  dimension) between a buffer and registers; compute is `arith` and `math`;
- `sched.barrier` and `sched.shfl_xor` synchronise and exchange between threads.

Hopper machinery (sm_90a):
- `!sched.tensor_map<memref<MxKxbf16>, box [r, c], swizzle 128>`: a TMA descriptor (CUtensorMap),
  made on the host by `sched.tensor_map %buf` and passed to the kernel by value (a
  `__grid_constant__` parameter);
- `sched.tma.load` / `sched.tma.store`: `cp.async.bulk.tensor` between global memory (through a
  tensor map; out-of-bounds boxes read as zero and are not written) and shared memory; loads
  complete on an mbarrier, stores form bulk async-groups (`sched.bulk.commit_group` /
  `sched.bulk.wait_group`); `sched.tma.reduce add|min|max` (`cp.reduce.async.bulk.tensor`)
  combines a shared box into global memory and joins the bulk groups like a store;
- mbarriers live in shared `i64` buffers: `sched.mbarrier.init`, `.arrive`, `.arrive_expect_tx`,
  and `.wait` (spins on `try_wait.parity` with the phase's parity);
- wgmma: `sched.wgmma.desc` builds a shared-memory matrix descriptor; `sched.wgmma.fence`,
  `sched.wgmma.mma_async` (m64nNk16, bf16/f16 in, f32 accumulators held as `vector<N/2 x f32>`
  per thread), `sched.wgmma.commit_group`, `sched.wgmma.wait_group N` (which threads the
  accumulators it makes safe to read through itself, so nothing reads them before the wait);
- `sched.setmaxnreg inc|dec N`, `sched.named_barrier`, `sched.fence.proxy_async` (shared::cta)
  and `sched.fence.proxy_async global`;
- thread-block clusters: `sched.cluster.barrier`, `sched.fence.mbarrier_init`,
  `sched.mbarrier.arrive_cluster`, and multicast TMA loads;
- grid semaphores (i32 counters in a global buffer): `sched.semaphore.wait %sems[%i] until %v`
  (acquire spin) and `sched.semaphore.signal %sems[%i], %v` (release store), through which CTAs
  take turns (serial split-K).

Layout of this package (import everything from `fuser.dialects.sched` itself):
- `types.py`: memory spaces (`GLOBAL`, `SHARED`, `REGISTER`, `memory_space`, `memref`) and
  `!sched.tensor_map` (`TensorMapType`);
- `core.py`: kernel, return, workspace, launch, parallel indices, `sched.for`/`sched.yield`,
  alloc, load/store, barrier, shfl_xor;
- `mbarrier.py`: the mbarrier ops;
- `tma.py`: `sched.tensor_map`, TMA load/store/reduce, bulk async-groups, `fence.proxy_async`;
- `wgmma.py`: the wgmma ops, `setmaxnreg` and named barriers;
- `cluster.py`: the thread-block cluster ops and checks;
- `semaphore.py`: the grid semaphore ops;
- `_base.py`: assembly helpers, operand checks and small op bases shared by the modules above.
"""

from xdsl.dialects.builtin import (  # noqa: F401  (the single-module sched exposed these; `sched.IndexType` is used)
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    FunctionType,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    VectorType,
    i64,
)
from xdsl.ir import Dialect

from fuser.dialects.sched.cluster import (
    CLUSTER_OPS,
    ClusterBarrierOp,
    FenceMBarrierInitOp,
    MBarrierArriveClusterOp,
)
from fuser.dialects.sched.core import (
    PARALLEL_BINDINGS,
    AllocOp,
    ReleaseOp,
    BarrierOp,
    BlockDimOp,
    BlockIdxOp,
    ForOp,
    GridDimOp,
    KernelOp,
    LaunchOp,
    LoadOp,
    ReturnOp,
    ShflXorOp,
    StoreOp,
    AtomicAddOp,
    ATOMIC_ADD_TYPES,
    MEMORY_ACCESS_OPS,
    ThreadIdxOp,
    WorkspaceOp,
    YieldOp,
)
from fuser.dialects.sched.griddep import GRIDDEP_KINDS, GridDepControlOp
from fuser.dialects.sched.mbarrier import (
    MBarrierArriveExpectTxOp,
    MBarrierArriveOp,
    MBarrierInitOp,
    MBarrierWaitOp,
)
from fuser.dialects.sched.semaphore import SEMAPHORE_OPS, SemaphoreSignalOp, SemaphoreWaitOp
from fuser.dialects.sched.tma import (
    FENCE_SPACES,
    REDUCE_KINDS,
    BulkCommitGroupOp,
    BulkWaitGroupOp,
    FenceProxyAsyncOp,
    TensorMapOp,
    TmaLoadOp,
    TmaReduceOp,
    TmaStoreOp,
)
from fuser.dialects.sched.types import GLOBAL, HOPPER_SMEM_PER_BLOCK, REGISTER, SHARED, TensorMapType, element_bytes, memory_space, memref, storage_type, value_type
from fuser.dialects.sched.wgmma import (
    WGMMA_K,
    WGMMA_TYPES,
    NamedBarrierOp,
    SetMaxNRegOp,
    WgmmaCommitGroupOp,
    WgmmaDescOp,
    WgmmaFenceOp,
    WgmmaMmaAsyncOp,
    WgmmaWaitGroupOp,
)

HOPPER_OPS = [TensorMapOp, MBarrierInitOp, MBarrierArriveOp, MBarrierArriveExpectTxOp, MBarrierWaitOp, TmaLoadOp,
              TmaStoreOp, TmaReduceOp, BulkCommitGroupOp, BulkWaitGroupOp, FenceProxyAsyncOp, SetMaxNRegOp,
              NamedBarrierOp, WgmmaDescOp, WgmmaFenceOp, WgmmaCommitGroupOp, WgmmaMmaAsyncOp, WgmmaWaitGroupOp]


Sched = Dialect(
    "sched",
    [KernelOp, ReturnOp, WorkspaceOp, LaunchOp, ThreadIdxOp, BlockIdxOp, BlockDimOp, GridDimOp, ForOp, YieldOp,
     AllocOp, LoadOp, StoreOp, AtomicAddOp, BarrierOp, ReleaseOp, ShflXorOp, *HOPPER_OPS, *CLUSTER_OPS,
     *SEMAPHORE_OPS, GridDepControlOp],
    [TensorMapType],
)

__all__ = [
    # dialect and op groups
    "Sched", "HOPPER_OPS", "CLUSTER_OPS", "SEMAPHORE_OPS",
    # types and memory spaces
    "GLOBAL", "SHARED", "REGISTER", "HOPPER_SMEM_PER_BLOCK", "element_bytes", "memory_space", "memref", "storage_type", "value_type", "TensorMapType", "IndexType",
    # core
    "KernelOp", "ReturnOp", "WorkspaceOp", "LaunchOp", "ThreadIdxOp", "BlockIdxOp", "BlockDimOp", "GridDimOp",
    "PARALLEL_BINDINGS", "ForOp", "YieldOp", "AllocOp", "LoadOp", "StoreOp", "AtomicAddOp", "ATOMIC_ADD_TYPES", "MEMORY_ACCESS_OPS", "BarrierOp", "ReleaseOp", "ShflXorOp",
    # mbarrier
    "MBarrierInitOp", "MBarrierArriveOp", "MBarrierArriveExpectTxOp", "MBarrierWaitOp",
    # TMA
    "TensorMapOp", "TmaLoadOp", "TmaStoreOp", "TmaReduceOp", "REDUCE_KINDS", "BulkCommitGroupOp", "BulkWaitGroupOp",
    "FenceProxyAsyncOp", "FENCE_SPACES",
    # wgmma and warp specialisation
    "WGMMA_K", "WGMMA_TYPES", "WgmmaDescOp", "WgmmaFenceOp", "WgmmaCommitGroupOp", "WgmmaMmaAsyncOp", "WgmmaWaitGroupOp",
    "SetMaxNRegOp", "NamedBarrierOp",
    # clusters
    "ClusterBarrierOp", "FenceMBarrierInitOp", "MBarrierArriveClusterOp",
    # grid semaphores
    "SemaphoreWaitOp", "SemaphoreSignalOp",
    # programmatic dependent launch
    "GridDepControlOp", "GRIDDEP_KINDS",
]
