// RUN: fuser-opt %s | filecheck %s
// RUN: fuser-opt %s | fuser-opt | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s --check-prefix=NVVM
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// The thread-block-cluster ops of the sched dialect print and parse back unchanged, and lower to
// upstream's nvvm cluster ops (no inline asm) and the PTX that 2-CTA TMA multicast needs. The
// cluster barrier's halves are release and acquire by default in PTX.

// NVVM:      nvvm.fence.mbarrier.init
// NVVM-NEXT: nvvm.cluster.arrive
// NVVM-NEXT: nvvm.cluster.wait
// NVVM:      nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} multicast_mask = %{{.*}} : !llvm.ptr<7>, !llvm.ptr<0>
// NVVM:      %[[R:.*]] = nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// NVVM-NEXT: nvvm.mbarrier.arrive %[[R]] : !llvm.ptr<7>
// NVVM-NOT:  llvm.inline_asm

// CHECK-LABEL: sched.kernel @pair(%tm : !sched.tensor_map<memref<1000x1000xbf16>, box [64, 64], swizzle 128>) grid [4, 1, 1] block [128, 1, 1] smem 16400 cluster [2, 1, 1] {
sched.kernel @pair(%tm : !sched.tensor_map<memref<1000x1000xbf16>, box [64, 64], swizzle 128>) grid [4, 1, 1] block [128, 1, 1] smem 16400 cluster [2, 1, 1] {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = sched.alloc offset 0 : i64 : memref<2x64x64xbf16, 3>
  %bars = sched.alloc offset 16384 : i64 : memref<2xi64, 3>
  sched.mbarrier.init %bars[%c0], 1 : memref<2xi64, 3>
  // CHECK: sched.fence.mbarrier_init
  sched.fence.mbarrier_init
  // CHECK-NEXT: sched.cluster.barrier
  sched.cluster.barrier
  sched.mbarrier.arrive_expect_tx %bars[%c0], 16384 : memref<2xi64, 3>
  // CHECK: sched.tma.load %tm[%c0, %c1], %a[%c0, %c0, %c0], %bars[%c0] multicast 3 : !sched.tensor_map<memref<1000x1000xbf16>, box [64, 64], swizzle 128>, memref<2x64x64xbf16, 3 : i64>, memref<2xi64, 3 : i64>
  sched.tma.load %tm[%c0, %c1], %a[%c0, %c0, %c0], %bars[%c0] multicast 3 : !sched.tensor_map<memref<1000x1000xbf16>, box [64, 64], swizzle 128>, memref<2x64x64xbf16, 3>, memref<2xi64, 3>
  // CHECK-NEXT: sched.mbarrier.arrive_cluster %bars[%c1], cta %c1 : memref<2xi64, 3 : i64>
  sched.mbarrier.arrive_cluster %bars[%c1], cta %c1 : memref<2xi64, 3>
  sched.cluster.barrier
  sched.return
}

// PTX: .explicitcluster
// PTX: .reqnctapercluster 2, 1, 1
// PTX: fence.mbarrier_init.release.cluster;
// PTX: barrier.cluster.arrive;
// PTX-NEXT: barrier.cluster.wait;
// PTX: mov.b16 mask, 3;
// PTX-NEXT: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{{%r[0-9]+}}], [{{%rd[0-9]+}}, {{{%r[0-9]+}}, {{%r[0-9]+}}}], [{{%r[0-9]+}}], mask;
// PTX: mapa.shared::cluster.u32 remote, {{%r[0-9]+}}, {{%r[0-9]+}};
// PTX-NEXT: mbarrier.arrive.shared::cluster.b64 _, [remote];
// PTX: barrier.cluster.arrive;
