"""The pointwise scheduler's emitter: each thread handles one 16-byte vector of the output per
iteration of a grid-stride loop; a grid of up to `sms * 8` blocks keeps every SM full
(`pointwise_params`, lowering/heuristics/pointwise.py). Also the copy kernel of an output that
is an input, or a value returned twice.
"""

from __future__ import annotations

import math

from xdsl.ir import Block, SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched
from fuser.lowering.analysis.schedules import grid_stride, plan_transpose, pointwise_inputs
from fuser.lowering.common import elem_bytes, shape_of, vector_lanes
from fuser.lowering.emitters.emitter import KernelEmitter, WorkspaceValue
from fuser.lowering.emitters.evaluator import Evaluator
from fuser.lowering.emitters.kernel_builder import KernelBuilder
from fuser.lowering.heuristics.pointwise import pointwise_params
from fuser.lowering.emitters.transpose import emit_transpose


def emit_pointwise(em: KernelEmitter, outputs: list[SSAValue], materialized: set, args: set) -> None:
    """One kernel computing `outputs` from the values they read: all of the first's shape, or
    reshapes of it that keep its last dim (a segment_set of a reshaped gradient, planned with
    the gradient: each element's index in its own shape)."""
    shape = shape_of(outputs[0])
    expr, reads = pointwise_inputs(outputs, materialized, args)
    tiled = plan_transpose(outputs, expr, materialized, args)
    if tiled is not None:  # a permute moves its input's contiguous dim: the transpose scheduler
        emit_transpose(em, outputs, expr, reads, *tiled)
        return
    all_vals = list(outputs) + reads
    lanes, nvec, block, grid = grid_stride(outputs, reads, em.opts)
    host_bufs = em.kernel_buffers(list(outputs) + reads)

    def body(kb: KernelBuilder, kargs):
        amap = em.arg_map(host_bufs, kargs, all_vals)
        loop = sched.ForOp(kb.c(0), kb.c(nvec), kb.c(1), [], Block(arg_types=[sched.IndexType()]), bind="grid.x")
        kb.emit(loop)
        lb = kb.at(loop.body.block)
        i = loop.body.block.args[0]
        idx = lb.delinearize(lb.mul(i, lanes), shape) if shape else []
        ev = Evaluator(lb, {v: amap[v] for v in reads})
        stored = set()  # (a segment_set of a returned value shares its buffer: stored once)
        for o in outputs:
            o_shape = shape_of(o)
            o_idx = idx if o_shape == shape else lb.reindex(idx, shape, o_shape)
            if (amap[o], tuple(o_idx)) in stored:
                continue
            stored.add((amap[o], tuple(o_idx)))
            vals = ev(expr[o], o_idx, lanes)
            t = F._elem(o)
            lb.store([lb.trunc(x, t) if F.is_float(t) else x for x in vals], amap[o], o_idx)
        lb.emit(sched.YieldOp())

    em.kernel(host_bufs, (grid, 1, 1), (block, 1, 1), body)


def emit_copy(em: KernelEmitter, src: SSAValue, dst: SSAValue, src_buf: SSAValue | None = None) -> None:
    """Copy the buffer of `src` (or the host buffer `src_buf` holding its value) into the host
    buffer `dst`."""
    alias = WorkspaceValue(dst)
    alias.type = src.type
    em.buffers[alias] = dst
    shape = shape_of(src)
    lanes = vector_lanes(shape[-1], elem_bytes(F._elem(src))) if shape else 1
    nvec = math.prod(shape) // lanes
    block, grid = pointwise_params(nvec, em.opts.sms, em.opts.block)
    host_bufs = [em.buffers[src] if src_buf is None else src_buf, dst]

    def body(kb, kargs):
        loop = sched.ForOp(kb.c(0), kb.c(nvec), kb.c(1), [], Block(arg_types=[sched.IndexType()]), bind="grid.x")
        kb.emit(loop)
        lb = kb.at(loop.body.block)
        idx = lb.delinearize(lb.mul(loop.body.block.args[0], lanes), shape) if shape else []
        lb.store(lb.load(kargs[0], idx, lanes), kargs[1], idx)
        lb.emit(sched.YieldOp())

    em.kernel(host_bufs, (grid, 1, 1), (block, 1, 1), body)
