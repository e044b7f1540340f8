// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// Hopper ops to the nvvm level: the tensor map becomes a byval grid_constant parameter, wgmma
// groups, mbarrier init/arrive/expect_tx, setmaxregister, the bulk-copy groups, the proxy fence
// the TMA load and store and wgmma.mma_async the upstream nvvm ops (names and syntax upstream MLIR
// parses), the rest inline PTX; and on to PTX.

// CHECK: %[[U:.*]] = memref.cast %x : memref<1000x1000xbf16> to memref<*xbf16>
// CHECK: %[[TM:.*]] = nvgpu.tma.create.descriptor %[[U]] box[%{{.*}}, %{{.*}}] : memref<*xbf16> -> !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3 : i64>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
// CHECK: "gpu.launch_func"
// CHECK: llvm.mlir.global external @__dynamic_smem_hopper() {addr_space = 3 : i32, alignment = 1024 : i64}
// CHECK: llvm.func @hopper(%tm: !llvm.ptr<0> {llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, nvvm.grid_constant}, %out: !llvm.ptr<1>, %tm_z: !llvm.ptr<0> {llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, nvvm.grid_constant})
// CHECK-SAME: nvvm.minctasm = 1 : i64
// CHECK: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.setmaxregister increase 232
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: %[[DST:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[DST]], %tm, %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr<0>
// CHECK: nvvm.mbarrier.try_wait.parity %{{.*}}, %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32, i32
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3> -> i64
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !llvm.struct<(f32, {{.*}})> -> !llvm.struct<(f32, {{.*}})>
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>] : !llvm.struct<(f32, {{.*}})> -> !llvm.struct<(f32, {{.*}})>
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %tm_z, %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<0>, !llvm.ptr<3>
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NOT: llvm.inline_asm {{.*}}"setmaxnreg
// CHECK-NOT: llvm.inline_asm {{.*}}"{{.*}}wgmma.mma_async
// CHECK-NOT: llvm.inline_asm {{.*}}"cp.async.bulk.tensor
// CHECK-NOT: llvm.inline_asm
// CHECK-NOT: llvm.inline_asm {{.*}}"cp.async.bulk.wait_group

// PTX:      .extern .shared .align 1024 .b8 __dynamic_smem_hopper[];
// PTX:      .param .align 64 .b8 hopper_param_0[128]
// PTX:      .minnctapersm 1
// PTX:      cvta.param.u64
// PTX:      mbarrier.init.shared.b64
// PTX:      mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], %r{{[0-9]+}};
// PTX:      cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX:      mbarrier.try_wait.parity.shared::cta.b64 p, [%r{{[0-9]+}}], %r{{[0-9]+}}, %r{{[0-9]+}};
// PTX:      wgmma.fence.sync.aligned;
// PTX:      wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 1;
// PTX:      wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {{.*}}, p, 1, 1;
// PTX:      wgmma.commit_group.sync.aligned;
// PTX:      wgmma.wait_group.sync.aligned 0;
// PTX:      cp.async.bulk.commit_group;
// PTX:      cp.async.bulk.wait_group.read 0;

builtin.module {
sched.kernel @hopper(%tm : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>, %out : memref<1000x1000xf32>, %tm_z : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>) grid [1, 1, 1] block [384, 1, 1] smem 33792 attributes {nvvm.minctasm = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = sched.alloc offset 0 : i64 : memref<2x128x64xbf16, 3>
  %bars = sched.alloc offset 32768 : i64 : memref<2xi64, 3>
  sched.mbarrier.init %bars[%c0], 1 : memref<2xi64, 3>
  sched.fence.proxy_async
  sched.setmaxnreg inc 232
  sched.mbarrier.arrive_expect_tx %bars[%c0], 16384 : memref<2xi64, 3>
  sched.tma.load %tm[%c0, %c1], %a[%c0, %c0, %c0], %bars[%c0] : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>, memref<2x128x64xbf16, 3>, memref<2xi64, 3>
  sched.mbarrier.wait %bars[%c0], %c0 : memref<2xi64, 3>
  sched.mbarrier.arrive %bars[%c1] : memref<2xi64, 3>
  %da = sched.wgmma.desc %a[%c0, %c0, %c0] swizzle 128 lbo 16 sbo 1024 : memref<2x128x64xbf16, 3>
  %zero = arith.constant dense<0.0> : vector<64xf32>
  sched.wgmma.fence
  %d0 = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %zero trans_b : vector<64xf32>
  %d = sched.wgmma.mma_async m64n128k32 e4m3 %da, %da, %d0 : vector<64xf32>
  sched.wgmma.commit_group
  %r = sched.wgmma.wait_group 0, %d : vector<64xf32>
  %x = vector.extract %r[5] : f32 from vector<64xf32>
  sched.store %x, %out[%c0, %c1] : f32, memref<1000x1000xf32>
  sched.tma.store %a[%c1, %c0, %c0], %tm_z[%c0, %c0] : memref<2x128x64xbf16, 3>, !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  sched.bulk.commit_group
  sched.bulk.wait_group 0 read
  sched.return
}
func.func @host(%x : memref<1000x1000xbf16>, %y : memref<1000x1000xf32>, %z : memref<1000x1000xbf16>) attributes {fuser.num_outputs = 2 : i64} {
  %tm = sched.tensor_map %x : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  %tm_z = sched.tensor_map %z : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  sched.launch @hopper(%tm, %y, %tm_z) : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>, memref<1000x1000xf32>, !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  func.return
}
}
