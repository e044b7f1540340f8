"""fusion-segment's cuts on the GPU against float64: hand-written segments (named, split, with a
pointwise operand pulled in, passing operands through), a matmul whose operand fusion-segment stores first, sibling row and
column sums of one input, and the examples each written as one hand-made segment. Skipped when no
GPU is found."""

from __future__ import annotations

import numpy as np
import pytest

from test_multi_output_gpu import check_against_f64
from test_segment import _one_segment

from fuser.tools import fuzz

pytestmark = pytest.mark.gpu

CASES = {
    "by_hand": """
func.func @by_hand(%x: tensor<37x515xf32>) -> tensor<37x515xf32> {
  %m = fusion.segment (%xs = %x : tensor<37x515xf32>) -> (tensor<37xf32>) {
    %r = fusion.reduce max %xs dims [1] : tensor<37x515xf32> to tensor<37xf32>
    fusion.yield %r : tensor<37xf32>
  }
  %mb = fusion.broadcast %m dims [1] : tensor<37xf32> to tensor<37x515xf32>
  %d = fusion.sub %x, %mb : tensor<37x515xf32>
  %e = fusion.exp %d : tensor<37x515xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<37x515xf32> to tensor<37xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<37xf32> to tensor<37x515xf32>
  %y = fusion.div %e, %sb : tensor<37x515xf32>
  func.return %y : tensor<37x515xf32>
}""",
    "split_by_hand": """
func.func @split_by_hand(%x: tensor<65x33xbf16>) -> (tensor<65xf32>, tensor<33xf32>) {
  %a, %b = fusion.segment (%xs = %x : tensor<65x33xbf16>) -> (tensor<65xf32>, tensor<33xf32>) {
    %r = fusion.reduce sum %xs dims [1] {dtype = "f32"} : tensor<65x33xbf16> to tensor<65xf32>
    %c = fusion.reduce max %xs dims [0] {dtype = "f32"} : tensor<65x33xbf16> to tensor<33xf32>
    fusion.yield %r, %c : tensor<65xf32>, tensor<33xf32>
  }
  func.return %a, %b : tensor<65xf32>, tensor<33xf32>
}""",
    "pull_in": """
func.func @pull_in(%x: tensor<9x130xf32>, %w: tensor<130xf32>) -> (tensor<9xf32>, tensor<9x130xf32>) {
  %e = fusion.exp %x : tensor<9x130xf32>
  %wb = fusion.broadcast %w dims [0] : tensor<130xf32> to tensor<9x130xf32>
  %p = fusion.mul %e, %wb : tensor<9x130xf32>
  %s = fusion.segment "reduction" (%ps = %p : tensor<9x130xf32>) -> (tensor<9xf32>) {
    %r = fusion.reduce sum %ps dims [1] : tensor<9x130xf32> to tensor<9xf32>
    fusion.yield %r : tensor<9xf32>
  }
  func.return %s, %p : tensor<9xf32>, tensor<9x130xf32>
}""",
    # (bf16 x * 0.5 is exact, so the float64 reference, which does not round casts, agrees)
    "computed_matmul_operand": """
func.func @computed_operand(%x: tensor<192x256xbf16>, %w: tensor<256x136xbf16>) -> tensor<192x136xf32> {
  %h = fusion.full 0.5 : tensor<192x256xbf16>
  %a = fusion.mul %x, %h : tensor<192x256xbf16>
  %c = fusion.matmul %a, %w : tensor<192x256xbf16>, tensor<256x136xbf16> -> tensor<192x136xf32>
  func.return %c : tensor<192x136xf32>
}""",
    "pass_through": """
func.func @pass_through(%x: tensor<33x17xf32>, %y: tensor<33x17xf32>) -> (tensor<33x17xf32>, tensor<33x17xf32>, tensor<33x17xf32>) {
  %a, %b = fusion.segment (%xs = %x : tensor<33x17xf32>, %ys = %y : tensor<33x17xf32>) -> (tensor<33x17xf32>, tensor<33x17xf32>) {
    fusion.yield %xs, %ys : tensor<33x17xf32>, tensor<33x17xf32>
  }
  %c, %d = fusion.segment "pointwise" (%as = %a : tensor<33x17xf32>) -> (tensor<33x17xf32>, tensor<33x17xf32>) {
    %e = fusion.exp %as : tensor<33x17xf32>
    fusion.yield %e, %e : tensor<33x17xf32>, tensor<33x17xf32>
  }
  func.return %c, %d, %b : tensor<33x17xf32>, tensor<33x17xf32>, tensor<33x17xf32>
}""",
    "row_and_column_sums": """
func.func @row_and_column(%x: tensor<1031x257xf32>) -> (tensor<1031xf32>, tensor<257xf32>) {
  %r = fusion.reduce sum %x dims [1] : tensor<1031x257xf32> to tensor<1031xf32>
  %c = fusion.reduce sum %x dims [0] : tensor<1031x257xf32> to tensor<257xf32>
  func.return %r, %c : tensor<1031xf32>, tensor<257xf32>
}""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_segmented_fusion_matches_float64(name):
    assert check_against_f64(CASES[name], np.random.default_rng(7)) == []


@pytest.mark.parametrize("seed", range(40))
def test_fuzz_fusion_as_one_hand_written_segment(seed):
    """A random fusion written as one hand-made segment runs and matches float64."""
    text = _one_segment(fuzz.random_fusion(seed))
    try:
        problems = check_against_f64(text, np.random.default_rng(seed))
    except Exception as e:  # refused the same way as without the segment (forced options aside)
        pytest.skip(f"refused: {e}")
    assert problems == []
