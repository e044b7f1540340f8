"""`fuser-bench --models`: whole models (tools/bench/models.py) trained and run by eager PyTorch,
torch.compile's Inductor and fuser, side by side, on one GPU, bf16 weights and activations.

    fuser-bench --models                              # gpt2, llama, bert_layer, mlp; train and infer
    fuser-bench --models --quick --filter 'gpt2|mlp'  # fewer timed steps, no max-autotune peer
    fuser-bench --models --json bench-results/models.json --markdown
    python3 -m fuser.tools.bench.model_bench --size tiny --source own   # a smoke run of small models

Each model runs in two modes: `train` (forward, backward and an AdamW step) and `infer` (forward
under torch.no_grad()). The peers: eager; Inductor (`torch.compile(model)`); Inductor
`mode="max-autotune-no-cudagraphs"` (not with --quick or --no-compile); fuser
(`torch.compile(model, backend=fuser.torch.backend())`). Every peer starts from a deep copy of one
reference model, so from identical weights, with `torch._dynamo.reset()` before each.

Method, per model and mode:
  1. Correctness first, against eager from the same weights and batch: train compares the loss
     and every parameter gradient (the relative error of the norm of their difference; a gradient
     that is mathematically zero, as BERT's key bias under softmax, is only noise in both, so each
     difference is measured against at least GRAD_FLOOR of the largest gradient norm), then a
     CURVE_STEPS-step loss curve from the same weights over the same batches (step by step for
     the first CURVE_TRACKED, then its mean: bf16 training turns chaotic after a dozen steps);
     infer compares the output. A fuser result over the tolerances makes the row FAIL (exit
     status 1); timing goes on.
  2. Time to first step: wall clock of the first step of a compiled peer, compile included. The
     run points fuser's kernel cache and Inductor's and Triton's caches at a fresh temporary
     directory (unless FUSER_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR or TRITON_CACHE_DIR is set, or
     --warm-caches is given), so a model's first mode compiles from scratch; its second mode may
     reuse kernels of the first within the process, as a program that trains and then evaluates
     would. (On an H100, GPT-2's first fuser training step took 230 s cold and about 11 s with
     fuser's disk cache warm.)
  3. Step time: the median of per-step CUDA-event timings over the timed steps, after warm-up.
  4. fuser's step is profiled (fuser.torch.profile.gpu_time_split): the share of GPU time in
     fuser's kernels and the ATen ops left to PyTorch by GPU time (the top ten printed below the
     table; all of them in the JSON).
A peer that crashes gets an ERROR cell with a one-line reason; the run goes on. Ratios are peer
time / fuser time (> 1: fuser faster), as in fuser-bench's table.

torch is imported when a run starts (or when the helpers below are called), never at import.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import gc
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import timing
from .timing import NO_GPU_PREFIX, _short

MODEL_NAMES = ("gpt2", "llama", "bert_layer", "mlp")  # models.MODELS, without importing torch
MODES = ("train", "infer")
PEERS = ("eager", "inductor", "max_autotune", "fuser")
PEER_TITLES = {"eager": "eager", "inductor": "inductor", "max_autotune": "max-autotune", "fuser": "fuser"}

# bf16 tolerances of fuser against eager
LOSS_RTOL = 2e-2      # the first step's loss
GRAD_RTOL = 2e-2      # each parameter gradient: |g - g_eager| / max(|g_eager|, GRAD_FLOOR * largest |g_eager|)
GRAD_FLOOR = 1e-2
CURVE_RTOL = 5e-2     # each of the first CURVE_TRACKED steps of the loss curve, and the mean of the rest
OUTPUT_RTOL = 2e-2    # infer: the output
CURVE_STEPS = 20
# bf16 training is chaotic after a dozen steps: on the H200 (2026-11-26, GPT-2) fuser and Inductor
# both followed eager within 0.1% for 12 steps, then each had a loss spike where eager had none,
# or none where eager had one (Inductor off by 11% at step 13, fuser by 34% at step 18). The
# first CURVE_TRACKED steps are compared one by one; after them, the mean loss (learning made).
CURVE_TRACKED = 10
CURVE_BATCHES = 2     # the curve cycles over this many batches, so the loss falls as they are learnt
# AdamW's learning rate: large enough to move bf16 weights of magnitude 0.02 (an ulp is 1.2e-4), small
# enough that eager's own curve is not chaotic (at 1e-3 Llama's loss jumped 8.9 -> 12.2 -> 8.2 in eager,
# and Inductor's curve differed from eager's by 17%; at 3e-4, by 1.6%)
LR = 3e-4


@dataclass(frozen=True)
class Steps:
    warmup: int
    timed: int
    profiled: int


STEPS = {False: Steps(warmup=3, timed=20, profiled=3), True: Steps(warmup=1, timed=5, profiled=2)}


# ============================================================================ results


@dataclass
class PeerCell:
    ms: float | None = None        # median step time
    host_ms: float | None = None   # median wall time to queue a step (~ms when launch-bound or the step waits)
    first_s: float | None = None   # the first step's wall time, compile included
    error: str | None = None       # why there is no number: ERROR reason, or "skipped (...)"
    check: dict[str, Any] = field(default_factory=dict)  # errors against eager (see check_*)
    kernels: list[dict[str, Any]] | None = None  # with --kernels: every kernel's ms per step

    @property
    def crashed(self) -> bool:
        return self.error is not None and not self.error.startswith("skipped")


@dataclass
class ModelRow:
    model: str
    mode: str
    source: str = ""
    shape: str = ""
    params: int = 0
    status: str = "ok"             # ok | FAIL (fuser's result is wrong) | ERROR (fuser or eager crashed)
    peers: dict[str, PeerCell] = field(default_factory=lambda: {p: PeerCell() for p in PEERS})
    split: dict[str, Any] | None = None        # gpu_time_split of fuser's step
    fuser_stats: dict[str, Any] | None = None  # the backend's Stats: regions, fused nodes, ...
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.model} {self.mode}"

    def ratio(self, peer: str) -> float | None:
        """peer time / fuser time (> 1: fuser faster)."""
        f, p = self.peers["fuser"].ms, self.peers[peer].ms
        return None if f is None or p is None or f <= 0 else p / f

    def as_json(self) -> dict[str, Any]:
        return {"model": self.model, "mode": self.mode, "source": self.source, "shape": self.shape,
                "params": self.params, "status": self.status,
                "peers": {k: dataclasses.asdict(v) for k, v in self.peers.items()},
                "fuser_over_eager": self.ratio("eager"), "fuser_over_inductor": self.ratio("inductor"),
                "fuser_over_max_autotune": self.ratio("max_autotune"),
                "fused_share": None if self.split is None else self.split["fused_share"],
                "gpu_time_split": self.split, "fuser_stats": self.fuser_stats, "notes": self.notes}


BAD_STATUSES = ("FAIL", "ERROR")


# ============================================================================ checks (no GPU needed)


def rel_err(got: Any, want: Any) -> float:
    """|got - want| / |want| (norm 2, in f32 on the tensors' device); |got - want| when want is 0."""
    g, w = got.detach().float(), want.detach().float()
    if g.shape != w.shape:
        raise ValueError(f"shape {tuple(g.shape)}, eager gives {tuple(w.shape)}")
    diff, scale = (g - w).norm().item(), w.norm().item()
    err = diff / scale if scale > 0 else diff
    return err if math.isfinite(err) else math.inf


def grad_errors(got: dict[str, Any], want: dict[str, Any], floor: float = GRAD_FLOOR) -> dict[str, float]:
    """Per parameter name: |got - want| / max(|want|, floor * the largest |want|). A gradient
    present in one and missing (None) in the other is an infinite error."""
    norms = {n: want[n].detach().float().norm().item() for n in want if want[n] is not None}
    largest = max(norms.values(), default=0.0)
    out: dict[str, float] = {}
    for n in sorted(set(got) | set(want)):
        g, w = got.get(n), want.get(n)
        if g is None and w is None:
            continue
        if g is None or w is None:
            out[n] = math.inf
            continue
        diff = (g.detach().float() - w.detach().float()).norm().item()
        scale = max(norms[n], floor * largest)
        err = diff / scale if scale > 0 else diff
        out[n] = err if math.isfinite(err) else math.inf
    return out


def worst(errors: dict[str, float]) -> tuple[str | None, float]:
    if not errors:
        return None, 0.0
    name = max(errors, key=lambda n: errors[n])
    return name, errors[name]


def curve_error(got: Sequence[float], want: Sequence[float]) -> float:
    """How far a loss curve is from eager's: the largest per-step |got - want| / |want| over the
    first CURVE_TRACKED steps, or the relative difference of the mean of the steps after them if
    larger (inf if the lengths differ or a loss is not finite)."""
    if len(got) != len(want):
        return math.inf
    if not all(math.isfinite(x) for x in list(got) + list(want)):
        return math.inf

    def rel(g: float, w: float) -> float:
        return abs(g - w) / abs(w) if w != 0 else abs(g - w)

    errs = [rel(g, w) for g, w in zip(got[:CURVE_TRACKED], want[:CURVE_TRACKED])]
    rest_g, rest_w = got[CURVE_TRACKED:], want[CURVE_TRACKED:]
    if rest_w:
        errs.append(rel(sum(rest_g) / len(rest_g), sum(rest_w) / len(rest_w)))
    return max(errs, default=0.0)


def check_failures(mode: str, check: dict[str, Any]) -> list[str]:
    """Why a peer's check against eager fails (empty: it passes)."""
    out = []
    if mode == "train":
        if not check.get("loss_rel", 0.0) <= LOSS_RTOL:
            out.append(f"loss differs by {check['loss_rel']:.3g} (> {LOSS_RTOL:g})")
        if not check.get("grad_rel", 0.0) <= GRAD_RTOL:
            out.append(f"gradient of {check.get('grad_worst')} differs by {check['grad_rel']:.3g} (> {GRAD_RTOL:g})")
        if not check.get("curve_rel", 0.0) <= CURVE_RTOL:
            out.append(f"loss curve differs by {check['curve_rel']:.3g} (> {CURVE_RTOL:g})")
    elif not check.get("out_rel", 0.0) <= OUTPUT_RTOL:
        out.append(f"output differs by {check['out_rel']:.3g} (> {OUTPUT_RTOL:g})")
    return out


def select_models(pattern: str | None) -> list[str]:
    """Models whose name matches the regex (all when None); re.error for a bad one."""
    if not pattern:
        return list(MODEL_NAMES)
    rx = re.compile(pattern)
    return [m for m in MODEL_NAMES if rx.search(m)]


def peers_for(quick: bool, no_compile: bool) -> dict[str, str | None]:
    """Each peer: None (runs) or why it is skipped."""
    return {"eager": None,
            "inductor": "skipped (--no-compile)" if no_compile else None,
            "max_autotune": "skipped (--no-compile)" if no_compile else "skipped (--quick)" if quick else None,
            "fuser": None}


# ============================================================================ the GPU side


class _Eager:
    """Eager's reference results for one model and mode."""

    def __init__(self) -> None:
        self.loss: float | None = None
        self.grads: dict[str, Any] | None = None
        self.curve: list[float] | None = None
        self.out: Any = None


class ModelBench:
    """Runs the models. device="cpu" (with dtype float32) runs the same method without CUDA
    events or the profiler, for tests of the harness on a machine without a GPU."""

    def __init__(self, quick: bool = False, no_compile: bool = False, size: str = "bench", source: str = "auto",
                 modes: Sequence[str] = MODES, pipeline: str = "default", log: Callable[[str], None] | None = None,
                 device: str = "cuda", dtype: Any = None, peers: Sequence[str] = PEERS,
                 kernels_dir: str | None = None):
        import torch

        from . import models

        self.torch, self.models = torch, models
        self.quick, self.size, self.source, self.modes, self.pipeline = quick, size, source, tuple(modes), pipeline
        self.device, self.dtype = device, dtype if dtype is not None else torch.bfloat16
        self.cuda = torch.device(device).type == "cuda"
        self.steps = STEPS[quick]
        self.kernels_dir = kernels_dir  # profile every peer's step, and keep fuser's region texts here
        self.skip = peers_for(quick, no_compile)
        for p in PEERS:
            if p not in peers:
                self.skip[p] = self.skip[p] or "skipped (not asked for)"
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.timer = (f"{'CUDA events' if self.cuda else 'wall clock'} per step; {self.steps.warmup} warm-up steps "
                      f"after the {CURVE_STEPS}-step loss curve, median of {self.steps.timed} steps")

    # ------------------------------------------------------------------ pieces

    def _sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def _free(self) -> None:
        gc.collect()
        if self.cuda:
            self.torch.cuda.empty_cache()

    def _compiled(self, peer: str, model: Any) -> tuple[Any, Any]:
        """(callable, fuser backend or None) for a peer, after torch._dynamo.reset()."""
        torch = self.torch
        torch._dynamo.reset()
        if peer == "eager":
            return model, None
        if peer == "inductor":
            return torch.compile(model, dynamic=False), None
        if peer == "max_autotune":
            return torch.compile(model, mode="max-autotune-no-cudagraphs", dynamic=False), None
        import fuser.torch as ft

        be = ft.backend(pipeline=self.pipeline)
        return torch.compile(model, backend=be, dynamic=False), be

    def _optimizer(self, model: Any) -> Any:
        return self.torch.optim.AdamW(model.parameters(), lr=LR)

    def _train_step(self, fn: Any, opt: Any, batch: dict[str, Any]) -> Any:
        loss = self.models.loss(fn, batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    def _time_steps(self, step: Callable[[], Any]) -> tuple[float, float]:
        """(median step time, median host time to queue a step) over the timed steps."""
        torch = self.torch
        for _ in range(self.steps.warmup):
            step()
        n = self.steps.timed
        host = []
        if not self.cuda:
            for _ in range(n):
                t0 = time.perf_counter()
                step()
                host.append((time.perf_counter() - t0) * 1e3)
            return statistics.median(host), statistics.median(host)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        for s, e in zip(starts, ends):
            t0 = time.perf_counter()
            s.record()
            step()
            e.record()
            host.append((time.perf_counter() - t0) * 1e3)
        self._sync()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)), statistics.median(host)

    def _profile(self, row: ModelRow, peer: str, step: Callable[[], Any], be: Any) -> None:
        """Fuser's step always (row.split); with kernels_dir every peer's kernels, and fuser's
        region texts as kernels_dir/regions/<symbol>.mlir (to map its kernels back to the ops)."""
        from fuser.torch.profile import gpu_time_split

        if not self.cuda or (peer != "fuser" and not self.kernels_dir):
            return
        try:
            split = gpu_time_split(step, steps=self.steps.profiled)
        except Exception as e:
            row.notes.append(f"profile ({peer}): {_short(e, 300)}")
            return
        row.peers[peer].kernels = split.pop("kernels") if self.kernels_dir else None
        split.pop("kernels", None)
        if peer == "fuser":
            row.split = split
        if peer == "fuser" and self.kernels_dir and be is not None:
            from fuser.torch.partition import regions

            os.makedirs(os.path.join(self.kernels_dir, "regions"), exist_ok=True)
            for _, gm in be.graphs:
                for r in regions(gm):
                    with open(os.path.join(self.kernels_dir, "regions", f"{r.symbol}.mlir"), "w") as f:
                        f.write(r.mlir)

    # ------------------------------------------------------------------ one peer

    def _train_peer(self, peer: str, cell: PeerCell, ref: Any, state: dict[str, Any], batches: list[Any],
                    eager: _Eager, row: ModelRow) -> None:
        torch, sync = self.torch, self._sync
        model = copy.deepcopy(ref)
        fn, be = self._compiled(peer, model)
        opt = self._optimizer(model)
        sync()
        t0 = time.perf_counter()
        loss = self.models.loss(fn, batches[0])
        loss.backward()
        sync()
        t1 = time.perf_counter()
        grads = {n: None if p.grad is None else p.grad.detach().clone() for n, p in model.named_parameters()}
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        cell.first_s = (t1 - t0) + (time.perf_counter() - t2)
        if peer == "eager":
            eager.loss, eager.grads = loss.item(), grads
        elif eager.grads is not None:
            cell.check["loss_rel"] = abs(loss.item() - eager.loss) / max(abs(eager.loss), 1e-12)
            cell.check["grad_worst"], cell.check["grad_rel"] = worst(grad_errors(grads, eager.grads))
        del grads, loss
        # the loss curve, from the reference weights again
        model.load_state_dict(state)
        opt = self._optimizer(model)
        curve = torch.stack([self._train_step(fn, opt, batches[i % len(batches)])
                             for i in range(CURVE_STEPS)]).float().tolist()
        if peer == "eager":
            eager.curve = curve
        elif eager.curve is not None:
            cell.check["curve_rel"] = curve_error(curve, eager.curve)
        cell.check["curve"] = curve
        def step() -> Any:
            return self._train_step(fn, opt, batches[0])

        cell.ms, cell.host_ms = self._time_steps(step)
        self._profile(row, peer, step, be)
        if peer == "fuser":
            row.fuser_stats = _stats(be)

    def _infer_peer(self, peer: str, cell: PeerCell, ref: Any, batches: list[Any], eager: _Eager,
                    row: ModelRow) -> None:
        torch, sync = self.torch, self._sync
        model = copy.deepcopy(ref).eval()
        fn, be = self._compiled(peer, model)
        with torch.no_grad():
            sync()
            t0 = time.perf_counter()
            out = self.models.output(fn, batches[0])
            sync()
            cell.first_s = time.perf_counter() - t0
            if peer == "eager":
                eager.out = out
            elif eager.out is not None:
                cell.check["out_rel"] = rel_err(out, eager.out)
            del out
            def step() -> Any:
                return self.models.output(fn, batches[0])

            cell.ms, cell.host_ms = self._time_steps(step)
            self._profile(row, peer, step, be)
            if peer == "fuser":
                row.fuser_stats = _stats(be)

    # ------------------------------------------------------------------ one model

    def run_model(self, name: str) -> list[ModelRow]:
        """The rows of one model (one per mode); never raises for a peer's failure."""
        models = self.models
        rows = [ModelRow(name, mode) for mode in self.modes]
        try:
            ref, make_batch = models.build(name, self.size, source=self.source, dtype=self.dtype, device=self.device)
            state = {k: v.detach().clone() for k, v in ref.state_dict().items()}
            batches = [make_batch(1000 + i) for i in range(CURVE_BATCHES)]
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            for r in rows:
                r.status = "ERROR"
                r.notes.append(f"setup: {_short(e, 300)}")
            self._free()
            return rows
        info = ref.bench_info
        for r in rows:
            r.source, r.params = info["source"], models.param_count(ref)
            r.shape = "x".join(str(d) for d in info["config"].input_shape())
        for r in rows:
            self.log(f"  {name} {r.mode} ({r.source}, {r.shape}, {r.params / 1e6:.1f}M parameters)")
            self._run_mode(r, ref, state, batches)
        del ref, state, batches
        self._free()
        return rows

    def _run_mode(self, row: ModelRow, ref: Any, state: dict[str, Any], batches: list[Any]) -> None:
        eager = _Eager()
        for peer in PEERS:
            cell = row.peers[peer]
            if self.skip[peer]:
                cell.error = self.skip[peer]
                continue
            t0 = time.perf_counter()
            try:
                if row.mode == "train":
                    self._train_peer(peer, cell, ref, state, batches, eager, row)
                else:
                    self._infer_peer(peer, cell, ref, batches, eager, row)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:
                cell.error = _short(e, 300)
            finally:
                self.torch._dynamo.reset()
                self._free()
            self.log(f"    {PEER_TITLES[peer]}: {_cell_summary(cell)}; {time.perf_counter() - t0:.1f} s")
            problem = timing.cuda_context_problem(self.torch) if self.cuda else None
            if problem is not None:
                for p in PEERS[PEERS.index(peer) + 1:]:
                    row.peers[p].error = f"not run: the CUDA context was lost ({problem})"
                break
        eager.grads = eager.out = None
        _set_status(row)


