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
  take `st.global` of column pairs from the registers instead, guarded at the edges.
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
- Horizontal fusion (`fuse_matmul_tasks`): matmuls sharing A whose results only meet in
  pointwise outputs (the gated MLP `silu(x @ W1) * (x @ W2)`) become one task: both wgmmas
  run in one main loop over one A tile and the epilogue combines the accumulators.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (ArrayAttr, DenseArrayBase, DenseIntOrFPElementsAttr, IndexType, IntegerAttr, StringAttr,
                                   VectorType, i64)
from xdsl.ir import Block, Region, SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.lowering.fusion_to_sched import (
    Evaluator,
    KernelEmitter,
    ScheduleError,
    Task,
    _leaves,
    shape_of,
)
from fuser.lowering.kernel_builder import KernelBuilder, f32
from fuser.lowering.schedulers.matmul import BK, STAGING_BYTES, STAGING_TOTAL, matmul_params

# ------------------------------------------------------------------ planning hook


def fuse_matmul_tasks(tasks: list[Task], outputs, materialized: set, args: set) -> list[Task]:
    """Merge matmul tasks that share A into one (horizontal fusion), and absorb pointwise tasks
    whose outputs read only those matmuls' results (and arguments); then mark which matmul
    results must be stored at all (function outputs, or read by another task)."""
    mm = [t for t in tasks if t.kind == "matmul"]
    removed: set[int] = set()
    for i, t in enumerate(mm):
        if id(t) in removed:
            continue
        for u in mm[i + 1:]:
            if id(u) in removed or u.level != t.level:
                continue
            a, b = t.op, u.op
            if a.k_chunk is not None or b.k_chunk is not None:  # split-K partials: never paired
                continue
            if a.a is not b.a or (a.transpose_a is None) != (b.transpose_a is None) or \
                    (a.transpose_b is None) != (b.transpose_b is None) or \
                    shape_of(a.b) != shape_of(b.b) or shape_of(a.result) != shape_of(b.result):
                continue
            results = {a.result, b.result}
            absorbed = []
            for p in tasks:
                if p.kind != "pointwise" or not p.outputs:
                    continue
                if all(o not in args and shape_of(o) == shape_of(a.result) and
                       _leaves(o, materialized - {o}, args) & results and
                       all(d in results or d in args for d in _leaves(o, materialized - {o}, args))
                       for o in p.outputs):
                    absorbed.append(p)
            if not absorbed:
                continue
            t.siblings = getattr(t, "siblings", []) + [b]
            t.outputs += [o for o in u.outputs if o is not b.result] + [o for p in absorbed for o in p.outputs]
            if b.result in u.outputs:
                t.outputs.append(b.result)
            removed.add(id(u))
            removed |= {id(p) for p in absorbed}
            break
    tasks = [t for t in tasks if id(t) not in removed]
    outs = set(outputs)
    for t in tasks:
        if t.kind != "matmul":
            continue
        results = [t.op.result] + [s.result for s in getattr(t, "siblings", [])]
        readers = [o for u in tasks if u is not t for o in u.outputs] + \
                  [u.op.input for u in tasks if u is not t and hasattr(u.op, "input")] + \
                  [x for u in tasks if u is not t and u.kind == "matmul" for x in (u.op.a, u.op.b)]
        needed = set()
        for r in results:
            if r in outs or any(r in _leaves(x, materialized - {x}, args) or x is r for x in readers):
                needed.add(r)
        t.store_results = needed
    return tasks


# ------------------------------------------------------------------ the scheduler


def _check(op: F.MatmulOp, em: KernelEmitter) -> tuple[int, int, int, str]:
    m, n, k = op.mnk()
    et = F.dtype_name(F._elem(op.a))
    if et not in ("bf16", "f16"):
        raise ScheduleError(f"'fusion.matmul' operands are {et}; the Hopper matmul takes bf16 or f16 (cast them first)", op)
    for what, v, inner in (("a", op.a, shape_of(op.a)[1]), ("b", op.b, shape_of(op.b)[1])):
        if v not in em.buffers:
            raise ScheduleError(f"'fusion.matmul' operand '{what}' must be a function argument or a materialized value "
                                f"(TMA reads it from memory); put a fusion.segment_set on it", op)
        if inner % 8:
            raise ScheduleError(f"'fusion.matmul' operand '{what}' {v.type}: its rows are {inner * 2} bytes apart; TMA needs "
                                f"a multiple of 16 bytes (inner extent a multiple of 8 elements)", op)
    return m, n, k, et


