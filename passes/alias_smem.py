"""sched-alias-smem: shared-memory lifetimes and byte offsets, with reuse.

For each `sched.kernel`, every shared `sched.alloc` without an `offset` gets one: a byte offset
into the kernel's dynamic shared memory, chosen so that buffers alive at the same time never
share a byte and buffers whose lifetimes are disjoint may. Buffers that already carry an offset
(placed by hand) stay where they are and are avoided for as long as they live.

Lifetimes, in program order (a pre-order walk of the kernel):
- a buffer lives from its first use to its last; uses follow views of it (`memref` results
  computed from it) and wgmma descriptors made from it;
- a use inside a serial loop (`scf.for`) keeps the buffer alive for the whole loop, since the
  next iteration comes back to it; a loop bound to a parallel index (`sched.for bind(...)`) is
  no loop in the generated code and stretches the lifetime only to itself: a barrier cannot go
  inside it (nor inside an `scf.if`), so two buffers used in one such op never share bytes,
  while buffers of two consecutive bound loops can;
- asynchronous uses last until the op that completes them: a TMA store's source until the
  next `sched.bulk.wait_group`, a wgmma operand (through its descriptor) until the next
  `sched.wgmma.wait_group 0` (the kernel's end if none follows).

Placement (a stable rule, independent of the order the allocs were written in): buffers are
placed largest first, then by earlier first use, then by later last use, then by type, each at
the lowest offset that is a multiple of its alignment and overlaps no placed buffer alive at the
same time. Alignment: 1024 bytes for buffers that TMA or wgmma address (128-byte swizzle), 16
otherwise (16-byte vector accesses), at least the element size.

Requests: an alloc may say `{fuser.smem = "no_reuse"}`: it gets bytes no other buffer uses
during the kernel (as if alive throughout). The default, `"reuse"`, lets it take dead buffers'
bytes.

Reuse needs a barrier: when a buffer takes bytes another buffer used before, every thread must
be done with the old one before the new one is written. The pass inserts one `sched.barrier`
before the new buffer's first use (in the block where both lifetimes meet), unless a
`sched.barrier` already lies between the old buffer's last use and that point; a kernel with
no reuse gets no barrier. (Named barriers narrower than the CTA are left for later.)

The result is visible in the IR: each alloc's `offset`, the kernel's `smem` (the peak), and a
`fuser.smem` attribute on the kernel: "peak P bytes, S without reuse; %b reuses %a, ...". A
peak above `budget` (the opt-in dynamic shared memory of a Hopper block) is refused with a
diagnostic naming the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import sched

HOPPER_SMEM_BUDGET = 232448  # bytes of dynamic shared memory one block may opt into on H100/H200
SWIZZLED_ALIGN = 1024
REQUESTS = ("reuse", "no_reuse")


class AliasSmemError(Exception):
    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


# ------------------------------------------------------------------ the placement (pure)


@dataclass
class Buffer:
    """One shared buffer: its size, alignment and live interval [start, end] in program order."""

    name: str
    size: int
    align: int
    start: int
    end: int
    no_reuse: bool = False
    offset: int | None = None   # fixed (placed by hand) when given
    type_key: str = ""

    def live_with(self, other: Buffer) -> bool:
        if self.no_reuse or other.no_reuse:
            return True
        return self.start <= other.end and other.start <= self.end

    def overlaps_bytes(self, other: Buffer) -> bool:
        return self.offset < other.offset + other.size and other.offset < self.offset + self.size


def _align_up(x: int, a: int) -> int:
    return -(-x // a) * a


def place(buffers: list[Buffer]) -> int:
    """Give every buffer without an offset one; return the peak (end of the highest buffer)."""
    placed = [b for b in buffers if b.offset is not None]
    todo = sorted((b for b in buffers if b.offset is None),
                  key=lambda b: (-b.size, b.start, -b.end, -b.align, b.type_key, b.name))
    for b in todo:
        busy = sorted((p.offset, p.offset + p.size) for p in placed if p.live_with(b))
        off = 0
        for lo, hi in busy:  # lowest aligned gap that fits
            if _align_up(off, b.align) + b.size <= lo:
                break
            off = max(off, hi)
        b.offset = _align_up(off, b.align)
        placed.append(b)
    return max((b.offset + b.size for b in buffers), default=0)


# ------------------------------------------------------------------ lifetimes


@dataclass
class _Order:
    """Program positions: `pos[op]` when the walk reaches op, `end[op]` after its regions."""

    pos: dict[Operation, int] = field(default_factory=dict)
    end: dict[Operation, int] = field(default_factory=dict)
    ops: list[Operation] = field(default_factory=list)

    def walk(self, block: Block) -> None:
        for op in block.ops:
            self.pos[op] = len(self.ops)
            self.ops.append(op)
            for region in op.regions:
                for blk in region.blocks:
                    self.walk(blk)
            self.end[op] = len(self.ops) - 1


def _uses(v: SSAValue) -> list[Operation]:
    """Ops that use buffer `v`, through views and wgmma descriptors."""
    out, todo, seen = [], [v], set()
    while todo:
        x = todo.pop()
        for use in x.uses:
            op = use.operation
            if op in seen:
                continue
            seen.add(op)
            out.append(op)
            for r in op.results:  # a view of the buffer, or a descriptor of it
                if isinstance(r.type, MemRefType) or isinstance(op, sched.WgmmaDescOp):
                    todo.append(r)
    return out


def _next_after(order: _Order, pos: int, pred) -> int:
    for op in order.ops[pos + 1:]:
        if pred(op):
            return order.pos[op]
    return len(order.ops)


def _interval(alloc: sched.AllocOp, order: _Order) -> tuple[int, int, list[Operation]]:
    uses = _uses(alloc.result)
    if not uses:
        p = order.pos[alloc]
        return p, p, []
    start = min(order.pos[u] for u in uses)
    end = max(order.end[u] for u in uses)
    for u in uses:
        if isinstance(u, sched.TmaStoreOp):
            end = max(end, _next_after(order, order.pos[u], lambda o: isinstance(o, sched.BulkWaitGroupOp)))
        if isinstance(u, sched.WgmmaMmaAsyncOp):
            end = max(end, _next_after(order, order.pos[u],
                                       lambda o: isinstance(o, sched.WgmmaWaitGroupOp) and o.pending.value.data == 0))
        # A region op around a use (up to the alloc's own level) holds the buffer for all of it:
        # a serial loop comes back to it; a thread-bound loop or an `if` cannot hold the barrier
        # a reuse needs, so reuse happens only between such ops, never inside one.
        anc = u.parent_op()
        while anc is not None and not isinstance(anc, sched.KernelOp) and not anc.is_ancestor(alloc):
            start, end = min(start, order.pos[anc]), max(end, order.end[anc])
            anc = anc.parent_op()
    return start, end, uses


def _alignment(alloc: sched.AllocOp, uses: list[Operation]) -> int:
    eb = sched.element_bytes(alloc.result.type.element_type)
    swizzled = any(isinstance(u, (sched.TmaLoadOp, sched.TmaStoreOp, sched.WgmmaDescOp)) for u in uses)
    return max(SWIZZLED_ALIGN if swizzled else 16, eb)


def _size(t: MemRefType) -> int:
    n = 1
    for d in t.get_shape():
        n *= d
    return n * sched.element_bytes(t.element_type)


# ------------------------------------------------------------------ the pass


def alias_kernel(kernel: sched.KernelOp, budget: int) -> None:
    order = _Order()
    order.walk(kernel.body.block)
    allocs = [op for op in order.ops if isinstance(op, sched.AllocOp)
              and sched.memory_space(op.result.type) == sched.SHARED]
    if not any(a.offset is None for a in allocs):
        return
    bufs: dict[sched.AllocOp, Buffer] = {}
    used: set[sched.AllocOp] = set()
    seen_names: dict[str, int] = {}
    for i, a in enumerate(allocs):
        req = a.attributes.get("fuser.smem")
        req = req.data if isinstance(req, StringAttr) else "reuse"
        if req not in REQUESTS:
            raise AliasSmemError(f"'sched.alloc' in kernel @{kernel.sym_name.data}: fuser.smem must be one of "
                                 f"{', '.join(REQUESTS)}, got '{req}'", a)
        start, end, uses = _interval(a, order)
        if uses:
            used.add(a)
        name = _display_name(a.result, i, seen_names)
        bufs[a] = Buffer(name, _size(a.result.type), _alignment(a, uses), start, end, req == "no_reuse",
                         a.offset.value.data if a.offset is not None else None, str(a.result.type))
    peak = place(list(bufs.values()))
    if peak > budget:
        raise AliasSmemError(f"'sched.kernel' @{kernel.sym_name.data}: its shared buffers need {peak} bytes at their "
                             f"peak, over the {budget}-byte budget of one block", kernel)
    reuses = []
    for a, b in bufs.items():
        if a.offset is None:
            a.properties["offset"] = IntegerAttr(b.offset, i64)
        earlier = [o for x, o in bufs.items() if x is not a and o.end < b.start and o.overlaps_bytes(b)]
        if not earlier or a not in used:
            continue
        reuses.append(f"{b.name} reuses {', '.join(o.name for o in sorted(earlier, key=lambda o: o.start))}")
        _insert_barrier(order, max(o.end for o in earlier), order.ops[b.start])
    total = sum(b.size for b in bufs.values())
    kernel.properties["smem"] = IntegerAttr(max(kernel.smem.value.data, peak), i64)
    note = f"peak {peak} bytes, {total} without reuse"
    kernel.attributes["fuser.smem"] = StringAttr(note + ("; " + "; ".join(reuses) if reuses else ""))


def _display_name(v: SSAValue, i: int, seen: dict[str, int]) -> str:
    """The buffer's name as the printer shows it (a repeated hint gets `_1`, `_2`, ...)."""
    if not v.name_hint:
        return f"alloc #{i}"
    n = seen.get(v.name_hint, 0)
    seen[v.name_hint] = n + 1
    return f"%{v.name_hint}" + (f"_{n}" if n else "")


