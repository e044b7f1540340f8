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
