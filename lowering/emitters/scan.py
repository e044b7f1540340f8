"""The scan scheduler's emitter (its heuristics are lowering/heuristics/scan.py): the inclusive
scan of a `fusion.scan` along the innermost dim, one kernel.

`bx` threads scan a row (`by` rows per block), a tile of `bx * vecs * lanes` elements at a time:

1. each thread loads its `vecs` consecutive vectors (the input's producers recomputed, as in
   every kernel) and scans them in registers, left to right; its last value is its chunk total;
2. the chunk totals are scanned across the warp by a butterfly of `sched.shfl_xor`s: at step
   d a lane gets the total of the other half of its 2d-lane group, and a lane of the upper half
   puts it before its own prefix (so the order of elements is kept, which a running max whose
   ties go to the later element needs);
3. each warp's total goes to shared memory; every thread folds the totals of the warps before
   its own (and of all warps: the tile's total);
4. each element's result is carry + (warps before) + (lanes before) + (its own running value),
   and the carry, the row's total so far, goes on to the next tile (a serial loop).

The outputs computed pointwise from the scan's result (an epilogue the planner merged) are
computed and stored here from the registers; tail vectors of a row and tail rows of the grid
compute clamped addresses and store nothing.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import i64
from xdsl.ir import Attribute, SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.lowering.analysis.schedules import input_reads, scan_geometry
from fuser.lowering.common import Task, by_name, leaves, shape_of
from fuser.lowering.emitters.emitter import KernelEmitter
from fuser.lowering.emitters.evaluator import Evaluator, compute_type, emit_cast
from fuser.lowering.emitters.kernel_builder import KernelBuilder, compute_float, emit_if, reduce_identity


class ScanState:
    """How a scan of `kind` over elements of type `elem` combines: floats in f32 (f64 in f64), integers and
    masks in i64 (every integer widened by its sign, u8 and masks by zeros)."""

    def __init__(self, kind: str, elem: Attribute):
        self.kind, self.elem = kind, elem
        self.floats = F.is_float(elem)
        self.type = compute_float(elem) if self.floats else i64

    def identity(self, kb: KernelBuilder) -> SSAValue:
        if self.floats:
            # +0.0 for sums, as torch's CPU cumsum (0 + x0 + x1 ...): a running sum is never
            # -0.0, whatever order the tree adds in.
            return kb.const(reduce_identity(self.kind), self.type)
        return kb.const({"sum": 0, "prod": 1, "max": -(1 << 63), "min": (1 << 63) - 1}[self.kind], i64)

    def convert(self, kb: KernelBuilder, x: SSAValue) -> SSAValue:
        """An element (in its compute type) as a state value."""
        return x if self.floats else emit_cast(kb, x, i64, self.elem)

    def combine(self, kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
        """a (the earlier elements) then b. A float max (min) takes b where b >= a (b <= a) or b
        is NaN, else a: torch's cummax / cummin (NaN sticks, ties go to the later element). It
        is associative, so the tree of steps 1-4 gives what a left-to-right walk gives."""
        if self.floats:
            if self.kind == "sum":
                return kb.fadd(a, b)
            if self.kind == "prod":
                return kb.fmul(a, b)
            later = kb.v(arith.CmpfOp(b, a, "oge" if self.kind == "max" else "ole"))
            take_b = kb.v(arith.OrIOp(later, kb.v(arith.CmpfOp(b, b, "uno"))))
            return kb.v(arith.SelectOp(take_b, b, a))
        op = {"sum": arith.AddiOp, "prod": arith.MuliOp, "max": arith.MaxSIOp, "min": arith.MinSIOp}[self.kind]
        return kb.v(op(a, b))

    def result(self, kb: KernelBuilder, s: SSAValue, et: Attribute) -> SSAValue:
        """The state as a value of the result's element type `et`, in its compute type (a float
        rounded to `et` and widened again; an i64 wrapped to a narrower integer)."""
        if self.floats:
            return kb.round_to(s, et)
        ct = compute_type(et)
        return s if ct == i64 else kb.v(arith.TruncIOp(s, ct))


def warp_scan(kb: KernelBuilder, st: ScanState, total: SSAValue, lane: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(the combination of the lanes before this one, the warp's total) of each lane's `total`."""
    before = st.identity(kb)
    for d in (1, 2, 4, 8, 16):
        theirs = kb.v(sched.ShflXorOp(total, d))
        upper = kb.v(arith.CmpiOp(kb.v(arith.AndIOp(lane, kb.c(d))), kb.c(0), "ne"))
        before = kb.v(arith.SelectOp(upper, st.combine(kb, theirs, before), before))
        total = kb.v(arith.SelectOp(upper, st.combine(kb, theirs, total), st.combine(kb, total, theirs)))
    return before, total


