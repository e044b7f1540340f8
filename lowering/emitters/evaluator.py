"""The `Evaluator`: emits the scalars of a fusion value at a multi-index inside a kernel,
recomputing pointwise and shape ops and loading materialized values; `emit_unary` and
`emit_binary` spell the fusion's math ops in arith/math ops.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects import scf
from xdsl.dialects.builtin import Float16Type, Float64Type, FloatAttr, IntegerType, i1, i32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from fuser.dialects import fusion as F
from fuser.dialects.fusion import fp8
from fuser.dialects import sched
from fuser.dialects.arith_ext import RemFOp
from fuser.dialects.math_ext import ErfcinvOp, ErfcOp, ErfinvOp, GeluOp, LgammaOp
from fuser.lowering.common import ScheduleError, shape_of
from fuser.lowering.emitters.kernel_builder import KernelBuilder, f32, index
from fuser.lowering.emitters.random import emit_iota, emit_random
from fuser.lowering.provenance import located


class Evaluator:
    """Emits the scalars of a fusion value at a multi-index, each in its compute type
    (`compute_type`: f32 for f16, bf16 and f32; signless i8 for u8; f64 (in f64 registers, never
    through f32), i1 and the other integers as themselves).

    `lanes` > 1 asks for that many consecutive elements along the value's last dimension
    (lane 0 at `idx`, whose last coordinate is a multiple of `lanes`). Materialized values and
    function arguments are loaded from their buffers; everything else is recomputed.
    """

    def __init__(self, kb: KernelBuilder, buffers: dict[SSAValue, SSAValue],
                 overrides: dict[SSAValue, SSAValue] | None = None, index_maps: dict | None = None,
                 overrides_at: Sequence[SSAValue] | None = None, overrides_per_row: bool = False):
        self.kb = kb
        self.buffers = buffers          # fusion value -> kernel memref argument (or a shared-memory copy)
        self.overrides = overrides if overrides is not None else {}  # fusion value -> f32 scalar in registers
        # The one index at which the overrides hold (a transpose tile's element, valid at its own
        # output position only); elsewhere, as where an index map reads the value at another
        # position, it is computed as if there were no override. None: the overrides hold at any index.
        self.overrides_at = None if overrides_at is None else tuple(overrides_at)
        # The overrides are statistics of the whole row (a normalization's reductions), the same
        # at every element the kernel computes with them: a division by one is a multiply by its
        # reciprocal. (A matmul epilogue's or a scan's overrides are the element's own values.)
        self.overrides_per_row = overrides_per_row
        self.index_maps = index_maps or {}  # fusion value -> f(index) -> index into its buffer
        self.memo: dict = {}

    def __call__(self, v: SSAValue, idx: Sequence[SSAValue], lanes: int = 1) -> list[SSAValue]:
        idx = tuple(idx)
        if (v, idx, lanes) not in self.memo:
            # The elementwise ops under `v` read their operands at the same index: evaluate them
            # operands first, in the order a recursive walk would, so that a long chain of them
            # (thousands of ops) needs no deep recursion; only shape ops recurse.
            for u in self._elementwise_cone(v, idx, lanes):
                self.memo[(u, idx, lanes)] = self._eval(u, list(idx), lanes)
        return self.memo[(v, idx, lanes)]

    def _elementwise_cone(self, v: SSAValue, idx: tuple, lanes: int) -> list[SSAValue]:
        """`v` and the not yet evaluated values it reads at the same index, operands first."""
        order: list[SSAValue] = []
        done: set[SSAValue] = set()
        todo: list[tuple[SSAValue, bool]] = [(v, False)]
        while todo:
            u, expanded = todo.pop()
            if u in done or (u, idx, lanes) in self.memo:
                continue
            op = u.owner
            leaf = self._overridden(u, idx) or u in self.buffers or not isinstance(op, F.POINTWISE_OPS)
            if expanded or leaf:
                done.add(u)
                order.append(u)
                continue
            todo.append((u, True))
            todo.extend((o, False) for o in reversed(op.operands))
        return order

    def _row_constants(self, xs: list[SSAValue], t: Attribute) -> bool:
        """Whether scalars `xs` are all row statistics (`overrides_per_row`, read through broadcasts),
        of an f32-computed type."""
        if not self.overrides_per_row or isinstance(t, Float64Type) or not F.is_float(t):
            return False
        held = {id(x) for x in self.overrides.values()}
        return all(id(x) in held for x in xs)

    def _reciprocal(self, x: SSAValue) -> SSAValue:
        key = ("reciprocal", x)
        if key not in self.memo:
            self.memo[key] = self.kb.fdiv(self.kb.const(1.0, x.type), x)
        return self.memo[key]

    def _overridden(self, v: SSAValue, idx: Sequence[SSAValue]) -> bool:
        return v in self.overrides and (self.overrides_at is None or tuple(idx) == self.overrides_at)

    def _per_lane(self, fn: Callable[[list[SSAValue]], list[SSAValue]], idx: list[SSAValue], lanes: int) -> list[SSAValue]:
        out = []
        for k in range(lanes):
            lane_idx = idx[:-1] + [self.kb.add(idx[-1], k)] if idx else idx
            out += fn(lane_idx)
        return out

    def _eval(self, v: SSAValue, idx: list[SSAValue], lanes: int) -> list[SSAValue]:
        with located(v.owner if isinstance(v.owner, Operation) else None):  # the ops emitted for v's op
            return self._eval_value(v, idx, lanes)

    def _eval_value(self, v: SSAValue, idx: list[SSAValue], lanes: int) -> list[SSAValue]:
        kb = self.kb
        if self._overridden(v, idx):
            return [self.overrides[v]] * lanes
        if v in self.buffers:
            buf = self.buffers[v]
            if v in self.index_maps:
                idx = self.index_maps[v](idx)
            if not idx:  # rank-0 tensor
                return [kb.ext(kb.load(buf, [], 1)[0])] * lanes
            # One load per element of a global buffer, however many values read it there (two
            # reshapes of one input): a kernel never writes the global buffers it reads values
            # from, so LLVM's forbidding a load's reuse past a store to another buffer costs
            # bandwidth for nothing. (Shared copies may be rewritten: loaded each time.)
            key = ("load", buf, tuple(idx), lanes)
            if key in self.memo:
                return self.memo[key]
            vals = kb.load(buf, idx, lanes)
            vals = [kb.ext(x) if F.is_float(x.type) else x for x in vals]
            if sched.memory_space(buf.type) == sched.GLOBAL:
                self.memo[key] = vals
            return vals
        op = v.owner
        if isinstance(op, F.FullOp):
            et = F._elem(v)
            if isinstance(et, IntegerType):  # (a u8's 200 is the i8 -56: the same bits)
                w = et.width.data
                n = int(op.value.value.data) % (1 << w) if w > 1 else int(op.value.value.data)
                return [kb.const(n - (1 << w) if w > 1 and n >= 1 << (w - 1) else n, compute_type(et))] * lanes
            if isinstance(et, Float64Type):
                return [kb.const(op.value.value.data, et)] * lanes
            if F.is_fp8(et):  # its bits, rounded by torch's rule
                b = fp8.bits_of(op.value.value.data, F.dtype_name(et))
                return [kb.const(b - 256 if b >= 128 else b, compute_type(et))] * lanes
            return [kb.cf(_round_const(op.value.value.data, et))] * lanes
        if isinstance(op, F.IotaOp):
            return emit_iota(kb, op, idx, lanes)
        if isinstance(op, F.RandomOp):  # (its seed and offset are 0-d: read at the empty index)
            return emit_random(kb, op, self(op.seed, [], 1)[0], self(op.offset, [], 1)[0], idx, lanes)
        if isinstance(op, F.BroadcastOp):
            new = set(op.dims.get_values())
            rank = len(shape_of(v))
            sub = [i for d, i in enumerate(idx) if d not in new]
            if (rank - 1) in new:  # last dim is new: every lane reads the same element
                return self(op.input, sub, 1) * lanes
            return self(op.input, sub, lanes)
        if isinstance(op, F.ReshapeOp):
            out_shape, in_shape = shape_of(v), shape_of(op.input)
            keep = _common_suffix(out_shape, in_shape)
            if keep or (lanes > 1 and in_shape and in_shape[-1] % lanes == 0):
                # (trailing dims the reshape keeps map through as they are: no division for them)
                return self(op.input, kb.reindex(idx, out_shape, in_shape), lanes)
            lin = kb.linearize(idx, out_shape)
            return [x for k in range(lanes) for x in self(op.input, kb.delinearize(kb.add(lin, k), in_shape), 1)]
        if isinstance(op, F.PermuteOp):
            perm = list(op.perm.get_values())
            def at(ix: list[SSAValue]) -> list[SSAValue]:
                sub = [None] * len(perm)
                for i, p in enumerate(perm):
                    sub[p] = ix[i]
                return sub
            if lanes > 1 and perm[-1] == len(perm) - 1:
                return self(op.input, at(idx), lanes)
            return self._per_lane(lambda ix: self(op.input, at(ix), 1), idx, lanes)
        if isinstance(op, F.INDEX_MAP_OPS):
            return self._index_map(op, idx, lanes)
        if isinstance(op, F.SegmentSetOp):  # the kernel that writes it (an epilogue) computes its operand
            return self(op.input, idx, lanes)
        if isinstance(op, F.CastOp):
            return [emit_cast(kb, x, F._elem(v), F._elem(op.input)) for x in self(op.input, idx, lanes)]
        if isinstance(op, F.UnaryOp) and (F.is_integer(F._elem(v)) or F._elem(v) == i1):
            return [emit_int_unary(kb, op, x) for x in self(op.input, idx, lanes)]
        if isinstance(op, F.UnaryOp):
            return [emit_unary(kb, op, x) for x in self(op.input, idx, lanes)]
        if isinstance(op, F.BinaryOp) and (F.is_integer(F._elem(v)) or F._elem(v) == i1):
            a, b = self(op.lhs, idx, lanes), self(op.rhs, idx, lanes)
            unsigned = F.is_unsigned(F._elem(v))
            return [emit_int_binary(kb, op, x, y, unsigned) for x, y in zip(a, b)]
        if isinstance(op, F.BinaryOp):
            a, b = self(op.lhs, idx, lanes), self(op.rhs, idx, lanes)
            if isinstance(op, F.DivOp) and self._row_constants(b, F._elem(v)):
                # a divisor held for the whole row (a softmax's sum): its reciprocal once (LLVM
                # hoists it out of the row loop) and a multiply per element, within 1 ulp of the
                # division (Triton's `/` is div.full, 2 ulp), instead of ~10 instructions each
                return [self._round(kb.fmul(x, self._reciprocal(y)), v) for x, y in zip(a, b)]
            return [self._round(emit_binary(kb, op, x, y), v) for x, y in zip(a, b)]
        if isinstance(op, F.FloatTestOp):
            return [emit_float_test(kb, op, x) for x in self(op.input, idx, lanes)]
        if isinstance(op, F.LogicalNotOp):
            return [kb.v(arith.XOrIOp(x, kb.const(1, i1))) for x in self(op.input, idx, lanes)]
        if isinstance(op, F.LogicalBinaryOp):
            combine = {F.LogicalAndOp: arith.AndIOp, F.LogicalOrOp: arith.OrIOp, F.LogicalXorOp: arith.XOrIOp}[type(op)]
            a, b = self(op.lhs, idx, lanes), self(op.rhs, idx, lanes)
            return [kb.v(combine(x, y)) for x, y in zip(a, b)]
        if isinstance(op, F.CmpOp):
            a, b = self(op.lhs, idx, lanes), self(op.rhs, idx, lanes)
            et, p = F._elem(op.lhs), op.predicate.data
            if isinstance(et, IntegerType):  # u8 and masks (false < true) compare unsigned
                sign = "u" if F.is_unsigned(et) or et == i1 else "s"
                pred = p if p in ("eq", "ne") else sign + p
                return [kb.v(arith.CmpiOp(x, y, pred)) for x, y in zip(a, b)]
            pred = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}[p]
            return [kb.v(arith.CmpfOp(x, y, pred)) for x, y in zip(a, b)]
        if isinstance(op, F.WhereOp):
            c, a, b = self(op.cond, idx, lanes), self(op.lhs, idx, lanes), self(op.rhs, idx, lanes)
            return [kb.v(arith.SelectOp(ci, x, y)) for ci, x, y in zip(c, a, b)]
        raise ScheduleError(f"'{op.name}' cannot be recomputed inside a kernel")

    def _index_map(self, op, idx: list[SSAValue], lanes: int) -> list[SSAValue]:
        """A slice, pad, cat or flip at `idx`: its operands read at the mapped index. A pad or
        cat reads each of its sources at an index clamped into that source and selects the one
        the index falls in (loads stay in bounds with no branch; the clamped reads of the others
        hit the same few cached elements). `lanes` consecutive elements stay one vector access
        where the last dim's offsets keep every lane group inside one source, aligned; else
        each lane is mapped alone."""
        kb, last = self.kb, len(idx) - 1
        if isinstance(op, F.INDEXED_OPS):
            return self._indexed(op, idx, lanes)
        if isinstance(op, F.SliceOp):
            start, step = list(op.start.get_values()), list(op.step.get_values())
            def at(ix: list[SSAValue]) -> list[SSAValue]:
                return [kb.add(kb.mul(i, k), s) for i, s, k in zip(ix, start, step)]
            whole = step[last] == 1 and start[last] % lanes == 0 and shape_of(op.input)[last] % lanes == 0
            if lanes == 1 or whole:
                return self(op.input, at(idx), lanes)
            return self._per_lane(lambda ix: self(op.input, at(ix), 1), idx, lanes)
        if isinstance(op, F.FlipOp):
            flipped = set(op.dims.get_values())
            shape = shape_of(op.input)
            def at(ix: list[SSAValue], width: int = 1) -> list[SSAValue]:  # (the last dim's lanes reversed as a group)
                return [kb.v(arith.SubiOp(kb.c(shape[d] - (width if d == last else 1)), i)) if d in flipped else i
                        for d, i in enumerate(ix)]
            if lanes == 1 or last not in flipped:
                return self(op.input, at(idx), lanes)
            return self(op.input, at(idx, lanes), lanes)[::-1]  # (the last extent is a multiple of lanes)
        if isinstance(op, F.AsStridedOp):
            return self._as_strided(op, idx, lanes)
        # pad and cat: (source, where it starts in the result, per dim) for each source
        if isinstance(op, F.PadOp):
            low = list(op.low.get_values())
            sources = [(op.input, low)]
            fill = self(op.value, [], 1)[0]
        else:
            sources, offset, dim = [], 0, op.dim.data
            for x in op.inputs:
                sources.append((x, [offset if d == dim else 0 for d in range(len(idx))]))
                offset += shape_of(x)[dim]
            fill = None
        sources = [(x, off) for x, off in sources if 0 not in shape_of(x)]
        out_shape = shape_of(op.result)
        aligned = lanes == 1 or all(off[last] % lanes == 0 and shape_of(x)[last] % lanes == 0 for x, off in sources)
        if not aligned:
            return self._per_lane(lambda ix: self._select_source(sources, fill, out_shape, ix, 1), idx, lanes)
        return self._select_source(sources, fill, out_shape, idx, lanes)

    def _as_strided(self, op, idx: list[SSAValue], lanes: int) -> list[SSAValue]:
        """A strided view at `idx`: its storage read at offset + sum(idx[d] * strides[d]). A lane
        group is one vector access where the innermost stride is 1 and every lane group starts
        at a multiple of `lanes` (the offset and the other strides are multiples of it: the
        storage buffer itself is 16-byte aligned, which the runtime checks); an innermost
        stride of 0 (an expanded dim) reads one element for all lanes; else each lane is alone."""
        kb = self.kb
        strides, offset = list(op.strides.get_values()), op.offset.data

        def at(ix: list[SSAValue]) -> list[SSAValue]:
            flat = None
            for i, s in zip(ix, strides):
                if s:
                    term = kb.mul(i, s)
                    flat = term if flat is None else kb.add(flat, term)
            return [kb.c(offset) if flat is None else kb.add(flat, offset)]
        if lanes == 1:
            return self(op.input, at(idx), 1)
        if strides[-1] == 0:
            return self(op.input, at(idx), 1) * lanes
        if strides[-1] == 1 and offset % lanes == 0 and all(s % lanes == 0 for s in strides[:-1]):
            return self(op.input, at(idx), lanes)
        return self._per_lane(lambda ix: self(op.input, at(ix), 1), idx, lanes)

    def _indexed(self, op, idx: list[SSAValue], lanes: int) -> list[SSAValue]:
        """A gather or index_select at `idx`: the input read where the index tensor says along
        `dim`. A lane group of an index_select along another dim than the last reads one index
        for all its lanes (one vector access, an embedding row); anything else maps each lane."""
        if isinstance(op, F.ScatterOp):
            return self._scatter(op, idx, lanes)
        d = op.dim.data
        extent = shape_of(op.input)[d]
        gather = isinstance(op, F.GatherOp)

        def at(ix: list[SSAValue]) -> list[SSAValue]:
            pos = self(op.index, ix if gather else [ix[d]], 1)[0]
            return ix[:d] + [self._position(pos, extent)] + ix[d + 1:]
        if lanes == 1 or (not gather and d != len(idx) - 1):
            return self(op.input, at(idx), lanes)
        return self._per_lane(lambda ix: self(op.input, at(ix), 1), idx, lanes)

    def _position(self, i: SSAValue, extent: int) -> SSAValue:
        """Index value `i` (i32 or i64) as a position in [0, extent): below 0 it counts from the
        end, as torch's; still outside, the nearest end (a defined read where torch raises)."""
        return self.kb.v(arith.IndexCastOp(normalized_index(self.kb, i, extent), index))

    def _scatter(self, op: F.ScatterOp, idx: list[SSAValue], lanes: int) -> list[SSAValue]:
        """A fusion.scatter at `idx`: the input's element, then every src element whose index
        lands on it, in index order (the last wins; `add` sums in the compute type, rounded
        once). Unsorted, a loop over the whole index line compares each index; sorted
        (fusion-sort-scatters), a binary search in each sorted chunk gives the range of the
        line's positions that land here, read in order. A lane group along the last dim shares
        one search where the index line is shared along it (index_add: an embedding gradient's
        row, read as vectors); otherwise each lane is alone."""
        d, xs, ss = op.dim.data, shape_of(op.input), shape_of(op.src)
        last = len(xs) - 1
        lines = op.line_shape()
        if lanes > 1 and not (d != last and lines[-1] == 1 and ss[last] == xs[last]):
            return self._per_lane(lambda ix: self._scatter(op, ix, 1), idx, lanes)
        kb = self.kb
        acc0 = self(op.input, idx, lanes)
        if ss[d] == 0:
            return acc0
        inside, q = None, list(idx)  # q: the src coordinates (dim's is set per index position)
        for k in range(len(xs)):
            if k != d and ss[k] < xs[k]:
                ok = kb.lt(idx[k], ss[k])
                inside = ok if inside is None else kb.andi(inside, ok)
                q[k] = kb.v(arith.MinUIOp(idx[k], kb.c(ss[k] - 1)))
        others = [k for k in range(len(xs)) if k != d]
        line = [kb.c(0) if lines[m] == 1 else q[k] for m, k in enumerate(others)]
        ity = F._elem(op.index)
        target = kb.v(arith.IndexCastOp(idx[d], ity))
        compute = acc0[0].type

        def take(b: KernelBuilder, acc: list[SSAValue], vals: list[SSAValue], hit: SSAValue | None) -> list[SSAValue]:
            if op.is_add:
                add = arith.AddfOp if F.is_float(F._elem(op.input)) else arith.AddiOp
                new = [b.v(add(a, x)) for a, x in zip(acc, vals)]
            else:
                new = vals
            return new if hit is None else [b.v(arith.SelectOp(hit, x, a)) for x, a in zip(new, acc)]

        def loop(b: KernelBuilder, lo: SSAValue, hi: SSAValue, acc: list[SSAValue],
                 body: Callable[[KernelBuilder, Evaluator, SSAValue, list[SSAValue]], list[SSAValue]],
                 carried: list[Attribute] | None = None) -> list[SSAValue]:
            blk = Block(arg_types=[index] + (carried or [compute] * len(acc)))
            lb = b.at(blk)
            out = body(lb, Evaluator(lb, self.buffers, self.overrides, self.index_maps,
                                     overrides_per_row=self.overrides_per_row), blk.args[0], list(blk.args[1:]))
            lb.emit(scf.YieldOp(*out))
            return list(b.emit(scf.ForOp(lo, hi, b.c(1), acc, Region(blk))).results)

        if not op.is_sorted:
            def position(b: KernelBuilder, ev: Evaluator, j: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                at = lambda c: c[:d] + [j] + c[d:]  # noqa: E731
                pos = normalized_index(b, ev(op.index, at(line), 1)[0], xs[d])
                hit = b.v(arith.CmpiOp(pos, target, "eq"))
                hit = hit if inside is None else b.andi(hit, inside)
                return take(b, acc, ev(op.src, q[:d] + [j] + q[d + 1:], lanes), hit)
            out = loop(kb, kb.c(0), kb.c(ss[d]), acc0, position)
        else:
            n_chunks, width = shape_of(op.index)[-2:]
            bound = kb.v(arith.AddiOp(target, kb.const(1, ity)))

            def chunk(b: KernelBuilder, ev: Evaluator, k: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                lo = self._lower_bound(b, ev, op.index, line + [k], width, target)
                hi = self._lower_bound(b, ev, op.index, line + [k], width, bound)
                if inside is not None:
                    hi = b.v(arith.SelectOp(inside, hi, lo))
                base = b.mul(k, width)

                def element(c: KernelBuilder, ev2: Evaluator, i: SSAValue, acc2: list[SSAValue]) -> list[SSAValue]:
                    j = c.add(base, c.v(arith.IndexCastOp(ev2(op.order, line + [k, i], 1)[0], index)))
                    return take(c, acc2, ev2(op.src, q[:d] + [j] + q[d + 1:], lanes), None)
                return loop(b, lo, hi, acc, element)
            out = loop(kb, kb.c(0), kb.c(n_chunks), acc0, chunk)
        return [self._round(x, op.result) for x in out] if op.is_add else out

    def _lower_bound(self, b: KernelBuilder, ev: "Evaluator", sorted_index: SSAValue, row: list[SSAValue],
                     width: int, value: SSAValue) -> SSAValue:
        """How many elements of the ascending `sorted_index[*row, :]` (of `width`) are below
        `value`: a branch-free search, unrolled, of width.bit_length() steps of one probe each
        in 32-bit arithmetic (the scatter's kernel is bound by these steps: an embedding
        gradient searches once per 16-byte vector). Step s moves `pos` up by 2^s where the
        element before pos + 2^s is below `value`; a probe past the end reads the last element,
        which keeps the line ascending, and the result is clamped to `width`."""
        pos = b.const(0, i32)
        last = b.const(width - 1, i32)
        for s in reversed(range(width.bit_length())):
            before = b.v(arith.AddiOp(pos, b.const((1 << s) - 1, i32)))   # the element before pos + 2^s
            at = b.v(arith.IndexCastOp(b.v(arith.MinUIOp(before, last)), index))
            below = b.v(arith.CmpiOp(ev(sorted_index, row + [at], 1)[0], value, "slt"))
            pos = b.v(arith.SelectOp(below, b.v(arith.AddiOp(before, b.const(1, i32))), pos))
        return b.v(arith.IndexCastOp(b.v(arith.MinUIOp(pos, b.const(width, i32))), index))

    def _select_source(self, sources: list, fill: SSAValue | None, out_shape: tuple, idx: list[SSAValue],
                       lanes: int) -> list[SSAValue]:
        """The element at `idx` of a pad (`fill` outside its one source) or a cat (the source
        whose range holds `idx`); a source `(x, off)` starts at `off` in the result."""
        kb, last = self.kb, len(idx) - 1
        out: list[SSAValue] | None = None if fill is None else [fill] * lanes
        for x, off in reversed(sources):
            shape, inside, at = shape_of(x), None, []
            for d, (i, o) in enumerate(zip(idx, off)):
                if o == 0 and shape[d] == out_shape[d]:
                    at.append(i)
                    continue
                width = lanes if d == last else 1  # (a lane group stays whole: aligned, clamped as one)
                if o > 0:
                    clamped = kb.v(arith.SubiOp(kb.v(arith.MaxUIOp(i, kb.c(o))), kb.c(o)))
                    shifted = kb.v(arith.SubiOp(i, kb.c(o))) if out is not None else None  # (wraps below 0)
                else:
                    clamped = shifted = kb.add(i, -o)
                if out is not None:  # (a cat's last source needs no test: it takes every index the others leave)
                    ok = kb.lt(shifted, shape[d])  # unsigned: a wrapped negative index fails too
                    inside = ok if inside is None else kb.andi(inside, ok)
                at.append(kb.v(arith.MinUIOp(clamped, kb.c(shape[d] - width))))
            vals = self(x, at, lanes)
            out = vals if out is None or inside is None else [kb.v(arith.SelectOp(inside, a, b)) for a, b in zip(vals, out)]
        return out

    def _round(self, x: SSAValue, v: SSAValue) -> SSAValue:
        # f16/bf16 ops round their result, as the reference does.
        return self.kb.round_to(x, F._elem(v)) if F.is_float(F._elem(v)) else x


def normalized_index(kb: KernelBuilder, i: SSAValue, extent: int) -> SSAValue:
    """Index value `i` (i32 or i64) as a position in [0, extent), in its own type: below 0 it
    counts from the end, as torch's; still outside, the nearest end (the gathers' and scatters'
    defined result where torch raises)."""
    t = i.type
    from_end = kb.v(arith.AddiOp(i, kb.const(extent, t)))
    i = kb.v(arith.SelectOp(kb.v(arith.CmpiOp(i, kb.const(0, t), "slt")), from_end, i))
    return kb.v(arith.MinSIOp(kb.v(arith.MaxSIOp(i, kb.const(0, t))), kb.const(max(extent - 1, 0), t)))


def compute_type(t: Attribute) -> Attribute:
    """The type a kernel computes values of element type `t` in: f16 and bf16 widen to f32 (and
    ops round their results back), ui8 is a signless i8 (the ops reading it take the unsigned
    forms), every other type is its own."""
    if F.is_float(t):
        return t if isinstance(t, Float64Type) else f32
    return sched.value_type(t)


def emit_cast(kb: KernelBuilder, x: SSAValue, to: Attribute, src_elem: Attribute | None = None) -> SSAValue:
    """`fusion.cast` of one scalar `x` (in its compute type; `src_elem`, the operand's element
    type, tells a u8 from an i8) to element type `to`, with torch's semantics: to i1 is `x != 0`
    (NaN is true); from i1 gives 0 or 1; integers widen by sign (u8 by zeros) and narrow by
    wrapping; integer to float rounds to nearest (f16/bf16 results from i32, i64 or f64 through
    f32, as torch converts them). Float to i32 or i64 truncates toward zero, saturating at the
    type's limits, NaN giving 0: what the GPU's cvt.rzi does (torch's CUDA casts compile to it;
    out-of-range casts are undefined in C++, and torch on the CPU gives other values; LLVM's
    fptosi is poison there, so the limits are explicit selects); float to i8 or i16 goes so
    through i32 and wraps (what torch gives on an H100: 300.7 -> 44, inf -> -1). Float to u8 goes
    through i64 and wraps, as torch defines it (c10's cast note: -1.0 -> 255).

    FP8 (computed as its bits, an i8) converts through f32 both ways, as torch does: to FP8 the
    source is first cast to f32 (an f64 or an integer rounds there), then `arith.truncf` to the
    FP8 type rounds by torch's rule (dialects/fusion/fp8.py: f8E4M3FN saturates to +-448,
    f8E5M2 overflows to inf; lowered to `cvt.rn.satfinite` and selects); from FP8, `arith.extf`
    gives the exact f32, then cast to the target as any f32."""
    src = x.type
    if src_elem is not None and F.is_fp8(src_elem) and F.is_fp8(to) and src_elem == to:
        return x
    if src_elem is not None and F.is_fp8(src_elem):
        y = kb.v(arith.ExtFOp(kb.v(arith.BitcastOp(x, src_elem)), f32))
        return emit_cast(kb, y, to, f32)
    if F.is_fp8(to):
        y = emit_cast(kb, x, f32, src_elem) if src != f32 or (src_elem is not None and not F.is_float(src_elem)) else x
        return kb.v(arith.BitcastOp(kb.v(arith.TruncFOp(y, to)), compute_type(to)))
    unsigned_src = src_elem is not None and F.is_unsigned(src_elem)
    ct = compute_type(to)
    if src == ct and unsigned_src == F.is_unsigned(to):
        return kb.round_to(x, to) if F.is_float(to) else x
    if to == i1:
        if isinstance(src, IntegerType):
            return kb.v(arith.CmpiOp(x, kb.const(0, src), "ne"))
        return kb.v(arith.CmpfOp(x, kb.const(0.0, src), "une"))
    if isinstance(to, IntegerType):
        if src == i1 or (unsigned_src and src.width.data < ct.width.data):
            return kb.v(arith.ExtUIOp(x, ct))
        if isinstance(src, IntegerType):
            if src.width.data == ct.width.data:  # u8 <-> i8: the same bits
                return x
            wider = src.width.data < ct.width.data
            return kb.v(arith.ExtSIOp(x, ct) if wider else arith.TruncIOp(x, ct))
        if F.is_unsigned(to):  # through i64, wrapping (torch's rule)
            return kb.v(arith.TruncIOp(_float_to_signed(kb, x, IntegerType(64)), ct))
        if ct.width.data < 32:  # through i32, wrapping (what torch's CUDA casts give: cvt.rzi.s32)
            return kb.v(arith.TruncIOp(_float_to_signed(kb, x, IntegerType(32)), ct))
        return _float_to_signed(kb, x, ct)
    wide = compute_type(to)  # f32 or f64
    if src == i1 or unsigned_src:
        y = kb.v(arith.UIToFPOp(x, wide))
    elif isinstance(src, IntegerType):
        y = kb.v(arith.SIToFPOp(x, wide))
    elif src.bitwidth < wide.bitwidth:
        y = kb.v(arith.ExtFOp(x, wide))
    else:
        y = kb.v(arith.TruncFOp(x, wide))
    if wide != f32:
        return y
    if isinstance(src, IntegerType) and F.dtype_name(to) == "f16":
        return _int_to_f16(kb, y)
    return kb.round_to(y, to)


F16_OVERFLOW = 65520.0  # the least f32 that rounds to f16's infinity (65504 + half its ulp, ties to even)


def _int_to_f16(kb: KernelBuilder, y: SSAValue) -> SSAValue:
    """f32 `y`, converted from an integer, rounded to f16 with its overflow to +-inf explicit:
    LLVM folds ext(trunc(sitofp x)) back to sitofp x where it knows x has few significant bits
    (an integer from a bf16), ignoring f16's exponent range (-15925248 stayed itself on an H100)."""
    r = kb.round_to(y, Float16Type())
    r = kb.v(arith.SelectOp(kb.v(arith.CmpfOp(y, kb.const(F16_OVERFLOW, f32), "oge")), kb.const(math.inf, f32), r))
    return kb.v(arith.SelectOp(kb.v(arith.CmpfOp(y, kb.const(-F16_OVERFLOW, f32), "ole")), kb.const(-math.inf, f32), r))


def _float_to_signed(kb: KernelBuilder, x: SSAValue, to: IntegerType) -> SSAValue:
    """A float truncated toward zero to the signed integer type `to`, saturating at its limits
    (2**(w-1) is exact in f32 and f64), NaN giving 0."""
    bits = to.width.data - 1
    src = x.type
    r = kb.v(arith.FPToSIOp(x, to))
    r = kb.v(arith.SelectOp(kb.v(arith.CmpfOp(x, kb.const(2.0 ** bits, src), "oge")), kb.const(2 ** bits - 1, to), r))
    r = kb.v(arith.SelectOp(kb.v(arith.CmpfOp(x, kb.const(-2.0 ** bits, src), "olt")), kb.const(-(2 ** bits), to), r))
    return kb.v(arith.SelectOp(kb.v(arith.CmpfOp(x, x, "uno")), kb.const(0, to), r))


def _round_const(x: float, t) -> float:
    if F.dtype_name(t) == "f16":
        return float(np.float16(x))
    if F.dtype_name(t) == "bf16":
        bits = np.array([x], dtype=np.float32).view(np.uint32)[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])
    return float(np.float32(x))


# Unary ops that are one math-dialect op (lowered by LLVM intrinsics or fuser's f32 helpers).
_ONE_MATH_OP = {
    F.AbsOp: mathd.AbsFOp, F.ExpOp: mathd.ExpOp, F.LogOp: mathd.LogOp, F.TanhOp: mathd.TanhOp,
    F.SqrtOp: mathd.SqrtOp, F.RsqrtOp: mathd.RsqrtOp, F.ErfOp: mathd.ErfOp, F.Exp2Op: mathd.Exp2Op,
    F.Log2Op: mathd.Log2Op, F.Log10Op: mathd.Log10Op, F.Log1pOp: mathd.Log1pOp, F.FloorOp: mathd.FloorOp,
    F.CeilOp: mathd.CeilOp, F.TruncOp: mathd.TruncOp, F.RoundOp: mathd.RoundEvenOp,  # halves to even
    F.SinOp: mathd.SinOp, F.CosOp: mathd.CosOp, F.TanOp: mathd.TanOp, F.AsinOp: mathd.AsinOp,
    F.AcosOp: mathd.AcosOp, F.AtanOp: mathd.AtanOp, F.SinhOp: mathd.SinhOp, F.CoshOp: mathd.CoshOp,
    F.AsinhOp: mathd.AsinhOp, F.AcoshOp: mathd.AcoshOp, F.AtanhOp: mathd.AtanhOp, F.Expm1Op: mathd.ExpM1Op,
    F.ErfcOp: ErfcOp, F.ErfinvOp: ErfinvOp, F.ErfcinvOp: ErfcinvOp, F.LgammaOp: LgammaOp,
}


# GELU's erf form in f32: x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2, with erfc(a) = t exp(-a^2 + P(t)),
# t = 1 / (1 + a/2), for a = |x| / sqrt 2 (the form of Numerical Recipes' erfcc; our own fit): one erfc
# gives Phi = erfc/2 for x < 0 and 1 - erfc/2 above, keeping its relative accuracy where
# 1 + erf(x / sqrt 2) cancels (x << 0: gelu(-5) through 1 + erf had a 5% error in f32).
GELU_CLAMP = 14.5  # |x| beyond: erfc(|x| / sqrt 2) is below f32's smallest subnormal; t >= 0.163
GELU_T_CENTER = 0.58
# P(t) = log(erfc(a) / t) + a^2, a = 2/t - 2, in (t - GELU_T_CENTER) on t in [0.16, 1]: least squares
# on 600 Chebyshev nodes against mpmath; error 1.5e-7 absolute in f32 Horner (= erfc's relative)
GELU_ERFC_POLY = (
    -0.5631568431854248,
    1.3681188821792603,
    0.0947767123579979,
    -0.4069010019302368,
    -0.04023287445306778,
    0.2961713373661041,
    -0.037176717072725296,
    -0.2484813779592514,
    0.07484256476163864,
    0.1487911492586136,
)


def _gelu_erf(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    """x Phi(x) through erfc (above), in upstream math and arith ops (the NVVM level stays
    upstream MLIR). exp(-a^2) = exp(-x^2 / 2) is taken from x^2 split exactly into hi + lo by an
    fma, so the large exponent loses nothing to rounding; t's own rounding moves P by about an
    ulp: about 6 ulp in all (tests: the numpy model in test_libm_accuracy.py, the GPU far below
    zero). NaN stays NaN (minimumf keeps it); -inf gives NaN, as torch."""
    def c(v: float) -> SSAValue:
        return kb.const(v, x.type)

    def fma(a: SSAValue, b: SSAValue, d: SSAValue) -> SSAValue:
        return kb.v(mathd.FmaOp(a, b, d))

    ax = kb.fmin(kb.math1(mathd.AbsFOp, x), c(GELU_CLAMP))
    t = kb.fdiv_approx(c(1.0), fma(ax, c(0.5 / math.sqrt(2.0)), c(1.0)))
    xx = kb.fmul(ax, ax)
    xx_lo = fma(ax, ax, kb.v(arith.NegfOp(xx)))
    u = kb.fsub(t, c(GELU_T_CENTER))
    p = c(GELU_ERFC_POLY[-1])
    for coeff in reversed(GELU_ERFC_POLY[:-1]):
        p = fma(p, u, c(coeff))
    gauss = kb.math1(mathd.ExpOp, kb.fmul(xx, c(-0.5)))
    half_erfc = kb.fmul(kb.fmul(t, c(0.5)), kb.fmul(gauss, kb.math1(mathd.ExpOp, fma(xx_lo, c(-0.5), p))))
    below = kb.v(arith.CmpfOp(x, c(0.0), "olt"))
    return kb.fmul(x, kb.v(arith.SelectOp(below, half_erfc, kb.fsub(c(1.0), half_erfc))))


def emit_unary(kb: KernelBuilder, op: F.UnaryOp, x: SSAValue) -> SSAValue:
    def c(value: float) -> SSAValue:  # a constant of the compute type (f32, or f64 for f64)
        return kb.const(value, x.type)
    one = c(1.0)
    r: SSAValue
    if type(op) is F.ExpOp and F.APPROX_ATTR in op.attributes and x.type == f32:  # (fusion-approx-exp)
        return kb.round_to(kb.math1(mathd.Exp2Op, kb.fmul(x, c(math.log2(math.e)))), F._elem(op.result))
    if type(op) in _ONE_MATH_OP:
        return kb.round_to(kb.math1(_ONE_MATH_OP[type(op)], x), F._elem(op.result))
    match op:
        case F.NegOp():
            r = kb.v(arith.NegfOp(x))
        case F.ReluOp():
            r = kb.fmax(x, c(0.0))
        case F.SigmoidOp():
            r = kb.fdiv_approx(one, kb.fadd(one, kb.math1(mathd.ExpOp, kb.v(arith.NegfOp(x)))))
        case F.SiluOp():
            r = kb.fdiv_approx(x, kb.fadd(one, kb.math1(mathd.ExpOp, kb.v(arith.NegfOp(x)))))
        case F.GeluOp() if op.approximate == "tanh":
            # 0.5*x*(1 + tanh(u)) == x / (1 + exp(-2u)): one exp and one division, no branch.
            # A huge divisor (exp -> inf for very negative u) gives 0, the right limit.
            u2 = kb.fmul(c(-2.0 * math.sqrt(2.0 / math.pi)),
                         kb.fadd(x, kb.fmul(c(0.044715), kb.fmul(x, kb.fmul(x, x)))))
            r = kb.fdiv_approx(x, kb.fadd(one, kb.math1(mathd.ExpOp, u2)))
        case F.GeluOp() if isinstance(x.type, Float64Type):  # f64: one helper (libm_erf_f64: x/2 erfc(-x/sqrt 2))
            r = kb.math1(GeluOp, x)
        case F.GeluOp():
            r = _gelu_erf(kb, x)
        case F.ReciprocalOp():
            r = kb.fdiv(one, x)  # correctly rounded, as torch.reciprocal
        case F.SignOp():  # (x > 0) - (x < 0): NaN and both zeros give 0, as torch.sign
            zero = c(0.0)
            pos = kb.v(arith.SelectOp(kb.v(arith.CmpfOp(x, zero, "ogt")), one, zero))
            r = kb.fsub(pos, kb.v(arith.SelectOp(kb.v(arith.CmpfOp(x, zero, "olt")), one, zero)))
        case _:
            raise ScheduleError(f"'{op.name}' has no lowering")
    return kb.round_to(r, F._elem(op.result))


def emit_float_test(kb: KernelBuilder, op: F.FloatTestOp, x: SSAValue) -> SSAValue:
    """The i1 of a fusion.isnan / isinf / isfinite / isposinf / isneginf / signbit of one scalar
    (in its compute type: f16 and bf16 widen exactly, sign and NaN included)."""
    inf = kb.const(math.inf, x.type)
    match op:
        case F.IsNanOp():
            return kb.v(arith.CmpfOp(x, x, "uno"))
        case F.IsInfOp():
            return kb.v(arith.CmpfOp(kb.math1(mathd.AbsFOp, x), inf, "oeq"))
        case F.IsFiniteOp():  # |x| < inf is false for NaN
            return kb.v(arith.CmpfOp(kb.math1(mathd.AbsFOp, x), inf, "olt"))
        case F.IsPosInfOp():
            return kb.v(arith.CmpfOp(x, inf, "oeq"))
        case F.IsNegInfOp():
            return kb.v(arith.CmpfOp(x, kb.const(-math.inf, x.type), "oeq"))
        case F.SignbitOp():  # the bit itself: -0.0 and negative NaNs too
            width = 64 if isinstance(x.type, Float64Type) else 32
            bits = kb.v(arith.BitcastOp(x, IntegerType(width)))
            return kb.v(arith.CmpiOp(bits, kb.const(0, IntegerType(width)), "slt"))
    raise ScheduleError(f"'{op.name}' has no lowering")


def emit_binary(kb: KernelBuilder, op: F.BinaryOp, a: SSAValue, b: SSAValue) -> SSAValue:
    match op:
        case F.AddOp():
            return kb.fadd(a, b)
        case F.SubOp():
            return kb.fsub(a, b)
        case F.MulOp():
            return kb.fmul(a, b)
        case F.DivOp():
            return kb.fdiv(a, b)
        case F.MaxOp():
            return kb.fmax(a, b)
        case F.MinOp():
            return kb.fmin(a, b)
        case F.PowOp():
            return emit_pow(kb, a, b)
        case F.Atan2Op():
            return kb.v(mathd.Atan2Op(a, b))
        case F.FmodOp():
            return kb.v(RemFOp(a, b))  # (exact: lowering/target/llvmir/libm.py's fmod)
        case F.RemainderOp():  # torch's: fmod, plus b where it is nonzero and its sign is not b's
            r = kb.v(RemFOp(a, b))
            zero = kb.const(0.0, a.type)
            differs = kb.v(arith.XOrIOp(kb.v(arith.CmpfOp(r, zero, "olt")), kb.v(arith.CmpfOp(b, zero, "olt"))))
            fix = kb.v(arith.AndIOp(kb.v(arith.CmpfOp(r, zero, "one")), differs))
            return kb.v(arith.SelectOp(fix, kb.fadd(r, b), r))
        case F.NextafterOp():
            return emit_nextafter(kb, a, b, F._elem(op.result))
    raise ScheduleError(f"'{op.name}' has no lowering")


def emit_nextafter(kb: KernelBuilder, a: SSAValue, b: SSAValue, t: Attribute) -> SSAValue:
    """C's nextafter(a, b) on the grid of float type `t`, a and b in their compute type (f32 for
    f16 and bf16, which are narrowed to `t` first: exactly, they hold values of it). The bits of
    a, read as a signed integer of t's width, step by one: up where b > a and a > 0 or b < a and
    a < 0 (away from zero), down otherwise; from a zero to the least subnormal with b's sign; b
    where a == b (nextafter(0.0, -0.0) is -0.0); a + b (NaN) where either is NaN. No arithmetic
    touches the stepped value, so nothing rounds or flushes a subnormal."""
    ct, name = a.type, F.dtype_name(t)
    narrow = name in ("f16", "bf16")
    width = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[name]
    it = IntegerType(width)
    bits_a = kb.v(arith.BitcastOp(kb.v(arith.TruncFOp(a, t)) if narrow else a, it))
    bits_b = kb.v(arith.BitcastOp(kb.v(arith.TruncFOp(b, t)) if narrow else b, it))
    zero = kb.const(0.0, ct)
    up = kb.v(arith.CmpfOp(b, a, "ogt"))
    away = kb.v(arith.XOrIOp(kb.v(arith.XOrIOp(up, kb.v(arith.CmpfOp(a, zero, "ogt")))), kb.const(1, i1)))
    one = kb.const(1, it)
    stepped = kb.v(arith.SelectOp(away, kb.v(arith.AddiOp(bits_a, one)), kb.v(arith.SubiOp(bits_a, one))))
    least = kb.v(arith.OrIOp(kb.v(arith.AndIOp(bits_b, kb.const(-(1 << (width - 1)), it))), one))
    bits = kb.v(arith.SelectOp(kb.v(arith.CmpfOp(a, zero, "oeq")), least, stepped))
    r = kb.v(arith.BitcastOp(bits, t if narrow else ct))
    if narrow:
        r = kb.v(arith.ExtFOp(r, ct))
    r = kb.v(arith.SelectOp(kb.v(arith.CmpfOp(a, b, "oeq")), b, r))
    return kb.v(arith.SelectOp(kb.v(arith.CmpfOp(a, b, "uno")), kb.fadd(a, b), r))


def emit_int_unary(kb: KernelBuilder, op: F.UnaryOp, x: SSAValue) -> SSAValue:
    """neg and abs of an integer, wrapping (abs of MIN is MIN, as torch's); a u8 is its own abs."""
    if isinstance(op, F.BitwiseNotOp):  # (of an i1: logical not)
        return kb.v(arith.XOrIOp(x, kb.const(-1 if x.type != i1 else 1, x.type)))
    zero = kb.const(0, x.type)
    match op:
        case F.NegOp():
            return kb.v(arith.SubiOp(zero, x))
        case F.AbsOp() if F.is_unsigned(F._elem(op.input)):
            return x
        case F.AbsOp():
            return kb.v(arith.SelectOp(kb.v(arith.CmpiOp(x, zero, "slt")), kb.v(arith.SubiOp(zero, x)), x))
    raise ScheduleError(f"'{op.name}' has no lowering for integers")


def emit_int_binary(kb: KernelBuilder, op: F.BinaryOp, a: SSAValue, b: SSAValue, unsigned: bool) -> SSAValue:
    """A binary op of two integers of one type (`unsigned`: u8), wrapping as torch's. Division
    and remainder never reach LLVM's sdiv/udiv with a divisor of 0 (undefined behaviour there) or
    the overflowing MIN / -1: the divisor is made 1 in those lanes and the answer selected, a / 0
    = a % 0 = -1 (all bits set), MIN / -1 = MIN (wrapped), a % -1 = 0 (fusion.trunc_div's
    definition)."""
    match op:
        case F.AddOp():
            return kb.v(arith.AddiOp(a, b))
        case F.SubOp():
            return kb.v(arith.SubiOp(a, b))
        case F.MulOp():
            return kb.v(arith.MuliOp(a, b))
        case F.MaxOp():
            return kb.v(arith.MaxUIOp(a, b) if unsigned else arith.MaxSIOp(a, b))
        case F.MinOp():
            return kb.v(arith.MinUIOp(a, b) if unsigned else arith.MinSIOp(a, b))
        case F.PowOp():
            return emit_int_pow(kb, a, b, unsigned)
        case F.TruncDivOp() | F.FloorDivOp() | F.FmodOp() | F.RemainderOp():
            return _emit_int_division(kb, op, a, b, unsigned)
        case F.BitwiseAndOp():
            return kb.v(arith.AndIOp(a, b))
        case F.BitwiseOrOp():
            return kb.v(arith.OrIOp(a, b))
        case F.BitwiseXorOp():
            return kb.v(arith.XOrIOp(a, b))
        case F.ShiftLeftOp() | F.ShiftRightOp() | F.LogicalShiftRightOp():
            return _emit_shift(kb, op, a, b, unsigned)
        case F.GcdOp():
            return _emit_gcd(kb, a, b, unsigned)
    raise ScheduleError(f"'{op.name}' has no lowering for integers")


def _emit_shift(kb: KernelBuilder, op: F.BinaryOp, a: SSAValue, b: SSAValue, unsigned: bool) -> SSAValue:
    """Shifts as torch defines them: LLVM's shl/ashr/lshr are poison for a shift of the width
    or more (and b < 0 is such a shift, read unsigned), so the amount is made 0 there and the
    answer selected: 0, or for an arithmetic right shift a >> (width - 1), the sign."""
    t = a.type
    width = t.width.data
    inside = kb.v(arith.CmpiOp(b, kb.const(width, t), "ult"))  # (also false for b < 0)
    safe = kb.v(arith.SelectOp(inside, b, kb.const(0, t)))
    if isinstance(op, F.ShiftLeftOp):
        return kb.v(arith.SelectOp(inside, kb.v(arith.ShLIOp(a, safe)), kb.const(0, t)))
    if isinstance(op, F.LogicalShiftRightOp) or unsigned:
        return kb.v(arith.SelectOp(inside, kb.v(arith.ShRUIOp(a, safe)), kb.const(0, t)))
    sign = kb.v(arith.ShRSIOp(a, kb.const(width - 1, t)))
    return kb.v(arith.SelectOp(inside, kb.v(arith.ShRSIOp(a, safe)), sign))


def _euclid_steps(width: int) -> int:
    """Remainder steps Euclid's algorithm takes at most on operands below 2**width in
    magnitude (Lame: n steps need operands of at least Fibonacci(n + 2)), plus one."""
    f0, f1, n = 1, 1, 0
    while f1 <= 1 << width:
        f0, f1, n = f1, f0 + f1, n + 1
    return n + 1


def _emit_gcd(kb: KernelBuilder, a: SSAValue, b: SSAValue, unsigned: bool) -> SSAValue:
    """torch.gcd: x, y = |a|, |b| (|MIN| wraps to MIN); while x != 0: x, y = y % x, x; y. An
    scf.for of Euclid's worst-case step count for the width (12 for i8, 93 for i64), each step
    a no-op once x is 0; the divisor is never 0 (made 1) nor a -1 under MIN (made 1). Types
    narrower than 32 bits run in i32 on their sign- (u8: zero-) extended values, |MIN| wrapped
    by a compare (an i16 loop, and then a truncation and extension, both let LLVM and the GPU
    keep |-32768| as +32768: gcd(-6596, -32768) came out 4 on an H100, torch's is -4)."""
    t = a.type
    width = t.width.data
    wide = IntegerType(32) if width < 32 else t
    if wide != t:
        a, b = (kb.v(arith.ExtUIOp(v, wide) if unsigned else arith.ExtSIOp(v, wide)) for v in (a, b))
    if not unsigned:
        zero = kb.const(0, wide)

        def wrapped_abs(v: SSAValue) -> SSAValue:
            r = kb.v(arith.SelectOp(kb.v(arith.CmpiOp(v, zero, "slt")), kb.v(arith.SubiOp(zero, v)), v))
            if wide == t:
                return r
            # |MIN| wraps to MIN by a compare, not a truncation and sign extension: LLVM folds
            # that pair into an i16 abs, which the H100 then computed as +32768.
            top = kb.const(1 << (width - 1), wide)
            return kb.v(arith.SelectOp(kb.v(arith.CmpiOp(r, top, "eq")), kb.const(-(1 << (width - 1)), wide), r))
        a, b = wrapped_abs(a), wrapped_abs(b)
    blk = Block(arg_types=[index, wide, wide])
    lb = kb.at(blk)
    _, x, y = blk.args
    zero, one = lb.const(0, wide), lb.const(1, wide)
    live = lb.v(arith.CmpiOp(x, zero, "ne"))
    unsafe = lb.v(arith.OrIOp(lb.v(arith.CmpiOp(x, zero, "eq")), lb.v(arith.CmpiOp(x, lb.const(-1, wide), "eq")))) \
        if not unsigned else lb.v(arith.CmpiOp(x, zero, "eq"))
    safe = lb.v(arith.SelectOp(unsafe, one, x))
    r = lb.v(arith.RemUIOp(y, safe) if unsigned else arith.RemSIOp(y, safe))  # (y % -1 is 0: so is y % 1)
    lb.emit(scf.YieldOp(lb.v(arith.SelectOp(live, r, x)), lb.v(arith.SelectOp(live, x, y))))
    loop = kb.emit(scf.ForOp(kb.c(0), kb.c(_euclid_steps(width)), kb.c(1), [a, b], Region(blk)))
    g = loop.results[1]
    return kb.v(arith.TruncIOp(g, t)) if wide != t else g


def _emit_int_division(kb: KernelBuilder, op: F.BinaryOp, a: SSAValue, b: SSAValue, unsigned: bool) -> SSAValue:
    t = a.type
    zero, one, all_ones = kb.const(0, t), kb.const(1, t), kb.const(-1, t)
    by_zero = kb.v(arith.CmpiOp(b, zero, "eq"))
    unsafe = by_zero if unsigned else kb.v(arith.OrIOp(by_zero, kb.v(arith.CmpiOp(b, all_ones, "eq"))))
    safe = kb.v(arith.SelectOp(unsafe, one, b))
    quotient = kb.v(arith.DivUIOp(a, safe) if unsigned else arith.DivSIOp(a, safe))
    rem = kb.v(arith.RemUIOp(a, safe) if unsigned else arith.RemSIOp(a, safe))  # (0 where b = -1: a % 1)
    floor = isinstance(op, (F.FloorDivOp, F.RemainderOp))
    if floor and not unsigned:  # toward -inf: one less (or b more) where the remainder's sign is not b's
        differs = kb.v(arith.XOrIOp(kb.v(arith.CmpiOp(rem, zero, "slt")), kb.v(arith.CmpiOp(safe, zero, "slt"))))
        fix = kb.v(arith.AndIOp(kb.v(arith.CmpiOp(rem, zero, "ne")), differs))
        quotient = kb.v(arith.SelectOp(fix, kb.v(arith.SubiOp(quotient, one)), quotient))
        rem = kb.v(arith.SelectOp(fix, kb.v(arith.AddiOp(rem, safe)), rem))
    if isinstance(op, (F.FmodOp, F.RemainderOp)):
        return kb.v(arith.SelectOp(by_zero, all_ones, rem))
    if not unsigned:  # a / -1 = -a, wrapping (MIN stays MIN)
        quotient = kb.v(arith.SelectOp(kb.v(arith.CmpiOp(b, all_ones, "eq")), kb.v(arith.SubiOp(zero, a)), quotient))
    return kb.v(arith.SelectOp(by_zero, all_ones, quotient))


def emit_int_pow(kb: KernelBuilder, a: SSAValue, b: SSAValue, unsigned: bool) -> SSAValue:
    """a ** b of integers: square and multiply over the exponent's bits (width - 1 steps for a
    signed type, whose negative exponents are answered apart; width steps for u8), wrapping; for
    b < 0 as torch's CUDA kernel: 1 for a = 1, +-1 for a = -1 (the sign of an odd b), else 0."""
    t = a.type
    zero, one = kb.const(0, t), kb.const(1, t)
    steps = t.width.data if unsigned else t.width.data - 1
    result, base = one, a
    for k in range(steps):
        bit = kb.v(arith.CmpiOp(kb.v(arith.AndIOp(kb.v(arith.ShRUIOp(b, kb.const(k, t))), one)), zero, "ne"))
        result = kb.v(arith.SelectOp(bit, kb.v(arith.MuliOp(result, base)), result))
        if k + 1 < steps:
            base = kb.v(arith.MuliOp(base, base))
    if unsigned:
        return result
    odd = kb.v(arith.CmpiOp(kb.v(arith.AndIOp(b, one)), zero, "ne"))
    minus_one = kb.const(-1, t)
    of_minus_one = kb.v(arith.SelectOp(odd, minus_one, one))
    negative = kb.v(arith.SelectOp(kb.v(arith.CmpiOp(a, one, "eq")), one,
                                   kb.v(arith.SelectOp(kb.v(arith.CmpiOp(a, minus_one, "eq")), of_minus_one, zero))))
    return kb.v(arith.SelectOp(kb.v(arith.CmpiOp(b, zero, "slt")), negative, result))


def emit_pow(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    """a ** b as C's powf (and numpy) define it, from exp2 and log2 (NVPTX has no powf):
    |a| ** b = exp2(b * log2|a|), which also gives 0 ** b (inf for b < 0, 0 for b > 0); a
    negative base takes the sign of an odd integer exponent and is NaN for a non-integer one;
    b == 0 or a == 1 give 1 exactly. Accuracy: lg2.approx's error scaled by |b * log2|a||,
    within a few ulp for results of ordinary size. f64: |a| ** b is `math.powf` (libm_f64.py,
    within 1 ulp), the signs and special cases as above.

    A constant exponent of 2 or 3 is a * a (* a), as torch's CUDA pow computes it: the same value
    at every special case (signs, zeros, infinities, NaN), within an ulp more often than the
    exp2/log2 form, and no transcendental a GELU's x ** 3 would spend its time on."""
    exponent = _float_constant(b)
    if exponent in (2.0, 3.0):
        square = kb.fmul(a, a)
        return square if exponent == 2.0 else kb.fmul(square, a)

    def cmp(x, y, pred):
        return kb.v(arith.CmpfOp(x, y, pred))

    def select(c, x, y):
        return kb.v(arith.SelectOp(c, x, y))

    if isinstance(a.type, Float64Type):  # f64: |a| ** b by libm_f64's pow (a double-double log)
        mag = kb.v(mathd.PowFOp(kb.v(mathd.AbsFOp(a)), b))
    else:
        mag = kb.v(mathd.Exp2Op(kb.fmul(b, kb.v(mathd.Log2Op(kb.v(mathd.AbsFOp(a)))))))
    b_int = cmp(kb.v(mathd.TruncOp(b)), b, "oeq")
    half = kb.fmul(b, kb.const(0.5, a.type))
    b_odd = kb.v(arith.AndIOp(b_int, cmp(kb.v(mathd.TruncOp(half)), half, "one")))
    negative = select(b_odd, kb.fsub(kb.const(0.0, a.type), mag), mag)
    r = select(cmp(a, kb.const(0.0, a.type), "olt"), select(b_int, negative, kb.const(math.nan, a.type)), mag)
    one = kb.v(arith.OrIOp(cmp(b, kb.const(0.0, a.type), "oeq"), cmp(a, kb.const(1.0, a.type), "oeq")))
    return select(one, kb.const(1.0, a.type), r)


def _float_constant(v: SSAValue) -> float | None:
    """The value of a float constant (an arith.constant), else None."""
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
        return owner.value.value.data
    return None


def _common_suffix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many trailing dims two shapes share (8x1024x50257 and 8192x50257: one)."""
    n = 0
    while n < min(len(a), len(b)) and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    return n
