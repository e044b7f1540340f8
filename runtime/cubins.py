"""Machine code (cubins) for compiled PTX, made ahead by ptxas and kept in the kernel cache.

Loading a module from PTX makes the CUDA driver compile it to machine code on the spot, in the
process that launches: about 0.6 s for a layer's fusion of a dozen kernels on an H200's host,
10.7 s of Llama's first training step through the PyTorch backend, one module after another.
The backend's compile workers (fuser.torch.compile_worker) therefore also assemble each
fusion's PTX with ptxas (`ensure`), in parallel, into the kernel cache; the executor then loads
the cubin when one is there (`cached`) and the PTX otherwise.

An entry is keyed by the PTX text, the ptxas that made it (its `--version`) and the flags, so a
different ptxas is a miss. The flags are `-O3 -lineinfo`, as the driver's JIT builds the PTX
(optimized, with the .mlir line table that compute-sanitizer and Nsight Compute read). The
target is the PTX's own `.target`. Without ptxas (`find_ptxas`) nothing is made and the driver
compiles the PTX as before.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import subprocess

from .cache import KernelCache, default_cache

FLAGS = ("-O3", "-lineinfo")
_TARGET_RE = re.compile(r"^\s*\.target\s+(sm_\w+)", re.M)


@functools.lru_cache(maxsize=None)
def _ptxas_identity(path: str) -> str:
    """ptxas's version text (its release and build), or "" when it does not answer."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _ptxas() -> tuple[str, str] | None:
    """(path, version) of the ptxas to use, or None."""
    from fuser.lowering.target.ptx import find_ptxas

    path = find_ptxas()
    if path is None:
        return None
    version = _ptxas_identity(path)
    return (path, version) if version else None


def target_arch(ptx: str) -> str | None:
    m = _TARGET_RE.search(ptx)
    return m.group(1) if m else None


def _key(ptx: str, version: str) -> str:
    h = hashlib.sha256()
    for part in ("cubin", version, " ".join(FLAGS), ptx):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def cached(ptx: str, cache: KernelCache | None = None) -> bytes | None:
    """The cubin made for `ptx` by this machine's ptxas, if the cache has one."""
    tool = _ptxas()
    if tool is None:
        return None
    e = (cache or default_cache()).get(_key(ptx, tool[1]))
    if e is None or "cubin" not in e.payloads:
        return None
    try:
        return base64.b64decode(e.payloads["cubin"], validate=True)
    except ValueError:
        return None


def ensure(ptx: str, cache: KernelCache | None = None) -> bool:
    """Make the cubin of `ptx` into the cache unless it is there; False when it cannot be made
    (no ptxas, no `.target`, or ptxas refused the PTX: the driver's JIT then reports that)."""
    from fuser.lowering.target.ptx import PtxasError, assemble_ptx

    tool, arch = _ptxas(), target_arch(ptx)
    if tool is None or arch is None:
        return False
    cache = cache or default_cache()
    key = _key(ptx, tool[1])
    if cache.get(key) is not None:
        return True
    with cache.building(key):
        if cache.recheck(key) is not None:
            return True
        try:
            cubin = assemble_ptx(ptx, arch, list(FLAGS[1:]))
        except PtxasError:
            return False
        cache.put(key, {"cubin": base64.b64encode(cubin).decode()}, {"arch": arch, "ptxas": tool[1]})
    return True
