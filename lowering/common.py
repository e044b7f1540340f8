"""What every part of convert-fusion-to-sched shares: the error it reports, the kernel task the
planner hands to the emitters, sizes of fusion values, and queries over the fusion value graph.

This module is the bottom of the lowering's imports: it builds no IR and imports no other part
of convert-fusion-to-sched. Above it, in order: the heuristics (`lowering/heuristics/`), the
`Evaluator` (`lowering/emitters/evaluator.py`), the planner (`lowering/analysis/planner.py`), the emitters
(`lowering/{pointwise,reduction,normalization,matmul}.py`) and the pass
(`lowering/conversion/fusion_to_sched.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.ir import BlockArgument, SSAValue

from fuser.dialects import fusion as F
from fuser.dialects import sched

SHAPE_OPS = F.SHAPE_OPS
REDUCTION_OPS = (F.ReduceOp, F.WelfordOp, F.VarMeanOp)


class ScheduleError(Exception):
    """A fusion no scheduler accepts; the message names the op and the reason."""

    def __init__(self, message: str, op=None):
        super().__init__(message)
        self.op = op  # reported with its source location


@dataclass
class Task:
    """One kernel to emit (a reduction may emit two)."""

    kind: str                     # "pointwise" | "reduction" | "normalization" | "matmul" | "scan" | "segment" |
    #                               "fixed" (a fusion.segment already in the IR)
    order: int
    level: int
    op: object = None             # the reduction, scan, matmul or segment_set op
    outputs: list[SSAValue] = field(default_factory=list)  # values this kernel writes
    group: object = None          # a normalization task's NormGroup
    siblings: list = field(default_factory=list)  # a matmul task's other matmuls sharing A
    store_results: set | None = None  # a matmul task's results that are written (None: all)
    narrowed: frozenset = frozenset()  # a matmul task's narrowed products (planner.narrowed_product)
    merges: list[str] = field(default_factory=list)  # the segmenter's merges that formed it, in order


def matmul_results(t: Task) -> set[SSAValue]:
    """What the kernel of matmul task `t` holds in registers after its main loop: the products of
    its matmuls and their narrowed products (found once, when the task is made)."""
    return {op.result for op in [t.op] + t.siblings} | t.narrowed


# ------------------------------------------------------------------ sizes


def by_name(values) -> list[SSAValue]:
    """`values` sorted by name, unnamed ones (and equal names) in program order. A kernel's
    parameters come in this order, so it must not depend on a set's iteration order (which
    follows object addresses, and differs from run to run)."""
    return sorted(values, key=lambda v: (str(v.name_hint), definition_order(v)))


def definition_order(v: SSAValue) -> tuple[int, ...]:
    """Where `v` is defined, as indices from the outermost op down (ops, regions, blocks): a
    total order over the values of one module."""
    if isinstance(v, BlockArgument):
        block, path = v.owner, [v.index, -1]
    else:
        block = v.owner.parent
        path = [v.index, block.get_operation_index(v.owner) if block is not None else -1]
    while block is not None and block.parent is not None:
        region = block.parent
        path.append(list(region.blocks).index(block))
        op = region.parent
        if op is None:
            break
        path.append(op.regions.index(region))
        block = op.parent
        path.append(block.get_operation_index(op) if block is not None else -1)
    return tuple(reversed(path))


def shape_of(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def elem_bytes(t) -> int:
    return sched.element_bytes(t)


def nbytes(v: SSAValue) -> int:
    """Bytes of the tensor `v`."""
    return math.prod(shape_of(v)) * elem_bytes(F._elem(v))


def next_pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def vector_lanes(last_extent: int, max_bytes: int, limit: int = 0) -> int:
    """Widest power-of-two lane count with 16-byte accesses that divides the last extent."""
    lanes = max(1, 16 // max_bytes)
    if limit:
        lanes = min(lanes, limit)
    while lanes > 1 and last_extent % lanes:
        lanes //= 2
    return lanes


# ------------------------------------------------------------------ value-graph queries


def leaves(v: SSAValue, materialized: set[SSAValue], args: set[SSAValue], seen=None) -> set[SSAValue]:
    """Materialized values and arguments that computing `v` in registers reads. (Iterative: a
    fusion may chain thousands of ops.)"""
    seen = set() if seen is None else seen
    out: set[SSAValue] = set()
    todo = [v]
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in materialized or x in args:
            out.add(x)
        else:
            todo.extend(x.owner.operands)
    return out


def reaches(v: SSAValue, targets: set[SSAValue], materialized: set, args: set) -> bool:
    """True if computing `v` reads one of `targets` (which stop the walk like materialized values)."""
    return bool(leaves(v, materialized | targets, args) & targets)


def pointwise_path_only(v: SSAValue, targets: set[SSAValue], materialized, args) -> bool:
    """True if every route from `v` to `targets` crosses only elementwise ops (same index)."""
    stop = materialized | targets
    todo, seen = [v], set()
    while todo:
        x = todo.pop()
        if x in seen or x in targets or x in materialized or x in args:
            continue
        seen.add(x)
        op = x.owner
        if not any(t in leaves(o, stop, args) for o in op.operands for t in targets):
            continue
        if isinstance(op, SHAPE_OPS) or not isinstance(op, F.POINTWISE_OPS):
            return False
        todo.extend(op.operands)
    return True


def refuse_unfolded_empty(ops) -> None:
    """A tensor with a zero extent has nothing to compute, and a kernel over it would launch an
    empty grid: fusion-fold-empty (in the default pipelines) leaves none but the `fusion.full`s
    a function returns, which no kernel writes; any other op of `ops` reading or making one is
    refused, naming the value."""
    from xdsl.dialects.builtin import TensorType

    for op in ops:
        if isinstance(op, F.FullOp) or op.name in ("func.return", "func.func"):
            continue
        for v in list(op.operands) + list(op.results):
            if isinstance(v.type, TensorType) and 0 in v.type.get_shape():
                name = f"%{v.name_hint}" if v.name_hint else "a value"
                raise ScheduleError(f"{name} is {v.type}, a tensor with no elements, read or made by '{op.name}': run "
                                    "fusion-fold-empty first (the default pipelines do), which folds such values "
                                    "away", op)


def is_welford(op) -> bool:
    """A Welford-state reduction (fusion.welford / fusion.var_mean), not a fusion.reduce."""
    return not isinstance(op, F.ReduceOp)
