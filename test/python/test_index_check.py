"""FUSER_CHECK_INDICES=1 (issue 32): the index inputs of gathers and index_selects are checked
before a call, and an out-of-range one raises IndexError naming the op, the argument and the
value; without it the defined result (the nearest end) is read."""

from __future__ import annotations

import numpy as np
import pytest

import fuser
from fuser.runtime import index_check


def _loss_picks():
    """x[8, 50] rows picked at labels y[8] (through an unsqueeze), and an index_select of x's
    columns by a computed index (y clamped), which the check cannot see."""
    with fuser.FusionBuilder("picks") as fb:
        x = fb.input((8, 50), "f32", name="x")
        y = fb.input((8,), "i64", name="y")
        picked = fuser.take_along_axis(x, fuser.unsqueeze(y, 1), 1)
        cols = fuser.index_select(x, 1, fuser.where(y < 0, 0, y))
        fb.output(picked)
        fb.output(cols)
    return fb


def test_checks_are_found_for_arguments_and_not_for_computed_indices():
    c = fuser.compile(_loss_picks())
    checks = index_check.index_checks(c.func)
    assert [(k.op, k.dim, k.extent, k.argument, k.name) for k in checks] == [
        ("fusion.gather", 1, 50, 1, "y"), ("fusion.index_select", 1, 50, None, "a computed value")]
    assert index_check.unchecked(checks) == checks[1:]


@pytest.mark.parametrize("setting", ["1", "on"])
def test_out_of_range_index_raises_when_checking(monkeypatch, setting):
    c = fuser.compile(_loss_picks())
    x = np.random.default_rng(0).standard_normal((8, 50)).astype(np.float32)
    ok = np.array([0, 49, -1, -50, 3, 7, 9, 11])
    bad = ok.copy()
    bad[5] = 50
    monkeypatch.setenv("FUSER_CHECK_INDICES", setting)
    c.reference(x, ok)  # [-50, 50) is in range: negative ones count from the end
    with pytest.raises(IndexError, match=r"@picks: fusion.gather along dim 1 \(extent 50\) reads index input #1 "
                                         r"\('y'\) holding 50, outside \[-50, 50\)"):
        c.reference(x, bad)
    bad[5] = -51
    with pytest.raises(IndexError, match="holding -51"):
        c.reference(x, bad)


def test_unchecked_reads_the_nearest_end(monkeypatch):
    monkeypatch.delenv("FUSER_CHECK_INDICES", raising=False)
    c = fuser.compile(_loss_picks())
    x = np.arange(400, dtype=np.float32).reshape(8, 50)
    y = np.array([0, 1, 2, 3, 4, 60, 6, -70])
    picked, _ = c.reference(x, y)
    assert picked[5, 0] == x[5, 49] and picked[7, 0] == x[7, 0]


def test_torch_backend_checks_its_regions(monkeypatch):
    torch = pytest.importorskip("torch")
    import fuser.torch as ft

    def f(x, y):
        return torch.nn.functional.embedding(y, x) * 2

    x, y = torch.randn(10, 4), torch.tensor([[1, 9], [10, 2]])
    monkeypatch.setenv("FUSER_CHECK_INDICES", "1")
    with pytest.raises(IndexError, match=r"reads index input #1 \('in1'\) holding 10, outside \[-10, 10\)"):
        torch.compile(f, backend=ft.backend(), dynamic=False)(x, y)


@pytest.mark.gpu
def test_gpu_call_raises_before_launching(monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    c = fuser.compile(_loss_picks())
    x = torch.randn(8, 50, device="cuda")
    y = torch.tensor([0, 49, -1, -50, 3, 7, 9, 11], device="cuda")
    monkeypatch.setenv("FUSER_CHECK_INDICES", "1")
    picked, _ = c(x, y)
    torch.testing.assert_close(picked[:, 0], x[torch.arange(8), y % 50])
    y[2] = 50
    with pytest.raises(IndexError, match="holding 50"):
        c(x, y)
