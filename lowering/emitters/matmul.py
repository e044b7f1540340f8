"""The Hopper matmul scheduler: TMA loads, an mbarrier pipeline, wgmma, fused epilogues.

Called by convert-fusion-to-sched for each `fusion.matmul` task; `task.outputs` lists the matmul
result (if it is materialized) and the pointwise epilogue outputs of its shape.

The kernel (one CTA per output tile, `matmul_params` picks the tile and the pipeline depth):

- 3 warpgroups (384 threads). Warpgroup 0 is the producer: it gives registers back
  (`setmaxnreg dec 40`) and one thread streams K-slices of A and B into a circular buffer of
  `stages` shared-memory slots with TMA (`cp.async.bulk.tensor`, 128-byte swizzle; boxes past
  the tensor's edge read as zeros, so ragged M/N/K need no special code). Slot s is guarded by
  two mbarriers: `full[s]` (the producer's `arrive.expect_tx` + the TMA bytes) and `empty[s]`
  (one arrival per consumer warp once the wgmmas that read it have completed).
- Warpgroups 1 and 2 are consumers (`setmaxnreg inc 232`), each owns BM/2 rows of the tile. Per
  K-slice: wait on `full[s]`, `wgmma.fence`, 4 k16 steps of `wgmma.mma_async` (m64nBNk16) per
  64 rows, `commit_group`, then `wait_group 1` (the previous slice's wgmmas are done) and
  release the previous slot. Accumulators are loop-carried `vector<BN/2 x f32>` values.
- After the main loop one `wgmma.wait_group 0` (inserted by sched-flush-wgmma before the first
  read) makes the accumulators readable; the epilogue evaluates every output of the task at
  each accumulator element (the fusion's pointwise ops, bias/residual loads clamped to the
  tensor, casts) with the `Evaluator`.
- Epilogue stores (`matmul_params(...).tma_store`, `convert-fusion-to-sched{matmul_store=}`):
  by default each consumer warpgroup writes 64-row x 128-byte chunks of every output into two
  128-byte-swizzled staging buffers of its own (32 KB for both warpgroups, after the barriers),
  fences the async proxy, syncs its 128 threads on a named barrier (3 or 4), and one thread
  writes the chunk with a TMA store (which drops what lies past the tensor's edge), then waits
  only until the previous chunk's buffer has been read (`cp.async.bulk.wait_group.read 1`); the
  warpgroup goes on while the stores drain. Outputs whose rows are not a multiple of 16 bytes
  (which TMA cannot address) are staged the same way, and then each warp of the warpgroup
  stores 16 of the chunk's rows, 32 consecutive elements of a row per `st.global` (one per
  lane), guarded at the edges (`store=rows`); `matmul_store=direct` stores column pairs from
  the registers instead, each warp store touching 8 rows.
- Operand layouts: A [M,K] is K-major, A^T (stored [K,M]) M-major; B [K,N] is N-major, B^T
  (stored [N,K]) K-major. K-major tiles are one TMA box of (rows x 64) per slot; MN-major tiles
  are 64-wide chunks (64 k-rows x 64) side by side; wgmma reads either through descriptors.
- Tiles are rasterized in groups of `group_m` tile-rows so that CTAs running together share
  A and B panels in L2.
- Persistent grid (`matmul_params(...).persistent`, forced by convert-fusion-to-sched's
  `matmul_persistent=0|1`): min(SMs, tiles) CTAs, CTA i takes tiles i, i + grid, ... in the same
  grouped order. Producer and consumers run the same tile loop around their K loop; the slot
  and phase come from a K-slice counter that runs on across tiles (tile j of a CTA starts at
  j * ktiles), so the producer streams the next tile's first `stages - 1` slices while the
  consumers are in the epilogue. Per tile, sched-flush-wgmma puts one `wgmma.wait_group 0`
  before the epilogue's first read of the accumulators; the last slot goes back after the
  epilogue, which that wait orders after the wgmmas reading the slot. The kernel carries a
  `fuser.matmul` attribute naming the tile, stages, grid and whether it is persistent.
- Ping-pong consumers (`matmul_params(...).pingpong`, forced by `matmul_pingpong=1`; the
  heuristic never picks it, it measured slower): on a persistent grid each consumer warpgroup
  owns whole tiles (64x256, 128x128, or 64x128 with two B operands), warpgroup w taking the
  CTA's tiles w, w + 2, ...; the producer still loads every tile in order, so each slot is read
  by one warpgroup (its `empty` barrier expects 4 warps). Named barriers 1 and 2
  (`sched.named_barrier`) pass the main-loop turn: a warpgroup syncs on its own before its K
  loop and, once the loop has issued its last wgmma, arrives at the other's (only if the other
  has a next tile), then drains (one `wait_group 0`) and runs its epilogue while the other
  warpgroup's MMAs run. Warpgroup 1 opens warpgroup 0's first turn.
- Split-K (`fusion.matmul ... k_chunk KC`, made by fusion-split-k): tiles x S work items, item w
  is tile w % tiles of split z = w / tiles over K-slices [z*KC/64, min(K/64, (z+1)*KC/64)); it
  stores its f32 tile at rows z*M.. of the [S, M, N] partials seen as [S*M, N] rows
  (`memref.collapse_shape`). On a persistent grid the K-slice counter before a CTA's i-th item
  is i*KC/64 less the shortfall of its earlier items in a shorter last split. The kernel's
  `fuser.matmul` gains `split=S k_chunk=KC`; a reduction kernel sums the partials. With TMA
  stores the partials' tensor map is 3-D ([1, 64, 32] boxes at (z, row, column)), so a ragged
  tile's rows past M are dropped within its split; direct stores use the [S*M, N] view,
  guarded against (z+1)*M.
- Serial split-K (`fusion.matmul ... k_chunk KC serial`, `MatmulKernel.serial_epilogue`): the
  same work items, but the result is the product. Each consumer warpgroup's rows of a tile take
  turns by split through a counter (`sched.semaphore.wait` / `.signal` on a kept_zero
  workspace of tiles x 2 counters): split 0 TMA-stores its f32 accumulators through the
  staging buffers into an f32 [M, N] workspace, later splits TMA-reduce-add them
  (`sched.tma.reduce add`), each hands the turn on (sched-insert-bulk-syncs completes and
  fences its bulk copies first); the last split takes its turn, resets the counter, and runs
  the epilogue on accumulator + workspace. The staging is always reserved; the grid is one
  CTA per work item unless forced persistent; ping-pong, clusters and reuse are refused.
- Horizontal fusion (`_matmul_merges`, lowering/analysis/planner.py): matmuls sharing A whose results
  only meet in pointwise outputs (the gated MLP `silu(x @ W1) * (x @ W2)`) become one task: both
  wgmmas run in one main loop over one A tile and the epilogue combines the accumulators.

`emit_matmul` checks the task and asks the heuristic; `MatmulKernel` then builds the kernel in
steps: host tensor maps, the kernel op, the shared-memory layout and barriers, the producer, the
consumers' main loop (cooperative or ping-pong), and the epilogue (lowering/emitters/matmul_epilogue.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (ArrayAttr, DenseArrayBase, DenseIntOrFPElementsAttr, IndexType, IntegerAttr, StringAttr,
                                   UnitAttr, VectorType, i32, i64)
from xdsl.ir import Block, Region, SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.dialects.host_attrs import CORESIDENT_ATTR
from fuser.lowering.analysis.schedules import MATMUL_OPERANDS, check_matmul_dtype, matmul_schedule, out_elem_bytes
from fuser.lowering.common import ScheduleError, Task, by_name, leaves, matmul_results, shape_of
from fuser.lowering.emitters.emitter import KernelEmitter
from fuser.lowering.emitters.kernel_builder import KernelBuilder, emit_if, emit_if_else, f32
from fuser.lowering.emitters.matmul_epilogue import Staging, emit_epilogue, store_partial, wg_named_barrier
from fuser.lowering.heuristics.matmul import MatmulParams, bk


def emit_matmul(em: KernelEmitter, task: Task, materialized: set, args: set) -> None:
    """The kernel of a matmul task (with its siblings sharing A, and its epilogue outputs)."""
    op: F.MatmulOp = task.op
    for s in [op] + task.siblings:
        _check_operands(s, em)
    schedule = matmul_schedule(task, em.opts)
    if schedule is None:
        return
    p, outputs = schedule
    m, n, k = op.mnk()
    # (its narrowed products are computed from the accumulator, not loaded)
    MatmulKernel(em, [op] + task.siblings, outputs, p, (m, n, k), F.dtype_name(F._elem(op.a)),
                 materialized - matmul_results(task), args).emit()


def _check_operands(op: F.MatmulOp, em: KernelEmitter) -> None:
    check_matmul_dtype(op)
    for what, v, inner in (("a", op.a, shape_of(op.a)[1]), ("b", op.b, shape_of(op.b)[1])):
        if v not in em.buffers:
            raise ScheduleError(f"'fusion.matmul' operand '{what}' must be a function argument or a materialized value "
                                f"(TMA reads it from memory); put a fusion.segment_set on it", op)
        if inner % 8:
            raise ScheduleError(f"'fusion.matmul' operand '{what}' {v.type}: its rows are {inner * 2} bytes apart; TMA needs "
                                f"a multiple of 16 bytes (inner extent a multiple of 8 elements)", op)


@dataclass(frozen=True)
class KSpan:
    """The K-slices of one work item: `count` slices (an int when static) from `first` (None: 0);
    `split` is its z (None: no split-K)."""

    first: SSAValue | None
    count: SSAValue | int
    split: SSAValue | None = None
    tile: SSAValue | None = None  # the output tile's index (split-K only)

    def bound(self, b: KernelBuilder) -> SSAValue:
        return b.c(self.count) if isinstance(self.count, int) else self.count


@dataclass
class ConsumerRegs:
    """What a consumer warpgroup sets up once before its tiles."""

    wg: SSAValue        # consumer warpgroup 0 or 1
    ltid: SSAValue      # thread in the warpgroup
    lane: SSAValue
    warp: SSAValue      # warp in the warpgroup
    peer: SSAValue | None  # the other CTA of a 2-CTA cluster
    inits: list[SSAValue]  # zero accumulators
    da0: SSAValue       # wgmma descriptors of element 0 of A's and each B's buffer
    db0: list[SSAValue]
    wg_row: SSAValue    # this warpgroup's first row in the tile


class MatmulKernel:
    """One matmul task's kernel. The constructor makes every decision (no IR); `emit` builds the
    kernel step by step, the steps sharing the kernel's values through this object."""

    def __init__(self, em: KernelEmitter, mats: list, outputs: list[SSAValue], p: MatmulParams,
                 mnk: tuple[int, int, int], et: str, materialized: set, args: set):
        op = mats[0]
        self.em, self.op, self.mats, self.outputs, self.p, self.et = em, op, mats, outputs, p, et
        # Operand bytes, the wgmma operand type and its k: a slot holds a 128-byte row of K per
        # operand row, BK = 64 bf16/f16 or 128 FP8 elements, 4 wgmma k-steps either way
        self.eb, self.wgmma_type = MATMUL_OPERANDS[et]
        self.bk, self.kstep = bk(self.eb), sched.WGMMA_K[self.wgmma_type]
        BK = self.bk
        self.m, self.n, self.k = m, n, k = mnk
        self.nsplit, self.kc = op.splits, op.chunk
        self.serial = p.serial
        self.ta, self.tb = op.transpose_a is not None, op.transpose_b is not None
        bm, bn = p.bm, p.bn
        self.bm, self.bn, self.S = bm, bn, p.stages
        self.nb = nb = len(mats)
        # Epilogue reads: leaves of the outputs other than the matmul results.
        results = [x.result for x in mats]
        reads: set[SSAValue] = set()
        for o in outputs:
            if o not in results:  # a stored result is the accumulator itself (its operands come by TMA)
                reads |= leaves(o, (materialized | set(results)) - {o}, args)
        reads -= set(results)
        self.reads = by_name(reads)
        self.cl = p.cluster > 1
        # Shared memory (placed by sched-alias-smem): the A and B slots, the full and empty
        # barriers, and with TMA stores the staging bytes.
        self.a_elems, self.b_elems = a_elems, b_elems = bm * BK, bn * BK
        self.tiles_m, self.tiles_n = math.ceil(m / bm), math.ceil(n / bn)
        self.last_m0 = (self.tiles_m - 1) * bm if self.cl and self.tiles_m % 2 else None
        if self.cl:  # an even number of tile rows (the padding row's CTAs load real A rows, store nothing)
            self.tiles_m += self.tiles_m % 2
        self.tx_bytes = (a_elems + nb * b_elems) * self.eb
        self.ktiles = math.ceil(k / BK)
        # K-slices of a work item (all but the last split's), and how many fewer the last split has
        self.kcs = self.ktiles if self.kc is None else self.kc // BK
        self.short = self.kcs * self.nsplit - self.ktiles if self.nsplit > 1 else 0
        self.rows_per_wg = bm if p.pingpong else bm // p.consumers
        self.msubs = self.rows_per_wg // 64
        self.acc_t = VectorType(f32, [bn // 2])
        self.n_tiles = self.tiles_m * self.tiles_n
        self.n_items = self.n_tiles * self.nsplit
        self.per_group = p.group_m * self.tiles_n
        self.n_consumer_warps = 4 if p.pingpong else 4 * p.consumers  # the warps that read one slot

    # ------------------------------------------------------------ setup

    def emit(self) -> None:
        self.host_tensor_maps()
        self.create_kernel()
        self.alloc_shared()
        kb = self.kb
        self.tid = kb.tid("x")
        self.pid = kb.bid("x")
        self.init_barriers()
        emit_if_else(kb, kb.lt(self.tid, 128), self.producer, self.consumer)
        if self.cl:  # no CTA exits while its peer may still arrive on its barriers
            kb.emit(sched.ClusterBarrierOp())
        kb.emit(sched.ReturnOp())
        self.em.add_kernel(self.kop, self.name, self.host_bufs)

    def host_tensor_maps(self) -> None:
        """The TMA tensor maps of the operands (and of the outputs for TMA stores), made on the host."""
        em, p, bm, bn, BK = self.em, self.p, self.bm, self.bn, self.bk
        # TMA boxes: K-major operands are one (rows x 64) box per slot, MN-major ones 64x64 chunks.
        a_box = [BK, 64] if self.ta else [bm, BK]
        b_box = [BK, 64] if not self.tb else [bn, BK]
        if self.cl and self.tb:  # each CTA of the pair loads (and multicasts) half of the B rows
            b_box = [bn // 2, BK]
        host = em.host
        self.tm_a = host.v(sched.TensorMapOp(em.buffers[self.op.a], a_box, 128))
        self.tm_bs = [host.v(sched.TensorMapOp(em.buffers[x.b], b_box, 128)) for x in self.mats]
        # TMA stores write (64 rows x 128 bytes) boxes of each output from the staging buffers
        # (the [S, M, N] split-K partials take [1, 64, 32] boxes: TMA drops a ragged tile's rows past
        # M within its split)
        lead_box = [1] if self.op.partial_products else []
        self.tm_outs = [host.v(sched.TensorMapOp(em.buffers[o], lead_box + [64, 128 // out_elem_bytes(o)], 128))
                        for o in self.outputs] if p.tma_store else []
        out_bufs = [em.buffers[o] for o in self.outputs]
        read_bufs = [em.buffers[v] for v in self.reads]
        serial_bufs = []
        if self.serial:
            # Serial split-K: the f32 tile the splits reduce into (rewritten from scratch by the
            # first split of every launch) and one turn counter per (tile, consumer warpgroup),
            # zeroed once by the executor and reset by each tile's last split.
            self.ws = em.workspace([self.m, self.n])
            self.sems = em.workspace([self.n_tiles * self.p.consumers], dtype=i32, kept_zero=True)
            self.tm_ws = host.v(sched.TensorMapOp(self.ws, [64, 32], 128))
            serial_bufs = [self.tm_ws, self.ws, self.sems]
        self.host_bufs = list(dict.fromkeys([self.tm_a, *self.tm_bs, *self.tm_outs, *out_bufs, *read_bufs,
                                             *serial_bufs]))

    def create_kernel(self) -> None:
        """The kernel op, its attributes, and the kernel-side views of the host buffers."""
        em, p, op = self.em, self.p, self.op
        self.name = em.next_kernel_name()
        kop = sched.KernelOp(self.name, [b.type for b in self.host_bufs], [p.grid, 1, 1], [p.threads, 1, 1], 0)
        kop.attributes["fuser.matmul"] = StringAttr(
            f"tile={self.bm}x{self.bn} stages={self.S} persistent={int(p.persistent)} grid={p.grid} "
            f"tiles={self.n_tiles}"
            + (f" split={self.nsplit} k_chunk={self.kc}" if self.nsplit > 1 else "")
            + (" serial=1" if self.serial else "")
            + (" pingpong=1" if p.pingpong else "")
            + (f" cluster={p.cluster}" if self.cl else "") + f" store={p.store}"
            + (" smem_reuse=1" if p.smem_reuse else ""))
        kop.attributes["fuser.matmul_epilogue"] = StringAttr(p.plan)
        kop.attributes["nvvm.minctasm"] = IntegerAttr(1, i64)
        if self.serial and p.persistent:  # a CTA's later items wait on other CTAs' earlier ones
            kop.attributes[CORESIDENT_ATTR] = UnitAttr()
        if self.cl:
            kop.properties["cluster"] = DenseArrayBase.from_list(i64, [p.cluster, 1, 1])
        self.kop = kop
        self.kb = kb = KernelBuilder(kop.body.block)
        kargs = list(kop.body.block.args)
        pos = {b: i for i, b in enumerate(self.host_bufs)}

        def karg(hb):
            return kargs[pos[hb]]
        self.k_tma, self.k_tmbs = karg(self.tm_a), [karg(t) for t in self.tm_bs]
        self.amap = amap = {v: karg(em.buffers[v]) for v in list(self.outputs) + self.reads}
        if op.partial_products and not p.tma_store:  # the [S, M, N] partials, stored as [S*M, N] rows
            part = amap[op.result]
            view_t = sched.memref([self.nsplit * self.m, self.n], f32)
            amap[op.result] = kb.v(memref.CollapseShapeOp.create(
                operands=[part], result_types=[view_t],
                properties={"reassociation": ArrayAttr([ArrayAttr([IntegerAttr(0, i64), IntegerAttr(1, i64)]),
                                                        ArrayAttr([IntegerAttr(2, i64)])])}))
        targets = {o: (F._elem(o), karg(t)) for o, t in zip(self.outputs, self.tm_outs)}
        if self.serial:
            self.k_ws, self.k_sems = karg(self.ws), karg(self.sems)
            targets[self.k_ws] = (f32, karg(self.tm_ws))
        if p.store == "rows":  # staged, then written out by the threads (no tensor maps)
            targets.update((o, (F._elem(o), None)) for o in self.outputs)
        rows = {o: (amap[o], self.m, self.n) for o in self.outputs} if p.store == "rows" else None
        self.staging = Staging(kb, targets, rows) if targets else None
        self.out_staging = self.staging if p.staged else None  # (the outputs may still take direct stores)

    def alloc_shared(self) -> None:
        """The shared buffers: `stages` slots of A and of each B, the full and empty barriers
        (sched-alias-smem gives them their offsets)."""
        kb, S = self.kb, self.S
        elem_t = F._elem(self.op.a)
        self.sa = kb.alloc([S, self.a_elems], elem_t, "a_slots")
        self.sbs = [kb.alloc([S, self.b_elems], elem_t, "b_slots" if self.nb == 1 else f"b{j}_slots")
                    for j in range(self.nb)]
        self.full = kb.alloc([S], i64, "full")
        self.empty = kb.alloc([S], i64, "empty")

    def init_barriers(self) -> None:
        kb = self.kb

        def init(b: KernelBuilder):
            for s in range(self.S):
                b.emit(sched.MBarrierInitOp(self.full, b.c(s), 1))
                b.emit(sched.MBarrierInitOp(self.empty, b.c(s), self.n_consumer_warps * self.p.cluster))
            if self.cl:
                b.emit(sched.FenceMBarrierInitOp())
        emit_if(kb, kb.eq(self.tid, 0), init)
        kb.emit(sched.BarrierOp())
        if self.cl:  # the peer arrives on and multicasts into this CTA's barriers only once they exist
            kb.emit(sched.ClusterBarrierOp())

    # ------------------------------------------------------------ work items

    def coords(self, b: KernelBuilder, t: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(m0, n0) of tile t: grouped rasterization (group_m tile-rows walk N together)."""
        g_m = self.p.group_m
        gid = b.div(t, self.per_group)
        first_m = b.mul(gid, g_m)
        gsize = b.v(arith.MinUIOp(b.v(arith.SubiOp(b.c(self.tiles_m), first_m)), b.c(g_m)))
        in_group = b.rem(t, self.per_group)
        pid_m = b.add(first_m, b.v(arith.RemUIOp(in_group, gsize)))
        pid_n = b.v(arith.DivUIOp(in_group, gsize))
        return b.mul(pid_m, self.bm), b.mul(pid_n, self.bn)

    def item(self, b: KernelBuilder, w: SSAValue) -> tuple[SSAValue, SSAValue, KSpan]:
        """(m0, n0, K-slices) of work item w: tile w itself, or with split-K tile w % n_tiles of
        split w // n_tiles (the splits are the outer order, so CTAs running together read the
        same K-slab of A and B)."""
        if self.nsplit == 1:
            m0, n0 = self.coords(b, w)
            return m0, n0, KSpan(None, self.ktiles)
        kcs = self.kcs
        z = b.div(w, self.n_tiles)
        t = b.rem(w, self.n_tiles)
        m0, n0 = self.coords(b, t)
        first = b.mul(z, kcs)
        count = kcs if not self.short else \
            b.v(arith.MinUIOp(b.c(kcs), b.v(arith.SubiOp(b.c(self.ktiles), first))))
        return m0, n0, KSpan(first, count, z, t)

    def base_of(self, b: KernelBuilder, i: SSAValue) -> SSAValue:
        """K-slices that went through the circular buffer before this CTA's i-th work item: kcs
        per item, less `short` for each earlier item of the last split; those come last in
        every CTA's sequence (items pid, pid + grid, ...), from its j0-th item on."""
        full = b.mul(i, self.kcs)
        if not self.short:
            return full
        pid, grid = self.pid, self.p.grid
        first_last = (self.nsplit - 1) * self.n_tiles  # the first work item of the last split
        ahead = b.v(arith.SubiOp(b.v(arith.MaxUIOp(b.c(first_last), pid)), pid))
        j0 = b.div(b.add(ahead, grid - 1), grid)
        n_short = b.v(arith.SubiOp(b.v(arith.MaxUIOp(i, j0)), j0))
        return b.v(arith.SubiOp(full, b.mul(n_short, self.short)))

    def my_items(self, b: KernelBuilder) -> SSAValue:
        """How many work items this CTA of the persistent grid takes: pid, pid + grid, ..."""
        return b.add(b.div(b.v(arith.SubiOp(b.c(self.n_items - 1), self.pid)), self.p.grid), 1)

    def tiles_loop(self, b: KernelBuilder, body) -> None:
        """body(b, base, m0, n0, ks) for each work item of this CTA; `base` counts the K-slices
        that went through the circular buffer before it (None: the first and only item)."""
        pid = self.pid
        if not self.p.persistent:
            body(b, None, *self.item(b, pid))
            return
        mine = self.my_items(b)  # (the grid never exceeds the item count)

        def one(lb: KernelBuilder, i, _):
            body(lb, self.base_of(lb, i), *self.item(lb, lb.add(pid, lb.mul(i, self.p.grid))))
            return []
        b.serial_for(b.c(0), mine, [], one)

    # ------------------------------------------------------------ producer

    def producer(self, b: KernelBuilder) -> None:
        """Warpgroup 0: one thread streams the K-slices of every work item into the slots."""
        b.emit(sched.SetMaxNRegOp("dec", 40))

        def tile(c: KernelBuilder, base, m0, n0, ks: KSpan):
            c.serial_for(c.c(0), ks.bound(c), [], lambda lb, kt, _: self.load_slice(lb, base, m0, n0, ks, kt))
        emit_if(b, b.eq(self.tid, 0), lambda c: self.tiles_loop(c, _clamp_m0(tile, self.last_m0)))

    def load_slice(self, lb: KernelBuilder, base, m0, n0, ks: KSpan, kt: SSAValue) -> list:
        """Wait for K-slice kt's slot to be empty, then TMA-load A and each B into it."""
        S, bm, bn, full = self.S, self.bm, self.bn, self.full
        g = _slot(lb, base, kt)
        s = lb.rem(g, S)
        ph = lb.div(g, S)
        lb.emit(sched.MBarrierWaitOp(self.empty, s, lb.add(ph, 1)))
        lb.emit(sched.MBarrierArriveExpectTxOp(full, s, self.tx_bytes))
        BK = self.bk
        k0 = lb.mul(kt if ks.first is None else lb.add(ks.first, kt), BK)
        if self.ta:  # A stored [K, M]: 64-wide M chunks
            for c_ in range(bm // 64):
                lb.emit(sched.TmaLoadOp(self.k_tma, [k0, lb.add(m0, 64 * c_)], self.sa, [s, lb.c(c_ * 64 * BK)],
                                        full, s))
        else:
            lb.emit(sched.TmaLoadOp(self.k_tma, [m0, k0], self.sa, [s, lb.c(0)], full, s))
        for j in range(self.nb):
            tmb, sb = self.k_tmbs[j], self.sbs[j]
            if self.cl:
                _load_b_multicast(lb, tmb, sb, full, s, k0, n0, lb.rem(self.pid, 2), bn, self.tb, BK)
                continue
            if self.tb:  # B stored [N, K]: K-major
                lb.emit(sched.TmaLoadOp(tmb, [n0, k0], sb, [s, lb.c(0)], full, s))
            else:   # B stored [K, N]: 64-wide N chunks
                for c_ in range(bn // 64):
                    lb.emit(sched.TmaLoadOp(tmb, [k0, lb.add(n0, 64 * c_)], sb, [s, lb.c(c_ * 64 * BK)], full, s))
        return []

    # ------------------------------------------------------------ consumers

    def consumer(self, b: KernelBuilder) -> None:
        """Warpgroups 1 and 2: the main loop of wgmmas over the slots, then the epilogue, per tile."""
        p, bn, tid = self.p, self.bn, self.tid
        b.emit(sched.SetMaxNRegOp("inc", 232))
        wg = b.add(b.div(tid, 128), -1)
        ltid = b.rem(tid, 128)
        lane = b.rem(tid, 32)
        warp = b.div(ltid, 32)
        zero = b.v(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(self.acc_t, [0.0] * (bn // 2))))
        peer = b.v(arith.XOrIOp(b.rem(self.pid, 2), b.c(1))) if self.cl else None
        inits = [zero] * (self.nb * self.msubs)
        # wgmma descriptors of element 0 of each operand buffer (K-major: 16-byte LBO; MN-major:
        # 64-wide chunks BK*128 bytes apart); the main loop only adds offsets to them
        chunk_bytes = 64 * self.bk * self.eb
        da0 = b.v(sched.WgmmaDescOp(self.sa, [b.c(0), b.c(0)], 128, chunk_bytes if self.ta else 16, 1024))
        db0 = [b.v(sched.WgmmaDescOp(sb, [b.c(0), b.c(0)], 128, 16 if self.tb else chunk_bytes, 1024))
               for sb in self.sbs]
        wg_row = b.c(0) if p.pingpong else b.mul(wg, self.rows_per_wg)  # this warpgroup's first tile row
        regs = ConsumerRegs(wg, ltid, lane, warp, peer, inits, da0, db0, wg_row)
        if p.pingpong:
            self.pingpong_loop(b, regs)
        else:
            self.tiles_loop(b, lambda tk, base, m0, n0, ks: self.consume_tile(tk, regs, base, m0, n0, ks))
        if self.staging is not None:
            self.staging.drain(b, ltid)

    def consume_tile(self, tk: KernelBuilder, regs: ConsumerRegs, base, m0, n0, ks: KSpan,
                     after_mainloop=None) -> None:
        """One work item: the K loop, then (once `after_mainloop` has run) the epilogue."""
        m = self.m
        accs = tk.serial_for(tk.c(0), ks.bound(tk), regs.inits,
                    lambda lb, kt, accs: self.mma_slice(lb, regs, base, kt, accs))
        if self.p.smem_reuse:
            # One tile per CTA: the consumers have waited for every slot the producer filled,
            # and once their last wgmmas complete, nothing reads the slots again; the staging
            # may take their bytes (sched-alias-smem adds the consumers' barrier).
            tk.emit(sched.ReleaseOp([self.sa, *self.sbs], 128 * self.p.consumers))
        if after_mainloop is not None:
            after_mainloop(tk)
        # The accumulators are still in flight here: sched-flush-wgmma puts the one
        # wait_group 0 of the tile before the epilogue's first read of them.
        if self.serial:
            self.serial_epilogue(tk, regs, accs, m0, n0, ks)
        else:
            rows, row0, lead = m, m0, []
            if ks.split is not None and self.staging is not None:  # TMA stores address split z directly
                lead = [ks.split]
            elif ks.split is not None:  # split z's rows z*M .. z*M + M-1 of the [S*M, N] view, guarded against M
                rows = tk.add(tk.mul(ks.split, m), m)
                row0 = tk.add(m0, tk.mul(ks.split, m))
            emit_epilogue(tk, accs, self.mats, self.outputs, self.reads, self.amap, rows, self.n, row0, n0, regs.wg_row,
                          regs.warp, regs.lane, self.msubs, self.bn, self.staging, regs.wg, regs.ltid, lead)
        # The last slot goes back once the wgmmas reading it are done: after the epilogue,
        # which the flush before it orders after them.
        last = _slot(tk, base, tk.c(ks.count - 1) if isinstance(ks.count, int) else tk.add(ks.count, -1))
        emit_if(tk, tk.eq(regs.lane, 0), lambda q: _release(q, self.empty, q.rem(last, self.S), regs.peer))

    def serial_epilogue(self, tk: KernelBuilder, regs: ConsumerRegs, accs, m0, n0, ks: KSpan) -> None:
        """Serial split-K: each consumer warpgroup's rows of the tile take turns by split through
        its turn counter. Split z waits for turn z, then adds its accumulators into the f32
        workspace (split 0 stores them, later splits TMA-reduce-add them) and hands turn z + 1
        on; sched-insert-bulk-syncs completes the bulk copies before that hand-over. The last
        split waits for its turn, resets the counter for the next launch, and runs the epilogue
        on its accumulators plus the workspace's sum."""
        z, last = ks.split, self.nsplit - 1
        sem = tk.add(tk.mul(ks.tile, self.p.consumers), regs.wg)
        row0 = tk.add(m0, regs.wg_row)

        def wait_turn(q: KernelBuilder) -> None:
            q.emit(sched.SemaphoreWaitOp(self.k_sems, sem, z))

        def earlier(q: KernelBuilder) -> None:
            def copy(r: KernelBuilder, src, idx, tm, coords) -> None:
                emit_if_else(r, r.eq(z, 0), lambda x: x.emit(sched.TmaStoreOp(src, idx, tm, coords)),
                             lambda x: x.emit(sched.TmaReduceOp(src, idx, tm, coords, "add")))
            store_partial(q, accs, self.msubs, self.bn, self.staging, self.k_ws, regs.wg, regs.ltid, regs.warp,
                          regs.lane, row0, n0, copy, wait_turn)
            emit_if(q, q.eq(regs.ltid, 0), lambda r: r.emit(sched.SemaphoreSignalOp(self.k_sems, sem, r.add(z, 1))))

        def final(q: KernelBuilder) -> None:
            def take_turn(r: KernelBuilder) -> None:
                wait_turn(r)
                # nothing else touches this counter in this launch: back to 0 for the next one
                r.emit(sched.SemaphoreSignalOp(self.k_sems, sem, r.c(0)))
            emit_if(q, q.eq(regs.ltid, 0), take_turn)
            Staging.barrier(q, regs.wg)  # the warpgroup reads the workspace only after its turn came
            emit_epilogue(q, accs, self.mats, self.outputs, self.reads, self.amap, self.m, self.n, m0, n0,
                          regs.wg_row, regs.warp, regs.lane, self.msubs, self.bn, self.out_staging, regs.wg,
                          regs.ltid, partial=self.k_ws)
        emit_if_else(tk, tk.eq(z, last), final, earlier)

    def mma_slice(self, lb: KernelBuilder, regs: ConsumerRegs, base, kt: SSAValue, accs) -> list[SSAValue]:
        """K-slice kt: wait for its slot, issue its wgmmas, and give the previous slot back."""
        S, ta, tb, msubs = self.S, self.ta, self.tb, self.msubs
        g = _slot(lb, base, kt)
        s = lb.rem(g, S)
        ph = lb.div(g, S)
        lb.emit(sched.MBarrierWaitOp(self.full, s, ph))
        lb.emit(sched.WgmmaFenceOp())
        accs = list(accs)
        # descriptors of this slot: the kernel's base descriptors moved by element offsets
        sa_s = lb.mul(s, self.a_elems)
        sb_s = lb.mul(s, self.b_elems)
        BK, ks = self.bk, self.kstep
        for kk in range(BK // ks):
            for i in range(msubs):
                row = lb.add(regs.wg_row, 64 * i)  # first row of this m64 in the tile
                if ta:  # M-major: chunk = row // 64, k rows of 64 elements
                    a_idx = lb.add(lb.mul(lb.div(row, 64), 64 * BK), kk * ks * 64)
                else:   # K-major: rows of BK elements
                    a_idx = lb.add(lb.mul(row, BK), kk * ks)
                da = _desc_plus(lb, regs.da0, lb.add(sa_s, a_idx), self.eb)
                for j in range(self.nb):
                    db = _desc_plus(lb, regs.db0[j], lb.add(sb_s, kk * ks if tb else kk * ks * 64), self.eb)
                    x = j * msubs + i
                    accs[x] = lb.v(sched.WgmmaMmaAsyncOp(da, db, accs[x], self.bn, self.wgmma_type, ta, not tb))
        lb.emit(sched.WgmmaCommitGroupOp())
        lb.emit(sched.WgmmaWaitGroupOp(1))

        def release(r: KernelBuilder):
            emit_if(r, r.eq(regs.lane, 0), lambda q: _release(q, self.empty, q.rem(q.add(g, S - 1), S), regs.peer))
        emit_if(lb, lb.v(arith.CmpiOp(kt, lb.c(0), "ugt")), release)
        return accs

    def pingpong_loop(self, b: KernelBuilder, regs: ConsumerRegs) -> None:
        """Ping-pong: warpgroup w takes this CTA's tiles w, w + 2, ...; named barrier 1 + w says
        "w may start its main loop". Each warpgroup, once its K loop has issued every wgmma,
        lets the other start the next tile's main loop, then drains, stores, and waits for its
        turn again: one's epilogue runs while the other's MMAs do. Warpgroup 1 opens the first
        turn for warpgroup 0; an arrival is made only when the other has a next tile, so no
        barrier is left half-arrived at exit."""
        wg = regs.wg
        mine = self.my_items(b)
        first = b.eq(wg, 0)
        emit_if(b, b.eq(wg, 1), lambda q: q.emit(sched.NamedBarrierOp("arrive", 1, 256)))
        loop_blk = Block(arg_types=[IndexType()])
        inner = b.at(loop_blk)
        self.pingpong_tile(inner, regs, loop_blk.args[0], mine, first)
        inner.emit(scf.YieldOp())
        b.emit(scf.ForOp(wg, mine, b.c(2), [], Region(loop_blk)))

    def pingpong_tile(self, lb: KernelBuilder, regs: ConsumerRegs, i: SSAValue, mine: SSAValue,
                      first: SSAValue) -> None:
        """This warpgroup's i-th work item of the CTA: wait for its turn, run it, and hand the
        turn over once its main loop is issued."""
        m0, n0, ks = self.item(lb, lb.add(self.pid, lb.mul(i, self.p.grid)))
        _pingpong_turn(lb, first, "sync", True)

        def handoff(q: KernelBuilder):
            emit_if(q, q.lt(q.add(i, 1), mine), lambda r: _pingpong_turn(r, first, "arrive", False))
        self.consume_tile(lb, regs, self.base_of(lb, i), m0, n0, ks, handoff)


# ------------------------------------------------------------------ helpers


def _slot(b: KernelBuilder, base, kt) -> SSAValue:
    """The circular buffer's running K-slice count at slice kt of a work item starting at `base`."""
    return kt if base is None else b.add(base, kt)


def _pingpong_turn(q: KernelBuilder, first: SSAValue, action: str, mine: bool) -> None:
    """sync on (mine) or arrive at (not mine) the turn barrier of this warpgroup / the other one."""
    wg_named_barrier(q, first, action, (1, 2) if mine else (2, 1), 256)


def _load_b_multicast(b: KernelBuilder, tmb, sb, full, s, k0, n0, rank, bn: int, tb: bool, slot_k: int) -> None:
    """This CTA's half of the pair's common B tile, multicast into both CTAs' slot s (same
    offset), completing on each CTA's full[s]: a K-major B is a half-height box (rows
    rank*bn/2 ..), an N-major B is half of the 64-wide chunks; `slot_k` K elements a slot row."""
    both = 0b11
    if tb:
        half = bn // 2
        b.emit(sched.TmaLoadOp(tmb, [b.add(n0, b.mul(rank, half)), k0], sb, [s, b.mul(rank, half * slot_k)], full, s, both))
        return
    per = bn // 64 // 2
    for c_ in range(per):
        chunk = b.add(b.mul(rank, per), c_)
        b.emit(sched.TmaLoadOp(tmb, [k0, b.add(n0, b.mul(chunk, 64))], sb, [s, b.mul(chunk, 64 * slot_k)], full, s, both))


def _clamp_m0(tile, last_m0):
    """The producer's tile body with m0 clamped to the last real tile row (None: no padding row),
    so the padding row's CTAs (there only to multicast B to their peers) load in-bounds A."""
    if last_m0 is None:
        return tile
    return lambda b, base, m0, n0, ks: tile(b, base, b.v(arith.MinUIOp(m0, b.c(last_m0))), n0, ks)


def _release(b: KernelBuilder, empty, idx, peer) -> None:
    """Hand slot idx back: to this CTA's producer and, in a 2-CTA cluster, to the peer's, whose
    multicast writes into this CTA's slot too (both CTAs' empty barriers count both CTAs' warps)."""
    b.emit(sched.MBarrierArriveOp(empty, idx))
    if peer is not None:
        b.emit(sched.MBarrierArriveClusterOp(empty, idx, peer))


def _desc_plus(b: KernelBuilder, base: SSAValue, elems: SSAValue, elem_bytes: int) -> SSAValue:
    """A wgmma descriptor moved `elems` elements of `elem_bytes` on: its start-address field
    (bits 0-13) counts 16-byte units, and shared memory (< 256 KB) keeps the sum inside the field."""
    units = b.v(arith.IndexCastOp(b.div(elems, 16 // elem_bytes), i64))
    return b.v(arith.AddiOp(base, units))


__all__ = ["MatmulKernel", "emit_matmul"]
