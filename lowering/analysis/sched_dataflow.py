"""A forward dataflow walk over a `sched.kernel`'s structured control flow.

`Dataflow[S]` walks a kernel in program order with a state `S` (a frozen value with a join `|`
and `==`); an analysis subclasses it and says what each op does to the state (`step`). Control
flow is the walker's:
- `scf.if`: each branch starts from the state before it; after it, the join of the branch ends
  (a missing `else` keeps the state before);
- a loop (`is_loop`: `scf.for`, `sched.for`, or whatever the analysis counts as one, walking all
  its blocks): a fixed point on the state at the body's start (the state before it joined with
  what the back edge carries); after it, the body's end, joined with the state before it unless
  the loop provably runs (`runs_once`).
A state that tracks values (not just facts about the thread) follows them along the edges with
`carry` (initial value -> iteration argument, yield -> iteration argument and result) and says
with `leave` what of a region's end still holds outside it.

Only the last walk of a block is `final`: fixed-point iterations compute the state the final
walk starts from, and an analysis records or inserts (its hooks) only when `final` is set, so
each op is acted on once. The walk takes a snapshot of a block's ops: an op a hook inserts is
not walked.

Users: the wgmma read-after-write analysis (lowering/analysis/wgmma_sync.py, pass sched-flush-wgmma)
and the bulk-write sync analysis (lowering/analysis/bulk_sync.py, pass sched-insert-bulk-syncs).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from fuser.dialects import sched

LOOPS = (scf.ForOp, sched.ForOp)
YIELDS = (scf.YieldOp, sched.YieldOp)


S = TypeVar("S")  # the analysis's state: frozen, joined with `|`, compared with `==`
Pairs = list[tuple[SSAValue, SSAValue]]  # (target, source): the target takes the source's value


def constant_int(v: SSAValue) -> int | None:
    """The value of an `arith.constant` integer (or index), else None."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def runs_at_least_once(loop: Operation) -> bool:
    """A `scf.for` / `sched.for` whose constant bounds prove an iteration (lb < ub). Of a
    `sched.for` that says the loop runs, not that every thread runs an iteration."""
    if not isinstance(loop, LOOPS):
        return False
    lb, ub = constant_int(loop.operands[0]), constant_int(loop.operands[1])
    return lb is not None and ub is not None and lb < ub


def kernels_in(root: Operation) -> list[sched.KernelOp]:
    """`root` if it is a kernel, else the kernels nested in it."""
    if isinstance(root, sched.KernelOp):
        return [root]
    return [o for o in root.walk() if isinstance(o, sched.KernelOp)]


def _loop_edges(op: Operation) -> tuple[list, list, list, list]:
    """(initial values, iteration arguments, yielded values, results) of a for loop; none for
    another op with regions (no values cross its edges that the walk knows of)."""
    if not isinstance(op, LOOPS):
        return [], [], [], []
    body = op.regions[0].blocks[0]
    return list(op.operands[3:]), list(body.args[1:]), list(body.last_op.operands), list(op.results)


class Dataflow(Generic[S]):
    """The walker. Subclasses set `empty` (the state with nothing pending, the join's unit) and
    define `step`; the other hooks have defaults for a state that names no values."""

    empty: S

    # --- the analysis's hooks ---

    def step(self, op: Operation, st: S, final: bool) -> S:
        """The state after `op`, an op that is not control flow for this walk."""
        raise NotImplementedError

    def is_loop(self, op: Operation) -> bool:
        """Whether to walk `op`'s regions as a loop (else `step` takes it whole)."""
        return bool(op.regions)

    def runs_once(self, loop: Operation) -> bool:
        """Whether the body surely runs: then the state before the loop does not reach past it."""
        return runs_at_least_once(loop)

    def condition(self, op: scf.IfOp, st: S, final: bool) -> S:
        """The state once an `scf.if` has read its condition (before either branch)."""
        return st

    def carry(self, st: S, pairs: Pairs) -> S:
        """What `st` says of each target of `pairs` (from its source). Default: a state that names
        no values passes whole along an edge."""
        return st

    def leave(self, op: Operation, before: S, end: S) -> S:
        """What of a region's `end` state holds after `op` (results aside: see `carry`), given the
        state `before` it. Default: all of it."""
        return end

    # --- the walk ---

    def run(self, root: Operation) -> None:
        """Walk every sched.kernel under `root` (or `root` itself), each from `empty`."""
        for k in kernels_in(root):
            self.block(k.body.block, self.empty)

    def block(self, block: Block, st: S, final: bool = True) -> S:
        """Walk `block` from `st`; return the state at its end."""
        for op in list(block.ops):  # a snapshot: ops inserted on the way are not walked
            if isinstance(op, scf.IfOp):
                st = self.if_(op, st, final)
            elif self.is_loop(op):
                st = self.loop(op, st, final)
            else:
                st = self.step(op, st, final)
        return st

    def if_(self, op: scf.IfOp, st: S, final: bool) -> S:
        st = self.condition(op, st, final)
        out = self.empty
        for region in op.regions:
            if not region.blocks:  # no else: the state before goes past
                out = out | st
                continue
            body = region.blocks[0]
            end = self.block(body, st, final)
            yields = list(body.last_op.operands) if isinstance(body.last_op, YIELDS) else []
            out = out | self.leave(op, st, end) | self.carry(end, list(zip(op.results, yields)))
        return out

    def loop(self, op: Operation, st: S, final: bool) -> S:
        bodies = [b for r in op.regions for b in r.blocks]
        inits, args, yields, results = _loop_edges(op)
        entry = st | self.carry(st, list(zip(args, inits)))
        while True:  # fixed point on the body's start: what the back edge brings
            end = self._join(self.block(b, entry, final=False) for b in bodies)
            new = entry | self.carry(end, list(zip(args, yields)))
            if new == entry:
                break
            entry = new
        end = self._join(self.block(b, entry, final) for b in bodies)
        out = self.leave(op, st, end) | self.carry(end, list(zip(results, yields)))
        if not self.runs_once(op):  # zero iterations: what held before holds after
            out = out | st | self.carry(st, list(zip(results, inits)))
        return out

    def _join(self, states: Iterable[S]) -> S:
        out = self.empty
        for s in states:
            out = out | s
        return out


__all__ = ["LOOPS", "YIELDS", "Dataflow", "Pairs", "constant_int", "kernels_in", "runs_at_least_once"]
