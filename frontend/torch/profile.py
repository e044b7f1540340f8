"""Where a compiled step's GPU time goes: fuser's kernels or the ATen ops left to PyTorch.

    from fuser.torch.profile import gpu_time_split
    split = gpu_time_split(lambda: train_step(compiled, batch), steps=3)
    split["fused_share"], split["by_op"][:10]

torch.profiler (CPU and CUDA activities) records `steps` calls after one warm-up call. Every
device event (kernels, memcpy, memset) counts towards the total. A kernel is fuser's when its name
starts with `fuser_` (regions' fusions are named so, and their kernels after them). Every other
device event is charged to the ATen op that launched it: the outermost `aten::` op on the CPU
stack of its launch (the op the graph called, e.g. `aten::mm` or
`aten::_scaled_dot_product_flash_attention`, rather than the kernels' own helper ops), or, when no
ATen op encloses the launch, the innermost CPU event, or "(no CPU op)". Only the profiler's
event tree is used (`FunctionEvent.kernels` and `cpu_parent`), which torch 2.11 and 2.13 share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FUSER_PREFIX = "fuser_"
NO_OP = "(no CPU op)"


def is_fuser_kernel(name: str) -> bool:
    return name.startswith(FUSER_PREFIX)


def _owner(event: Any) -> str:
    """The outermost aten:: op among event and its CPU ancestors, else event's own name."""
    owner, e = None, event
    while e is not None:
        if e.name.startswith("aten::"):
            owner = e.name
        e = e.cpu_parent
    return owner or event.name


def split_events(events: Any, steps: int = 1) -> dict[str, Any]:
    """The split of a profiler's event list (`prof.events()`), per step, in milliseconds."""
    from torch.autograd import DeviceType

    total_us = fuser_us = 0.0
    fuser_kernels = 0
    for e in events:  # the device side: every kernel, copy and fill the device ran
        # (not the spans that record_function annotations such as Optimizer.step get on the GPU)
        if e.device_type == DeviceType.CUDA and not getattr(e, "is_user_annotation", False):
            dur = e.time_range.end - e.time_range.start
            total_us += dur
            if is_fuser_kernel(e.name):
                fuser_us += dur
                fuser_kernels += 1
    by_op: dict[str, float] = {}
    attributed = 0.0
    seen: set[int] = set()
    for e in events:  # the CPU side: each op with the device events it launched
        if e.device_type != DeviceType.CPU or not e.kernels or e.id in seen:
            continue
        seen.add(e.id)  # events sharing a correlation id share their kernels: count them once
        for k in e.kernels:
            if is_fuser_kernel(k.name):
                continue
            owner = _owner(e)
            by_op[owner] = by_op.get(owner, 0.0) + k.duration
            attributed += k.duration
    rest = total_us - fuser_us - attributed
    if rest > 1e-3 * max(total_us, 1.0):  # launched outside any recorded CPU event
        by_op[NO_OP] = by_op.get(NO_OP, 0.0) + rest
    n = max(steps, 1)
    ms = 1e-3 / n
    other_ms = (total_us - fuser_us) * ms
    return {
        "steps": steps,
        "total_ms": total_us * ms,
        "fuser_ms": fuser_us * ms,
        "other_ms": other_ms,
        "fused_share": fuser_us / total_us if total_us > 0 else 0.0,
        "fuser_kernels_per_step": fuser_kernels / n,
        "by_op": sorted(((op, us * ms) for op, us in by_op.items()), key=lambda kv: -kv[1]),
    }


def kernel_times(events: Any, steps: int = 1) -> list[dict[str, Any]]:
    """Every device event of a profiler's event list by name, per step, largest first: dicts of
    name, ms (per step), calls (per step) and op (the ATen op that launched it, as in
    split_events; fuser's kernels have op "fuser")."""
    from torch.autograd import DeviceType

    table: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.device_type != DeviceType.CUDA or getattr(e, "is_user_annotation", False):
            continue
        row = table.setdefault(e.name, {"name": e.name, "ms": 0.0, "calls": 0, "op": None})
        row["ms"] += (e.time_range.end - e.time_range.start) * 1e-3
        row["calls"] += 1
    for e in events:  # the launching op, where the event tree records one
        if e.device_type == DeviceType.CPU and e.kernels:
            for k in e.kernels:
                row = table.get(k.name)
                if row is not None and row["op"] is None:
                    row["op"] = "fuser" if is_fuser_kernel(k.name) else _owner(e)
    n = max(steps, 1)
    for row in table.values():
        row["ms"] /= n
        row["calls"] /= n
    return sorted(table.values(), key=lambda r: -r["ms"])


def gpu_time_split(step_fn: Callable[[], Any], steps: int = 3) -> dict[str, Any]:
    """Profile `step_fn()` (one warm-up call, then `steps` calls) and split its GPU time, per step:
    total_ms, fuser_ms, other_ms, fused_share (fuser_ms / total_ms), fuser_kernels_per_step,
    by_op: [(ATen op, ms)] of the other device time, largest first, and kernels: every kernel's
    time (kernel_times). Needs a CUDA device."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("gpu_time_split profiles CUDA kernels: torch sees no CUDA device "
                           "(torch.cuda.is_available() is False)")
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    from torch.profiler import ProfilerActivity, profile

    step_fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step_fn()
        torch.cuda.synchronize()
    events = prof.events()
    split = split_events(events, steps)
    split["kernels"] = kernel_times(events, steps)
    return split


def format_split(split: dict[str, Any], top: int = 10) -> list[str]:
    """Lines for a report: the fused share, then the `top` ATen ops by GPU time."""
    head = (f"fuser kernels {split['fuser_ms']:.2f} ms of {split['total_ms']:.2f} ms GPU time per step "
            f"({100 * split['fused_share']:.1f}% fused)")
    lines = [head]
    lines += [f"  {ms:9.3f} ms  {op}" for op, ms in split["by_op"][:top]]
    return lines
