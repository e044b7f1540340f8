"""In-place outputs (issue 32): where a schedule would read an aliased input after writing it.

A fusion result declared `fusion.alias = I` is written into input I's buffer (the host
function's output argument carries the same attribute, and the kernels store into argument I).
The fusion's semantics read the input as it was before the call, so the schedule is correct
only if no element of the input is read after one has been written:

- across kernels: once a launch has written the buffer, no later launch reads it (a reduction
  of the input that the update also needs must run first: two kernels in that order are fine);
- within one kernel that reads and writes it: each thread reads only the elements it then
  writes itself. Shown syntactically: every `sched.load` and every `sched.store` of the buffer
  in the kernel sits in one block, uses the same index values (the same SSA values: the same
  element for the same thread) with the same vector width, and every load comes before the
  first store. A kernel writes each element of a result from one thread (the schedulers'
  invariant), so a thread's store of element i can then follow only its own read of i. Any
  other access of the buffer (a TMA copy, a load at another index: a flip, a reduction over
  the input in the same kernel) is a hazard.

`inplace_hazards` lists them; `sched-verify-buffers` reports the first as an error, and
`convert-fusion-to-sched` uses it to decide which aliased outputs it writes in place and which
it stages in a workspace copied into the input after the last kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from fuser.dialects import sched
from fuser.dialects.fusion.layout import ALIAS, arg_attrs

__all__ = ["Hazard", "aliased_inputs", "inplace_hazards"]

_READS = {sched.LoadOp: "buffer", sched.TmaLoadOp: "tensor_map"}
_WRITES = {sched.StoreOp: "buffer", sched.TmaStoreOp: "tensor_map", sched.TmaReduceOp: "tensor_map"}


@dataclass(frozen=True)
class Hazard:
    """Input `input` (an argument index of the host function), aliased by output `output`, is
    read by kernel `reader` after kernel `writer` wrote it (the same kernel: within one launch)."""
    input: int
    output: int
    writer: str
    reader: str
    why: str


def aliased_inputs(host: func.FuncOp) -> dict[int, int]:
    """{host input index: output index} of the host function's in-place outputs."""
    n_out = host.attributes.get("fuser.num_outputs")
    args = host.body.block.args
    n_in = len(args) - n_out.value.data if isinstance(n_out, IntegerAttr) else len(args)
    out: dict[int, int] = {}
    for j in range(len(args) - n_in):
        a = arg_attrs(host, n_in + j).get(ALIAS)
        if isinstance(a, IntegerAttr):
            out[int(a.value.data)] = j
    return out


def _buffer_of(v: SSAValue) -> SSAValue:
    return v.owner.source if isinstance(v.owner, sched.TensorMapOp) else v


def _accesses(kernel: sched.KernelOp, names: set[int]) -> tuple[list[Operation], list[Operation]]:
    args = {a: i for i, a in enumerate(kernel.body.block.args)}
    reads, writes = [], []
    for op in kernel.walk():
        for table, into in ((_READS, reads), (_WRITES, writes)):
            what = table.get(type(op))
            if what is not None and args.get(getattr(op, what)) in names:
                into.append(op)
    return reads, writes


def _same_element(reads: list[Operation], writes: list[Operation]) -> str | None:
    """None when each thread reads only the elements it writes, before writing them; else why not."""
    ops = reads + writes
    for op in ops:
        if not isinstance(op, (sched.LoadOp, sched.StoreOp)):
            return f"it accesses the buffer with '{op.name}' (an asynchronous copy of a whole tile)"
    first = writes[0]
    block, idx = first.parent, tuple(first.indices)
    width = first.value.type
    for op in ops:
        t = op.result.type if isinstance(op, sched.LoadOp) else op.value.type
        if op.parent is not block or tuple(op.indices) != idx or t != width:
            return (f"'{op.name}' at another index or in another block than the store (threads may read "
                    f"elements other threads have written)")
    order = {o: k for k, o in enumerate(block.ops)}
    if any(order[r] > order[w] for r in reads for w in writes):
        return "a load of the buffer follows its store"
    return None


def inplace_hazards(host: func.FuncOp, kernels: dict[str, sched.KernelOp]) -> list[Hazard]:
    """Every read of an aliased input after (or in a kernel racing with) a write of it."""
    aliased = aliased_inputs(host)
    if not aliased:
        return []
    args = list(host.body.block.args)
    bufs = {args[i]: i for i in aliased}
    written: dict[int, str] = {}   # input -> the kernel that first wrote it
    hazards: list[Hazard] = []
    for op in host.body.block.ops:
        if not isinstance(op, sched.LaunchOp):
            continue
        name = op.kernel.root_reference.data
        kernel = kernels.get(name)
        if kernel is None:
            continue
        names: dict[int, set[int]] = {}
        for k, v in enumerate(op.args):
            i = bufs.get(_buffer_of(v))
            if i is not None:
                names.setdefault(i, set()).add(k)
        for i, ks in names.items():
            reads, writes = _accesses(kernel, ks)
            if reads and i in written:
                hazards.append(Hazard(i, aliased[i], written[i], name,
                                      f"kernel @{written[i]} wrote the in-place output into it before"))
            elif reads and writes:
                why = _same_element(reads, writes)
                if why is not None:
                    hazards.append(Hazard(i, aliased[i], name, name, f"it reads and writes it in one launch: {why}"))
            if writes and i not in written:
                written[i] = name
    return hazards
