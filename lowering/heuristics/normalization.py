"""The normalization (persistent) scheduler's heuristic (pure: it builds no IR).

`normalization_params` only answers: does a normalization group keep its rows on chip, and with
what geometry? It never changes the IR, so `fusion-translate-welford{mode=auto}` can ask it about
a translated copy. When the row does not fit, the group is not formed and the general plan runs
instead. The planner (lowering/analysis/planner.py) forms the groups; lowering/emitters/normalization.py emits them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fuser.dialects.sched import HOPPER_SMEM_PER_BLOCK
from fuser.lowering.common import next_pow2

TARGET_VECTORS_PER_THREAD = 4
ROW_THREADS_MAX = 1024
REGISTER_FILE = 65536          # 32-bit registers per SM on Hopper
CACHE_REGISTER_CAP = 64        # at most this many registers of a thread hold the cached row
REDUCE_SCRATCH_BYTES = 1024    # the block reductions' scratch: 32 warps x a state of <= 4 words, which
#                                sched-alias-smem lets successive reductions share
SHARED_CACHE_BYTES = HOPPER_SMEM_PER_BLOCK - REDUCE_SCRATCH_BYTES  # for the rows themselves
MAX_SLOTS = 64                 # vectors per thread the kernel unrolls over


@dataclass(frozen=True)
class NormParams:
    bx: int          # threads per row
    by: int          # rows per block
    slots: int       # vectors of the row each thread handles
    lanes: int       # elements per vector (16-byte accesses)
    smem: int = 0    # bytes of shared memory holding the rows
    # each stage loops over the row (its cached tensors in `smem` bytes of shared memory, or,
    # with nothing to cache, what it reads from global memory); else the rows stay in registers
    looped: bool = False

    def describe(self) -> str:
        if not self.looped:
            where = "in registers"
        elif self.smem:
            where = f"in {self.smem} bytes of shared memory"
        else:
            where = "looped, nothing cached"
        return (f"persistent: {self.by} row(s)/block, {self.bx} threads/row, "
                f"{self.slots} x {self.lanes}-element vectors/thread {where}")


@dataclass(frozen=True)
class NormDecision:
    params: NormParams | None
    reason: str            # why not, when params is None; the parameters otherwise

    @property
    def persistent(self) -> bool:
        return self.params is not None


def normalization_params(rows: int, cols: int, lanes: int, cached_bytes: list[int], block: int = 0,
                         outputs_only: bool = False) -> NormDecision:
    """Geometry for keeping rows of `cols` elements on chip, or why that is not possible.

    `cached_bytes` lists the element size of each full-size input the reductions read at the
    row. Rows stay in registers when they fit in the register budget; longer rows are copied once
    into shared memory (one row per block, 1024 threads) when that fits; otherwise the caller
    falls back to a non-persistent plan. `outputs_only`: the reductions read no full-size tensor
    (a loss gradient's sum of the labels alone) and full-size outputs read the row once, last.
    `block` caps the threads per row."""
    row_vecs = cols // lanes
    n_cached = max(1, len(cached_bytes))
    cap = min(block or ROW_THREADS_MAX, ROW_THREADS_MAX)
    bx = min(cap, max(32, next_pow2(math.ceil(row_vecs / TARGET_VECTORS_PER_THREAD))))
    slots = math.ceil(row_vecs / bx)
    by = max(1, min(256 // bx, next_pow2(rows)))
    threads = bx * by
    budget = min(CACHE_REGISTER_CAP, REGISTER_FILE // threads // 2)
    need = slots * lanes * n_cached
    if need <= budget:
        p = NormParams(bx, by, slots, lanes)
        return NormDecision(p, p.describe())
    row_bytes = cols * sum(cached_bytes)
    # Too long for registers: one row per block, each stage looping over it, the cached rows
    # copied into shared memory once. With nothing to cache, the stages would read the row from
    # global memory again, which the general plan does with more parallelism, unless only the
    # full-size outputs read it (`outputs_only`).
    if (cached_bytes or outputs_only) and row_bytes <= SHARED_CACHE_BYTES and slots <= MAX_SLOTS:
        p = NormParams(bx, 1, slots, lanes, row_bytes, looped=True)
        return NormDecision(p, p.describe())
    return NormDecision(None, f"a row of {cols} elements from {n_cached} input(s) needs {need} registers/thread "
                              f"at {threads} threads/block (budget {budget}) or {row_bytes} bytes of shared "
                              f"memory (budget {SHARED_CACHE_BYTES})")
