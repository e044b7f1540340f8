"""The sort scheduler's heuristics (pure: they build no IR); lowering/emitters/sort.py emits the
kernel they describe.

A row is sorted by `bx` threads (`by` rows per block) in shared memory, by a bitonic network over
`net` (a power of two) slots of (ordering key of the element's width, i32 position) pairs:

- "network": the whole row is the network's input (padded to `net` slots that sort last); the
  row must fit in shared memory: `net * (element bytes + 4)` at most SORT_SMEM_BYTES, so f32 and
  i32 rows of up to 16384 elements, bf16, f16 and i16 rows of up to 32768, i8, u8 and bool rows
  of up to 32768, f64 and i64 rows of up to 16384. Longer rows are refused (`SortRowTooLong`),
  naming the limit: there is no multi-pass merge yet.
- "select" (topk with k <= SORT_SELECT_MAX_K): each thread walks its share of the row (columns
  t, t + bx, ...) keeping its first k in registers (an insertion network), and only the `bx * k`
  candidates go through the network; any row length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fuser.lowering.common import ScheduleError, next_pow2

SORT_SMEM_BYTES = 200 * 1024
"""The most shared memory one block's networks take (the H100 gives a block up to 227 KB)."""
SORT_SELECT_MAX_K = 16
"""The largest k a thread keeps in registers (topk's select mode)."""
SORT_MAX_BX = 512
"""The most threads that sort one row when rows fill the GPU (more blocks stay resident)."""
SORT_FEW_ROWS = 32
SORT_FEW_ROWS_MAX_BX = 1024
"""With at most SORT_FEW_ROWS rows most SMs idle and a row's sort is the kernel's time: up to
1024 threads sort it (an embedding gradient's one line of 8192 token ids)."""
SORT_BLOCK_THREADS = 256
"""Threads per block when short rows share one."""
SELECT_ELEMS_PER_CANDIDATE = 8
"""A select thread walks about this many elements per candidate it keeps."""


class SortRowTooLong(ScheduleError):
    """A row that the sort kernel cannot hold in shared memory."""


@dataclass(frozen=True)
class SortParams:
    mode: str       # "network" | "select"
    n: int          # the row's length
    k: int          # the elements of each sorted row that are results
    net: int        # slots of the bitonic network (a power of two)
    bx: int         # threads per row (a multiple of 32)
    by: int         # rows per block
    key_bytes: int  # bytes of an element's bits in shared memory

    @property
    def smem(self) -> int:
        return self.by * self.net * (self.key_bytes + 4)

    @property
    def stages(self) -> int:
        lg = int(math.log2(self.net))
        return lg * (lg + 1) // 2

    def describe(self, rows: int) -> str:
        what = (f"each of {self.bx} threads keeps its first {self.k} in registers, {self.bx * self.k} candidates "
                f"in a bitonic network of {self.net}" if self.mode == "select"
                else f"a bitonic network of {self.net} in shared memory")
        return (f"sort of {rows} rows of {self.n}, first {self.k} kept: {self.bx} threads per row, {self.by} rows "
                f"per block, {what} ({self.stages} stages, {self.smem} bytes of shared memory)")


def sort_params(rows: int, n: int, k: int, key_bytes: int, block: int = 0, what: str = "fusion.sort") -> SortParams:
    """The sort kernel's geometry for `rows` rows of `n` elements of `key_bytes` bytes of which
    the first `k` of each sorted row are kept; `block` (> 0) forces the threads per row, rounded
    up to a warp."""
    forced = min(1024, 32 * math.ceil(block / 32)) if block else 0
    if k <= SORT_SELECT_MAX_K and k > 0:
        bx = forced or min(SORT_BLOCK_THREADS, max(32, next_pow2(math.ceil(n / (SELECT_ELEMS_PER_CANDIDATE * k)))))
        net = next_pow2(bx * k)
        whole_fits = next_pow2(max(n, 2)) * (key_bytes + 4) <= SORT_SMEM_BYTES
        if 2 * net <= next_pow2(n) or not whole_fits:
            return SortParams("select", n, k, net, bx, 1, key_bytes)
    net = next_pow2(max(n, 2))
    if net * (key_bytes + 4) > SORT_SMEM_BYTES:
        longest = 1 << int(math.log2(SORT_SMEM_BYTES // (key_bytes + 4)))
        raise SortRowTooLong(
            f"'{what}' rows of {n} elements of {key_bytes} byte(s) do not fit the sort kernel: it sorts a row in "
            f"shared memory, at most {longest} such elements ({SORT_SMEM_BYTES // 1024} KB with their i32 "
            f"positions); topk with k <= {SORT_SELECT_MAX_K} takes rows of any length")
    bx = forced or min(SORT_FEW_ROWS_MAX_BX if rows <= SORT_FEW_ROWS else SORT_MAX_BX, max(32, net // 2))
    by = max(1, min(SORT_BLOCK_THREADS // bx, next_pow2(rows), SORT_SMEM_BYTES // (net * (key_bytes + 4))))
    return SortParams("network", n, k, net, bx, by, key_bytes)
