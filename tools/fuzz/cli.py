"""The `fuser-fuzz` command: a run of random cases (runner.py), or `--explain SEED` (explain.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import runner
from .explain import explain


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fuser-fuzz", description=runner.__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=200, help="how many random fusions (default 200)")
    p.add_argument("--seed", type=int, default=0, help="first seed (case i uses seed + i)")
    p.add_argument("--gpu", action="store_true", help="run every kernel on the GPU (else: the reference interpreter)")
    p.add_argument("--save-failures", type=Path, help="write each failing case, shrunk, as a .mlir reproducer here")
    p.add_argument("--seconds", type=float, help="start no case after this many seconds, then print the summary "
                                                  "(for a run inside a time limit: a killed run prints nothing)")
    p.add_argument("--verify-each", choices=("true", "false"),
                   help="verify the IR after every pass (default: true on the CPU, false with --gpu)")
    p.add_argument("--explain", type=int, metavar="SEED",
                   help="on the GPU: which schedule options make case SEED fail, its kernels, and the first "
                        "value that goes wrong (tools/fuzz/explain.py)")
    p.add_argument("--options", help="with --explain: the schedule options to bisect under (default: the case's own)")
    args = p.parse_args(argv)
    if args.explain is not None:
        if problem := runner.gpu_problem():
            print(f"fuser-fuzz: --explain runs the case on the GPU: {problem}", file=sys.stderr)
            return 2
        explain(args.explain, options=args.options)
        return 0
    if args.gpu and (problem := runner.gpu_problem()):
        print(f"fuser-fuzz: {problem}", file=sys.stderr)
        return 2
    verify = None if args.verify_each is None else args.verify_each == "true"
    counts = runner.run(args.cases, args.seed, args.gpu, args.save_failures, seconds=args.seconds,
                        verify_each=verify)
    return 1 if counts["mismatch"] or counts["crash"] else 0