def _stats(be: Any) -> dict[str, Any] | None:
    if be is None:
        return None
    s = be.stats
    out = dataclasses.asdict(s) if dataclasses.is_dataclass(s) else dict(vars(s))
    out["torch_nodes"] = dict(sorted(out.get("torch_nodes", {}).items(), key=lambda kv: -kv[1]))
    return out


def _set_status(row: ModelRow) -> None:
    fuser, eager = row.peers["fuser"], row.peers["eager"]
    if fuser.crashed:
        row.status = "ERROR"
        row.notes.append(f"fuser ERROR: {fuser.error}")
    elif eager.crashed:
        row.status = "ERROR"
        row.notes.append(f"eager ERROR (nothing to check fuser against): {eager.error}")
    else:
        why = check_failures(row.mode, fuser.check)
        if why:
            row.status = "FAIL"
            row.notes.append("fuser FAIL: " + "; ".join(why))
    for peer in ("inductor", "max_autotune"):
        cell = row.peers[peer]
        if cell.crashed:
            row.notes.append(f"{PEER_TITLES[peer]} ERROR: {cell.error}")
        elif cell.check and check_failures(row.mode, cell.check):
            row.notes.append(f"{PEER_TITLES[peer]} differs from eager: "
                             + "; ".join(check_failures(row.mode, cell.check)) + "; timed anyway")