def _if_else(kb: KernelBuilder, cond: SSAValue, then, other) -> None:
    tb, eb = Block(), Block()
    then(kb.at(tb))
    tb.add_op(scf.YieldOp())
    other(kb.at(eb))
    eb.add_op(scf.YieldOp())
    kb.emit(scf.IfOp(cond, [], Region(tb), Region(eb)))


def _if(kb: KernelBuilder, cond: SSAValue, then) -> None:
    tb = Block()
    then(kb.at(tb))
    tb.add_op(scf.YieldOp())
    kb.emit(scf.IfOp(cond, [], Region(tb)))


def _wg_named_barrier(kb: KernelBuilder, is_wg0: SSAValue, action: str, ids: tuple[int, int], count: int) -> None:
    """`bar.<action>` on named barrier ids[0] in consumer warpgroup 0, ids[1] in warpgroup 1 (the
    id is an immediate, so the two warpgroups take the two sides of a branch)."""
    _if_else(kb, is_wg0, lambda q: q.emit(sched.NamedBarrierOp(action, ids[0], count)),
             lambda q: q.emit(sched.NamedBarrierOp(action, ids[1], count)))


def _for(kb: KernelBuilder, lb: SSAValue, ub: SSAValue, inits: list[SSAValue], body) -> list[SSAValue]:
    """A serial scf.for; `body(kb, iv, iter_args)` returns the yielded values."""
    blk = Block(arg_types=[IndexType()] + [v.type for v in inits])
    inner = kb.at(blk)
    ys = body(inner, blk.args[0], list(blk.args[1:]))
    inner.emit(scf.YieldOp(*ys))
    loop = scf.ForOp(lb, ub, kb.c(1), inits, Region(blk))
    kb.emit(loop)
    return list(loop.results)


