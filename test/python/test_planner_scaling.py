"""How the planner's work grows with a fusion's size, counted rather than timed (a timing test
is a flaky test): pricing a merge proposal (`_traffic`, twice per pricing) must stay about linear
in the number of outputs. Before proposals kept their savings, a fusion with n outputs priced
about n^2 / 2 proposals (249,501 `_traffic` calls at n = 500; now 1,995)."""

from __future__ import annotations

import pytest

from fuser.dialects.ir import parse_module
from fuser.lowering.analysis import planner


def _wide(n: int) -> str:
    ty = "tensor<64x32xf32>"
    body = "".join(f"  %c{i} = fusion.full {float(i + 1)} : {ty}\n  %o{i} = fusion.mul %x, %c{i} : {ty}\n"
                   for i in range(n))
    outs = ", ".join(f"%o{i}" for i in range(n))
    return (f"func.func @wide(%x: {ty}) -> ({', '.join([ty] * n)}) {{\n{body}"
            f"  func.return {outs} : {', '.join([ty] * n)}\n}}")


@pytest.mark.parametrize("n", [50, 200])
def test_pricing_is_linear_in_the_outputs(n, monkeypatch):
    calls = []
    traffic = planner._traffic
    monkeypatch.setattr(planner, "_traffic", lambda *a: calls.append(1) or traffic(*a))
    fn = next(op for op in parse_module(_wide(n)).walk() if op.name == "func.func")
    plan = planner.plan_fusion(fn)
    assert len(plan.tasks) == 1  # every output in one pointwise kernel
    assert len(calls) <= 5 * n, f"{len(calls)} pricings for {n} outputs"


def _mixed(n: int) -> str:
    """n outputs of two shapes, interleaved in return order, some reading a second input."""
    a, b = "tensor<64x32xf32>", "tensor<32xf32>"
    body, outs, types = [], [], []
    for i in range(n):
        if i % 3 == 2:
            body.append(f"  %o{i} = fusion.exp %y : {b}")
            types.append(b)
        else:
            src = "%x" if i % 2 else "%z"
            body.append(f"  %c{i} = fusion.full {float(i + 1)} : {a}\n  %o{i} = fusion.mul {src}, %c{i} : {a}")
            types.append(a)
        outs.append(f"%o{i}")
    return (f"func.func @mixed(%x: {a}, %z: {a}, %y: {b}) -> ({', '.join(types)}) {{\n" + "\n".join(body) +
            f"\n  func.return {', '.join(outs)} : {', '.join(types)}\n}}")


@pytest.mark.parametrize("text", [_wide(40), _mixed(31)], ids=["wide", "mixed"])
def test_pointwise_only_merges_are_the_general_greedy_ones(text, monkeypatch):
    """Without reductions, scans or matmuls the planner takes the pointwise merges from a heap
    of neighbouring pairs; the tasks, their order and their merge records are what the general
    greedy loop (every proposal re-made at every step) gives."""
    def plan():
        fn = next(op for op in parse_module(text).walk() if op.name == "func.func")
        return [(t.kind, [o.name_hint for o in t.outputs], t.merges) for t in planner.plan_fusion(fn).tasks]
    fast = plan()
    monkeypatch.setattr(planner, "_ANCHOR_KINDS", ("pointwise",))  # every task an "anchor": the general loop
    assert plan() == fast and len(fast) == (1 if "wide" in text else 2)


def test_a_wide_fusion_prices_each_merge_once(monkeypatch):
    """2000 outputs (issue 33): each neighbouring pair is priced once, not once per step."""
    calls = []
    saving = planner._pointwise_saving
    monkeypatch.setattr(planner, "_pointwise_saving", lambda *a: calls.append(1) or saving(*a))
    fn = next(op for op in parse_module(_wide(2000)).walk() if op.name == "func.func")
    assert len(planner.plan_fusion(fn).tasks) == 1
    assert len(calls) <= 3 * 2000, len(calls)
