"""Which reads of asynchronous wgmma results need a wait first (the analysis of sched-flush-wgmma).

`sched.wgmma.mma_async` returns before its accumulators are written. Walking a kernel in program
order (the shared walk of lowering/analysis/sched_dataflow.py), an mma fills the async pipeline: its
result (and anything that carries it on unchanged: loop-carried values, `scf.if`/loop results,
the next mma's accumulator) is *in flight*, and *uncommitted* until a `sched.wgmma.commit_group`.
The first op that reads an in-flight value (anything but another mma or a `yield` that passes it
along) must be preceded by a `sched.wgmma.wait_group 0`, which flushes the pipeline: after it
nothing is in flight until another mma. A `wait_group 0` already in the IR flushes too.

Loops: a loop's carried value is in flight in the body when its initial value is, or when the
body yields an in-flight value; a loop result is in flight when the body ends with it in flight.
A loop whose bounds do not prove one iteration may run zero times: what was in flight before it
stays in flight after it (a flush inside its body may never run).

`WgmmaFlow` records those readers (`inflight_readers`: the nvvm conversion refuses a kernel that
has any); sched-flush-wgmma subclasses it to insert the waits instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue

from fuser.dialects import sched

from .sched_dataflow import LOOPS, YIELDS, Dataflow, Pairs


@dataclass(frozen=True)
class InFlight:
    inflight: frozenset[SSAValue] = frozenset()
    uncommitted: frozenset[SSAValue] = frozenset()  # in flight, in no committed group yet

    def __or__(self, other: InFlight) -> InFlight:
        return InFlight(self.inflight | other.inflight, self.uncommitted | other.uncommitted)

    def only(self, keep) -> InFlight:
        return InFlight(frozenset(v for v in self.inflight if v in keep),
                        frozenset(v for v in self.uncommitted if v in keep))


_EMPTY = InFlight()


class WgmmaFlow(Dataflow[InFlight]):
    """The in-flight walk; `unready` is called (on the final walk) for each op that reads an
    in-flight value, with the state it reads: here it records the op in `readers`."""

    empty = _EMPTY

    def __init__(self) -> None:
        self.readers: list[Operation] = []

    def unready(self, op: Operation, st: InFlight) -> None:
        self.readers.append(op)

    def read(self, op: Operation, st: InFlight, final: bool) -> InFlight:
        """`op` reads an in-flight value: the wait before it empties the pipeline."""
        if final:
            self.unready(op, st)
        return _EMPTY

    def step(self, op: Operation, st: InFlight, final: bool) -> InFlight:
        if isinstance(op, sched.WgmmaWaitGroupOp):
            return _EMPTY if op.pending.value.data == 0 else st
        if isinstance(op, sched.WgmmaCommitGroupOp):
            return InFlight(st.inflight)
        if isinstance(op, sched.WgmmaMmaAsyncOp):
            return InFlight(st.inflight | {op.result}, st.uncommitted | {op.result})
        if isinstance(op, YIELDS):
            return st
        if any(v in st.inflight for v in op.operands) or _reads_inside(op, st):
            return self.read(op, st, final)
        return st

    def is_loop(self, op: Operation) -> bool:
        return isinstance(op, LOOPS)  # another op with regions is one read (`_reads_inside`)

    def condition(self, op: scf.IfOp, st: InFlight, final: bool) -> InFlight:
        return self.read(op, st, final) if op.cond in st.inflight else st

    def carry(self, st: InFlight, pairs: Pairs) -> InFlight:
        return InFlight(frozenset(t for t, s in pairs if s in st.inflight),
                        frozenset(t for t, s in pairs if s in st.uncommitted))

    def leave(self, op: Operation, before: InFlight, end: InFlight) -> InFlight:
        # Only the outer values stay in scope. After a loop they keep the commit state they had
        # before it (as sched-flush-wgmma always has); after an if, the branch's.
        if isinstance(op, LOOPS):
            return before.only(end.inflight)
        return end.only(before.inflight)


def _reads_inside(op: Operation, st: InFlight) -> bool:
    """An op with regions (not a loop or if) that reads an in-flight value anywhere inside."""
    if not op.regions or not st.inflight:
        return False
    return any(v in st.inflight for o in op.walk() for v in o.operands)


def inflight_readers(kernel: sched.KernelOp) -> list[Operation]:
    """The ops of `kernel` that read a wgmma result no `wait_group 0` has made ready."""
    w = WgmmaFlow()
    w.run(kernel)
    return w.readers


__all__ = ["InFlight", "WgmmaFlow", "inflight_readers"]
