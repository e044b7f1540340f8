"""The scan scheduler's heuristics (pure: they build no IR); lowering/emitters/scan.py emits the
kernel they describe.

A row of the scanned input is scanned by `bx` threads (one warp for short rows, up to a block
of SCAN_MAX_BX for long ones), `by` rows per block. The row is walked in tiles of `bx *
vecs * lanes` elements: each thread scans its `vecs` consecutive vectors of `lanes` elements in
registers, the chunk totals are scanned across the warp by shuffles and across the warps through
shared memory, and the row's running total (the carry) goes on to the next tile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fuser.lowering.common import next_pow2

SCAN_ELEMS_PER_THREAD = 8
"""Elements a thread scans in registers per tile (whole vectors of the access width)."""
SCAN_MAX_BX = 512
"""The most threads that scan one row."""
SCAN_BLOCK_THREADS = 256
"""Threads per block when short rows share one (a warp each)."""


@dataclass(frozen=True)
class ScanParams:
    lanes: int      # elements per vector access
    vecs: int       # vectors each thread scans per tile
    bx: int         # threads per row (a multiple of 32)
    by: int         # rows per block

    @property
    def tile(self) -> int:
        """Elements of a row one pass of the block's threads covers."""
        return self.bx * self.vecs * self.lanes

    def describe(self, rows: int, cols: int) -> str:
        tiles = math.ceil(cols / self.tile)
        return (f"scan of {rows} rows of {cols}: {self.bx} threads per row, {self.by} rows per block, "
                f"{self.vecs}x{self.lanes} elements per thread per tile, {tiles} tile(s) per row with a carry")


def scan_params(rows: int, cols: int, lanes: int, block: int = 0) -> ScanParams:
    """The scan kernel's geometry for `rows` rows of `cols` elements read `lanes` at a time
    (`lanes` divides `cols`); `block` (> 0) forces the threads per row, rounded up to a warp."""
    vecs = max(1, SCAN_ELEMS_PER_THREAD // lanes)
    threads = math.ceil(cols / (lanes * vecs))
    if block:
        bx = min(1024, 32 * math.ceil(block / 32))
    else:
        bx = min(SCAN_MAX_BX, max(32, next_pow2(threads)))
    by = max(1, min(SCAN_BLOCK_THREADS // bx, next_pow2(rows)))
    return ScanParams(lanes, vecs, bx, by)
