"""nvvm-level kernels -> LLVM IR -> PTX -> ptxas (sm_90a).

The kernels are hand-written nvvm-level MLIR (docs/ir-levels.md). `gpu.module` is written in the
generic form because xDSL 0.74's gpu.module has no custom syntax (upstream MLIR parses both).
ptxas acceptance is the bar: there is no GPU here. Tests that need ptxas skip when it is missing.
The accuracy of the math expansions is test_libm_accuracy.py's.
"""

from __future__ import annotations

import re

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, llvm, math as mathd, scf, vector
from xdsl.parser import Parser

from fuser.dialects.nvvm import NVVM
from fuser.lowering.target.llvmir import TranslationError, gpu_modules_to_llvm_ir, module_to_llvm_ir
from fuser.lowering.target.ptx import (
    PtxasError,
    assemble_ptx,
    find_ptxas,
    gpu_modules_to_ptx,
    llvm_ir_to_ptx,
    module_to_ptx,
)

needs_ptxas = pytest.mark.skipif(
    find_ptxas() is None, reason="ptxas not found (pip install nvidia-cuda-nvcc)"
)


def parse(text: str, allow_unregistered: bool = False) -> builtin.ModuleOp:
    ctx = Context(allow_unregistered=allow_unregistered)
    for d in (builtin.Builtin, func.Func, arith.Arith, mathd.Math, scf.Scf, llvm.LLVM, gpu.GPU,
              vector.Vector, NVVM):
        ctx.load_dialect(d)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def kernels(body: str, name: str = "k") -> str:
    """A container module with one gpu.module holding `body`."""
    return (
        'builtin.module attributes {gpu.container_module} {\n'
        f'  "gpu.module"() <{{sym_name = "{name}"}}> ({{\n{body}\n  }}) : () -> ()\n'
        "}\n"
    )


def compile_and_assemble(text: str, arch: str = "sm_90a", **kw) -> tuple[str, str]:
    module = parse(text, **kw)
    ir = module_to_llvm_ir(module)
    ptx = module_to_ptx(module, arch)
    if find_ptxas() is not None:
        assert assemble_ptx(ptx, arch)[:4] == b"\x7fELF"
    return ir, ptx


# ----------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------

COPY4 = kernels("""
    llvm.func @copy4(%src : !llvm.ptr<1>, %dst : !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %ntid = nvvm.read.ptx.sreg.ntid.x : i32
      %nctaid = nvvm.read.ptx.sreg.nctaid.x : i32
      %t = arith.index_cast %tid : i32 to index
      %b = arith.index_cast %bid : i32 to index
      %nt = arith.index_cast %ntid : i32 to index
      %nb = arith.index_cast %nctaid : i32 to index
      %base = arith.muli %b, %nt : index
      %start = arith.addi %base, %t : index
      %stride = arith.muli %nt, %nb : index
      %n = arith.constant 1024 : index
      scf.for %i = %start to %n step %stride {
        %ii = arith.index_cast %i : index to i64
        %p = llvm.getelementptr inbounds %src[%ii] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, vector<4xf32>
        %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
        %two = arith.constant dense<2.0> : vector<4xf32>
        %w = arith.mulf %v, %two : vector<4xf32>
        %q = llvm.getelementptr inbounds %dst[%ii] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, vector<4xf32>
        llvm.store %w, %q {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
        scf.yield
      }
      llvm.return
    }""")


def test_vectorized_grid_stride_copy():
    ir, ptx = compile_and_assemble(COPY4)
    assert "define ptx_kernel void @copy4(ptr addrspace(1) %arg0, ptr addrspace(1) %arg1) #0" in ir
    assert '"nvvm.maxntid"="256,1,1"' in ir
    assert re.search(r"phi i64 \[ %v\d+, %entry \]", ir)  # the induction variable
    assert ".target sm_90a" in ptx
    assert ".visible .entry copy4(" in ptx
    assert ".maxntid 256, 1, 1" in ptx
    assert re.search(r"ld\.global\.v4\.(f32|b32)", ptx)
    assert re.search(r"st\.global\.v4\.(f32|b32)", ptx)
    version = float(re.search(r"^\.version (\d+\.\d+)", ptx, re.M).group(1))
    assert version >= 7.8


