"""fuser-fuzz on the CPU: its float64 evaluation agrees with the reference interpreter's
independent one, a run of random fusions (compile with varied options, ptxas, reference vs
float64) finds nothing, and a wrong answer is caught and shrunk to the output that shows it.
"""

from __future__ import annotations

import numpy as np

from fuser.runtime.reference import numpy_dtype, reference_from_text
from fuser.tools import fuzz


def _inputs(case, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, shape).astype(np.float32).astype(numpy_dtype(dt)) for shape, dt in case.inputs]


def test_fuzzer_semantics_agree_with_the_reference_interpreter():
    for seed in range(100):
        case = fuzz.fuzz_case(seed)
        xs = _inputs(case, seed)
        mine = case.evaluate(xs)
        ref = reference_from_text(case.text)(*xs, precision="f64")
        for a, b in zip(mine, ref):
            np.testing.assert_allclose(np.asarray(b, np.float64), a, rtol=1e-9, atol=1e-12, err_msg=f"seed {seed}")


def test_some_cases_are_3d_with_two_dim_reductions():
    """One case in six without a matmul is B x R x C; its columns reduce dims [0, 1] (sums,
    var_mean, welford) and broadcast back over both, and its rows reduce the last dim."""
    texts = [fuzz.fuzz_case(seed).text for seed in range(100)]
    three_d = [t for t in texts if any(f"tensor<{b}x{r}x{c}x" in t for b, r, c in fuzz.SHAPES_3D)]
    assert 8 <= len(three_d) <= 25, len(three_d)
    assert any("reduce sum" in t and "dims [0, 1]" in t for t in three_d)
    assert any("fusion.broadcast" in t and "dims [0, 1]" in t for t in three_d)
    assert any(("var_mean" in t or "welford" in t) and "dims [2]" in t for t in three_d)


def test_a_cpu_run_finds_nothing(capsys):
    counts = fuzz.run(60, 1000, gpu=False)
    assert counts["ok"] + counts["refused"] == 60, counts


def test_a_wrong_answer_is_caught_and_shrunk(tmp_path):
    case = fuzz.fuzz_case(3)
    xs = _inputs(case, 3)
    want = case.evaluate(xs)
    want[0] = want[0] + 1.0  # pretend the kernel got output #0 wrong
    status, detail = fuzz.check(case, case.text, "", xs, want, gpu=False)
    assert status == "mismatch" and detail.startswith("output #0")
    text, keep = fuzz.shrink(case, "", xs, want, False, status)
    assert keep == [0] and text.count("tensor<") < case.text.count("tensor<")


def test_cancellation_is_rounding_not_a_mismatch():
    """Seed 40533 on the H100: an output is sum(x - mean(x)) over 1000 rows, 0 in exact
    arithmetic, -2.7e-13 in float64 and -1.9e-5 from the float32 kernel. Its magnitude (the sum
    of what it added, ~2000) puts that within rounding; an error of 0.01 is still a mismatch."""
    rng = np.random.default_rng(40533)
    case = fuzz.fuzz_case(40533)
    xs = [rng.uniform(-2, 2, s).astype(np.float32).astype(numpy_dtype(dt)) for s, dt in case.inputs]
    want, mags = case.with_magnitudes(xs)
    got = want[1].copy()
    got[1] = -1.9073486328125e-05
    assert fuzz.mismatch(got, want[1], "f32", mags[1]) is None
    assert fuzz.mismatch(got, want[1], "f32") is not None  # without the magnitude it looked wrong
    got[1] = 0.01
    assert fuzz.mismatch(got, want[1], "f32", mags[1]) is not None
    assert np.all(mags[0] >= np.abs(want[0]))  # a magnitude bounds its value


def test_overflow_to_inf_is_rounding_not_a_mismatch():
    """An f16 output whose exact value is past 65520 is inf once rounded (seed 320 of a GPU
    run: 76519.97 came back as inf); a finite value there, or inf where the value is small, is
    still a mismatch."""
    import numpy as np
    want = np.array([76519.97, -70000.0, 65519.0, 1.0])
    assert fuzz.mismatch(np.array([np.inf, -np.inf, np.inf, 1.0]), want, "f16") is None
    assert fuzz.mismatch(np.array([np.inf, np.inf, 65504.0, 1.0]), want, "f16") is not None   # wrong sign
    assert fuzz.mismatch(np.array([np.inf, -np.inf, 65504.0, np.inf]), want, "f16") is not None  # inf for 1.0
    assert fuzz.mismatch(np.array([np.inf, -np.inf, 65504.0, 1.0]), want, "f32") is not None  # f32 has room
