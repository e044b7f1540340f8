"""A corpus of bad Python API calls (issue 11): builder calls, compile pipelines and call-time
arrays. Each must raise TypeError or ValueError (or the compiler's FuserDiagnostic) with a
message that names what was wrong; never an internal error (AttributeError, KeyError,
IndexError, AssertionError, an xDSL exception) and never a silent success."""

from __future__ import annotations

import re

import numpy as np
import pytest

import fuser
from fuser.dialects.ir import FuserDiagnostic
from fuser.passes.pipeline import PipelineError
from fuser.runtime.arrays import ArgumentError


def _fb(*shapes_dtypes):
    """A builder with inputs x0, x1, ... of the given (shape, dtype)."""
    fb = fuser.FusionBuilder("corpus")
    xs = [fb.input(s, d, name=f"x{i}") for i, (s, d) in enumerate(shapes_dtypes)]
    return fb, xs


def _builder_case(make):
    def run():
        fb, xs = _fb(((4, 8), "f32"), ((8,), "f32"), ((4, 8), "bf16"), ((8, 16), "bf16"))
        make(fb, *xs)
    return run


# (id, call, exception types, regex the message must match)
BUILDER = [
    ("bad dtype", lambda fb, a, b, c, d: fb.input((4,), "float"), ValueError, r"unknown dtype .float."),
    ("bad dtype type", lambda fb, a, b, c, d: fb.input((4,), 3), (TypeError, ValueError), r"dtype"),
    ("negative extent", lambda fb, a, b, c, d: fb.input((4, -1), "f32"), ValueError, r"-1|negative|extent"),
    ("shape not ints", lambda fb, a, b, c, d: fb.input(("a", 2), "f32"), TypeError, r"shape|int"),
    ("add of two masks", lambda fb, a, b, c, d: (a > 0) + (c > 0), (TypeError, ValueError), r"fusion.add.*i1|i1"),
    ("an integer constant out of range", lambda fb, a, b, c, d: fuser.cast(a, "u8") + 300, ValueError,
     r"300.*out of the range of ui8"),
    ("integer division of floats", lambda fb, a, b, c, d: fb._emit(fuser.api.F.TruncDivOp(a.value, a.value)),
     ValueError, r"'fusion.trunc_div' op operand #0 \('lhs'\) has element type f32, expected one of i8"),
    ("shapes that do not broadcast", lambda fb, a, b, c, d: a + fuser.cast(d, "f32"), ValueError,
     r"4, 8|8, 16|4x8|8x16|broadcast"),
    ("add of a string", lambda fb, a, b, c, d: a + "x", TypeError, r"str"),
    ("unary of a list", lambda fb, a, b, c, d: fuser.exp([1, 2]), TypeError, r"exp|Tensor|list"),
    ("reduce dim out of range", lambda fb, a, b, c, d: fuser.sum(a, dims=[2]), (ValueError, IndexError), r"dim"),
    ("reduce repeated dim", lambda fb, a, b, c, d: fuser.sum(a, dims=[1, 1]), ValueError, r"dim"),
    ("reduce dims not ints", lambda fb, a, b, c, d: fuser.sum(a, dims=["x"]), TypeError, r"dim|int"),
    ("var_mean bad correction", lambda fb, a, b, c, d: fuser.var_mean(a, dims=[1], correction=-1), ValueError,
     r"correction"),
    ("reshape wrong count", lambda fb, a, b, c, d: fuser.reshape(a, (5, 7)), ValueError, r"4x8|32|35|element"),
    ("permute not a permutation", lambda fb, a, b, c, d: fuser.permute(a, [0, 0]), ValueError, r"perm|repeat"),
    ("permute wrong length", lambda fb, a, b, c, d: fuser.permute(a, [0]), ValueError, r"perm"),
    ("cast to a bad dtype", lambda fb, a, b, c, d: fuser.cast(a, "int4"), ValueError, r"int4"),
    ("broadcast to a smaller shape", lambda fb, a, b, c, d: fuser.broadcast_to(a, (8,)), ValueError,
     r"broadcast|shape"),
    ("matmul inner mismatch", lambda fb, a, b, c, d: fuser.matmul(c, c), ValueError, r"matmul|8|inner|K"),
    ("matmul of a vector", lambda fb, a, b, c, d: fuser.matmul(fuser.cast(b, "bf16"), d), ValueError,
     r"matmul|rank|2-D"),
    ("gelu bad approximate", lambda fb, a, b, c, d: fuser.gelu(a, approximate="fast"), ValueError, r"approximate"),
    ("where with a float condition", lambda fb, a, b, c, d: fuser.where(a, a, a), (TypeError, ValueError),
     r"i1|condition|bool"),
    ("output of a foreign tensor", lambda fb, a, b, c, d: fb.output(_fb(((2,), "f32"))[1][0]), ValueError,
     r"another FusionBuilder"),
    ("output of a number", lambda fb, a, b, c, d: fb.output(3.0), TypeError, r"Tensor|float"),
    ("output of nothing", lambda fb, a, b, c, d: fb.output(), ValueError, r"output"),
    ("input after finish", lambda fb, a, b, c, d: (fb.output(a), fb.finish(), fb.input((2,), "f32")), RuntimeError,
     r"finished"),
    ("u16 input", lambda fb, a, b, c, d: fb.input((2,), "u16"), ValueError,
     r"unknown dtype .u16.; use one of f32, f16, bf16, i1, i8, i16, i32, i64, u8, f64"),
    ("duplicate input name", lambda fb, a, b, c, d: fb.input((2,), "f32", name="x0"), ValueError, r"x0"),
]


