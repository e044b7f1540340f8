"""The index-map shape ops on the GPU (issue 32): every case of shape_op_cases.py against torch
on CUDA, with default, scalar (vector=1) and two-lane schedules (lane groups kept whole or
split); the cases that only move elements equal torch bit for bit in f32, bf16, f16, i32 and
i64, the others (math after the move: rope, a row sum, a column sum, a softmax) to float
tolerance."""

from __future__ import annotations

import pytest
from shape_op_cases import CASES, EXACT, build, expected, make_inputs

import fuser
from cuda_torch import cuda_torch

pytestmark = pytest.mark.gpu

SCHEDULES = ["default", "default{vector=1}", "default{vector=2 block=64}"]


def _inputs(torch, name: str, dtype):
    g = torch.Generator(device="cuda").manual_seed(7)
    if dtype in (torch.int32, torch.int64):
        return make_inputs(torch, name, lambda s: torch.randint(-1000, 1000, s, generator=g, device="cuda", dtype=dtype),
                           device="cuda")
    return make_inputs(torch, name, lambda s: torch.randn(*s, generator=g, device="cuda").to(dtype), device="cuda")


def _outputs(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


@pytest.mark.parametrize("pipeline", SCHEDULES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_f32_matches_torch(name, pipeline):
    torch = cuda_torch()
    xs = _inputs(torch, name, torch.float32)
    got = _outputs(fuser.compile(build(name), pipeline=pipeline)(*xs))
    for g, w in zip(got, expected(name, torch, *xs), strict=True):
        if name in EXACT:
            torch.testing.assert_close(g, w, rtol=0, atol=0)
        else:
            torch.testing.assert_close(g, w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", ["bf16", "f16", "i32", "i64"])
@pytest.mark.parametrize("name", sorted(EXACT - {"two_outputs"}))
def test_other_types_move_exactly(name, dtype):
    torch = cuda_torch()
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16, "i32": torch.int32, "i64": torch.int64}[dtype]
    xs = _inputs(torch, name, tdt)
    got = _outputs(fuser.compile(build(name, dtype))(*xs))
    for g, w in zip(got, expected(name, torch, *xs), strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_rope_in_bf16_matches_torch():
    torch = cuda_torch()
    xs = _inputs(torch, "rope", torch.bfloat16)
    got = fuser.compile(build("rope", "bf16"))(*xs)
    want = expected("rope", torch, *[x.float() for x in xs])[0]
    torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)
