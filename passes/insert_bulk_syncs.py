"""sched-insert-bulk-syncs: complete and publish bulk async writes before a semaphore hand-over.

CTAs that take turns through a grid semaphore (serial split-K: split z waits until the tile's
counter is z, writes its partial tile, then sets the counter to z + 1) write with TMA
(`sched.tma.store`, `sched.tma.reduce`), which is asynchronous and goes through the async proxy,
while the semaphore is an ordinary (generic-proxy) acquire load and release store. A release
orders only the generic proxy's writes that came before it, and a bulk copy is not even done
when its instruction returns; so, on the signalling side, before the release the thread must
close its bulk group (`sched.bulk.commit_group`), wait for the writes themselves to complete
(`sched.bulk.wait_group 0`, without `read`: `read` only waits until the shared source may be
reused) and order them with its generic accesses (`sched.fence.proxy_async global`). On the
waiting side, the acquire load must be ordered before the async-proxy writes that follow it:
one `sched.fence.proxy_async global` right after the wait.

Which writes may still be uncommitted, incomplete or unfenced at each op is the analysis of
lowering/analysis/bulk_sync.py (`BulkFlow`, on the shared walker of lowering/analysis/sched_dataflow.py, which
also says how `scf.if` and loops are handled). Before a `sched.semaphore.signal` reached with
writes possibly unfenced, the pass inserts `commit_group`, `wait_group 0`,
`fence.proxy_async global`, which clears the state; a signal reached with nothing pending gets
nothing, so a sequence already in place (the pass's own output included) is left alone: the pass
is idempotent. After every `sched.semaphore.wait` it inserts one `fence.proxy_async global`
unless one is already the next op. Nothing else changes. The nvvm conversion refuses a kernel
whose signals may publish unfinished writes (`unsynced_signals`, re-exported here from
lowering/analysis/bulk_sync.py).

Bulk async-groups belong to a thread, so the syncs only help where the thread that signals is
the one that issued the writes (the scheduler's business: in the serial split-K epilogue one
elected thread does both); the pass follows program order and does not tell threads apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from fuser.dialects import sched
from fuser.lowering.analysis.bulk_sync import BulkFlow, Pending, fenced, is_global_fence, unsynced_signals


class _Inserter(BulkFlow):
    """The pending-writes walk that inserts the syncs instead of recording the signals."""

    def __init__(self) -> None:
        super().__init__()
        self.inserted = 0

    def unsynced(self, signal: sched.SemaphoreSignalOp) -> None:
        for sync in (sched.BulkCommitGroupOp(), sched.BulkWaitGroupOp(0), sched.FenceProxyAsyncOp("global")):
            sync.location = signal.location  # inserted for the signal's fusion op
            signal.parent_block().insert_op_before(sync, signal)
        self.inserted += 1

    def after_wait(self, wait: sched.SemaphoreWaitOp, st: Pending, final: bool) -> Pending:
        if is_global_fence(wait.next_op):
            return st  # the fence is walked next
        if final:  # (a fixed-point walk only needs the state the inserted fence will give)
            fence = sched.FenceProxyAsyncOp("global")
            fence.location = wait.location
            wait.parent_block().insert_op_after(fence, wait)
            self.inserted += 1
        return fenced(st)


def insert_bulk_syncs(root: Operation) -> int:
    """Insert the syncs in every sched.kernel under `root`; return how many were added (one per
    commit/wait/fence triple before a signal, one per fence after a wait)."""
    w = _Inserter()
    w.run(root)
    return w.inserted


@dataclass(frozen=True)
class InsertBulkSyncs(ModulePass):
    """Complete and fence bulk async writes before each semaphore signal; fence after each wait."""

    name = "sched-insert-bulk-syncs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        insert_bulk_syncs(op)


__all__ = ["InsertBulkSyncs", "insert_bulk_syncs", "unsynced_signals"]
