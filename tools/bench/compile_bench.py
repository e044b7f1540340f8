"""`fuser-bench --compile`: compile time per example and the cached call's host time (issue 33).

For every fusion in examples/ (not bad.mlir) and a softmax, one row:

    cold ms    fuser.compile with an empty disk cache (a fresh FUSER_CACHE_DIR), imports warm:
               the best of `--reps` (each in a new cache directory)
    warm ms    the same compile again: found in the in-memory cache
    disk ms    found on disk (the in-memory layer cleared first)
    call us    host time of a cached call (`k(*inputs)` after the first, enqueue only: the best
               of 7 rounds of `--calls` calls, torch CUDA tensors in); on a machine without a
               GPU, only with `--mock-launch`: the driver is replaced at the launch call (fake
               CUDA tensors, a launch that does nothing), which times fuser's own Python up to
               the driver, not the GPU host's

and the time to import fuser and its compiler in a fresh process. Times are wall-clock; the
machine is named in the header.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]

SOFTMAX = """// softmax over rows of 1024 f32 values
func.func @softmax(%x: tensor<4096x1024xf32>) -> tensor<4096x1024xf32> {
  %m = fusion.reduce max %x dims [1] : tensor<4096x1024xf32> to tensor<4096xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<4096xf32> to tensor<4096x1024xf32>
  %d = fusion.sub %x, %mb : tensor<4096x1024xf32>
  %e = fusion.exp %d : tensor<4096x1024xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<4096x1024xf32> to tensor<4096xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<4096xf32> to tensor<4096x1024xf32>
  %y = fusion.div %e, %sb : tensor<4096x1024xf32>
  func.return %y : tensor<4096x1024xf32>
}
"""


def fusions() -> list[tuple[str, str]]:
    """(name, MLIR text) of every benchmarked fusion."""
    out = [(p.stem, p.read_text()) for p in sorted((ROOT / "examples").glob("*.mlir")) if p.stem != "bad"]
    return out + [("softmax", SOFTMAX)]


def _fresh_cache(directory: str) -> None:
    from fuser.runtime import cache

    os.environ["FUSER_CACHE_DIR"] = directory
    cache._default = None


def compile_times(text: str, reps: int) -> tuple[float, float, float, Any]:
    """(cold, warm, disk) seconds and the compiled fusion."""
    import fuser
    from fuser.runtime import cache

    cold = float("inf")
    for _ in range(reps):
        _fresh_cache(tempfile.mkdtemp(prefix="fuser-bench-compile-"))
        t = time.perf_counter()
        k = fuser.compile(text)
        cold = min(cold, time.perf_counter() - t)
    t = time.perf_counter()
    k = fuser.compile(text)
    warm = time.perf_counter() - t
    cache.default_cache().clear_memory()
    t = time.perf_counter()
    fuser.compile(text)
    disk = time.perf_counter() - t
    return cold, warm, disk, k


def import_seconds() -> float:
    """`import fuser` and its compile driver in a fresh interpreter."""
    code = "import time; t = time.perf_counter(); import fuser, fuser.driver; print(time.perf_counter() - t)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(r.stdout.strip())


def mock_launch() -> Callable[[Any], Any]:
    """Replace the CUDA driver at the launch call (no GPU needed); returns fake(tensor), which
    makes a CPU tensor that says it is on GPU 0."""
    import torch

    from fuser.runtime import arrays, driver, executor

    class FakeCuda(torch.Tensor):
        __torch_function__ = torch._C._disabled_torch_function_impl
        is_cuda = property(lambda self: True)

        def get_device(self) -> int:
            return 0

    driver.require_gpu = lambda: None
    driver.device_ordinal = lambda: 0
    arrays._bind_device = lambda ordinal: 0
    executor.load_module = lambda ptx: None
    executor._kernel = lambda key, module, name, smem: driver.Kernel(1, name, None)
    executor._torch_raw_stream = lambda index: 0
    driver._tls.ctx = object()
    driver.encode_tensor_map = lambda *a, **k: bytes(128)
    driver._direct_state[:] = [driver._Direct(lambda *a: 0, lambda *a: 0)]
    return lambda t: torch.Tensor._make_subclass(FakeCuda, t)


def call_host_us(k: Any, make: Callable[[Any], Any], calls: int, device: str) -> float:
    """Best of 7 rounds: host microseconds per cached call of `k` (enqueue only)."""
    import torch

    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64}
    args = [make(torch.randn(s.shape, device=device).to(dt[s.dtype])) for s in k.program.inputs]
    for _ in range(3):
        k(*args)
    best = float("inf")
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(calls):
            k(*args)
        best = min(best, (time.perf_counter() - t) / calls)
        if device == "cuda":
            torch.cuda.synchronize()
    return best * 1e6


def run(args: Any) -> int:
    from . import timing

    gpu = timing.gpu_problem() is None
    mock = bool(getattr(args, "mock_launch", False)) and not gpu
    make = None
    if gpu:
        make = lambda t: t  # noqa: E731
    elif mock:
        make = mock_launch()
    machine = f"{platform.node()}: {os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}"
    print(f"# fuser-bench --compile on {machine}; GPU: {'yes' if gpu else 'none'}"
          f"{' (launches mocked at the driver call)' if mock else ''}; FUSER_CHECK_ARGS="
          f"{os.environ.get('FUSER_CHECK_ARGS', '(unset)')}")
    print(f"# import fuser + driver in a fresh process: {import_seconds() * 1e3:.0f} ms")
    print(f"{'fusion':24s} {'kernels':>7s} {'cold ms':>9s} {'warm ms':>9s} {'disk ms':>9s} {'call us':>9s}")
    selected = [(n, t) for n, t in fusions() if not args.filter or __import__("re").search(args.filter, n)]
    for name, text in selected:
        cold, warm, disk, k = compile_times(text, args.reps)
        call = "-"
        if make is not None:
            call = f"{call_host_us(k, make, args.calls, 'cuda' if gpu else 'cpu'):.2f}"
        print(f"{name:24s} {len(k.program.launches):7d} {cold * 1e3:9.1f} {warm * 1e3:9.2f} {disk * 1e3:9.2f} "
              f"{call:>9s}", flush=True)
    return 0