WARP_SUM = kernels("""
    llvm.func @warp_sum(%src : !llvm.ptr<1>, %dst : !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {
      %lane = nvvm.read.ptx.sreg.laneid : i32
      %l64 = arith.extui %lane : i32 to i64
      %p = llvm.getelementptr %src[%l64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %x0 = llvm.load %p {alignment = 4 : i64} : !llvm.ptr<1> -> f32
      %mask = arith.constant -1 : i32
      %clamp = arith.constant 31 : i32
      %o16 = arith.constant 16 : i32
      %o8 = arith.constant 8 : i32
      %o4 = arith.constant 4 : i32
      %o2 = arith.constant 2 : i32
      %o1 = arith.constant 1 : i32
      %s16 = nvvm.shfl.sync bfly %mask, %x0, %o16, %clamp : f32 -> f32
      %x1 = arith.addf %x0, %s16 : f32
      %s8 = nvvm.shfl.sync bfly %mask, %x1, %o8, %clamp : f32 -> f32
      %x2 = arith.addf %x1, %s8 : f32
      %s4 = nvvm.shfl.sync bfly %mask, %x2, %o4, %clamp : f32 -> f32
      %x3 = arith.addf %x2, %s4 : f32
      %s2 = nvvm.shfl.sync bfly %mask, %x3, %o2, %clamp : f32 -> f32
      %x4 = arith.addf %x3, %s2 : f32
      %s1 = nvvm.shfl.sync bfly %mask, %x4, %o1, %clamp : f32 -> f32
      %x5 = arith.addf %x4, %s1 : f32
      %zero = arith.constant 0 : i32
      %first = arith.cmpi eq, %lane, %zero : i32
      scf.if %first {
        llvm.store %x5, %dst {alignment = 4 : i64} : f32, !llvm.ptr<1>
      }
      llvm.return
    }""")


def test_warp_shuffle_sum():
    ir, ptx = compile_and_assemble(WARP_SUM)
    assert "call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float" in ir
    assert ptx.count("shfl.sync.bfly.b32") == 5
    assert "%laneid" in ptx


BLOCK_REDUCE = kernels("""
    llvm.mlir.global internal @partials() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8 x f32>
    llvm.func @block_sum(%src : !llvm.ptr<1>, %dst : !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %t64 = arith.extui %tid : i32 to i64
      %p = llvm.getelementptr %src[%t64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %x = llvm.load %p : !llvm.ptr<1> -> f32
      %mask = arith.constant -1 : i32
      %clamp = arith.constant 31 : i32
      %c0 = arith.constant 0 : index
      %c5 = arith.constant 5 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : i32
      %one = arith.constant 1 : i32
      // warp sum with a loop: offsets 16, 8, 4, 2, 1
      %wsum, %off = scf.for %i = %c0 to %c5 step %c1 iter_args(%acc = %x, %o = %c16) -> (f32, i32) {
        %s = nvvm.shfl.sync down %mask, %acc, %o, %clamp : f32 -> f32
        %a = arith.addf %acc, %s : f32
        %o2 = arith.shrui %o, %one : i32
        scf.yield %a, %o2 : f32, i32
      }
      %c32 = arith.constant 32 : i32
      %warp = arith.divui %tid, %c32 : i32
      %lane = arith.remui %tid, %c32 : i32
      %zero = arith.constant 0 : i32
      %lane0 = arith.cmpi eq, %lane, %zero : i32
      %smem = llvm.mlir.addressof @partials : !llvm.ptr<3>
      scf.if %lane0 {
        %slot = llvm.getelementptr %smem[0, %warp] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<8 x f32>
        llvm.store %wsum, %slot : f32, !llvm.ptr<3>
      }
      nvvm.barrier
      %warp0 = arith.cmpi eq, %warp, %zero : i32
      scf.if %warp0 {
        %c8 = arith.constant 8 : i32
        %in = arith.cmpi ult, %lane, %c8 : i32
        %v = scf.if %in -> (f32) {
          %slot = llvm.getelementptr %smem[0, %lane] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<8 x f32>
          %y = llvm.load %slot : !llvm.ptr<3> -> f32
          scf.yield %y : f32
        } else {
          %fz = arith.constant 0.0 : f32
          scf.yield %fz : f32
        }
        %c4 = arith.constant 4 : i32
        %c2 = arith.constant 2 : i32
        %s4 = nvvm.shfl.sync down %mask, %v, %c4, %clamp : f32 -> f32
        %v4 = arith.addf %v, %s4 : f32
        %s2 = nvvm.shfl.sync down %mask, %v4, %c2, %clamp : f32 -> f32
        %v2 = arith.addf %v4, %s2 : f32
        %s1 = nvvm.shfl.sync down %mask, %v2, %one, %clamp : f32 -> f32
        %v1 = arith.addf %v2, %s1 : f32
        scf.if %lane0 {
          llvm.store %v1, %dst : f32, !llvm.ptr<1>
        }
      }
      llvm.return
    }""")


