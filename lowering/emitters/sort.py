"""The sort scheduler's emitter (its heuristics are lowering/heuristics/sort.py): each row of a
`fusion.sort` sorted along the innermost dim by one kernel.

`bx` threads sort a row (`by` rows per block) in shared memory: two arrays of `net` slots (a
power of two), the elements' unsigned ordering keys (an integer of the element's width; a
mask's a byte) and their i32 positions in the row. The key: integers with the sign bit flipped
(u8 and masks as they are); floats with -0.0 made 0.0, a negative's bits complemented and a
positive's sign bit set, every NaN the greatest key; descending takes the complement.

1. The row goes in: "network" mode writes each element's key at its own slot (threads take
   columns t, t + bx, ...; the input's producers recomputed, as in every kernel); "select" mode
   (topk with a small k) has each thread walk the same columns keeping its first k (key,
   position) in registers, sorted by an insertion network that only an element before the last
   entry enters, and write only those k. Slots past the row (or past the candidates) get
   position >= n: they sort after every element.
2. A bitonic network sorts the slots: for each size s = 2, 4, ..., net and stride j = s/2, ...,
   1, every thread compare-exchanges its pairs (lo, lo + j), ascending where lo & s is 0 (all of
   the last merge), then a block barrier. Slots compare by key and, on equal keys, by position:
   so the order is total and the result is the stable sort's (equal keys keep their order in
   both directions, as torch's stable sort).
3. The first k slots are the results: the values (their keys turned back into bits; a float
   that comes back a zero or a NaN, whose sign and payload the key dropped, is the element read
   again at its position), the positions widened to i64, and the outputs computed pointwise
   from them (an epilogue the planner merged) are stored; tail rows of the grid store nothing.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float64Type, IndexType, IntegerType, i1, i32, i64
from xdsl.ir import Attribute, Block, Region, SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.lowering.analysis.schedules import input_reads, sort_geometry, sort_key_bytes
from fuser.lowering.common import Task, by_name, elem_bytes, leaves, shape_of
from fuser.lowering.emitters.emitter import KernelEmitter
from fuser.lowering.emitters.evaluator import Evaluator
from fuser.lowering.emitters.kernel_builder import KernelBuilder, emit_if


class SortKeys:
    """How elements of type `elem` are held (their bits as an integer of `width` bits) and
    ordered (an unsigned key of the same width; `descending` complements it)."""

    def __init__(self, elem: Attribute, descending: bool, n: int):
        self.elem, self.descending, self.n = elem, descending, n
        self.width = 8 * sort_key_bytes_of(elem)
        self.type = IntegerType(self.width)
        self.floats = F.is_float(elem) or isinstance(elem, Float64Type)

    def ones(self, kb: KernelBuilder) -> SSAValue:
        return kb.const(-1, self.type)

    def sign(self, kb: KernelBuilder) -> SSAValue:
        return kb.const(-(1 << (self.width - 1)), self.type)

    def bits(self, kb: KernelBuilder, x: SSAValue) -> SSAValue:
        """An element, as the Evaluator gives it (its compute type), as its bits."""
        if self.floats:
            x = kb.trunc(kb.ext(x), self.elem)
            return kb.v(arith.BitcastOp(x, self.type))
        if x.type == i1:
            return kb.v(arith.ExtUIOp(x, self.type))
        return x

    def value(self, kb: KernelBuilder, bits: SSAValue) -> SSAValue:
        """The element of these bits in its compute type (a bf16's widened to f32)."""
        if self.floats:
            return kb.ext(kb.v(arith.BitcastOp(bits, self.elem)))
        if self.elem == i1:
            return kb.v(arith.TruncIOp(bits, i1))
        return bits

    def stored(self, kb: KernelBuilder, bits: SSAValue) -> SSAValue:
        """The element of these bits as a buffer of its type stores it."""
        if self.floats:
            return kb.v(arith.BitcastOp(bits, self.elem))
        return self.value(kb, bits)

    def key(self, kb: KernelBuilder, bits: SSAValue) -> SSAValue:
        """The unsigned ordering key of an element's bits."""
        if self.floats:
            w = self.width
            absmask = kb.const((1 << (w - 1)) - 1, self.type)
            expmask = self.expmask(kb)
            mag = kb.v(arith.AndIOp(bits, absmask))
            nan = kb.v(arith.CmpiOp(mag, expmask, "ugt"))
            zero = kb.v(arith.CmpiOp(mag, kb.const(0, self.type), "eq"))
            r = kb.v(arith.SelectOp(zero, kb.const(0, self.type), bits))
            neg = kb.v(arith.CmpiOp(r, kb.const(0, self.type), "slt"))
            t = kb.v(arith.SelectOp(neg, kb.v(arith.XOrIOp(r, self.ones(kb))), kb.v(arith.OrIOp(r, self.sign(kb)))))
            key = kb.v(arith.SelectOp(nan, self.ones(kb), t))
        elif F.is_integer(self.elem) and not F.is_unsigned(self.elem):
            key = kb.v(arith.XOrIOp(bits, self.sign(kb)))
        else:  # u8 and masks
            key = bits
        return kb.v(arith.XOrIOp(key, self.ones(kb))) if self.descending else key

    def unkey(self, kb: KernelBuilder, key: SSAValue) -> SSAValue:
        """The bits of the element of this key: exact for integers and masks; for floats those
        of the canonical element (0.0 for either zero, a positive NaN for every NaN): see
        `canonical`."""
        if self.descending:
            key = kb.v(arith.XOrIOp(key, self.ones(kb)))
        if self.floats:
            positive = kb.v(arith.CmpiOp(key, kb.const(0, self.type), "slt"))  # (its sign bit set)
            nan = kb.v(arith.CmpiOp(key, self.ones(kb), "eq"))
            bits = kb.v(arith.SelectOp(positive, kb.v(arith.XOrIOp(key, self.sign(kb))),
                                       kb.v(arith.XOrIOp(key, self.ones(kb)))))
            return kb.v(arith.SelectOp(nan, kb.const((1 << (self.width - 1)) - 1, self.type), bits))
        if F.is_integer(self.elem) and not F.is_unsigned(self.elem):
            return kb.v(arith.XOrIOp(key, self.sign(kb)))
        return key

    def canonical(self, kb: KernelBuilder, bits: SSAValue) -> SSAValue:
        """Are these a float's canonical bits for a zero or a NaN (whose own sign and payload the
        key does not keep)?"""
        w = self.width
        mag = kb.v(arith.AndIOp(bits, kb.const((1 << (w - 1)) - 1, self.type)))
        return kb.v(arith.OrIOp(kb.v(arith.CmpiOp(mag, kb.const(0, self.type), "eq")),
                                kb.v(arith.CmpiOp(mag, self.expmask(kb), "ugt"))))

    def expmask(self, kb: KernelBuilder) -> SSAValue:
        return kb.const({16: 0x7C00 if self.elem == F.DTYPE_NAMES["f16"] else 0x7F80, 32: 0x7F800000,
                         64: 0x7FF0000000000000}[self.width], self.type)

    def before(self, kb: KernelBuilder, ka: SSAValue, pa: SSAValue, kb_: SSAValue, pb: SSAValue) -> SSAValue:
        """Does element (key ka, position pa) come before (kb_, pb)? A position >= n marks an
        empty slot, which comes after every element."""
        n = kb.const(self.n, i32)
        a_real = kb.v(arith.CmpiOp(pa, n, "ult"))
        b_empty = kb.v(arith.CmpiOp(pb, n, "uge"))
        less = kb.v(arith.CmpiOp(ka, kb_, "ult"))
        tie = kb.andi(kb.v(arith.CmpiOp(ka, kb_, "eq")), kb.v(arith.CmpiOp(pa, pb, "ult")))
        return kb.andi(a_real, kb.v(arith.OrIOp(b_empty, kb.v(arith.OrIOp(less, tie)))))


def sort_key_bytes_of(elem: Attribute) -> int:
    """Bytes of an element's bits in shared memory (as `sort_key_bytes`: a mask's is one)."""
    return max(1, elem_bytes(elem))


def _loop(kb: KernelBuilder, n: int, inits: list[SSAValue], body) -> list[SSAValue]:
    """`for i in 0..n` run by every thread, `body(kb, i, carried)` returning the carried values
    (inline when n is 1)."""
    if n == 1:
        return body(kb, kb.c(0), list(inits))
    index = kb.c(0).type
    blk = Block(arg_types=[index] + [v.type for v in inits])
    inner = kb.at(blk)
    ys = body(inner, blk.args[0], list(blk.args[1:]))
    inner.emit(scf.YieldOp(*ys))
    loop = scf.ForOp(kb.c(0), kb.c(n), kb.c(1), inits, Region(blk))
    kb.emit(loop)
    return list(loop.results)


def _i32(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    return kb.v(arith.IndexCastOp(x, i32))


def emit_sort(em: KernelEmitter, task: Task, materialized: set, args: set) -> None:
    op: F.SortOp = task.op
    x = op.input
    shape = shape_of(x)
    row_shape, n = shape[:-1], shape[-1]
    rows = math.prod(row_shape)
    k = op.kept
    p = sort_geometry(op, em.opts)
    bx, by, net = p.bx, p.by, p.net
    ks = SortKeys(F._elem(x), op.is_descending, n)
    assert ks.width == 8 * sort_key_bytes(op)
    results = set(op.results)
    in_reads = input_reads(op, x, materialized, args)
    outputs = list(dict.fromkeys(task.outputs))
    epi_reads = by_name(set().union(*(leaves(o, (materialized | results) - {o}, args) for o in outputs)) - results)
    values = list(dict.fromkeys(outputs + in_reads + epi_reads))
    host_bufs = em.kernel_buffers(values)

    def body(kb: KernelBuilder, kargs):
        amap = em.arg_map(host_bufs, kargs, values)
        tx, ty = kb.tid("x"), kb.tid("y")
        row = kb.add(kb.mul(kb.bid("x"), by), ty)
        row_ok = kb.lt(row, rows)
        row_c = kb.v(arith.MinUIOp(row, kb.c(rows - 1)))  # tail rows sort row R-1 and store nothing
        row_idx = kb.delinearize(row_c, row_shape)
        keys = kb.alloc([by * net], ks.type, "sort_keys")
        pos = kb.alloc([by * net], i32, "sort_pos")
        base = kb.mul(ty, net)

        def put(b: KernelBuilder, slot: SSAValue, key: SSAValue, at: SSAValue) -> None:
            b.store([key], keys, [b.add(base, slot)])
            b.store([at], pos, [b.add(base, slot)])

        def element(b: KernelBuilder, col: SSAValue) -> tuple[SSAValue, SSAValue]:
            """(valid, bits) of column `col` of this row (clamped into the row when past it)."""
            ok = b.lt(col, n)
            cc = b.v(arith.MinUIOp(col, b.c(n - 1)))
            ev = Evaluator(b, {v: amap[v] for v in in_reads})
            return ok, ks.bits(b, ev(x, row_idx + [cc], 1)[0])

        empty = kb.const(n, i32)
        # 1. the row (or each thread's candidates) into shared memory
        if p.mode == "network":
            def load(b: KernelBuilder, j: SSAValue, _carried):
                slot = b.add(tx, b.mul(j, bx))

                def fill(c: KernelBuilder):
                    ok, bits = element(c, slot)
                    put(c, slot, c.v(arith.SelectOp(ok, ks.key(c, bits), c.const(0, ks.type))),
                        c.v(arith.SelectOp(ok, _i32(c, slot), c.const(n, i32))))
                if bx > net:  # (a warp for a row of fewer slots)
                    emit_if(b, b.lt(slot, net), fill)
                else:
                    fill(b)
                return []
            _loop(kb, math.ceil(net / bx), [], load)
        else:
            init = [kb.const(0, ks.type), empty] * k

            def walk(b: KernelBuilder, j: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
                col = b.add(tx, b.mul(j, bx))
                ok, bits = element(b, col)
                key, at = ks.key(b, bits), _i32(b, col)
                old = [tuple(carried[2 * i:2 * i + 2]) for i in range(k)]  # (key, position), sorted

                def goes(c: KernelBuilder, i: int) -> SSAValue:
                    # before entry i: this thread's columns come in order, so the element's
                    # position is past every entry's and only a smaller key (or an empty entry) lets it in
                    kk, pp = old[i]
                    return c.v(arith.OrIOp(c.v(arith.CmpiOp(pp, c.const(n, i32), "uge")),
                                           c.v(arith.CmpiOp(key, kk, "ult"))))

                def insert(c: KernelBuilder) -> list[SSAValue]:
                    # slot i: unchanged if the element goes after it; the element if it goes
                    # before slot i but not before slot i-1; else slot i-1's entry, shifted down
                    g = [goes(c, i) for i in range(k - 1)] + [c.const(1, i1)]
                    new = []
                    for i in range(k):
                        for f in range(2):
                            mine = (key, at)[f]
                            shifted = c.v(arith.SelectOp(g[i - 1], old[i - 1][f], mine)) if i else mine
                            new.append(c.v(arith.SelectOp(g[i], shifted, old[i][f])))
                    return new
                # most elements go after the last entry: only those before it take the network
                enters = b.andi(ok, goes(b, k - 1))
                then, other = Block(), Block()
                then.add_op(scf.YieldOp(*insert(b.at(then))))
                other.add_op(scf.YieldOp(*carried))
                return list(b.emit(scf.IfOp(enters, [v.type for v in carried], Region(then), Region(other))).results)
            kept = _loop(kb, math.ceil(n / bx), init, walk)
            for i in range(k):
                put(kb, kb.add(kb.mul(tx, k), i), kept[2 * i], kept[2 * i + 1])
            for extra in range(math.ceil((net - bx * k) / bx)):
                slot = kb.add(kb.add(tx, bx * k), extra * bx)
                emit_if(kb, kb.lt(slot, net), lambda c, slot=slot: put(c, slot, c.const(0, ks.type), c.const(n, i32)))
        kb.emit(sched.BarrierOp())

        # 2. the bitonic network
        s = 2
        while s <= net:
            j = s // 2
            while j >= 1:
                def exchange(b: KernelBuilder, q: SSAValue, s: int, j: int) -> None:
                    lo = b.add(b.mul(b.div(q, j), 2 * j), b.rem(q, j))
                    hi = b.add(lo, j)
                    a_lo, a_hi = b.add(base, lo), b.add(base, hi)
                    bl, bh = b.load(keys, [a_lo], 1)[0], b.load(keys, [a_hi], 1)[0]
                    pl, ph = b.load(pos, [a_lo], 1)[0], b.load(pos, [a_hi], 1)[0]
                    swap = ks.before(b, bh, ph, bl, pl)
                    if s < net:  # a descending half of a bitonic merge swaps where hi is not before lo:
                        # of two elements exactly one is before the other (positions differ); an
                        # element is before an empty slot; two empty slots may go either way
                        desc = b.v(arith.CmpiOp(b.v(arith.AndIOp(lo, b.c(s))), b.c(0), "ne"))
                        swap = b.v(arith.XOrIOp(swap, desc))
                    b.store([b.v(arith.SelectOp(swap, bh, bl))], keys, [a_lo])
                    b.store([b.v(arith.SelectOp(swap, bl, bh))], keys, [a_hi])
                    b.store([b.v(arith.SelectOp(swap, ph, pl))], pos, [a_lo])
                    b.store([b.v(arith.SelectOp(swap, pl, ph))], pos, [a_hi])

                def stage(b: KernelBuilder, it: SSAValue, _carried, s=s, j=j):
                    q = b.add(tx, b.mul(it, bx))
                    if bx > net // 2:  # (more threads than pairs)
                        emit_if(b, b.lt(q, net // 2), lambda c: exchange(c, q, s, j))
                    else:
                        exchange(b, q, s, j)
                    return []
                _loop(kb, math.ceil(net // 2 / bx), [], stage)
                kb.emit(sched.BarrierOp())
                j //= 2
            s *= 2

        # 3. the first k slots: values, positions and what is computed from them

        def out(b: KernelBuilder, it: SSAValue, _carried):
            q = b.add(tx, b.mul(it, bx))
            ok = b.andi(b.lt(q, k), row_ok)
            qc = b.v(arith.MinUIOp(q, b.c(k - 1)))

            def store(c: KernelBuilder):
                at32 = c.load(pos, [c.add(base, qc)], 1)[0]
                bits = ks.unkey(c, c.load(keys, [c.add(base, qc)], 1)[0])
                if ks.floats:  # a zero's sign and a NaN's bits: the element's own, read again
                    then, other = Block(), Block()
                    t = c.at(then)
                    _, own = element(t, t.v(arith.IndexCastOp(at32, IndexType())))
                    then.add_op(scf.YieldOp(own))
                    other.add_op(scf.YieldOp(bits))
                    bits = c.v(scf.IfOp(ks.canonical(c, bits), [ks.type], Region(then), Region(other)))
                at = c.v(arith.ExtUIOp(at32, i64))
                idx = row_idx + [qc]
                computed = {op.values: ks.value(c, bits), op.indices: at}
                for o in outputs:
                    if o is op.values:
                        val = ks.stored(c, bits)
                    elif o is op.indices:
                        val = at
                    else:
                        oe = Evaluator(c, {v: amap[v] for v in epi_reads}, computed)
                        y = oe(o, idx, 1)[0]
                        ot = F._elem(o)
                        val = c.trunc(y, ot) if F.is_float(ot) else y
                    c.store([val], amap[o], idx)
            emit_if(b, ok, store)
            return []
        _loop(kb, math.ceil(k / bx), [], out)

    grid = (math.ceil(rows / by), 1, 1)
    em.kernel(host_bufs, grid, (bx, by, 1), body, schedule=p.describe(rows))