def emit_scan(em: KernelEmitter, task: Task, materialized: set, args: set) -> None:
    op: F.ScanOp = task.op
    x = op.input
    shape = shape_of(x)
    row_shape, cols = shape[:-1], shape[-1]
    rows = math.prod(row_shape)
    st = ScanState(op.kind.data, F._elem(x))
    in_reads = input_reads(op, x, materialized, args)
    outputs = list(dict.fromkeys(task.outputs))
    epi_reads = by_name(set().union(*(leaves(o, (materialized | {op.result}) - {o}, args) for o in outputs))
                        - {op.result})
    p = scan_geometry(op, in_reads, outputs, em.opts)
    lanes, vecs, bx, by = p.lanes, p.vecs, p.bx, p.by
    row_vecs = cols // lanes
    tile_vecs = bx * vecs
    tiles = math.ceil(row_vecs / tile_vecs)
    nwarps = bx // 32
    et = F._elem(op.result)
    values = list(dict.fromkeys(outputs + in_reads + epi_reads))
    host_bufs = em.kernel_buffers(values)

    def body(kb: KernelBuilder, kargs):
        amap = em.arg_map(host_bufs, kargs, values)
        tx, ty = kb.tid("x"), kb.tid("y")
        row = kb.add(kb.mul(kb.bid("x"), by), ty)
        row_ok = kb.lt(row, rows)
        row_c = kb.v(arith.MinUIOp(row, kb.c(rows - 1)))  # tail rows scan row R-1 and store nothing
        row_idx = kb.delinearize(row_c, row_shape)
        lane, warp = kb.rem(tx, 32), kb.div(tx, 32)
        totals = kb.alloc([by * nwarps], st.type, "warp_totals") if nwarps > 1 else None

        def tile(b: KernelBuilder, t: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            carry = carried[0]
            first = b.add(b.mul(t, tile_vecs), b.mul(tx, vecs))
            ev = Evaluator(b, {v: amap[v] for v in in_reads})
            # 1. this thread's vectors, scanned in registers
            vec_ids, valid, running = [], [], []
            acc = None
            for i in range(vecs):
                v = b.add(first, i)
                ok = b.lt(v, row_vecs)
                vc = b.v(arith.MinUIOp(v, b.c(row_vecs - 1)))
                xs = ev(x, row_idx + [b.mul(vc, lanes)], lanes)
                vec_ids.append(vc)
                valid.append(ok)
                for xl in xs:
                    s = b.v(arith.SelectOp(ok, st.convert(b, b.ext(xl)), st.identity(b)))
                    acc = s if acc is None else st.combine(b, acc, s)
                    running.append(acc)
            # 2. across the warp
            before, warp_total = warp_scan(b, st, acc, lane)
            # 3. across the warps
            if totals is not None:
                mine = b.add(b.mul(ty, nwarps), warp)
                emit_if(b, b.eq(lane, 0), lambda c: c.store([warp_total], totals, [mine]))
                b.emit(sched.BarrierOp())
                earlier, tile_total = st.identity(b), None
                for w in range(nwarps):
                    tw = b.load(totals, [b.add(b.mul(ty, nwarps), w)], 1)[0]
                    if w < nwarps - 1:  # (no warp has the last one before it)
                        earlier = b.v(arith.SelectOp(b.lt(b.c(w), warp), st.combine(b, earlier, tw), earlier))
                    tile_total = tw if tile_total is None else st.combine(b, tile_total, tw)
                b.emit(sched.BarrierOp())  # the next tile's totals overwrite these
                prefix = st.combine(b, st.combine(b, carry, earlier), before)
            else:
                tile_total = warp_total
                prefix = st.combine(b, carry, before)
            # 4. results and the outputs computed from them
            for i in range(vecs):
                res = [st.result(b, st.combine(b, prefix, r), et) for r in running[i * lanes:(i + 1) * lanes]]
                col0 = b.mul(vec_ids[i], lanes)

                def store(c: KernelBuilder, res=res, col0=col0):
                    for o in outputs:
                        if o is op.result:
                            vals = [c.trunc(r, et) if F.is_float(et) else r for r in res]
                        else:
                            vals = []
                            for l, r in enumerate(res):
                                oe = Evaluator(c, {v: amap[v] for v in epi_reads}, {op.result: r})
                                y = oe(o, row_idx + [c.add(col0, l)], 1)[0]
                                ot = F._elem(o)
                                vals.append(c.trunc(y, ot) if F.is_float(ot) else y)
                        c.store(vals, amap[o], row_idx + [col0])
                emit_if(b, b.andi(valid[i], row_ok), store)
            return [st.combine(b, carry, tile_total)]

        kb.serial_for(0, tiles, [st.identity(kb)], tile)

    grid = (math.ceil(rows / by), 1, 1)
    em.kernel(host_bufs, grid, (bx, by, 1), body, schedule=p.describe(rows, cols))