def test_shared_memory_block_reduction():
    ir, ptx = compile_and_assemble(BLOCK_REDUCE)
    assert "@partials = internal addrspace(3) global [8 x float] undef, align 16" in ir
    assert "call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)" in ir
    assert ".shared .align 16 .b8 partials[32];" in ptx
    assert "bar.sync 	0;" in ptx
    assert "st.shared.b32" in ptx or "st.shared.f32" in ptx
    assert "shfl.sync.down.b32" in ptx


BF16_EXP = kernels("""
    llvm.func @bf16_exp(%src : !llvm.ptr<1>, %dst : !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %t64 = arith.extui %tid : i32 to i64
      %p = llvm.getelementptr %src[%t64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
      %x = llvm.load %p {alignment = 2 : i64} : !llvm.ptr<1> -> bf16
      %xf = arith.extf %x : bf16 to f32
      %e = math.exp %xf : f32
      %y = arith.truncf %e : f32 to bf16
      %q = llvm.getelementptr %dst[%t64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
      llvm.store %y, %q {alignment = 2 : i64} : bf16, !llvm.ptr<1>
      %pv = llvm.getelementptr %src[%t64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, vector<8xbf16>
      %xv = llvm.load %pv {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
      %ev = math.exp %xv : vector<8xbf16>
      %qv = llvm.getelementptr %dst[%t64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, vector<8xbf16>
      llvm.store %ev, %qv {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
      llvm.return
    }""")


def test_bf16_exp():
    ir, ptx = compile_and_assemble(BF16_EXP)
    assert "load bfloat, ptr addrspace(1)" in ir
    assert "fpext bfloat" in ir and "fptrunc float" in ir
    assert "load <8 x bfloat>" in ir and "fptrunc <8 x float>" in ir
    assert "define internal float @__fuser_expf(float %x)" in ir
    assert "ex2.approx.ftz.f32" in ptx
    assert "cvt.f32.bf16" in ptx or "shl.b32" in ptx  # bf16 -> f32 widening
    assert "cvt.rn.bf16" in ptx


IF_RESULTS = kernels("""
    llvm.func @relu_or_neg(%src : !llvm.ptr<1>, %dst : !llvm.ptr<1>) attributes {nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %t64 = arith.extui %tid : i32 to i64
      %p = llvm.getelementptr %src[%t64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %x = llvm.load %p : !llvm.ptr<1> -> f32
      %zero = arith.constant 0.0 : f32
      %pos = arith.cmpf ogt, %x, %zero : f32
      %y, %flag = scf.if %pos -> (f32, i32) {
        %one = arith.constant 1 : i32
        scf.yield %x, %one : f32, i32
      } else {
        %n = arith.negf %x : f32
        %m = math.tanh %n : f32
        %z = arith.constant 0 : i32
        scf.yield %m, %z : f32, i32
      }
      %fl = arith.sitofp %flag : i32 to f32
      %r = arith.addf %y, %fl : f32
      %q = llvm.getelementptr %dst[%t64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %q : f32, !llvm.ptr<1>
      llvm.return
    }""")


def test_scf_if_with_results():
    ir, ptx = compile_and_assemble(IF_RESULTS)
    assert re.search(r"phi float \[ %arg\d+|phi float \[ %v\d+, %if\.then\d+ \], \[ %v\d+, %if\.else\d+ \]", ir)
    assert re.search(r"phi i32 \[ 1, %if\.then\d+ \], \[ 0, %if\.else\d+ \]", ir)
    assert ".entry relu_or_neg(" in ptx


