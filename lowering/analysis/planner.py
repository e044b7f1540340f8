"""The planner of fusion-segment: partition a fusion function into kernel tasks (it builds no
IR, so fusion-translate-welford and fusion-split-k ask it what the schedulers would do), and
read back the task of a segment it cut (`segment_plan`, for convert-fusion-to-sched).

Segmentation. Pointwise and shape ops are recomputed inside whichever kernel needs them, so
they never cost a trip through memory. Two sets of values matter:
- *stored* values are written to a buffer: every function output, and the results of
  reductions, scans, sorts, matmuls and `fusion.segment_set`s that a later kernel reads;
- *materialized* values are the ones a kernel reads back from a buffer instead of recomputing:
  function arguments aside, only the results of reductions, scans, sorts, matmuls and `segment_set`s, and a
  matmul's *narrowed product* (`narrowed_product`).
A pointwise function output is stored but never read back: a kernel that needs it (another
output, an epilogue, a reduction's input) recomputes it from its own inputs, so no kernel
depends on the store of a sibling output, in the same kernel or another.
Segmentation is greedy merging, as nvFuser's segmenter does it (`merge_greedily`): start from
the finest cut (a task per reduction, scan, sort, matmul and `segment_set`, and one per pointwise output),
then take, again and again, the merge that saves the most memory traffic among those a scheduler
accepts. A reduction, scan or sort kernel takes the outputs pointwise in its results, of its result
shape, as an epilogue; outputs of one shape and kernel level share a pointwise kernel; matmuls sharing A
share a main loop with the outputs that combine them; a reduction over an input's leading dims
and one over the rest of the same input share one read of it; inner reductions over the same rows, with
the outputs computed from them at the row, become one persistent normalization kernel where the
row fits on chip. Each task records the merges that formed it and the bytes each saved.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from xdsl.dialects import func
from xdsl.ir import Block, SSAValue

from fuser.dialects import fusion as F
from fuser.lowering.analysis.schedules import plan_transpose, pointwise_inputs
from fuser.lowering.common import (REDUCTION_OPS, SHAPE_OPS, ScheduleError, Task, by_name, elem_bytes, is_welford, leaves,
                                   matmul_results, nbytes, pointwise_path_only, reaches, shape_of, vector_lanes)
from fuser.lowering.heuristics.normalization import NormDecision, normalization_params
from fuser.lowering.heuristics.options import ScheduleOptions


@dataclass
class Plan:
    tasks: list[Task]
    stored: list[SSAValue]        # values written to a buffer (function outputs first)
    materialized: set[SSAValue]   # values kernels read from their buffer rather than recompute
    groups: list = field(default_factory=list)  # normalization groups considered, with decisions
    cost: int = 0                 # what the segmenter minimizes (`plan_cost`)


SCHEDULER_OF_TASK = {"pointwise": "pointwise", "segment": "pointwise", "reduction": "reduction",
                     "normalization": "normalization", "matmul": "matmul", "scan": "scan",
                     "sort": "sort", "scatter": "scatter"}
"""The scheduler that takes each kind of task (the name a `fusion.segment` carries)."""

BOUNDARY_OPS = REDUCTION_OPS + (F.ScanOp, F.SortOp, F.ScatterAddAtomicOp, F.SegmentSetOp, F.MatmulOp, F.SegmentOp)
"""Ops whose results are written to memory and read back by the kernels that use them."""

_NARROWING_CHAIN_OPS = (F.AddOp, F.SubOp, F.MulOp, F.NegOp, F.CastOp)


def narrowed_product(op: F.MatmulOp, materialized: set[SSAValue], args: set[SSAValue]) -> SSAValue | None:
    """The value every use of matmul `op`'s f32 product goes through, when that value is the
    product narrowed to a smaller type by light ops that read nothing else of its size: torch's
    `mm` / `addmm` (`cast(product + bias)` to bf16). It is materialized: the matmul's kernel
    computes it from its accumulator (it counts as one of the matmul's results: an epilogue may
    build on it) and writes it where another kernel reads it, and those read it, as eager and
    Inductor do; recomputing it from the f32 product in each reader read twice the bytes (GPT-2
    layer, 2026-11-26: the attention projection's f32 product was read by three kernels). None
    when a use of the product or of a step leaves the chain, or a step reads another kernel's
    result (the matmul's kernel, which computes the chain, does not wait for it: fuzz seed
    9200688 read a column minimum before its kernel wrote it)."""
    if op.partial_products or op.k_chunk is not None:
        return None  # split-K's partials: the sum's epilogue narrows
    v, size = op.result, math.prod(shape_of(op.result))
    while True:
        uses = list(v.uses)
        if len(uses) != 1:
            return None
        user = uses[0].operation
        if not isinstance(user, _NARROWING_CHAIN_OPS) or user.parent is not op.parent:
            return None
        others = [x for x in user.operands if x is not v]
        reads = [leaf for x in others for leaf in leaves(x, materialized, args)]
        if any(math.prod(shape_of(leaf)) >= size for leaf in reads):
            return None  # another full-size read: not this rule's light epilogue
        if any(leaf not in args for leaf in reads):
            return None  # another kernel's result: the matmul's kernel may run before it
        v = user.results[0]
        if isinstance(user, F.CastOp) and elem_bytes(F._elem(v)) < elem_bytes(F._elem(op.result)):
            # (a segment_set of it is written by the epilogue already: the `segment` epilogue merge)
            return None if any(isinstance(u.operation, F.SegmentSetOp) for u in v.uses) else v


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
    materialized, narrowed = _materialized(body, args)

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
    # (an output with no elements, a fusion.full that fusion-fold-empty left, needs no kernel)
    pointwise_outputs = [o for o in dict.fromkeys(outputs)
                         if o not in materialized and o not in args and math.prod(shape_of(o)) > 0]
    for op in body.ops:
        if isinstance(op, REDUCTION_OPS):
            # Every result is written: later kernels may read any of them.
            tasks.append(Task("reduction", order[op], lvl(op.results[0]), op, list(op.results)))
        elif isinstance(op, F.ScanOp):
            tasks.append(Task("scan", order[op], lvl(op.result), op, [op.result]))
        elif isinstance(op, F.SortOp):
            tasks.append(Task("sort", order[op], lvl(op.values), op, list(op.results)))
        elif isinstance(op, F.ScatterAddAtomicOp):
            tasks.append(Task("scatter", order[op], lvl(op.result), op, [op.result]))
        elif isinstance(op, F.MatmulOp):
            h = [narrowed[op]] if op in narrowed else []
            tasks.append(Task("matmul", order[op], lvl(op.result), op, [op.result] + h, narrowed=frozenset(h)))
        elif isinstance(op, F.SegmentSetOp):
            tasks.append(Task("segment", order[op], lvl(op.result), op, [op.result]))
        elif isinstance(op, F.SegmentOp):
            tasks.append(Task("fixed", order[op], lvl(op.results[0]), op, list(op.results)))
    # The finest segmentation: a task per boundary op and per pointwise output. Merging them is
    # the segmenter's job (`merge_greedily`).
    graph = FusionGraph(outputs, materialized, args, lvl, order, opts)
    tasks += [_pointwise_task([o], lvl(o), graph) for o in pointwise_outputs]
    tasks, groups = merge_greedily(tasks, graph)
    tasks = _fold_segment_sets(tasks, graph)
    cost = plan_cost(tasks, graph)
    for t in tasks:
        order_outputs(t, graph.rank)
    tasks.sort(key=lambda t: (t.level, t.kind == "pointwise", t.order))
    _mark_stored_matmul_results(tasks, outputs, materialized, args)
    _skip_unread_results(tasks, outputs, materialized, args)
    written = [r for t in tasks for r in t.outputs if not unstored_matmul_result(t, r)]
    stored = [v for v in dict.fromkeys(list(outputs) + written) if v not in args]
    return Plan(tasks, stored, materialized, groups, cost)


def _materialized(body: Block, args: set[SSAValue]) -> tuple[set[SSAValue], dict]:
    """The values kernels read back from memory (kernel boundaries' results and the matmuls'
    narrowed products), and each matmul's narrowed product. Only kernel boundaries are read
    back; pointwise outputs are recomputed by their readers (reading one back would race with,
    or precede, the kernel that writes it)."""
    materialized: set[SSAValue] = set()
    for op in body.ops:
        if isinstance(op, BOUNDARY_OPS):
            materialized |= set(op.results)
    narrowed = {op: h for op in body.ops
                if isinstance(op, F.MatmulOp) and (h := narrowed_product(op, materialized, args)) is not None}
    return materialized | set(narrowed.values()), narrowed


def segment_plan(body: Block, scheduler: str, opts: ScheduleOptions = ScheduleOptions()) -> Plan:
    """The task of a segment that fusion-segment cut, read from its body without planning: the
    segment is one task of `scheduler`, its ops are the task's and its yielded values are what
    the task writes, in order. The scheduler's parameters come from `opts` (the segment's
    `fuser.plan`). An error, located at the segment, when the body is not a task of that
    scheduler's shape (`plan_fusion` checks a hand-written segment more closely)."""
    args = set(body.args)
    written = list(body.last_op.operands)
    materialized, narrowed = _materialized(body, args)
    stored = [v for v in dict.fromkeys(written) if v not in args]
    reductions = [op for op in body.ops if isinstance(op, REDUCTION_OPS)]
    matmuls = [op for op in body.ops if isinstance(op, F.MatmulOp)]
    sets = [op for op in body.ops if isinstance(op, F.SegmentSetOp)]
    scans = [op for op in body.ops if isinstance(op, F.ScanOp)]
    sorts = [op for op in body.ops if isinstance(op, F.SortOp)]
    atomics = [op for op in body.ops if isinstance(op, F.ScatterAddAtomicOp)]

    def refuse(what: str):
        return ScheduleError(f"fusion.segment \"{scheduler}\" {what}: its ops are not one task of that scheduler "
                             "(drop its fuser.plan to have it planned, or its scheduler name too to have "
                             "fusion-segment split it)", body.parent_op())

    if not stored:
        return Plan([], [], materialized)  # passes its operands on: no kernel
    if any(isinstance(op, F.SegmentOp) for op in body.ops):
        raise refuse("holds a fusion.segment")
    if scans and scheduler != "scan":
        raise refuse("holds a fusion.scan")
    if sorts and scheduler != "sort":
        raise refuse("holds a fusion.sort")
    if atomics and scheduler != "scatter":
        raise refuse("holds a fusion.scatter_add_atomic")
    if scheduler == "pointwise":
        if reductions or matmuls:
            raise refuse("holds a reduction or matmul")
        if len(sets) == 1 and stored == [sets[0].result]:
            task = Task("segment", 0, 0, sets[0], list(stored))
        else:
            task = Task("pointwise", 0, 0, None, list(stored))
    elif scheduler == "reduction":
        if not 1 <= len(reductions) <= 2 or matmuls:
            raise refuse(f"holds {len(reductions)} reductions and {len(matmuls)} matmuls (one reduction, or a "
                         "reduction over an input's leading dims and one over the rest)")
        task = Task("reduction", 0, 0, reductions[0], list(stored), siblings=reductions[1:])
    elif scheduler == "scan":
        if len(scans) != 1 or reductions or matmuls:
            raise refuse(f"holds {len(scans)} scans, {len(reductions)} reductions and {len(matmuls)} matmuls (one "
                         "scan, with the outputs computed from its result)")
        task = Task("scan", 0, 0, scans[0], list(stored))
    elif scheduler == "sort":
        if len(sorts) != 1 or scans or reductions or matmuls:
            raise refuse(f"holds {len(sorts)} sorts, {len(scans)} scans, {len(reductions)} reductions and "
                         f"{len(matmuls)} matmuls (one sort, with the outputs computed from its results)")
        task = Task("sort", 0, 0, sorts[0], list(stored))
    elif scheduler == "scatter":
        if len(atomics) != 1 or sorts or scans or reductions or matmuls or stored != [atomics[0].result]:
            raise refuse(f"holds {len(atomics)} atomic scatters, {len(sorts) + len(scans) + len(reductions) + len(matmuls)} "
                         f"other kernel ops and {len(stored)} results (one atomic scatter, its result alone)")
        task = Task("scatter", 0, 0, atomics[0], list(stored))
    elif scheduler == "normalization":
        task = _normalization_task(body, reductions, matmuls, stored, materialized, args, opts, refuse)
    elif scheduler == "matmul":
        if not matmuls or reductions:
            raise refuse(f"holds {len(matmuls)} matmuls and {len(reductions)} reductions")
        products = [op.result for op in matmuls]
        held = frozenset(narrowed.values())
        outputs = products + [v for v in stored if v not in products]
        outputs += [h for h in held if h not in outputs]
        task = Task("matmul", 0, 0, matmuls[0], outputs, siblings=matmuls[1:], narrowed=held,
                    store_results={r for r in set(products) | held if r in stored})
    else:
        raise refuse("names no scheduler fuser has")
    return Plan([task], stored, materialized)


