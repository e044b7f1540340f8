"""sched-alias-smem: shared-memory lifetimes and byte offsets, with reuse.

For each `sched.kernel`, every shared `sched.alloc` without an `offset` gets one: a byte offset
into the kernel's dynamic shared memory, chosen so that buffers alive at the same time never
share a byte and buffers whose lifetimes are disjoint may. Buffers that already carry an offset
(placed by hand) stay where they are and are avoided for as long as they live.

Lifetimes, in program order (a pre-order walk of the kernel):
- a buffer lives from its first use to its last; uses follow views of it (`memref.view`,
  `collapse_shape`, ...: no use themselves) and wgmma descriptors made from it, through the
  descriptor arithmetic, down to the wgmmas;
- a use inside a serial loop (`scf.for`) keeps the buffer alive for the whole loop, since the
  next iteration comes back to it; a loop bound to a parallel index (`sched.for bind(...)`) is
  no loop in the generated code and stretches the lifetime only to itself: a barrier cannot go
  inside it (nor inside an `scf.if`), so two buffers used in one such op never share bytes,
  while buffers of two consecutive bound loops can;
- asynchronous uses last until the op that completes them: a TMA store's or reduction's source
  until the next `sched.bulk.wait_group`, a wgmma operand (through its descriptor) until the next
  `sched.wgmma.wait_group 0` (the kernel's end if none follows).

Placement (a stable rule, independent of the order the allocs were written in): buffers are
placed largest first, then by earlier first use, then by later last use, then by type, each at
the lowest offset that is a multiple of its alignment and overlaps no placed buffer alive at the
same time. Alignment: 1024 bytes for buffers that TMA or wgmma address (128-byte swizzle), 8
for mbarrier arrays, 16 otherwise (16-byte vector accesses), at least the element size.

Requests: an alloc may say `{fuser.smem = "no_reuse"}`: it gets bytes no other buffer uses
during the kernel (as if alive throughout). The default, `"reuse"`, lets it take dead buffers'
bytes.

Reuse needs a barrier: when a buffer takes bytes another buffer used before, every thread must
be done with the old one before the new one is written. The pass inserts one `sched.barrier`
before the new buffer's first use (in the block where both lifetimes meet), unless a
`sched.barrier` already lies between the old buffer's last use and that point; a kernel with
no reuse gets no barrier.

Releases: inside a branch that only some threads take (a warp-specialized kernel's consumer
warpgroups), lifetimes alone never allow reuse, since the branch cannot hold a CTA barrier. A
scheduler that knows more says so with `sched.release %a, %b threads N`: every thread that
touched those buffers reaches the release, N of them, after its last access (asynchronous
copies into them observed complete). For buffers used only after the release in its block, a
released buffer is then dead once its wgmma reads and TMA stores and reductions (the async uses
above) have completed; a buffer that takes its bytes gets a barrier of those N threads there (a
`sched.named_barrier` with the kernel's first free id, or `sched.barrier` when the release is
at the kernel's top level and N is the whole block). The pass erases the releases; a buffer
used after its release is an error.

The result is visible in the IR: each alloc's `offset`, the kernel's `smem` (the peak), and a
`fuser.smem` attribute on the kernel: "peak P bytes, S without reuse; %b reuses %a, ...". A
peak above `budget` (the opt-in dynamic shared memory of a Hopper block) is refused with a
diagnostic naming the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from fuser.dialects import sched
from fuser.dialects.ir import location_of

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
    # A buffer named by a `sched.release` (key `release`) is dead, for the buffers used after
    # that release in its block, from `sync_end` on; `after[r]` is where a buffer used only after
    # release r (in r's block) starts, counted at that block's level.
    release: int | None = None
    sync_end: int | None = None
    after: dict[int, int] = field(default_factory=dict)

    def live_with(self, other: Buffer) -> bool:
        if self.no_reuse or other.no_reuse:
            return True
        if self.released_before(other) or other.released_before(self):
            return False
        return self.start <= other.end and other.start <= self.end

    def released_before(self, later: Buffer) -> bool:
        """Whether this buffer's release frees it for `later` (a reuse behind the release's barrier)."""
        return self.release is not None and self.release in later.after and self.sync_end < later.after[self.release]

    def ends_before(self, later: Buffer) -> bool:
        """Whether `later` may take this buffer's bytes, and so needs a barrier when it does."""
        return not self.no_reuse and not later.no_reuse and (self.end < later.start or self.released_before(later))

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


_VIEWS = (memref.ViewOp, memref.CollapseShapeOp, memref.ExpandShapeOp, memref.SubviewOp)
"""Ops that make another name for a buffer's bytes without touching them."""


