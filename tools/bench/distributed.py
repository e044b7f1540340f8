"""`fuser-bench --models --distributed N`: the models trained data-parallel under torch.distributed
(DDP and FSDP2), one process per GPU over NCCL, by eager PyTorch, Inductor and fuser.

    fuser-bench --models --distributed 4 --filter gpt2             # N = 4, 2, 1 GPUs
    fuser-bench --models --distributed 2 --device cpu --size tiny --source own  # gloo, reference interpreter

Method. Every run trains on the same global batch: N_max micro-batches of the model's batch per
step (N_max = the --distributed N), split over N ranks, each rank taking N_max / N of them with
gradient accumulation (DDP's no_sync, FSDP2's set_requires_gradient_sync on all but the last).
So every world size computes the same loss curve (the one-GPU run is the reference), every
kernel has the same shapes at every N (the compile caches serve the smaller runs), and the step
time at N GPUs against one GPU is strong scaling: efficiency = t(1) / (N * t(N)).

The world sizes run largest first (N_max, then halving down to 1), each a `torchrun`
(`python -m torch.distributed.run --standalone`) of this module. The compile caches are fresh
for the largest run (unless --warm-caches): there every fusion is compiled by one rank and
loaded by the others (fuser's disk cache holds a build lock per fusion), which the table's
"compiled" column shows as the fusions each rank compiled against the distinct fusions of one
rank. The smaller runs find the caches warm, as a job restarted on fewer GPUs would.

Per (model, wrap, peer, N): the loss curve (CURVE_STEPS steps, the mean over all ranks), its
distance from the one-GPU run's (model_bench.curve_error; over CURVE_RTOL fails the row), the
first step's wall time (compile included), and the step time, the median over timed steps of
the slowest rank's CUDA-event (or wall-clock) times. NVLink multicast stays off in every rank
(NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1).

Finding trouble: FUSER_BENCH_DIST_LOGS=DIR keeps each world size's rank results and torchrun
log (every rank's output) in DIR/world<N>/; FUSER_BENCH_STACKS_AFTER=S makes every rank print
all its threads' stacks every S seconds; --timeout stops a world size's ranks.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

from .model_bench import CACHE_VARS, CURVE_BATCHES, CURVE_RTOL, CURVE_STEPS, LR, MODEL_NAMES, curve_error, \
    fresh_caches, select_models
from .timing import _short

WRAPS = ("ddp", "fsdp2")
PEERS = ("eager", "inductor", "fuser")
# set in every rank, whatever the caller's environment (the GPU machines' rule: see KINDS.md)
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


# ============================================================================ one rank


def world_sizes(n: int) -> list[int]:
    """n, n/2, ... 1 (n a power of two) or n and 1."""
    out, w = [], n
    while w >= 1:
        out.append(w)
        if w % 2:
            break
        w //= 2
    return out if out[-1] == 1 else out + [1]


def _wrap(model: Any, wrap: str, device: Any) -> Any:
    """The model under DDP, or FSDP2 (fully_shard on each block of every ModuleList, then the root)."""
    import torch

    if wrap == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return DDP(model, device_ids=[device] if device.type == "cuda" else None)
    from torch.distributed.fsdp import fully_shard

    for m in list(model.modules()):
        if isinstance(m, torch.nn.ModuleList):
            for block in m:
                fully_shard(block)
    return fully_shard(model)


def _grad_sync(wrapped: Any, wrap: str, sync: bool) -> Any:
    """A context in which backward reduces gradients across ranks only if `sync`."""
    if wrap == "ddp":
        return contextlib.nullcontext() if sync else wrapped.no_sync()
    wrapped.set_requires_gradient_sync(sync)
    return contextlib.nullcontext()


def _compiled(peer: str, wrapped: Any, pipeline: str) -> tuple[Any, Any]:
    import torch

    torch._dynamo.reset()
    if peer == "eager":
        return wrapped, None
    if peer == "inductor":
        return torch.compile(wrapped, dynamic=False), None
    import fuser.torch as ft

    be = ft.backend(pipeline=pipeline)
    return torch.compile(wrapped, backend=be, dynamic=False), be


def train_run(name: str, wrap: str, peer: str, a: argparse.Namespace) -> dict[str, Any]:
    """One (model, wrap, peer) on this rank: its loss curve (the mean over ranks), first step and
    step times, and fuser's compile counts."""
    import torch
    import torch.distributed as dist

    from . import models

    rank, world = dist.get_rank(), dist.get_world_size()
    cuda = a.device == "cuda"
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    accum = a.micro_batches // world
    model, make_batch = models.build(name, a.size, source=a.source, dtype=dtype, device=device, seed=0)
    wrapped = _wrap(model, wrap, device)
    fn, be = _compiled(peer, wrapped, a.pipeline)
    opt = torch.optim.AdamW(model.parameters(), lr=LR)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    def step(i: int) -> Any:
        """One optimizer step over this rank's share of global batch i % CURVE_BATCHES; its mean loss."""
        first = (i % CURVE_BATCHES) * a.micro_batches + rank * accum
        total = torch.zeros((), device=device)
        for j in range(accum):
            batch = make_batch(1000 + first + j)
            with _grad_sync(wrapped, wrap, j == accum - 1):
                loss = models.loss(fn, batch)
                (loss / accum).backward()
            total += loss.detach().float()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return total / accum

    out: dict[str, Any] = {"model": name, "wrap": wrap, "peer": peer, "world": world, "rank": rank,
                           "accumulate": accum}
    sync()
    t0 = time.perf_counter()
    losses = [step(0)]
    sync()
    out["first_s"] = time.perf_counter() - t0
    losses += [step(i) for i in range(1, a.curve_steps)]
    curve = torch.stack(losses)
    dist.all_reduce(curve)  # SUM (gloo has no AVG)
    out["curve"] = (curve / world).tolist()
    for i in range(a.warmup):
        step(i)
    dist.barrier()
    times = []
    for i in range(a.timed):
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            step(i)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        else:
            t0 = time.perf_counter()
            step(i)
            times.append((time.perf_counter() - t0) * 1e3)
    out["ms"] = statistics.median(times) if times else None
    if be is not None:
        st = be.stats
        out["fuser"] = {"regions": st.regions,
                        "distinct": len({r._key() for r in be.regions() if r.device == "cuda"}),
                        "compiled": st.fusions_compiled, "loaded": st.fusions_loaded,
                        "compile_errors": st.compile_errors, "torch_calls": st.torch_calls,
                        "gpu_calls": st.gpu_calls, "reference_calls": st.reference_calls,
                        # (0 under DDP: its graph split hands the attention its mask as an input)
                        "causal_masks": st.causal_masks}
    return out