MATH_ALL = kernels("""
    llvm.func @math_all(%src : !llvm.ptr<1>, %dst : !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.reqntid = array<i32: 64, 1, 1>} {
      %x = llvm.load %src : !llvm.ptr<1> -> f32
      %h = llvm.load %src : !llvm.ptr<1> -> f16
      %v = llvm.load %src : !llvm.ptr<1> -> vector<4xf32>
      %d = llvm.load %src : !llvm.ptr<1> -> f64
      %a1 = math.exp %x : f32
      %a2 = math.exp2 %a1 : f32
      %a3 = math.log %a2 : f32
      %a4 = math.log2 %a3 : f32
      %a5 = math.tanh %a4 : f32
      %a6 = math.erf %a5 : f32
      %a7 = math.rsqrt %a6 : f32
      %a8 = math.sqrt %a7 : f32
      %a9 = math.absf %a8 : f32
      %a10 = math.fma %a9, %a8, %a7 : f32
      %a11 = arith.maximumf %a10, %x : f32
      %a12 = arith.minimumf %a11, %x : f32
      %a13 = math.log1p %a12 : f32
      %a14 = math.floor %a13 : f32
      %a15 = arith.divf %a14, %a13 : f32
      llvm.store %a15, %dst : f32, !llvm.ptr<1>
      %dh = llvm.getelementptr %dst[16] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
      %dv = llvm.getelementptr %dst[32] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
      %dd = llvm.getelementptr %dst[48] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
      %h1 = math.tanh %h : f16
      %h2 = math.erf %h1 : f16
      %h3 = arith.addf %h2, %h : f16
      llvm.store %h3, %dh : f16, !llvm.ptr<1>
      %v1 = math.erf %v : vector<4xf32>
      %v2 = math.absf %v1 : vector<4xf32>
      %v3 = arith.maximumf %v2, %v : vector<4xf32>
      llvm.store %v3, %dv : vector<4xf32>, !llvm.ptr<1>
      %d1 = math.sqrt %d : f64
      %d2 = math.fma %d1, %d1, %d : f64
      llvm.store %d2, %dd : f64, !llvm.ptr<1>
      llvm.return
    }""")


def test_math_ops_reach_ptxas():
    ir, ptx = compile_and_assemble(MATH_ALL)
    for helper in ("exp", "exp2", "log", "log2", "tanh", "erf", "rsqrt", "log1p"):
        assert f"@__fuser_{helper}f(" in ir
    assert '"nvvm.reqntid"="64,1,1"' in ir
    assert ".reqntid 64, 1, 1" in ptx
    for inst in ("ex2.approx.ftz.f32", "lg2.approx.f32", "rsqrt.approx.f32", "sqrt.rn.f32",
                 "max.NaN.f32", "min.NaN.f32", "sqrt.rn.f64", "fma.rn.f64"):
        assert inst in ptx, inst


