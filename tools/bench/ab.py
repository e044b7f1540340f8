"""A/B timing of fuser pipelines on the same workloads: the two (or more) compiled variants of
each workload are timed in alternating rounds (A B A B ...), so that clock and thermal drift
fall on both alike; the report gives each variant's median over the rounds and B/A.

    python3 -m fuser.tools.bench.ab --pipelines 'default{matmul_smem_reuse=0}' default \\
        [--filter REGEX] [--matmul 1536x1280x4096 ...] [--layer-norm 1024x55296 ...] [--rounds 5]

Workloads: fuser-bench's workloads matching --filter, plus plain bf16 matmuls of the given
MxNxK shapes and f32 layer norms of the given RxC shapes. Every variant's output is checked against torch before it is timed.
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
    args = p.parse_args(argv)
    if len(args.pipelines) < 2:
        p.error("give at least two pipelines")
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


if __name__ == "__main__":
    sys.exit(main())