def _cell_summary(cell: PeerCell) -> str:
    if cell.error:
        return cell.error
    parts = [f"{cell.ms:.2f} ms/step" if cell.ms is not None else "no time"]
    if cell.host_ms is not None:
        parts.append(f"host {cell.host_ms:.2f} ms/step")
    if cell.first_s is not None:
        parts.append(f"first step {cell.first_s:.1f} s")
    parts += [f"{k} {v:.2g}" for k, v in cell.check.items() if isinstance(v, float)]
    return ", ".join(parts)


# ============================================================================ report


COLUMNS = ["model", "mode", "source", "shape", "params", "status", "eager ms", "inductor ms", "max-autotune ms",
           "fuser ms", "fuser/eager", "fuser/inductor", "1st inductor s", "1st fuser s", "fused %", "max err"]


def _params(n: int) -> str:
    return "-" if not n else f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}K"


def _ms(cell: PeerCell) -> str:
    if cell.error:
        return "-" if cell.error.startswith("skipped") else "ERROR"
    return "n/a" if cell.ms is None else f"{cell.ms:.2f}"


def _max_err(row: ModelRow) -> str:
    c = row.peers["fuser"].check
    keys = ("loss_rel", "grad_rel", "curve_rel") if row.mode == "train" else ("out_rel",)
    vals = [c[k] for k in keys if k in c]
    return "-" if not vals else f"{max(vals):.1e}"


