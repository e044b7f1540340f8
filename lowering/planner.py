"""The planner of convert-fusion-to-sched: partition a fusion function into kernel tasks (it
builds no IR, so fusion-translate-welford and fusion-split-k ask it what the schedulers would do).

Segmentation. Pointwise and shape ops are recomputed inside whichever kernel needs them, so
they never cost a trip through memory. Two sets of values matter:
- *stored* values are written to a buffer: every function output, and the results of
  reductions, matmuls and `fusion.segment_set`s that a later kernel reads;
- *materialized* values are the ones a kernel reads back from a buffer instead of recomputing:
  function arguments aside, only the results of reductions, matmuls and `segment_set`s.
A pointwise function output is stored but never read back: a kernel that needs it (another
output, an epilogue, a reduction's input) recomputes it from its own inputs, so no kernel
depends on the store of a sibling output, in the same kernel or another.
Each reduction op becomes one reduction kernel (two when a row is too long for one block);
function outputs that are pointwise in a reduction's results, of the reduced shape, are computed
in that kernel's epilogue; the remaining outputs are grouped by shape into pointwise kernels.
Two refinements follow: matmuls sharing A merge into one task (`fuse_matmul_tasks`), and inner
reductions over the same rows, with the outputs computed from them at the row, become one
persistent normalization task where the row fits on chip (`form_groups`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Block, SSAValue

from fuser.dialects import fusion as F
from fuser.lowering.common import (REDUCTION_OPS, SHAPE_OPS, ScheduleError, Task, elem_bytes, leaves,
                                   pointwise_path_only, reaches, shape_of, vector_lanes)
from fuser.lowering.schedulers.normalization import NormDecision, normalization_params
from fuser.lowering.schedulers.options import ScheduleOptions


@dataclass
class Plan:
    tasks: list[Task]
    stored: list[SSAValue]        # values written to a buffer (function outputs first)
    materialized: set[SSAValue]   # values kernels read from their buffer rather than recompute
    groups: list = field(default_factory=list)  # normalization groups considered, with decisions


BOUNDARY_OPS = REDUCTION_OPS + (F.SegmentSetOp, F.MatmulOp, F.SegmentOp)
"""Ops whose results are written to memory and read back by the kernels that use them."""


def plan_fusion(fn: func.FuncOp | Block, opts: ScheduleOptions = ScheduleOptions()) -> Plan:
    """Partition `fn` (a fusion function, or a block ending in its outputs such as a segment's
    body) into kernel tasks as the schedulers would with `opts` (builds no IR). A
    `fusion.segment` already in the block is one task of kind "fixed"."""
    body = fn.body.block if isinstance(fn, func.FuncOp) else fn
    ret = body.last_op
    args = set(body.args)
    for op in body.ops:
        if op is not ret and op.dialect_name() != "fusion":
            raise ScheduleError(f"'{op.name}' is not a fusion op; convert-fusion-to-sched expects fusion IR", op)
    outputs = list(ret.operands)
    order = {op: i for i, op in enumerate(body.ops)}
    # Only kernel boundaries are read back; pointwise outputs are recomputed by their readers
    # (reading one back would race with, or precede, the kernel that writes it).
    materialized: set[SSAValue] = set()
    for op in body.ops:
        if isinstance(op, BOUNDARY_OPS):
            materialized |= set(op.results)

    level: dict[SSAValue, int] = {a: 0 for a in args}

    def lvl(v: SSAValue) -> int:
        # Dependencies first, without recursion (a fusion may chain thousands of ops).
        todo = [v]
        while todo:
            x = todo[-1]
            if x in level:
                todo.pop()
                continue
            op = x.owner
            kernel_boundary = isinstance(op, BOUNDARY_OPS)
            if kernel_boundary:
                deps = set().union(*(leaves(o, materialized - set(op.results), args) for o in op.operands))
            else:
                deps = leaves(x, materialized - {x}, args)
            missing = [d for d in deps if d not in level]
            if missing:
                todo.extend(missing)
                continue
            level[x] = int(kernel_boundary) + max((level[d] for d in deps), default=0)
            todo.pop()
        return level[v]

    tasks: list[Task] = []
    pointwise_outputs = [o for o in dict.fromkeys(outputs) if o not in materialized and o not in args]
    for op in body.ops:
        if isinstance(op, REDUCTION_OPS):
            # Every result is written: later kernels may read any of them.
            tasks.append(Task("reduction", order[op], lvl(op.results[0]), op, list(op.results)))
        elif isinstance(op, F.MatmulOp):
            tasks.append(Task("matmul", order[op], lvl(op.result), op, [op.result]))
        elif isinstance(op, F.SegmentSetOp):
            tasks.append(Task("segment", order[op], lvl(op.result), op, [op.result]))
        elif isinstance(op, F.SegmentOp):
            tasks.append(Task("fixed", order[op], lvl(op.results[0]), op, list(op.results)))
    # Epilogues: outputs of a reduction's (or matmul's) shape, pointwise in its result.
    for t in tasks:
        if t.kind not in ("reduction", "matmul"):
            continue
        if t.kind == "matmul" and t.op.partial_products:  # split-K partials: the sum's kernel has the epilogue
            continue
        rs = set(t.op.results)
        r = t.op.results[0]
        for o in list(pointwise_outputs):
            if o in args or shape_of(o) != shape_of(r):
                continue
            deps = leaves(o, materialized - {o}, args)
            if not (rs & deps) or any(lvl(d) >= t.level for d in deps if d not in rs):
                continue
            if pointwise_path_only(o, rs, materialized - {o} - rs, args):
                t.outputs.append(o)
                pointwise_outputs.remove(o)
    groups: dict[tuple, Task] = {}
    for o in pointwise_outputs:
        key = (lvl(o), shape_of(o))
        if key not in groups:
            groups[key] = Task("pointwise", order[o.owner], key[0])
            tasks.append(groups[key])
        groups[key].outputs.append(o)
    tasks = fuse_matmul_tasks(tasks, outputs, materialized, args)
    tasks.sort(key=lambda t: (t.level, t.kind == "pointwise", t.order))
    groups = []
    if opts.persistent:
        tasks, groups = form_groups(tasks, materialized, args, lvl, opts)
    for t in tasks:
        order_outputs(t, outputs)
    _skip_unread_results(tasks, outputs, materialized, args)
    written = [r for t in tasks for r in t.outputs if not unstored_matmul_result(t, r)]
    stored = [v for v in dict.fromkeys(list(outputs) + written) if v not in args]
    return Plan(tasks, stored, materialized, groups)


def order_outputs(t: Task, outputs: list[SSAValue]) -> None:
    """One order for what a kernel writes, whatever merged it: the results of the ops it is
    built around (program order), then the other outputs in the function's return order (a
    normalization task keeps its row outputs before its full-size ones)."""
    rank = {v: i for i, v in enumerate(dict.fromkeys(outputs))}
    own = [r for o in task_ops(t) for r in o.results]
    by_return = lambda vs: sorted(vs, key=lambda v: rank.get(v, len(rank)))  # noqa: E731 (stable)
    if t.group is not None:
        g = t.group
        g.row_outputs, g.full_outputs = by_return(g.row_outputs), by_return(g.full_outputs)
        t.outputs = [o for o in t.outputs if o in g.results] + g.row_outputs + g.full_outputs
        return
    t.outputs = [r for r in own if r in t.outputs] + by_return([o for o in t.outputs if o not in own])


def task_ops(t: Task) -> list:
    """The reductions / matmuls / segment_set a task is built around, in program order of
    merging (its own op first)."""
    ops = [t.op] + list(getattr(t, "siblings", [])) + (list(t.group.ops) if t.group is not None else [])
    return [o for o in dict.fromkeys(ops) if o is not None]


def unstored_matmul_result(t: Task, v: SSAValue) -> bool:
    """A matmul result that only its own epilogue reads stays in registers (no buffer)."""
    if t.kind != "matmul":
        return False
    results = {t.op.result} | {s.result for s in getattr(t, "siblings", [])}
    return v in results and v not in t.store_results


def task_reads(t: Task, materialized: set, args: set) -> set[SSAValue]:
    """Materialized values and arguments the kernel(s) of task `t` read from memory."""
    reads: set[SSAValue] = set()
    for o in t.outputs:
        reads |= leaves(o, materialized - {o}, args)
    for op in task_ops(t):
        for x in op.operands:
            reads |= leaves(x, materialized - set(op.results), args)
    return reads


def _skip_unread_results(tasks: list[Task], outputs, materialized: set, args: set) -> None:
    """Drop from a reduction or normalization task's outputs the results that are not function
    outputs and that no other kernel reads: the outputs its epilogue computes from them
    (`bias + sum`, a cast, a normalized row) take them from registers, so storing them would be
    pure extra traffic. (Split-K's sum of partials followed by the epilogue, and a layer norm's
    statistics, are the cases that matter.)"""
    outs = set(outputs)
    for t in tasks:
        if t.kind not in ("reduction", "normalization"):
            continue
        results = set(t.op.results) if t.kind == "reduction" else t.group.results
        candidates = [r for r in t.outputs if r in results and r not in outs]
        if not candidates:
            continue
        read = set().union(*(task_reads(u, materialized, args) for u in tasks if u is not t))
        keep = [o for o in t.outputs if o not in candidates or o in read]
        if any(o not in results for o in keep):  # the kernel still stores something
            t.outputs = keep



# ------------------------------------------------------------------ horizontal matmul fusion


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
            if a.k_chunk is not None or b.k_chunk is not None:  # split-K: never paired
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
                       leaves(o, materialized - {o}, args) & results and
                       all(d in results or d in args for d in leaves(o, materialized - {o}, args))
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
                  [x for u in tasks if u.kind == "fixed" for x in u.op.inputs] + \
                  [x for u in tasks if u is not t and u.kind == "matmul" for x in (u.op.a, u.op.b)]
        needed = set()
        for r in results:
            if r in outs or any(r in leaves(x, materialized - {x}, args) or x is r for x in readers):
                needed.add(r)
        t.store_results = needed
    return tasks


# ------------------------------------------------------------------ normalization groups


@dataclass
class NormGroup:
    """Inner reductions over the same rows and the outputs computed from them at the row: one
    persistent normalization kernel when `decision` accepts it (lowering/normalization.py)."""

    ops: list                                   # reductions, in program order
    in_shape: tuple[int, ...]
    k: int                                      # rows = prod(in_shape[:k])
    full_outputs: list[SSAValue] = field(default_factory=list)
    row_outputs: list[SSAValue] = field(default_factory=list)
    decision: NormDecision | None = None
    materialized: set = field(default_factory=set)  # values read from buffers (the group's outputs are not)
    cached: list[SSAValue] = field(default_factory=list)  # full-size inputs read at the row: what stays on chip

    @property
    def results(self) -> set[SSAValue]:
        return set(self.result_list)

    @property
    def result_list(self) -> list[SSAValue]:
        return [r for op in self.ops for r in op.results]


def _inner_split(op) -> int | None:
    """k such that `op` reduces exactly the trailing dims k..rank-1, else None."""
    rank = len(shape_of(op.input))
    dims = sorted(op.reduced_dims)
    k = rank - len(dims)
    return k if dims == list(range(k, rank)) else None


def _aligned(v: SSAValue, g: NormGroup, row_region: bool, materialized: set, args: set) -> bool:
    """True if computing `v` at a position of the current row reads the group's results only at
    that row. In the full region indices are (row, column); in the row region only the row.
    (Iterative: a fusion may chain thousands of ops.)"""
    results = g.results
    rows = math.prod(g.in_shape[:g.k])
    todo, seen = [(v, row_region)], set()
    while todo:
        x, row = todo.pop()
        if (x, row) in seen:
            continue
        seen.add((x, row))
        if x in results:
            if not row:
                return False
            continue
        if x in materialized or x in args or not reaches(x, results, materialized, args):
            continue
        op = x.owner
        if isinstance(op, F.BroadcastOp) and not row:
            new = list(op.dims.get_values())
            if not (shape_of(x) == g.in_shape and new == list(range(g.k, len(g.in_shape)))):
                return False
            todo.append((op.input, True))
        elif isinstance(op, F.ReshapeOp) and row:
            if math.prod(shape_of(op.input)) != rows:
                return False
            todo.append((op.input, True))
        elif isinstance(op, SHAPE_OPS) or not isinstance(op, F.POINTWISE_OPS):
            return False
        else:
            todo.extend((o, row) for o in op.operands)
    return True


def form_groups(tasks: list[Task], materialized: set, args: set, lvl,
                opts: ScheduleOptions) -> tuple[list[Task], list[NormGroup]]:
    """Merge inner reductions and the outputs computed from them at the row into persistent
    normalization tasks, where the row fits. Returns the new task list and every group
    considered, with the scheduler's decision (accepted or refused, and why)."""
    reds = [t for t in tasks if t.kind == "reduction" and _inner_split(t.op) is not None]
    taken: set[int] = set()
    new_tasks: list[Task] = []
    groups: list[NormGroup] = []
    mat = materialized
    for seed in reds:
        if id(seed) in taken:
            continue
        g = NormGroup([seed.op], shape_of(seed.op.input), _inner_split(seed.op), materialized=mat)
        members = [seed]
        for t in reds:
            if t is seed or id(t) in taken or t.order < seed.order:
                continue
            if shape_of(t.op.input) != g.in_shape or _inner_split(t.op) != g.k:
                continue
            deps = leaves(t.op.input, mat - set(t.op.results), args)
            if any(d not in g.results and lvl(d) >= seed.level for d in deps):
                continue
            if _aligned(t.op.input, g, False, mat, args):
                g.ops.append(t.op)
                members.append(t)
        # Outputs computed from the group's results at the row. Inside the kernel they are
        # computed in registers, never read back from their buffers.
        rows = math.prod(g.in_shape[:g.k])
        candidates = [o for t in tasks if t.kind == "pointwise" or t in members for o in t.outputs
                      if o not in g.results and o not in args]
        absorbed: list[SSAValue] = []
        for o in candidates:
            deps = leaves(o, mat, args)
            if not (deps & g.results) or any(d not in g.results and lvl(d) >= seed.level for d in deps):
                continue
            if shape_of(o) == g.in_shape and _aligned(o, g, False, mat, args):
                g.full_outputs.append(o)
                absorbed.append(o)
            elif math.prod(shape_of(o)) == rows and _aligned(o, g, True, mat, args):
                g.row_outputs.append(o)
                absorbed.append(o)
        if len(g.ops) == 1 and not g.full_outputs:
            continue  # a lone reduction: the reduction schedulers (with row splitting) do better
        g.cached = _cached_inputs(g, mat, args)
        max_bytes = max([elem_bytes(F._elem(v)) for v in g.cached + g.full_outputs] or [4])
        lanes = vector_lanes(g.in_shape[-1], max_bytes, opts.vector)
        g.decision = normalization_params(rows, math.prod(g.in_shape[g.k:]), lanes,
                                          [elem_bytes(F._elem(v)) for v in g.cached], opts.block)
        groups.append(g)
        if not g.decision.persistent:
            continue
        for t in members:
            taken.add(id(t))
        task = Task("normalization", seed.order, seed.level, seed.op, g.result_list + g.row_outputs + g.full_outputs)
        task.group = g
        new_tasks.append(task)
        for t in tasks:
            if t.kind == "pointwise":
                t.outputs = [o for o in t.outputs if o not in absorbed]
    out = [t for t in tasks if id(t) not in taken and not (t.kind == "pointwise" and not t.outputs)] + new_tasks
    out.sort(key=lambda t: (t.level, t.kind == "pointwise", t.order))
    return out, groups


def _cached_inputs(g: NormGroup, materialized: set, args: set) -> list[SSAValue]:
    """Full-size tensors the group reads at the row: what the registers hold."""
    exprs = [op.input for op in g.ops] + g.full_outputs
    found: set[SSAValue] = set()
    for e in exprs:
        found |= leaves(e, materialized, args)
    return sorted((v for v in found if v not in g.results and shape_of(v) == g.in_shape),
                  key=lambda v: str(v.name_hint))

