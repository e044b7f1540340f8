"""The Hopper matmul kernel's epilogue (lowering/emitters/matmul.py builds the rest of the kernel): every
output of the task evaluated at each accumulator element, then stored straight from the
registers or staged in shared memory and written by TMA stores. The module docstring of
lowering/emitters/matmul.py describes both store paths.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import i8
from xdsl.ir import SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.lowering.analysis.schedules import ELEM_BYTES
from fuser.lowering.emitters.evaluator import Evaluator
from fuser.lowering.emitters.kernel_builder import KernelBuilder, emit_if, emit_if_else
from fuser.lowering.heuristics.matmul import STAGING_BYTES, STAGING_TOTAL


def wg_named_barrier(kb: KernelBuilder, is_wg0: SSAValue, action: str, ids: tuple[int, int], count: int) -> None:
    """`bar.<action>` on named barrier ids[0] in consumer warpgroup 0, ids[1] in warpgroup 1 (the
    id is an immediate, so the two warpgroups take the two sides of a branch)."""
    emit_if_else(kb, is_wg0, lambda q: q.emit(sched.NamedBarrierOp(action, ids[0], count)),
                 lambda q: q.emit(sched.NamedBarrierOp(action, ids[1], count)))


class Staging:
    """The TMA-store epilogue's shared memory: per consumer warpgroup two (64 rows x 128 bytes)
    buffers in the 128-byte-swizzled layout the output tensor maps expect. A warpgroup writes a
    chunk of one output into a buffer, one thread stores it with TMA, and the next chunk goes
    to the other buffer while the first is read out. There is one view of the buffers per
    element type (they share the offset).

    `targets` maps each tensor written through the staging (an output, or a serial split-K
    workspace) to (element type, tensor map). `rows` maps an output whose rows TMA cannot write
    (not a multiple of 16 bytes) to (its buffer, M, N): its chunks are written out by the
    warpgroup's threads instead, each warp a row at a time with one element per lane, so a
    store covers 32 consecutive elements of a row (`matmul_store=rows`; from the registers each
    store would touch 8 rows)."""

    def __init__(self, kb: KernelBuilder, targets: dict, rows: dict | None = None):
        self.elem = {o: t for o, (t, _) in targets.items()}
        self.maps = {o: m for o, (_, m) in targets.items()}
        self.rows = rows or {}
        # one byte buffer (sched-alias-smem places it), seen through a view per element type
        self.bytes = kb.alloc([STAGING_TOTAL], i8, "staging")
        self.bufs = {}
        for t in dict.fromkeys(self.elem.values()):
            view_t = sched.memref([2, 2, STAGING_BYTES // ELEM_BYTES[F.dtype_name(t)]], t, sched.SHARED)
            self.bufs[t] = kb.v(memref.ViewOp(self.bytes, kb.c(0), [], view_t))

    @staticmethod
    def barrier(b: KernelBuilder, wg: SSAValue) -> None:
        """bar.sync of this warpgroup's 128 threads (named barriers 3 and 4; 1 and 2 are ping-pong's)."""
        wg_named_barrier(b, b.eq(wg, 0), "sync", (3, 4), 128)

    def store_chunks(self, b: KernelBuilder, values, outputs, wg, ltid, warp, lane, row0, n0, bn: int,
                     lead=(), copy=None, first=None) -> None:
        """Write one 64-row m-sub: `values[(half, c8, dx)]` are this thread's output values (in
        `outputs` order) at accumulator row 8*half and column 8*c8 + dx of its fragment; `lead`
        are the outer coordinates of a higher-rank output (the split of split-K partials).
        `copy(q, src, src_indices, tensor_map, coords)` issues the bulk copy of a chunk (default:
        a TMA store); `first(q)` runs in the issuing thread before its first copy."""
        copy = copy or (lambda q, src, idx, tm, coords: q.emit(sched.TmaStoreOp(src, idx, tm, coords)))
        r8 = b.div(lane, 4)
        for oi, o in enumerate(outputs):
            t = self.elem[o]
            eb = ELEM_BYTES[F.dtype_name(t)]
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
                if o in self.rows:  # the warpgroup's threads write the chunk out
                    self.barrier(b, wg)
                    self._store_rows(b, o, buf, wg, slot, warp, lane, row0, b.add(n0, cc * cols), cols)
                    self.barrier(b, wg)
                    continue
                # the copy engine reads what the threads wrote: proxy fence, then the warpgroup's barrier
                b.emit(sched.FenceProxyAsyncOp())
                self.barrier(b, wg)

                def issue(q: KernelBuilder, slot=slot, cc=cc, o=o, buf=buf, opening=(oi == 0 and cc == 0)):
                    if opening and first is not None:
                        first(q)
                    copy(q, buf, [wg, q.c(slot), q.c(0)], self.maps[o], [*lead, row0, q.add(n0, cc * cols)])
                    q.emit(sched.BulkCommitGroupOp())
                    # the previous chunk's copy has read its buffer: the next chunk may overwrite it
                    q.emit(sched.BulkWaitGroupOp(1, read=True))
                emit_if(b, b.eq(ltid, 0), issue)
                self.barrier(b, wg)

    def _store_rows(self, b: KernelBuilder, o, buf, wg, slot: int, warp, lane, row0, col0, cols: int) -> None:
        """The chunk of `o` in `buf[wg, slot]` (64 rows x `cols`, 128-byte swizzled) to global
        memory at (row0, col0): warp w writes rows 16w..16w+15, lane l columns l, l + 32, ...,
        each store guarded against the tensor's edge."""
        dst, m, n = self.rows[o]
        per_chunk = 16 // ELEM_BYTES[F.dtype_name(self.elem[o])]  # elements per 16-byte swizzle unit
        for rr in range(16):
            r = b.add(b.mul(warp, 16), rr)
            row = b.add(row0, r)
            for c0 in range(0, cols, 32):
                c = b.add(lane, c0)
                unit = b.v(arith.XOrIOp(b.div(c, per_chunk), b.c(rr % 8)))  # (r % 8 == rr % 8: 16w is a multiple of 8)
                src = b.add(b.mul(r, cols), b.add(b.mul(unit, per_chunk), b.rem(c, per_chunk)))
                col = b.add(col0, c)
                ok = b.andi(b.lt(row, m), b.lt(col, n))
                x = b.load(buf, [wg, b.c(slot), src], 1)
                emit_if(b, ok, lambda q, x=x, row=row, col=col: q.store(x, dst, [row, col]))

    def drain(self, b: KernelBuilder, ltid: SSAValue) -> None:
        """The shared memory must outlive the last TMA stores' reads: wait for them before exiting."""
        if any(m is not None for m in self.maps.values()):
            emit_if(b, b.eq(ltid, 0), lambda q: q.emit(sched.BulkWaitGroupOp(0)))