def table_cells(rows: Sequence[ModelRow]) -> list[list[str]]:
    def ratio(r: ModelRow, peer: str) -> str:
        v = r.ratio(peer)
        return "-" if v is None else f"{v:.2f}x"

    def first(cell: PeerCell) -> str:
        return "-" if cell.first_s is None else f"{cell.first_s:.1f}"

    out = []
    for r in rows:
        p = r.peers
        out.append([r.model, r.mode, r.source or "-", r.shape or "-", _params(r.params),
                    r.status, _ms(p["eager"]), _ms(p["inductor"]), _ms(p["max_autotune"]), _ms(p["fuser"]),
                    ratio(r, "eager"), ratio(r, "inductor"), first(p["inductor"]), first(p["fuser"]),
                    "-" if r.split is None else f"{100 * r.split['fused_share']:.1f}%", _max_err(r)])
    return out


def format_table(rows: Sequence[ModelRow], markdown: bool = False) -> str:
    cells = table_cells(rows)
    if markdown:
        lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(" --- " for _ in COLUMNS) + "|"]
        return "\n".join(lines + ["| " + " | ".join(c) + " |" for c in cells])
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(COLUMNS)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if i < 6 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths))).rstrip()

    return "\n".join([line(COLUMNS), line(["-" * w for w in widths])] + [line(c) for c in cells])


