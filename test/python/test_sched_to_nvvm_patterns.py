"""convert-sched-to-nvvm as xDSL rewrite patterns: the family patterns share a KernelContext and run
under one PatternRewriteWalker; the first error stops the kernel's lowering and comes out unchanged."""

from __future__ import annotations

import pytest
from xdsl.dialects import llvm, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker, RewritePattern

from fuser.dialects import nvvm, sched
from fuser.dialects.context import make_context
from fuser.lowering.conversion.sched_to_nvvm import ConvertSchedToNVVM, SchedToNVVMError
from fuser.lowering.conversion.sched_to_nvvm.cluster import cluster_patterns
from fuser.lowering.conversion.sched_to_nvvm.context import KernelContext
from fuser.lowering.conversion.sched_to_nvvm.control import control_patterns
from fuser.lowering.conversion.sched_to_nvvm.indices import index_patterns
from fuser.lowering.conversion.sched_to_nvvm.memory import memory_patterns
from fuser.lowering.conversion.sched_to_nvvm.tma import tma_patterns
from fuser.lowering.conversion.sched_to_nvvm.wgmma import wgmma_patterns
from fuser.dialects.ir import parse_module, verify_module


def _lower(text: str) -> ModuleOp:
    module = parse_module(text)
    ConvertSchedToNVVM().apply(make_context(), module)
    verify_module(module)
    return module


def test_every_family_is_a_list_of_rewrite_patterns():
    kernel = parse_module("sched.kernel @k() grid [1, 1, 1] block [32, 1, 1] smem 0 {\n sched.return\n}")
    k = KernelContext(next(o for o in kernel.ops if isinstance(o, sched.KernelOp)), Block(), 64)
    for family in (index_patterns, memory_patterns, control_patterns, tma_patterns, wgmma_patterns,
                   cluster_patterns):
        patterns = family(k)
        assert patterns and all(isinstance(p, RewritePattern) for p in patterns)


def test_one_family_alone_lowers_its_ops():
    """The index patterns on their own: the sregs are hoisted to the entry, everything else stays."""
    module = parse_module("""
    sched.kernel @k(%x : memref<64xf32>) grid [2, 1, 1] block [32, 1, 1] smem 0 {
      %t = sched.thread_idx x
      %b = sched.block_idx x
      %s = arith.addi %t, %b : index
      sched.return
    }""")
    kernel = next(o for o in module.ops if isinstance(o, sched.KernelOp))
    block = kernel.body.block
    body = Block()
    for op in list(block.ops):
        op.detach()
        body.add_op(op)
    k = KernelContext(kernel, body, 64)
    PatternRewriteWalker(GreedyRewritePatternApplier(index_patterns(k), dce_enabled=False),
                         apply_recursively=False).rewrite_region(Region(body))
    names = [op.name for op in body.ops]
    assert names == ["nvvm.read.ptx.sreg.tid.x", "arith.index_cast", "nvvm.read.ptx.sreg.ctaid.x",
                     "arith.index_cast", "arith.addi", "sched.return"]


def test_bound_loop_keeps_its_body_order_and_yield():
    """A loop that stays a loop: its sched.yield becomes scf.yield after the body is lowered."""
    module = _lower("""
    sched.kernel @k(%x : memref<256xf32>) grid [1, 1, 1] block [64, 1, 1] smem 0 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 200 : index
      %z = arith.constant 0.0 : f32
      %r = sched.for bind(thread.x) %i = %c0 to %n step %c1 iter_args(%a = %z) -> (f32) {
        %v = sched.load %x[%i] : memref<256xf32> -> f32
        %s = arith.addf %a, %v : f32
        sched.yield %s : f32
      }
      sched.store %r, %x[%c0] : f32, memref<256xf32>
      sched.return
    }""")
    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 1
    body = [op.name for op in loops[0].body.block.ops]
    assert body[-3:] == ["llvm.load", "arith.addf", "scf.yield"]
    assert not any(op.dialect_name() == "sched" for op in module.walk())


def test_first_error_wins_and_comes_out_plain():
    """Two unlowerable ops: the first in block order is reported, with no IR dump attached."""
    text = """
    sched.kernel @k(%x : memref<8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<8xf32>
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      sched.return
    }"""
    with pytest.raises(SchedToNVVMError, match=r"^cannot lower 'memref.load'.* in kernel @k$") as info:
        _lower(text)
    assert not getattr(info.value, "__notes__", None)


def test_misplaced_yield_is_reported():
    """A sched.yield outside a sched.for (the verifier would refuse it; built by hand here)."""
    module = parse_module("""
    sched.kernel @k() grid [1, 1, 1] block [32, 1, 1] smem 0 {
      sched.return
    }""")
    kernel = next(o for o in module.ops if isinstance(o, sched.KernelOp))
    kernel.body.block.insert_op_before(sched.YieldOp(), kernel.body.block.first_op)
    with pytest.raises(SchedToNVVMError, match=r"^misplaced 'sched.yield' in kernel @k$"):
        ConvertSchedToNVVM().apply(make_context(), module)


def test_memref_carried_by_a_loop_is_reported_on_its_yield():
    text = """
    sched.kernel @k(%x : memref<8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 100 : index
      %r = sched.for bind(thread.x) %i = %c0 to %n step %c1 iter_args(%m = %x) -> (memref<8xf32>) {
        sched.yield %m : memref<8xf32>
      }
      sched.return
    }"""
    with pytest.raises(SchedToNVVMError, match=r"^cannot lower memref use by 'scf.yield' at <input>:7:9 in kernel @k$"):
        _lower(text)


@pytest.mark.parametrize("fence_first, align", [(True, 16), (False, 1024)])
def test_dynamic_smem_alignment_sees_the_hopper_ops_still_there(fence_first, align):
    """The alignment of dynamic shared memory is decided when the first offset buffer is lowered,
    from the Hopper ops the kernel still holds then."""
    fence = "sched.wgmma.fence"
    alloc = "%b = sched.alloc offset 0 : i64 : memref<8xf32, 3>"
    first, second = (fence, alloc) if fence_first else (alloc, fence)
    module = _lower(f"""
    sched.kernel @k(%x : memref<8xf32>) grid [1, 1, 1] block [128, 1, 1] smem 1024 {{
      %c0 = arith.constant 0 : index
      {first}
      {second}
      %v = sched.load %x[%c0] : memref<8xf32> -> f32
      sched.store %v, %b[%c0] : f32, memref<8xf32, 3>
      sched.return
    }}""")
    (g,) = [op for op in module.walk() if isinstance(op, llvm.GlobalOp)]
    assert g.alignment.value.data == align
    assert any(isinstance(op, nvvm.WgmmaFenceAlignedOp) for op in module.walk())


def test_each_kernel_pattern_is_offered_only_the_ops_it_lowers():
    """The kernel walk offers an op only to the patterns whose `lowers` types it has (a pattern
    without them would see every op, as all thirty did with the greedy applier), and ops no
    pattern lowers go straight to the last check."""
    from xdsl.dialects import arith

    from fuser.dialects import sched
    from fuser.lowering.conversion.sched_to_nvvm.kernel import CheckRemainingOp, kernel_patterns

    applier = kernel_patterns(None).pattern
    assert applier.patterns and all(hasattr(p.match_and_rewrite, "op_types") for p in applier.patterns)
    assert isinstance(applier.last, CheckRemainingOp)
    assert applier._candidates(arith.AddfOp) == []
    loads = applier._candidates(sched.LoadOp)
    assert [type(p).__name__ for p in loads] == ["LowerAccess"]
