"""Cubins made ahead by ptxas (driver.make_cubin, runtime/cubins.py) on the CPU: made once into
the cache, keyed by the PTX, nothing without ptxas or a target, no exception on PTX ptxas refuses,
and the backend's compile worker leaving one per fusion. (Loading them: test_runtime_gpu.py.)"""

from __future__ import annotations

import pytest

import fuser.api as fa
from fuser.driver import make_cubin
from fuser.lowering.target.ptx import find_ptxas
from fuser.runtime import cache, cubins

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="no ptxas (the test extra's nvidia-cuda-nvcc)")

TEXT = """func.func @cubin_probe(%x: tensor<37x129xf32>) -> tensor<37x129xf32> {
  %y = fusion.exp %x : tensor<37x129xf32>
  func.return %y : tensor<37x129xf32>
}"""


@pytest.fixture
def kc(tmp_path):
    return cache.KernelCache(tmp_path / "cache", disk=True)


@needs_ptxas
def test_made_once_and_found(kc, monkeypatch):
    ptx = fa.compile(TEXT, stages=False).ptx
    assert cubins.target_arch(ptx) == "sm_90a"
    assert cubins.cached(ptx, kc) is None
    assert make_cubin(ptx, kc)
    cubin = cubins.cached(ptx, kc)
    assert cubin is not None and cubin[:4] == b"\x7fELF"
    # a second make_cubin finds it: ptxas is not run again
    monkeypatch.setattr("fuser.lowering.target.ptx.assemble_ptx", lambda *a, **k: pytest.fail("assembled twice"))
    monkeypatch.setattr("fuser.lowering.target.ptx.find_ptxas", lambda: "/nonexistent/ptxas")
    assert make_cubin(ptx, kc)
    # from disk, in a process of its own (a fresh cache object on the same directory)
    assert cubins.cached(ptx, cache.KernelCache(kc.directory, disk=True)) == cubin
    # another PTX (here: one more comment line) is another entry
    assert cubins.cached(ptx + "\n// other\n", kc) is None


@needs_ptxas
def test_nothing_made_without_a_target_or_from_bad_ptx(kc):
    ptx = fa.compile(TEXT, stages=False).ptx
    assert not make_cubin(ptx.replace(".target sm_90a", ""), kc)
    bad = ptx.replace("ret;", "not_an_instruction;", 1)
    assert bad != ptx and not make_cubin(bad, kc)
    assert cubins.cached(bad, kc) is None


def test_nothing_without_ptxas(kc, monkeypatch):
    monkeypatch.setattr("fuser.lowering.target.ptx.find_ptxas", lambda: None)
    ptx = fa.compile(TEXT, stages=False).ptx
    assert not make_cubin(ptx, kc)
    assert cubins.cached(ptx, kc) is None


@needs_ptxas
def test_compile_worker_leaves_the_cubin(tmp_path, monkeypatch):
    """The worker compiles into the caller's cache directory, cubin included."""
    from fuser.torch import compile_worker

    directory = tmp_path / "shared"
    monkeypatch.setattr(cache, "_default", cache.KernelCache(tmp_path / "mine", disk=True))
    got = compile_worker.run_job({"pipeline": "default", "options": None, "cache_dir": str(directory),
                                  "texts": [TEXT]})
    assert got["compiled"] == 1 and not got["failed"]
    ptx = fa.compile(TEXT, stages=False).ptx
    assert cubins.cached(ptx, cache.KernelCache(directory, disk=True))[:4] == b"\x7fELF"
