"""fuser-fuzz on the CPU: its float64 evaluation agrees with the reference interpreter's
independent one, it generates every op, element type and cast the dialect accepts, a run of
random fusions (compile with varied options, ptxas, reference vs float64) finds nothing, a
wrong answer is caught and shrunk to the output that shows it, and `--gpu` without a GPU says so.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections import Counter

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import i1

from fuser.dialects import fusion as F
from fuser.dialects.fusion.layout import input_layout, output_alias, output_order
from fuser.dialects.ir import parse_module
from fuser.passes.layouts import apply_layouts
from fuser.runtime.reference import reference_from_text
from fuser.tools import fuzz


def test_fuzzer_semantics_agree_with_the_reference_interpreter():
    """In the reference's f64 mode (float casts and constants keep float64) both evaluations
    compute the same thing: floats to 1e-9, masks and integers exactly."""
    for seed in range(100):
        case = fuzz.fuzz_case(seed)
        xs = fuzz.make_inputs(case, seed)
        mine = case.evaluate(xs, rounding=False)
        ref = reference_from_text(case.text)(*xs, precision="f64")
        for i, (a, b, dt) in enumerate(zip(mine, ref, case.outputs)):
            if dt in fuzz.DISCRETE:
                np.testing.assert_array_equal(b, a, err_msg=f"seed {seed} output #{i}")
            else:
                np.testing.assert_allclose(np.asarray(b, np.float64), a, rtol=1e-9, atol=1e-12,
                                           err_msg=f"seed {seed} output #{i}")


def test_exact_outputs_agree_with_the_reference_in_float32():
    """The reference's float32 mode computes and rounds as a kernel does: every output passes
    `mismatch` as the GPU run applies it (exact ones bit for bit, masks and integers except
    their don't-care elements), and most masks have no don't-care element at all."""
    dontcare = masks = 0
    for seed in range(100):
        case = fuzz.fuzz_case(seed)
        xs = fuzz.make_inputs(case, seed)
        want, mags, dcs = case.expected(xs)
        got = reference_from_text(case.text)(*xs, precision="native")
        for i, key in enumerate(case.checks):
            assert fuzz.mismatch(got[i], want[i], key, mags[i], dcs[i]) is None, f"seed {seed} output #{i}"
            if key == "i1":
                masks += 1
                dontcare += dcs[i] is not None and bool(dcs[i].any())
    assert masks >= 20 and dontcare <= masks // 3, (masks, dontcare)


def test_casts_round_and_truncate_as_torch():
    cast = fuzz._cast
    # i64 -> f32 to nearest (ties to even); -> bf16 through f32, rounding twice
    x = np.array([2 ** 24 + 1, 2 ** 24 + 3, 2 ** 40 + 2 ** 15, -(2 ** 40) - 3 * 2 ** 15], np.int64)
    assert cast(x, "i64", "f32").tolist() == [2 ** 24, 2 ** 24 + 4, 2 ** 40, -(2 ** 40) - 2 ** 17]
    assert cast(np.array([2 ** 24 + 2 ** 16 + 1], np.int64), "i64", "bf16").tolist() == [2 ** 24]
    # f64 -> bf16 through f32: 1 + 2^-8 + 2^-30 is 1 + 2^-8 in f32, a tie that bf16 rounds to even
    assert cast(np.array([1 + 2 ** -8 + 2 ** -30]), "f64", "bf16").tolist() == [1.0]
    assert cast(np.array([1 + 2 ** -8 + 2 ** -20]), "f64", "bf16").tolist() == [1 + 2 ** -7]
    # float -> i64: toward zero, saturating, NaN -> 0; -> i1: != 0, NaN true
    f = np.array([-2.7, 2.7, -0.5, 1e30, -1e30, np.nan, 2.0 ** 63, -(2.0 ** 63)])
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    assert cast(f, "f32", "i64").tolist() == [-2, 2, 0, big, small, 0, big, small]
    assert cast(np.array([0.0, -0.0, np.nan, 1e-40]), "f64", "i1").tolist() == [False, False, True, True]
    assert cast(np.array([True, False]), "i1", "bf16").tolist() == [1.0, 0.0]
    assert cast(np.array([-3, 0], np.int64), "i64", "i1").tolist() == [True, False]
    # narrow integers: a float saturates into i32 (NaN -> 0), and i8 and i16 wrap that (torch on
    # CUDA); into u8 through i64, wrapping
    g = np.array([300.7, -300.7, -1.5, np.nan, 1e10])
    assert cast(g, "f32", "i8").tolist() == [44, -44, -1, 0, -1]
    assert cast(g, "f32", "i16").tolist() == [300, -300, -1, 0, -1]
    assert cast(g, "f64", "i32").tolist() == [300, -300, -1, 0, 2 ** 31 - 1]
    assert cast(g, "bf16", "u8").tolist() == [44, 212, 255, 0, 10 ** 10 % 256]
    # integers wrap and extend (u8 by zeros); to f16 through f32
    assert cast(np.array([-1, 300, -129], np.int32), "i32", "u8").tolist() == [255, 44, 127]
    assert cast(np.array([255, 128], np.uint8), "u8", "i16").tolist() == [255, 128]
    assert cast(np.array([255, 128], np.uint8), "u8", "i8").tolist() == [-1, -128]
    assert cast(np.array([-128], np.int8), "i8", "i64").tolist() == [-128]
    assert cast(np.array([2 ** 31 - 1, 2049], np.int32), "i32", "f16").tolist() == [np.inf, 2048.0]
    # the reference interpreter's f64 mode: float targets keep float64
    assert cast(np.array([2 ** 24 + 1], np.int64), "i64", "f32", rounding=False).tolist() == [2 ** 24 + 1]


def test_masks_and_integers_are_compared_exactly():
    want = np.array([True, False, True, True])
    assert fuzz.mismatch(want.copy(), want, "i1") is None
    assert fuzz.mismatch(np.array([1, 0, 1, 2], np.uint8), want, "i1").startswith("1 of 4 elements differ")
    assert fuzz.mismatch(~want, want, "i1").startswith("4 of 4")
    dc = np.array([True, True, False, False])
    assert fuzz.mismatch(np.array([False, True, True, True]), want, "i1", dontcare=dc) is None
    n = np.array([2 ** 40, -3, 0], np.int64)
    assert fuzz.mismatch(n + np.array([1, 0, 0]), n, "i64").startswith("1 of 3 elements differ")
    assert fuzz.mismatch(np.array([1.0, np.nan]), np.array([1.0, np.nan]), "exact") is None
    assert fuzz.mismatch(np.array([1.0 + 2 ** -52, 0.0]), np.array([1.0, 0.0]), "exact") is not None
    assert fuzz.mismatch(np.array([1.0 + 1e-10]), np.array([1.0]), "f64") is not None
    inf = np.array([-np.inf, np.inf])  # equal infinities match at any tolerance (GPU fuzz seed 9080)
    assert fuzz.mismatch(inf, inf, "f32") is None and fuzz.mismatch(inf[::-1], inf, "f32") is not None


def test_comparisons_within_rounding_are_dont_care():
    """lt of two computed values a hair apart may go either way in float32: don't-care; the
    same comparison of inputs is exact, so it is checked everywhere."""
    g = fuzz._Gen(random.Random(0), "t")
    g.rows, g.cols = 1, 3
    x = g.add_arg("in0", "full", "f32")
    y = g.emit("ta", "full", f"fusion.tanh %in0 : {g.ty('full')}", [x])
    z = g.emit("ta", "full", f"fusion.tanh %in0 : {g.ty('full')}", [x])
    c = g.const(0.5, "full")
    inexact = g.emit("q", "full", f"fusion.cmp lt, %{y.name}, %{c.name} : {g.ty('full')}", [y, c], "i1")
    same = g.emit("q", "full", f"fusion.cmp le, %{y.name}, %{z.name} : {g.ty('full')}", [y, z], "i1")
    exact = g.emit("q", "full", f"fusion.cmp lt, %in0, %{c.name} : {g.ty('full')}", [x, c], "i1")
    g.outputs = [inexact, same, exact]
    xs = [np.array([[np.arctanh(0.5) + 1e-9, 2.0, -2.0]])]
    vals, _, dcs = g.expected(xs)
    assert inexact.dc and not exact.dc
    assert dcs[0].tolist() == [[True, False, False]] and dcs[1].all() and dcs[2] is None
    assert vals[2].tolist() == [[False, False, True]]


def test_some_cases_are_3d_with_two_dim_reductions():
    """One case in six without a matmul is B x R x C; its columns reduce dims [0, 1] (sums,
    var_mean, welford) and broadcast back over both, and its rows reduce the last dim."""
    texts = [fuzz.fuzz_case(seed).text for seed in range(100)]
    three_d = [t for t in texts if any(f"tensor<{b}x{r}x{c}x" in t for b, r, c in fuzz.SHAPES_3D)]
    assert 8 <= len(three_d) <= 25, len(three_d)
    assert any("reduce sum" in t and "dims [0, 1]" in t for t in three_d)
    assert any("fusion.broadcast" in t and "dims [0, 1]" in t for t in three_d)
    assert any(("var_mean" in t or "welford" in t) and "dims [2]" in t for t in three_d)


# What the fuzzer does not generate, and why; every other op of the dialect must appear.
NOT_FUZZED = {
    "fusion.segment": "made by fusion-segment from every case; one written by hand only pins kernel "
                      "boundaries the segmenter would choose (test_segment.py wraps fuzz cases in one)",
    "fusion.yield": "the terminator of fusion.segment",
}


def _live_ops(fn: func.FuncOp) -> list:
    """The ops the function's results depend on (dead ones are removed before any kernel)."""
    ret = fn.body.block.last_op
    stack, seen = [v.owner for v in ret.operands], set()
    while stack:
        op = stack.pop()
        if op in seen or op not in fn.body.block.ops:  # a block argument
            continue
        seen.add(op)
        stack += [v.owner for v in op.operands]
    return [op for op in fn.body.block.ops if op in seen]


COVERAGE_SEEDS = 800  # (each op x type pair needs to come up: more ops and types, more seeds)


def test_every_op_type_and_cast_of_the_dialect_is_generated():
    """Over COVERAGE_SEEDS seeds, every op the dialect accepts (but NOT_FUZZED), every element type as an
    input, an output and an intermediate, every cast between two element types, every cmp
    predicate, reduce kind and scan kind (each over every integer type, i1 and f32), sorts over every
    type (whole and topk, both ways), shape ops and segment_set over every type, cmp, where and
    full over every float type, integer type and i1, and every op that takes integers over every
    integer type reach a result. Adding an op or a type to the dialect fails this
    until the fuzzer draws it (and its evaluation knows it)."""
    seen: Counter = Counter()
    name = lambda t: F.dtype_name(t.element_type)  # noqa: E731
    for seed in range(COVERAGE_SEEDS):
        fn = next(o for o in parse_module(fuzz.random_fusion(seed)).walk() if isinstance(o, func.FuncOp))
        # Layouts at the boundary (issue 32): strided inputs of every type (an expanded one, one
        # with a step, one stored in another dim order), outputs in a stride order; fusion-layouts
        # reads the strided ones through fusion.as_strided, counted below with the other ops.
        for i, a in enumerate(fn.body.block.args):
            lay = input_layout(fn, i)
            if lay is not None:
                seen[("strided input", name(a.type))] += 1
                seen[("strided input", "expanded" if 0 in lay.strides else "gapped or permuted")] += 1
                if min((s for s in lay.strides if s), default=1) > 1:
                    seen[("strided input", "step")] += 1
                if lay.strides != tuple(sorted(lay.strides, reverse=True)):
                    seen[("strided input", "permuted")] += 1
        for j, r in enumerate(fn.function_type.outputs.data):
            if output_order(fn, j) is not None:
                seen[("stride_order output", name(r))] += 1
            if output_alias(fn, j) is not None:  # in-place outputs (issue 32)
                seen[("aliased output", name(r))] += 1
        apply_layouts(fn)
        live, results = _live_ops(fn), list(fn.body.block.last_op.operands)
        read = {v for op in live for v in op.operands} | set(results)
        seen.update(("input", name(a.type)) for a in fn.body.block.args if a in read)
        seen.update(("output", name(r.type)) for r in results)
        for op in live:
            seen[("op", op.name)] += 1
            seen.update(("intermediate", name(r.type)) for r in op.results if r not in results)
            if isinstance(op, F.CastOp):
                seen[("cast", name(op.input.type), name(op.result.type))] += 1
            if isinstance(op, F.CmpOp):
                seen[("predicate", op.predicate.data)] += 1
            if isinstance(op, F.ReduceOp):
                seen[("reduce", op.kind.data)] += 1
                seen[("reduce", op.kind.data, name(op.input.type))] += 1
            if isinstance(op, F.ScanOp):
                seen[("scan", op.kind.data, name(op.input.type))] += 1
            if isinstance(op, (F.VarMeanOp, F.WelfordOp)):
                seen[(op.name, name(op.input.type))] += 1
            if isinstance(op, F.GeluOp):
                seen[("gelu", op.approximate, name(op.input.type))] += 1
            if isinstance(op, F.SortOp):
                seen[("sort", name(op.input.type))] += 1
                seen[("sort", "topk" if op.k is not None else "whole", op.is_descending)] += 1
            if isinstance(op, F.ScatterAddAtomicOp):
                seen[("scatter", "atomic", name(op.input.type))] += 1
            if isinstance(op, F.ScatterOp):
                seen[("scatter", "add" if op.is_add else "set")] += 1
                seen[("scatter", "sorted" if F._dims(op.src.type)[op.dim.data] > 16 else "unsorted")] += 1
                seen[("scatter", "shared line" if 1 in op.line_shape() and 1 not in F._dims(op.src.type) else "lines")] += 1
            if isinstance(op, (*F.SHAPE_OPS, F.SegmentSetOp, F.CmpOp)):
                seen[(op.name, name(op.operands[0].type))] += 1
            if isinstance(op, (F.WhereOp, F.FullOp, F.UnaryOp, F.BinaryOp, *F.CREATION_OPS)):
                seen[(op.name, name(op.results[0].type))] += 1
    types, floats = list(F.DTYPE_NAMES), [F.dtype_name(t()) for t in F.FLOAT_TYPES]
    want = {("op", op.name) for op in F.Fusion.operations if op.name not in NOT_FUZZED}
    want |= {(role, t) for role in ("input", "output", "intermediate") for t in types}
    want |= {("cast", a, b) for a in types for b in types if a != b}  # a cast to its own type is folded away
    want |= {("predicate", p) for p in F.CMP_PREDICATES} | {("reduce", k) for k in F.REDUCE_KINDS}
    want |= {(op.name, t) for op in (*F.SHAPE_OPS, F.SegmentSetOp) for t in types}
    want |= {(op.name, t) for op in (F.CmpOp, F.WhereOp, F.FullOp) for t in floats}
    # the integer ops (issue 31) over every integer type; cmp, where and full over integers and masks
    ints = list(F.INT_DTYPES)
    want |= {(op.name, t) for op in (*F.UNARY_OPS, *F.BINARY_OPS) if F.INT_TYPES[0] in op.ELEMENTS for t in ints}
    want |= {(op.name, "i1") for op in (*F.UNARY_OPS, *F.BINARY_OPS) if i1 in op.ELEMENTS}  # bitwise ops of masks
    want |= {(op.name, t) for op in (F.CmpOp, F.WhereOp, F.FullOp) for t in ints + ["i1"]}
    # every reduce kind over every integer type, masks and f32 (issue 31)
    want |= {("reduce", k, t) for k in F.REDUCE_KINDS for t in ints + ["i1", "f32"]}
    # every scan kind over every integer type, masks and f32; max and min of bf16 (issue 31)
    want |= {("scan", k, t) for k in F.SCAN_KINDS for t in ints + ["i1", "f32"]}
    want |= {("scan", k, "bf16") for k in ("max", "min")}
    # sort over every type it takes; whole rows and topk, each both ways (issue 32)
    want |= {("sort", F.dtype_name(t() if isinstance(t, type) else t)) for t in F.SORT_INPUT_TYPES}
    want |= {("sort", what, d) for what in ("whole", "topk") for d in (False, True)}
    # scatters (issue 32): written and added, index lines short and sorted, of src's shape and shared
    want |= {("scatter", w) for w in ("add", "set", "sorted", "unsorted", "shared line", "lines")}
    want |= {("scatter", "atomic", t) for t in F.SCATTER_ATOMIC_TYPES}  # atomic adds of each type they take
    # iota over every numeric type, uniform and normal over each float type they take (issue 31)
    from fuser.dialects.fusion.creation import IOTA_TYPES
    for op, allowed in ((F.IotaOp, IOTA_TYPES), (F.UniformOp, F.UniformOp.ELEMENTS), (F.NormalOp, F.NormalOp.ELEMENTS)):
        want |= {(op.name, F.dtype_name(t() if isinstance(t, type) else t)) for t in allowed}
    # nextafter over every float type it takes, f64 included (issue 31)
    want |= {(F.NextafterOp.name, F.dtype_name(t())) for t in F.NextafterOp.ELEMENTS}
    # f64 computed in f64 (issue 31): every unary and binary float op the fuzzer's f64 chains draw,
    # reductions (sum, prod, max, min) and scans (sum, max, min) of f64, var_mean and welford of f64
    from fuser.tools.fuzz.f64_part import F64_ANY, F64_BINARY, F64_OF_ONE_PLUS, F64_OF_TANH
    want |= {(f"fusion.{op}", "f64") for op in (*F64_ANY, *F64_OF_TANH, *F64_OF_ONE_PLUS, *F64_BINARY)}
    want |= {("reduce", k, "f64") for k in ("sum", "prod", "max", "min")}
    want |= {("scan", k, "f64") for k in ("sum", "max", "min")}
    want |= {(op, "f64") for op in ("fusion.var_mean", "fusion.welford")}
    want |= {("gelu", form, "f64") for form in ("none", "tanh")}  # both forms of gelu in f64
    # strided inputs of every type and every kind, outputs in a stride order (issue 32)
    want |= {("strided input", t) for t in types + ["expanded", "gapped or permuted", "step", "permuted"]}
    want |= {("stride_order output", t) for t in ("f32", "bf16", "f16")}
    # in-place outputs (fusion.alias) of every type (issue 32)
    want |= {("aliased output", t) for t in types}
    missing = sorted(want - set(seen))
    assert not missing, f"never generated over {COVERAGE_SEEDS} seeds: {missing}"
    assert fuzz.CMP_PREDICATES == F.CMP_PREDICATES


def test_the_float_part_of_a_case_does_not_depend_on_its_typed_part(monkeypatch):
    """The typed part draws from its own stream after the float part: without it a seed gives
    the same float ops, and the same inputs for them."""
    for seed in range(40):
        with_typed = fuzz.fuzz_case(seed)
        monkeypatch.setattr(fuzz.runner, "TYPED_SHARE", 0.0)
        plain = fuzz.fuzz_case(seed)
        monkeypatch.undo()
        body = plain.text.splitlines()[1:-2]
        assert with_typed.text.splitlines()[1:1 + len(body)] == body
        xs, ys = fuzz.make_inputs(plain, seed), fuzz.make_inputs(with_typed, seed)
        assert all(np.array_equal(x, y) for x, y in zip(xs, ys))


def test_a_cpu_run_finds_nothing(capsys):
    # (12 cases: the loop end to end, every pass's output verified; the generator's reach is
    # test_every_op_type_..., and the fuzz runs off CI are the thousands)
    counts = fuzz.run(12, 1000, gpu=False)
    assert counts["ok"] + counts["refused"] == 12, counts


def test_a_run_with_a_time_limit_stops_and_says_so():
    lines = []
    counts = fuzz.run(50, 1000, gpu=False, log=lines.append, seconds=0.0)
    assert sum(counts.values()) == 1  # (at least one case runs)
    assert any(x.startswith("fuser-fuzz: 1 of 50 (stopped at --seconds 0) cases from seed 1000") for x in lines), lines


def test_a_wrong_answer_is_caught_and_shrunk(tmp_path):
    # the first case with a mask among at least three outputs (seeds move as the generator grows)
    seed, k = next((s, c.outputs.index("i1", 1)) for s in range(100) for c in [fuzz.fuzz_case(s)]
                   if len(c.outputs) >= 3 and "i1" in c.outputs[1:])
    case = fuzz.fuzz_case(seed)
    xs = fuzz.make_inputs(case, seed)
    want, mags, dcs = case.expected(xs)
    want[k] = ~want[k]  # pretend the kernel got mask #k wrong
    status, detail = fuzz.check(case, case.text, "", xs, want, False, mags, dcs)
    assert status == "mismatch" and detail.startswith(f"output #{k} (i1): ") and "elements differ" in detail
    text, keep = fuzz.shrink(case, "", xs, want, False, status, mags, dcs)
    assert keep == [k] and text.count("tensor<") < case.text.count("tensor<")


def test_cancellation_is_rounding_not_a_mismatch():
    """Seed 40533 on the H100: an output is sum(x - mean(x)) over 1000 rows, 0 in exact
    arithmetic, -2.7e-13 in float64 and -1.9e-5 from the float32 kernel. Its magnitude (the sum
    of what it added, ~2000) puts that within rounding; an error of 0.01 is still a mismatch."""
    case = fuzz.fuzz_case(40533)
    xs = fuzz.make_inputs(case, 40533)
    want, mags = case.with_magnitudes(xs)
    got = want[1].copy()
    got[1] = -1.9073486328125e-05
    assert fuzz.mismatch(got, want[1], "f32", mags[1]) is None
    assert fuzz.mismatch(got, want[1], "f32") is not None  # without the magnitude it looked wrong
    got[1] = 0.01
    assert fuzz.mismatch(got, want[1], "f32", mags[1]) is not None
    assert np.all(mags[0] >= np.abs(want[0]))  # a magnitude bounds its value


def test_a_wrapping_cast_whose_bound_spans_whole_wraps_is_dont_care():
    """GPU fuzz seed 79660634 (H200): sum((mm - x) * mm) * 4 near 9e5, cast to i8 (wrapping the
    saturated i32), came back -2 where float64 says -1. Element 35's error bound (896) spans
    exactly 7 * 256 integers, so the two ends of the bound wrapped to the same i8 and the
    don't-care test, which compared the wrapped ends, missed it; the ends are compared before
    wrapping now. A bound inside one integer step keeps the element exact."""
    case = fuzz.fuzz_case(79660634)
    want, mags, dcs = case.expected(fuzz.make_inputs(case, 79660634))
    assert want[5][35] == -1 and dcs[5][35] and dcs[5].all()
    from fuser.tools.fuzz.semantics import _trunc_int, _trunc_unwrapped
    x, m = np.array([770815.6457]), np.array([896.0])
    assert _trunc_int(x - m, "i8") == _trunc_int(x + m, "i8")  # the wrap hides the step
    assert _trunc_unwrapped(x - m, "i8") != _trunc_unwrapped(x + m, "i8")
    assert _trunc_unwrapped(np.array([3.2]), "i8") == _trunc_unwrapped(np.array([3.9]), "i8")


def test_a_scatter_that_adds_in_bf16_rounds_to_bf16():
    """GPU fuzz seed 475854459 (H200; the CPU reference agrees): a bf16 scatter that adds, cast
    to f64 and returned, came back -1.828125 (a bf16 value) where float64 says -1.82421875 (not
    one): the semantics gave the scatter's sum float32's tolerance, as for the generator's other
    arithmetic, which it makes in f32 or f64 only. A scatter that adds rounds to its own type."""
    case = fuzz.fuzz_case(475854459)
    xs = fuzz.make_inputs(case, 475854459)
    want, mags, dcs = case.expected(xs)
    key = case.checks[3]
    assert key == "bf16"
    got = want[3].astype(ml_dtypes.bfloat16).astype(np.float64)  # every element rounded to bf16
    assert not np.array_equal(got, want[3])
    assert fuzz.mismatch(got, want[3], key, mags[3], dcs[3]) is None
    assert fuzz.mismatch(got, want[3], "f32", mags[3], dcs[3]) is not None  # float32's bound missed it


def test_fp8_matmul_accumulation_is_rounding_not_a_mismatch():
    """Two GPU fuzz failures on an H200 that were Hopper's FP8 accumulator, not bugs: its wgmma
    truncates the f32 running sum to 13 mantissa bits at each k-step of 32
    (fp8.matmul_accumulation_bound), and the semantics take that bound as the matmul's error.
    Seed 78378602: an e4m3 matmul (K = 256) times an iota of up to 75826, cast to f16, came back
    32512 where float64 says 32096; seed 19092101: 4 * cos of an e5m2 matmul (K = 1008) cast to
    i64 came back 0 where float64 says -1 (now a don't-care element). Past the bound it is still
    a mismatch, and a bf16 matmul keeps float32's slack."""
    from fuser.dialects.fusion.fp8 import matmul_accumulation_bound
    case = fuzz.fuzz_case(78378602)
    xs = fuzz.make_inputs(case, 78378602)
    want, mags = case.with_magnitudes(xs)
    at = (278, 103)
    assert want[1][at] == 32096.0
    got = want[1].copy()
    got[at] = 32512.0
    assert fuzz.mismatch(got, want[1], "f16", mags[1]) is None
    bound = fuzz.ROUNDING_SLACK * mags[1][at] + fuzz.TOLERANCE["f16"] * (abs(want[1][at]) + np.max(np.abs(want[1])))
    got[at] = want[1][at] + 1.01 * bound
    assert fuzz.mismatch(got, want[1], "f16", mags[1]) is not None

    case = fuzz.fuzz_case(19092101)
    want, mags, dcs = case.expected(fuzz.make_inputs(case, 19092101))
    assert want[5][41, 16] == -1 and dcs[5][41, 16]

    # all ones, K = 256: running sums 32, 64, ..., 256 at the 8 steps, and 256 |products|
    a, b = np.ones((2, 256)), np.ones((256, 3))
    assert np.all(matmul_accumulation_bound(a, b) == (32 * 36 + 256) * 2.0 ** -13)
    gen = fuzz.generator._Gen(random.Random(0), "t")
    gen.ta, gen.tb = False, True
    for elem, mag in (("f8E4M3FN", (32 * 36 + 256) * 2.0 ** -13 / fuzz.ROUNDING_SLACK), ("bf16", 256)):
        rhs = (f"fusion.matmul %ma, %mb transpose_b : tensor<2x256x{elem}>, tensor<3x256x{elem}> "
               "-> tensor<2x3xf32>")
        assert np.all(gen._magnitude(rhs, "full")([a, b.T], [a, b.T]) == mag)


def test_overflow_to_inf_is_rounding_not_a_mismatch():
    """An f16 output whose exact value is past 65520 is inf once rounded (seed 320 of a GPU
    run: 76519.97 came back as inf); a finite value there, or inf where the value is small, is
    still a mismatch."""
    want = np.array([76519.97, -70000.0, 65519.0, 1.0])
    assert fuzz.mismatch(np.array([np.inf, -np.inf, np.inf, 1.0]), want, "f16") is None
    assert fuzz.mismatch(np.array([np.inf, np.inf, 65504.0, 1.0]), want, "f16") is not None   # wrong sign
    assert fuzz.mismatch(np.array([np.inf, -np.inf, 65504.0, np.inf]), want, "f16") is not None  # inf for 1.0
    assert fuzz.mismatch(np.array([np.inf, -np.inf, 65504.0, 1.0]), want, "f32") is not None  # f32 has room
    # f32's own threshold (a running product past 3.4e38: GPU fuzz seeds 9900120 and 9902309)
    assert fuzz.mismatch(np.array([np.inf, 1.0]), np.array([4.596e38, 1.0]), "f32") is None
    assert fuzz.mismatch(np.array([np.inf, 1.0]), np.array([3.0e38, 1.0]), "f32") is not None
    # a value whose error bound (its magnitude: tan near a pole) reaches the threshold may overflow
    # (GPU fuzz seed 9402803: -28.75 exactly, -inf on the H100); one that cannot, may not
    near_pole = np.array([-28.75])
    assert fuzz.mismatch(np.array([-np.inf]), near_pole, "f16", magnitude=np.array([1e12])) is None
    assert fuzz.mismatch(np.array([-np.inf]), near_pole, "f16", magnitude=np.array([30.0])) is not None


@pytest.mark.parametrize("seed", [11340562, 11340883])
def test_an_lgamma_pole_within_rounding_is_dont_care(seed):
    """An lgamma operand that f32 rounds onto a pole: acosh(1 + x*x) with x*x lost, or a tiny
    value flushed to 0. The reference computes lgamma(0) = +inf where float64 has 9.9 or 152.7
    (CPU fuzz seeds 11340562, 11340883). Where a pole lies within the operand's error bound,
    either answer is right."""
    assert fuzz.run(1, seed, gpu=False, log=lambda *_: None)["mismatch"] == 0


def _no_gpu(monkeypatch):
    from fuser.runtime import driver

    def require_gpu():
        raise driver.NoGPUError("no NVIDIA GPU/driver found: the CUDA driver library could not be loaded "
                                "(cuInit: libcuda.so.1 not found)")
    monkeypatch.setattr(driver, "require_gpu", require_gpu)


def test_gpu_run_without_a_gpu_says_so_before_any_case(monkeypatch, capsys):
    _no_gpu(monkeypatch)
    monkeypatch.setattr(fuzz.runner, "fuzz_case", lambda *a, **k: pytest.fail("a case ran"))
    assert fuzz.main(["--gpu", "--cases", "3"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("fuser-fuzz: no NVIDIA GPU/driver found: ") and "libcuda.so.1" in err
    with pytest.raises(RuntimeError, match="no NVIDIA GPU/driver found"):
        fuzz.run(3, 0, gpu=True)


def test_gpu_run_on_this_machine_without_a_gpu():
    from fuser.runtime import driver

    if driver.gpu_available():
        pytest.skip("this machine has a GPU")
    p = subprocess.run([sys.executable, "-m", "fuser.tools.fuzz", "--gpu", "--cases", "2"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and p.stdout == ""
    assert p.stderr.startswith("fuser-fuzz: no NVIDIA GPU/driver found: ") and p.stderr.count("\n") == 1


def test_explain_without_a_gpu_says_so(monkeypatch, capsys):
    _no_gpu(monkeypatch)
    assert fuzz.main(["--explain", "5"]) == 2
    assert capsys.readouterr().err.startswith("fuser-fuzz: --explain runs the case on the GPU: no NVIDIA GPU")


def test_explain_names_the_first_wrong_value():
    """A planted error in one value that output #3 depends on: the bisection names that value (and
    no other) as the first wrong one, though the values computed from it differ too."""
    from fuser.tools.fuzz import explain as ex

    seed = 12028026  # (a GPU mismatch of the H100 fuzz run, in output #3, at the end of a long chain)
    chain = ex._dependencies(fuzz.fuzz_case(seed).text, 3)
    assert len(chain) >= 3
    target = chain[len(chain) // 2][0]
    position = len(fuzz.fuzz_case(seed).outputs) + len(chain) // 2

    def planted(text, options, inputs):
        out = ex._in_reference(text, options, inputs)
        if len(out) <= position:  # the case itself, without the values added as outputs
            return out
        out[position] = np.asarray(out[position]).copy()
        flat = out[position].reshape(-1)
        flat[0] = flat[0] + (1 if flat.dtype.kind in "iuf" else True)
        return out

    lines = []
    ex.explain(seed, log=lines.append, gpu=False, run=planted, output=3)
    first = [x for x in lines if x.strip().startswith(">>")]
    assert first == [f"   >> {target} ({chain[len(chain) // 2][1]}) is the first wrong value; its operands agree on the GPU"], lines
    assert any(x.strip().startswith(f"{target} = ") and "1 of " in x for x in lines), lines
    assert any(x.strip().startswith("its buffer's kernel: @fuzz_k") for x in lines), lines  # which kernel to read