def rank_main(argv: Sequence[str]) -> int:
    """A rank's process (under torchrun): every (model, wrap, peer) in turn; results into --out."""
    import datetime

    import torch
    import torch.distributed as dist

    a = worker_parser().parse_args(argv)
    os.environ.update(NO_MULTICAST)
    if a.stacks_after:  # a rank that seems stuck: every thread's stack into the log, again and again
        faulthandler.dump_traceback_later(a.stacks_after, repeat=True)
    if a.device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if a.device == "cuda" else "gloo", timeout=datetime.timedelta(seconds=a.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    if a.micro_batches % world:
        print(f"fuser-bench: error: --micro-batches {a.micro_batches} is not a multiple of the world size {world}",
              file=sys.stderr, flush=True)
        dist.destroy_process_group()
        return 2
    results = []
    for name in a.models.split(","):
        for wrap in a.wraps.split(","):
            for peer in a.peers.split(","):
                t0 = time.perf_counter()
                try:
                    r = train_run(name, wrap, peer, a)
                except Exception as e:
                    r = {"model": name, "wrap": wrap, "peer": peer, "world": world, "rank": rank,
                         "error": _short(e, 300)}
                r["wall_s"] = time.perf_counter() - t0
                results.append(r)
                if rank == 0 or r.get("error"):
                    print(f"[N={world}] {name} {wrap} {peer}: " + (f"rank {rank}: {r['error']}" if r.get("error") else
                          f"{r['ms']:.1f} ms/step, first step {r['first_s']:.1f} s") + f"; {r['wall_s']:.0f} s",
                          file=sys.stderr, flush=True)
                with open(os.path.join(a.out, f"rank{rank}.json"), "w") as f:
                    json.dump(results, f)
                if r.get("error"):
                    # the other ranks may wait in a collective for this one until the timeout:
                    # exit, and torchrun stops them (this world size's later runs are lost)
                    os._exit(3)
                if a.device == "cuda":
                    torch.cuda.empty_cache()
    dist.barrier()
    dist.destroy_process_group()
    return 0


def worker_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fuser.tools.bench.distributed")
    p.add_argument("--models", default="gpt2")
    p.add_argument("--wraps", default=",".join(WRAPS))
    p.add_argument("--peers", default=",".join(PEERS))
    p.add_argument("--size", default="bench")
    p.add_argument("--source", default="auto")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--dtype", default="bf16", choices=("bf16", "f32"))
    p.add_argument("--micro-batches", type=int, default=1, help="micro-batches in the global batch (N_max)")
    p.add_argument("--curve-steps", type=int, default=CURVE_STEPS)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--timed", type=int, default=10)
    p.add_argument("--pipeline", default="default")
    p.add_argument("--pg-timeout", type=int, default=900, help="collective timeout in seconds")
    p.add_argument("--stacks-after", type=float, default=0,
                   help="print every thread's stack every S seconds (finding a hang)")
    p.add_argument("--out", required=True, help="folder for rank<i>.json")
    return p


# ============================================================================ the launcher


def add_distributed_args(p: argparse.ArgumentParser) -> None:
    """`--models --distributed N` and its options (distributed.py)."""
    p.add_argument("--distributed", type=int, metavar="N",
                   help="with --models: train data-parallel on N, N/2, ... 1 GPUs (DDP and FSDP2 over NCCL), "
                        "eager, Inductor and fuser; step time, scaling efficiency, loss against one GPU")
    p.add_argument("--wraps", default="ddp,fsdp2", help="with --distributed: ddp, fsdp2 or both (default)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="with --distributed: cpu runs gloo ranks and fuser's reference interpreter")
    p.add_argument("--timeout", type=float, metavar="S",
                   help="with --distributed: stop a world size's ranks after S seconds (its rows say so)")



def launch(world: int, worker_args: Sequence[str], out_dir: str, timeout: float | None = None) -> list[dict[str, Any]]:
    """Run `world` ranks through torchrun, stopped after `timeout` seconds; every rank's results,
    and an entry with rank None and the reason when torchrun failed. Rank 0's progress lines
    ("[N=...] ...") pass through to stderr as they come."""
    os.makedirs(out_dir, exist_ok=True)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={world}",
           "-m", "fuser.tools.bench.distributed", *worker_args, "--out", out_dir]
    env = dict(os.environ, **NO_MULTICAST)
    # its own process group, so that a timeout stops the ranks too, not only torchrun
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    stopped = threading.Event()

    def stop() -> None:
        # SIGTERM first: torchrun starts each rank in a session of its own, out of the group's
        # reach, and stops them itself on SIGTERM (a SIGKILL of the group left them running)
        stopped.set()
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)

    lines: list[str] = []

    def read() -> None:  # rank 0's progress lines pass through as they come
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("[N="):
                print("  " + line.rstrip(), file=sys.stderr, flush=True)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        stop()
        proc.wait()
    # a process outside the group (a compile pool that left it) may hold the pipe open: do not wait on it
    reader.join(timeout=5)
    with open(os.path.join(out_dir, "torchrun.log"), "w") as f:
        f.writelines(lines)
    if stopped.is_set():
        failure = f"stopped after {timeout:g} s"
    elif proc.returncode:
        failure = f"torchrun exited with {proc.returncode}: {_last_error(''.join(lines))}"
    else:
        failure = None
    results = []
    for rank in range(world):
        try:
            with open(os.path.join(out_dir, f"rank{rank}.json")) as f:
                results += json.load(f)
        except (OSError, ValueError):
            pass
    if failure:
        results.append({"world": world, "rank": None, "error": failure})
    return results


