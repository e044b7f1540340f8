"""sched-insert-bulk-syncs against an independent oracle, and the passes around the semaphore
hand-over: the TMA-reduction source's lifetime in sched-alias-smem, the semaphore and reduction
rules of sched-verify-buffers, and PTX that ptxas accepts.

The oracle enumerates the paths through a random kernel (both sides of every `scf.if`, every
loop unrolled each allowed number of times) and follows each bulk write one by one through
commit, wait_group 0 and the global fence. The pass must put its commit / wait / fence triple
before exactly the signals some path reaches with a write not yet fenced (and nowhere else),
one fence after every wait that lacks one, leave no such signal behind, and find nothing to do
a second time.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import scf

from fuser.dialects import sched
from fuser.dialects.ir import FuserDiagnostic, parse_module, print_module
from fuser.passes.alias_smem import alias_kernel
from fuser.passes.insert_bulk_syncs import insert_bulk_syncs, unsynced_signals
from fuser.passes.pipeline import build_pipeline, run_passes
from fuser.passes.verify_buffers import check_buffers

TM = "!sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>"
BOX = "memref<64x32xf32, 3>"

LEAVES = {
    "store": f"sched.tma.store %t[%c0, %c0], %tm[%c0, %c0] : {BOX}, {TM}",
    "reduce": f"sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : {BOX}, {TM}",
    "commit": "sched.bulk.commit_group",
    "wait0": "sched.bulk.wait_group 0",
    "wait0_read": "sched.bulk.wait_group 0 read",
    "wait1": "sched.bulk.wait_group 1",
    "fence_global": "sched.fence.proxy_async global",
    "fence_shared": "sched.fence.proxy_async",
    "sem_wait": "sched.semaphore.wait %sems[%c0] until %c0 : memref<16xi32>",
    "signal": "sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>",
}
# loop kind -> (header, the iteration counts one thread may run)
LOOPS = {
    "for_const": ("scf.for %i{n} = %c0 to %c3 step %c1 {{", (1, 2, 3, 4)),  # lb < ub: runs
    "for_dyn": ("scf.for %i{n} = %c0 to %bx step %c1 {{", (0, 1, 2, 3, 4)),
    "sched_for": ("sched.for bind(thread.x) %i{n} = %c0 to %c3 step %c1 {{", (0, 1, 2, 3, 4)),
}

leaf = st.sampled_from(sorted(LEAVES))
programs = st.recursive(
    st.lists(leaf, max_size=4),
    lambda inner: st.lists(st.one_of(
        leaf,
        st.tuples(st.just("if"), inner, st.one_of(st.none(), inner)),
        st.tuples(st.sampled_from(sorted(LOOPS)), inner)), max_size=5),
    max_leaves=12)


def kernel_text(program) -> str:
    """The program as a kernel; signals carry their position `{sig = N}` to be found again."""
    counter = {"sig": 0, "loop": 0}

    def emit(items, indent) -> list[str]:
        pad = "  " * indent
        out = []
        for it in items:
            if isinstance(it, str):
                text = LEAVES[it]
                if it == "signal":
                    text = text.replace(" : memref", f" {{sig = {counter['sig']}}} : memref")
                    counter["sig"] += 1
                out.append(pad + text)
            elif it[0] == "if":
                out.append(pad + "scf.if %cond {")
                out += emit(it[1], indent + 1)
                if it[2] is not None:
                    out.append(pad + "} else {")
                    out += emit(it[2], indent + 1)
                out.append(pad + "}")
            else:
                counter["loop"] += 1
                out.append(pad + LOOPS[it[0]][0].format(n=counter["loop"]))
                out += emit(it[1], indent + 1)
                out.append(pad + "}")
        return out

    body = "\n".join(emit(program, 1))
    return f"""sched.kernel @k(%tm : {TM}, %sems : memref<16xi32>) grid [4, 1, 1] block [128, 1, 1] smem 0 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %bx = sched.block_idx x
  %cond = arith.cmpi eq, %bx, %c0 : index
  %t = sched.alloc : {BOX}
{body}
  sched.return
}}"""


# ------------------------------------------------------------------ the oracle

# A write's progress: 0 issued (in no committed group), 1 committed, 2 complete; fenced writes
# are published and dropped. A path's state is the multiset of its writes' progress, kept as
# the set of progress values present (enough: every step moves all writes at one value).


def _apply(op, states: set[frozenset], pending_at: set[int], fence_after_waits: bool) -> set[frozenset]:
    out = set()
    for s in states:
        if isinstance(op, (sched.TmaStoreOp, sched.TmaReduceOp)):
            s = s | {0}
        elif isinstance(op, sched.BulkCommitGroupOp):
            s = frozenset(1 if p == 0 else p for p in s)
        elif isinstance(op, sched.BulkWaitGroupOp) and op.pending.value.data == 0 and op.read is None:
            s = frozenset(2 if p == 1 else p for p in s)
        elif isinstance(op, sched.FenceProxyAsyncOp) and op.fenced_space == "global" or \
                isinstance(op, sched.SemaphoreWaitOp) and fence_after_waits:
            s = frozenset(p for p in s if p != 2)
        elif isinstance(op, sched.SemaphoreSignalOp):
            if s:
                pending_at.add(op.attributes["sig"].value.data)
            s = frozenset()  # the pass syncs it (checked separately)
        out.add(s)
    return out


def _run(block, states, pending_at, fence_after_waits):
    for op in block.ops:
        if isinstance(op, scf.IfOp):
            out = set()
            for region in op.regions:
                out |= _run(region.blocks[0], states, pending_at, fence_after_waits) if region.blocks else states
            states = out
        elif isinstance(op, (scf.ForOp, sched.ForOp)):
            kind = "sched_for" if isinstance(op, sched.ForOp) else \
                "for_const" if op.ub.name_hint == "c3" else "for_dyn"
            out, cur = set(), states
            for n in range(max(LOOPS[kind][1]) + 1):
                if n in LOOPS[kind][1]:
                    out |= cur
                cur = _run(op.body.blocks[0], cur, pending_at, fence_after_waits)
            states = out
        else:
            states = _apply(op, states, pending_at, fence_after_waits)
    return states


def signals_reached_pending(kernel, fence_after_waits=True) -> set[int]:
    pending_at: set[int] = set()
    _run(kernel.body.block, {frozenset()}, pending_at, fence_after_waits)
    return pending_at


def _has_triple_before(op) -> bool:
    a = op.prev_op
    b = a.prev_op if a is not None else None
    c = b.prev_op if b is not None else None
    return (isinstance(a, sched.FenceProxyAsyncOp) and a.fenced_space == "global"
            and isinstance(b, sched.BulkWaitGroupOp) and b.pending.value.data == 0 and b.read is None
            and isinstance(c, sched.BulkCommitGroupOp))


def _kernel(module) -> sched.KernelOp:
    return next(o for o in module.walk() if isinstance(o, sched.KernelOp))


@settings(max_examples=300, deadline=None)
@given(programs)
def test_pass_matches_path_oracle(program):
    module = parse_module(kernel_text(program))
    kernel = _kernel(module)
    need = signals_reached_pending(kernel)
    had = {o.attributes["sig"].value.data for o in kernel.walk()
           if isinstance(o, sched.SemaphoreSignalOp) and _has_triple_before(o)}
    bare_waits = sum(1 for o in kernel.walk() if isinstance(o, sched.SemaphoreWaitOp)
                     and not (isinstance(o.next_op, sched.FenceProxyAsyncOp) and o.next_op.fenced_space == "global"))
    ops_before = sum(1 for _ in kernel.walk())

    inserted = insert_bulk_syncs(module)
    module.verify()
    assert inserted == len(need) + bare_waits
    assert sum(1 for _ in kernel.walk()) == ops_before + 3 * len(need) + bare_waits  # nothing else added
    for o in kernel.walk():
        if isinstance(o, sched.SemaphoreSignalOp):
            assert _has_triple_before(o) == (o.attributes["sig"].value.data in need | had)
        if isinstance(o, sched.SemaphoreWaitOp):
            assert isinstance(o.next_op, sched.FenceProxyAsyncOp) and o.next_op.fenced_space == "global"
    # the result is safe as it stands, and the conversion's check agrees
    assert signals_reached_pending(kernel, fence_after_waits=False) == set()
    assert unsynced_signals(kernel) == []
    text = print_module(module)
    assert insert_bulk_syncs(module) == 0 and print_module(module) == text


@settings(max_examples=200, deadline=None)
@given(programs)
def test_lowering_check_matches_path_oracle(program):
    """`unsynced_signals` (what convert-sched-to-nvvm refuses) is the oracle's set on the IR as
    written, with no fence assumed after waits."""
    kernel = _kernel(parse_module(kernel_text(program)))
    found = {o.attributes["sig"].value.data for o in unsynced_signals(kernel)}
    assert found == signals_reached_pending(kernel, fence_after_waits=False)


# ------------------------------------------------------------------ the ops


def test_default_fence_is_unchanged():
    """Existing callers' `FenceProxyAsyncOp()` prints exactly as before, custom and generic."""
    k = parse_module(kernel_text(["fence_shared", "fence_global"]))
    fences = [o for o in k.walk() if isinstance(o, sched.FenceProxyAsyncOp)]
    assert [f.fenced_space for f in fences] == ["shared", "global"]
    assert not sched.FenceProxyAsyncOp().properties and sched.FenceProxyAsyncOp("global").fenced_space == "global"
    generic = print_module(k, generic=True)
    assert '"sched.fence.proxy_async"() : () -> ()' in generic
    assert '"sched.fence.proxy_async"() <{space = "global"}> : () -> ()' in generic
    assert re.search(r"^\s*sched\.fence\.proxy_async$", print_module(k), re.M)