def _uses(v: SSAValue) -> list[Operation]:
    """Ops that touch buffer `v`: directly, through views, or through wgmma descriptors of it
    (and the descriptor arithmetic that moves them to a slot or a k-step) down to the wgmmas.
    The views themselves and a release are no use."""
    out, todo, seen = [], [(v, False)], set()
    while todo:
        x, is_desc = todo.pop()
        for use in x.uses:
            op = use.operation
            if op in seen or isinstance(op, sched.ReleaseOp):
                continue
            seen.add(op)
            if isinstance(op, _VIEWS):
                todo += [(r, False) for r in op.results]
                continue
            out.append(op)
            if isinstance(op, sched.WgmmaDescOp) or is_desc and op.name.startswith("arith."):
                todo += [(r, True) for r in op.results]
    return out


def _next_after(order: _Order, pos: int, pred) -> int:
    for op in order.ops[pos + 1:]:
        if pred(op):
            return order.pos[op]
    return len(order.ops)


def _async_end(order: _Order, u: Operation) -> int:
    """Where an asynchronous use of a buffer completes (the use itself when it is synchronous)."""
    if isinstance(u, (sched.TmaStoreOp, sched.TmaReduceOp)):
        return _next_after(order, order.pos[u], lambda o: isinstance(o, sched.BulkWaitGroupOp))
    if isinstance(u, sched.WgmmaMmaAsyncOp):
        return _next_after(order, order.pos[u],
                           lambda o: isinstance(o, sched.WgmmaWaitGroupOp) and o.pending.value.data == 0)
    return order.end[u]


def _interval(alloc: sched.AllocOp, order: _Order) -> tuple[int, int, list[Operation]]:
    uses = _uses(alloc.result)
    if not uses:
        p = order.pos[alloc]
        return p, p, []
    start = min(order.pos[u] for u in uses)
    end = max(order.end[u] for u in uses)
    for u in uses:
        end = max(end, _async_end(order, u))
        # A region op around a use (up to the alloc's own level) holds the buffer for all of it:
        # a serial loop comes back to it; a thread-bound loop or an `if` cannot hold the barrier
        # a reuse needs, so reuse happens only between such ops, never inside one.
        anc = u.parent_op()
        while anc is not None and not isinstance(anc, sched.KernelOp) and not anc.is_ancestor(alloc):
            start, end = min(start, order.pos[anc]), max(end, order.end[anc])
            anc = anc.parent_op()
    return start, end, uses


_MBARRIER_OPS = (sched.MBarrierInitOp, sched.MBarrierArriveOp, sched.MBarrierArriveExpectTxOp, sched.MBarrierWaitOp,
                 sched.MBarrierArriveClusterOp, sched.TmaLoadOp)


def _tile_use(u: Operation, buf: SSAValue) -> bool:
    """Whether TMA or wgmma address the buffer as a 128-byte-swizzled tile (a TMA load's
    mbarrier operand is not one)."""
    if isinstance(u, sched.TmaLoadOp):
        return u.barriers is not buf
    return isinstance(u, (sched.TmaStoreOp, sched.TmaReduceOp, sched.WgmmaDescOp))


def _alignment(alloc: sched.AllocOp, uses: list[Operation]) -> int:
    eb = sched.element_bytes(alloc.result.type.element_type)
    if any(_tile_use(u, alloc.result) for u in uses):
        return max(SWIZZLED_ALIGN, eb)
    if uses and all(isinstance(u, _MBARRIER_OPS) for u in uses):  # mbarriers: 8-byte words
        return max(8, eb)
    return max(16, eb)


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
    releases = _read_releases(kernel, order, allocs, bufs)
    peak = place(list(bufs.values()))
    if peak > budget:
        raise AliasSmemError(f"'sched.kernel' @{kernel.sym_name.data}: its shared buffers need {peak} bytes at their "
                             f"peak, over the {budget}-byte budget of one block", kernel)
    reuses, synced = [], set()
    for a, b in bufs.items():
        if a.offset is None:
            a.properties["offset"] = IntegerAttr(b.offset, i64)
        earlier = [o for x, o in bufs.items() if x is not a and o.ends_before(b) and o.overlaps_bytes(b)]
        if not earlier or a not in used:
            continue
        reuses.append(f"{b.name} reuses {', '.join(o.name for o in sorted(earlier, key=lambda o: o.start))}")
        plain = [o for o in earlier if not o.released_before(b)]
        if plain:
            _insert_barrier(order, max(o.end for o in plain), order.ops[b.start])
        for o in earlier:
            if o.released_before(b) and o.release not in synced:
                synced.add(o.release)
                _insert_release_barrier(kernel, *releases[o.release])
    for r in [o for o in order.ops if isinstance(o, sched.ReleaseOp)]:  # read; the layout holds what they said
        r.detach()
        r.erase()
    total = sum(b.size for b in bufs.values())
    kernel.properties["smem"] = IntegerAttr(max(kernel.smem.value.data, peak), i64)
    note = f"peak {peak} bytes, {total} without reuse"
    kernel.attributes["fuser.smem"] = StringAttr(note + ("; " + "; ".join(reuses) if reuses else ""))


