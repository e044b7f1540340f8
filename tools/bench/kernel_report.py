"""Where each peer's step spends its GPU time, kernel by kernel, from `fuser-bench --models --kernels DIR
--json PATH`'s JSON:

    python -m fuser.tools.bench.kernel_report PATH [--top N] [--regions DIR [--floor TB/s]]

Per model, mode and peer: the step's GPU time by kernel category (matmul, attention, fuser's own,
elementwise, reduction, optimizer, copy), then the `top` kernels. With --regions (the DIR/regions
that --kernels wrote), fuser's kernels are named by the ops of their region, and each kernel by
what the planner made of it (compiled here again, on the CPU: no GPU needed). With --floor BW
(e.g. 4.3 for an H200, 3.0 for an H100, in TB/s) also fuser's memory-bound kernels (all but the
matmuls) against their floor, most time above it first: the bytes of every buffer the kernel
takes (its sched.kernel arguments, whole) moved once at BW. A kernel that reads part of a buffer
is charged the whole of it, so the floor is an upper bound on the least time; one far above its
floor is worth reading.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections import defaultdict
from typing import Any

# Kernel-name patterns of PyTorch's, cuBLAS's, cuDNN's and Triton's kernels, first match wins.
CATEGORIES = [
    ("fuser", re.compile(r"^fuser_")),
    ("attention", re.compile(r"flash|fmha|attention|sdpa|cudnn", re.I)),
    ("matmul", re.compile(r"gemm|sm90_xmma|cutlass|nvjet|ampere_|sm80_|Kernel2|splitKreduce", re.I)),
    ("optimizer", re.compile(r"multi_tensor_apply|foreach|adam", re.I)),
    ("copy", re.compile(r"^Memcpy|^Memset|copy|cat_|CatArray", re.I)),
    ("reduction", re.compile(r"reduce|softmax|norm|nll|cross_entropy|welford|per_row|persistent", re.I)),
    ("triton", re.compile(r"^triton_")),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled|pointwise", re.I)),
]


def category(name: str) -> str:
    for cat, pat in CATEGORIES:
        if pat.search(name):
            return cat
    return "other"


KERNEL_RE = re.compile(r"sched\.kernel @(\w+)\(.*\) grid \[([^\]]*)\]")
MEMREF_RE = re.compile(r"memref<([^>]*)>")
ELEM_BYTES = {"i1": 1, "i8": 1, "ui8": 1, "f8E4M3FN": 1, "f8E5M2": 1, "i16": 2, "f16": 2, "bf16": 2,
              "i32": 4, "f32": 4, "i64": 8, "f64": 8}


def argument_bytes(kernel_line: str) -> int:
    """Bytes of the buffers a `sched.kernel` line takes (tensor maps by their memref; shared-memory
    and other non-global arguments are not in its signature)."""
    signature = kernel_line.split(") grid", 1)[0]
    total = 0
    for m in MEMREF_RE.finditer(signature):
        *dims, elem = m.group(1).split(",")[0].split("x")
        total += math.prod(int(d) for d in dims) * ELEM_BYTES.get(elem.strip(), 4)
    return total
SCHEDULE_RE = re.compile(r'fuser\.schedule = "([^"]*)"')


def region_kernels(regions_dir: str, kinds: dict[str, str] | None = None,
                   nbytes: dict[str, int] | None = None) -> dict[str, str]:
    """fuser kernel name -> a short description: the region's ops and the planner's schedule; `kinds`
    (when given) gets each kernel's kind: matmul (wgmma), rows (a persistent row schedule),
    reduction or pointwise; `nbytes` (when given) its argument bytes (`argument_bytes`)."""
    kinds = {} if kinds is None else kinds
    nbytes = {} if nbytes is None else nbytes
    from fuser import api as fa

    out: dict[str, str] = {}
    for fname in sorted(os.listdir(regions_dir)):
        if not fname.endswith(".mlir"):
            continue
        text = open(os.path.join(regions_dir, fname)).read()
        ops = defaultdict(int)
        for m in re.finditer(r"= \"?fusion\.([a-z_]+)", text):
            ops[m.group(1)] += 1
        summary = " ".join(f"{k}x{v}" if v > 1 else k for k, v in sorted(ops.items()))
        try:
            sched = fa.compile(text).ir("sched")
        except Exception as e:  # a region that no longer compiles: still name it by its ops
            sched = ""
            summary += f" [compile: {type(e).__name__}]"
        kernel = None
        for line in sched.splitlines():
            m = KERNEL_RE.search(line)
            if m:
                how = SCHEDULE_RE.search(line)
                kernel = m.group(1)
                kinds[kernel] = "rows" if how and "persistent" in how.group(1) else "pointwise"
                nbytes[kernel] = argument_bytes(line)
                out[kernel] = f"grid [{m.group(2)}] {how.group(1) if how else ''} | {summary}"
            elif kernel and "sched.wgmma.mma_async" in line:
                kinds[kernel] = "matmul"
            elif kernel and kinds[kernel] == "pointwise" and "sched.shfl_xor" in line:
                kinds[kernel] = "reduction"
    return out


def report(doc: dict[str, Any], top: int, names: dict[str, str], kinds: dict[str, str] | None = None) -> list[str]:
    lines = []
    for row in doc["rows"]:
        for peer, cell in row["peers"].items():
            ks = cell.get("kernels")
            if not ks:
                continue
            total = sum(k["ms"] for k in ks)
            by_cat: dict[str, float] = defaultdict(float)
            for k in ks:
                by_cat[category(k["name"])] += k["ms"]
            cats = ", ".join(f"{c} {ms:.2f}" for c, ms in sorted(by_cat.items(), key=lambda kv: -kv[1]))
            lines.append(f"== {row['model']} {row['mode']} {peer}: {total:.2f} ms GPU per step "
                         f"({sum(k['calls'] for k in ks):.0f} launches): {cats}")
            if kinds:
                by_kind: dict[str, float] = defaultdict(float)
                for k in ks:
                    if category(k["name"]) == "fuser":
                        by_kind[kinds.get(k["name"], "unknown")] += k["ms"]
                if by_kind:
                    lines.append("   fuser's kernels by kind: " + ", ".join(
                        f"{kind} {ms:.2f}" for kind, ms in sorted(by_kind.items(), key=lambda kv: -kv[1])))
            for k in ks[:top]:
                desc = names.get(k["name"], k.get("op") or "")
                lines.append(f"  {k['ms']:8.3f} ms {k['calls']:5.0f}x  {k['name'][:70]:70s} {desc[:90]}")
    return lines


def floor_report(doc: dict[str, Any], top: int, kinds: dict[str, str], nbytes: dict[str, int],
                 tb_per_s: float) -> list[str]:
    """Fuser's kernels other than matmuls, per model, mode and peer, against their floor: the
    `top` with the most time above it."""
    lines = []
    for row in doc["rows"]:
        for peer, cell in row["peers"].items():
            ks = [k for k in cell.get("kernels") or [] if k["name"] in nbytes and kinds.get(k["name"]) != "matmul"]
            if not ks:
                continue
            rows = []
            for k in ks:
                floor = nbytes[k["name"]] * k["calls"] / (tb_per_s * 1e12) * 1e3
                rows.append((k["ms"] - floor, k, floor))
            rows.sort(key=lambda r: -r[0])
            lines.append(f"== {row['model']} {row['mode']} {peer}: fuser's memory-bound kernels {sum(r[1]['ms'] for r in rows):.2f} ms, "
                         f"floor {sum(r[2] for r in rows):.2f} ms at {tb_per_s:g} TB/s (argument bytes moved once)")
            for above, k, floor in rows[:top]:
                lines.append(f"  {k['ms']:8.3f} ms {k['calls']:5.0f}x  floor {floor:7.3f} ms  +{above:6.3f}  "
                             f"{nbytes[k['name']] / 1e6:9.1f} MB  {k['name'][:40]:40s} {kinds.get(k['name'], '')}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fuser.tools.bench.kernel_report", description=__doc__.split("\n\n")[0])
    p.add_argument("json", help="fuser-bench --models --kernels DIR --json PATH's PATH")
    p.add_argument("--top", type=int, default=25, help="kernels listed per peer (default 25)")
    p.add_argument("--regions", metavar="DIR", help="--kernels DIR/regions: name fuser's kernels by their ops")
    p.add_argument("--floor", type=float, metavar="TB/s",
                   help="with --regions: fuser's memory-bound kernels against their floor at this bandwidth")
    args = p.parse_args(argv)
    if args.floor is not None and (not args.regions or args.floor <= 0):
        p.error("--floor needs --regions and a positive bandwidth in TB/s")
    with open(args.json) as f:
        doc = json.load(f)
    kinds: dict[str, str] = {}
    nbytes: dict[str, int] = {}
    names = region_kernels(args.regions, kinds, nbytes) if args.regions else {}
    print("\n".join(report(doc, args.top, names, kinds)))
    if args.floor is not None:
        print("\n".join(floor_report(doc, args.top, kinds, nbytes, args.floor)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
