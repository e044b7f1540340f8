"""fuser-sanitize's case list: every case compiles through its pipeline (the GPU runs them under
compute-sanitizer), and the cases cover the shared-memory paths they claim to."""

from __future__ import annotations

import re

import pytest

from fuser.driver import compile_fusion
from fuser.tools.sanitize import CASES, main


@pytest.mark.parametrize("name", list(CASES))
def test_case_compiles(name):
    text, pipeline = CASES[name]
    result = compile_fusion(text, pipeline)
    assert ".entry" in result.ptx


def test_cases_take_the_paths_they_name():
    def sched(name):
        text, pipeline = CASES[name]
        return compile_fusion(text, pipeline).stages["sched"]
    assert "smem_reuse=1" in sched("matmul_reuse") and "smem_reuse=1" not in sched("matmul_own_staging")
    assert "cluster=2" in sched("matmul_cluster_reuse") and "pingpong=1" in sched("matmul_pingpong")
    assert "persistent=1" in sched("matmul_persistent") and re.search(r"split=\d+", sched("matmul_split_k"))
    assert "bytes of shared memory" in sched("rows_in_smem")
    s = sched("sorts")
    assert "a bitonic network of 1024 in shared memory" in s and "keeps its first 8 in registers" in s
    assert "8 rows per block, a bitonic network of 8" in s
    s = sched("scatters")
    assert s.count("sched.kernel") == 7  # two sorts, a pointwise kernel for each scatter, the atomic's two
    assert s.count("sched.atomic_add") == 1
    assert "memref<1x2x10001xi64>" in s and "memref<29x1x33xi64>" in s  # two chunks; a line per column
    assert "store=direct" in sched("matmul_direct_store") and "store=tma" in sched("matmul_own_staging")
    s = sched("rows_set_into_matmul")  # the rows kernel writes the output the matmul reads: two kernels
    assert s.count("sched.kernel") == 2 and "persistent" in s and "sched.workspace" not in s


def test_list_and_bad_tool(capsys):
    assert main(["--list"]) == 0
    assert "matmul_reuse" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--tools", "leakcheck"])


def test_no_compute_sanitizer_is_one_line(capsys, monkeypatch, tmp_path):
    """The usual CI machine has no compute-sanitizer: one line naming where it looked and the
    option that points elsewhere, not a FileNotFoundError."""
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    monkeypatch.setattr("fuser.tools.sanitize.CUDA_SANITIZER", str(tmp_path / "cuda" / "compute-sanitizer"))
    assert main(["--cases", "^softmax$"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fuser-sanitize: error: compute-sanitizer not found on PATH")
    assert str(tmp_path / "cuda" / "compute-sanitizer") in err and "--sanitizer PATH" in err
    assert main(["--sanitizer", str(tmp_path / "nope"), "--cases", "^softmax$"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--sanitizer {tmp_path / 'nope'}: no such executable" in err


def test_missing_python_is_one_line(capsys, tmp_path):
    fake = tmp_path / "compute-sanitizer"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    assert main(["--sanitizer", str(fake), "--python", str(tmp_path / "python9"), "--cases", "^softmax$"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--python {tmp_path / 'python9'}: no such executable" in err


@pytest.mark.parametrize("args, message", [
    (["--cases", "no_such_case"], "--cases 'no_such_case' matches no case; the cases are matmul_reuse, "),
    (["--cases", "no_such_case", "--list"], "--cases 'no_such_case' matches no case"),
    (["--cases", "("], "--cases '(' is not a regular expression"),
    (["--tools", ","], "--tools names no tool"),
])
def test_bad_cases_or_tools_are_errors(capsys, args, message):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"fuser-sanitize: error: {message}" in err and "Traceback" not in err
    if "matches no case" in message:
        assert all(n in err for n in CASES)