def _normalization_task(body: Block, reductions: list, matmuls: list, stored: list, materialized: set, args: set,
                        opts: ScheduleOptions, refuse) -> Task:
    """A normalization segment's task: its reductions, over the same rows, are the group; the
    values it writes are the reductions' results, then outputs at the row, then full-size
    outputs; the scheduler's decision is made under `opts`."""
    if not reductions or matmuls or any(_inner_split(op) is None for op in reductions):
        raise refuse("needs inner reductions and no matmul")
    first = reductions[0]
    g = NormGroup(list(reductions), shape_of(first.input), _inner_split(first), materialized=materialized)
    if any(shape_of(op.input) != g.in_shape or _inner_split(op) != g.k for op in reductions):
        raise refuse("holds reductions over different rows")
    rows = math.prod(g.in_shape[:g.k])
    results = g.results
    # a segment_set of a full-size output is written from that output's registers (_fold_segment_sets)
    sets = [v for v in stored if isinstance(v.owner, F.SegmentSetOp) and v.owner.input in stored]
    for v in stored:
        if v in results or v in sets:
            continue
        if shape_of(v) == g.in_shape:
            g.full_outputs.append(v)
        elif math.prod(shape_of(v)) == rows:
            g.row_outputs.append(v)
        else:
            raise refuse(f"writes a value of shape {list(shape_of(v))}, neither a row's nor the input's")
    _decide(g, materialized, args, opts)
    if not g.decision.persistent:
        raise refuse(f"cannot keep its rows on chip: {g.decision.reason}")
    if any(v.owner.input not in g.full_outputs for v in sets):
        raise refuse("writes a segment_set of a value that is not a full-size output")
    outputs = [v for v in stored if v in results] + g.row_outputs + g.full_outputs + sets
    return Task("normalization", 0, 0, first, outputs, group=g)


