"""fuser-ir-snapshot: do a change's kernels stay the same? Compiles a fixed corpus to sched IR and
records one digest per input, so that a refactor meant to change no behaviour (a planner
rewritten, a pass split in two) can be checked on the CPU before any GPU time is spent:

    python3 -m fuser.tools.ir_snapshot --write before.json      # on the commit before
    python3 -m fuser.tools.ir_snapshot --check before.json      # after: lists what differs

The corpus: the examples, the sanitizer cases (each with its own pipeline), the transpose and
reduction-dims test cases, and `--fuzz N` fuzzer fusions (seeds from `--seed`), each with the
schedule-option variant the fuzzer gives that seed. A refusal is recorded as its message, so a
fusion that starts or stops being refused is a difference too. The digest covers the printed
sched IR (pipeline `to-sched` plus the case's options), not the PTX.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]


def corpus(fuzz: int = 200, seed: int = 0) -> Iterator[tuple[str, str, str]]:
    """(name, fusion text, pipeline) for every input of the snapshot."""
    from fuser.tools import fuzz as fz
    from fuser.tools.sanitize import CASES

    for f in sorted((_ROOT / "examples").glob("*.mlir")):
        if f.name != "bad.mlir":  # (its point is its errors)
            yield f"examples/{f.name}", f.read_text(), "to-sched"
    for name, (text, pipeline) in sorted(CASES.items()):
        yield f"sanitize/{name}", text, _to_sched(pipeline)
    sys.path.insert(0, str(_ROOT / "test" / "python"))
    try:
        from reduction_dims_cases import CASES as DIMS
        from transpose_cases import CASES as TRANSPOSES
    finally:
        sys.path.pop(0)
    for name, text in sorted(TRANSPOSES.items()):
        yield f"transpose/{name}", text, "to-sched"
    for name, text in sorted(DIMS.items()):
        yield f"reduction_dims/{name}", text, "to-sched"
    for s in range(seed, seed + fuzz):
        options = fz.OPTION_VARIANTS[s % len(fz.OPTION_VARIANTS)]
        yield f"fuzz/{s}", fz.random_fusion(s), _to_sched(fz.pipeline_for(options))


def _to_sched(pipeline: str) -> str:
    """The same pipeline stopped at the sched level."""
    from fuser.passes.pipeline import expand
    passes = expand(pipeline).split(",")
    if "convert-sched-to-nvvm" in passes:
        passes = passes[:passes.index("convert-sched-to-nvvm")]
    return ",".join(passes)


def digest(text: str, pipeline: str) -> str:
    """A short digest of the sched IR, or `refused: <message>`."""
    from fuser.dialects.ir import parse_module, print_module
    from fuser.passes.pipeline import build_pipeline, run_passes

    try:
        module = parse_module(text)
        run_passes(build_pipeline(pipeline), module, verify_each=False)  # (verified once, at the end)
        ir = print_module(module)
    except Exception as e:  # noqa: BLE001 (a refusal is part of the behaviour being recorded)
        return "refused: " + str(e).splitlines()[0]
    return hashlib.sha256(ir.encode()).hexdigest()[:16]


def snapshot(fuzz: int, seed: int) -> dict[str, str]:
    return {name: digest(text, pipeline) for name, text, pipeline in corpus(fuzz, seed)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fuser-ir-snapshot", description=__doc__.split("\n\n")[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--write", metavar="JSON", help="record the corpus's digests here")
    what.add_argument("--check", metavar="JSON", help="compare with a recorded snapshot; exit 1 on a difference")
    p.add_argument("--fuzz", type=int, default=200, help="fuzzer fusions in the corpus (default 200)")
    p.add_argument("--seed", type=int, default=0, help="first fuzzer seed (default 0)")
    args = p.parse_args(argv)
    if not (_ROOT / "test" / "python").is_dir():
        print(f"fuser-ir-snapshot: the corpus is read from a source checkout; {_ROOT} has no test/python",
              file=sys.stderr)
        return 2
    if args.write:
        snap = {"fuzz": args.fuzz, "seed": args.seed, "digests": snapshot(args.fuzz, args.seed)}
        Path(args.write).write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
        print(f"fuser-ir-snapshot: {len(snap['digests'])} inputs written to {args.write}")
        return 0
    try:
        old = json.loads(Path(args.check).read_text())
    except (OSError, ValueError) as e:
        print(f"fuser-ir-snapshot: cannot read {args.check}: {e}", file=sys.stderr)
        return 2
    new = snapshot(old["fuzz"], old["seed"])
    before = old["digests"]
    changed = [n for n in new if n in before and new[n] != before[n]]
    added = [n for n in new if n not in before]
    gone = [n for n in before if n not in new]
    for n in changed:
        print(f"changed  {n}: {before[n]} -> {new[n]}")
    for n in added:
        print(f"new      {n}: {new[n]}")
    for n in gone:
        print(f"gone     {n}")
    print(f"fuser-ir-snapshot: {len(new)} inputs, {len(changed)} changed, {len(added)} new, {len(gone)} gone")
    return 1 if changed or added or gone else 0


if __name__ == "__main__":
    sys.exit(main())