def _lift(op: Operation, block: Block) -> Operation | None:
    """The ancestor of `op` (or op itself) that sits in `block`; None when op is not inside it."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def _read_releases(kernel: sched.KernelOp, order: _Order, allocs: list[sched.AllocOp],
                   bufs: dict[sched.AllocOp, Buffer]) -> dict[int, tuple[sched.ReleaseOp, Operation]]:
    """Apply each `sched.release` to the buffers: a released buffer is free, for the buffers
    used only after the release in its block, once its last use has completed (the `anchor`,
    at the release's block level); returns release key -> (release, anchor)."""
    out: dict[int, tuple[sched.ReleaseOp, Operation]] = {}
    released: set[sched.AllocOp] = set()
    kname = kernel.sym_name.data
    for r in [o for o in order.ops if isinstance(o, sched.ReleaseOp)]:
        key, block = order.pos[r], r.parent_block()
        anchor = r
        for i, v in enumerate(r.buffers):
            a = v.owner
            if not isinstance(a, sched.AllocOp) or a not in bufs:
                raise AliasSmemError(f"'sched.release' in kernel @{kname}: operand #{i} is not a shared sched.alloc "
                                     "of this kernel", r)
            if a in released:
                raise AliasSmemError(f"'sched.release' in kernel @{kname}: {bufs[a].name} is released twice", r)
            released.add(a)
            for u in _uses(a.result):
                if order.pos[u] > key:
                    raise AliasSmemError(f"'sched.release' in kernel @{kname}: {bufs[a].name} is used after its "
                                         f"release, by '{u.name}'{_where(u)}", r)
                done = _async_end(order, u)
                if done <= key:  # complete before the release (the release's promise covers it)
                    continue
                later = _lift(order.ops[done], block) if done < len(order.ops) else None
                if later is None:  # it completes outside the release's block: no reuse behind it
                    anchor = None
                    break
                if anchor is not None and order.pos[later] > order.pos[anchor]:
                    anchor = later
            if anchor is None:
                break
        if anchor is None:
            continue
        for v in r.buffers:
            b = bufs[v.owner]
            b.release, b.sync_end = key, order.end[anchor]
        out[key] = (r, anchor)
        for a, b in bufs.items():  # the buffers used only after the release, in its block
            uses = _uses(a.result)
            lifted = [_lift(u, block) for u in uses]
            if uses and all(x is not None and order.pos[x] > key for x in lifted):
                b.after[key] = min(order.pos[x] for x in lifted)
    return out


def _where(op: Operation) -> str:
    loc = location_of(op)
    return "" if loc == "<unknown>" else f" at {loc}"


def _insert_release_barrier(kernel: sched.KernelOp, release: sched.ReleaseOp, anchor: Operation) -> None:
    """The barrier of the release's threads, right after the anchor: all of them are done with
    the released bytes before any of them writes the new buffer."""
    n = release.threads.value.data
    if release.parent_op() is kernel and n == kernel.threads_per_block:
        bar = sched.BarrierOp()
    else:
        taken = {o.id.value.data for o in kernel.walk() if isinstance(o, sched.NamedBarrierOp)}
        free = [i for i in range(1, 16) if i not in taken]
        if not free:
            raise AliasSmemError(f"'sched.kernel' @{kernel.sym_name.data}: no free named barrier id for the "
                                 "barrier of a 'sched.release'", release)
        bar = sched.NamedBarrierOp("sync", free[0], n)
    anchor.parent_block().insert_op_after(bar, anchor)


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

    budget: int = sched.HOPPER_SMEM_PER_BLOCK
    """Dynamic shared memory one block may use, in bytes (232448 on H100/H200)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in [o for o in op.walk() if isinstance(o, sched.KernelOp)]:
            alias_kernel(k, self.budget)


__all__ = ["AliasSmem", "AliasSmemError", "Buffer", "place"]