NVVM_ALL = kernels("""
    llvm.func @nvvm_all(%dst : !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>, nvvm.cluster_dim = array<i32: 2, 1, 1>} {
      %r0 = nvvm.read.ptx.sreg.tid.x : i32
      %r1 = nvvm.read.ptx.sreg.tid.y : i32
      %r2 = nvvm.read.ptx.sreg.tid.z : i32
      %r3 = nvvm.read.ptx.sreg.ntid.x : i32
      %r4 = nvvm.read.ptx.sreg.ntid.y : i32
      %r5 = nvvm.read.ptx.sreg.ntid.z : i32
      %r6 = nvvm.read.ptx.sreg.ctaid.x : i32
      %r7 = nvvm.read.ptx.sreg.ctaid.y : i32
      %r8 = nvvm.read.ptx.sreg.ctaid.z : i32
      %r9 = nvvm.read.ptx.sreg.nctaid.x : i32
      %r10 = nvvm.read.ptx.sreg.nctaid.y : i32
      %r11 = nvvm.read.ptx.sreg.nctaid.z : i32
      %r12 = nvvm.read.ptx.sreg.laneid : i32
      %r13 = nvvm.read.ptx.sreg.warpsize : i32
      %s0 = arith.addi %r0, %r1 : i32
      %s1 = arith.addi %s0, %r2 : i32
      %s2 = arith.addi %s1, %r3 : i32
      %s3 = arith.addi %s2, %r4 : i32
      %s4 = arith.addi %s3, %r5 : i32
      %s5 = arith.addi %s4, %r6 : i32
      %s6 = arith.addi %s5, %r7 : i32
      %s7 = arith.addi %s6, %r8 : i32
      %s8 = arith.addi %s7, %r9 : i32
      %s9 = arith.addi %s8, %r10 : i32
      %s10 = arith.addi %s9, %r11 : i32
      %s11 = arith.addi %s10, %r12 : i32
      %s12 = arith.addi %s11, %r13 : i32
      %id = arith.constant 1 : i32
      %n = arith.constant 64 : i32
      nvvm.barrier id = %id
      nvvm.barrier id = %id number_of_threads = %n
      %m = arith.constant -1 : i32
      %c = arith.constant 31 : i32
      %f = arith.sitofp %s12 : i32 to f32
      %u = nvvm.shfl.sync up %m, %s12, %id, %c : i32 -> i32
      %w = nvvm.shfl.sync idx %m, %f, %id, %c : f32 -> f32
      %pv = nvvm.shfl.sync down %m, %u, %id, %c {return_value_and_is_valid} : i32 -> !llvm.struct<(i32, i1)>
      %pv0 = llvm.extractvalue %pv[0] : !llvm.struct<(i32, i1)>
      %pv1 = llvm.extractvalue %pv[1] : !llvm.struct<(i32, i1)>
      %sel = arith.select %pv1, %pv0, %u : i32
      %clk = llvm.inline_asm has_side_effects "mov.u32 $0, %clock;", "=r" : () -> i32
      %tot = arith.addi %sel, %clk : i32
      llvm.store %tot, %dst : i32, !llvm.ptr<1>
      %d1 = llvm.getelementptr %dst[1] : (!llvm.ptr<1>) -> !llvm.ptr<1>, f32
      llvm.store %w, %d1 : f32, !llvm.ptr<1>
      llvm.return
    }""")


def test_nvvm_ops():
    ir, ptx = compile_and_assemble(NVVM_ALL)
    for reg in ("tid", "ntid", "ctaid", "nctaid"):
        for d in "xyz":
            assert f"@llvm.nvvm.read.ptx.sreg.{reg}.{d}()" in ir
            assert f"%{reg}.{d}" in ptx
    assert "%laneid" in ptx
    assert '"nvvm.cluster_dim"="2,1,1"' in ir and ".reqnctapercluster 2, 1, 1" in ptx
    assert "@llvm.nvvm.read.ptx.sreg.warpsize()" in ir  # LLVM folds it to 32
    assert "barrier.cta.sync.aligned.count(i32 1, i32 64)" in ir
    assert re.search(r"bar\.sync\s+1;", ptx) or re.search(r"barrier\.sync\.aligned\s+1;", ptx)
    assert re.search(r"bar\.sync\s+1, 64;", ptx) or re.search(r"barrier\.sync\.aligned\s+1, 64;", ptx)
    assert "shfl.sync.up.b32" in ptx and "shfl.sync.idx.b32" in ptx and "shfl.sync.down.b32" in ptx
    assert "@llvm.nvvm.shfl.sync.down.i32p(" in ir
    assert "mov.u32 %r" in ptx and "%clock" in ptx


VECTOR_OPS = kernels("""
    llvm.func @vector_ops(%src : !llvm.ptr<1>, %dst : !llvm.ptr<1>) attributes {nvvm.kernel} {
      %x = llvm.load %src : !llvm.ptr<1> -> f32
      %b = vector.broadcast %x : f32 to vector<4xf32>
      %e = vector.extract %b[2] : f32 from vector<4xf32>
      %y = arith.addf %e, %x : f32
      %v = vector.insert %y, %b [1] : f32 into vector<4xf32>
      %i = vector.bitcast %v : vector<4xf32> to vector<4xi32>
      %t = arith.addi %i, %i : vector<4xi32>
      %p = llvm.getelementptr %dst[1] : (!llvm.ptr<1>) -> !llvm.ptr<1>, vector<4xi32>
      llvm.store %t, %p : vector<4xi32>, !llvm.ptr<1>
      llvm.store %v, %dst : vector<4xf32>, !llvm.ptr<1>
      llvm.return
    }""")


