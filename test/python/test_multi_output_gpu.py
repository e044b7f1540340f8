"""Multi-output fusions on the GPU against float64: the shapes that once returned garbage (an
output another output reads, a value returned twice, an input returned as is, an output that
feeds a reduction, outputs of different shapes fed by one value, epilogue chains), then random
multi-output fusions from fuser-fuzz's generator (tools/fuzz/).

The fuzz run's size and seed come from FUSER_FUZZ_N (default 200) and FUSER_FUZZ_SEED (default:
drawn fresh, and printed so a failure can be replayed). Skipped when no GPU is found.
"""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest
from fuser.tools import fuzz
from fuser.tools.fuzz import mismatch

from fuser import api
from fuser.runtime.reference import numpy_dtype, reference_from_text
from fuser.tools.sanitize import CASES as SANITIZE_CASES

pytestmark = pytest.mark.gpu


def _inputs(k, rng):
    out = []
    for a in k.program.inputs:
        out.append(rng.uniform(-2, 2, a.shape).astype(np.float32).astype(numpy_dtype(a.dtype)))
    return out


def check_against_f64(text: str, rng, pipeline: str = "default") -> list[str]:
    """Compile and run `text` on fresh random inputs; the mismatches with float64, if any."""
    k = api.compile(text, pipeline=pipeline)
    inputs = _inputs(k, rng)
    got = k(*inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = reference_from_text(text)(*inputs, precision="f64")
    want = want if isinstance(want, (tuple, list)) else (want,)
    problems = []
    for i, (g, w, spec) in enumerate(zip(got, want, k.program.outputs)):
        why = mismatch(g, w, spec.dtype)
        if why:
            problems.append(f"output #{i} ({spec.dtype}): {why}")
    return problems


PATTERNS = {
    "output_feeds_output": """
func.func @f(%x: tensor<31x33xf32>) -> (tensor<31x33xf32>, tensor<31x33xf32>) {
  %t = fusion.tanh %x : tensor<31x33xf32>
  %y = fusion.mul %x, %t : tensor<31x33xf32>
  func.return %y, %t : tensor<31x33xf32>, tensor<31x33xf32>
}""",
    "returned_twice": """
func.func @f(%x: tensor<1000x37xf32>) -> (tensor<1000x37xbf16>, tensor<1000x37xbf16>) {
  %c = fusion.cast %x : tensor<1000x37xf32> to tensor<1000x37xbf16>
  func.return %c, %c : tensor<1000x37xbf16>, tensor<1000x37xbf16>
}""",
    "input_returned": """
func.func @f(%x: tensor<129x257xf32>) -> (tensor<129x257xf32>, tensor<129x257xf32>, tensor<129x257xf32>) {
  %e = fusion.exp %x : tensor<129x257xf32>
  func.return %x, %e, %x : tensor<129x257xf32>, tensor<129x257xf32>, tensor<129x257xf32>
}""",
    "output_feeds_reduction": """
func.func @f(%x: tensor<333x1025xf32>) -> (tensor<333x1025xf32>, tensor<333xf32>, tensor<1025xf32>) {
  %t = fusion.tanh %x : tensor<333x1025xf32>
  %s = fusion.reduce sum %t dims [1] : tensor<333x1025xf32> to tensor<333xf32>
  %c = fusion.reduce max %t dims [0] : tensor<333x1025xf32> to tensor<1025xf32>
  func.return %t, %s, %c : tensor<333x1025xf32>, tensor<333xf32>, tensor<1025xf32>
}""",
    "shapes_from_one_value": """
func.func @f(%x: tensor<96x40xf32>) -> (tensor<96x40xf32>, tensor<3840xf32>, tensor<40x96xf16>) {
  %e = fusion.sigmoid %x : tensor<96x40xf32>
  %r = fusion.reshape %e : tensor<96x40xf32> to tensor<3840xf32>
  %p = fusion.permute %e [1, 0] : tensor<96x40xf32> to tensor<40x96xf32>
  %h = fusion.cast %p : tensor<40x96xf32> to tensor<40x96xf16>
  func.return %e, %r, %h : tensor<96x40xf32>, tensor<3840xf32>, tensor<40x96xf16>
}""",
    "epilogue_chain": """
func.func @f(%x: tensor<517x300xf32>) -> (tensor<517xf32>, tensor<517xf32>, tensor<517xf32>) {
  %s = fusion.reduce sum %x dims [1] : tensor<517x300xf32> to tensor<517xf32>
  %a = fusion.tanh %s : tensor<517xf32>
  %b = fusion.mul %a, %s : tensor<517xf32>
  func.return %b, %a, %s : tensor<517xf32>, tensor<517xf32>, tensor<517xf32>
}""",
    "normalization_outputs_feed_outputs": """
func.func @f(%x: tensor<300x1000xbf16>, %w: tensor<1000xf32>) -> (tensor<300x1000xf32>, tensor<300x1000xbf16>, tensor<300xf32>) {
  %var, %mean = fusion.var_mean %x dims [1] correction 0 : tensor<300x1000xbf16> to tensor<300xf32>, tensor<300xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<300xf32> to tensor<300x1000xf32>
  %xf = fusion.cast %x : tensor<300x1000xbf16> to tensor<300x1000xf32>
  %d = fusion.sub %xf, %mb : tensor<300x1000xf32>
  %wb = fusion.broadcast %w dims [0] : tensor<1000xf32> to tensor<300x1000xf32>
  %y = fusion.mul %d, %wb : tensor<300x1000xf32>
  %yb = fusion.cast %y : tensor<300x1000xf32> to tensor<300x1000xbf16>
  func.return %d, %yb, %var : tensor<300x1000xf32>, tensor<300x1000xbf16>, tensor<300xf32>
}""",
    # a row kernel's output returned and read by a matmul through a segment_set (a loss's logits
    # gradient): written once by the row kernel, and the matmul reads the output's buffer (its
    # product returned as bf16: float64 multiplies the unrounded cast, the kernel the bf16 one)
    "softmax_returned_and_matmul": SANITIZE_CASES["rows_set_into_matmul"][0],
    # a pointwise gradient returned and read by a matmul through a segment_set (SiLU's): stored once
    "silu_returned_and_matmul": """
func.func @f(%x: tensor<300x512xf32>, %w: tensor<512x264xbf16>) -> (tensor<300x512xbf16>, tensor<300x264xbf16>) {
  %s = fusion.sigmoid %x : tensor<300x512xf32>
  %m = fusion.mul %x, %s : tensor<300x512xf32>
  %g = fusion.cast %m : tensor<300x512xf32> to tensor<300x512xbf16>
  %c = fusion.segment_set %g : tensor<300x512xbf16> to tensor<300x512xbf16>
  %y = fusion.matmul %c, %w : tensor<300x512xbf16>, tensor<512x264xbf16> -> tensor<300x264xf32>
  %yb = fusion.cast %y : tensor<300x264xf32> to tensor<300x264xbf16>
  func.return %g, %yb : tensor<300x512xbf16>, tensor<300x264xbf16>
}""",
    "matmul_epilogue_chain": """
func.func @f(%a: tensor<200x128xbf16>, %b: tensor<128x264xbf16>) -> (tensor<200x264xf32>, tensor<200x264xbf16>, tensor<200x264xf32>) {
  %c = fusion.matmul %a, %b : tensor<200x128xbf16>, tensor<128x264xbf16> -> tensor<200x264xf32>
  %r = fusion.relu %c : tensor<200x264xf32>
  %s = fusion.mul %r, %c : tensor<200x264xf32>
  %o = fusion.cast %s : tensor<200x264xf32> to tensor<200x264xbf16>
  func.return %r, %o, %c : tensor<200x264xf32>, tensor<200x264xbf16>, tensor<200x264xf32>
}""",
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_matches_f64(name):
    problems = check_against_f64(PATTERNS[name], np.random.default_rng())
    assert not problems, "\n".join(problems)


def test_random_multi_output_fusions_match_f64():
    """Random fusions of every op and element type, with the fuzzer's own inputs (0/1 masks,
    integers, ties) and its check (masks and integers exactly, except elements within rounding
    of a comparison's threshold; floats to their dtype's tolerance). Default options: the
    option variants are fuser-fuzz's job. 40 cases by default (about 90 s on one H100 worker, the
    longest test of the GPU suite at 200); FUSER_FUZZ_N=N for more, or fuser-fuzz --gpu."""
    n = int(os.environ.get("FUSER_FUZZ_N", "40"))
    base = int(os.environ.get("FUSER_FUZZ_SEED", str(random.randrange(1 << 30))))
    t0 = time.perf_counter()
    failures, outputs = [], 0
    for seed in range(base, base + n):
        case = fuzz.fuzz_case(seed)
        inputs = fuzz.make_inputs(case, seed)
        want, mags, dontcares = case.expected(inputs)
        status, detail = fuzz.check(case, case.text, "", inputs, want, True, mags, dontcares)
        outputs += len(case.outputs)
        if status != "ok":  # a refusal is a failure too: every generated fusion is valid by default
            failures.append(f"seed {seed}: {status}: {detail}")
    print(f"\nfuzz: {n} multi-output fusions ({outputs} outputs) from seed {base} in "
          f"{time.perf_counter() - t0:.0f} s: {len(failures)} failed")
    assert not failures, f"{len(failures)} of {n} fusions wrong (FUSER_FUZZ_SEED={base}):\n" + "\n".join(failures[:20])
