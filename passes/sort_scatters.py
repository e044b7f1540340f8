"""fusion-sort-scatters: give each long `fusion.scatter` its sorted form (issue 32).

An unsorted scatter is computed where its result is read: each result element reads the whole
index line along `dim` and keeps the positions that land on it, in order. That is right and
cheap for a short line (the one-hot of a loss's gradient: one position), but an embedding
gradient's line holds every token. For a line longer than `SORT_ABOVE` positions this pass
makes, before it, a stable ascending `fusion.sort` of the line's normalized indices (below 0
counted from the end, outside [0, extent) moved to the nearest end, as the op defines them),
as i32 where the extent allows, moved so that `dim` is innermost and cut into chunks of at most
`fusion.SCATTER_CHUNK` (the sort kernel's longest row; the last chunk padded with the extent,
which no element's position equals), and gives the scatter the sorted indices and their
positions (`order`). Each result element then finds its positions by a binary search per chunk
and reads them in index order: the same result, with no atomics and no dependence on timing (the sort is stable). An index line
shared along other dims (index_add's) is sorted once. Idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, i32, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import fusion as F

SORT_ABOVE = 16
"""Index lines of at most this many positions are read whole by each element (no sort)."""


def chunks(n: int) -> tuple[int, int]:
    """(K, C): the fewest chunks of at most SCATTER_CHUNK positions covering `n`, of equal length."""
    k = max(1, -(-n // F.SCATTER_CHUNK))
    return k, -(-n // k)


@dataclass(frozen=True)
class SortScatters(ModulePass):
    """Sort the index lines of every long fusion.scatter of a function's body, and of the body
    of a hand-written `fusion.segment` that names no scheduler (fusion-segment splits such a
    segment into the segments its ops need: the sort becomes one). One inside a segment that
    names its scheduler is left unsorted (still right, each element reads the whole line): a
    sort there would be a second task, which that scheduler refuses."""

    name = "fusion-sort-scatters"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            if not fn.body.blocks:
                continue
            blocks = [fn.body.block] + [s.body.block for s in fn.body.block.ops
                                        if isinstance(s, F.SegmentOp) and s.scheduler_name is None]
            for block in blocks:
                for sc in [o for o in block.ops if isinstance(o, F.ScatterOp)]:
                    if not sc.is_sorted and F._dims(sc.src.type)[sc.dim.data] > SORT_ABOVE:
                        sort_scatter(sc)


def sort_scatter(op: F.ScatterOp) -> F.ScatterOp:
    """Replace unsorted `op` by its sorted form, with the ops making its sorted index before it."""
    block: Block = op.parent_block()
    made: list[Operation] = []

    def emit(new: Operation) -> SSAValue:
        made.append(new)
        return new.results[0]

    d = op.dim.data
    extent = F._dims(op.input.type)[d]
    it = op.index.type
    ity, shape = it.element_type, list(F._dims(it))
    full = lambda v: emit(F.FullOp(v, shape, ity))  # noqa: E731
    i = op.index
    i = emit(F.WhereOp(emit(F.CmpOp("lt", i, full(0))), emit(F.AddOp(i, full(extent))), i))
    i = emit(F.MinOp(emit(F.MaxOp(i, full(0))), full(max(extent - 1, 0))))
    if ity == i64 and extent < 2 ** 31:  # positions in [0, extent] fit 32 bits: half the sort's keys
        ity = i32                                # and of the searches' loads
        i = emit(F.CastOp(i, i32))
    rank = len(shape)
    if d != rank - 1:
        perm = [k for k in range(rank) if k != d] + [d]
        i = emit(F.PermuteOp.create(operands=[i], result_types=[F.tensor([shape[p] for p in perm], ity)],
                                    properties={"perm": F._i64_array(perm)}))
    lines, n = [m for k, m in enumerate(shape) if k != d], shape[d]
    k, c = chunks(n)
    if k * c > n:
        i = emit(F.PadOp(i, emit(F.FullOp(extent, [], ity)), [0] * rank, [0] * (rank - 1) + [k * c - n]))
    i = emit(F.ReshapeOp.create(operands=[i], result_types=[F.tensor(lines + [k, c], ity)]))
    srt = F.SortOp(i)
    made.append(srt)
    new = F.ScatterOp(op.input, srt.values, op.src, d, add=op.is_add, order=srt.indices)
    made.append(new)
    for m in made:
        block.insert_op_before(m, op)
    new.attributes.update(op.attributes)
    op.result.replace_all_uses_with(new.result)
    block.erase_op(op)
    return new
