"""Reductions over any dimension set compile through the default pipeline (the GPU numerics are
test_reduction_dims_gpu.py), read the input through a permuted view only where they must, and
the split (chunked) paths are reached by the tall cases."""

from __future__ import annotations

import pytest
from reduction_dims_cases import CASES

from fuser.dialects.ir import parse_module
from fuser.lowering.heuristics.reduction import reduction_view
from fuser.passes.pipeline import build_pipeline, run_passes


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiles_to_ptx(name):
    from fuser.lowering.target.ptx import module_to_ptx
    m = parse_module(CASES[name])
    run_passes(build_pipeline("default"), m)
    assert ".entry" in module_to_ptx(m)


@pytest.mark.parametrize("name, kernels", [("tall_middle_split", 2), ("long_ends_split", 2), ("mid_sum_3x37x5", 1)])
def test_split_paths(name, kernels):
    m = parse_module(CASES[name])
    run_passes(build_pipeline("to-sched"), m)
    text = str(m)
    assert text.count("sched.kernel @") == kernels
    assert "reduction of a view permuted by" in text


def test_views():
    assert reduction_view((4, 5, 6), [2]).perm is None and reduction_view((4, 5, 6), [0, 1]).perm is None
    mid = reduction_view((4, 5, 6), [1])
    assert (mid.inner, mid.perm, mid.shape, mid.k) == (False, (1, 0, 2), (5, 4, 6), 1)
    ends = reduction_view((2, 3, 4, 5), [1, 3])
    assert (ends.inner, ends.perm, ends.shape, ends.k) == (True, (0, 2, 1, 3), (2, 4, 3, 5), 2)
    assert reduction_view((2, 3, 4, 5), [0, 2]).perm == (0, 2, 1, 3)   # outer: reduced first, kept after
