"""The transpose scheduler on the CPU: which permutes it takes, and every case compiling to PTX
(test_transpose_gpu.py runs them)."""

from __future__ import annotations

import pytest
from transpose_cases import CASES, TILED

from fuser.dialects.ir import parse_module
from fuser.lowering.heuristics.transpose import transpose_params
from fuser.passes.pipeline import build_pipeline, run_passes


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiles_with_the_expected_kernel(name):
    from fuser.lowering.target.ptx import module_to_ptx
    m = parse_module(CASES[name])
    run_passes(build_pipeline("to-sched"), m)
    assert ("fuser.schedule = \"transpose: " in str(m)) == (name in TILED)
    m = parse_module(CASES[name])
    run_passes(build_pipeline("default"), m)
    ptx = module_to_ptx(m)
    assert ".entry" in ptx and (("bar.sync" in ptx) == (name in TILED))


def test_heuristic():
    assert transpose_params((64, 64), [[1, 0]]).q == 0
    assert transpose_params((3, 64, 40), [[0, 2, 1]]).batch_dims == [0]
    assert transpose_params((64, 8), [[1, 0]]) is None            # 8 columns: not worth a tile
    assert transpose_params((64, 64), []) is None                 # nothing moves the contiguous dim
    assert transpose_params((4, 64, 64), [[1, 2, 0], [2, 1, 0]]) is None   # two different tilings
