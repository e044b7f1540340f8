"""The split-K heuristic: whether, and how many ways, to split the K axis of an MxNxK matmul
(pure: it builds no IR). fusion-split-k (passes/split_k.py, whose docstring describes the
rewrite and the options) asks it and applies the answer.

A split keeps whole K-slices of `BK` (the matmul scheduler's K-slice: a split never shares a
TMA box with its neighbour), so its k_chunk is a multiple of `BK` and the number of splits is
recomputed from it: S = ceil(K / k_chunk) may be below the number asked for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fuser.lowering.heuristics.matmul import BK, SPLIT_WIDE_MIN_K, matmul_params

MIN_SLICES_PER_SPLIT = 8    # each split streams at least this many K-slices through its pipeline
MIN_K_SLICES = 64           # below this (K < 4096) the second kernel costs about what the split saves


class ForcedSplitError(ValueError):
    """A forced factor the K axis is too short for; the message says what K it needs."""


@dataclass(frozen=True)
class SplitDecision:
    splits: int               # S; 1 = kept
    k_chunk: int | None       # K elements per split (a multiple of BK); None when kept
    reason: str               # what goes into fuser.split_k
    strategy: str = "two-kernel"  # or "serial"


def serial_blocker(n: int) -> str:
    """Why a matmul with N columns cannot take the serial strategy ("" when it can): its splits
    reduce into an f32 [M, N] workspace by TMA, whose rows must be a multiple of 16 bytes."""
    return "" if n % 4 == 0 else f"N={n}: the f32 workspace's rows must be a multiple of 16 bytes (N a multiple of 4)"


# The cost model that compares the strategies (microseconds; fitted to the H100 SXM runs in
# docs/matmul-notes.md, "Serial split-K"). A work item's main loop is bound by its tile's
# tensor-core rate with every SM busy, or by what one CTA's pipeline streams alone; all the
# items together by HBM. Two-kernel adds the partials' round trip through L2 and the second
# launch; serial adds one turn per split after the first, on the critical path of every tile.
SM_FLOP_PER_US = {(128, 128): 4.85e6, (128, 256): 5.2e6, (256, 128): 5.2e6}
SM_BYTES_PER_US = 97e3        # one CTA streaming alone (2 to 8 splits of 128x128x131072: 92-99 GB/s)
HBM_BYTES_PER_US = 2.1e6      # operands streamed by a full wave (two-kernel 512x512x65536, 256x4096x16384)
L2_BYTES_PER_US = 8.0e6       # the two-kernel partials, written then read back
SECOND_KERNEL_US = 1.0        # the sum kernel's launch gap and fixed cost
SERIAL_TURN_US = 2.2          # one turn: wait, reduce a warpgroup's 32 KB in 8 KB chunks, complete, hand over


def estimate_us(strategy: str, m: int, n: int, k: int, bm: int, bn: int, splits: int, k_chunk: int,
                elem_bytes: int = 2, sms: int = 132) -> float:
    """Modelled time of the matmul split `splits` ways (1: unsplit) with `strategy`."""
    items = math.ceil(m / bm) * math.ceil(n / bn) * splits
    per_item = max(2 * bm * bn * k_chunk / SM_FLOP_PER_US[(bm, bn)],
                   (bm + bn) * k_chunk * elem_bytes / SM_BYTES_PER_US)
    t = max(math.ceil(items / sms) * per_item, (m + n) * k * elem_bytes / HBM_BYTES_PER_US)
    if splits > 1 and strategy == "two-kernel":
        t += 2 * splits * m * n * 4 / L2_BYTES_PER_US + SECOND_KERNEL_US
    elif splits > 1:
        t += (splits - 1) * SERIAL_TURN_US
    return t


def chunking(k: int, target: int) -> tuple[int, int]:
    """(k_chunk, S) for about `target` splits of K: whole 64-element slices per split."""
    slices = math.ceil(k / BK)
    per = math.ceil(slices / max(1, target))
    kc = per * BK
    return kc, math.ceil(k / kc)


def auto_decision(m: int, n: int, k: int, elem_bytes: int = 2, sms: int = 132,
                  strategies: tuple[str, ...] = ("two-kernel",)) -> SplitDecision:
    """The heuristic: split when the output tiles leave more than half of the SMs idle and K is
    long. Two-kernel splits fill a wave (`two_kernel_decision`); serial splits take the number of
    splits the cost model finds fastest; with both `strategies` the model picks between them."""
    d = two_kernel_decision(m, n, k, elem_bytes, sms)
    if d.splits == 1 or strategies == ("two-kernel",):
        return d
    p1 = matmul_params(m, n, k, elem_bytes, sms)
    unsplit = estimate_us("two-kernel", m, n, k, p1.bm, p1.bn, 1, k, elem_bytes, sms)
    best = None  # (time, S, k_chunk)
    for target in range(2, d.splits + 1):
        kc, s = chunking(k, target)
        q = matmul_params(m, n, kc, elem_bytes, sms, splits=s, serial=True)
        t = estimate_us("serial", m, n, k, q.bm, q.bn, s, kc, elem_bytes, sms)
        if s > 1 and (best is None or t < best[0]):
            best = (t, s, kc, q)
    q2 = matmul_params(m, n, d.k_chunk, elem_bytes, sms, splits=d.splits)
    two = estimate_us("two-kernel", m, n, k, q2.bm, q2.bn, d.splits, d.k_chunk, elem_bytes, sms)
    model = f"model: serial {best[0]:.0f} us, two-kernel {two:.0f} us, unsplit {unsplit:.0f} us" if best else ""
    if best is None or "two-kernel" in strategies and two <= best[0]:
        return SplitDecision(d.splits, d.k_chunk, d.reason[:-1] + f"; {model})", "two-kernel")
    t, s, kc, q = best
    tiles = math.ceil(m / q.bm) * math.ceil(n / q.bn)
    return SplitDecision(s, kc, f"split {s} ways, k_chunk={kc}, serial ({tiles} tile{'s' if tiles != 1 else ''} of "
                                f"{q.bm}x{q.bn} on {sms} SMs, K={k}; {model})", "serial")


def two_kernel_decision(m: int, n: int, k: int, elem_bytes: int = 2, sms: int = 132) -> SplitDecision:
    """Split when the output tiles leave more than half of the SMs idle and K is long, into
    enough splits to fill about one wave, or half that many where the cost model finds it faster."""
    p = matmul_params(m, n, k, elem_bytes, sms)
    tiles = math.ceil(m / p.bm) * math.ceil(n / p.bn)
    what = f"{tiles} tile{'s' if tiles != 1 else ''} of {p.bm}x{p.bn}"
    slices = math.ceil(k / BK)
    if 2 * tiles > sms:
        d = _fill_last_wave(m, n, k, p, tiles, elem_bytes, sms) if slices >= MIN_K_SLICES else None
        if d is not None:
            return d
        return SplitDecision(1, None, f"kept ({what} fill {sms} SMs)" if tiles >= sms else
                             f"kept ({what} fill more than half of {sms} SMs)")
    if slices < MIN_K_SLICES:
        return SplitDecision(1, None, f"kept (K={k} is {slices} slices of {BK}, fewer than {MIN_K_SLICES}: "
                                      f"the reduction kernel would cost about what splitting saves)")
    # Splits restore the parallelism the wide tiles lacked: take the first tile of the
    # scheduler's order (128x256, 256x128, 128x128) whose tiles x splits make a ~full wave.
    # (the wide tiles only where each split keeps SPLIT_WIDE_MIN_K of K, as the scheduler's rule)
    cands = [(128, 256)] * (n >= 256) + [(256, 128)] * (m >= 256) + [(128, 128)]
    for bm, bn in cands:
        t = math.ceil(m / bm) * math.ceil(n / bn)
        target = min(sms // t, slices // MIN_SLICES_PER_SPLIT)
        wide_ok = (bm, bn) == (128, 128) or target >= 1 and chunking(k, target)[0] >= SPLIT_WIDE_MIN_K
        if target >= 2 and t * target >= 0.9 * sms and wide_ok:
            break
    kc, s = chunking(k, target)
    if s < 2:
        return SplitDecision(1, None, f"kept ({what}, K={k}: too few K-slices to split)")
    q = matmul_params(m, n, kc, elem_bytes, sms, splits=s)  # the tile the scheduler will use
    # Or half as many, twice as long splits where the cost model finds that faster: half the
    # partials' round trip, while half a wave of CTAs still streams the operands (1 tile over
    # K=131072: 64 splits of 32 slices, 3% faster than 128 of 16 on the H100). No further: the
    # model's per-CTA streaming rate does not hold for fewer CTAs (32 splits measured slower).
    kc2, s2 = chunking(k, target // 2)
    if s2 >= 2:
        q2 = matmul_params(m, n, kc2, elem_bytes, sms, splits=s2)
        if (estimate_us("two-kernel", m, n, k, q2.bm, q2.bn, s2, kc2, elem_bytes, sms)
                < estimate_us("two-kernel", m, n, k, q.bm, q.bn, s, kc, elem_bytes, sms)):
            kc, s, q = kc2, s2, q2
    t = math.ceil(m / q.bm) * math.ceil(n / q.bn)
    return SplitDecision(s, kc, f"split {s} ways, k_chunk={kc} ({t} tile{'s' if t != 1 else ''} of "
                                f"{q.bm}x{q.bn} on {sms} SMs, K={k})")


WAVE_FILL_MIN = 0.75    # below this share of the waves' SM slots busy, splitting K is weighed
WAVE_SPLIT_GAIN = 0.85  # ... and taken when the cost model finds it this much faster or more


def _fill_last_wave(m: int, n: int, k: int, p, tiles: int, elem_bytes: int, sms: int) -> SplitDecision | None:
    """A split that evens out the waves when the tiles leave the last one mostly idle (144 tiles
    of 128x128 on 132 SMs run as two waves, the second of 12 tiles: a GPT-2 weight gradient,
    768x3072x8192), if the cost model finds one of 2 to 4 splits faster by WAVE_SPLIT_GAIN."""
    waves = math.ceil(tiles / sms)
    if waves < 2 or tiles / (waves * sms) >= WAVE_FILL_MIN:
        return None  # (one wave more than half full stays unsplit: not measured either way)
    unsplit = estimate_us("two-kernel", m, n, k, p.bm, p.bn, 1, k, elem_bytes, sms)
    best = None  # (time, S, k_chunk, params)
    for target in (2, 3, 4):
        kc, s = chunking(k, target)
        if s < 2 or kc < MIN_SLICES_PER_SPLIT * BK:
            continue
        q = matmul_params(m, n, kc, elem_bytes, sms, splits=s)
        t = estimate_us("two-kernel", m, n, k, q.bm, q.bn, s, kc, elem_bytes, sms)
        if best is None or t < best[0]:
            best = (t, s, kc, q)
    if best is None or best[0] > WAVE_SPLIT_GAIN * unsplit:
        return None
    t, s, kc, q = best
    items = math.ceil(m / q.bm) * math.ceil(n / q.bn) * s
    return SplitDecision(s, kc, f"split {s} ways, k_chunk={kc} ({tiles} tiles of {p.bm}x{p.bn} would leave "
                                f"{waves * sms - tiles} of {waves * sms} SM slots idle in {waves} waves; {items} "
                                f"items of {q.bm}x{q.bn}: model {t:.0f} us against {unsplit:.0f} us, K={k})")


def forced_decision(m: int, n: int, k: int, factor: int, strategy: str = "two-kernel") -> SplitDecision:
    """A split about `factor` ways whatever the heuristic says (factor=1: kept). Only K matters;
    m and n are taken so that both decisions read the same shape. Raises `ForcedSplitError`
    when K has fewer than `factor` slices of BK."""
    if factor == 1:
        return SplitDecision(1, None, "kept (factor=1)")
    if math.ceil(k / BK) < factor:
        raise ForcedSplitError(f"factor={factor} needs K of at least {(factor - 1) * BK + 1} "
                               f"({factor} slices of {BK})")
    kc, s = chunking(k, factor)
    note = "" if s == factor else f"; {s} chunks of whole {BK}-element slices cover K"
    how = ", serial" if strategy == "serial" else ""
    return SplitDecision(s, kc, f"split {s} ways, k_chunk={kc}{how} (factor={factor}{note}, K={k})", strategy)
