"""sched-verify-buffers: prove that every kernel of a scheduled fusion reads data that exists.

A scheduled fusion is a host function (its `sched.launch`es run in order) and the kernels it
launches. This check follows the host function and, for every global buffer, knows whether
it holds data yet:

- on entry, the function's inputs hold data (the first `#args - fuser.num_outputs` arguments;
  every argument when the attribute is absent) and so does a `zero_init` or `kept_zero`
  workspace; outputs and other workspaces do not;
- after a launch, every buffer its kernel writes (`sched.store`, `sched.tma.store`,
  `sched.tma.reduce`, `sched.semaphore.signal`) does.

It fails when a kernel reads (`sched.load`, `sched.tma.load`) a buffer that no earlier launch
wrote, or reads a buffer that it writes itself without ordering its own write first: a store to
the buffer, then a `sched.barrier`, then the read, in program order. Both are the shape of a
silent wrong answer (a value read back from the output it is about to be stored in), so the
diagnostic names the kernel, the buffer and the value it holds (host buffers carry the fusion
value's name).

Two kinds of access follow rules of their own (they synchronise across CTAs):
- `sched.tma.reduce` combines into what is there: into a buffer the kernel also stores to
  (serial split-K: split 0 stores, later splits add, in semaphore order) it counts as a write;
  a kernel that only reduces into a buffer needs it to hold data before the launch;
- `sched.semaphore.wait` spins on a counter: the semaphore buffer must hold data before the
  launch (a kernel cannot initialise counters that other CTAs of the same launch wait on).
  Semaphores also order a kernel's own write before its read across CTAs, as a barrier does
  within one: a write before a signal, and a wait on that semaphore before the read.

An input that an in-place output aliases (the host function's output argument carries
`fusion.alias`, lowering/analysis/inplace.py) holds the input's data until a kernel writes the
output into it: after that no launch may read it, and a kernel that reads and writes it must
read each element only in the thread that then writes it (the same index, before the store).
A violation names the input, the output and the kernels.

A buffer may reach a kernel under several arguments (itself and a tensor map of it): reads and
writes through any of them are the same buffer's.

`check_buffers` is the analysis; the compile driver runs it on every schedule, and the pass
runs it inside a pipeline (the named pipelines have it after `convert-fusion-to-sched`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import sched
from fuser.dialects.ir import FuserDiagnostic, location_of
from fuser.lowering.analysis.inplace import aliased_inputs, inplace_hazards

# Ops that touch a kernel's global buffers, by the operand that names the buffer.
_READS = {sched.LoadOp: "buffer", sched.TmaLoadOp: "tensor_map"}
_WRITES = {sched.StoreOp: "buffer", sched.AtomicAddOp: "buffer", sched.TmaStoreOp: "tensor_map", sched.TmaReduceOp: "tensor_map",
           sched.SemaphoreSignalOp: "sems"}
# Writes that also read the buffer's data before the launch unless the kernel stores it too.
_COMBINES = (sched.TmaReduceOp, sched.AtomicAddOp)
# Ops that only give another view of a buffer: accesses through the view are the buffer's.
_VIEWS = (memref.CollapseShapeOp,)
# Reads ordered by their own protocol, which need data before the launch.
_WAITS = {sched.SemaphoreWaitOp: "sems"}


@dataclass
class KernelAccesses:
    """Per kernel argument, the ops that read, write and wait on it, in program order; and the
    position of every `sched.barrier` in that order."""

    reads: dict[int, list[tuple[int, Operation]]] = field(default_factory=dict)
    writes: dict[int, list[tuple[int, Operation]]] = field(default_factory=dict)
    waits: dict[int, list[tuple[int, Operation]]] = field(default_factory=dict)
    barriers: list[int] = field(default_factory=list)

    def _writes_of(self, args: Collection[int]) -> list[tuple[int, Operation]]:
        return sorted((w for i in args for w in self.writes.get(i, [])), key=lambda w: w[0])

    def ordered_write_before(self, args: Collection[int], pos: int) -> bool:
        """The kernel's own write of a buffer (named by kernel arguments `args`) is ordered before
        a read at program position `pos`: within a CTA, a write then a barrier before `pos`;
        across CTAs taking turns, a write before a semaphore signal and a wait on that same
        semaphore before `pos` (the reader waits for the turn of a writer that has signalled)."""
        writes = [p for p, _ in self._writes_of(args)]
        if not writes:
            return False
        if any(writes[0] < b < pos for b in self.barriers):
            return True
        for sem, waits in self.waits.items():
            signals = [p for p, o in self.writes.get(sem, []) if isinstance(o, sched.SemaphoreSignalOp)]
            if waits[0][0] < pos and any(w < s for w in writes for s in signals):
                return True
        return False

    def needs_data_before(self, args: Collection[int]) -> tuple[Operation, int] | None:
        """The first access of a buffer (named by kernel arguments `args`) that needs it to hold
        data when the launch starts, and its argument: a wait, or a reduction into it when no
        other write of the kernel stores it."""
        waits = sorted(((p, op, i) for i in args for p, op in self.waits.get(i, [])), key=lambda t: t[0])
        if waits:
            return waits[0][1:]
        writes = sorted(((p, op, i) for i in args for p, op in self.writes.get(i, [])), key=lambda t: t[0])
        if writes and all(isinstance(op, _COMBINES) for _, op, _ in writes):
            return writes[0][1:]
        return None


def kernel_accesses(kernel: sched.KernelOp) -> KernelAccesses:
    args = {a: i for i, a in enumerate(kernel.body.block.args)}
    acc = KernelAccesses()
    for pos, op in enumerate(kernel.walk()):
        if isinstance(op, sched.BarrierOp):
            acc.barriers.append(pos)
            continue
        if isinstance(op, _VIEWS) and op.operands[0] in args:
            # a view of an argument (split-K's [S*M, N] partials) is that argument
            args[op.results[0]] = args[op.operands[0]]
            continue
        known = False
        for table, into in ((_READS, acc.reads), (_WRITES, acc.writes), (_WAITS, acc.waits)):
            what = table.get(type(op))
            known = known or what is not None
            if what is not None and getattr(op, what) in args:
                into.setdefault(args[getattr(op, what)], []).append((pos, op))
        if not known:
            for v in op.operands:
                if v in args:  # an op this check does not know: it cannot prove anything about it
                    raise FuserDiagnostic(f"{location_of(op)}: error: sched-verify-buffers: '{op.name}' in kernel "
                                          f"@{kernel.sym_name.data} uses argument #{args[v]}; this check does not "
                                          f"know whether it reads or writes it")
    return acc


def _describe(buf: SSAValue, roles: dict[SSAValue, str]) -> str:
    name = f"%{buf.name_hint}" if buf.name_hint else "a buffer"
    return f"{name} ({roles.get(buf, 'a host value')})"


def _buffer_of(v: SSAValue) -> SSAValue:
    """A launch operand's global buffer (a tensor map stands for the buffer it describes)."""
    if isinstance(v.owner, sched.TensorMapOp):
        return v.owner.source
    return v


