"""`python -m fuser.torch.compile_worker`: a process that compiles fusions into the disk cache.

The backend's `precompile` keeps a few of these for the life of the process (starting one costs
an interpreter and fuser's imports, about as long as a small fusion's compile, and DDP hands the
backend a graph per gradient bucket) and sends each a share of a graph's fusions, one job per
line on stdin: `{"pipeline": str, "options": dict | null, "cache_dir": str, "texts": [fusion
text, ...], "wait": bool}`. A plain subprocess, not multiprocessing: spawn and forkserver re-import the user's
main script, which would run its top-level code (a training loop) again. Each result lands in
the disk cache at `cache_dir` (the caller's), where the backend's own `fuser.api.compile` of the
same text finds it, with the cubin ptxas assembles from its PTX (driver.make_cubin), which the
launching process loads instead of having the driver compile the PTX. End of input ends the
process.

A fusion another process is compiling now (another rank of a distributed job sharing the cache
directory) is put off and taken last, waiting for that process then, so that the ranks' workers
share the work instead of queueing behind each other; with `"wait": false` it is not waited for
but handed back (`"busy"`), for the caller to send again last. Each job is answered by one line
on stdout, `{"compiled": n, "loaded": n, "failed": ["error", ...], "busy": [text, ...], "seconds": s}`:
fusions compiled here, fusions found in the cache (compiled by another process), the first line of each
failure (the backend compiles those again on first use, and reports them then), the fusions
handed back, and the job's wall time.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from typing import Any


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    import fuser.api as fa
    from fuser.driver import make_cubin
    from fuser.runtime import cache

    if job.get("cache_dir") and cache.default_cache().directory != cache.Path(job["cache_dir"]):
        cache._default = cache.KernelCache(job["cache_dir"], disk=True)  # the backend's, kept as installed
    summary: dict[str, Any] = {"compiled": 0, "loaded": 0, "failed": []}

    def attempt(text: str, wait: bool) -> bool:
        """False when another process is compiling it and wait is False."""
        try:  # the call FusionRegion._compiled makes, so that the cache key is the same
            compiled = fa.compile(text, pipeline=job["pipeline"], options=job["options"], stages=False, wait=wait)
        except cache.Busy:
            return False
        except Exception as e:
            summary["failed"].append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            return True
        summary["loaded" if compiled.result.cached else "compiled"] += 1
        if compiled.ptx:  # the machine code too, so that the launching process need not JIT it
            make_cubin(compiled.ptx)
        return True

    start = time.perf_counter()
    later = [text for text in job["texts"] if not attempt(text, wait=False)]
    summary["seconds"] = round(time.perf_counter() - start, 3)
    if job.get("wait", True) is False:  # the caller takes them last (precompile's queue)
        summary["busy"] = later
        return summary
    for text in later:
        attempt(text, wait=True)
    summary["seconds"] = round(time.perf_counter() - start, 3)
    return summary


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python -m fuser.torch.compile_worker  (jobs on stdin, one JSON object a line)",
              file=sys.stderr)
        return 2
    out = sys.stdout
    sys.stdout = sys.stderr  # anything else printed must not interleave with the answers
    # fuser's compiler imported before the first job arrives: the backend starts its workers
    # when a CUDA graph first reaches it, and their imports (several seconds when 16 start at
    # once) overlap its tracing and partitioning instead of delaying the first precompile
    for name in ("fuser.api", "fuser.driver"):
        importlib.import_module(name)
    for line in sys.stdin:
        if line.strip():
            out.write(json.dumps(run_job(json.loads(line))) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
