"""Where a model's training step waits: host time to queue the step, the step with the device's
sync, and the caching allocator's state, round after round, for one tree of fuser:

    python3 -m fuser.tools.bench.step_host gpt2 [--rounds 5] [--steps 5] [--profile 3]

A step whose queueing time equals its synced time is bound by the host (or by a sync inside it);
queueing well below it means the GPU is the bound. Allocated and reserved memory and the number
of cudaMalloc calls per round say whether the step's memory grows (a leak, or a caching pattern
that never settles, shows as a rising reserved size and rising cudaMalloc count). `--profile N`
adds a cProfile of N steps by own time. The model is fuser-bench --models' (bf16 on CUDA, f32 on
the CPU, where the regions run in the reference interpreter). To compare trees of fuser (a commit
against another), run this once per installed tree on one machine, alternating
(tools/gpu_ab_trees.sh).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from typing import Any


def measure(name: str, rounds: int, steps: int, size: str = "bench", source: str = "auto",
            log: Any = print) -> tuple[list[dict[str, float]], Any]:
    """(per round: host ms per step queued and with the sync, allocated and reserved MiB, cudaMalloc
    calls so far; the step function)."""
    import torch

    import fuser.torch as ft
    from fuser.tools.bench import models
    from fuser.tools.bench.model_bench import LR

    cuda = torch.cuda.is_available()
    model, make_batch = models.build(name, size, source, dtype=torch.bfloat16 if cuda else torch.float32,
                                     device="cuda" if cuda else "cpu", seed=0)
    batch = make_batch(0)
    fn = torch.compile(model, backend=ft.backend(), dynamic=False)
    opt = torch.optim.AdamW(model.parameters(), lr=LR)

    def step() -> None:
        models.loss(fn, batch).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    sync = torch.cuda.synchronize if cuda else (lambda: None)
    start = time.perf_counter()
    step()
    sync()
    log(f"# {name}: first step {time.perf_counter() - start:.1f} s")
    for _ in range(3):
        step()
    sync()
    out = []
    for r in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        row = {"queued_ms": (t1 - t0) / steps * 1e3, "step_ms": (t2 - t0) / steps * 1e3}
        if cuda:
            ms = torch.cuda.memory_stats()
            row.update(allocated_mib=torch.cuda.memory_allocated() / 2**20,
                       reserved_mib=torch.cuda.memory_reserved() / 2**20,
                       cuda_mallocs=ms.get("num_device_alloc", 0), alloc_retries=ms.get("num_alloc_retries", 0))
        log(f"round {r}: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))
        out.append(row)
    return out, step


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fuser.tools.bench.step_host", description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a fuser-bench --models model: gpt2, llama, bert_layer, mlp")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=5, help="steps per round")
    p.add_argument("--size", choices=("bench", "tiny"), default="bench")
    p.add_argument("--source", choices=("auto", "hf", "own"), default="auto")
    p.add_argument("--profile", type=int, default=0, metavar="N", help="then cProfile N steps (top 25 by own time)")
    args = p.parse_args(argv)
    _, step = measure(args.model, args.rounds, args.steps, args.size, args.source)
    if args.profile:
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(args.profile):
            step()
        pr.disable()
        pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
