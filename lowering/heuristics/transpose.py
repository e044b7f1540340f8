"""The transpose scheduler's heuristic (pure: it builds no IR); lowering/emitters/transpose.py emits the
kernel it describes.

A pointwise kernel reading a tensor through a `fusion.permute` that moves the input's last
(contiguous) dim can coalesce either its reads or its writes, not both. The transpose kernel
stages square tiles through shared memory: a block reads a tile along the input's contiguous
dim, and writes it along the output's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

TILE = 32            # a tile is TILE x TILE elements: one warp's row of 32 along either dim
ROWS_PER_PASS = 8    # 32 x 8 threads: each thread moves TILE / 8 elements per tile
MIN_EXTENT = 16      # below this along either dim a tile is mostly empty: the pointwise kernel is as good


@dataclass(frozen=True)
class TransposeParams:
    shape: tuple[int, ...]   # the output shape
    q: int                   # the output dim that the permuted inputs' contiguous dim becomes
    lanes: int = 1           # elements a thread moves side by side (2 for 2-byte types: 128-byte warp rows)
    rows: int = ROWS_PER_PASS

    @property
    def tile(self) -> int:
        return TILE * self.lanes

    @property
    def last(self) -> int:
        return len(self.shape) - 1

    @property
    def batch_dims(self) -> list[int]:
        return [d for d in range(len(self.shape)) if d not in (self.q, self.last)]

    @property
    def grid_shape(self) -> list[int]:
        """Blocks: one per tile of (dim q x the last dim), for each index of the other dims."""
        s = self.shape
        return [s[d] for d in self.batch_dims] + [math.ceil(s[self.q] / self.tile), math.ceil(s[self.last] / self.tile)]

    def describe(self) -> str:
        pairs = f", {self.lanes}-element vectors" if self.lanes > 1 else ""
        return (f"transpose: {self.tile}x{self.tile} tiles through shared memory (output dims {self.q} and "
                f"{self.last}), {TILE}x{self.rows} threads{pairs}, {math.prod(self.grid_shape)} blocks")


def transpose_params(shape: Sequence[int], moved: Sequence[Sequence[int]], elem_bytes: int = 4
                     ) -> TransposeParams | None:
    """The tiling for outputs of `shape` that read values through permutes `moved` (each moving
    its input's last dim), or None when the pointwise kernel should run: the permutes disagree
    on where the contiguous dim goes, or either tiled extent is too short to matter.
    `elem_bytes` is the widest element the kernel moves: with 2-byte elements a warp's row of 32
    would be 64 bytes, so each thread moves 2 side by side (a 64x64 tile) where both tiled
    extents are even (a pair never straddles the edge)."""
    if not moved or len(shape) < 2:
        return None
    last = len(shape) - 1
    qs = {list(perm).index(last) for perm in moved}
    if len(qs) != 1:
        return None
    q = qs.pop()
    if shape[q] < MIN_EXTENT or shape[last] < MIN_EXTENT:
        return None
    lanes = 2 if elem_bytes <= 2 and shape[q] % 2 == 0 and shape[last] % 2 == 0 else 1
    return TransposeParams(tuple(shape), q, lanes)
