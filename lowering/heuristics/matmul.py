"""The Hopper matmul scheduler's heuristic: tile, pipeline depth, grid shape and epilogue stores
for an MxNxK matmul (pure: it builds no IR). fusion-split-k asks it which tile a split will
run; the emitter (lowering/emitters/matmul.py, whose docstring describes the kernel) applies it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from fuser.dialects.sched import HOPPER_SMEM_PER_BLOCK
from fuser.lowering.heuristics.options import MATMUL_STORES

SLOT_ROW_BYTES = 128    # K bytes per operand row of a pipeline slot: one 128-byte swizzle row
BK = 64                 # K elements per pipeline slot for bf16/f16 (bk(1) = 128 for FP8)


def bk(elem_bytes: int) -> int:
    """K elements per pipeline slot (one 128-byte swizzle row) for operands of `elem_bytes`."""
    return SLOT_ROW_BYTES // elem_bytes

SMEM_BUDGET = HOPPER_SMEM_PER_BLOCK
TILES = ((128, 128), (128, 256), (256, 128))
# ping-pong tiles belong to one consumer warpgroup: 64x256 and 128x128 hold 128 f32 accumulators
# per thread (one m64n256 or two m64n128 wgmmas per k16 step); two B operands take 64x128
PINGPONG_TILES = ((64, 256), (128, 128), (64, 128))
# A split-K matmul runs the wide tiles only when each split is at least this long: a wide tile
# needs twice the splits of 128x128 to fill the machine, so twice the f32 partials to write and
# sum. Measured on the H100 (docs/matmul-notes.md, Split-K): at K = 8192 per split the wide
# tile's main loop wins (1024x1024x32768: 672 vs 547 TFLOP/s), at 4096 the partials do
# (512x512x65536: 483 vs 499; 256x4096x16384: 481 vs 507).
SPLIT_WIDE_MIN_K = 8192
# The most pipeline slots worth having. Measured on the H100 (docs/matmul-notes.md, Version 7):
# a 128x128 tile (one CTA per tile, direct or TMA stores) ran 3-6% slower with 7 slots than
# with 6; other tiles fit at most 4 (128x256, 256x128) or were not measured past what fits.
MAX_STAGES = {(128, 128): 6}
DEFAULT_MAX_STAGES = 8


@dataclass(frozen=True)
class MatmulParams:
    bm: int
    bn: int
    stages: int
    group_m: int = 8
    consumers: int = 2  # consumer warpgroups; each owns bm // consumers rows
    persistent: bool = False  # grid = min(SMs, tiles); each CTA loops over tiles (see module doc)
    grid: int = 0  # CTAs launched (tiles when not persistent)
    pingpong: bool = False  # each consumer warpgroup owns whole tiles, alternating (see module doc)
    cluster: int = 1  # CTAs per cluster along M (2: the pair shares and multicasts the B tile)
    # the epilogue's stores (see store_choice): "tma" (staged in shared memory, TMA stores),
    # "rows" (staged, then the threads store whole rows) or "direct" (from the registers)
    store: str = "direct"
    smem_reuse: bool = False  # the staging takes the operand slots' bytes after the main loop (`epilogue_plan`)
    plan: str = ""  # the epilogue plans compared, and the one taken
    serial: bool = False  # serial split-K: the splits add their tiles into a workspace in turn (see module doc)

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def tma_store(self) -> bool:
        return self.store == "tma"

    @property
    def staged(self) -> bool:
        """The epilogue goes through the staging buffers in shared memory."""
        return self.store != "direct"


def stage_bytes(bm: int, bn: int, n_b: int = 1, elem: int = 2) -> int:
    """Bytes of one pipeline slot: a 128-byte row of K per row of A and of each B (whatever `elem`)."""
    return (bm + n_b * bn) * bk(elem) * elem


STAGING_BYTES = 64 * 128  # one TMA-store staging buffer: 64 rows of one 128-byte swizzle row
STAGING_TOTAL = 2 * 2 * STAGING_BYTES  # two consumer warpgroups, double-buffered


def store_choice(store: str, blocker: str = "", rows_blocker: str | None = None, splits: int = 1) -> str:
    """The epilogue's store path: "tma" (staged in shared memory, written by TMA stores), "rows"
    (staged, then each warp stores whole rows of the chunk, 32 consecutive elements a store: for
    outputs whose rows are not a multiple of 16 bytes, which TMA cannot address, such as a
    50257-word LM head's logits) or "direct" (st.global of column pairs from the registers,
    each store touching 8 rows). `store` is "auto" (the heuristic: TMA where the outputs allow
    it, else rows, else direct) or one of the three forced. `blocker` says why the outputs
    cannot take TMA stores, `rows_blocker` why they cannot take the rows path ("" = they can;
    None = as `blocker`); split-K partials take TMA or direct stores only."""
    if store not in MATMUL_STORES:
        raise ValueError(f"matmul_store={store!r}: must be {', '.join(MATMUL_STORES[:-1])} or direct")
    rows_blocker = blocker if rows_blocker is None else rows_blocker
    if splits > 1:
        rows_blocker = rows_blocker or "split-K partials take TMA or direct stores"
    if store == "tma" and blocker:
        raise ValueError(f"matmul_store=tma: {blocker}")
    if store == "rows" and rows_blocker:
        raise ValueError(f"matmul_store=rows: {rows_blocker}")
    if store != "auto":
        return store
    return "tma" if not blocker else "rows" if not rows_blocker else "direct"


def matmul_params(m: int, n: int, k: int, elem_bytes: int = 2, sms: int = 132, n_b: int = 1,
                  tile: tuple[int, int] | None = None, stages: int = 0, persistent: int = -1,
                  pingpong: int = -1, cluster: int = 0, store: str = "auto", store_blocker: str = "",
                  splits: int = 1, reuse: int = -1, serial: bool = False,
                  rows_blocker: str | None = None) -> MatmulParams:
    """Tile and pipeline depth for an MxNxK matmul (`n_b` B operands share the A tile).

    Larger tiles halve the operand traffic per FLOP (128x256 moves 3/4 of 128x128's bytes per
    output), but only pay when there are enough tiles to fill the machine: prefer 128x256 (or
    256x128 when M is the long side) when that still gives at least one wave, else 128x128.
    Two accumulators (horizontal fusion) fit the registers only at 128x128.

    `persistent` (-1 = heuristic, 0 = one CTA per tile, 1 = a persistent grid): with more tiles
    than SMs a persistent grid of `sms` CTAs walks the tiles in the same grouped order, and the
    producer loads the next tile's first K-slices while the consumers run the epilogue; with
    one wave or less the two are the same kernel, so the heuristic keeps one CTA per tile.

    `pingpong` (-1 = heuristic, 0 = cooperative, 1 = ping-pong): the two consumer warpgroups
    take alternate tiles of a persistent grid (the tile is one warpgroup's: 64x256, 128x128, or
    64x128 for two B operands), so one's epilogue runs under the other's MMAs.

    `cluster` (0 = heuristic, 1 = off, 2 = 2-CTA clusters along M; see `cluster_choice`); not
    combined with ping-pong.

    `store` ("auto", "tma", "rows", "direct"; see `store_choice`): with TMA or rows stores the
    staging buffers (`STAGING_TOTAL` bytes) come out of the pipeline's shared-memory budget.

    `splits` > 1 (a split-K matmul, `k` being one split's K): the grid covers tiles x splits work
    items, and the tile is chosen by the same rule with work items in place of tiles (so the
    splits that fill the machine let the wide tiles run).

    `reuse` (-1 = heuristic, 0 = off, 1 = on): whether the TMA-store staging takes the operand
    slots' bytes once the main loop is done (see `epilogue_plan`).

    `serial` (serial split-K, `splits` > 1): every split but the last sends its f32 tile through
    the staging buffers, so they are reserved whatever the outputs' stores; the kernel is
    cooperative, unclustered and, by default, one CTA per work item: split z waits for split
    z - 1 of its tile, which has a lower block index and so was dispatched first, whatever the
    number of SMs. A forced persistent grid also works, but only while all its CTAs are
    resident at once: the kernel is marked `fuser.coresident` and the executor refuses to
    launch it on a GPU that cannot hold the grid (fewer SMs than `sms`), where it would hang.
    """
    store = store_choice(store, store_blocker, rows_blocker, splits)
    staged = store != "direct"
    if reuse not in (-1, 0, 1):
        raise ValueError(f"matmul_smem_reuse={reuse}: must be -1 (heuristic), 0 (off) or 1 (on)")
    if serial:
        for what, forced in (("matmul_pingpong=1", pingpong == 1), ("matmul_cluster=2", cluster == 2),
                             ("matmul_smem_reuse=1", reuse == 1)):
            if forced:
                raise ValueError(f"{what}: not built for serial split-K")
        pingpong, cluster, reuse = 0, 1, 0
        persistent = 0 if persistent < 0 else persistent
    pp = _pingpong_heuristic(m, n, k, n_b, sms, tile) if pingpong < 0 else bool(pingpong)
    if pp:
        if cluster == 2:
            raise ValueError("ping-pong consumers and 2-CTA clusters are not combined; force one of them")
        return _pingpong_params(m, n, k, elem_bytes, sms, n_b, tile, stages, store, splits, reuse)
    if tile is None:
        if n_b > 1:
            tile = (128, 128)
        else:
            tiles = lambda bm, bn: math.ceil(m / bm) * math.ceil(n / bn) * splits  # noqa: E731 (work items)
            # one wave that is ~full (128 tiles on 132 SMs) still beats 128x128's two waves; a
            # split-K matmul takes the wide tile only with long splits (see SPLIT_WIDE_MIN_K)
            wide_ok = splits == 1 or k >= SPLIT_WIDE_MIN_K
            if wide_ok and n >= 256 and tiles(128, 256) >= 0.9 * sms:
                tile = (128, 256)
            elif wide_ok and m >= 256 and tiles(256, 128) >= 0.9 * sms:
                tile = (256, 128)
            else:
                tile = (128, 128)
    bm, bn = tile
    if (bm, bn) not in TILES:
        raise ValueError(f"tile {bm}x{bn} is not one of {', '.join(f'{a}x{b}' for a, b in TILES)}")
    if n_b > 1 and (bm, bn) != (128, 128):
        raise ValueError(f"a horizontally fused matmul needs the 128x128 tile, not {bm}x{bn}")
    n_items = math.ceil(m / bm) * math.ceil(n / bn) * splits
    persist = n_items > sms if persistent < 0 else bool(persistent)
    grid = min(sms, n_items) if persist else n_items
    stages, shared, plan = epilogue_plan(bm, bn, n_b, elem_bytes, k, stages, staged or serial, persist, reuse)
    if serial:
        plan += "; serial split-K stages its f32 tiles"
    cl = cluster_choice(m, n, k, bm, bn, cluster)
    if cl > 1:
        return replace(_cluster_params(m, n, bm, bn, stages, persist, sms, cl, splits), store=store,
                       smem_reuse=shared, plan=plan)
    return MatmulParams(bm, bn, stages, persistent=persist, grid=grid, store=store, smem_reuse=shared, plan=plan,
                        serial=serial)


def epilogue_plan(bm: int, bn: int, n_b: int, elem_bytes: int, k: int, stages: int, staged: bool, persistent: bool,
                  reuse: int) -> tuple[int, bool, str]:
    """(stages, reuse, plan note) of the epilogue's shared memory. Three plans: stores straight
    from the registers (no shared memory); TMA stores from `STAGING_TOTAL` bytes of staging of
    their own; or staging in the operand slots' bytes, free once the last wgmma of the tile has
    completed (sched-alias-smem places it there, behind a barrier of the consumer warpgroups).
    Every plan runs one CTA per SM (384 threads at 40 + 2 x 232 registers take the register
    file), so shared memory buys pipeline depth only: the staging reuses the slots when that
    gives more stages (up to `MAX_STAGES`) than staging of its own, since the reuse costs a
    barrier. With today's tiles it never does: 128x128 has its 6 slots either way, the wide
    tiles their 4 (measured: docs/matmul-notes.md, Version 7); `reuse=1` forces it. A persistent
    kernel cannot reuse: its producer loads the next tile's slices into the slots while the
    consumers run the epilogue. `staged`: the store choice (`store_choice`) goes through the staging."""
    per = stage_bytes(bm, bn, n_b, elem_bytes)
    slices = max(2, math.ceil(k / bk(elem_bytes)))

    def fit(reserve: int) -> int:
        return (SMEM_BUDGET - 1024 - reserve) // per

    def depth(reserve: int) -> int:
        return max(2, min(fit(reserve), MAX_STAGES.get((bm, bn), DEFAULT_MAX_STAGES), slices))
    direct, own = depth(0), depth(STAGING_TOTAL)
    blocker = ("it needs a staged epilogue (TMA or rows stores)" if not staged else
               "persistent: the producer loads the next tile into the slots during the epilogue" if persistent else "")
    if reuse == 1 and blocker:
        raise ValueError(f"matmul_smem_reuse=1: {blocker}")
    forced = stages > 0
    if forced:  # reuse when only the reuse makes room for them
        shared = staged and not blocker and reuse != 0 and (reuse == 1 or stages > fit(STAGING_TOTAL))
    else:
        shared = staged and not blocker and reuse != 0 and (reuse == 1 or direct > own)
        stages = direct if shared or not staged else own
    reserve = STAGING_TOTAL if staged and not shared else 0
    if stages > fit(reserve):
        raise ValueError(f"{stages} stages of {per} bytes" + (f" and {reserve} bytes of epilogue staging" if reserve else "")
                         + f" exceed the {SMEM_BUDGET}-byte shared-memory budget")
    taken = "staged+reuse" if shared else "staged" if staged else "direct"
    why = "" if not staged else blocker or {1: "forced", 0: "off"}.get(reuse, "")
    if forced:
        why = ", ".join(x for x in (why, f"{stages} stages forced") if x)
    plan = (f"direct {direct} stages, staged {own}, staged+reuse {'-' if persistent else direct}: {taken}"
            + (f" ({why})" if why else ""))
    return stages, shared, plan


def _pingpong_heuristic(m: int, n: int, k: int, n_b: int, sms: int, tile) -> bool:
    """Ping-pong where it measured faster than the cooperative kernel (docs/matmul-notes.md)."""
    return False


def _pingpong_params(m, n, k, elem_bytes, sms, n_b, tile, stages, store, splits=1, reuse=-1) -> MatmulParams:
    if tile is None:
        tile = (64, 128) if n_b > 1 else (128, 128)
    bm, bn = tile
    if (bm, bn) not in PINGPONG_TILES:
        raise ValueError(f"ping-pong tile {bm}x{bn} is not one of {', '.join(f'{a}x{b}' for a, b in PINGPONG_TILES)}")
    if n_b > 1 and (bm, bn) != (64, 128):
        raise ValueError(f"a horizontally fused ping-pong matmul needs the 64x128 tile, not {bm}x{bn}")
    stages, _, plan = epilogue_plan(bm, bn, n_b, elem_bytes, k, stages, store != "direct", True, reuse)
    n_items = math.ceil(m / bm) * math.ceil(n / bn) * splits
    return MatmulParams(bm, bn, stages, persistent=True, grid=min(sms, n_items), pingpong=True, store=store,
                        plan=plan)


def cluster_choice(m: int, n: int, k: int, bm: int, bn: int, cluster: int = 0) -> int:
    """2-CTA clusters along M (the two CTAs of a cluster compute vertically adjacent tiles, each
    loads half of their common B tile and multicasts it to both): 1 = off, 2 = on. The
    heuristic (0) keeps them off: on the H100 they did not measure faster (docs/matmul-notes.md)."""
    if cluster not in (0, 1, 2):
        raise ValueError(f"cluster={cluster}: must be 0 (heuristic), 1 (off) or 2 (2-CTA clusters along M)")
    return 1 if cluster == 0 else cluster


def _cluster_params(m: int, n: int, bm: int, bn: int, stages: int, persist: bool, sms: int, cl: int,
                    splits: int = 1) -> MatmulParams:
    """Tile rows are padded to an even count so tiles 2i and 2i+1 of the grouped order are always
    the M-neighbours of one cluster (group_m is even); a persistent grid is even, so CTAs 2c and
    2c+1 walk tiles t and t+1 in lockstep (the same tile count, the same K-slice sequence)."""
    tiles_m = math.ceil(m / bm)
    n_tiles = (tiles_m + tiles_m % cl) * math.ceil(n / bn) * splits  # each split's block of tiles stays even
    grid = max(cl, min(sms, n_tiles) // cl * cl) if persist else n_tiles
    return MatmulParams(bm, bn, stages, persistent=persist, grid=grid, cluster=cl)
