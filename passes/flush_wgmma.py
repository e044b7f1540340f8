"""sched-flush-wgmma: read-after-write syncs for asynchronous wgmma results.

`sched.wgmma.mma_async` returns before its accumulators are written: its result, and what carries
it on unchanged, is *in flight* until a `sched.wgmma.wait_group 0`. The analysis that finds the
first op to read an in-flight value is lowering/analysis/wgmma_sync.py (`WgmmaFlow`, on the shared walker
of lowering/analysis/sched_dataflow.py; loops, `scf.if` and the zero-trip rule are described there). Before
each such reader this pass inserts exactly one `sched.wgmma.wait_group 0`, which flushes the
pipeline: every in-flight value that reader's position can see is threaded through the wait and
later uses read the wait's results. Later readers need nothing until another mma refills the
pipeline. So an mma inside a main loop whose result is read after the loop gets one wait after
the loop, right before the reader. A `wait_group 0` already in the IR flushes too (no duplicate).

No `commit_group` is added: `wait_group` only waits for committed groups, so an mma read before
any `sched.wgmma.commit_group` follows it is refused (`WgmmaSyncError`), not flushed.

The nvvm conversion refuses a kernel that still has a reader (`inflight_readers`, re-exported
here from lowering/analysis/wgmma_sync.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import sched
from fuser.lowering.common import definition_order
from fuser.lowering.analysis.wgmma_sync import InFlight, WgmmaFlow, inflight_readers


class WgmmaSyncError(Exception):
    """An mma result read where no wait can make it ready (it was never committed)."""

    def __init__(self, message: str, op: Operation):
        super().__init__(message)
        self.op = op


def _ancestor_in(op: Operation, block: Block) -> Operation | None:
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


class _Flusher(WgmmaFlow):
    """The in-flight walk that puts a wait before each reader instead of recording it."""

    def __init__(self) -> None:
        super().__init__()
        self.inserted = 0

    def unready(self, op: Operation, st: InFlight) -> None:
        if st.uncommitted:
            raise WgmmaSyncError(f"'{op.name}' reads the result of a 'sched.wgmma.mma_async' that no "
                                 f"'sched.wgmma.commit_group' has committed; wait_group cannot wait for it", op)
        self.flush(op, st.inflight)

    def flush(self, before: Operation, inflight) -> None:
        block = before.parent_block()
        assert block is not None
        # thread every in-flight value visible here (defined in an enclosing scope, before `before`)
        visible = [v for v in inflight if _dominates(v, before)]
        visible.sort(key=lambda v: (v.name_hint or "", definition_order(v)))  # not the set's order
        wait = sched.WgmmaWaitGroupOp(0, visible)
        wait.location = before.location  # the wait is there for the reader's fusion op
        block.insert_op_before(wait, before)
        self.inserted += 1
        for old, new in zip(visible, wait.outs):
            if old.name_hint:
                new.name_hint = old.name_hint + "_ready"

            def after(use, wait=wait, block=block) -> bool:
                anc = _ancestor_in(use.operation, block)
                return anc is not None and anc is not wait and wait.is_before_in_block(anc)
            old.replace_uses_with_if(new, after)


def _dominates(v: SSAValue, at: Operation) -> bool:
    owner_block = v.owner if isinstance(v.owner, Block) else v.owner.parent_block()
    op = at
    while op is not None:
        if op.parent_block() is owner_block:
            if isinstance(v.owner, Block):
                return True
            return v.owner.is_before_in_block(op)
        op = op.parent_op()
    return False


def flush_wgmma(root: Operation) -> int:
    """Insert the syncs in every sched.kernel under `root`; return how many waits were added."""
    w = _Flusher()
    w.run(root)
    return w.inserted


@dataclass(frozen=True)
class FlushWgmma(ModulePass):
    """Insert one `sched.wgmma.wait_group 0` before the first read of in-flight wgmma results."""

    name = "sched-flush-wgmma"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        flush_wgmma(op)


__all__ = ["FlushWgmma", "WgmmaSyncError", "flush_wgmma", "inflight_readers"]
