"""The transpose scheduler's emitter (its heuristic is lowering/heuristics/transpose.py).

Each block owns one TILE x TILE tile of the output's (q, last) dims, where q is the output dim
that the permuted inputs' contiguous dim becomes. For each permute P = permute(E) in the
outputs' elementwise cone, the block first evaluates E at the tile's input-order indices, with
warps walking E's contiguous dim (coalesced reads), into a shared tile padded by one column
(scalar tiles are read across without bank conflicts; paired 2-byte ones with two-way ones); after a barrier it computes the outputs at output-order
indices, warps walking the output's last dim (coalesced writes), P read from the tile and
everything else read or recomputed at the output index as in the pointwise kernel (a permute
read through an index map, at another index than the tile's, included).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.lowering.emitters.emitter import KernelEmitter
from fuser.lowering.emitters.evaluator import Evaluator, compute_type
from fuser.lowering.emitters.kernel_builder import KernelBuilder, emit_if
from fuser.lowering.heuristics.transpose import TransposeParams


def emit_transpose(em: KernelEmitter, outputs: list[SSAValue], expr: dict, reads: list[SSAValue],
                   p: TransposeParams, perms: list[F.PermuteOp]) -> None:
    shape, q, last, T, R, V = p.shape, p.q, p.last, p.tile, p.rows, p.lanes
    all_vals = list(outputs) + reads
    host_bufs = em.kernel_buffers(all_vals)

    def body(kb: KernelBuilder, kargs):
        amap = em.arg_map(host_bufs, kargs, all_vals)
        tx, ty = kb.tid("x"), kb.tid("y")
        *batch, tq, tl = kb.delinearize(kb.bid("x"), p.grid_shape)
        q0, l0 = kb.mul(tq, T), kb.mul(tl, T)
        bufs = {v: amap[v] for v in reads}

        def out_index(iq: SSAValue, il: SSAValue) -> list[SSAValue]:
            idx: list[SSAValue | None] = [None] * len(shape)
            for d, b in zip(p.batch_dims, batch):
                idx[d] = b
            idx[q], idx[last] = iq, il
            return idx  # type: ignore[return-value]

        # 1. Each permute's source, read along its contiguous dim (output dim q <- tx).
        tiles = {}
        for n, op in enumerate(perms):
            perm = list(op.perm.get_values())
            tile = kb.alloc([T, T + 1], compute_type(F._elem(op.input)), f"tile{n}")
            tiles[op] = tile
            for k in range(0, T, R):
                row = kb.add(ty, k)
                o = out_index(kb.add(q0, kb.mul(tx, V)), kb.add(l0, row))
                ok = kb.andi(kb.lt(o[q], shape[q]), kb.lt(o[last], shape[last]))

                def load(b: KernelBuilder, o=o, row=row, perm=perm, op=op, tile=tile):
                    src = [None] * len(perm)
                    for d, pd in enumerate(perm):
                        src[pd] = o[d]
                    # V elements along the source's contiguous dim (output dim q)
                    for j, x in enumerate(Evaluator(b, bufs)(op.input, src, V)):
                        b.store([b.ext(x) if F.is_float(x.type) else x], tile, [row, b.add(b.mul(tx, V), j)])
                emit_if(kb, ok, load)
        kb.emit(sched.BarrierOp())
        # 2. The outputs, written along the output's last dim (<- tx).
        for k in range(0, T, R):
            col = kb.add(ty, k)
            o = out_index(kb.add(q0, col), kb.add(l0, kb.mul(tx, V)))
            ok = kb.andi(kb.lt(o[q], shape[q]), kb.lt(o[last], shape[last]))

            def store(b: KernelBuilder, o=o, col=col):
                # V elements along the output's last dim; lane j of a staged permute is tile row tx*V + j
                lanes = []
                for j in range(V):
                    staged = {op.result: b.load(tiles[op], [b.add(b.mul(tx, V), j), col], 1)[0] for op in perms}
                    oj = o[:-1] + [b.add(o[-1], j)] if j else o
                    # (a tile element is the permute at this output position only: an index map
                    # that reads the permute elsewhere, a gather or a slice, computes it there)
                    ev = Evaluator(b, bufs, staged, overrides_at=oj)
                    lanes.append([ev(expr[out], oj, 1)[0] for out in outputs])
                for n, out in enumerate(outputs):
                    t = F._elem(out)
                    b.store([b.trunc(lane[n], t) if F.is_float(t) else lane[n] for lane in lanes], amap[out], o)
            emit_if(kb, ok, store)

    grid = 1
    for g in p.grid_shape:
        grid *= g
    em.kernel(host_bufs, (grid, 1, 1), (T // V, R, 1), body, schedule=p.describe())


