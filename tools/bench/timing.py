"""The fuser-bench harness: inputs, the correctness check, timing, and the per-row results.

Method (PERF.md): every row is checked against torch eager before it is timed (a fast wrong
kernel is a FAIL, not a number); times are medians of CUDA-event timings after warm-up, each
call after an L2 flush that reads (not writes) a large buffer (`Bench.time_ms` says why);
inputs that fit in L2 are rotated through enough copies to exceed it; inputs are random, never
zeros; tensor-core (TFLOP/s) rows are timed in two rounds in opposite peer orders, keeping each
peer's faster median.

torch and triton are imported when a `Bench` is made, never at module level.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .workloads import Shape, Workload, fmt_shape, nbytes

L2_BYTES = 60 * 10**6          # H200 L2 (H100: 50 MB); inputs below this are rotated
NO_GPU_PREFIX = "fuser-bench needs an NVIDIA GPU: "  # the start of the one-line error without one
ROTATE_TARGET_BYTES = 200 * 10**6
FLUSH_BYTES = 256 << 20        # read before each timed call: evicts L2 (4-5x its size) and leaves it clean
DEFAULT_PEAK_TFLOPS = 989.0    # Hopper bf16 dense tensor-core peak (PERF.md)


# ============================================================================ results


@dataclass
class PeerResult:
    ms: float | None = None
    rate: float | None = None       # GB/s or TFLOP/s
    error: str | None = None        # why there is no number ("n/a" in the table)
    rel_err: float | None = None    # against eager, for the fuser and compile peers

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class RowResult:
    workload: Workload
    shape: Shape
    # ok | FAIL (wrong result) | ERROR (fuser could not compile/run) | unsupported (the compiler
    # says it cannot handle this fusion yet: the peers are still timed) | anchor
    status: str = "ok"
    fuser: PeerResult = field(default_factory=PeerResult)
    eager: PeerResult = field(default_factory=PeerResult)
    compile: PeerResult = field(default_factory=PeerResult)
    library: PeerResult = field(default_factory=PeerResult)  # the workload's `library` peer, if it has one
    pct_ceiling: float | None = None
    compile_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return self.workload.bytes_moved(self.shape, self.workload.dtype)

    @property
    def flops(self) -> int | None:
        return None if self.workload.flops is None else self.workload.flops(self.shape)

    def ratio(self, peer: PeerResult) -> float | None:
        if self.fuser.ms is None or peer.ms is None:
            return None
        return peer.ms / self.fuser.ms

    def as_json(self) -> dict[str, Any]:
        w = self.workload
        return {
            "name": w.name, "family": w.family, "shape": list(self.shape), "dtype": w.dtype,
            "unit": w.unit, "bytes": self.bytes, "flops": self.flops, "rtol": w.rtol,
            "status": self.status,
            "fuser": self.fuser.as_json(), "eager": self.eager.as_json(), "compile": self.compile.as_json(),
            "fuser_over_eager": self.ratio(self.eager), "fuser_over_compile": self.ratio(self.compile),
            "library": None if w.library is None else {"name": w.library[0], **self.library.as_json(),
                                                       "fuser_over_library": self.ratio(self.library)},
            "pct_ceiling": self.pct_ceiling, "compile_seconds": self.compile_seconds,
        }


def rate_of(w: Workload, shape: Shape, ms: float) -> float:
    """GB/s (1e9 bytes) or TFLOP/s for one run of `ms` milliseconds."""
    if w.flops is not None:
        return w.flops(shape) / (ms * 1e-3) / 1e12
    return w.bytes_moved(shape, w.dtype) / (ms * 1e-3) / 1e9


# Compile errors that mean "fuser cannot do this yet" rather than "fuser broke": such a row is
# reported as `unsupported` (its peers are still timed) instead of ERROR.
_UNSUPPORTED_RX = re.compile(r"not supported|unsupported|not implemented|NotImplementedError|unknown pass")
BAD_STATUSES = ("FAIL", "ERROR")


def is_unsupported(message: str) -> bool:
    return bool(_UNSUPPORTED_RX.search(message or ""))


def _short(e: BaseException, limit: int = 1000) -> str:
    text = f"{type(e).__name__}: {e}".strip().replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ============================================================================ GPU side


class BenchUnavailable(Exception):
    """No GPU run is possible here; the message says why."""


def gpu_problem() -> str | None:
    """None when the benchmark can run here, else a plain reason (no GPU, no torch, ...)."""
    try:
        from fuser.runtime import driver
    except Exception as e:  # cuda-python missing or broken
        return f"the fuser CUDA runtime could not be imported ({_short(e)})"
    try:
        if hasattr(driver, "require_gpu"):
            driver.require_gpu()
        elif not driver.gpu_available():
            return "no NVIDIA GPU/driver found"
    except Exception as e:
        return str(e) or type(e).__name__
    try:
        import torch
    except Exception as e:
        return f"torch is not importable ({_short(e)}); install a CUDA build of torch to compare with it"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device (torch.cuda.is_available() is False)"
    return None


class Bench:
    """Runs workloads on the GPU: inputs, correctness, timing, peers."""

    def __init__(self, quick: bool = False, peers: Sequence[str] = ("eager", "compile"),
                 reps: int = 100, peak_tflops: float = DEFAULT_PEAK_TFLOPS, log: Callable[[str], None] | None = None,
                 pipeline: str = "default"):
        import torch

        self.torch = torch
        self.quick = quick
        self.pipeline = pipeline
        self.peers = tuple(peers)
        self.reps = reps
        self.peak_tflops = peak_tflops
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.copy_gbps: float | None = None
        self._flush: Any = None
        self.timer = (f"CUDA events per call, each after a {FLUSH_BYTES >> 20} MB read that leaves L2 clean; "
                      f"~25 ms of warm-up, median of the calls that fit in {reps} ms (at least 20)")

    # ------------------------------------------------------------------ pieces

    def make_inputs(self, w: Workload, shape: Shape, seed: int) -> list[Any]:
        torch = self.torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        out = []
        bounds = [None] * len(w.inputs(shape, w.dtype)) if w.int_bounds is None else w.int_bounds(shape)
        for (s, d), k, high in zip(w.inputs(shape, w.dtype), w.scales_for(shape), bounds):
            if d in ("i64", "i1"):  # a seed or offset (0-d), an index below its bound, a mask (about 90% true)
                x = torch.randint(0, high or 2**31, s, device="cuda", generator=g) if d == "i64" else \
                    torch.rand(s, device="cuda", generator=g) < 0.9
                out.append(x)
                continue
            x = torch.randn(s, device="cuda", dtype=torch.float32, generator=g)
            if k != 1.0:
                x.mul_(k)
            out.append(x if d == "f32" else x.to({"bf16": torch.bfloat16, "f16": torch.float16}[d]))
        return out

    def input_sets(self, w: Workload, shape: Shape) -> list[list[Any]]:
        """One set, or enough to exceed ~200 MB when one set fits in L2."""
        per_set = sum(nbytes(s, d) for s, d in w.inputs(shape, w.dtype))
        n = 1 if per_set >= L2_BYTES else max(2, math.ceil(ROTATE_TARGET_BYTES / max(per_set, 1)))
        return [self.make_inputs(w, shape, seed=1234 + i) for i in range(n)]

    def time_ms(self, fn: Callable[..., Any], arg_sets: list[list[Any]]) -> float:
        """Median milliseconds of `fn(*args)`, cycling through `arg_sets`, each call timed with
        CUDA events after an L2 flush.

        The flush reads a buffer of FLUSH_BYTES (a sum) rather than writing one, as
        `triton.testing.do_bench` does: both evict the inputs, but a written flush leaves L2 full
        of dirty lines, and writing them back is charged to the timed call (6-10 us per call on
        the H100: a 268 MB bf16 transpose measured 99.6 us that way, 92.9 us after a read flush,
        and Nsight Compute puts the kernel alone at 92.6 us). That cost falls on every peer
        alike but weighs most on the smaller rows; docs/perf-notes.md has the measurements.
        Calls: warm-up for ~25 ms, then as many as fit in `reps` ms (at least 20)."""
        torch = self.torch
        cycle = itertools.cycle(arg_sets)
        if self._flush is None:
            self._flush = torch.ones(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
        flush = self._flush

        def timed_calls(n: int) -> list[float]:
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            for s, e in zip(starts, ends):
                flush.sum()
                s.record()
                fn(*next(cycle))
                e.record()
            torch.cuda.synchronize()
            return [s.elapsed_time(e) for s, e in zip(starts, ends)]

        fn(*next(cycle))
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        estimate = statistics.median(timed_calls(5))
        per_call = max((time.perf_counter() - t0) / 5 * 1e3, estimate, 1e-3)  # flush and host time included
        timed_calls(max(1, int(25 / per_call)))
        return statistics.median(timed_calls(max(20, int(self.reps / per_call))))

    def rel_err(self, got: Any, ref: Any) -> float:
        """Largest relative-norm error over the outputs, computed in float64."""
        torch = self.torch
        gots = list(got) if isinstance(got, (tuple, list)) else [got]
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        if len(gots) != len(refs):
            raise ValueError(f"{len(gots)} outputs, torch gives {len(refs)}")
        worst = 0.0
        for i, (g, r) in enumerate(zip(gots, refs)):
            if not isinstance(g, torch.Tensor):
                g = torch.as_tensor(g)
            g = g.to(device=r.device)
            if tuple(g.shape) != tuple(r.shape):
                raise ValueError(f"output #{i} has shape {tuple(g.shape)}, torch gives {tuple(r.shape)}")
            if g.dtype != r.dtype:
                raise ValueError(f"output #{i} has dtype {g.dtype}, torch gives {r.dtype}")
            diff = (g.double() - r.double()).norm().item()
            scale = r.double().norm().item()
            err = diff / scale if scale > 0 else diff
            if not math.isfinite(err):
                return math.inf
            worst = max(worst, err)
        return worst

    # ------------------------------------------------------------------ one row

    def run(self, w: Workload) -> RowResult:
        torch = self.torch
        shape = w.shape_for(self.quick)
        row = RowResult(w, shape)
        sets: list[list[Any]] = []
        try:
            sets = self.input_sets(w, shape)
            with torch.no_grad():
                ref = w.torch_fn(*sets[0])
                torch.cuda.synchronize()
                timed = [(row.eager, w.torch_fn)]
                if not w.has_fusion:
                    row.status = "anchor"
                else:
                    kernel = self._fuser(w, row, sets, ref)
                    if kernel is not None:
                        timed.insert(0, (row.fuser, kernel))
                if "compile" in self.peers and w.compile_peer:
                    compiled = self._compile_peer(w, row, sets, ref)
                    if compiled is not None:
                        timed.append((row.compile, compiled))
                elif w.compile_peer:
                    row.compile.error = "skipped (--no-compile)"
                else:
                    row.compile.error = "not a peer for this workload"
                if w.library is not None:
                    library = self._library_peer(w, row, sets, ref)
                    if library is not None:
                        timed.append((row.library, library))
                self._time_peers(w, timed, sets, shape)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # inputs or the eager reference failed (out of memory, ...)
            if row.status not in BAD_STATUSES:
                row.status = "ERROR"
            row.fuser.error = row.fuser.error or "setup: " + _short(e)
        finally:
            del sets
            try:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            except Exception as e:  # a sticky fault (the caller sees it too): keep this row's story
                row.status = "ERROR"
                row.fuser.error = row.fuser.error or "CUDA: " + _short(e)
        self._ceiling(row)
        return row

    def _fuser(self, w: Workload, row: RowResult, sets: list[list[Any]], ref: Any) -> Callable[..., Any] | None:
        """The compiled fusion once its result has been checked (None: the row says why not).

        The compile time recorded (`compile_seconds["fuser"]`) covers building the fusion with the
        builder API and compiling it, the counterpart of parsing its text and compiling it."""
        import fuser.api as api
        from fuser.passes.pipeline import with_split_k

        t0 = time.perf_counter()
        try:
            kernel = api.compile(w.fusion(self.quick), pipeline=with_split_k(self.pipeline, w.split_k))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # xDSL's ParseError and friends are not all Exceptions
            msg = _short(e)
            row.status = "unsupported" if is_unsupported(msg) else "ERROR"
            row.fuser.error = "compile: " + msg
            return None
        row.compile_seconds["fuser"] = time.perf_counter() - t0
        try:
            got = kernel(*sets[0])
            self.torch.cuda.synchronize()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            row.status, row.fuser.error = "ERROR", "run: " + _short(e)
            return None
        try:
            err = w.check(got, sets[0]) if w.check is not None else self.rel_err(got, ref)
        except ValueError as e:  # wrong shape, dtype or number of outputs
            row.status, row.fuser.error = "FAIL", str(e)
            return None
        del got  # free the output before timing
        row.fuser.rel_err = err
        if not err <= w.rtol:
            row.status, row.fuser.error = "FAIL", f"relative error {err:.3g} > {w.rtol:g}"
            return None
        return kernel

    def _compile_peer(self, w: Workload, row: RowResult, sets: list[list[Any]], ref: Any) -> Callable[..., Any] | None:
        """torch.compile's function once its result has been computed (None: the row says why not)."""
        torch = self.torch
        try:
            torch._dynamo.reset()  # no recompiles or automatic-dynamic shapes carried over from other rows
            compiled = torch.compile(w.torch_fn)
            t0 = time.perf_counter()
            got = compiled(*sets[0])
            torch.cuda.synchronize()
            row.compile_seconds["torch.compile"] = time.perf_counter() - t0
            row.compile.rel_err = self.rel_err(got, ref)
            del got
        except Exception as e:
            row.compile.error = _short(e)
            return None
        return compiled

    def _library_peer(self, w: Workload, row: RowResult, sets: list[list[Any]], ref: Any) -> Callable[..., Any] | None:
        """The workload's hand-written library function (Liger-Kernel's) once its result has been
        checked on copies of the inputs (such kernels may write into them); None: not installed
        or wrong (the row's library cell says which)."""
        name, factory = w.library
        try:
            fn = factory(self.torch)
        except ImportError as e:
            row.library.error = f"{name} is not installed ({_short(e, 120)})"
            return None
        try:
            row.library.rel_err = self.rel_err(fn(*[x.clone() for x in sets[0]]), ref)
        except Exception as e:
            row.library.error = _short(e)
            return None
        if not row.library.rel_err <= w.rtol:
            row.library.error = f"differs from eager by {row.library.rel_err:.3g}; not timed"
            return None
        return fn

    def _time_peers(self, w: Workload, timed: list[tuple[PeerResult, Callable[..., Any]]], sets: list[list[Any]],
                    shape: Shape) -> None:
        """Time each (result, function). Tensor-core rows run two rounds, the second in the
        opposite order, and keep each peer's faster median: the SM clock drops under sustained
        tensor-core load, so whichever peer ran first would otherwise get the boost clock."""
        rounds = 2 if w.unit == "TFLOP/s" else 1
        for r in range(rounds):
            for res, fn in (timed if r % 2 == 0 else timed[::-1]):
                if res.error:
                    continue
                try:
                    ms = self.time_ms(fn, sets)
                except Exception as e:
                    res.ms, res.rate, res.error = None, None, "timing: " + _short(e)
                    continue
                res.ms = ms if res.ms is None else min(res.ms, ms)
                res.rate = rate_of(w, shape, res.ms)

    def _ceiling(self, row: RowResult) -> None:
        w = row.workload
        if row.fuser.rate is None and row.status == "anchor":
            rate = row.eager.rate
        else:
            rate = row.fuser.rate
        if rate is None:
            return
        if w.unit == "TFLOP/s":
            row.pct_ceiling = 100.0 * rate / self.peak_tflops
        elif self.copy_gbps:
            row.pct_ceiling = 100.0 * rate / self.copy_gbps