def check_host(fn: func.FuncOp, kernels: dict[str, sched.KernelOp]) -> None:
    args = list(fn.body.block.args)
    n_out = fn.attributes.get("fuser.num_outputs")
    n_in = len(args) - n_out.value.data if isinstance(n_out, IntegerAttr) else len(args)
    roles: dict[SSAValue, str] = {a: f"input #{i} of @{fn.sym_name.data}" for i, a in enumerate(args[:n_in])}
    roles |= {a: f"output #{i} of @{fn.sym_name.data}" for i, a in enumerate(args[n_in:])}
    defined: set[SSAValue] = set(args[:n_in])
    inplace = {args[i]: j for i, j in aliased_inputs(fn).items()}
    for a, j in inplace.items():
        roles[a] += f", written in place by output #{j}"
    accesses: dict[str, KernelAccesses] = {}
    for op in fn.body.block.ops:
        if isinstance(op, sched.WorkspaceOp):
            zeroed = op.zero_init is not None or op.kept_zero is not None
            roles[op.result] = "a zero-initialized workspace" if zeroed else "a workspace"
            if zeroed:
                defined.add(op.result)
            continue
        if not isinstance(op, sched.LaunchOp):
            continue
        name = op.kernel.root_reference.data
        kernel = kernels.get(name)
        if kernel is None or len(kernel.body.block.args) != len(op.args):
            raise FuserDiagnostic(f"{location_of(op)}: error: 'sched.launch' op in @{fn.sym_name.data}: "
                                  f"no sched.kernel @{name} taking {len(op.args)} arguments in this module")
        if name not in accesses:
            accesses[name] = kernel_accesses(kernel)
        acc = accesses[name]
        where = location_of(op) if location_of(op) != "<unknown>" else location_of(fn)
        # the kernel arguments that name each buffer (a buffer and its tensor map, say)
        aliases: dict[SSAValue, list[int]] = {}
        for i, v in enumerate(op.args):
            aliases.setdefault(_buffer_of(v), []).append(i)
        for i, reads in sorted(acc.reads.items()):
            buf = _buffer_of(op.args[i])
            pos, reader = reads[0]
            writes_it = any(j in acc.writes for j in aliases[buf])
            if writes_it and buf not in inplace and not acc.ordered_write_before(aliases[buf], pos):
                raise FuserDiagnostic(
                    f"{where}: error: kernel @{name} reads {_describe(buf, roles)} through argument #{i} and also "
                    f"writes it, with no store and sched.barrier ordering its write before the read "
                    f"('{reader.name}' at {location_of(reader)}); it would read the value before computing it")
            if buf not in defined and not writes_it:
                raise FuserDiagnostic(
                    f"{where}: error: kernel @{name} reads {_describe(buf, roles)} through argument #{i} "
                    f"('{reader.name}' at {location_of(reader)}), but no earlier launch writes it")
        for buf, names in aliases.items():
            first = acc.needs_data_before(names)
            if first is not None and buf not in defined:
                user, i = first
                raise FuserDiagnostic(
                    f"{where}: error: kernel @{name} "
                    f"{'waits on' if isinstance(user, sched.SemaphoreWaitOp) else 'reduces into'} "
                    f"{_describe(buf, roles)} through argument #{i} ('{user.name}' at {location_of(user)}), but it "
                    f"holds no data when the launch starts (no earlier launch writes it and it is not a "
                    f"zero-initialized workspace)")
        for i in acc.writes:
            defined.add(_buffer_of(op.args[i]))
    for h in inplace_hazards(fn, kernels):
        buf = args[h.input]
        where = location_of(fn)
        if h.writer == h.reader:
            raise FuserDiagnostic(f"{where}: error: kernel @{h.reader} reads and writes {_describe(buf, roles)}, "
                                  f"the input that output #{h.output} aliases: {h.why.split(': ', 1)[1]}")
        raise FuserDiagnostic(f"{where}: error: kernel @{h.reader} reads {_describe(buf, roles)} after kernel "
                              f"@{h.writer} wrote output #{h.output} into it in place: it would read the updated "
                              f"values, not the input's")


def check_buffers(module: ModuleOp) -> None:
    """Run the check on every host function of `module` (a no-op on IR with no sched.launch)."""
    kernels = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, sched.KernelOp)}
    for fn in module.body.block.ops:
        if isinstance(fn, func.FuncOp) and any(isinstance(o, sched.LaunchOp) for o in fn.body.block.ops):
            check_host(fn, kernels)


@dataclass(frozen=True)
class VerifyBuffers(ModulePass):
    """Check that every kernel reads only buffers that hold data: inputs, zero-initialized
    workspaces, or buffers an earlier launch wrote (or that it wrote itself before a barrier)."""

    name = "sched-verify-buffers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_buffers(op)