def test_vector_ops():
    ir, _ = compile_and_assemble(VECTOR_OPS)
    assert "shufflevector <1 x float>" in ir
    assert "extractelement <4 x float> %" in ir and ", i32 2" in ir
    assert "insertelement <4 x float> %" in ir
    assert "bitcast <4 x float> %" in ir and "add <4 x i32>" in ir


# Ops outside xDSL 0.74's llvm dialect (llvm.extractelement, llvm.addrspacecast) in generic form.
GENERIC_OPS = kernels("""
    llvm.mlir.global external @dyn() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    llvm.func @generic_ops(%src : !llvm.ptr<1>, %dst : !llvm.ptr<1>) attributes {nvvm.kernel} {
      %v = llvm.load %src {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
      %c2 = llvm.mlir.constant(2 : i32) : i32
      %e = "llvm.extractelement"(%v, %c2) : (vector<4xf32>, i32) -> f32
      %u = llvm.mlir.undef : vector<2xf32>
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %w = llvm.insertelement %e, %u[%c0 : i32] : vector<2xf32>
      %s = llvm.mlir.addressof @dyn : !llvm.ptr<3>
      %g = "llvm.addrspacecast"(%s) : (!llvm.ptr<3>) -> !llvm.ptr
      %b = llvm.bitcast %w : vector<2xf32> to i64
      llvm.store %b, %g : i64, !llvm.ptr
      %l = llvm.load %s : !llvm.ptr<3> -> vector<2xf32>
      llvm.store %l, %dst : vector<2xf32>, !llvm.ptr<1>
      llvm.return
    }""")


def test_generic_form_llvm_ops_and_dynamic_shared_memory():
    ir, ptx = compile_and_assemble(GENERIC_OPS, allow_unregistered=True)
    assert "@dyn = external addrspace(3) global [0 x i8], align 16" in ir
    assert "addrspacecast ptr addrspace(3) @dyn to ptr" in ir
    assert ".extern .shared .align 16 .b8 dyn[];" in ptx


def test_one_ptx_per_gpu_module():
    second = WARP_SUM.replace('sym_name = "k"', 'sym_name = "k2"')
    text = COPY4.rstrip().removesuffix("}") + second.split("{gpu.container_module} {", 1)[1]
    module = parse(text)
    assert list(gpu_modules_to_llvm_ir(module)) == ["k", "k2"]
    ptxs = gpu_modules_to_ptx(module)
    assert ".entry copy4(" in ptxs["k"] and ".entry warp_sum(" in ptxs["k2"]
    both = module_to_ptx(module)
    assert both.count(".target sm_90a") == 2


def test_unsupported_op_is_a_clear_error():
    text = kernels("""
    llvm.func @bad(%dst : !llvm.ptr<1>) attributes {nvvm.kernel} {
      %a = arith.constant 7 : i32
      %b = arith.constant 2 : i32
      %c = arith.floordivsi %a, %b : i32
      llvm.store %c, %dst : i32, !llvm.ptr<1>
      llvm.return
    }""")
    with pytest.raises(TranslationError, match=r"cannot translate 'arith.floordivsi' \(in @bad"):
        module_to_llvm_ir(parse(text))


def _f64_kernel(op: str) -> str:
    return kernels(f"""
    llvm.func @k64(%dst : !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
      %a = llvm.load %dst : !llvm.ptr<1> -> f64
      %b = {op} %a : f64
      llvm.store %b, %dst : f64, !llvm.ptr<1>
      llvm.return
    }}""")


def test_f64_transcendental_calls_its_f64_helper():
    """f64 math is computed in f64 (libm_f64.py): a double helper, no float anywhere."""
    ir = module_to_llvm_ir(parse(_f64_kernel("math.exp")))
    assert "call double @__fuser_exp(double" in ir and "define internal double @__fuser_exp(double %x)" in ir
    assert "float" not in ir


def test_every_math_helper_has_an_f64_form():
    """Every transcendental op with an f32 helper (libm.py) has an f64 one (math_f64.py): no f64
    math op is refused (issue 31; lgamma was the last)."""
    from fuser.lowering.target.llvmir.libm import MATH_HELPERS, MATH_HELPERS2
    from fuser.lowering.target.llvmir.math_f64 import MATH_F64, MATH_F64_2
    assert not set(MATH_HELPERS) - set(MATH_F64) and not set(MATH_HELPERS2) - set(MATH_F64_2)
    assert "math.lgamma" in MATH_F64