def _insert_barrier(order: _Order, old_end: int, first: Operation) -> None:
    """A CTA barrier between position `old_end` and `first`, unless one is already there."""
    if any(isinstance(o, sched.BarrierOp) for o in order.ops[old_end + 1:order.pos[first]]):
        return
    last_old = order.ops[old_end] if old_end < len(order.ops) else None
    # the block where both lifetimes meet: the innermost block holding `first` and the old end
    target = first
    while last_old is not None and not _encloses(target.parent_block(), last_old):
        target = target.parent_op()
    target.parent_block().insert_op_before(sched.BarrierOp(), target)


def _encloses(block: Block, op: Operation) -> bool:
    while op is not None:
        if op.parent_block() is block:
            return True
        op = op.parent_op()
    return False


@dataclass(frozen=True)
class AliasSmem(ModulePass):
    """Assign shared-memory offsets by lifetime, letting dead buffers' bytes be reused."""

    name = "sched-alias-smem"

    budget: int = HOPPER_SMEM_BUDGET
    """Dynamic shared memory one block may use, in bytes (232448 on H100/H200)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in [o for o in op.walk() if isinstance(o, sched.KernelOp)]:
            alias_kernel(k, self.budget)


__all__ = ["AliasSmem", "AliasSmemError", "Buffer", "place"]
