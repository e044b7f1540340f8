"""Machine code (cubins) for compiled PTX, kept in the kernel cache beside the programs.

Loading a module from PTX makes the CUDA driver compile it to machine code on the spot, in the
process that launches: about 0.6 s for a layer's fusion of a dozen kernels on an H200's host,
10.7 s of Llama's first training step through the PyTorch backend, one module after another.
So the backend's compile workers also assemble each fusion's PTX with ptxas
(`fuser.driver.make_cubin`, in parallel) into the cache under `key`; the executor loads the cubin
when the cache has one (`cached`) and the PTX otherwise.

An entry is keyed by the PTX text and the flags, `-O3 -lineinfo`, as the driver's JIT builds
PTX (optimized, with the .mlir line table that compute-sanitizer and Nsight Compute read); the
target is the PTX's own `.target`. Any ptxas makes the same program of the same PTX; a cubin this
machine's driver refuses (from a newer ptxas) is passed over for the PTX (executor.py).
"""

from __future__ import annotations

import base64
import hashlib
import re
from .cache import KernelCache, default_cache

FLAGS = ("-O3", "-lineinfo")
_TARGET_RE = re.compile(r"^\s*\.target\s+(sm_\w+)", re.M)


def target_arch(ptx: str) -> str | None:
    """The `.target` of a PTX text (sm_90a), or None."""
    m = _TARGET_RE.search(ptx)
    return m.group(1) if m else None


def key(ptx: str) -> str:
    h = hashlib.sha256()
    for part in ("cubin", " ".join(FLAGS), ptx):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def cached(ptx: str, cache: KernelCache | None = None) -> bytes | None:
    """The cubin made of `ptx`, if the cache has one."""
    e = (cache or default_cache()).get(key(ptx))
    if e is None or "cubin" not in e.payloads:
        return None
    try:
        return base64.b64decode(e.payloads["cubin"], validate=True)
    except ValueError:
        return None


def payloads(cubin: bytes) -> dict[str, str]:
    """A cubin as the cache entry's payloads (text: base64), which `cached` reads back."""
    return {"cubin": base64.b64encode(cubin).decode()}