def test_f64_math_without_an_f64_helper_is_a_clear_error(monkeypatch):
    """Were an f64 helper missing (none is: the test above), the translation names the op and
    lists the f64 math it has, rather than rounding through f32."""
    from fuser.lowering.target.llvmir import ops_arith
    monkeypatch.delitem(ops_arith.MATH_F64, "math.lgamma")
    text = _f64_kernel("math.exp").replace("%b = math.exp %a : f64", '%b = "math.lgamma"(%a) : (f64) -> f64')
    with pytest.raises(TranslationError, match=r"'math.lgamma' \(in @k64\).*has no f64 lowering \(f64 math: .*math.log"):
        module_to_llvm_ir(parse(text, allow_unregistered=True))


def test_no_kernels_is_a_clear_error():
    with pytest.raises(TranslationError, match="no gpu.module"):
        module_to_llvm_ir(parse("builtin.module {}"))


@needs_ptxas
def test_ptxas_error_is_reported():
    with pytest.raises(PtxasError, match="ptxas failed"):
        assemble_ptx(".version 8.0\n.target sm_90a\n.address_size 64\nthis is not ptx\n", "sm_90a")


def test_unknown_intrinsic_is_rejected():
    ir = """target triple = "nvptx64-nvidia-cuda"
declare float @llvm.nvvm.no.such.thing(float)
define ptx_kernel void @k(ptr addrspace(1) %p) {
  %x = load float, ptr addrspace(1) %p
  %y = call float @llvm.nvvm.no.such.thing(float %x)
  store float %y, ptr addrspace(1) %p
  ret void
}
"""
    with pytest.raises(Exception, match="llvm.nvvm.no.such.thing"):
        llvm_ir_to_ptx(ir)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_archs(arch):
    _, ptx = compile_and_assemble(BLOCK_REDUCE, arch)
    assert f".target {arch}" in ptx


WGMMA_FORMS = kernels("""
    llvm.func @wgmma_forms(%da : i64, %db : i64, %out : !llvm.ptr<1>) attributes {nvvm.kernel} {
      %zero = llvm.mlir.constant(0.0 : f32) : f32
      %u = llvm.mlir.undef : !llvm.struct<(f32, f32, f32, f32)>
      %c1 = llvm.insertvalue %zero, %u[0] : !llvm.struct<(f32, f32, f32, f32)>
      %c2 = llvm.insertvalue %zero, %c1[1] : !llvm.struct<(f32, f32, f32, f32)>
      %c3 = llvm.insertvalue %zero, %c2[2] : !llvm.struct<(f32, f32, f32, f32)>
      %c = llvm.insertvalue %zero, %c3[3] : !llvm.struct<(f32, f32, f32, f32)>
      nvvm.wgmma.fence.aligned
      %a = nvvm.wgmma.mma_async %da, %db, %c, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      %b = nvvm.wgmma.mma_async %da, %db, %a, <m = 64, n = 8, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      %d = nvvm.wgmma.mma_async %da, %db, %b, <m = 64, n = 8, k = 32>, D[<f32>, <one>], A[<e5m2>, <one>, <row>], B[<e5m2>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      nvvm.wgmma.commit.group.sync.aligned
      nvvm.wgmma.wait.group.sync.aligned 0
      %x = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
      llvm.store %x, %out : f32, !llvm.ptr<1>
      llvm.return
    }""")


def test_wgmma_forms_reach_ptxas():
    """The wgmma forms the matmul kernels use, bf16 transposed and the FP8 pairs (k32, K-major, no
    transpose immediates: PTX has none for them), as PTX that ptxas assembles for sm_90a."""
    _, ptx = compile_and_assemble(WGMMA_FORMS)
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n8k16\.f32\.bf16\.bf16 .*, p, 1, 1, 1, 1;", ptx)
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n8k32\.f32\.e4m3\.e4m3 .*, p, 1, 1;", ptx)
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n8k32\.f32\.e5m2\.e5m2 .*, p, 1, 1;", ptx)