def emit_matmul(em: KernelEmitter, task: Task, materialized: set, args: set) -> None:
    op: F.MatmulOp = task.op
    mats = [op] + list(getattr(task, "siblings", []))
    m, n, k, et = _check(op, em)
    for s in mats[1:]:
        _check(s, em)
    opts = em.opts
    tile = None
    if opts.tile:
        try:
            tile = tuple(int(x) for x in opts.tile.lower().split("x"))
            assert len(tile) == 2
        except (ValueError, AssertionError):
            raise ScheduleError(f"convert-fusion-to-sched: tile={opts.tile!r} must read like 128x256", op) from None
    # Split-K (k_chunk): work item w is tile w % tiles of split w // tiles, over K-slices
    # [z * kcs, min(ktiles, (z + 1) * kcs)); it stores its f32 tile at rows z * M.. of the partials.
    nsplit, kc = op.splits, op.chunk
    if kc is not None and kc % BK:
        raise ScheduleError(f"'fusion.matmul' k_chunk {kc}: the Hopper matmul splits K between its {BK}-element "
                            f"K-slices, so k_chunk must be a multiple of {BK}", op)
    if nsplit > 1 and len(mats) > 1:
        raise ScheduleError("'fusion.matmul' with k_chunk cannot share a main loop with another matmul", op)
    results = [x.result for x in mats]
    store = getattr(task, "store_results", set(results))
    outputs = [o for o in dict.fromkeys(task.outputs) if o not in results or o in store]
    if not outputs:
        return
    blocker = _tma_store_blocker(outputs, n)
    try:
        p = matmul_params(m, n, min(k, kc or k), 2, opts.sms, len(mats), tile, opts.stages,
                          opts.matmul_persistent, opts.matmul_pingpong, opts.matmul_cluster, opts.matmul_store,
                          blocker, nsplit)
    except ValueError as err:
        raise ScheduleError(f"'fusion.matmul' {m}x{n}x{k}: {err}", op) from None

    ta, tb = op.transpose_a is not None, op.transpose_b is not None
    bm, bn, S = p.bm, p.bn, p.stages
    nb = len(mats)
    # Epilogue reads: leaves of the outputs other than the matmul results.
    reads: set[SSAValue] = set()
    for o in outputs:
        if o not in results:  # a stored result is the accumulator itself (its operands come by TMA)
            reads |= _leaves(o, (materialized | set(results)) - {o}, args)
    reads -= set(results)
    reads_l = sorted(reads, key=lambda v: str(v.name_hint))

    # TMA boxes: K-major operands are one (rows x 64) box per slot, MN-major ones 64x64 chunks.
    a_box = [BK, 64] if ta else [bm, BK]
    b_box = [BK, 64] if not tb else [bn, BK]
    cl = p.cluster > 1
    if cl and tb:  # each CTA of the pair loads (and multicasts) half of the B rows
        b_box = [bn // 2, BK]
    host = em.host
    tm_a = host.v(sched.TensorMapOp(em.buffers[op.a], a_box, 128))
    tm_bs = [host.v(sched.TensorMapOp(em.buffers[x.b], b_box, 128)) for x in mats]
    # TMA stores write (64 rows x 128 bytes) boxes of each output from the staging buffers
    # (the [S, M, N] split-K partials take [1, 64, 32] boxes: TMA drops a ragged tile's rows past
    # M within its split)
    lead_box = [1] if kc is not None else []
    tm_outs = [host.v(sched.TensorMapOp(em.buffers[o], lead_box + [64, 128 // _elem_bytes(o)], 128)) for o in outputs] \
        if p.tma_store else []
    out_bufs = [em.buffers[o] for o in outputs]
    read_bufs = [em.buffers[v] for v in reads_l]
    host_bufs = list(dict.fromkeys([tm_a, *tm_bs, *tm_outs, *out_bufs, *read_bufs]))

    elem_t = F._elem(op.a)
    a_elems, b_elems = bm * BK, bn * BK
    a_off = 0
    b_off = S * a_elems * 2
    bar_off = b_off + nb * S * b_elems * 2
    smem = bar_off + 2 * S * 8
    staging_off = -(-smem // 1024) * 1024  # the 128-byte swizzle wants 1024-byte alignment
    if p.tma_store:
        smem = staging_off + STAGING_TOTAL
    tiles_m, tiles_n = math.ceil(m / bm), math.ceil(n / bn)
    last_m0 = (tiles_m - 1) * bm if cl and tiles_m % 2 else None
    if cl:  # an even number of tile rows (the padding row's CTAs load real A rows, store nothing)
        tiles_m += tiles_m % 2
    tx_bytes = (a_elems + nb * b_elems) * 2
    ktiles = math.ceil(k / BK)
    kcs = ktiles if kc is None else kc // BK         # K-slices of a work item (all but the last split's)
    short = kcs * nsplit - ktiles if nsplit > 1 else 0  # how many fewer the last split has
    rows_per_wg = bm if p.pingpong else bm // p.consumers
    msubs = rows_per_wg // 64
    acc_t = VectorType(f32, [bn // 2])

    name = f"{em.name}_k{em.count}"
    em.count += 1
    n_tiles = tiles_m * tiles_n
    n_items = n_tiles * nsplit
    kop = sched.KernelOp(name, [b.type for b in host_bufs], [p.grid, 1, 1], [p.threads, 1, 1], smem)
    kop.attributes["fuser.matmul"] = StringAttr(
        f"tile={bm}x{bn} stages={S} persistent={int(p.persistent)} grid={p.grid} tiles={n_tiles}"
        + (f" split={nsplit} k_chunk={kc}" if nsplit > 1 else "") + (" pingpong=1" if p.pingpong else "")
        + (f" cluster={p.cluster}" if cl else "") + (" store=tma" if p.tma_store else " store=direct"))
    kop.attributes["nvvm.minctasm"] = IntegerAttr(1, i64)
    if cl:
        kop.properties["cluster"] = DenseArrayBase.from_list(i64, [p.cluster, 1, 1])
    kb = KernelBuilder(kop.body.block)
    kargs = list(kop.body.block.args)
    pos = {b: i for i, b in enumerate(host_bufs)}
    karg = lambda hb: kargs[pos[hb]]  # noqa: E731
    k_tma, k_tmbs = karg(tm_a), [karg(t) for t in tm_bs]
    amap = {v: karg(em.buffers[v]) for v in list(outputs) + reads_l}
    if kc is not None and not p.tma_store:  # the [S, M, N] partials, stored as [S*M, N] rows (see the epilogue call)
        part = amap[op.result]
        view_t = sched.memref([nsplit * m, n], f32)
        amap[op.result] = kb.v(memref.CollapseShapeOp.create(
            operands=[part], result_types=[view_t],
            properties={"reassociation": ArrayAttr([ArrayAttr([IntegerAttr(0, i64), IntegerAttr(1, i64)]),
                                                    ArrayAttr([IntegerAttr(2, i64)])])}))
    staging = _Staging(kb, staging_off, outputs, [karg(t) for t in tm_outs]) if p.tma_store else None

    sa = kb.v(sched.AllocOp(sched.memref([S, a_elems], elem_t, sched.SHARED)))
    sa.owner.properties["offset"] = IntegerAttr(a_off, i64)
    sbs = []
    for j in range(nb):
        sb = kb.v(sched.AllocOp(sched.memref([S, b_elems], elem_t, sched.SHARED)))
        sb.owner.properties["offset"] = IntegerAttr(b_off + j * S * b_elems * 2, i64)
        sbs.append(sb)
    full = kb.v(sched.AllocOp(sched.memref([S], i64, sched.SHARED)))
    full.owner.properties["offset"] = IntegerAttr(bar_off, i64)
    empty = kb.v(sched.AllocOp(sched.memref([S], i64, sched.SHARED)))
    empty.owner.properties["offset"] = IntegerAttr(bar_off + S * 8, i64)

    tid = kb.tid("x")
    pid = kb.bid("x")
    g_m = p.group_m
    per_group = g_m * tiles_n

    def coords(b: KernelBuilder, t: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(m0, n0) of tile t: grouped rasterization (group_m tile-rows walk N together)."""
        gid = b.div(t, per_group)
        first_m = b.mul(gid, g_m)
        gsize = b.v(arith.MinUIOp(b.v(arith.SubiOp(b.c(tiles_m), first_m)), b.c(g_m)))
        in_group = b.rem(t, per_group)
        pid_m = b.add(first_m, b.v(arith.RemUIOp(in_group, gsize)))
        pid_n = b.v(arith.DivUIOp(in_group, gsize))
        return b.mul(pid_m, bm), b.mul(pid_n, bn)

    def item(b: KernelBuilder, w: SSAValue) -> tuple[SSAValue, SSAValue, KSpan]:
        """(m0, n0, K-slices) of work item w: tile w itself, or with split-K tile w % n_tiles of
        split w // n_tiles (the splits are the outer order, so CTAs running together read the
        same K-slab of A and B)."""
        if nsplit == 1:
            m0, n0 = coords(b, w)
            return m0, n0, KSpan(None, ktiles)
        z = b.div(w, n_tiles)
        m0, n0 = coords(b, b.rem(w, n_tiles))
        first = b.mul(z, kcs)
        count = kcs if not short else b.v(arith.MinUIOp(b.c(kcs), b.v(arith.SubiOp(b.c(ktiles), first))))
        return m0, n0, KSpan(first, count, z)

    def base_of(b: KernelBuilder, i: SSAValue) -> SSAValue:
        """K-slices that went through the circular buffer before this CTA's i-th work item: kcs
        per item, less `short` for each earlier item of the last split; those come last in
        every CTA's sequence (items pid, pid + grid, ...), from its j0-th item on."""
        full = b.mul(i, kcs)
        if not short:
            return full
        first_last = (nsplit - 1) * n_tiles  # the first work item of the last split
        ahead = b.v(arith.SubiOp(b.v(arith.MaxUIOp(b.c(first_last), pid)), pid))
        j0 = b.div(b.add(ahead, p.grid - 1), p.grid)
        n_short = b.v(arith.SubiOp(b.v(arith.MaxUIOp(i, j0)), j0))
        return b.v(arith.SubiOp(full, b.mul(n_short, short)))

    def my_items(b: KernelBuilder) -> SSAValue:
        """How many work items this CTA of the persistent grid takes: pid, pid + grid, ..."""
        return b.add(b.div(b.v(arith.SubiOp(b.c(n_items - 1), pid)), p.grid), 1)

    def tiles_loop(b: KernelBuilder, body) -> None:
        """body(b, base, m0, n0, ks) for each work item of this CTA; `base` counts the K-slices
        that went through the circular buffer before it (None: the first and only item)."""
        if not p.persistent:
            body(b, None, *item(b, pid))
            return
        mine = my_items(b)  # (the grid never exceeds the item count)

        def one(lb: KernelBuilder, i, _):
            body(lb, base_of(lb, i), *item(lb, lb.add(pid, lb.mul(i, p.grid))))
            return []
        _for(b, b.c(0), mine, [], one)

    def slot(b: KernelBuilder, base, kt) -> SSAValue:
        return kt if base is None else b.add(base, kt)

    n_consumer_warps = 4 if p.pingpong else 4 * p.consumers  # the warps that read one slot

    def init(b: KernelBuilder):
        for s in range(S):
            b.emit(sched.MBarrierInitOp(full, b.c(s), 1))
            b.emit(sched.MBarrierInitOp(empty, b.c(s), n_consumer_warps * p.cluster))
        if cl:
            b.emit(sched.FenceMBarrierInitOp())
    _if(kb, kb.eq(tid, 0), init)
    kb.emit(sched.BarrierOp())
    if cl:  # the peer arrives on and multicasts into this CTA's barriers only once they exist
        kb.emit(sched.ClusterBarrierOp())

    def producer(b: KernelBuilder):
        b.emit(sched.SetMaxNRegOp("dec", 40))

        def tile(c: KernelBuilder, base, m0, n0, ks: KSpan):
            def step(lb: KernelBuilder, kt, _):
                g = slot(lb, base, kt)
                s = lb.rem(g, S)
                ph = lb.div(g, S)
                lb.emit(sched.MBarrierWaitOp(empty, s, lb.add(ph, 1)))
                lb.emit(sched.MBarrierArriveExpectTxOp(full, s, tx_bytes))
                k0 = lb.mul(kt if ks.first is None else lb.add(ks.first, kt), BK)
                if ta:  # A stored [K, M]: 64-wide M chunks
                    for c_ in range(bm // 64):
                        lb.emit(sched.TmaLoadOp(k_tma, [k0, lb.add(m0, 64 * c_)], sa, [s, lb.c(c_ * 64 * BK)], full, s))
                else:
                    lb.emit(sched.TmaLoadOp(k_tma, [m0, k0], sa, [s, lb.c(0)], full, s))
                for j in range(nb):
                    if cl:
                        _load_b_multicast(lb, k_tmbs[j], sbs[j], full, s, k0, n0, lb.rem(pid, 2), bn, tb)
                        continue
                    if tb:  # B stored [N, K]: K-major
                        lb.emit(sched.TmaLoadOp(k_tmbs[j], [n0, k0], sbs[j], [s, lb.c(0)], full, s))
                    else:   # B stored [K, N]: 64-wide N chunks
                        for c_ in range(bn // 64):
                            lb.emit(sched.TmaLoadOp(k_tmbs[j], [k0, lb.add(n0, 64 * c_)], sbs[j],
                                                    [s, lb.c(c_ * 64 * BK)], full, s))
                return []
            _for(c, c.c(0), ks.bound(c), [], step)
        _if(b, b.eq(tid, 0), lambda c: tiles_loop(c, _clamp_m0(tile, last_m0)))

    def consumer(b: KernelBuilder):
        b.emit(sched.SetMaxNRegOp("inc", 232))
        wg = b.add(b.div(tid, 128), -1)
        ltid = b.rem(tid, 128)
        lane = b.rem(tid, 32)
        warp = b.div(ltid, 32)
        zero = b.v(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(acc_t, [0.0] * (bn // 2))))
        peer = b.v(arith.XOrIOp(b.rem(pid, 2), b.c(1))) if cl else None
        inits = [zero] * (nb * msubs)
        # wgmma descriptors of element 0 of each operand buffer (K-major: 16-byte LBO; MN-major:
        # 64-wide chunks BK*128 bytes apart); the main loop only adds offsets to them
        da0 = b.v(sched.WgmmaDescOp(sa, [b.c(0), b.c(0)], 128, 64 * BK * 2 if ta else 16, 1024))
        db0 = [b.v(sched.WgmmaDescOp(sb, [b.c(0), b.c(0)], 128, 16 if tb else 64 * BK * 2, 1024)) for sb in sbs]
        wg_row = b.c(0) if p.pingpong else b.mul(wg, rows_per_wg)  # this warpgroup's first tile row

        def tile(tk: KernelBuilder, base, m0, n0, ks: KSpan, after_mainloop=None):
            def step(lb: KernelBuilder, kt, accs):
              g = slot(lb, base, kt)
              s = lb.rem(g, S)
              ph = lb.div(g, S)
              lb.emit(sched.MBarrierWaitOp(full, s, ph))
              lb.emit(sched.WgmmaFenceOp())
              accs = list(accs)
              # descriptors of this slot: the kernel's base descriptors moved by element offsets
              sa_s = lb.mul(s, a_elems)
              sb_s = lb.mul(s, b_elems)
              for kk in range(BK // 16):
                  for i in range(msubs):
                      row = lb.add(wg_row, 64 * i)  # first row of this m64 in the tile
                      if ta:  # M-major: chunk = row // 64, k rows of 64 elements
                          a_idx = lb.add(lb.mul(lb.div(row, 64), 64 * BK), kk * 16 * 64)
                      else:   # K-major: rows of 64 elements
                          a_idx = lb.add(lb.mul(row, BK), kk * 16)
                      da = _desc_plus(lb, da0, lb.add(sa_s, a_idx))
                      for j in range(nb):
                          db = _desc_plus(lb, db0[j], lb.add(sb_s, kk * 16 if tb else kk * 16 * 64))
                          x = j * msubs + i
                          accs[x] = lb.v(sched.WgmmaMmaAsyncOp(da, db, accs[x], bn, et, ta, not tb))
              lb.emit(sched.WgmmaCommitGroupOp())
              lb.emit(sched.WgmmaWaitGroupOp(1))

              def release(r: KernelBuilder):
                  _if(r, r.eq(lane, 0), lambda q: _release(q, empty, q.rem(q.add(g, S - 1), S), peer))
              _if(lb, lb.v(arith.CmpiOp(kt, lb.c(0), "ugt")), release)
              return accs

            accs = _for(tk, tk.c(0), ks.bound(tk), inits, step)
            if after_mainloop is not None:
                after_mainloop(tk)
            # The accumulators are still in flight here: sched-flush-wgmma puts the one
            # wait_group 0 of the tile before the epilogue's first read of them.
            rows, row0, lead = m, m0, []
            if ks.split is not None and staging is not None:  # TMA stores address split z directly
                lead = [ks.split]
            elif ks.split is not None:  # split z's rows z*M .. z*M + M-1 of the [S*M, N] view, guarded against M
                rows = tk.add(tk.mul(ks.split, m), m)
                row0 = tk.add(m0, tk.mul(ks.split, m))
            _epilogue(tk, accs, mats, outputs, reads_l, amap, rows, n, row0, n0, wg_row, warp, lane, msubs, bn,
                      staging, wg, ltid, lead)
            # The last slot goes back once the wgmmas reading it are done: after the epilogue,
            # which the flush before it orders after them.
            last = slot(tk, base, tk.c(ks.count - 1) if isinstance(ks.count, int) else tk.add(ks.count, -1))
            _if(tk, tk.eq(lane, 0), lambda q: _release(q, empty, q.rem(last, S), peer))

        if p.pingpong:
            pingpong_loop(b, tile, wg)
        else:
            tiles_loop(b, tile)
        if staging is not None:
            staging.drain(b, ltid)

    def pingpong_loop(b: KernelBuilder, tile, wg: SSAValue) -> None:
        # Ping-pong: warpgroup w takes this CTA's tiles w, w + 2, ...; named barrier 1 + w says
        # "w may start its main loop". Each warpgroup, once its K loop has issued every wgmma,
        # lets the other start the next tile's main loop, then drains, stores, and waits for its
        # turn again: one's epilogue runs while the other's MMAs do. Warpgroup 1 opens the first
        # turn for warpgroup 0; an arrival is made only when the other has a next tile, so no
        # barrier is left half-arrived at exit.
        mine = my_items(b)
        first = b.eq(wg, 0)

        def turn(q: KernelBuilder, action: str, mine_: bool):
            """sync on (mine_) or arrive at (not mine_) the barrier of warpgroup wg / the other one."""
            _wg_named_barrier(q, first, action, (1, 2) if mine_ else (2, 1), 256)
        _if(b, b.eq(wg, 1), lambda q: q.emit(sched.NamedBarrierOp("arrive", 1, 256)))

        def one(lb: KernelBuilder, i, _):
            m0, n0, ks = item(lb, lb.add(pid, lb.mul(i, p.grid)))
            turn(lb, "sync", True)

            def handoff(q: KernelBuilder):
                _if(q, q.lt(q.add(i, 1), mine), lambda r: turn(r, "arrive", False))
            tile(lb, base_of(lb, i), m0, n0, ks, handoff)
            return []
        loop_blk = Block(arg_types=[IndexType()])
        inner = b.at(loop_blk)
        one(inner, loop_blk.args[0], [])
        inner.emit(scf.YieldOp())
        b.emit(scf.ForOp(wg, mine, b.c(2), [], Region(loop_blk)))

    _if_else(kb, kb.lt(tid, 128), producer, consumer)
    if cl:  # no CTA exits while its peer may still arrive on its barriers
        kb.emit(sched.ClusterBarrierOp())
    kb.emit(sched.ReturnOp())
    em.module_block.insert_op_before(kop, em._host_func_op())
    host.emit(sched.LaunchOp(name, host_bufs))


@dataclass(frozen=True)
class KSpan:
    """The K-slices of one work item: `count` slices (an int when static) from `first` (None: 0);
    `split` is its z (None: no split-K)."""

    first: SSAValue | None
    count: SSAValue | int
    split: SSAValue | None = None

    def bound(self, b: KernelBuilder) -> SSAValue:
        return b.c(self.count) if isinstance(self.count, int) else self.count


def _load_b_multicast(b: KernelBuilder, tmb, sb, full, s, k0, n0, rank, bn: int, tb: bool) -> None:
    """This CTA's half of the pair's common B tile, multicast into both CTAs' slot s (same
    offset), completing on each CTA's full[s]: a K-major B is a half-height box (rows
    rank*bn/2 ..), an N-major B is half of the 64-wide chunks."""
    both = 0b11
    if tb:
        half = bn // 2
        b.emit(sched.TmaLoadOp(tmb, [b.add(n0, b.mul(rank, half)), k0], sb, [s, b.mul(rank, half * BK)], full, s, both))
        return
    per = bn // 64 // 2
    for c_ in range(per):
        chunk = b.add(b.mul(rank, per), c_)
        b.emit(sched.TmaLoadOp(tmb, [k0, b.add(n0, b.mul(chunk, 64))], sb, [s, b.mul(chunk, 64 * BK)], full, s, both))


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


def _desc_plus(b: KernelBuilder, base: SSAValue, elems: SSAValue) -> SSAValue:
    """A wgmma descriptor moved `elems` 2-byte elements on: its start-address field (bits 0-13)
    counts 16-byte units, and shared memory (< 256 KB) keeps the sum inside the field."""
    units = b.v(arith.IndexCastOp(b.div(elems, 8), i64))
    return b.v(arith.AddiOp(base, units))


def _elem_bytes(v: SSAValue) -> int:
    return {"f32": 4, "bf16": 2, "f16": 2}.get(F.dtype_name(F._elem(v)), 0)


def _tma_store_blocker(outputs, n: int) -> str:
    """Why the epilogue's outputs cannot be written by TMA stores ("" when they can)."""
    for o in outputs:
        eb = _elem_bytes(o)
        if not eb:
            return f"output {o.type} is not f32, bf16 or f16"
        if n * eb % 16:
            return f"output {o.type} has rows of {n * eb} bytes; TMA stores need a multiple of 16"
    return ""


class _Staging:
    """The TMA-store epilogue's shared memory: per consumer warpgroup two (64 rows x 128 bytes)
    buffers in the 128-byte-swizzled layout the output tensor maps expect. A warpgroup writes a
    chunk of one output into a buffer, one thread stores it with TMA, and the next chunk goes
    to the other buffer while the first is read out. There is one view of the buffers per
    output element type (they share the offset)."""

    def __init__(self, kb: KernelBuilder, offset: int, outputs, maps):
        self.maps = dict(zip(outputs, maps))
        self.bufs = {}
        for o in outputs:
            t = F._elem(o)
            if t not in self.bufs:
                buf = kb.v(sched.AllocOp(sched.memref([2, 2, STAGING_BYTES // _elem_bytes(o)], t, sched.SHARED)))
                buf.owner.properties["offset"] = IntegerAttr(offset, i64)
                self.bufs[t] = buf

    @staticmethod
    def barrier(b: KernelBuilder, wg: SSAValue) -> None:
        """bar.sync of this warpgroup's 128 threads (named barriers 3 and 4; 1 and 2 are ping-pong's)."""
        _wg_named_barrier(b, b.eq(wg, 0), "sync", (3, 4), 128)

    def store_chunks(self, b: KernelBuilder, values, outputs, wg, ltid, warp, lane, row0, n0, bn: int,
                     lead=()) -> None:
        """Write one 64-row m-sub: `values[(half, c8, dx)]` are this thread's output values (in
        `outputs` order) at accumulator row 8*half and column 8*c8 + dx of its fragment; `lead`
        are the outer coordinates of a higher-rank output (the split of split-K partials)."""
        r8 = b.div(lane, 4)
        for oi, o in enumerate(outputs):
            t, eb = F._elem(o), _elem_bytes(o)
            cols = 128 // eb  # columns per chunk: one swizzle row
            buf = self.bufs[t]
            lane_byte = b.mul(b.rem(lane, 4), 2 * eb)
            lane_chunk = b.div(lane_byte, 16)
            lane_elem = b.div(b.rem(lane_byte, 16), eb)
            row_elems = [b.mul(b.add(b.add(b.mul(warp, 16), r8), 8 * half), cols) for half in range(2)]
            assert (bn // cols) % 2 == 0  # chunks per tile even: the buffers alternate the same way every tile
            for cc in range(bn // cols):
                slot = cc % 2
                for half in range(2):
                    for j in range(cols // 8):
                        c8 = cc * cols // 8 + j
                        chunk = b.v(arith.XOrIOp(b.add(lane_chunk, 8 * j * eb // 16), r8))  # 128-byte swizzle
                        idx = b.add(row_elems[half], b.add(b.mul(chunk, 16 // eb), lane_elem))
                        b.store([b.trunc(values[(half, c8, dx)][oi], t) for dx in range(2)], buf, [wg, b.c(slot), idx])
                # the copy engine reads what the threads wrote: proxy fence, then the warpgroup's barrier
                b.emit(sched.FenceProxyAsyncOp())
                self.barrier(b, wg)

                def issue(q: KernelBuilder, slot=slot, cc=cc, o=o, buf=buf):
                    q.emit(sched.TmaStoreOp(buf, [wg, q.c(slot), q.c(0)], self.maps[o],
                                            [*lead, row0, q.add(n0, cc * cols)]))
                    q.emit(sched.BulkCommitGroupOp())
                    # the previous chunk's store has read its buffer: the next chunk may overwrite it
                    q.emit(sched.BulkWaitGroupOp(1, read=True))
                _if(b, b.eq(ltid, 0), issue)
                self.barrier(b, wg)

    @staticmethod
    def drain(b: KernelBuilder, ltid: SSAValue) -> None:
        """The shared memory must outlive the last stores' reads: wait for them before exiting."""
        _if(b, b.eq(ltid, 0), lambda q: q.emit(sched.BulkWaitGroupOp(0)))


def _epilogue(b: KernelBuilder, accs, mats, outputs, reads, amap, m, n, m0, n0, wg_row, warp, lane, msubs,
              bn, staging: _Staging | None = None, wg=None, ltid=None, lead=()) -> None:
    """Evaluate every output at each accumulator element this thread holds, then store: straight
    from the registers (pairs of columns, guarded at the edges), or through `staging` and TMA
    stores (which drop what falls outside the tensor).

    Accumulator layout of wgmma m64nNk16 (f32): register j of thread (warp w, lane l) holds row
    16w + l/4 + 8*((j%4)/2), column 8*(j/4) + 2*(l%4) + j%2 of the 64xN tile. Elements past the
    edge of a ragged tile are computed too (their reads clamped to the last row/column) and
    dropped.
    """
    nb = len(mats)
    results = [x.result for x in mats]
    row_base = b.add(b.add(m0, wg_row), b.add(b.mul(warp, 16), b.div(lane, 4)))
    col_base = b.add(n0, b.mul(b.rem(lane, 4), 2))
    ev_bufs = {v: amap[v] for v in reads}
    clamp = (lambda x, hi: b.v(arith.MinUIOp(x, b.c(hi - 1)))) if reads else (lambda x, hi: x)
    pair = n % 2 == 0
    for i in range(msubs):
        vals = [[b.extract(accs[j * msubs + i], e) for e in range(bn // 2)] for j in range(nb)]
        values = {}
        for half in range(2):
            row = b.add(row_base, 64 * i + 8 * half)
            row_c = clamp(row, m)
            for c8 in range(bn // 8):
                col = b.add(col_base, 8 * c8)
                e0 = 4 * c8 + 2 * half
                for dx in range(2):
                    ev = Evaluator(b, ev_bufs, {r: vals[j][e0 + dx] for j, r in enumerate(results)})
                    values[(half, c8, dx)] = [ev(o, [row_c, clamp(b.add(col, dx), n)], 1)[0] for o in outputs]
                if staging is not None:
                    continue
                if pair:
                    ok = b.andi(b.lt(row, m), b.lt(col, n))

                    def st(q: KernelBuilder, row=row, col=col, lanes=(values[(half, c8, 0)], values[(half, c8, 1)])):
                        for oi, o in enumerate(outputs):
                            t = F._elem(o)
                            q.store([q.trunc(lanes[0][oi], t), q.trunc(lanes[1][oi], t)], amap[o], [row, col])
                    _if(b, ok, st)
                else:
                    for dx in range(2):
                        cidx = b.add(col, dx)
                        ok = b.andi(b.lt(row, m), b.lt(cidx, n))

                        def st1(q: KernelBuilder, cidx=cidx, row=row, lane_vals=values[(half, c8, dx)]):
                            for oi, o in enumerate(outputs):
                                q.store([q.trunc(lane_vals[oi], F._elem(o))], amap[o], [row, cidx])
                        _if(b, ok, st1)
        if staging is not None:
            staging.store_chunks(b, values, outputs, wg, ltid, warp, lane, b.add(b.add(m0, wg_row), 64 * i), n0, bn,
                                 lead)


__all__ = ["emit_matmul", "fuse_matmul_tasks"]
