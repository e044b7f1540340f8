"""`python -m fuser.torch.compile_worker JOBS.json`: compile fusions into the disk cache.

The backend's `precompile` starts a few of these at once, each with its share of a graph's
fusions: `{"pipeline": str, "options": dict | null, "texts": [fusion text, ...]}`. A plain
subprocess, not multiprocessing: spawn and forkserver re-import the user's main script, which
would run its top-level code (a training loop) again. Each result lands in the disk cache, where
the backend's own `fuser.api.compile` of the same text finds it. Prints one line per fusion that
failed (the backend compiles it again on first use, and reports it then).
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m fuser.torch.compile_worker JOBS.json", file=sys.stderr)
        return 2
    import fuser.api as fa

    with open(argv[0]) as f:
        job = json.load(f)
    for text in job["texts"]:
        try:  # the call FusionRegion._compiled makes, so that the cache key is the same
            fa.compile(text, pipeline=job["pipeline"], options=job["options"], stages=False)
        except Exception as e:
            print(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