def below_table(rows: Sequence[ModelRow], top: int = 10) -> list[str]:
    """Per row: its notes, and where fuser's step was profiled, the fused share and the top ATen
    ops left to PyTorch by GPU time."""
    from fuser.torch.profile import format_split  # torch-free

    out = []
    for r in rows:
        lines = [f"{r.name}: {n}" for n in r.notes]
        if r.split is not None:
            head, *ops = format_split(r.split, top)
            lines.append(f"{r.name}: {head}" + ("; left to PyTorch:" if ops else ""))
            lines += ops
        if r.fuser_stats:
            s = r.fuser_stats
            lines.append(f"{r.name}: fuser backend: {s.get('regions', 0)} regions, {s.get('fused_nodes', 0)} fused "
                         f"nodes, {sum(s.get('torch_nodes', {}).values())} nodes left to PyTorch, "
                         f"{s.get('causal_masks', 0)} attention masks made is_causal; first step: "
                         f"partition {s.get('partition_seconds', 0.0):.1f} s, precompile {s.get('precompile_seconds', 0.0):.1f} s, "
                         f"compile or load in the process {s.get('compile_seconds', 0.0):.1f} s")
        out += lines
    return out


def write_json(path: str, rows: Sequence[ModelRow], env: dict[str, Any], args: dict[str, Any]) -> None:
    doc = {"kind": "models", "env": env, "args": args, "rows": [r.as_json() for r in rows]}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:  # rewritten after every model: a reader never sees half a file
        json.dump(doc, f, indent=2, default=str)
    os.replace(tmp, path)


