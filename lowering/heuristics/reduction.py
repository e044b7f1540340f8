"""The reduction schedulers' heuristics (pure: they build no IR); lowering/emitters/reduction.py emits
the kernels they describe.

- inner reduction (trailing dims): `bx` threads per row, `by` rows per block; few long rows
  split into chunks whose partial states a second kernel folds.
- outer reduction (leading dims): each thread owns a vector of columns and walks rows; tall
  inputs split rows across blocks.
- joint row and column reduction (one input, reduced over its leading dims by one op and its
  trailing dims by another): the outer layout, with a warp's 32 column vectors also folding
  each row they read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fuser.lowering.common import next_pow2


@dataclass(frozen=True)
class ReductionView:
    """How a reduction reads its input: as `shape` (the input permuted by `perm`, None when the
    input is read as it is), with the reduced dims after the first `k` (inner) or the first `k`
    (outer)."""

    inner: bool
    k: int
    shape: tuple[int, ...]
    perm: tuple[int, ...] | None = None

    def describe(self) -> str:
        """The kernel's `fuser.schedule` for a permuted view ("" for a plain one, whose kernels
        carry none)."""
        if self.perm is None:
            return ""
        rows, cols = math.prod(self.shape[:self.k]), math.prod(self.shape[self.k:])
        if self.inner:
            return f"inner reduction of a view permuted by {list(self.perm)}: {rows} rows of {cols}"
        return f"outer reduction of a view permuted by {list(self.perm)}: {rows} rows into {cols} columns"


def reduction_view(shape: Sequence[int], dims: Sequence[int]) -> ReductionView:
    """Any set of reduced dims. Trailing dims: the inner scheduler; leading dims: the outer one.
    Any other set is read through a permutation that keeps the kept dims in order: when the last
    (contiguous) dim is reduced, kept + reduced for the inner scheduler, whose threads then walk
    the contiguous dim; otherwise reduced + kept for the outer scheduler, whose threads own
    contiguous columns (a middle dim of [A, B, C]: B rows of A*C columns, read along C)."""
    rank = len(shape)
    dims = sorted(dims)
    kept = [d for d in range(rank) if d not in dims]
    if dims == list(range(rank - len(dims), rank)):
        return ReductionView(True, len(kept), tuple(shape))
    if dims == list(range(len(dims))):
        return ReductionView(False, len(dims), tuple(shape))
    inner = rank - 1 in dims
    perm = tuple(kept + dims) if inner else tuple(dims + kept)
    return ReductionView(inner, len(kept) if inner else len(dims), tuple(shape[p] for p in perm), perm)


def inner_reduction_params(rows: int, row_vectors: int, sms: int, block: int = 0) -> tuple[int, int, int]:
    """(bx threads per row, by rows per block, chunks per row)."""
    bx = min(1024, max(32, next_pow2(math.ceil(row_vectors / 4))))
    if block:
        bx = min(bx, block)
    by = max(1, 256 // bx)
    blocks = math.ceil(rows / by)
    chunks = 1
    if blocks < 2 * sms and row_vectors >= bx * 16:
        chunks = min(math.ceil(4 * sms / blocks), row_vectors // (bx * 8))
    return bx, by, max(1, chunks)


def outer_reduction_params(rows: int, col_vectors: int, sms: int) -> tuple[int, int, int]:
    """(bx threads over column vectors, by threads over rows, row chunks).

    Few rows (split-K's S partial products): no thread row is left without a row; its threads go
    to the columns. Rows too few to split into chunks but blocks too few to fill the machine: up
    to 32 thread rows of at least 8 rows each, over column runs of at least 8 vectors (128 bytes).
    """
    bx = min(32, next_pow2(col_vectors))
    by = max(1, 256 // bx) if bx < 32 else 8
    while by > 1 and by // 2 >= rows:
        by //= 2
        bx = min(2 * bx, next_pow2(col_vectors), 256)
    blocks_x = math.ceil(col_vectors / bx)
    chunks = 1
    # From two blocks per SM on, a row split's second (merge) kernel costs more than the balance
    # it buys (H100, mid_sum bf16 with 512 blocks: 84% of copy split in 2, 88% in one kernel).
    if blocks_x < 2 * sms:
        chunks = max(1, min(math.ceil(4 * sms / blocks_x), rows // (by * 16)))
    while chunks == 1 and blocks_x < 2 * sms and bx > 8 and by < 32 and rows >= 16 * by:
        bx, by = bx // 2, 2 * by
        blocks_x = math.ceil(col_vectors / bx)
    return bx, by, chunks


JOINT_BX = 32   # threads over column vectors in the joint kernel: one warp per row it reads
JOINT_ROWS = 4096        # rows per block whose partials wait in shared memory (16 KB)
JOINT_MAX_ROWS = 49152   # ... and the most a block may hold when a split is forced (192 KB)


def joint_reduction_params(rows: int, col_vectors: int, sms: int) -> tuple[int, int]:
    """(by threads over rows, row chunks) for the joint row and column kernel, whose blocks are
    JOINT_BX threads wide so that a warp's shuffles fold one row. Rows split into chunks as the
    outer reduction's do: while the column blocks are fewer than two per SM, and so that a block
    has at most JOINT_ROWS rows, whose partials it keeps in shared memory until its rows are done."""
    by = 8
    while by > 1 and by // 2 >= rows:
        by //= 2
    blocks_x = math.ceil(col_vectors / JOINT_BX)
    chunks = 1
    if blocks_x < 2 * sms:
        chunks = max(1, min(math.ceil(4 * sms / blocks_x), rows // (by * 16)))
    return by, max(chunks, math.ceil(rows / JOINT_ROWS))
