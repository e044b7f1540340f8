"""sched-flush-wgmma: read-after-write syncs for asynchronous wgmma results.

`sched.wgmma.mma_async` returns before its accumulators are written. Walking each kernel in
program order, an mma fills the async pipeline: its result (and anything that carries it on
unchanged: loop-carried values, `scf.if`/loop results, the next mma's accumulator) is *in
flight*. Before the first op that reads an in-flight value (anything but another mma or a
`yield` that passes it along) the pass inserts exactly one `sched.wgmma.wait_group 0`, which
flushes the pipeline: every in-flight value that op's position can see is threaded through the
wait and later uses read the wait's results. Later readers need nothing until another mma
refills the pipeline. No `commit_group` is added: `wait_group` only waits for committed groups,
so an mma read before any `sched.wgmma.commit_group` follows it is refused, not flushed.

Loops are handled by a fixed point: a loop's carried value is in flight in the body when its
initial value is, or when the body yields an in-flight value; a loop result is in flight when the
body ends with it in flight. A loop whose bounds do not prove one iteration may run zero times:
what was in flight before it stays in flight after it (a flush inside its body may never run).
So an mma inside a main loop whose result is read after the loop gets one wait after the loop,
right before the reader. A `wait_group 0` already in the IR flushes too (no duplicate).

The same walk, without inserting, finds the ops that read an in-flight value: the nvvm
conversion refuses a kernel that has any (`inflight_readers`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import sched
from fuser.lowering.common import definition_order

_YIELDS = (scf.YieldOp, sched.YieldOp)
_LOOPS = (scf.ForOp, sched.ForOp)


class WgmmaSyncError(Exception):
    """An mma result read where no wait can make it ready (it was never committed)."""

    def __init__(self, message: str, op: Operation):
        super().__init__(message)
        self.op = op


@dataclass(frozen=True)
class _State:
    inflight: frozenset[SSAValue] = frozenset()
    uncommitted: frozenset[SSAValue] = frozenset()  # in flight, in no committed group yet

    def __or__(self, other: _State) -> _State:
        return _State(self.inflight | other.inflight, self.uncommitted | other.uncommitted)

    def only(self, keep) -> _State:
        return _State(frozenset(v for v in self.inflight if v in keep),
                      frozenset(v for v in self.uncommitted if v in keep))

    def add(self, values, uncommitted: bool) -> _State:
        values = frozenset(values)
        return _State(self.inflight | values, self.uncommitted | values if uncommitted else self.uncommitted)


_EMPTY = _State()


def _ancestor_in(op: Operation, block: Block) -> Operation | None:
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def _const(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _runs_at_least_once(loop: Operation) -> bool:
    lb, ub = _const(loop.operands[0]), _const(loop.operands[1])
    return lb is not None and ub is not None and lb < ub


class _Walker:
    """Walks a kernel with the in-flight state. `insert`: add the flushes; else record the ops
    that read in-flight values in `readers` (when `record`)."""

    def __init__(self, insert: bool):
        self.insert = insert
        self.inserted = 0
        self.readers: list[Operation] = []

    def block(self, block: Block, st: _State, record: bool = True) -> _State:
        """Walk `block` with the state at its start; return the state at its end."""
        for op in list(block.ops):
            if isinstance(op, sched.WgmmaWaitGroupOp):
                if op.pending.value.data == 0:
                    st = _EMPTY
                continue
            if isinstance(op, sched.WgmmaCommitGroupOp):
                st = _State(st.inflight)
                continue
            if isinstance(op, sched.WgmmaMmaAsyncOp):
                st = st.add([op.result], uncommitted=True)
                continue
            if isinstance(op, _YIELDS):
                continue
            if isinstance(op, _LOOPS):
                st = self.loop(op, st, record)
                continue
            if isinstance(op, scf.IfOp):
                st = self.if_(op, st, record)
                continue
            if any(v in st.inflight for v in op.operands) or self._reads_inside(op, st):
                st = self.read(op, st, record)
        return st

    def read(self, op: Operation, st: _State, record: bool) -> _State:
        """`op` reads an in-flight value: flush before it (or record it)."""
        if not record:
            return _EMPTY
        if self.insert:
            if st.uncommitted:
                raise WgmmaSyncError(f"'{op.name}' reads the result of a 'sched.wgmma.mma_async' that no "
                                     f"'sched.wgmma.commit_group' has committed; wait_group cannot wait for it", op)
            self.flush(op, st.inflight)
        else:
            self.readers.append(op)
        return _EMPTY

    @staticmethod
    def _reads_inside(op: Operation, st: _State) -> bool:
        """An op with regions (not a loop or if) that reads an in-flight value anywhere inside."""
        if not op.regions or not st.inflight:
            return False
        return any(v in st.inflight for o in op.walk() for v in o.operands)

    def loop(self, op: Operation, st: _State, record: bool) -> _State:
        body = op.regions[0].blocks[0]
        inits = list(op.operands[3:])
        args = list(body.args[1:])
        term = body.last_op

        def carried_from(state: _State, pairs) -> _State:
            return _State(frozenset(a for a, v in pairs if v in state.inflight),
                          frozenset(a for a, v in pairs if v in state.uncommitted))

        carried = carried_from(st, zip(args, inits))
        while True:  # fixed point on which carried values are in flight
            end = self.block(body, st | carried, record=False)
            new = carried | carried_from(end, zip(args, term.operands))
            if new == carried:
                break
            carried = new
        end = self.block(body, st | carried, record)
        # After the loop: the outer values the body did not flush, and the results whose
        # yielded value is in flight; if the body may not run, everything in flight before it.
        out = st.only(end.inflight) | carried_from(end, zip(op.results, term.operands))
        if not _runs_at_least_once(op):
            out = out | st | carried_from(st, zip(op.results, inits))
        return out

    def if_(self, op: scf.IfOp, st: _State, record: bool) -> _State:
        if op.cond in st.inflight:
            st = self.read(op, st, record)
        out = _EMPTY
        for region in op.regions:
            if not region.blocks:
                out = out | st
                continue
            blk = region.blocks[0]
            end = self.block(blk, st, record)
            out = out | end.only(st.inflight)
            term = blk.last_op
            if isinstance(term, _YIELDS):
                out = out | _State(frozenset(r for r, y in zip(op.results, term.operands) if y in end.inflight),
                                   frozenset(r for r, y in zip(op.results, term.operands) if y in end.uncommitted))
        return out

    def flush(self, before: Operation, inflight) -> None:
        block = before.parent_block()
        assert block is not None
        # thread every in-flight value visible here (defined in an enclosing scope, before `before`)
        visible = [v for v in inflight if self._dominates(v, before)]
        visible.sort(key=lambda v: (v.name_hint or "", definition_order(v)))  # not the set's order
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


def _kernels(root: Operation) -> list[sched.KernelOp]:
    return [root] if isinstance(root, sched.KernelOp) else [o for o in root.walk() if isinstance(o, sched.KernelOp)]


def flush_wgmma(root: Operation) -> int:
    """Insert the syncs in every sched.kernel under `root`; return how many waits were added."""
    w = _Walker(insert=True)
    for k in _kernels(root):
        w.block(k.body.block, _EMPTY)
    return w.inserted


def inflight_readers(kernel: sched.KernelOp) -> list[Operation]:
    """The ops of `kernel` that read a wgmma result no `wait_group 0` has made ready."""
    w = _Walker(insert=False)
    w.block(kernel.body.block, _EMPTY)
    return w.readers


@dataclass(frozen=True)
class FlushWgmma(ModulePass):
    """Insert one `sched.wgmma.wait_group 0` before the first read of in-flight wgmma results."""

    name = "sched-flush-wgmma"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        flush_wgmma(op)


__all__ = ["FlushWgmma", "WgmmaSyncError", "flush_wgmma", "inflight_readers"]
