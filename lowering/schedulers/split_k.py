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

from fuser.lowering.schedulers.matmul import BK, SPLIT_WIDE_MIN_K, matmul_params

MIN_SLICES_PER_SPLIT = 8    # each split streams at least this many K-slices through its pipeline
MIN_K_SLICES = 64           # below this (K < 4096) the second kernel costs about what the split saves


class ForcedSplitError(ValueError):
    """A forced factor the K axis is too short for; the message says what K it needs."""


@dataclass(frozen=True)
class SplitDecision:
    splits: int               # S; 1 = kept
    k_chunk: int | None       # K elements per split (a multiple of BK); None when kept
    reason: str               # what goes into fuser.split_k


def chunking(k: int, target: int) -> tuple[int, int]:
    """(k_chunk, S) for about `target` splits of K: whole 64-element slices per split."""
    slices = math.ceil(k / BK)
    per = math.ceil(slices / max(1, target))
    kc = per * BK
    return kc, math.ceil(k / kc)


def auto_decision(m: int, n: int, k: int, elem_bytes: int = 2, sms: int = 132) -> SplitDecision:
    """The heuristic: split when the output tiles leave more than half of the SMs idle and K is long."""
    p = matmul_params(m, n, k, elem_bytes, sms)
    tiles = math.ceil(m / p.bm) * math.ceil(n / p.bn)
    what = f"{tiles} tile{'s' if tiles != 1 else ''} of {p.bm}x{p.bn}"
    if tiles >= sms:
        return SplitDecision(1, None, f"kept ({what} fill {sms} SMs)")
    if 2 * tiles > sms:
        return SplitDecision(1, None, f"kept ({what} fill more than half of {sms} SMs)")
    slices = math.ceil(k / BK)
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
    t = math.ceil(m / q.bm) * math.ceil(n / q.bn)
    return SplitDecision(s, kc, f"split {s} ways, k_chunk={kc} ({t} tile{'s' if t != 1 else ''} of "
                                f"{q.bm}x{q.bn} on {sms} SMs, K={k})")


def forced_decision(m: int, n: int, k: int, factor: int) -> SplitDecision:
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
    return SplitDecision(s, kc, f"split {s} ways, k_chunk={kc} (factor={factor}{note}, K={k})")