def order_outputs(t: Task, rank: dict[SSAValue, int]) -> None:
    """One order for what a kernel writes, whatever merged it: the results of the ops it is
    built around (program order), then the other outputs in the function's return order (`rank`;
    a normalization task keeps its row outputs before its full-size ones, then the segment_sets
    of those it writes too)."""
    own = [r for o in task_ops(t) for r in o.results]
    by_return = lambda vs: sorted(vs, key=lambda v: rank.get(v, len(rank)))  # noqa: E731 (stable)
    if t.group is not None:
        g = t.group
        g.row_outputs, g.full_outputs = by_return(g.row_outputs), by_return(g.full_outputs)
        t.outputs = [o for o in t.outputs if o in g.results] + g.row_outputs + g.full_outputs + \
            segment_sets_of(t.outputs, g.full_outputs)
        return
    t.outputs = [r for r in own if r in t.outputs] + by_return([o for o in t.outputs if o not in own])


def segment_sets_of(values, full_outputs) -> list[SSAValue]:
    """The segment_sets among `values` of a normalization group's full-size outputs: the row
    kernel writes them from those outputs' registers (`_fold_segment_sets`)."""
    return [v for v in values if isinstance(v.owner, F.SegmentSetOp) and v.owner.input in full_outputs]


def task_ops(t: Task) -> list:
    """The reductions / matmuls / segment_set a task is built around, in program order of
    merging (its own op first)."""
    ops = [t.op] + t.siblings + (list(t.group.ops) if t.group is not None else [])
    return [o for o in dict.fromkeys(ops) if o is not None]


def unstored_matmul_result(t: Task, v: SSAValue) -> bool:
    """A matmul result that only its own epilogue reads stays in registers (no buffer)."""
    return t.kind == "matmul" and v in matmul_results(t) and v not in t.store_results


def task_reads(t: Task, materialized: set, args: set) -> set[SSAValue]:
    """Materialized values and arguments the kernel(s) of task `t` read from memory."""
    if t.kind == "matmul":
        materialized = materialized - matmul_results(t)  # (its narrowed products: computed, not read)
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
        if t.kind not in ("reduction", "normalization", "scan", "sort"):
            continue
        results = t.group.results if t.kind == "normalization" else {r for op in task_ops(t) for r in op.results}
        candidates = [r for r in t.outputs if r in results and r not in outs]
        if not candidates:
            continue
        read = set().union(*(task_reads(u, materialized, args) for u in tasks if u is not t))
        keep = [o for o in t.outputs if o not in candidates or o in read]
        if any(o not in results for o in keep):  # the kernel still stores something
            t.outputs = keep



# ------------------------------------------------------------------ greedy merging


@dataclass
class FusionGraph:
    """What the merge proposals ask about the fusion: its outputs, the values read back from
    memory, the kernel level of a value, the program order of ops and the schedule options."""

    outputs: list[SSAValue]
    materialized: set[SSAValue]
    args: set[SSAValue]
    lvl: Callable[[SSAValue], int]
    order: dict
    opts: ScheduleOptions
    memo: dict = field(default_factory=dict)

    def __post_init__(self):
        self.returned = set(self.outputs)
        self.rank = {v: i for i, v in enumerate(dict.fromkeys(self.outputs))}

    def nbytes(self, v: SSAValue) -> int:
        key = ("nbytes", v)
        if key not in self.memo:
            self.memo[key] = nbytes(v)
        return self.memo[key]

    def deps(self, o: SSAValue) -> set[SSAValue]:
        """Stored values and arguments that computing `o` in registers reads."""
        key = ("deps", o)
        if key not in self.memo:
            self.memo[key] = leaves(o, self.materialized - {o}, self.args)
        return self.memo[key]


@dataclass
class Merge:
    """A proposal: replace the tasks `parts` by `new` (the merged task first, then what is left
    of a part whose outputs the merge takes only some of)."""

    kind: str                  # the scheduler that accepts the merged task (MERGE_PRIORITY)
    parts: list[Task]
    new: list[Task]
    saving: int = 0            # bytes of memory traffic the merge saves


LOOKAHEAD_MAX_TASKS = 64
"""Rivals are played out while a fusion has at most this many tasks: each play-out is a whole
greedy run, so beyond it (rare: a fusion of dozens of kernels) the merge that saves most is
taken, as nvFuser's segmenter does throughout."""

MERGE_PRIORITY = ("pointwise", "epilogue", "siblings", "matmul", "normalization")
"""Ties in saving go to the later kind here (then to the earlier op)."""


