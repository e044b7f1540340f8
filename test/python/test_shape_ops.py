"""The index-map shape ops on the CPU (issue 32): through the Python API every case of
shape_op_cases.py computes in the reference interpreter what torch computes, compiles to PTX as
one kernel per consumer scheduler (the maps are index computations, never a copy), and bad
arguments get errors that say what is wrong."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from shape_op_cases import CASES, build, expected, make_inputs

import fuser
from fuser.runtime.reference import run_reference

torch = pytest.importorskip("torch")

DTYPES = {"f32": torch.float32, "i32": torch.int32, "bf16": torch.bfloat16}


def _inputs(name: str, dtype: str, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    if dtype == "i32":
        return make_inputs(torch, name, lambda s: torch.randint(-50, 50, s, generator=g, dtype=torch.int32))
    return make_inputs(torch, name, lambda s: torch.randn(*s, generator=g).to(DTYPES[dtype]))


def _numpy(t):
    return t.float().numpy().astype(ml_dtypes.bfloat16) if t.dtype == torch.bfloat16 else t.numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_equals_torch(name):
    xs = _inputs(name, "f32")
    got = run_reference(build(name).finish(), [x.numpy() for x in xs])
    for g, w in zip(got, expected(name, torch, *xs), strict=True):
        np.testing.assert_allclose(np.asarray(g, np.float64), w.double().numpy(), rtol=2e-6, atol=1e-6)


MOVES = ["slice_step", "slice_negative_step", "pad_both", "cat_odd_cols", "cat_middle", "flip_all", "narrow_select",
         "take_along_axis", "index_select_cols", "embedding"]


@pytest.mark.parametrize("dtype", ["i32", "bf16"])
@pytest.mark.parametrize("name", MOVES)
def test_reference_moves_integers_and_bf16_exactly(name, dtype):
    xs = _inputs(name, dtype)
    got = run_reference(build(name, dtype).finish(), [_numpy(x) for x in xs])[0]
    want = expected(name, torch, *xs)[0]
    np.testing.assert_array_equal(np.asarray(got).astype(np.float64), want.double().numpy())


def _kernels(c) -> list[str]:
    return re.findall(r"sched\.kernel @(\w+)", c.ir("sched"))


@pytest.mark.parametrize("name", sorted(set(CASES) - {"softmax_of_pad", "sum_of_cat", "column_sum_of_slice", "two_outputs",
                                                     "cross_entropy"}))
def test_pointwise_cases_are_one_kernel(name):  # (two outputs of two shapes: a pointwise kernel each)
    c = fuser.compile(build(name))
    assert len(_kernels(c)) == 1, c.ir("sched")
    assert ".entry" in c.ptx


def test_a_reduction_reads_the_cat_in_place():
    c = fuser.compile(build("sum_of_cat"))
    assert len(_kernels(c)) == 1  # the row sum's kernel reads a and exp(b) at the cat's index


@pytest.mark.parametrize("name", ["cross_entropy", "cross_entropy_of_slice", "cross_entropy_of_slice_wide"])
def test_cross_entropy_is_one_kernel(name):
    """The row statistics and the loss in one persistent row kernel: the label pick is one
    element a row, read where the row's label says. Logits read through a slice (a language
    model's shift) are cached on chip as they are: in registers, or copied once into shared
    memory by evaluating the slice (40001 f32 columns)."""
    c = fuser.compile(build(name))
    assert len(_kernels(c)) == 1, c.ir("sched")
    if name.endswith("wide"):
        assert "shared memory" in c.ir("sched"), c.ir("sched")


def test_out_of_range_indices_read_the_nearest_end():
    with fuser.FusionBuilder("oob") as fb:
        x = fb.input((2, 5), "f32", name="x")
        i = fb.input((2, 3), "i64", name="i")
        fb.output(fuser.take_along_axis(x, i, 1))
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    got = run_reference(fb.finish(), [x, np.array([[-1, -5, -6], [5, 100, 4]])])[0]
    np.testing.assert_array_equal(got, [[4, 0, 0], [9, 9, 9]])


def test_the_rope_half_swap_keeps_vector_loads():
    c = fuser.compile(build("rope", "bf16"))
    assert len(_kernels(c)) == 1
    assert "ld.global.v4.b32" in c.ptx  # eight bf16 lanes per access: the halves are 64 wide


@pytest.mark.parametrize("call, message", [
    (lambda x: fuser.slice(x, 1, 0, 4, 0), "step must be a nonzero integer"),
    (lambda x: fuser.slice(x, 2, 0, 4), "dim 2 is out of range for rank 2"),
    (lambda x: fuser.narrow(x, 1, 5, 4), "narrow: start 5 and length 4 do not fit dim 1"),
    (lambda x: fuser.select(x, 0, 4), "select: index 4 is out of range for dim 0 of extent 4"),
    (lambda x: fuser.split(x, [3, 3], 1), r"split: sizes \[3, 3\] do not add up to extent 7 of dim 1"),
    (lambda x: fuser.pad(x, [1, 2, 3]), "must hold pairs"),
    (lambda x: fuser.pad(x, [-5, -3]), r"pads \(-5, -3\) of dim 1 remove more than its 7 elements"),
    (lambda x: fuser.cat([x, fuser.slice(x, 0, 0, 2)], 1), r"tensor 1 has shape \[2, 7\]; along every dim but 1"),
    (lambda x: fuser.cat([]), "needs at least one tensor"),
    (lambda x: fuser.expand(x, (4, 9)), "dim 1 of tensor<4x7xf32> has extent 7, not 1 or 9"),
    (lambda x: fuser.triu(fuser.sum(x, 1)), "needs at least 2 dims"),
    (lambda x: fuser.take_along_axis(x, fuser.cast(x, "i64"), 2), "dim 2 is out of range"),
    (lambda x: fuser.take_along_axis(x, fuser.cast(fuser.slice(x, 0, 0, 2), "i64"), 1),
     r"the index tensor<2x7xi64> must match tensor<4x7xf32> in every dim but 1"),
    (lambda x: fuser.index_select(x, 0, fuser.cast(x, "i64")), "the index must be 1-D"),
    (lambda x: fuser.embedding(fuser.sum(x, 1), fuser.cast(x, "i32")), "the weight must be 2-D"),
])
def test_bad_arguments_say_what_is_wrong(call, message):
    with fuser.FusionBuilder("bad") as fb:
        x = fb.input((4, 7), "f32", name="x")
        with pytest.raises((ValueError, IndexError), match=message):
            call(x)
        fb.output(x + 1.0)


def test_a_float_index_is_a_type_error():
    with fuser.FusionBuilder("bad") as fb:
        x = fb.input((4, 7), "f32", name="x")
        with pytest.raises(TypeError, match="the index must be an i32 or i64 tensor, got tensor<4x7xf32>"):
            fuser.take_along_axis(x, x, 1)
        fb.output(x + 1.0)


def test_split_and_cat_promote_and_round_trip():
    with fuser.FusionBuilder("split") as fb:
        x = fb.input((5, 10), "bf16", name="x")
        y = fb.input((5, 3), "f32", name="y")
        parts = fuser.split(x, 4, 1)
        assert [p.shape for p in parts] == [(5, 4), (5, 4), (5, 2)]
        joined = fuser.cat([*parts, y], 1)
        assert joined.dtype == "f32" and joined.shape == (5, 13)
        fb.output(joined)
    xs = torch.randn(5, 10).bfloat16(), torch.randn(5, 3)
    got = run_reference(fb.finish(), [_numpy(xs[0]), xs[1].numpy()])[0]
    np.testing.assert_array_equal(got, torch.cat([xs[0].float(), xs[1]], 1).numpy())


def test_identity_maps_add_no_op():
    with fuser.FusionBuilder("same") as fb:
        x = fb.input((4, 7), "f32", name="x")
        assert fuser.slice(x, 1) is x and fuser.pad(x, [0, 0]) is x and fuser.flip(x, 0) is not x
        assert fuser.cat([x], 0) is x and fuser.flip(fuser.slice(x, 0, 0, 1), 0).shape == (1, 7)
        fb.output(x + 1.0)
