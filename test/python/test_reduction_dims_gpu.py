"""Reductions over middle and non-adjacent dims on the GPU against float64 (f32/bf16, odd shapes,
keepdim, var_mean and welford, the split paths, an epilogue). Skipped when no GPU is found."""

from __future__ import annotations

import numpy as np
import pytest
from reduction_dims_cases import CASES
from test_multi_output_gpu import check_against_f64

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_float64(name):
    assert check_against_f64(CASES[name], np.random.default_rng(3)) == []
