"""The pointwise scheduler's heuristic (pure: it builds no IR). The emitter,
lowering/emitters/pointwise.py, gives each thread one 16-byte vector of the output per iteration of a
grid-stride loop.
"""

from __future__ import annotations

import math


def pointwise_params(total_vectors: int, sms: int, block: int = 0) -> tuple[int, int]:
    """(threads per block, blocks): enough blocks to fill every SM, no more than the work."""
    block = block or 256
    grid = max(1, min(math.ceil(total_vectors / block), sms * 8))
    return block, grid
