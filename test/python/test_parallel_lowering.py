"""A fusion of several kernels has them lowered in forked processes and the PTX merged
(driver._lower_kernels_apart, ptx.merge_ptx): the same launches and the same kernels as one
process makes, a module ptxas accepts, and a serial compile when a part fails."""

import logging

import pytest

import fuser.api as fa
from fuser import driver
from fuser.dialects.ir import FuserDiagnostic
from fuser.lowering.target import ptx as ptx_mod
from fuser.runtime import cache

# Seven kernels: sums, maxima and minima along both dims of two inputs, and a pointwise output.
MULTI = """func.func @multi(%x: tensor<256x512xf32>, %y: tensor<512x256xf32>) -> (tensor<512xf32>, tensor<256xf32>,
    tensor<256xf32>, tensor<512x256xf32>, tensor<512xf32>) {
  %a = fusion.reduce sum %x dims [0] : tensor<256x512xf32> to tensor<512xf32>
  %e = fusion.exp %x : tensor<256x512xf32>
  %b = fusion.reduce max %e dims [1] : tensor<256x512xf32> to tensor<256xf32>
  %c = fusion.reduce sum %y dims [0] : tensor<512x256xf32> to tensor<256xf32>
  %t = fusion.tanh %y : tensor<512x256xf32>
  %d = fusion.reduce min %y dims [1] : tensor<512x256xf32> to tensor<512xf32>
  func.return %a, %b, %c, %t, %d : tensor<512xf32>, tensor<256xf32>, tensor<256xf32>, tensor<512x256xf32>,
    tensor<512xf32>
}"""

HEADER = (".version", ".target", ".address_size")


def _compile(monkeypatch, jobs: int, text: str = MULTI):
    monkeypatch.setenv("FUSER_CACHE", "0")
    monkeypatch.setattr(cache, "_default", None)  # (a fresh cache without a disk layer: each compile is made)
    monkeypatch.setenv("FUSER_COMPILE_JOBS", str(jobs))
    return fa.compile(text, stages=False)


def _items(ptx: str) -> dict[str, str]:
    return dict(ptx_mod._ptx_items([ln for ln in ptx.splitlines() if not ln.strip().startswith(HEADER)]))


def _without_labels(text: str) -> str:
    """A function's PTX without its label numbers (LLVM numbers them by the function's place
    in its module, which differs between the merged parts and one module)."""
    import re
    return re.sub(r"\$L__(BB|func_begin|func_end|tmp)\d+", r"$L__\1", text)


def test_kernels_lowered_apart_give_the_same_program_and_kernels(monkeypatch):
    one = _compile(monkeypatch, 1)
    apart = _compile(monkeypatch, 3)
    assert len(one.program.launches) == 7 >= driver.SPLIT_KERNELS
    assert apart.program.to_json(include_ptx=False) == one.program.to_json(include_ptx=False)
    a, b = _items(one.ptx), _items(apart.ptx)
    assert set(a) == set(b)
    assert all(_without_labels(a[k]) == _without_labels(b[k]) for k in a)
    assert apart.llvm_ir.count("; kernels ") == 3  # each part's LLVM IR, named by its kernels
    if ptx_mod.find_ptxas() is not None:  # the merged module assembles
        ptx_mod.assemble_ptx(apart.ptx, "sm_90a", ["-O3"])


def test_a_part_that_fails_is_compiled_again_in_one_process(monkeypatch, caplog):
    def refuse(parts):
        raise ptx_mod.PtxError("cannot merge PTX modules: a test says no")

    monkeypatch.setattr(ptx_mod, "merge_ptx", refuse)
    with caplog.at_level(logging.INFO, logger="fuser.compile"):
        k = _compile(monkeypatch, 2)
    assert "a test says no; compiling in one process" in caplog.text
    assert len(k.program.launches) == 7 and k.llvm_ir.count("; kernels ") == 0


def test_an_error_in_a_part_is_reported_as_one_process_reports_it(monkeypatch):
    bad = MULTI.replace("%t = fusion.tanh %y", "%t = fusion.tanh %x")  # (a type error the parse reports)
    for jobs in (1, 2):
        with pytest.raises(FuserDiagnostic) as e:
            _compile(monkeypatch, jobs, bad)
        assert "fusion.tanh" in str(e.value) or "tensor<256x512xf32>" in str(e.value)


def test_fuser_compile_jobs_is_checked(monkeypatch):
    monkeypatch.setenv("FUSER_COMPILE_JOBS", "many")
    with pytest.raises(FuserDiagnostic, match="FUSER_COMPILE_JOBS='many': expected a number of processes"):
        driver.compile_jobs()
    monkeypatch.setenv("FUSER_COMPILE_JOBS", "0")
    assert driver.compile_jobs() == 1
    monkeypatch.delenv("FUSER_COMPILE_JOBS")
    assert 1 <= driver.compile_jobs() <= 8


def test_merge_ptx_keeps_a_shared_item_once_and_refuses_a_conflict():
    head = ".version 8.0\n.target sm_90a\n.address_size 64\n"
    p1 = head + ".extern .shared .align 16 .b8 smem_k0[];\n.visible .entry k0(\n\t.param .u64 p\n)\n{\n\tret;\n}\n" \
        ".file\t1 \"f.mlir\"\n"
    p2 = head + ".extern .shared .align 16 .b8 smem_k1[];\n.visible .entry k1()\n{\n\tret;\n}\n.file\t1 \"f.mlir\"\n"
    merged = ptx_mod.merge_ptx([p1, p2])
    assert merged.count(".version 8.0") == 1 and merged.count(".file") == 1
    assert merged.index("smem_k0") < merged.index("entry k0") < merged.index("smem_k1") < merged.index("entry k1")
    assert set(_items(merged)) == {"smem_k0", "k0", "smem_k1", "k1", '.file\t1 "f.mlir"'}
    with pytest.raises(ptx_mod.PtxError, match="k0 is defined differently"):
        ptx_mod.merge_ptx([p1, p1.replace("ret;", "exit;")])
    with pytest.raises(ptx_mod.PtxError, match="different headers"):
        ptx_mod.merge_ptx([p1, p2.replace("sm_90a", "sm_80")])


def _sleeping_thread(name: str):
    import threading
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name=name, daemon=True)
    t.start()
    return t, stop


@pytest.mark.parametrize("name, apart", [("tqdm_monitor", True), ("someone_elses", False)])
def test_only_known_threads_allow_forking(monkeypatch, name, apart):
    """A thread alive at the fork could hold a lock the child needs, so a process with threads
    lowers in one process, except for threads known to take none (tqdm's monitor, which any
    torch.compile leaves running: CI once ran this file after one, in the same worker)."""
    t, stop = _sleeping_thread(name)
    try:
        k = _compile(monkeypatch, 2)
    finally:
        stop.set()
        t.join()
    assert len(k.program.launches) == 7
    assert (k.llvm_ir.count("; kernels ") > 0) == apart
