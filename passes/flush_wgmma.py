"""sched-flush-wgmma: read-after-write syncs for asynchronous wgmma results.

`sched.wgmma.mma_async` returns before its accumulators are written. Walking each kernel in
program order, an mma fills the async pipeline: its result (and anything that carries it on
unchanged: loop-carried values, `scf.if`/loop results, the next mma's accumulator) is *in
flight*. Before the first op that reads an in-flight value (anything but another mma or a
`yield` that passes it along) the pass inserts exactly one `sched.wgmma.wait_group 0`, which
flushes the pipeline: every in-flight value that op's position can see is threaded through the
wait and later uses read the wait's results. Later readers need nothing until another mma
refills the pipeline. No `commit_group` is added: the kernel's own commits close the groups.

Loops are handled by a fixed point: a loop's carried value is in flight in the body when its
initial value is, or when the body yields an in-flight value; a loop result is in flight when the
body ends with it in flight (loops are taken to run at least once). So
an mma inside a main loop whose result is read after the loop gets one wait after the loop,
right before the reader. A `wait_group 0` already in the IR flushes too (no duplicate).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import sched

_YIELDS = (scf.YieldOp, sched.YieldOp)
_LOOPS = (scf.ForOp, sched.ForOp)


def _ancestor_in(op: Operation, block: Block) -> Operation | None:
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


class _Flusher:
    def __init__(self):
        self.inserted = 0

    def block(self, block: Block, inflight: set[SSAValue], insert: bool) -> set[SSAValue]:
        """Walk `block` with the values in flight at its start; return those in flight at its end."""
        inflight = set(inflight)
        for op in list(block.ops):
            if isinstance(op, sched.WgmmaWaitGroupOp):
                if op.pending.value.data == 0:
                    inflight.clear()
                continue
            if isinstance(op, sched.WgmmaMmaAsyncOp):
                inflight.add(op.result)
                continue
            if isinstance(op, _YIELDS):
                continue
            if isinstance(op, _LOOPS):
                inflight = self.loop(op, inflight, insert)
                continue
            if isinstance(op, scf.IfOp):
                inflight = self.if_(op, inflight, insert)
                continue
            if any(v in inflight for v in op.operands) or self._reads_inside(op, inflight):
                if insert:
                    self.flush(op, inflight)
                inflight = set()
        return inflight

    @staticmethod
    def _reads_inside(op: Operation, inflight: set[SSAValue]) -> bool:
        """An op with regions (not a loop or if) that reads an in-flight value anywhere inside."""
        if not op.regions or not inflight:
            return False
        return any(v in inflight for o in op.walk() for v in o.operands)

    def loop(self, op: Operation, inflight: set[SSAValue], insert: bool) -> set[SSAValue]:
        body = op.regions[0].blocks[0]
        n_iv = 1
        inits = list(op.operands[3:]) if isinstance(op, (scf.ForOp, sched.ForOp)) else []
        args = list(body.args[n_iv:])
        term = body.last_op
        carried = {a for a, i in zip(args, inits) if i in inflight}
        # fixed point on which carried values are in flight
        while True:
            end = self.block(body, inflight | carried, insert=False)
            new = carried | {a for a, y in zip(args, term.operands) if y in end}
            if new == carried:
                break
            carried = new
        end = self.block(body, inflight | carried, insert)
        # After the loop (assumed to run at least once: a zero-trip loop reads nothing): the
        # outer values the body did not flush, and the results whose yielded value is in flight.
        out = {v for v in inflight if v in end}
        out |= {r for r, y in zip(op.results, term.operands) if y in end}
        return out

    def if_(self, op: scf.IfOp, inflight: set[SSAValue], insert: bool) -> set[SSAValue]:
        if op.cond in inflight:
            if insert:
                self.flush(op, inflight)
            inflight = set()
        out: set[SSAValue] = set()
        for region in op.regions:
            if not region.blocks:
                out |= inflight
                continue
            blk = region.blocks[0]
            end = self.block(blk, inflight, insert)
            out |= end & inflight
            term = blk.last_op
            if isinstance(term, _YIELDS):
                out |= {r for r, y in zip(op.results, term.operands) if y in end}
        return out

    def flush(self, before: Operation, inflight: set[SSAValue]) -> None:
        block = before.parent_block()
        assert block is not None
        # thread every in-flight value visible here (defined in an enclosing scope, before `before`)
        visible = [v for v in inflight if self._dominates(v, before)]
        visible.sort(key=lambda v: str(v.name_hint or ""))
        wait = sched.WgmmaWaitGroupOp(0, visible)
        block.insert_op_before(wait, before)
        self.inserted += 1
        for old, new in zip(visible, wait.outs):
            if old.name_hint:
                new.name_hint = old.name_hint + "_ready"

            def after(use, wait=wait, block=block) -> bool:
                anc = _ancestor_in(use.operation, block)
                return anc is not None and anc is not wait and wait.is_before_in_block(anc)
            old.replace_uses_with_if(new, after)

    @staticmethod
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
    f = _Flusher()
    kernels = [root] if isinstance(root, sched.KernelOp) else [o for o in root.walk() if isinstance(o, sched.KernelOp)]
    for k in kernels:
        f.block(k.body.block, set(), insert=True)
    return f.inserted


@dataclass(frozen=True)
class FlushWgmma(ModulePass):
    """Insert one `sched.wgmma.wait_group 0` before the first read of in-flight wgmma results."""

    name = "sched-flush-wgmma"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        flush_wgmma(op)


__all__ = ["FlushWgmma", "flush_wgmma"]
