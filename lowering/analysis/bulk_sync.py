"""Which semaphore signals may publish unfinished bulk writes (the analysis of
sched-insert-bulk-syncs).

Before a semaphore signal (a generic-proxy release) the thread's TMA stores and reductions to
global (async proxy) must be committed, complete and fenced: why, in passes/insert_bulk_syncs.py.
Walking a kernel in program order (the shared walk of lowering/analysis/sched_dataflow.py), one state says
which of those steps its bulk writes may still need (each implies the next):
- *uncommitted*: in no committed bulk group (a wait cannot wait for them yet);
- *incomplete*: possibly not yet complete (a `wait_group 0` completes the committed ones);
- *unfenced*: possibly not yet ordered with generic accesses (a `fence.proxy_async global`
  publishes the completed ones).
A TMA store or reduction sets all three; `commit_group` clears *uncommitted*; `wait_group 0`
(not `read`: that only waits until the shared source may be reused; a nonzero count proves
nothing) leaves *incomplete* only where writes are still uncommitted; `fence.proxy_async global`
leaves *unfenced* only where writes are incomplete. A signal clears the state.

Control flow is the walker's; here any op with regions other than `scf.if` is walked as a loop,
and only a serial `scf.for` with constant bounds proves its body runs for this thread (a
`sched.for` spreads its iterations over threads, so some of them may run none).

`BulkFlow` records the signals reached with writes possibly unfenced (`unsynced_signals`: the
nvvm conversion refuses a kernel that has any); sched-insert-bulk-syncs subclasses it to insert
the syncs instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.ir import Operation

from fuser.dialects import sched

from .sched_dataflow import Dataflow, runs_at_least_once

_BULK_WRITES = (sched.TmaStoreOp, sched.TmaReduceOp)


@dataclass(frozen=True)
class Pending:
    """Which steps the thread's bulk writes to global may still need (each implies the next)."""

    uncommitted: bool = False
    incomplete: bool = False
    unfenced: bool = False

    def __or__(self, other: Pending) -> Pending:
        return Pending(self.uncommitted or other.uncommitted, self.incomplete or other.incomplete,
                       self.unfenced or other.unfenced)


_NONE = Pending()
_ALL = Pending(True, True, True)


def fenced(st: Pending) -> Pending:
    """After `fence.proxy_async global`: the completed writes are published."""
    return Pending(st.uncommitted, st.incomplete, st.incomplete)


def is_global_fence(op: Operation | None) -> bool:
    return isinstance(op, sched.FenceProxyAsyncOp) and op.fenced_space == "global"


class BulkFlow(Dataflow[Pending]):
    """The pending-writes walk. On the final walk, `unsynced` is called for each signal reached
    with writes possibly unfenced (here: recorded in `signals`); `after_wait` gives the state
    after each `sched.semaphore.wait` (here: the IR as it is)."""

    empty = _NONE

    def __init__(self) -> None:
        self.signals: list[sched.SemaphoreSignalOp] = []

    def unsynced(self, signal: sched.SemaphoreSignalOp) -> None:
        self.signals.append(signal)

    def after_wait(self, wait: sched.SemaphoreWaitOp, st: Pending, final: bool) -> Pending:
        return st

    def step(self, op: Operation, st: Pending, final: bool) -> Pending:
        if isinstance(op, sched.SemaphoreSignalOp):
            if st.unfenced and final:
                self.unsynced(op)
            return _NONE
        if isinstance(op, sched.SemaphoreWaitOp):
            return self.after_wait(op, st, final)
        if isinstance(op, _BULK_WRITES):
            return _ALL
        if isinstance(op, sched.BulkCommitGroupOp):
            return Pending(False, st.incomplete, st.unfenced)
        if isinstance(op, sched.BulkWaitGroupOp) and op.pending.value.data == 0 and op.read is None:
            return Pending(st.uncommitted, st.uncommitted, st.unfenced)
        if is_global_fence(op):
            return fenced(st)
        return st

    def runs_once(self, loop: Operation) -> bool:
        return isinstance(loop, scf.ForOp) and runs_at_least_once(loop)


def unsynced_signals(kernel: sched.KernelOp) -> list[sched.SemaphoreSignalOp]:
    """The signals of `kernel` reached while bulk writes to global may be incomplete or unfenced."""
    w = BulkFlow()
    w.run(kernel)
    return w.signals


__all__ = ["BulkFlow", "Pending", "fenced", "is_global_fence", "unsynced_signals"]