@pytest.mark.parametrize("make,exc,pattern", [c[1:] for c in BUILDER], ids=[c[0] for c in BUILDER])
def test_bad_builder_calls(make, exc, pattern):
    with pytest.raises(exc) as info:
        _builder_case(make)()
    assert re.search(pattern, str(info.value), re.I), str(info.value)


def _small():
    with fuser.FusionBuilder("small") as fb:
        x = fb.input((4, 8), "f32", name="x")
        b = fb.input((8,), "f32", name="b")
        fb.output(fuser.relu(x + b))
    return fb


PIPELINES = [
    ("unknown pass", "canonicalize,no-such-pass", PipelineError, r"unknown pass 'no-such-pass'"),
    ("misspelt named pipeline", "defualt", PipelineError, r"named pipelines: default"),
    ("bad option name", "convert-fusion-to-sched{blocks=4}", PipelineError, r"blocks"),
    ("bad option type", "convert-fusion-to-sched{block=big}", PipelineError, r"option 'block' takes an integer"),
    ("bad option value", "convert-fusion-to-sched{matmul_store=smem}", (PipelineError, FuserDiagnostic, ValueError),
     r"matmul_store"),
    ("conflicting options", "fusion-split-k{sms=4},convert-fusion-to-sched{sms=8}", PipelineError,
     r"pipeline-wide"),
    ("malformed braces", "convert-fusion-to-sched{block=4", PipelineError, r"malformed|pipeline"),
    ("stops at sched", "to-sched", FuserDiagnostic, r"did not reach the nvvm level"),
    ("not a pipeline", 42, TypeError, r"pipeline"),
    ("list of strings", ["canonicalize"], TypeError, r"ModulePass objects, got str"),
]


@pytest.mark.parametrize("pipeline,exc,pattern", [c[1:] for c in PIPELINES], ids=[c[0] for c in PIPELINES])
def test_bad_compile_pipelines(pipeline, exc, pattern):
    with pytest.raises(exc) as info:
        fuser.compile(_small(), pipeline=pipeline)
    assert re.search(pattern, str(info.value)), str(info.value)


ARRAYS = [  # ArgumentError is a ValueError that names the argument and what it expected
    ("too few", lambda x, b: (x,), {}, ArgumentError, r"takes 2 arguments, got 1"),
    ("too many", lambda x, b: (x, b, b), {}, ArgumentError, r"takes 2 arguments, got 3"),
    ("wrong shape", lambda x, b: (x.reshape(8, 4), b), {}, ArgumentError,
     r"argument 0 \('%x'\): expected tensor<4x8xf32>, got float32 array of shape \(8, 4\)"),
    ("wrong dtype", lambda x, b: (x.astype(np.float64), b), {}, ArgumentError,
     r"argument 0 \('%x'\): expected tensor<4x8xf32>, got float64 array"),
    ("not an array", lambda x, b: ("x", b), {}, ArgumentError, r"argument 0 \('%x'\): expected tensor<4x8xf32>, got str"),
    ("unknown keyword", lambda x, b: (x,), {"q": 1}, TypeError, r"unexpected keyword argument 'q'"),
    ("missing keyword", lambda x, b: (), {"x": 1}, TypeError, r"missing input 'b'"),
]


@pytest.mark.parametrize("args,kwargs,exc,pattern", [c[1:] for c in ARRAYS], ids=[c[0] for c in ARRAYS])
def test_bad_arrays_at_call_time(args, kwargs, exc, pattern):
    """Through the reference interpreter (the same argument checks as a GPU call, no GPU needed)."""
    k = fuser.compile(_small())
    x, b = np.ones((4, 8), np.float32), np.ones(8, np.float32)
    with pytest.raises(exc) as info:
        k.reference(*args(x, b), **kwargs)
    assert re.search(pattern, str(info.value)), str(info.value)