def merge_greedily(tasks: list[Task], graph: FusionGraph, lookahead: bool = True) -> tuple[list[Task], list[NormGroup]]:
    """nvFuser's segmenter on fuser's schedulers. From one task per boundary op and per pointwise
    output, take the merge that saves the most memory traffic among those a scheduler accepts,
    until none is left; hand-written segments take no part. The proposals:
    - epilogue: a pointwise output of a reduction's, scan's or matmul's result shape, computed from its
      results by elementwise ops and from values of earlier kernels only, or a `segment_set` of
      one (its value is written by the epilogue);
    - pointwise: two neighbouring tasks (in return order) of outputs of one shape whose inputs
      come from one kernel level (so that no merged kernel waits on itself);
    - matmul: two matmuls sharing A, with the outputs that combine their results;
    - siblings: reductions of one input over its leading dims and over the rest (column and
      row sums), which one kernel computes from one read (`emit_joint_reduction`);
    - normalization: inner reductions over the same rows and the outputs computed from them at
      the row, where the normalization scheduler keeps the row on chip.
    Taking a merge can rule out merges of other kinds that share a task with it (an output joins
    an epilogue or a pointwise kernel, not both). Where it does, the best such rival of each other
    kind is played out greedily to the end, and the merge whose plan costs least is taken
    (`plan_cost`: bytes moved plus a launch's worth per kernel), since the merge that saves most
    now is not always the best plan. (At most three play-outs per step, and only while the fusion
    has at most LOOKAHEAD_MAX_TASKS tasks, keeps this cheap.)
    Returns the tasks and the normalization groups asked about: the accepted ones, and for each
    other reduction that seeded one, the last refusal and its reason."""
    if not any(t.kind in _ANCHOR_KINDS for t in tasks):
        return _merge_pointwise_only(tasks, graph), []
    considered: dict = {}   # seed reduction -> the last group it seeded
    readers = Counter(v for t in tasks for v in _loads(t, graph))  # kept up to date by each merge
    while True:
        proposals = [*_epilogue_merges(tasks, graph), *_pointwise_merges(tasks, graph), *_matmul_merges(tasks, graph),
                     *_sibling_merges(tasks, graph)]
        if graph.opts.persistent:
            proposals += _normalization_merges(tasks, graph, considered)
        if not proposals:
            break
        _price(proposals, readers, graph)
        proposals.sort(key=lambda m: (m.saving, MERGE_PRIORITY.index(m.kind), -m.new[0].order), reverse=True)
        best = proposals[0]
        rivals = []  # for each other kind, its best merge that takes a task of `best`
        for m in proposals[1:]:
            if m.kind != best.kind and all(r.kind != m.kind for r in rivals) and \
                    any(p is q for p in m.parts for q in best.parts):
                rivals.append(m)
        if lookahead and rivals and len(tasks) <= LOOKAHEAD_MAX_TASKS:
            best = min([best] + rivals, key=lambda m: plan_cost(merge_greedily(_apply(tasks, m, graph), graph, False)[0], graph))
        tasks = _apply(tasks, best, graph)
        readers.subtract(v for p in best.parts for v in _loads(p, graph))
        readers.update(v for t in best.new for v in _loads(t, graph))
    accepted = {id(t.group) for t in tasks if t.group is not None}
    taken = {op for t in tasks if t.group is not None for op in t.group.ops}
    groups = [g for seed, g in considered.items() if id(g) in accepted or seed not in taken]
    return tasks, groups


_ANCHOR_KINDS = ("reduction", "scan", "sort", "matmul", "normalization")
"""Tasks that other merges than the pointwise one need (an epilogue's, siblings', matmuls', a
normalization group's): without them only neighbouring pointwise tasks merge."""


def _merge_pointwise_only(tasks: list[Task], graph: FusionGraph) -> list[Task]:
    """`merge_greedily` where only pointwise merges can arise: the same merges in the same
    order (the most saving first, then the lowest order; a pointwise merge's saving depends on
    its two tasks alone, and it changes only its neighbours' proposals), taken from a heap of
    the neighbouring pairs in each bucket instead of re-proposing every pair at every step. A
    fusion of n pointwise outputs in one kernel took n steps over n proposals: 20 s at n =
    1000."""
    standing = {id(t): t for t in tasks}  # id -> a task not merged (yet)
    before: dict[int, Task | None] = {}  # id -> the task before it in its bucket (return order)
    after: dict[int, Task | None] = {}
    # where each task stands in the list merge_greedily would return (a merge drops its parts
    # and appends the merged task)
    place: dict[int, int] = {id(t): i for i, t in enumerate(tasks)}
    heap: list = []
    pushed = itertools.count()  # (ties of stale pairs with their successors: never a Merge compared)

    def propose(a: Task | None, b: Task | None) -> None:
        if a is None or b is None:
            return
        m = _proposal(graph, "pointwise", [a, b], lambda: [_merged_pointwise(a, b, graph)])
        m.saving = _pointwise_saving(m, graph)
        heapq.heappush(heap, (-m.saving, m.new[0].order, next(pushed), m))

    for ts in _pointwise_buckets(tasks, graph):
        for i, t in enumerate(ts):
            before[id(t)] = ts[i - 1] if i else None
            after[id(t)] = ts[i + 1] if i + 1 < len(ts) else None
        for a, b in zip(ts, ts[1:]):
            propose(a, b)
    while heap:
        *_, m = heapq.heappop(heap)
        a, b = m.parts
        if id(a) not in standing or id(b) not in standing or after[id(a)] is not b:
            continue  # a part merged since: the pair is gone
        (merged,) = _apply([a, b], m, graph)
        for t in (a, b):
            del standing[id(t)]
        prev, nxt = before.pop(id(a)), after.pop(id(b))
        del after[id(a)], before[id(b)]
        standing[id(merged)], before[id(merged)], after[id(merged)] = merged, prev, nxt
        place[id(merged)] = len(place)
        if prev is not None:
            after[id(prev)] = merged
        if nxt is not None:
            before[id(nxt)] = merged
        propose(prev, merged)
        propose(merged, nxt)
    return sorted(standing.values(), key=lambda t: place[id(t)])


def _fold_segment_sets(tasks: list[Task], graph: FusionGraph) -> list[Task]:
    """A `segment_set` of a pointwise output joins the kernel that computes the output, which
    writes both buffers from the same registers: a backward pass returns a gradient that the
    next matmul also reads, and two kernels computed it, each reading the same inputs. After
    the greedy merges, so that the joined task takes part in no other (and a segment's body,
    planned again in the conversion, comes out as the same one task)."""
    producer = {o: t for t in tasks if t.kind == "pointwise" for o in t.outputs}
    at_row = {o: t for t in tasks if t.kind == "normalization" for o in t.group.full_outputs}
    out = list(tasks)
    for s in tasks:
        if s.kind != "segment" or s.op.input in graph.materialized:
            continue
        if s.op.input in at_row and s.level > at_row[s.op.input].level:
            # a full-size output of a normalization kernel (a loss's logits gradient, returned
            # and read by the next matmul): the row kernel stores it from the same registers,
            # where a kernel of its own would compute the row again from the inputs. (Not where
            # the row kernel, or a kernel before it, reads the segment_set: CPU fuzz seed
            # 4242213, a segment_set of an input that the rows read, planned into its own reader.)
            p = at_row[s.op.input]
            merged = replace(p, outputs=p.outputs + s.outputs,
                             merges=p.merges + s.merges + ["segment_set joins its row kernel"])
            out = [merged if t is p else t for t in out if t is not s]
            at_row.update((o, merged) for o in merged.group.full_outputs)
            continue
        source = _through_row_reshapes(s.op.input, graph)
        if source not in producer:
            continue
        p = producer[source]
        merged = _pointwise_task(p.outputs + s.outputs, p.level, graph)
        if source is not s.op.input and _transposes(merged.outputs, graph):
            continue  # (the transpose kernel writes outputs of one shape)
        everywhere = lambda v: True  # noqa: E731 (both buffers are written either way)
        saving = _traffic([p, s], [_loads(p, graph), _loads(s, graph)], everywhere, graph) - \
            _traffic([merged], [_loads(merged, graph)], everywhere, graph)
        merged = replace(merged, merges=p.merges + s.merges + [f"segment_set joins its producer (saves {saving} B)"])
        out = [t for t in out if t is not p and t is not s] + [merged]
        producer.update((o, merged) for o in merged.outputs)
    return out