# ------------------------------------------------------------------ sched-alias-smem

ALIAS = f"""sched.kernel @k(%tm : {TM}, %sems : memref<16xi32>) grid [4, 1, 1] block [128, 1, 1] smem 0 {{
  %c0 = arith.constant 0 : index
  %v = arith.constant 1.0 : f32
  %a = sched.alloc : {BOX}
  %b = sched.alloc : {BOX}
  sched.tma.reduce add %a[%c0, %c0], %tm[%c0, %c0] : {BOX}, {TM}
  sched.bulk.commit_group
  {{WAIT}}
  sched.store %v, %b[%c0, %c0] : f32, {BOX}
  {{AFTER}}
  sched.return
}}"""


@pytest.mark.parametrize("wait_first", [True, False])
def test_reduce_source_lives_until_the_bulk_wait(wait_first):
    """The reduction reads %a asynchronously until the next bulk wait_group: %b may take its
    bytes only when that wait comes before %b's first use. %a is a swizzled tile (1024-aligned)."""
    wait = "sched.bulk.wait_group 0 read"
    text = ALIAS.replace("{WAIT}", wait if wait_first else "").replace("{AFTER}", "" if wait_first else wait)
    kernel = _kernel(parse_module(text))
    alias_kernel(kernel, sched.HOPPER_SMEM_PER_BLOCK)
    a, b = [o for o in kernel.walk() if isinstance(o, sched.AllocOp)]
    assert a.offset.value.data % 1024 == 0
    same = a.offset.value.data == b.offset.value.data
    assert same == wait_first