def list_models(names: Sequence[str], source: str = "auto") -> str:
    """`--models --list`: the models, their source and shapes (built on the meta device: no GPU)."""
    from . import models

    head = ["model", "source", "input", "params", "tiny input", "tiny params"]
    cells = []
    for n in names:
        row = [n]
        for sz in ("bench", "tiny"):
            m, _ = models.build(n, sz, source=source, device="meta")
            shape = "x".join(str(d) for d in m.bench_info["config"].input_shape())
            if sz == "bench":
                row.append(m.bench_info["source"])
            row += [shape, _params(models.param_count(m))]
        cells.append(row)
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in [head] + cells)


# ============================================================================ the command


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """`python3 -m fuser.tools.bench.model_bench`'s options (fuser-bench --models takes them all)."""
    args = _parser().parse_args(argv)
    args.models = True
    return args


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fuser-bench --models", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--filter", metavar="REGEX", help="run the models whose name matches REGEX")
    p.add_argument("--quick", action="store_true", help=f"{STEPS[True].timed} timed steps, no max-autotune peer")
    p.add_argument("--no-compile", action="store_true", help="skip the Inductor peers")
    p.add_argument("--json", metavar="PATH", help="write every number, the device and versions as JSON")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")
    p.add_argument("--list", action="store_true", help="list the models and exit (no GPU needed)")
    p.add_argument("--pipeline", default="default", help="fuser's pass pipeline (default: default)")
    p.add_argument("--size", choices=("bench", "tiny"), default="bench", help="model size (tiny: a smoke run)")
    p.add_argument("--source", choices=("auto", "hf", "own"), default="auto",
                   help="Hugging Face modules (hf), this package's (own), or hf when importable (auto)")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated: train, infer (default: both)")
    p.add_argument("--warm-caches", action="store_true",
                   help="keep the compile caches as found (default: fresh ones, so first steps compile from scratch)")
    p.add_argument("--kernels", metavar="DIR",
                   help="profile every peer's step: each kernel's time goes into the JSON, and fuser's region "
                        "texts into DIR/regions/<symbol>.mlir (its kernels are <symbol>_k<i>)")
    return p


