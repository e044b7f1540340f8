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
    assert "store=direct" in sched("matmul_direct_store") and "store=tma" in sched("matmul_own_staging")


def test_list_and_bad_tool(capsys):
    assert main(["--list"]) == 0
    assert "matmul_reuse" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--tools", "leakcheck"])
