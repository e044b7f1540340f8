// RUN: fuser-opt %s -t ptx | filecheck %s
// RUN: fuser-opt %s -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s -t ptx --arch sm_80 | filecheck %s --check-prefix=SM80

// An nvvm-level module (docs/ir-levels.md) down to PTX. `gpu.module` is in the generic form:
// xDSL 0.74's gpu.module has no custom syntax (upstream MLIR parses both).

// CHECK:      .version 8.0
// CHECK:      .target sm_90a
// CHECK:      .address_size 64

// CHECK-LABEL: .visible .entry copy4(
// CHECK:       .maxntid 256, 1, 1
// CHECK:       mov.u32 {{.*}}%tid.x;
// CHECK:       ld.global.v4.b32
// CHECK:       st.global.v4.b32

// CHECK-LABEL: .visible .entry block_sum(
// LLVM demotes a shared global used by one kernel into that kernel:
// CHECK:       .shared .align 16 .b8 partials[32];
// CHECK:       shfl.sync.bfly.b32
// CHECK:       st.shared.b32
// CHECK:       bar.sync 0;
// CHECK:       ld.shared.b32
// CHECK:       shfl.sync.down.b32
// CHECK:       ret;

// LLVM:       target triple = "nvptx64-nvidia-cuda"
// LLVM:       @partials = internal addrspace(3) global [8 x float] undef, align 16
// LLVM:       define ptx_kernel void @copy4(ptr addrspace(1) %arg0, ptr addrspace(1) %arg1) #[[ATTRS:[0-9]+]]
// LLVM:       phi i64
// LLVM:       load <4 x float>, ptr addrspace(1) %{{.*}}, align 16
// LLVM:       define ptx_kernel void @block_sum(
// LLVM:       call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1,
// LLVM:       call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// LLVM:       attributes #[[ATTRS]] = { "nvvm.maxntid"="256,1,1" }

// SM80:       .target sm_80

builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    llvm.mlir.global internal @partials() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8 x f32>

    // y = 2 * x over 1024 vector<4xf32>, grid-stride loop
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
    }

    // dst[0] = sum(src[0:256]): warp shuffles, partials in shared memory, barrier, last warp
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
      %wsum, %off = scf.for %i = %c0 to %c5 step %c1 iter_args(%acc = %x, %o = %c16) -> (f32, i32) {
        %s = nvvm.shfl.sync bfly %mask, %acc, %o, %clamp : f32 -> f32
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
    }
  }) : () -> ()
}