def _last_error(log: str) -> str:
    """The reason a torchrun failed: a rank's own error line, else the last Python exception
    line, else the log's last line."""
    lines = [ln for ln in log.strip().splitlines() if ln.strip()]
    ours = [ln for ln in lines if "fuser-bench: error:" in ln]
    raised = [ln for ln in lines if re.search(r"\b[A-Z]\w*(Error|Exception): ", ln)]
    return _short((ours or raised or lines or ["(no output)"])[-1].split("fuser-bench: error: ")[-1], 300)


def combine(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (model, wrap, peer, world) from the ranks' results: the slowest rank's step
    time, the curve (equal on every rank), each rank's compile counts; then each row's step time
    against the one-GPU run's (efficiency) and Inductor's, and its curve against the one-GPU run's."""
    rows: dict[tuple, dict[str, Any]] = {}
    for r in results:
        if r.get("rank") is None:
            continue
        k = (r["model"], r["wrap"], r["peer"], r["world"])
        row = rows.setdefault(k, {"model": k[0], "wrap": k[1], "peer": k[2], "world": k[3], "ranks": {}})
        row["ranks"][r["rank"]] = r
    out = []
    for k, row in rows.items():
        ranks = [row["ranks"][i] for i in sorted(row["ranks"])]
        errors = [r["error"] for r in ranks if r.get("error")]
        if len(ranks) < row["world"]:
            errors.append(f"{row['world'] - len(ranks)} rank(s) reported nothing")
        row["error"] = errors[0] if errors else None
        ok = [r for r in ranks if not r.get("error")]
        row["ms"] = max(r["ms"] for r in ok) if ok and not errors else None
        row["ms_per_rank"] = [r["ms"] for r in ok]
        row["first_s"] = max(r["first_s"] for r in ok) if ok else None
        row["curve"] = ok[0]["curve"] if ok else None
        fuser = [r["fuser"] for r in ok if "fuser" in r]
        row["fuser"] = fuser or None  # per rank
        # on the GPU: the fusions each rank compiled, and the distinct fusions of one rank
        row["compiled"] = [f["compiled"] for f in fuser] if fuser and fuser[0]["distinct"] else None
        row["distinct"] = fuser[0]["distinct"] if fuser else None
        del row["ranks"]
        out.append(row)
    index = {(r["model"], r["wrap"], r["peer"], r["world"]): r for r in out}
    for r in out:
        one = index.get((r["model"], r["wrap"], r["peer"], 1))
        ind = index.get((r["model"], r["wrap"], "inductor", r["world"]))
        r["efficiency"] = one["ms"] / (r["world"] * r["ms"]) if one and one["ms"] and r["ms"] else None
        r["vs_inductor"] = ind["ms"] / r["ms"] if ind and ind["ms"] and r["ms"] else None
        r["curve_rel"] = curve_error(r["curve"], one["curve"]) if one and one["curve"] and r["curve"] else None
        r["status"] = "ERROR" if r["error"] else "FAIL" if r["curve_rel"] is not None and \
            not r["curve_rel"] <= CURVE_RTOL else "ok"
    return sorted(out, key=lambda r: (MODEL_NAMES.index(r["model"]) if r["model"] in MODEL_NAMES else 99,
                                      r["wrap"], PEERS.index(r["peer"]), r["world"]))


def format_table(rows: Sequence[dict[str, Any]], markdown: bool = False) -> str:
    head = ["model", "wrap", "peer", "GPUs", "status", "step ms", "efficiency", "vs inductor", "1st s",
            "loss vs 1 GPU", "compiled per rank / distinct"]

    def f(v: Any, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    cells = []
    for r in rows:
        compiled = "-" if r["compiled"] is None else f"{'+'.join(map(str, r['compiled']))} / {r['distinct']}"
        cells.append([r["model"], r["wrap"], r["peer"], str(r["world"]), r["status"], f(r["ms"], ".1f"),
                      f(r["efficiency"], ".0%"), "-" if r["vs_inductor"] is None else f"{r['vs_inductor']:.2f}x",
                      f(r["first_s"], ".1f"), f(r["curve_rel"], ".1e"), compiled])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(c) + " |" for c in cells])
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(head)]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() for line in [head] + cells)