# ------------------------------------------------------------------ sched-verify-buffers

HOST = f"""builtin.module {{
  sched.kernel @split(%tm : {TM}, %sems : memref<16xi32>, %out : memref<256x256xf32>) grid [16, 1, 4] block [128, 1, 1] smem 0 {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = sched.block_idx z
    %t = sched.alloc : {BOX}
    sched.semaphore.wait %sems[%c0] until %z : memref<16xi32>
    {{WRITE}}
    sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
    %v = arith.constant 1.0 : f32
    sched.store %v, %out[%c0, %c0] : f32, memref<256x256xf32>
    sched.return
  }}
  func.func @f(%out : memref<256x256xf32>) attributes {{fuser.num_outputs = 1 : i64}} {{
    %ws = sched.workspace {{WS}} : memref<256x256xf32>
    %sems = sched.workspace {{SEMS}} : memref<16xi32>
    %tm = sched.tensor_map %ws : {TM}
    sched.launch @split(%tm, %sems, %out) : {TM}, memref<16xi32>, memref<256x256xf32>
    func.return
  }}
}}"""

STORE_OR_REDUCE = f"""scf.if %cond {{
      sched.tma.store %t[%c0, %c0], %tm[%c0, %c0] : {BOX}, {TM}
    }} else {{
      sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : {BOX}, {TM}
    }}""".replace("%cond", "%true")
REDUCE_ONLY = f"sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : {BOX}, {TM}"


def _host(write: str, ws: str, sems: str):
    text = HOST.replace("{WRITE}", write).replace("{WS}", ws).replace("{SEMS}", sems)
    return parse_module(text.replace("%z = sched.block_idx z", "%z = sched.block_idx z\n    %true = arith.constant true"))


@pytest.mark.parametrize("sems", ["kept_zero", "zero_init"])
def test_verify_buffers_accepts_serial_split_k(sems):
    """Split 0 stores, later splits reduce (a write of the workspace, ordered by the semaphore),
    on counters that start at zero."""
    check_buffers(_host(STORE_OR_REDUCE, "", sems))
    check_buffers(_host(REDUCE_ONLY, "zero_init", sems))  # atomic-style: adds onto zeros


