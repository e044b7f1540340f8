"""fuser-run on any machine: it compiles before it runs (pipeline and option errors surface
without a GPU), refuses --input names the fusion does not have, and without a GPU says so in
one sentence and prints the reference interpreter's outputs."""

from __future__ import annotations

import os

import numpy as np
import pytest

from fuser.tools.fuser_run import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROW_SUM = os.path.join(ROOT, "examples", "row_sum.mlir")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path / "cache"))


def _no_gpu() -> bool:
    from fuser.runtime import driver

    try:
        driver.require_gpu()
    except driver.NoGPUError:
        return True
    return False


def test_bad_option_is_an_error_on_any_machine(capsys):
    assert main([ROW_SUM, "-p", "convert-fusion-to-sched{bogus=1}"]) == 1
    assert "bad options for pass 'convert-fusion-to-sched'" in capsys.readouterr().err


def test_unknown_input_name(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((4, 4), np.float32))
    assert main([ROW_SUM, "--input", f"q={tmp_path / 'x.npy'}"]) == 1
    err = capsys.readouterr().err
    assert "--input q=...: the fusion has no argument 'q'; its arguments are x" in err


@pytest.mark.skipif(not _no_gpu(), reason="a GPU is here: fuser-run runs the kernels")
def test_without_a_gpu_one_sentence_then_the_reference(capsys):
    assert main([ROW_SUM]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("fuser-run: compiled in ") and out[0].endswith(
        "no GPU here, so these are the reference interpreter's outputs")
    assert out[1].startswith("  output 0: shape (4097,)")
