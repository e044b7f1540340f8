"""`fuser.torch.explain(model, *inputs)`: what the backend did with a model, per graph.

For each graph AOTAutograd handed over (forward, backward or inference): its regions (the ATen
ops each holds, its fusion symbol, and on the GPU its kernels and compile time) and the ATen ops
left to PyTorch with counts and the reason the table gave. On CUDA inputs it also profiles one
compiled step and gives the share of its GPU time spent in fuser kernels and the fell-back ATen
ops by GPU time (fuser.torch.profile.gpu_time_split).

    report = fuser.torch.explain(model, x)          # forward, and backward if the output needs grad
    print(report)                                   # the text report
    report.graphs[0].regions[0].ops                 # {'aten.addmm.default': 1, ...}
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

from .backend import FuserBackend
from .partition import FusionRegion, regions
from .translate import op_name


@dataclass
class RegionInfo:
    name: str  # the region's place: forward_fuser_region_3
    symbol: str  # the fusion's name, and the prefix of its kernels' names
    ops: dict[str, int]  # ATen op -> count of its nodes in the region
    kernels: list[str] | None  # the compiled kernels (None: not compiled, e.g. on the CPU)
    compile_seconds: float | None
    compile_error: str | None


@dataclass
class GraphInfo:
    kind: str  # forward / backward / inference
    regions: list[RegionInfo]
    fallbacks: dict[str, tuple[int, str]]  # ATen op -> (nodes left to PyTorch, why)


@dataclass
class Explanation:
    graphs: list[GraphInfo]
    gpu: dict[str, Any] | None = None  # gpu_time_split of one compiled step, on CUDA inputs
    notes: list[str] = field(default_factory=list)

    @property
    def fused_share(self) -> float | None:
        """Fraction of the compiled step's GPU time in fuser kernels (None without a GPU)."""
        return self.gpu["fused_share"] if self.gpu else None

    def fallback_counts(self) -> Counter:
        c: Counter = Counter()
        for g in self.graphs:
            for op, (n, _) in g.fallbacks.items():
                c[op] += n
        return c

    def __str__(self) -> str:
        lines = []
        for g in self.graphs:
            n_ops = sum(sum(r.ops.values()) for r in g.regions)
            n_fb = sum(n for n, _ in g.fallbacks.values())
            lines.append(f"{g.kind} graph: {len(g.regions)} regions holding {n_ops} ATen ops; {n_fb} ops in PyTorch")
            for r in g.regions:
                ops = ", ".join(f"{op.removeprefix('aten.')} x{n}" if n > 1 else op.removeprefix("aten.")
                                for op, n in sorted(r.ops.items()))
                extra = ""
                if r.compile_error:
                    extra = f"  [runs in PyTorch: {r.compile_error}]"
                elif r.kernels is not None:
                    t = f", compiled in {r.compile_seconds:.2f} s" if r.compile_seconds else ", shared"
                    extra = f"  [{len(r.kernels)} kernels{t}]"
                lines.append(f"  {r.name} @{r.symbol}: {ops}{extra}")
            for op, (n, why) in sorted(g.fallbacks.items(), key=lambda kv: -kv[1][0]):
                lines.append(f"  PyTorch: {op} x{n}: {why}")
        if self.gpu:
            from .profile import format_split
            lines.extend(format_split(self.gpu))
        lines.extend(self.notes)
        return "\n".join(lines)


def describe_region(r: FusionRegion) -> RegionInfo:
    ops = Counter(op_name(n.target) for n in r.graph_module.graph.nodes if n.op == "call_function")
    kernels = None
    compiled = r.compiled_if_any()
    if compiled is not None:
        kernels = list(dict.fromkeys(step.kernel for step in compiled.program.launches))
    return RegionInfo(r.name, r.symbol, dict(ops), kernels, r.compile_seconds, r.compile_error)


def describe(backend: FuserBackend) -> list[GraphInfo]:
    """The graphs a backend has compiled so far."""
    out = []
    for kind, gm in backend.graphs:
        fallbacks = getattr(gm, "fuser_fallbacks", {})
        out.append(GraphInfo(kind, [describe_region(r) for r in regions(gm)], dict(fallbacks)))
    return out


def explain(model: Any, *inputs: Any, backward: bool | None = None, profile: bool = True,
            **backend_options: Any) -> Explanation:
    """Compile `model` (a module or function) with a fresh fuser backend, run it on `inputs`
    (and backward through the sum of its floating outputs if `backward`, by default when an
    output requires grad), and report what ran where. `backend_options` go to
    `fuser.torch.backend`. The model's parameters' `.grad` are left as they were."""
    be = FuserBackend(**backend_options)
    compiled = torch.compile(model, backend=be, dynamic=False)
    params = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    saved = [p.grad for p in params]

    def step() -> None:
        outs = compiled(*inputs)
        flat = [o for o in (outs if isinstance(outs, (tuple, list)) else [outs]) if isinstance(o, torch.Tensor)]
        want_bw = backward if backward is not None else any(o.requires_grad for o in flat)
        if want_bw:
            total = sum(o.float().sum() for o in flat if o.requires_grad and o.is_floating_point())
            if isinstance(total, torch.Tensor):
                total.backward()

    try:
        step()
        report = Explanation(describe(be))
        on_gpu = any(isinstance(x, torch.Tensor) and x.is_cuda for x in inputs) or \
            any(p.is_cuda for p in params)
        if profile and on_gpu:
            from .profile import gpu_time_split
            report.gpu = gpu_time_split(step, steps=1)
        elif not on_gpu:
            report.notes.append("(CPU inputs: regions ran in fuser's reference interpreter; no GPU time to split)")
    finally:
        for p, g in zip(params, saved):
            p.grad = g
    return report
