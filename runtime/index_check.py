"""The out-of-range index report (`FUSER_CHECK_INDICES=1`, issue 32).

`fusion.gather`, `fusion.index_select` and `fusion.scatter` give every index a defined result:
below 0 it counts from the end (as torch), and one still outside [0, extent) reads (a scatter:
writes) the nearest end. That keeps a
kernel from faulting, but hides a wrong label or token id. With FUSER_CHECK_INDICES=1 (also
"true", "on", "yes") every call first checks each index *input* of such an op (an argument of the
fusion, read directly or through reshapes, broadcasts and permutes) and raises IndexError naming
the op, the argument and the first bad value, before anything runs: the GPU path
(`CompiledFusion.__call__`), the reference interpreter (`CompiledFusion.reference`) and the PyTorch
backend's regions. It costs a min and a max of each index tensor (a host synchronization on the
GPU), so it is off by default. Indices a fusion computes itself are not checked
(`IndexCheck.argument` is None for them; `unchecked(...)` lists them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

from xdsl.ir import BlockArgument, SSAValue

from fuser.dialects import fusion as F

__all__ = ["IndexCheck", "enabled", "index_checks", "check_indices", "unchecked"]

# Ops that relabel an index tensor's elements without changing their values.
_RELABELLING = (F.ReshapeOp, F.BroadcastOp, F.PermuteOp)


@dataclass(frozen=True)
class IndexCheck:
    op: str                 # "fusion.gather" / "fusion.index_select"
    dim: int
    extent: int             # the indexed dim's extent: valid indices are [-extent, extent)
    argument: int | None    # the fusion argument holding the indices (None: computed in the fusion)
    name: str               # that argument's name (or the computed value's)


def enabled() -> bool:
    return os.environ.get("FUSER_CHECK_INDICES", "").strip().lower() in ("1", "true", "on", "yes")


def _source(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, _RELABELLING):
        v = v.owner.input
    return v


def index_checks(func: Any) -> list[IndexCheck]:
    """One check per indexed read of the fusion function `func` (a func.func of fusion ops)."""
    args = list(func.body.block.args)
    checks = []
    for op in func.body.walk():
        if not isinstance(op, (*F.INDEXED_OPS, F.ScatterAddAtomicOp)):
            continue
        src = _source(op.index)
        at = args.index(src) if isinstance(src, BlockArgument) and src in args else None
        name = src.name_hint or (f"arg{at}" if at is not None else "a computed value")
        checks.append(IndexCheck(op.name, op.dim.data, op.input.type.get_shape()[op.dim.data], at, name))
    return checks


def unchecked(checks: Sequence[IndexCheck]) -> list[IndexCheck]:
    return [c for c in checks if c.argument is None]


def _min_max(x: Any) -> tuple[int, int] | None:
    """The least and greatest value of an index array (None when it is empty)."""
    if hasattr(x, "aminmax") and hasattr(x, "numel"):  # a torch tensor, on any device
        if x.numel() == 0:
            return None
        lo, hi = x.aminmax()
        return int(lo.item()), int(hi.item())
    import numpy as np

    if not isinstance(x, np.ndarray):  # fuser's DeviceArray (.numpy()) or cupy's (.get()) copied to the host
        x = x.numpy() if hasattr(x, "numpy") else x.get() if hasattr(x, "get") else x
    a = np.asarray(x)
    return None if a.size == 0 else (int(a.min()), int(a.max()))


def check_indices(checks: Sequence[IndexCheck], arrays: Sequence[Any], fusion: str) -> None:
    """Raise IndexError for the first index input holding a value outside [-extent, extent)."""
    for c in checks:
        if c.argument is None or c.argument >= len(arrays):
            continue
        got = _min_max(arrays[c.argument])
        if got is None:
            continue
        for value in got:
            if not -c.extent <= value < c.extent:
                raise IndexError(f"@{fusion}: {c.op} along dim {c.dim} (extent {c.extent}) reads index input "
                                 f"#{c.argument} ('{c.name}') holding {value}, outside [{-c.extent}, {c.extent}) "
                                 f"(FUSER_CHECK_INDICES=1; unchecked, it would {'write' if c.op.startswith('fusion.scatter') else 'read'} "
                                 "the nearest end)")