def _transposes(outputs: list[SSAValue], graph: FusionGraph) -> bool:
    """Whether the transpose kernel would compute these pointwise outputs."""
    expr = pointwise_inputs(outputs, graph.materialized, graph.args)[0]
    return plan_transpose(outputs, expr, graph.materialized, graph.args) is not None


def _through_row_reshapes(v: SSAValue, graph: FusionGraph) -> SSAValue:
    """`v`, or the value it reshapes (through reshapes that keep the last dim and are not
    materialized): the same elements in the same order, so a kernel that computes one can write
    the other from the same registers (a gradient returned as 8x1024x3072 and read by the next
    matmul as 8192x3072)."""
    while isinstance(v.owner, F.ReshapeOp) and v not in graph.materialized and \
            shape_of(v)[-1:] == shape_of(v.owner.input)[-1:] and shape_of(v):
        v = v.owner.input
    return v


def _apply(tasks: list[Task], m: Merge, graph: FusionGraph) -> list[Task]:
    """The tasks after merge `m` (a copy of the merged task records it: the proposal itself may
    be asked about again, from another state, with another saving; the copy loads what the
    proposal's task loads)."""
    merged = replace(m.new[0], merges=[x for p in m.parts for x in p.merges] + [f"{m.kind} (saves {m.saving} B)"])
    graph.memo[("loads", id(merged))] = (merged, _loads(m.new[0], graph))
    parts = {id(p) for p in m.parts}
    return [t for t in tasks if id(t) not in parts] + [merged] + m.new[1:]


def _proposal(graph: FusionGraph, kind: str, parts: list[Task], new: Callable[[], list[Task]]) -> Merge:
    """The merge of `parts`, made once: the same pair is proposed at every step until one of
    them merges, and its new tasks keep what was learned about them (`_loads`)."""
    key = ("proposal", kind, *map(id, parts))
    if key not in graph.memo:
        graph.memo[key] = Merge(kind, parts, new())
    return graph.memo[key]


LAUNCH_BYTES = 6_000_000
"""What a kernel boundary costs, in bytes of memory traffic: about 2 us (a launch and a kernel's
ramp-up and tail, an estimate) at the H100's ~3 TB/s."""


def plan_cost(tasks: list[Task], graph: FusionGraph) -> int:
    """The bytes a plan's kernels read and write, plus LAUNCH_BYTES per kernel."""
    return _traffic(tasks, [_loads(t, graph) for t in tasks], lambda v: False, graph) + LAUNCH_BYTES * len(tasks)


def _loads(t: Task, graph: FusionGraph) -> set[SSAValue]:
    """What the kernel of `t` reads from memory (its own results aside). Tasks are not changed
    once made (a merge makes new ones), so this is asked once per task."""
    key = ("loads", id(t))
    if key not in graph.memo:  # (the task is kept with its answer, so its id is not reused)
        if t.kind == "pointwise":  # task_reads' union over its outputs, from the memoized walks
            reads = set().union(*(graph.deps(o) for o in t.outputs))
        else:
            reads = task_reads(t, graph.materialized, graph.args) - {r for op in task_ops(t) for r in op.results}
        graph.memo[key] = (t, reads)
    return graph.memo[key][1]


def _traffic(group: list[Task], group_reads: list[set], read_outside, graph: FusionGraph) -> int:
    """Bytes the tasks of `group` read and write. A task writes a value that is returned, or read
    by another task (of the group, or outside it: `read_outside(v)`); statistics that only its
    own epilogue uses stay in registers."""
    total = 0
    readers = Counter(v for r in group_reads for v in r)
    for t, r in zip(group, group_reads):
        total += sum(map(graph.nbytes, r))
        for o in dict.fromkeys(t.outputs):
            read_by_another = readers[o] > (o in r)
            if t.kind in ("segment", "fixed") or o in graph.returned or read_outside(o) or read_by_another:
                total += graph.nbytes(o)
    return total


def _price(proposals: list[Merge], readers: Counter, graph: FusionGraph) -> None:
    """Set each proposal's saving: the bytes its parts read and write, less what its new tasks
    read and write. The saving depends on the other tasks only through whether each output of
    the proposal's tasks is read outside them, so it is kept per proposal and per answer to that
    (a proposal stands for many merge steps, and most steps change none of its answers: without
    this, a fusion with n outputs cost n^2 pricings, 11 s at n = 500). `readers` counts, for
    each value, the tasks that load it."""
    for m in proposals:
        if m.kind == "pointwise":
            m.saving = _pointwise_saving(m, graph)
            continue
        key = ("price", id(m))
        if key not in graph.memo:
            part_reads = [_loads(p, graph) for p in m.parts]
            inside = Counter(v for r in part_reads for v in r)
            outs = tuple(dict.fromkeys(o for t in [*m.parts, *m.new] for o in t.outputs))
            graph.memo[key] = (m, part_reads, inside, outs, {})  # (m kept: its id is the key)
        _, part_reads, inside, outs, by_answers = graph.memo[key]
        answers = tuple(readers[o] > inside[o] for o in outs)
        if answers not in by_answers:
            def read_outside(v: SSAValue) -> bool:
                return readers[v] > inside[v]

            by_answers[answers] = _traffic(m.parts, part_reads, read_outside, graph) - \
                _traffic(m.new, [_loads(t, graph) for t in m.new], read_outside, graph)
        m.saving = by_answers[answers]


def _pointwise_saving(m: Merge, graph: FusionGraph) -> int:
    """The saving of merging two pointwise tasks: the values both read, read once. (Their
    outputs are function outputs, written either way, and no kernel reads them back: what
    `_traffic` would find, without walking the outputs, which grow with every merge of a wide
    fusion: pricing 1000 outputs' merges that way took 13 of the planner's 20 s.) Found once
    per proposal: it depends on its two tasks alone."""
    key = ("pointwise saving", id(m))
    if key not in graph.memo:
        a, b = m.parts
        graph.memo[key] = (m, sum(map(graph.nbytes, _loads(a, graph) & _loads(b, graph))))
    return graph.memo[key][1]


