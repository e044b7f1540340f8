"""The atomic scatter's emitter (`fusion.scatter_add_atomic`, the option where order may vary):
two kernels. The first copies the input (computed from what it reads, as a pointwise kernel
would) into the result's buffer; the second runs a grid-stride loop over src's elements, one
a thread, each computing its target from the index (normalized as fusion.scatter's: below 0
from the end, the rest to the nearest end) and adding itself there with `sched.atomic_add`
(PTX red.global.add). The launch order (and griddepcontrol) puts every add after the copy.
The deterministic `fusion.scatter` needs no kernel of its own: the evaluator computes it where
it is read."""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.ir import Block

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.lowering.analysis.schedules import grid_stride, pointwise_inputs, scatter_atomic_geometry
from fuser.lowering.common import Task, by_name, leaves, shape_of
from fuser.lowering.emitters.emitter import KernelEmitter
from fuser.lowering.emitters.evaluator import Evaluator, normalized_index
from fuser.lowering.emitters.kernel_builder import KernelBuilder, index


def emit_scatter_atomic(em: KernelEmitter, t: Task, materialized: set, args: set) -> None:
    op: F.ScatterAddAtomicOp = t.op
    out = op.result
    d, xs, ss, ishape = op.dim.data, shape_of(op.input), shape_of(op.src), shape_of(op.index)

    # 1. the input, into the result's buffer
    _, reads = pointwise_inputs([op.input], materialized - {out}, args)
    lanes, nvec, block, grid = grid_stride([out], reads, em.opts)
    host_bufs = em.kernel_buffers([out] + reads)

    def copy(kb: KernelBuilder, kargs):
        amap = em.arg_map(host_bufs, kargs, [out] + reads)
        loop = sched.ForOp(kb.c(0), kb.c(nvec), kb.c(1), [], Block(arg_types=[index]), bind="grid.x")
        kb.emit(loop)
        lb = kb.at(loop.body.block)
        idx = lb.delinearize(lb.mul(loop.body.block.args[0], lanes), xs) if xs else []
        vals = Evaluator(lb, {v: amap[v] for v in reads})(op.input, idx, lanes)
        lb.store([lb.trunc(x, F._elem(out)) if F.is_float(F._elem(out)) else x for x in vals], amap[out], idx)
        lb.emit(sched.YieldOp())

    em.kernel(host_bufs, (grid, 1, 1), (block, 1, 1), copy,
              schedule=f"copy of the input into the atomic scatter's result: {block} threads, {lanes} a vector")

    # 2. each src element added at its target
    reads2 = by_name(leaves(op.index, materialized - {out}, args) | leaves(op.src, materialized - {out}, args))
    block2, grid2 = scatter_atomic_geometry(op, em.opts)
    host_bufs2 = em.kernel_buffers([out] + reads2)
    n = math.prod(ss)

    def add(kb: KernelBuilder, kargs):
        amap = em.arg_map(host_bufs2, kargs, [out] + reads2)
        loop = sched.ForOp(kb.c(0), kb.c(n), kb.c(1), [], Block(arg_types=[index]), bind="grid.x")
        kb.emit(loop)
        lb = kb.at(loop.body.block)
        q = lb.delinearize(loop.body.block.args[0], ss)
        ev = Evaluator(lb, {v: amap[v] for v in reads2})
        at = [q[k] if ishape[k] == ss[k] else lb.c(0) for k in range(len(ss))]
        pos = lb.v(arith.IndexCastOp(normalized_index(lb, ev(op.index, at, 1)[0], xs[d]), index))
        value = ev(op.src, q, 1)[0]
        lb.emit(sched.AtomicAddOp(value, amap[out], q[:d] + [pos] + q[d + 1:]))
        lb.emit(sched.YieldOp())

    em.kernel(host_bufs2, (grid2, 1, 1), (block2, 1, 1), add,
              schedule=f"atomic scatter of {n} elements, one a thread ({block2} threads a block): red.global.add")