def test_verify_buffers_refuses_waiting_on_garbage():
    with pytest.raises(FuserDiagnostic, match=r"kernel @split waits on %sems \(a workspace\) through argument #1 "
                                              r"\('sched.semaphore.wait' at .*\), but it holds no data"):
        check_buffers(_host(STORE_OR_REDUCE, "", ""))


def test_verify_buffers_refuses_reducing_into_garbage():
    with pytest.raises(FuserDiagnostic, match=r"kernel @split reduces into %ws \(a workspace\) through argument #0 "
                                              r"\('sched.tma.reduce' at .*\), but it holds no data"):
        check_buffers(_host(REDUCE_ONLY, "", "kept_zero"))


LAST_SPLIT_READS = f"""builtin.module {{
  sched.kernel @serial(%tm : {TM}, %ws : memref<256x256xf32>, %sems : memref<16xi32>, %out : memref<256x256xf32>) grid [16, 1, 4] block [128, 1, 1] smem 0 {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %z = sched.block_idx z
    %last = arith.cmpi eq, %z, %c3 : index
    %t = sched.alloc : {BOX}
    scf.if %last {{
      {{TURN}}
      %v = sched.load %ws[%c0, %c0] : memref<256x256xf32> -> f32
      sched.store %v, %out[%c0, %c0] : f32, memref<256x256xf32>
    }} else {{
      sched.semaphore.wait %sems[%c0] until %z : memref<16xi32>
      sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : {BOX}, {TM}
      sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
    }}
    sched.return
  }}
  func.func @f(%out : memref<256x256xf32>) attributes {{fuser.num_outputs = 1 : i64}} {{
    %ws = sched.workspace zero_init : memref<256x256xf32>
    %sems = sched.workspace kept_zero : memref<16xi32>
    %tm = sched.tensor_map %ws : {TM}
    sched.launch @serial(%tm, %ws, %sems, %out) : {TM}, memref<256x256xf32>, memref<16xi32>, memref<256x256xf32>
    func.return
  }}
}}"""


def test_verify_buffers_semaphore_orders_own_writes():
    """The last split reads the workspace (as a plain buffer) that earlier splits reduced into
    (through its tensor map) before signalling: its wait orders the read after those writes,
    even though the reading branch comes first in program order. Without the wait it reads
    before the writes."""
    check_buffers(parse_module(LAST_SPLIT_READS.replace("{TURN}", "sched.semaphore.wait %sems[%c0] until %c3 : memref<16xi32>")))
    with pytest.raises(FuserDiagnostic, match=r"kernel @serial reads %ws \(a zero-initialized workspace\) through "
                                              r"argument #1 and also writes it"):
        check_buffers(parse_module(LAST_SPLIT_READS.replace("{TURN}", "")))


# ------------------------------------------------------------------ PTX


@pytest.mark.parametrize("kind", ["add", "min", "max"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_reduce_assembles(kind, rank):
    from fuser.lowering.target.ptx import assemble_ptx, find_ptxas, module_to_ptx
    shape = [64, 128, 256][-rank:]
    box = [8, 16, 32][-rank:]
    tm = f"!sched.tensor_map<memref<{'x'.join(map(str, shape))}xf32>, box [{', '.join(map(str, box))}], swizzle 128>"
    smem = f"memref<{'x'.join(map(str, box))}xf32, 3>"
    idx = ", ".join(["%c0"] * rank)
    coords = ", ".join(["%c0"] * (rank - 1) + ["%z"])
    module = parse_module(f"""sched.kernel @k(%tm : {tm}, %sems : memref<16xi32>) grid [4, 1, 1] block [128, 1, 1] smem 0 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = sched.block_idx x
  %t = sched.alloc : {smem}
  sched.semaphore.wait %sems[%c0] until %z : memref<16xi32>
  sched.tma.reduce {kind} %t[{idx}], %tm[{coords}] : {smem}, {tm}
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.return
}}""")
    run_passes(build_pipeline("sched-insert-bulk-syncs,sched-alias-smem,convert-sched-to-nvvm"), module)
    ptx = module_to_ptx(module)
    assert f"cp.reduce.async.bulk.tensor.{rank}d.global.shared::cta.{kind}.tile.bulk_group" in ptx
    assert re.search(r"ld\.acquire\.gpu\.global\.b32.*\n.*\n@p bra", ptx)
    assert ptx.count("fence.proxy.async.global;") == 2 and "st.release.gpu.global.b32" in ptx
    if find_ptxas() is not None:
        assemble_ptx(ptx, "sm_90a")