def run(n: int, names: Sequence[str], wraps: Sequence[str] = WRAPS, peers: Sequence[str] = PEERS,
        size: str = "bench", source: str = "auto", device: str = "cuda", dtype: str = "bf16",
        curve_steps: int = CURVE_STEPS, warmup: int = 2, timed: int = 10, pipeline: str = "default",
        timeout: float | None = None, log: Any = None) -> list[dict[str, Any]]:
    """Every world size of `world_sizes(n)`, largest first; the combined rows."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    args = ["--models", ",".join(names), "--wraps", ",".join(wraps), "--peers", ",".join(peers), "--size", size,
            "--source", source, "--device", device, "--dtype", dtype, "--micro-batches", str(n),
            "--curve-steps", str(curve_steps), "--warmup", str(warmup), "--timed", str(timed),
            "--pipeline", pipeline]
    if os.environ.get("FUSER_BENCH_STACKS_AFTER"):
        args += ["--stacks-after", os.environ["FUSER_BENCH_STACKS_AFTER"]]
    results = []
    keep = os.environ.get("FUSER_BENCH_DIST_LOGS")  # a folder for each world size's torchrun.log
    with tempfile.TemporaryDirectory(prefix="fuser-bench-dist-") as tmp:
        for world in world_sizes(n):
            log(f"{world} rank(s) ...")
            t0 = time.perf_counter()
            out_dir = os.path.join(keep or tmp, f"world{world}")
            got = launch(world, args, out_dir, timeout)
            results += got
            for r in got:
                if r.get("rank") is None:
                    log(f"  {world} rank(s): {r['error']}")
            log(f"  {world} rank(s) done in {time.perf_counter() - t0:.0f} s")
    return combine(results)


def run_from_args(args: argparse.Namespace) -> int:
    """`fuser-bench --models --distributed N` (model_bench's options: --filter, --size, --source,
    --quick, --no-compile, --json, --markdown, --warm-caches, --pipeline; plus --device, --wraps)."""
    n = args.distributed
    if n < 1:
        print(f"fuser-bench: --distributed takes a number of GPUs >= 1, got {n}", file=sys.stderr)
        return 2
    names = select_models(args.filter) if args.filter else ["gpt2", "llama"]
    names = [m for m in names if m in ("gpt2", "llama", "bert_layer", "mlp")]
    if not names:
        print(f"fuser-bench: no model matches --filter {args.filter!r}", file=sys.stderr)
        return 2
    wraps = [w.strip() for w in getattr(args, "wraps", ",".join(WRAPS)).split(",") if w.strip()]
    if not wraps or any(w not in WRAPS for w in wraps):
        print(f"fuser-bench: --wraps takes {', '.join(WRAPS)}, got {args.wraps!r}", file=sys.stderr)
        return 2
    device = getattr(args, "device", "cuda")
    if device == "cuda":
        import torch

        have = torch.cuda.device_count()
        if have < n:
            print(f"fuser-bench: --distributed {n} needs {n} GPUs; this machine has {have}", file=sys.stderr)
            return 2
    peers = [p for p in PEERS if not (p == "inductor" and args.no_compile)]
    quick = args.quick
    if getattr(args, "warm_caches", False):
        caches, set_here, tmp = {v: os.environ.get(v, "(default)") for v in CACHE_VARS}, [], None
    else:
        caches, set_here, tmp = fresh_caches()
    try:
        rows = run(n, names, wraps, peers, size=getattr(args, "size", "bench"), source=getattr(args, "source", "auto"),
                   device=device, dtype="bf16" if device == "cuda" else "f32", warmup=1 if quick else 2,
                   timed=5 if quick else 10, pipeline=getattr(args, "pipeline", "default"),
                   timeout=getattr(args, "timeout", None))
    finally:
        for var in set_here:
            os.environ.pop(var, None)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "args": {"n": n, "models": names, "wraps": wraps, "peers": peers,
                                              "size": getattr(args, "size", "bench"), "device": device,
                                              "caches": caches}}, f, indent=1)
    print(f"# {n} ranks max, {device}; same global batch ({n} micro-batches) at every N; "
          f"efficiency = t(1) / (N t(N)); vs inductor = inductor ms / peer ms; loss vs 1 GPU = "
          f"curve error against the one-rank run (FAIL over {CURVE_RTOL:g}); compiled = fusions each rank "
          f"compiled / distinct fusions of one rank")
    print(format_table(rows, markdown=args.markdown))
    sys.stdout.flush()
    return 1 if any(r["status"] != "ok" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(rank_main(sys.argv[1:]))
