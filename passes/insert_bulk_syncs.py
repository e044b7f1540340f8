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

The pass walks each `sched.kernel` in program order with one state: which bulk writes to global
this thread may have issued that are not yet published, in three steps:
- *uncommitted*: in no committed bulk group (a wait cannot wait for them yet);
- *incomplete*: possibly not yet complete (a `wait_group 0` completes the committed ones);
- *unfenced*: possibly not yet ordered with generic accesses (a `fence.proxy_async global`
  publishes the completed ones).
A TMA store or reduction sets all three; `commit_group` clears *uncommitted*; `wait_group 0`
(not `read`; a nonzero count proves nothing) leaves *incomplete* only where writes are still
uncommitted; `fence.proxy_async global` leaves *unfenced* only where writes are incomplete.

Before a `sched.semaphore.signal` reached with writes possibly unfenced, the pass inserts
`commit_group`, `wait_group 0`, `fence.proxy_async global`, which clears the state; a signal
reached with nothing pending gets nothing, so a sequence already in place (the pass's own
output included) is left alone: the pass is idempotent. After every `sched.semaphore.wait` it
inserts one `fence.proxy_async global` unless one is already the next op. Nothing else changes.
The same walk, without inserting, finds the signals that publish unfinished writes: the nvvm
conversion refuses a kernel that has any (`unsynced_signals`).

Control flow: both branches of an `scf.if` start from the state before it and the state after
it is the union of their ends (a missing `else` keeps the state before). A loop (`scf.for`,
`sched.for`) is walked to a fixed point: its body starts from the state before the loop joined
with the body's own end (writes carried around the back edge); after it the state is the
body's end, joined with the state before it unless the loop is a serial `scf.for` with constant
bounds that prove one iteration (otherwise the body, and any sync inside it, may not run for
this thread: a `sched.for` spreads its iterations over threads). Any other op with regions is
treated as such a loop.

Bulk async-groups belong to a thread, so the syncs only help where the thread that signals is
the one that issued the writes (the scheduler's business: in the serial split-K epilogue one
elected thread does both); the pass follows program order and does not tell threads apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import sched

_BULK_WRITES = (sched.TmaStoreOp, sched.TmaReduceOp)


@dataclass(frozen=True)
class _Pending:
    """Which steps the thread's bulk writes to global may still need (each implies the next)."""

    uncommitted: bool = False
    incomplete: bool = False
    unfenced: bool = False

    def __or__(self, other: _Pending) -> _Pending:
        return _Pending(self.uncommitted or other.uncommitted, self.incomplete or other.incomplete,
                        self.unfenced or other.unfenced)


_NONE = _Pending()
_ALL = _Pending(True, True, True)


def _step(op: Operation, st: _Pending) -> _Pending:
    """The state after an op with no regions."""
    if isinstance(op, _BULK_WRITES):
        return _ALL
    if isinstance(op, sched.BulkCommitGroupOp):
        return _Pending(False, st.incomplete, st.unfenced)
    if isinstance(op, sched.BulkWaitGroupOp) and op.pending.value.data == 0 and op.read is None:
        return _Pending(st.uncommitted, st.uncommitted, st.unfenced)
    if _is_global_fence(op):
        return _fenced(st)
    return st


def _fenced(st: _Pending) -> _Pending:
    """After `fence.proxy_async global`: the completed writes are published."""
    return _Pending(st.uncommitted, st.incomplete, st.incomplete)


def _is_global_fence(op: Operation | None) -> bool:
    return isinstance(op, sched.FenceProxyAsyncOp) and op.fenced_space == "global"


def _const(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _runs_at_least_once(op: Operation) -> bool:
    """Whether every thread runs the loop's body: a serial loop with constant bounds lb < ub (a
    `sched.for` spreads its iterations over threads, so some of them may run none)."""
    if not isinstance(op, scf.ForOp):
        return False
    lb, ub = _const(op.operands[0]), _const(op.operands[1])
    return lb is not None and ub is not None and lb < ub


class _Walker:
    """Walks a kernel with the pending state. `insert`: add the syncs; else record in `unsynced`
    the signals reached with writes unfenced (the IR as it is)."""

    def __init__(self, insert: bool):
        self.insert = insert
        self.inserted = 0
        self.unsynced: list[sched.SemaphoreSignalOp] = []

    def block(self, block: Block, st: _Pending, final: bool = True) -> _Pending:
        """Walk `block` from state `st`; return the state at its end. Only a `final` walk changes
        the IR or records (a fixed-point iteration computes the state the final walk will leave)."""
        for op in list(block.ops):
            if isinstance(op, sched.SemaphoreSignalOp):
                if st.unfenced and final:
                    self.sync_before(op)
                st = _NONE
            elif isinstance(op, sched.SemaphoreWaitOp):
                if self.insert and not _is_global_fence(op.next_op):
                    if final:
                        block.insert_op_after(sched.FenceProxyAsyncOp("global"), op)
                        self.inserted += 1
                    st = _fenced(st)
            elif isinstance(op, scf.IfOp):
                st = self.if_(op, st, final)
            elif op.regions:
                st = self.loop(op, st, final)
            else:
                st = _step(op, st)
        return st

    def sync_before(self, signal: sched.SemaphoreSignalOp) -> None:
        if not self.insert:
            self.unsynced.append(signal)
            return
        for sync in (sched.BulkCommitGroupOp(), sched.BulkWaitGroupOp(0), sched.FenceProxyAsyncOp("global")):
            signal.parent_block().insert_op_before(sync, signal)
        self.inserted += 1

    def if_(self, op: scf.IfOp, st: _Pending, final: bool) -> _Pending:
        out = _NONE
        for region in op.regions:
            out = out | (self.block(region.blocks[0], st, final) if region.blocks else st)
        return out

    def loop(self, op: Operation, st: _Pending, final: bool) -> _Pending:
        bodies = [b for r in op.regions for b in r.blocks]
        entry = st
        while True:  # fixed point on what the back edge carries into the body
            end = _NONE
            for body in bodies:
                end = end | self.block(body, entry, final=False)
            if (entry | end) == entry:
                break
            entry = entry | end
        end = _NONE
        for body in bodies:
            end = end | self.block(body, entry, final)
        return end if _runs_at_least_once(op) else end | st


def _kernels(root: Operation) -> list[sched.KernelOp]:
    return [root] if isinstance(root, sched.KernelOp) else [o for o in root.walk() if isinstance(o, sched.KernelOp)]


def insert_bulk_syncs(root: Operation) -> int:
    """Insert the syncs in every sched.kernel under `root`; return how many were added (one per
    commit/wait/fence triple before a signal, one per fence after a wait)."""
    w = _Walker(insert=True)
    for k in _kernels(root):
        w.block(k.body.block, _NONE)
    return w.inserted


def unsynced_signals(kernel: sched.KernelOp) -> list[sched.SemaphoreSignalOp]:
    """The signals of `kernel` reached while bulk writes to global may be incomplete or unfenced."""
    w = _Walker(insert=False)
    w.block(kernel.body.block, _NONE)
    return w.unsynced


@dataclass(frozen=True)
class InsertBulkSyncs(ModulePass):
    """Complete and fence bulk async writes before each semaphore signal; fence after each wait."""

    name = "sched-insert-bulk-syncs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        insert_bulk_syncs(op)


__all__ = ["InsertBulkSyncs", "insert_bulk_syncs", "unsynced_signals"]
