"""fusion-segment's cuts on the GPU against float64: hand-written segments (named, split, with a
pointwise operand pulled in, passing operands through), a matmul whose operand fusion-segment stores first, sibling row and
column sums of one input, and the examples each written as one hand-made segment. Skipped when no
GPU is found."""

from __future__ import annotations

import numpy as np
import pytest

from test_multi_output_gpu import check_against_f64
from test_segment import _one_segment

from fuser import api
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
    "joint_by_hand": """
func.func @joint_by_hand(%x: tensor<65x33xbf16>) -> (tensor<65xf32>, tensor<33xf32>) {
  %a, %b = fusion.segment (%xs = %x : tensor<65x33xbf16>) -> (tensor<65xf32>, tensor<33xf32>) {
    %r = fusion.reduce sum %xs dims [1] {dtype = "f32"} : tensor<65x33xbf16> to tensor<65xf32>
    %c = fusion.reduce max %xs dims [0] {dtype = "f32"} : tensor<65x33xbf16> to tensor<33xf32>
    fusion.yield %r, %c : tensor<65xf32>, tensor<33xf32>
  }
  func.return %a, %b : tensor<65xf32>, tensor<33xf32>
}""",
    "split_by_hand": """
func.func @split_by_hand(%x: tensor<65x33xbf16>, %y: tensor<65x33xf32>) -> (tensor<65xf32>, tensor<33xf32>) {
  %a, %b = fusion.segment (%xs = %x : tensor<65x33xbf16>, %ys = %y : tensor<65x33xf32>) -> (tensor<65xf32>, tensor<33xf32>) {
    %r = fusion.reduce sum %xs dims [1] {dtype = "f32"} : tensor<65x33xbf16> to tensor<65xf32>
    %c = fusion.reduce max %ys dims [0] : tensor<65x33xf32> to tensor<33xf32>
    fusion.yield %r, %c : tensor<65xf32>, tensor<33xf32>
  }
  func.return %a, %b : tensor<65xf32>, tensor<33xf32>
}""",
    # The joint row and column kernel: odd widths (scalar columns, 11 column blocks), bf16 with
    # cast epilogues, keepdim, rank 3 (columns over dims [0, 1]), tall inputs whose rows split
    # into chunks, and one block spanning the columns (rows stored by the first kernel).
    "joint_odd_bf16": """
func.func @joint_odd(%x: tensor<1037x333xbf16>) -> (tensor<1037xbf16>, tensor<1x333xf32>) {
  %r = fusion.reduce sum %x dims [1] {dtype = "f32"} : tensor<1037x333xbf16> to tensor<1037xf32>
  %c = fusion.reduce max %x dims [0] keepdim {dtype = "f32"} : tensor<1037x333xbf16> to tensor<1x333xf32>
  %rb = fusion.cast %r : tensor<1037xf32> to tensor<1037xbf16>
  func.return %rb, %c : tensor<1037xbf16>, tensor<1x333xf32>
}""",
    "joint_rank3_epilogue": """
func.func @joint_rank3(%x: tensor<7x9x130xf32>) -> (tensor<130xf32>, tensor<7x9x1xf32>) {
  %c = fusion.reduce sum %x dims [0, 1] : tensor<7x9x130xf32> to tensor<130xf32>
  %r = fusion.reduce min %x dims [2] keepdim : tensor<7x9x130xf32> to tensor<7x9x1xf32>
  %e = fusion.exp %r : tensor<7x9x1xf32>
  func.return %c, %e : tensor<130xf32>, tensor<7x9x1xf32>
}""",
    "joint_tall_narrow": """
func.func @joint_tall(%x: tensor<20011x48xf32>) -> (tensor<20011xf32>, tensor<48xf32>) {
  %r = fusion.reduce max %x dims [1] : tensor<20011x48xf32> to tensor<20011xf32>
  %c = fusion.reduce sum %x dims [0] : tensor<20011x48xf32> to tensor<48xf32>
  func.return %r, %c : tensor<20011xf32>, tensor<48xf32>
}""",
    "joint_wide_bf16": """
func.func @joint_wide(%x: tensor<129x4104xbf16>) -> (tensor<129xf32>, tensor<4104xbf16>) {
  %r = fusion.reduce sum %x dims [1] {dtype = "f32"} : tensor<129x4104xbf16> to tensor<129xf32>
  %c = fusion.reduce sum %x dims [0] {dtype = "f32"} : tensor<129x4104xbf16> to tensor<4104xf32>
  %cb = fusion.cast %c : tensor<4104xf32> to tensor<4104xbf16>
  func.return %r, %cb : tensor<129xf32>, tensor<4104xbf16>
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


@pytest.mark.parametrize("split", [1, 3])
def test_joint_reduction_with_forced_row_chunks_matches_float64(split):
    """The joint kernel with its rows forced into 1 or 3 chunks (column partials merged last)."""
    text = CASES["row_and_column_sums"]
    k = api.compile(text, pipeline=f"default{{split={split}}}")
    assert f"{split} row chunk(s)" in k.stages["sched"]
    assert check_against_f64(text, np.random.default_rng(split), pipeline=f"default{{split={split}}}") == []


@pytest.mark.parametrize("seed", range(40))
def test_fuzz_fusion_as_one_hand_written_segment(seed):
    """A random fusion written as one hand-made segment runs and matches the fuzzer's check."""
    case = fuzz.fuzz_case(seed)
    inputs = fuzz.make_inputs(case, seed)
    want, mags, dontcares = case.expected(inputs)
    status, detail = fuzz.check(case, _one_segment(case.text), "", inputs, want, True, mags, dontcares)
    if status == "refused":  # refused the same way as without the segment
        pytest.skip(f"refused: {detail}")
    assert status == "ok", detail
