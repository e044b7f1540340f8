"""The reduction schedulers' heuristics (pure: they build no IR); lowering/reduction.py emits
the kernels they describe.

- inner reduction (trailing dims): `bx` threads per row, `by` rows per block; few long rows
  split into chunks whose partial states a second kernel folds.
- outer reduction (leading dims): each thread owns a vector of columns and walks rows; tall
  inputs split rows across blocks.
"""

from __future__ import annotations

import math

from fuser.lowering.common import next_pow2


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
    if blocks_x < 4 * sms:
        chunks = max(1, min(math.ceil(4 * sms / blocks_x), rows // (by * 16)))
    while chunks == 1 and blocks_x < 4 * sms and bx > 8 and by < 32 and rows >= 16 * by:
        bx, by = bx // 2, 2 * by
        blocks_x = math.ceil(col_vectors / bx)
    return bx, by, chunks
