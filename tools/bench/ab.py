"""A/B timing of fuser pipelines on the same workloads: the two (or more) compiled variants of
each workload are timed in alternating rounds (A B A B ...), so that clock and thermal drift
fall on both alike; the report gives each variant's median over the rounds and B/A.

    python3 -m fuser.tools.bench.ab --pipelines 'default{matmul_smem_reuse=0}' default \\
        [--filter REGEX] [--matmul 1536x1280x4096 ...] [--layer-norm 1024x55296 ...] [--rounds 5]
    python3 -m fuser.tools.bench.ab --pipelines default 'default{matmul_epilogue_work=6}' \\
        --model gpt2 [--size bench|tiny] [--source auto|hf|own] [--steps 3] [--rounds 5]
    python3 -m fuser.tools.bench.ab --pipelines default 'default;partitioner=default' --model gpt2

Workloads: fuser-bench's workloads matching --filter, plus plain bf16 matmuls of the given
MxNxK shapes and f32 layer norms of the given RxC shapes. Every variant's output is checked against torch before it is timed.

With --model, the workload is a whole training step (forward, backward, AdamW) of one of
`fuser-bench --models`' models, bf16: one copy of the model per variant (same weights), each
compiled with `torch.compile(backend=fuser.torch.backend(pipeline=...))`, their first steps'
losses compared, then `--steps` steps of each variant per round. A variant there may add the
backend's keyword options after a `;` (`PIPE;name=value,name=value`, e.g. `partitioner=default`
or `pad_matmuls=false`). A model step's time drifts more
between runs on one machine than most changes move it (eager 49 to 56 ms on one H100 in one
session), so variants of a model are compared only in the same process, this way.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from fuser.tools.bench.workloads import layer_norm, matmul, select


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fuser-bench-ab", description=__doc__.split("\n\n")[0])
    p.add_argument("--pipelines", nargs="+", required=True, metavar="PIPE", help="the variants; the first is A")
    p.add_argument("--filter", metavar="REGEX", help="fuser-bench workloads to include")
    p.add_argument("--matmul", action="append", default=[], metavar="MxNxK", help="a plain bf16 matmul shape")
    p.add_argument("--layer-norm", action="append", default=[], metavar="RxC", help="an f32 layer norm shape")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--rep-ms", type=int, default=100)
    p.add_argument("--model", metavar="NAME", help="time training steps of this fuser-bench --models model instead")
    p.add_argument("--size", choices=("bench", "tiny"), default="bench", help="with --model: the model's size")
    p.add_argument("--source", choices=("auto", "hf", "own"), default="auto", help="with --model: whose modules")
    p.add_argument("--steps", type=int, default=3, help="with --model: steps per variant per round (default 3)")
    args = p.parse_args(argv)
    if len(args.pipelines) < 2:
        p.error("give at least two pipelines")
    if args.rounds < 1 or args.steps < 1:
        p.error("--rounds and --steps must be at least 1")
    if args.model:
        if args.filter or args.matmul or args.layer_norm:
            p.error("--model times a model alone: leave out --filter, --matmul and --layer-norm")
        from fuser.tools.bench.model_bench import MODEL_NAMES
        if args.model not in MODEL_NAMES:
            p.error(f"--model {args.model!r}: the models are {', '.join(MODEL_NAMES)}")
        return model_ab(args.model, args.pipelines, args.rounds, args.steps, args.size, args.source)
    todo = [w for w in select(args.filter) if w.has_fusion] if args.filter else []
    for s in args.matmul:
        try:
            m, n, k = (int(x) for x in s.lower().split("x"))
        except ValueError:
            p.error(f"--matmul {s!r}: expected MxNxK")
        todo.append(matmul("none", (m, n, k), (m, n, k)))
    for s in args.layer_norm:
        try:
            r, c = (int(x) for x in s.lower().split("x"))
        except ValueError:
            p.error(f"--layer-norm {s!r}: expected RxC")
        todo.append(layer_norm((r, c), "f32", (r, c)))
    if not todo:
        p.error("no workloads: give --filter or --matmul")

    import fuser.api as api
    from fuser.tools.bench.timing import Bench

    bench = Bench(peers=(), reps=args.rep_ms)
    print(f"# {bench.torch.cuda.get_device_name()}; {args.rounds} alternating rounds; A = {args.pipelines[0]}")
    head = f"{'workload':40} " + " ".join(f"{'v' + str(i):>9}" for i in range(len(args.pipelines)))
    print(head + "  " + " ".join(f"{'v' + str(i) + '/v0':>7}" for i in range(1, len(args.pipelines))))
    ok = True
    for w in todo:
        shape = w.shape
        sets = bench.input_sets(w, shape)
        ref = w.torch_fn(*sets[0])
        kernels = []
        for pipe in args.pipelines:
            k = api.compile(w.fusion(), pipeline=pipe)
            err = bench.rel_err(k(*sets[0]), ref)
            if not err <= w.rtol:
                print(f"{w.name}: variant {pipe!r} is wrong (relative error {err:.2e})", file=sys.stderr)
                ok = False
            kernels.append(k)
        times: list[list[float]] = [[] for _ in kernels]
        for _ in range(args.rounds):
            for i, k in enumerate(kernels):
                times[i].append(bench.time_ms(k, sets))
        med = [statistics.median(t) for t in times]
        unit = (lambda ms: w.flops(shape) / ms / 1e9) if w.flops else (lambda ms: w.bytes_moved(shape, w.dtype) / ms / 1e6)
        vals = " ".join(f"{unit(m):9.1f}" for m in med)
        ratios = " ".join(f"{med[0] / m:7.3f}" for m in med[1:])
        spread = max((max(t) - min(t)) / statistics.median(t) for t in times)
        print(f"{w.name:40} {vals}  {ratios}   ({w.unit}; round spread {spread:.1%})",
              flush=True)
    return 0 if ok else 1


def backend_variant(text: str) -> tuple[str, dict[str, object]]:
    """'PIPE;name=value,...' -> (PIPE, the backend's keyword options): values true/false are
    booleans, integers are ints, anything else a string."""
    pipe, _, rest = text.partition(";")
    options: dict[str, object] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise SystemExit(f"variant {text!r}: expected name=value after ';', got {item!r}")
        v: object = value.strip()
        if v in ("true", "false"):
            v = v == "true"
        elif v.lstrip("-").isdigit():
            v = int(v)
        options[key.strip()] = v
    return pipe.strip() or "default", options


def model_ab(name: str, pipelines: list[str], rounds: int, steps: int, size: str, source: str) -> int:
    """Alternate training steps of one model compiled with each pipeline; print each variant's
    median step time (CUDA events; CPU wall time without a GPU) and its ratio to the first."""
    import time

    import torch

    import fuser.torch as ft
    from fuser.tools.bench import models
    from fuser.tools.bench.model_bench import LR

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    dtype = torch.bfloat16 if cuda else torch.float32
    # Each variant's backend is its own object: dynamo keeps a compiled frame per backend.
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 8 * len(pipelines))
    variants = []
    batch = None
    for variant in pipelines:
        pipe, options = backend_variant(variant)
        model, make_batch = models.build(name, size, source, dtype=dtype, device=device, seed=0)
        batch = batch or make_batch(0)
        be = ft.backend(pipeline=pipe, **options)
        fn = torch.compile(model, backend=be, dynamic=False)
        variants.append((variant, be, fn, torch.optim.AdamW(model.parameters(), lr=LR)))

    def step(v) -> torch.Tensor:
        _, _, fn, opt = v
        loss = models.loss(fn, batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    label = torch.cuda.get_device_name() if cuda else "CPU (reference interpreter)"
    print(f"# {label}; model {name} ({size}), train step; {rounds} rounds of {steps} steps; A = {pipelines[0]}")
    first = []
    for v in variants:
        t0 = time.perf_counter()
        first.append(float(step(v)))  # compiles
        print(f"# {v[0]}: first step {time.perf_counter() - t0:.1f} s, loss {first[-1]:.6f}, "
              f"{v[1].stats.graphs} graphs, {v[1].stats.regions} regions", flush=True)
        if not v[1].stats.graphs:  # dynamo ran another variant's compiled frames: no A/B
            print(f"{name}: variant {v[0]!r} compiled no graph", file=sys.stderr)
            return 1
    ok = all(abs(f - first[0]) <= 1e-2 * abs(first[0]) for f in first)
    if not ok:
        print(f"{name}: the variants' first losses differ by more than 1%: {first}", file=sys.stderr)
    for v in variants:
        step(v)  # one warm step each after the compile
    times: list[list[float]] = [[] for _ in variants]
    for _ in range(rounds):
        for i, v in enumerate(variants):
            if cuda:
                torch.cuda.synchronize()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(steps):
                    step(v)
                e1.record()
                torch.cuda.synchronize()
                times[i].append(e0.elapsed_time(e1) / steps)
            else:
                t0 = time.perf_counter()
                for _ in range(steps):
                    step(v)
                times[i].append((time.perf_counter() - t0) * 1e3 / steps)
    med = [statistics.median(t) for t in times]
    for i, (pipe, *_rest) in enumerate(variants):
        spread = (max(times[i]) - min(times[i])) / med[i]
        ratio = f"{med[0] / med[i]:6.3f}x" if i else "     A"
        print(f"{pipe:50} {med[i]:9.2f} ms/step  {ratio}  (round spread {spread:.1%})", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