def emit_epilogue(b: KernelBuilder, accs, mats, outputs, reads, amap, m, n, m0, n0, wg_row, warp, lane, msubs,
                  bn, staging: Staging | None = None, wg=None, ltid=None, lead=(), partial=None) -> None:
    """Evaluate every output at each accumulator element this thread holds, then store: straight
    from the registers (pairs of columns, guarded at the edges), or through `staging` and TMA
    stores (which drop what falls outside the tensor).

    `partial` (serial split-K's last split): an f32 [M, N] workspace holding the sum of the
    earlier splits; each accumulator element adds its element first (accumulator + sum, always
    in that order, so the result does not depend on timing). N is a multiple of 4 there, so a
    column pair never straddles the edge.

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
                if partial is not None:
                    at = [b.v(arith.MinUIOp(row, b.c(m - 1))), b.v(arith.MinUIOp(col, b.c(n - 2)))]
                    for dx, x in enumerate(b.load(partial, at, 2)):
                        vals[0][e0 + dx] = b.fadd(vals[0][e0 + dx], x)
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
                    emit_if(b, ok, st)
                else:
                    for dx in range(2):
                        cidx = b.add(col, dx)
                        ok = b.andi(b.lt(row, m), b.lt(cidx, n))

                        def st1(q: KernelBuilder, cidx=cidx, row=row, lane_vals=values[(half, c8, dx)]):
                            for oi, o in enumerate(outputs):
                                q.store([q.trunc(lane_vals[oi], F._elem(o))], amap[o], [row, cidx])
                        emit_if(b, ok, st1)
        if staging is not None:
            staging.store_chunks(b, values, outputs, wg, ltid, warp, lane, b.add(b.add(m0, wg_row), 64 * i), n0, bn,
                                 lead)


def store_partial(b: KernelBuilder, accs, msubs: int, bn: int, staging: Staging, ws, wg, ltid, warp, lane, row0, n0,
                  copy, first) -> None:
    """Serial split-K, a split before the last: this warpgroup's f32 accumulators (its rows from
    `row0`) go through the staging to the workspace `ws` with `copy` (the first split's TMA
    store, the later splits' TMA reduce-add); `first(q)` runs in the issuing thread before its
    first copy (the wait for this split's turn)."""
    for i in range(msubs):
        values = {(half, c8, dx): [b.extract(accs[i], 4 * c8 + 2 * half + dx)]
                  for half in range(2) for c8 in range(bn // 8) for dx in range(2)}
        staging.store_chunks(b, values, [ws], wg, ltid, warp, lane, b.add(row0, 64 * i), n0, bn, copy=copy,
                             first=first if i == 0 else None)