def _epilogue_merges(tasks: list[Task], graph: FusionGraph) -> list[Merge]:
    """A reduction, scan or matmul task with a pointwise task all of whose outputs are its epilogue, or
    with a `segment_set` of such a value (the epilogue writes it for the kernels that read it).
    (Split-K's partial products have none: the epilogue is the sum's.)"""
    out = []
    anchors = [t for t in tasks if t.kind in ("reduction", "scan", "sort") or (t.kind == "matmul" and not t.op.partial_products)]
    anchor_of = {r: t for t in anchors for r in ({r for op in task_ops(t) for r in op.results} |
                                                 (matmul_results(t) if t.kind == "matmul" else set()))}
    if not anchor_of:
        return out
    for p in (t for t in tasks if t.kind in ("pointwise", "segment")):
        # A segment_set's value is written to memory for later kernels: the epilogue can write it.
        exprs = [p.op.input] if p.kind == "segment" else p.outputs
        # only a task whose results the outputs read can take them (a pointwise task's loads are
        # the union of its outputs' deps, memoized)
        reads = graph.deps(p.op.input) if p.kind == "segment" else _loads(p, graph)
        candidates = {id(anchor_of[d]): anchor_of[d] for d in reads if d in anchor_of}
        for t in sorted(candidates.values(), key=lambda t: t.order):
            if all(_is_epilogue(t, o, graph) for o in exprs) and (t.kind != "matmul" or (
                    _matmul_epilogue_work(t, t.outputs + p.outputs, graph) <= epilogue_limit(graph)
                    and not _product_read_elsewhere(t, p, tasks, graph))):
                out.append(_proposal(graph, "epilogue", [t, p], lambda t=t, p=p: [replace(t, outputs=t.outputs + p.outputs)]))
    return out


MATMUL_EPILOGUE_WORK = 2
"""The most work a matmul's epilogue takes on by default (`_matmul_epilogue_work`; the
`matmul_epilogue_work` option sets another). Its two consumer warpgroups (256 threads per SM)
evaluate it after the main loop: a bias and a GELU op, or a residual add, cost little next to the
tile's K loop, but on a GPT-2 layer (K = 768, 2026-11-25, H100) an epilogue of pow + tanh with six
outputs took 0.74 ms where the matmul and four pointwise kernels at full occupancy took 0.41 ms,
and a GELU backward reading four saved tensors 0.9 ms."""


def epilogue_limit(graph: FusionGraph) -> int:
    return MATMUL_EPILOGUE_WORK if graph.opts.matmul_epilogue_work < 0 else graph.opts.matmul_epilogue_work


def _product_read_elsewhere(t: Task, p: Task, tasks: list[Task], graph: FusionGraph) -> bool:
    """Another kernel reads matmul `t`'s raw product, so `t` stores it in f32: an epilogue output
    of another element type beside that store made the kernel 15x slower (8192x3072x768 on the
    H100, 2026-11-25: 1.09 ms for the f32 product and a bf16 bias-add, 0.07 ms for the product
    alone), so the epilogue then stays a kernel of its own, which reads the product anyway. A
    reader that can join the same epilogue within its work limit is no such reason.
    (Not reproduced alone on 2026-11-26, H200: 85 us against 69 us. But GPT-2's training step on
    the H100 without this rule, in a build that also evaluated epilogues a column group at a
    time, spent 34.9 ms in fuser's kernels against 29.1 ms: kept until an A/B run separates them.)"""
    results = matmul_results(t)
    types = {F._elem(r) for r in results}
    if all(F._elem(o) in types for o in p.outputs):
        return False  # (measured only with outputs of another element type than the product's)

    def joins_too(u: Task) -> bool:  # a reader that can be this epilogue as well (not a reason to store)
        exprs = [u.op.input] if u.kind == "segment" else u.outputs
        return u.kind in ("pointwise", "segment") and all(_is_epilogue(t, e, graph) for e in exprs) and \
            _matmul_epilogue_work(t, t.outputs + p.outputs + u.outputs, graph) <= epilogue_limit(graph)
    return any(results & _loads(u, graph) and not joins_too(u) for u in tasks if u is not t and u is not p)


_LIGHT_OPS = (F.AddOp, F.SubOp, F.MulOp, F.MaxOp, F.MinOp, F.NegOp, F.AbsOp, F.ReluOp, F.CastOp, F.CmpOp, F.WhereOp,
              F.FullOp, F.BroadcastOp, F.ReshapeOp, F.PermuteOp, F.SegmentSetOp)


def _matmul_epilogue_work(t: Task, outputs: list[SSAValue], graph: FusionGraph) -> int:
    """The epilogue work of matmul task `t` computing `outputs`: two per op other than simple
    arithmetic (exp, tanh, pow, division, ...), two per full-size tensor it reads besides the
    products, one per value written beyond the first. (One per such op let HF GPT-2's GELU, pow and
    tanh, into its matmul's epilogue once the min-cut partitioner left it a single output: H100,
    2026-11-26, fuser's kernels 26.7 -> 35.9 ms per training step.)"""
    results = matmul_results(t)
    count = math.prod(shape_of(t.op.result))
    stop = graph.materialized | graph.args | results
    heavy, reads, seen = 0, set(), set()
    # (a segment_set of a value the epilogue computes anyway is one more store, not more work)
    values = {o.owner.input if isinstance(o.owner, F.SegmentSetOp) else o for o in outputs}
    todo = list(values)
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in stop:
            if v not in results and math.prod(shape_of(v)) == count:
                reads.add(v)
            continue
        if not isinstance(v.owner, _LIGHT_OPS):
            heavy += 2
        todo.extend(v.owner.operands)
    return heavy + 2 * len(reads) + len(values - results) - 1


def _is_epilogue(t: Task, o: SSAValue, graph: FusionGraph) -> bool:
    """Can the kernel of task `t` compute output `o` at its result's positions? (A joint row and
    column reduction finishes its two reductions in different kernels: `o` may read only one.)"""
    ops = task_ops(t)
    key = ("epilogue", tuple(map(id, ops)), o)
    if key not in graph.memo:
        deps = graph.deps(o)
        if t.kind == "reduction":  # the results of exactly one of its reductions
            anchors = [op for op in ops if set(op.results) & deps]
            anchor = anchors[0] if len(anchors) == 1 else None
            rs = set(anchor.results) if anchor is not None else set()
        else:
            anchor, rs = t.op, {r for op in ops for r in op.results} | (matmul_results(t) if t.kind == "matmul" else set())
        graph.memo[key] = (
            o not in graph.args and anchor is not None and shape_of(o) == shape_of(anchor.results[0]) and bool(rs & deps)
            and all(graph.lvl(d) < t.level for d in deps if d not in rs)
            and pointwise_path_only(o, rs, graph.materialized - {o} - rs, graph.args))
    return graph.memo[key]


def _pointwise_merges(tasks: list[Task], graph: FusionGraph) -> list[Merge]:
    """Neighbouring pointwise tasks (in return order) of one shape and kernel level."""
    out = []
    for ts in _pointwise_buckets(tasks, graph):
        for a, b in zip(ts, ts[1:]):
            out.append(_proposal(graph, "pointwise", [a, b], lambda a=a, b=b: [_merged_pointwise(a, b, graph)]))
    return out


def _pointwise_buckets(tasks: list[Task], graph: FusionGraph) -> list[list[Task]]:
    """The pointwise tasks by shape and kernel level, each bucket in return order (of a task's
    first output; segment_sets join only after the merges)."""
    buckets: dict[tuple, list[tuple]] = {}
    for t in tasks:
        if t.kind == "pointwise":
            key = ("bucket", id(t))  # (asked at every merge step: kept with the task)
            if key not in graph.memo:
                graph.memo[key] = (t, (t.level, shape_of(t.outputs[0])), graph.rank[t.outputs[0]])
            _, bucket, rank = graph.memo[key]
            buckets.setdefault(bucket, []).append((rank, t))
    return [[t for _, t in sorted(ranked, key=lambda rt: rt[0])] for ranked in buckets.values()]


