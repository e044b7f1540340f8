"""Compare the PTX of every example and every lit input, compiled by two builds of fuser.

    python -m fuser.tools.bench.ptx_compare --write before.json    # with the old build first
    python -m fuser.tools.bench.ptx_compare --check before.json    # then with the new one

Each `examples/*.mlir` and `test/lit/**/*.mlir` is compiled with `fuser.compile`'s driver
(default pipeline, sm_90a, disk cache off); the JSON keeps per input the sha256 of its PTX, or
the first line of the error for an input the default pipeline does not take (most lit inputs
are not fusions). `--check` lists the inputs whose PTX (or error) changed and exits 1 if any
did: the check that a change to the compile path left every kernel as it was.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def inputs(root: Path = ROOT) -> list[Path]:
    return sorted((root / "examples").glob("*.mlir")) + sorted((root / "test" / "lit").rglob("*.mlir"))


def digest(path: Path) -> str:
    os.environ["FUSER_CACHE"] = "0"
    from fuser.driver import compile_fusion

    try:
        ptx = compile_fusion(path.read_text(errors="replace"), stages=False).ptx
    except Exception as e:  # noqa: BLE001 - a refusal is recorded, not raised
        text = str(e).strip().splitlines()
        return "error: " + (text[0][:300] if text else type(e).__name__)
    return "ptx " + hashlib.sha256(ptx.encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ptx_compare", description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="JSON")
    g.add_argument("--check", metavar="JSON")
    p.add_argument("--root", default=str(ROOT), help="the tree whose inputs are compiled (default: this one)")
    args = p.parse_args(argv)
    root = Path(args.root)
    got = {str(f.relative_to(root)): digest(f) for f in inputs(root)}
    n_ptx = sum(v.startswith("ptx ") for v in got.values())
    if args.write:
        Path(args.write).write_text(json.dumps(got, indent=1, sort_keys=True))
        print(f"ptx_compare: {len(got)} inputs ({n_ptx} compiled to PTX) written to {args.write}")
        return 0
    want = json.loads(Path(args.check).read_text())
    changed = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
    for k in changed:
        print(f"changed: {k}: {want.get(k, '(absent)')[:90]} -> {got.get(k, '(absent)')[:90]}")
    print(f"ptx_compare: {len(got)} inputs ({n_ptx} compiled to PTX), {len(changed)} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