CACHE_VARS = ("FUSER_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")


def fresh_caches() -> tuple[dict[str, str], list[str], str | None]:
    """Point each compile cache not set by the caller at a new temporary directory: ({variable:
    directory}, the variables set here, the temporary directory to remove afterwards or None)."""
    base, set_here = None, []
    for var in CACHE_VARS:
        if not os.environ.get(var):
            base = base or tempfile.mkdtemp(prefix="fuser-bench-models-")
            os.environ[var] = os.path.join(base, var.split("_")[0].lower())
            set_here.append(var)
    return {v: os.environ[v] for v in CACHE_VARS}, set_here, base


def run_from_args(args: argparse.Namespace) -> int:
    """The run behind `fuser-bench --models` (args: cli.parse_args's or parse_args's namespace)."""

    if getattr(args, "distributed", None) is not None:
        print("fuser-bench: --distributed is an option of fuser-bench --models (fuser.tools.bench.cli)",
              file=sys.stderr)
        return 2
    size, source = getattr(args, "size", "bench"), getattr(args, "source", "auto")
    modes = [m.strip() for m in getattr(args, "modes", ",".join(MODES)).split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        print(f"fuser-bench: --modes takes {', '.join(MODES)}, got {bad or 'nothing'}", file=sys.stderr)
        return 2
    try:
        names = select_models(args.filter)
    except re.error as e:
        print(f"fuser-bench: bad --filter regex: {e}", file=sys.stderr)
        return 2
    if not names:
        print(f"fuser-bench: no model matches --filter {args.filter!r} (the models: {', '.join(MODEL_NAMES)})",
              file=sys.stderr)
        return 2
    if getattr(args, "list", False):
        print(list_models(names, source))
        return 0
    for opt in ("png", "show_mlir"):
        if getattr(args, opt, None):
            print(f"fuser-bench: --{opt.replace('_', '-')} is not available with --models", file=sys.stderr)
            return 2
    problem = timing.gpu_problem()  # looked up on the module, so that tests can replace it
    if problem is not None:
        print(NO_GPU_PREFIX + problem, file=sys.stderr)
        return 2

    if getattr(args, "warm_caches", False):
        caches, set_here, tmp = {v: os.environ.get(v, "(default)") for v in CACHE_VARS}, [], None
    else:
        caches, set_here, tmp = fresh_caches()
    try:
        return _run(args, names, modes, size, source, caches)
    finally:
        for var in set_here:
            os.environ.pop(var, None)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _run(args: argparse.Namespace, names: list[str], modes: list[str], size: str, source: str,
         caches: dict[str, str]) -> int:
    from .report import environment

    bench = ModelBench(quick=args.quick, no_compile=args.no_compile, size=size, source=source, modes=modes,
                       pipeline=getattr(args, "pipeline", "default"), kernels_dir=getattr(args, "kernels", None))
    env = environment(bench.torch, bench.timer)
    run_args = {"models": names, "modes": modes, "size": size, "source": source, "quick": args.quick,
                "no_compile": args.no_compile, "pipeline": bench.pipeline, "dtype": str(bench.dtype),
                "optimizer": f"AdamW lr={LR}",
                "steps": dataclasses.asdict(bench.steps), "curve_steps": CURVE_STEPS,
                "tolerances": {"loss": LOSS_RTOL, "grad": GRAD_RTOL, "grad_floor": GRAD_FLOOR, "curve": CURVE_RTOL,
                               "output": OUTPUT_RTOL}, "caches": caches}
    rows: list[ModelRow] = []
    for i, name in enumerate(names, 1):
        bench.log(f"[{i}/{len(names)}] {name} ...")
        rows += bench.run_model(name)
        if args.json:
            write_json(args.json, rows, env, run_args)
    if args.json:
        bench.log(f"wrote {args.json}")

    dev = env["device"]
    print(f"# {dev['name']} ({dev['sms']} SMs), torch {env['versions']['torch']}, "
          f"triton {env['versions']['triton']}, {env['date']}; bf16 weights and activations, {size} size")
    print(f"# timer: {bench.timer}; ratios = peer time / fuser time (> 1: fuser faster); "
          f"1st = the first step's wall time, compile included; max err = fuser vs eager (worst of loss, "
          f"gradients, loss curve; or the output)")
    print(format_table(rows, markdown=args.markdown))
    for line in below_table(rows):
        print(f"# {line}")
    sys.stdout.flush()
    return 1 if any(r.status in BAD_STATUSES for r in rows) else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_from_args(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
