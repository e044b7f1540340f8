"""fusion-translate-welford: the rewrite keeps every use of the Welford results, under each mode.

The reference interpreter runs the function before and after the pass on the same random
inputs; in float64 the two-pass form and Welford agree to rounding, so any wrong rewiring of
avg, M2, N, var or mean shows up. The decisions themselves are pinned by the lit tests in
test/lit/fusion-translate-welford.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fuser.dialects.fusion import dtype_name
from fuser.dialects.ir import parse_module, print_module
from fuser.passes.pipeline import build_pipeline, run_passes
from fuser.runtime.reference import reference_from_text

LAYER_NORM = """
func.func @layer_norm(%x: tensor<64x256xbf16>, %w: tensor<256xf32>, %b: tensor<256xf32>) -> (tensor<64x256xbf16>, tensor<64xf32>, tensor<64xf32>) {
  %var, %mean = fusion.var_mean %x dims [1] correction 0 : tensor<64x256xbf16> to tensor<64xf32>, tensor<64xf32>
  %eps = fusion.full 1.0e-05 : tensor<64xf32>
  %ve = fusion.add %var, %eps : tensor<64xf32>
  %rstd = fusion.rsqrt %ve : tensor<64xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<64xf32> to tensor<64x256xf32>
  %rb = fusion.broadcast %rstd dims [1] : tensor<64xf32> to tensor<64x256xf32>
  %xf = fusion.cast %x : tensor<64x256xbf16> to tensor<64x256xf32>
  %d = fusion.sub %xf, %mb : tensor<64x256xf32>
  %n = fusion.mul %d, %rb : tensor<64x256xf32>
  %wb = fusion.broadcast %w dims [0] : tensor<256xf32> to tensor<64x256xf32>
  %bb = fusion.broadcast %b dims [0] : tensor<256xf32> to tensor<64x256xf32>
  %y0 = fusion.mul %n, %wb : tensor<64x256xf32>
  %y1 = fusion.add %y0, %bb : tensor<64x256xf32>
  %y = fusion.cast %y1 : tensor<64x256xf32> to tensor<64x256xbf16>
  func.return %y, %mean, %rstd : tensor<64x256xbf16>, tensor<64xf32>, tensor<64xf32>
}
"""

WELFORD_KEEPDIM = """
func.func @w(%x: tensor<16x3x40xf32>) -> (tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xi64>, tensor<16x1x1xf32>) {
  %avg, %m2, %n = fusion.welford %x dims [1, 2] keepdim : tensor<16x3x40xf32> to tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xi64>
  %q = fusion.mul %avg, %m2 : tensor<16x1x1xf32>
  func.return %avg, %m2, %n, %q : tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xi64>, tensor<16x1x1xf32>
}
"""

FIRST_AXIS = """
func.func @cols(%x: tensor<300x24xf16>) -> (tensor<24xf32>, tensor<24xf32>) {
  %v, %m = fusion.var_mean %x dims [0] correction 1 : tensor<300x24xf16> to tensor<24xf32>, tensor<24xf32>
  func.return %v, %m : tensor<24xf32>, tensor<24xf32>
}
"""

CASES = {"layer_norm": LAYER_NORM, "welford_keepdim": WELFORD_KEEPDIM, "first_axis": FIRST_AXIS}


NP_DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _inputs(text: str, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    fn = reference_from_text(text).func_op
    arrays = []
    for a in fn.body.block.args:
        shape = tuple(a.type.get_shape())
        dt = NP_DTYPES[dtype_name(a.type.element_type)]
        # f32 data with a large mean and a small spread: the case a naive one-pass variance gets
        # wrong; a spread that survives rounding for the 16-bit types.
        if dt is np.float32 and not arrays:
            arrays.append((1e4 + rng.normal(0, 1e-2, shape)).astype(dt))
        else:
            arrays.append((rng.normal(size=shape) * 3 + 1).astype(dt))
    return arrays


def _translated(text: str, mode: str) -> str:
    module = parse_module(text)
    run_passes(build_pipeline(f"fusion-translate-welford{{mode={mode}}}"), module)
    return print_module(module)


@pytest.mark.parametrize("mode", ["auto", "always", "never"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_use_keeps_its_value(case: str, mode: str):
    text = CASES[case]
    after = _translated(text, mode)
    if mode == "always":
        assert "= fusion.welford " not in after and "= fusion.var_mean " not in after
    if mode == "never":
        assert 'fuser.welford = "kept (mode=never)"' in after
    args = _inputs(text, 0)
    want = reference_from_text(text)(*args, precision="f64")
    got = reference_from_text(after)(*args, precision="f64")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-9, atol=1e-12)


def test_auto_records_the_decision():
    after = _translated(LAYER_NORM, "auto")
    assert after.count('fuser.welford = "translated from fusion.var_mean (persistent:') == 3
    after = _translated(FIRST_AXIS, "auto")
    assert 'fuser.welford = "kept (' in after


def test_corrected_two_pass_survives_float32_rounding():
    """With every op rounded to f32, the translated variance of 1e4 + N(0, 1e-2) data stays
    within f32 tolerance of the float64 answer (the plain sum of squares minus the squared
    sum loses every digit here)."""
    text = """
func.func @vm(%x: tensor<8x4096xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %v, %m = fusion.var_mean %x dims [1] correction 1 : tensor<8x4096xf32> to tensor<8xf32>, tensor<8xf32>
  func.return %v, %m : tensor<8xf32>, tensor<8xf32>
}
"""
    x = (1e4 + np.random.default_rng(3).normal(0, 1e-2, (8, 4096))).astype(np.float32)
    var, mean = reference_from_text(_translated(text, "always"))(x, precision="native")
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(mean, x64.mean(1), rtol=1e-6)
    np.testing.assert_allclose(var, x64.var(1, ddof=1), rtol=2e-3)