def _merged_pointwise(a: Task, b: Task, graph: FusionGraph) -> Task:
    """The pointwise task of `a`'s and `b`'s outputs; it loads what they load (known: walking its
    outputs again, which grow with every merge of a wide fusion, made planning quadratic)."""
    outputs = a.outputs + b.outputs
    if a.outputs and b.outputs and graph.rank.get(a.outputs[-1], -1) < graph.rank.get(b.outputs[0], -1):
        # (in return order already, as a run of neighbours always is: no sort of the whole run)
        t = Task("pointwise", graph.order[outputs[0].owner], a.level, None, outputs)
    else:
        t = _pointwise_task(outputs, a.level, graph)
    graph.memo[("loads", id(t))] = (t, _loads(a, graph) | _loads(b, graph))
    return t


def _matmul_merges(tasks: list[Task], graph: FusionGraph) -> list[Merge]:
    """Two matmuls sharing A (one main loop for both) with the pointwise tasks whose outputs
    read only their results and arguments: there must be one, or nothing combines them."""
    out = []
    mm = sorted((t for t in tasks if t.kind == "matmul" and not t.siblings), key=lambda t: t.order)
    for i, t in enumerate(mm):
        for u in mm[i + 1:]:
            a, b = t.op, u.op
            if u.level != t.level or not share_a(a, b):
                continue
            results = {a.result, b.result}
            absorbed = [p for p in tasks if p.kind == "pointwise" and all(
                o not in graph.args and shape_of(o) == shape_of(a.result) and graph.deps(o) & results
                and graph.deps(o) <= results | graph.args for o in p.outputs)]
            if absorbed:
                merged = replace(t, siblings=[b], outputs=t.outputs + u.outputs + [o for p in absorbed for o in p.outputs],
                                 narrowed=t.narrowed | u.narrowed)
                out.append(Merge("matmul", [t, u, *absorbed], [merged]))
    return out


def _sibling_merges(tasks: list[Task], graph: FusionGraph) -> list[Merge]:
    """A reduction over an input's leading dims and one over the rest of the same input (column
    and row sums of a matrix, or of any split of its dims), with the epilogues each already has:
    one kernel reads the input once for both. Sums, maxima and minima; a Welford state (three
    values and a division per merge) is not folded per row inside the column kernel."""
    reds = [t for t in tasks if t.kind == "reduction" and not t.siblings and not is_welford(t.op)]
    out = []
    for cols in reds:
        k = _outer_split(cols.op)
        for rows in reds:
            if k is None or rows.op.input is not cols.op.input or _inner_split(rows.op) != k or rows.level != cols.level:
                continue
            parts = sorted([cols, rows], key=lambda v: v.order)
            out.append(_proposal(graph, "siblings", parts, lambda c=cols, r=rows, o=parts[0].order: [
                replace(c, order=o, outputs=c.outputs + r.outputs, siblings=[r.op])]))
    return out


def share_a(a: F.MatmulOp, b: F.MatmulOp) -> bool:
    """Can one main loop compute both matmuls? (Split-K's are never paired.)"""
    return (a.k_chunk is None and b.k_chunk is None and a.a is b.a
            and (a.transpose_a is None) == (b.transpose_a is None)
            and (a.transpose_b is None) == (b.transpose_b is None)
            and shape_of(a.b) == shape_of(b.b) and shape_of(a.result) == shape_of(b.result))


def _mark_stored_matmul_results(tasks: list[Task], outputs, materialized: set, args: set) -> None:
    """A matmul result is written when it is returned or another task reads it; otherwise only
    its own epilogue uses it, from registers."""
    reads = {id(t): task_reads(t, materialized, args) for t in tasks}
    for t in tasks:
        if t.kind == "matmul":
            t.store_results = {r for r in matmul_results(t) if r in outputs or
                               any(r in reads[id(u)] for u in tasks if u is not t)}


# ------------------------------------------------------------------ normalization groups


@dataclass
class NormGroup:
    """Inner reductions over the same rows and the outputs computed from them at the row: one
    persistent normalization kernel when `decision` accepts it (lowering/emitters/normalization.py)."""

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


def _outer_split(op) -> int | None:
    """k such that `op` reduces exactly the leading dims 0..k-1 and keeps some, else None."""
    rank = len(shape_of(op.input))
    dims = sorted(op.reduced_dims)
    return len(dims) if dims == list(range(len(dims))) and len(dims) < rank else None


def _inner_split(op) -> int | None:
    """k such that `op` reduces exactly the trailing dims k..rank-1, else None."""
    rank = len(shape_of(op.input))
    dims = sorted(op.reduced_dims)
    k = rank - len(dims)
    return k if dims == list(range(k, rank)) else None


def _aligned(v: SSAValue, g: NormGroup, results: set, row_region: bool, materialized: set, args: set) -> bool:
    """True if computing `v` at a position of the current row reads the group's results only at
    that row. In the full region indices are (row, column); in the row region only the row.
    `results` are the group's results. (Iterative: a fusion may chain thousands of ops.)"""
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


def _read_before(t: Task, level: int, tasks: list[Task], graph: FusionGraph) -> bool:
    """Does one of `tasks` that runs before a non-pointwise task of kernel level `level` read a
    result of `t`? (Tasks run by level, and within one level the pointwise ones last.)"""
    results = set(t.op.results)
    return any(results & _loads(u, graph) and (u.level < level or (u.level == level and u.kind != "pointwise"))
               for u in tasks)


