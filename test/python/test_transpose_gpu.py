"""Transposes on the GPU against float64: odd and tiny shapes, f32/bf16/f16, batched and rank-4
permutes, a transpose fused with math and a second input, two outputs, two permuted inputs.
Skipped when no GPU is found."""

from __future__ import annotations

import numpy as np
import pytest
from test_multi_output_gpu import check_against_f64
from transpose_cases import CASES

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_float64(name):
    assert check_against_f64(CASES[name], np.random.default_rng(5)) == []
