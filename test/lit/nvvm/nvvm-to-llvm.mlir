// RUN: fuser-opt %s -p convert-nvvm-to-llvm | filecheck %s
// RUN: fuser-opt %s -t ptx | filecheck %s --check-prefix=PTX

// convert-nvvm-to-llvm: the nvvm ops that LLVM has no intrinsic for become their inline PTX;
// the ones with intrinsics (barriers, mbarrier init/arrive, wgmma groups) stay for the LLVM IR
// translation, which runs this pass itself on what still needs it (the PTX run).

// CHECK-LABEL: llvm.func @hopper
// CHECK:      nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK-NEXT: %[[A:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr<3> to i32
// CHECK-NEXT: llvm.inline_asm has_side_effects "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}" %[[A]], %{{.*}} : (i32, i32) -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "setmaxnreg.inc.sync.aligned.u32 232;", "~{memory}"  : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;", "~{memory}"  : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.global;", "~{memory}"  : () -> ()
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// CHECK:      %[[X0:.*]] = llvm.extractvalue %[[C:.*]][0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT: %[[X1:.*]] = llvm.extractvalue %[[C]][1]
// CHECK-NEXT: %[[X2:.*]] = llvm.extractvalue %[[C]][2]
// CHECK-NEXT: %[[X3:.*]] = llvm.extractvalue %[[C]][3]
// CHECK-NEXT: %[[D:.*]] = llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, $4, $5, p, 1, 1, 0, 0;\0A}", "=f,=f,=f,=f,l,l,0,1,2,3" %{{.*}}, %{{.*}}, %[[X0]], %[[X1]], %[[X2]], %[[X3]] : (i64, i64, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT: llvm.extractvalue %{{.*}}[0]
// CHECK:      llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, $4, $5, p, -1, 1, 1, 1;\0A}"
// FP8 operands have no transpose immediates (they are K-major)
// CHECK:      llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {$0, $1, $2, $3}, $4, $5, p, 1, 1;\0A}"
// CHECK:      wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e4m3 {$0, $1, $2, $3}, $4, $5, p, 1, 1;\0A}"
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: %[[S:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr<3> to i32
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [$0, {$1, $2}], [$3];", "l,r,r,r,~{memory}" %{{.*}}, %{{.*}}, %{{.*}}, %[[S]]
// CHECK:      llvm.inline_asm has_side_effects "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [$0, {$1, $2}], [$3];", "l,r,r,r,~{memory}"
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.async.bulk.commit_group;", "~{memory}"
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.async.bulk.wait_group.read 0;", "~{memory}"
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.async.bulk.wait_group 0;", "~{memory}"
// CHECK-NEXT: nvvm.barrier
// CHECK-NEXT: %[[L:.*]] = llvm.ptrtoint %[[SMEM:.*]] : !llvm.ptr<3> to i32
// CHECK-NEXT: %[[BAR:.*]] = llvm.ptrtoint %[[SMEM]] : !llvm.ptr<3> to i32
// CHECK-NEXT: llvm.inline_asm has_side_effects "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r,~{memory}" %[[L]], %{{.*}}, %{{.*}}, %{{.*}}, %[[BAR]]
// CHECK:      llvm.inline_asm has_side_effects "{\0A.reg .b16 mask;\0Amov.b16 mask, 3;\0Acp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [$0], [$1, {$2, $3}], [$4], mask;\0A}", "r,l,r,r,r,~{memory}"
// CHECK:      llvm.inline_asm has_side_effects "{\0A.reg .b16 mask;\0Amov.b16 mask, $5;{{.*}}", "r,l,r,r,r,h,~{memory}"
// CHECK-NOT:  llvm.addrspacecast
// CHECK-NOT:  nvvm.wgmma.mma_async
// CHECK-NOT:  nvvm.fence.proxy

// PTX-LABEL: .entry hopper(
// PTX:       mbarrier.init.shared.b64
// PTX:       mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], %r{{[0-9]+}};
// PTX:       setmaxnreg.inc.sync.aligned.u32 232;
// PTX:       fence.proxy.async.shared::cta;
// PTX:       fence.proxy.async.global;
// PTX:       wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%{{.*}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1, 0, 0;
// PTX:       wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{.*}}, p, -1, 1, 1, 1;
// PTX:       wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {{.*}}, p, 1, 1;
// PTX:       wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e4m3 {{.*}}, p, 1, 1;
// PTX:       cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// PTX:       cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group
// PTX:       cp.async.bulk.commit_group;
// PTX:       cp.async.bulk.wait_group.read 0;
// PTX:       cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
// PTX:       mov.b16 mask, 3;
// PTX-NEXT:  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.mlir.global external @smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<4096 x i8>
    llvm.func @hopper(%tm: !llvm.ptr, %da: i64, %db: i64, %out: !llvm.ptr<1>, %mask: i16) attributes {nvvm.kernel} {
      %p = llvm.mlir.addressof @smem : !llvm.ptr<3>
      %one = llvm.mlir.constant(1 : i32) : i32
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %zero = llvm.mlir.constant(0.0 : f32) : f32
      nvvm.mbarrier.init %p, %one : !llvm.ptr<3>, i32
      nvvm.mbarrier.arrive.expect_tx %p, %one : !llvm.ptr<3>, i32
      nvvm.setmaxregister increase 232
      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
      nvvm.wgmma.fence.aligned
      %u = llvm.mlir.undef : !llvm.struct<(f32, f32, f32, f32)>
      %c1 = llvm.insertvalue %zero, %u[0] : !llvm.struct<(f32, f32, f32, f32)>
      %c2 = llvm.insertvalue %zero, %c1[1] : !llvm.struct<(f32, f32, f32, f32)>
      %c3 = llvm.insertvalue %zero, %c2[2] : !llvm.struct<(f32, f32, f32, f32)>
      %c = llvm.insertvalue %zero, %c3[3] : !llvm.struct<(f32, f32, f32, f32)>
      %d = nvvm.wgmma.mma_async %da, %db, %c, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      %e0 = nvvm.wgmma.mma_async %da, %db, %d, <m = 64, n = 8, k = 16>, D[<f32>, <zero>], A[<f16>, <neg>, <col>], B[<f16>, <one>, <row>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      %e1 = nvvm.wgmma.mma_async %da, %db, %e0, <m = 64, n = 8, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      %e = nvvm.wgmma.mma_async %da, %db, %e1, <m = 64, n = 8, k = 32>, D[<f32>, <one>], A[<e5m2>, <one>, <row>], B[<e4m3>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      nvvm.wgmma.commit.group.sync.aligned
      nvvm.wgmma.wait.group.sync.aligned 0
      nvvm.cp.async.bulk.tensor.global.shared.cta %tm, %p, box[%c0, %c0] : !llvm.ptr, !llvm.ptr<3>
      nvvm.cp.async.bulk.tensor.reduce %tm, %p, box[%c0, %c0] {redKind = #nvvm.tma_redux_kind<add>} : !llvm.ptr, !llvm.ptr<3>
      nvvm.cp.async.bulk.commit.group
      nvvm.cp.async.bulk.wait_group 0 {read}
      nvvm.cp.async.bulk.wait_group 0
      nvvm.barrier
      %dst = llvm.addrspacecast %p : !llvm.ptr<3> to !llvm.ptr<7>
      nvvm.cp.async.bulk.tensor.shared.cluster.global %dst, %tm, %p, box[%c0, %c0] : !llvm.ptr<7>, !llvm.ptr
      %m3 = llvm.mlir.constant(3 : i16) : i16
      nvvm.cp.async.bulk.tensor.shared.cluster.global %dst, %tm, %p, box[%c0, %c0] multicast_mask = %m3 : !llvm.ptr<7>, !llvm.ptr
      nvvm.cp.async.bulk.tensor.shared.cluster.global %dst, %tm, %p, box[%c0, %c0] multicast_mask = %mask : !llvm.ptr<7>, !llvm.ptr
      %x = llvm.extractvalue %e[0] : !llvm.struct<(f32, f32, f32, f32)>
      llvm.store %x, %out : f32, !llvm.ptr<1>
      llvm.return
    }
  }) : () -> ()
}