def _normalization_merges(tasks: list[Task], graph: FusionGraph, considered: dict) -> list[Merge]:
    """For each inner reduction (the seed), the later reductions over the same rows that can
    share its kernel, and the outputs computed from their results at the row; a proposal where
    the normalization scheduler keeps the row on chip. Every group asked about is recorded in
    `considered`, with the scheduler's decision."""
    mat, args, lvl = graph.materialized, graph.args, graph.lvl
    reds = sorted((t for t in tasks if t.kind == "reduction" and _inner_split(t.op) is not None), key=lambda t: t.order)
    out = []

    def reads(v: SSAValue) -> set[SSAValue]:  # what computing v reads from memory
        return {v} if v in mat or v in args else graph.deps(v)

    # The same questions come back at every merge step while a group stays the same, so each
    # group's state (its ops so far) gets a number, and answers are remembered by it.
    def state_after(state: int | None, op) -> int:
        key = ("group state", state, op)
        return graph.memo.setdefault(key, len(graph.memo))

    def aligned(v: SSAValue, g: NormGroup, results: set, state: int, row_region: bool) -> bool:
        key = ("aligned", v, row_region, state)
        if key not in graph.memo:
            graph.memo[key] = _aligned(v, g, results, row_region, mat, args)
        return graph.memo[key]

    covered = set()  # members of an earlier seed's accepted group: their own groups would be its tails
    for seed in reds:
        if seed.op in covered:
            continue
        g = NormGroup([seed.op], shape_of(seed.op.input), _inner_split(seed.op), materialized=mat)
        members = [seed]
        results = g.results
        state = state_after(None, seed.op)
        for t in reds:
            if t.order <= seed.order or shape_of(t.op.input) != g.in_shape or _inner_split(t.op) != g.k:
                continue
            if any(d not in results and lvl(d) >= seed.level for d in reads(t.op.input)):
                continue
            if aligned(t.op.input, g, results, state, False):
                g.ops.append(t.op)
                members.append(t)
                results |= set(t.op.results)
                state = state_after(state, t.op)
        # Outputs computed from the group's results at the row. Inside the kernel they are
        # computed in registers, never read back from their buffers. So are full-size outputs
        # computed from nothing but what the group reads already (a residual sum, a dropout mask
        # that a layer norm's input is made of): written by the kernel that has them at hand,
        # they cost no second read of the group's inputs.
        rows = math.prod(g.in_shape[:g.k])
        absorbed: set[SSAValue] = set()
        member_ids = {id(m) for m in members}
        group_reads = set().union(*(reads(op.input) for op in g.ops))
        producers: list[SSAValue] = []
        for t in tasks:
            if t.kind != "pointwise" and id(t) not in member_ids:
                continue
            for o in t.outputs:
                if o in results or o in args:
                    continue
                deps = reads(o)
                if any(d not in results and lvl(d) >= seed.level for d in deps):
                    continue
                if not (deps & results):  # a producer's value: full-size, of the group's reads only
                    if shape_of(o) == g.in_shape and deps <= group_reads and aligned(o, g, results, state, False):
                        producers.append(o)
                    continue
                if shape_of(o) == g.in_shape and aligned(o, g, results, state, False):
                    g.full_outputs.append(o)
                    absorbed.add(o)
                elif math.prod(shape_of(o)) == rows and aligned(o, g, results, state, True):
                    g.row_outputs.append(o)
                    absorbed.add(o)
        if len(g.ops) == 1 and not g.full_outputs:
            continue  # a lone reduction: the reduction schedulers (with row splitting) do better
        g.full_outputs += producers  # (they join a group; they do not make one)
        absorbed.update(producers)
        if any(o not in results and o not in absorbed for m in members for o in m.outputs):
            continue  # a member's epilogue the row cannot compute: it keeps its own kernel
        _decide(g, mat, args, graph.opts)
        considered[seed.op] = g
        if not g.decision.persistent:
            continue
        task = Task("normalization", seed.order, seed.level, seed.op,
                    g.result_list + g.row_outputs + g.full_outputs, group=g)
        robbed = [t for t in tasks if t.kind == "pointwise" and any(o in absorbed for o in t.outputs)]
        left = [_pointwise_task([o for o in t.outputs if o not in absorbed], t.level, graph) for t in robbed]
        # A member of an earlier kernel level runs later in the group: not if a kernel that still
        # runs before the group reads its result (a max of an input that a pointwise output reads
        # through a permute, beside a sum of a matmul product).
        merged = {id(t) for t in members + robbed}
        others = [t for t in tasks if id(t) not in merged] + [t for t in left if t.outputs]
        if any(m.level < seed.level and _read_before(m, seed.level, others, graph) for m in members):
            continue
        out.append(Merge("normalization", members + robbed, [task] + [t for t in left if t.outputs]))
        covered.update(g.ops)
    return out


def _pointwise_task(outputs: list[SSAValue], level: int, graph: FusionGraph) -> Task:
    """A pointwise task, placed at its first output in return order (a `segment_set` result,
    not returned, after the returned ones)."""
    outputs = sorted(outputs, key=lambda o: graph.rank.get(o, len(graph.rank)))
    return Task("pointwise", graph.order[outputs[0].owner] if outputs else 0, level, None, outputs)


def _decide(g: NormGroup, materialized: set, args: set, opts: ScheduleOptions) -> None:
    """Ask the normalization scheduler about group `g` (its members and outputs found): what
    stays on chip (`g.cached`) and its decision (`g.decision`)."""
    g.cached = _cached_inputs(g, materialized, args)
    full = math.prod(g.in_shape)
    stops = materialized | g.results
    reads_full = any(math.prod(shape_of(v)) >= full for op in g.ops
                     for v in leaves(op.input, stops, args) - g.results)
    max_bytes = max([elem_bytes(F._elem(v)) for v in g.cached + g.full_outputs] or [4])
    lanes = vector_lanes(g.in_shape[-1], max_bytes, opts.vector)
    g.decision = normalization_params(math.prod(g.in_shape[:g.k]), math.prod(g.in_shape[g.k:]), lanes,
                                      [elem_bytes(F._elem(v)) for v in g.cached], opts.block,
                                      outputs_only=bool(g.full_outputs) and not reads_full)


def _cached_inputs(g: NormGroup, materialized: set, args: set) -> list[SSAValue]:
    """Full-size tensors the group reads element for element at the row: what the registers or
    shared memory hold. A tensor qualifies when every route to it crosses only elementwise ops
    and reshapes (neither moves an element in row-major order) and its trailing dims are the
    row's columns, e.g. an 8x1024x50257 input read through a reshape to 8192x50257 rows. The
    result of an index-map op (a slice, pad, cat or flip, computed where it is read) reached so
    qualifies as such a tensor itself: its copy evaluates it (logits[:, :-1] of a loss).
    Only what the reductions read is kept: a tensor that only the full-size outputs read is read
    once, after the last reduction, straight from global memory (a loss gradient's logits, when
    the sum it needs is of the labels alone), and holding it would only cost occupancy."""
    col_shape = tuple(g.in_shape[g.k:])
    rows = math.prod(g.in_shape[:g.k])
    results = g.results
    todo = [(op.input, True) for op in g.ops]
    seen: set = set()
    at_row: set[SSAValue] = set()
    moved: set[SSAValue] = set()   # also reached through a broadcast or permute
    while todo:
        x, straight = todo.pop()
        if (x, straight) in seen or x in results:
            continue
        seen.add((x, straight))
        if x in materialized or x in args or (straight and isinstance(x.owner, F.INDEX_MAP_OPS)):
            (at_row if straight else moved).add(x)
            continue
        keeps = isinstance(x.owner, (F.ReshapeOp, *F.POINTWISE_OPS))
        todo.extend((o, straight and keeps) for o in x.owner.operands)

    def row_shaped(v: SSAValue) -> bool:
        shape = tuple(shape_of(v))
        kv = len(shape) - len(col_shape)
        return kv >= 0 and shape[kv:] == col_shape and math.prod(shape[:kv]) == rows

    return by_name(v for v in at_row - moved if row_shaped(v))