# ============================================================================ the run


def cuda_context_problem(torch: Any) -> str | None:
    """None while the CUDA context still works; else why not (a kernel fault is sticky)."""
    try:
        torch.cuda.synchronize()
        return None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:
        return _short(e, 300)


def _row_summary(row: RowResult) -> str:
    """'ok: fuser 2952 GB/s, eager 2818 (1.05x)' for the progress log."""
    parts = [row.status]
    unit = row.workload.unit
    for name, peer in (("fuser", row.fuser), ("eager", row.eager), ("compile", row.compile)):
        if peer.rate is not None:
            ratio = row.ratio(peer) if peer is not row.fuser else None
            parts.append(f"{name} {peer.rate:.1f} {unit}" + (f" ({ratio:.2f}x)" if ratio else ""))
    if row.fuser.error:
        parts.append(row.fuser.error[:120])
    return ", ".join(parts)


def run_all(bench: Any, todo: Sequence[Workload], anchor: Workload | None = None,
            on_row: Callable[[list[RowResult]], None] | None = None) -> list[RowResult]:
    """Run every workload, never aborting: an unexpected harness error becomes that row's ERROR,
    and once the CUDA context is lost (a kernel fault is sticky) the remaining rows are reported
    as not run, with the row that lost it, instead of all failing the same way. Each finished
    row is logged with its numbers and what is left, and `on_row(rows so far)` runs (the CLI
    writes its JSON there, so a crash keeps what was measured)."""
    rows: list[RowResult] = []
    lost: str | None = None
    quick = getattr(bench, "quick", False)
    for i, w in enumerate(todo, 1):
        shape = w.shape_for(quick)
        if lost is not None:
            rows.append(RowResult(w, shape, status="ERROR", fuser=PeerResult(error=f"not run: {lost}")))
            continue
        bench.log(f"[{i}/{len(todo)}] {w.name} {fmt_shape(shape)} ...")
        t0 = time.perf_counter()
        try:
            row = bench.run(w)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            row = RowResult(w, shape, status="ERROR", fuser=PeerResult(error="harness: " + _short(e)))
        if w is anchor:
            bench.copy_gbps = row.eager.rate
            bench._ceiling(row)
        rows.append(row)
        bench.log(f"      {_row_summary(row)}; {time.perf_counter() - t0:.1f} s; {len(todo) - i} left")
        if on_row is not None:
            on_row(rows)
        problem = cuda_context_problem(bench.torch)
        if problem is not None:
            lost = (f"the CUDA context was lost during {w.name} ({problem}); "
                    f"rerun the rest with --filter")
            bench.log(f"      {lost}")
    return rows

