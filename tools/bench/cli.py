"""fuser-bench's command line: argument parsing and `main` (see the package docstring for usage)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Sequence

from . import timing
from .report import draw_png, environment, format_table, list_workloads, notes, write_json
from .timing import BAD_STATUSES, DEFAULT_PEAK_TFLOPS, L2_BYTES, NO_GPU_PREFIX, run_all
from .distributed import add_distributed_args
from .workloads import WORKLOADS, fmt_shape, select

DESCRIPTION = "fuser-bench: fusions side by side with torch eager and torch.compile, on one GPU, in one run."


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fuser-bench", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--filter", metavar="REGEX", help="run workloads whose name or family matches REGEX")
    p.add_argument("--quick", action="store_true", help="small shapes, for a smoke run")
    p.add_argument("--list", action="store_true", help="list the workloads and exit (no GPU needed)")
    p.add_argument("--show-mlir", action="store_true", help="print each selected workload's fusion IR and exit")
    p.add_argument("--json", metavar="PATH", help="write every number, the device and versions as JSON")
    p.add_argument("--png", metavar="PATH", help="draw a grouped bar chart (needs matplotlib)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer (it compiles for minutes)")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")
    p.add_argument("--rep-ms", type=int, default=100, help="timing budget per measurement in ms (default 100)")
    p.add_argument("--pipeline", default="default",
                   help="fuser's pass pipeline, e.g. 'default{matmul_smem_reuse=0}' (default: default)")
    p.add_argument("--peak-tflops", type=float, default=DEFAULT_PEAK_TFLOPS,
                   help="ceiling for TFLOP/s rows (default: Hopper bf16 dense, 989)")
    p.add_argument("--models", action="store_true",
                   help="whole models (gpt2, llama, bert_layer, mlp) trained and run by eager, Inductor and fuser "
                        "(model_bench.py); --filter, --quick, --no-compile, --json, --markdown, --list apply")
    p.add_argument("--size", choices=("bench", "tiny"), default="bench", help="with --models: model size")
    p.add_argument("--source", choices=("auto", "hf", "own"), default="auto",
                   help="with --models: Hugging Face modules (hf), this package's (own), or hf when importable")
    p.add_argument("--warm-caches", action="store_true",
                   help="with --models: keep the compile caches as found (default: fresh ones)")
    p.add_argument("--modes", default="train,infer", help="with --models: comma-separated, train and/or infer")
    p.add_argument("--kernels", metavar="DIR",
                   help="with --models: profile every peer's step kernel by kernel into the JSON, and write fuser's "
                        "region texts to DIR/regions (python -m fuser.tools.bench.kernel_report reads both)")
    p.add_argument("--compile", action="store_true",
                   help="compile time per example (cold, warm, from disk) and a cached call's host time "
                        "(compile_bench.py); --filter applies")
    p.add_argument("--reps", type=int, default=3, help="with --compile: cold compiles per fusion, the best kept")
    p.add_argument("--calls", type=int, default=2000, help="with --compile: calls per timing round")
    p.add_argument("--mock-launch", action="store_true",
                   help="with --compile and no GPU: time the cached call's Python up to a mocked driver call")
    add_distributed_args(p)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.compile:
        from .compile_bench import run as run_compile

        return run_compile(args)
    if args.models and args.distributed is not None:
        from .distributed import run_from_args as run_distributed

        return run_distributed(args)
    if args.models:
        from .model_bench import run_from_args  # imports torch only when it runs

        return run_from_args(args)
    if args.distributed is not None:
        print("fuser-bench: --distributed goes with --models", file=sys.stderr)
        return 2
    try:
        selected = select(args.filter)
    except re.error as e:
        print(f"fuser-bench: bad --filter regex: {e}", file=sys.stderr)
        return 2
    if args.list:
        print(list_workloads(selected))
        return 0
    if args.show_mlir:
        for w in selected:
            text = w.mlir_text(args.quick)
            print(f"// {w.name} ({fmt_shape(w.shape_for(args.quick))}, {w.dtype})")
            print(text + "\n" if text is not None else "// torch-only anchor: no fusion\n")
        return 0
    if not selected:
        print(f"fuser-bench: no workload matches --filter {args.filter!r} (see --list)", file=sys.stderr)
        return 2

    problem = timing.gpu_problem()  # looked up on the module, so that tests can replace it
    if problem is not None:
        print(NO_GPU_PREFIX + problem, file=sys.stderr)
        return 2

    peers = ("eager",) if args.no_compile else ("eager", "compile")
    bench = timing.Bench(quick=args.quick, peers=peers, reps=args.rep_ms, peak_tflops=args.peak_tflops,
                         pipeline=args.pipeline)
    torch = bench.torch

    # The copy anchor runs first, always: every GB/s row is reported as a fraction of it.
    anchor = next(w for w in WORKLOADS if w.family == "copy")
    todo = [anchor] + [w for w in selected if w is not anchor]
    env = environment(torch, bench.timer)
    run_args = {"quick": args.quick, "filter": args.filter, "pipeline": args.pipeline, "peers": list(peers),
                "rep_ms": args.rep_ms, "peak_tflops": args.peak_tflops, "l2_rotate_below_bytes": L2_BYTES,
                "torch.compile": "torch.compile(fn) default mode, torch._dynamo.reset() per workload"}

    def save(rows_so_far) -> None:  # after every row: a crash keeps what was measured
        if args.json:
            write_json(args.json, rows_so_far, env, run_args, bench.copy_gbps)

    rows = run_all(bench, todo, anchor, on_row=save)
    if args.json:
        bench.log(f"wrote {args.json}")
    if args.png:
        title = f"fuser vs torch on {env['device']['name']} ({env['date'][:10]}{', quick' if args.quick else ''})"
        why_not = draw_png(args.png, rows, title, bench.copy_gbps)
        bench.log(f"wrote {args.png}" if why_not is None else f"no chart: {why_not}")

    dev = env["device"]
    copy = f"{bench.copy_gbps:.0f} GB/s" if bench.copy_gbps else "n/a"
    print(f"# {dev['name']} ({dev['sms']} SMs), torch {env['versions']['torch']}, "
          f"triton {env['versions']['triton']}, {env['date']}")
    print(f"# timer: {bench.timer}; copy anchor {copy}; ratios = peer time / fuser time (> 1: fuser faster); "
          f"% ceil = fuser over copy bandwidth (GB/s) or {args.peak_tflops:g} TFLOP/s")
    for line in notes(rows):
        print(f"# {line}")
    print(format_table(rows, markdown=args.markdown))
    sys.stdout.flush()
    return 1 if any(r.status in BAD_STATUSES for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
