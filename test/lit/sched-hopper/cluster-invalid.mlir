// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The cluster ops need a kernel launched with a cluster; masks and ranks must fit it.

sched.kernel @nocluster() grid [2, 1, 1] block [128, 1, 1] smem 0 {
  // CHECK: {{.*}}cluster-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.cluster.barrier' op needs a sched.kernel launched with a cluster of 2 or more CTAs (`cluster [2, 1, 1]`)
  sched.cluster.barrier
  sched.return
}

// -----

sched.kernel @rank() grid [2, 1, 1] block [128, 1, 1] smem 0 cluster [2, 1, 1] {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = sched.alloc : memref<4xi64, 3>
  // CHECK: {{.*}}cluster-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.mbarrier.arrive_cluster' op CTA rank 2 is outside the kernel's cluster of 2 CTAs
  sched.mbarrier.arrive_cluster %b[%c0], cta %c2 : memref<4xi64, 3>
  sched.return
}

// -----

sched.kernel @arrive() grid [2, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %b = sched.alloc : memref<4xi64, 3>
  // CHECK: {{.*}}cluster-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.mbarrier.arrive_cluster' op needs a sched.kernel launched with a cluster of 2 or more CTAs
  sched.mbarrier.arrive_cluster %b[%c0], cta %c0 : memref<4xi64, 3>
  sched.return
}

// -----

sched.kernel @mask(%tm : !sched.tensor_map<memref<64x64xbf16>, box [64, 64], swizzle 128>) grid [2, 1, 1] block [128, 1, 1] smem 0 cluster [2, 1, 1] {
  %c0 = arith.constant 0 : index
  %s = sched.alloc : memref<64x64xbf16, 3>
  %b = sched.alloc : memref<1xi64, 3>
  // CHECK: {{.*}}cluster-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.tma.load' op multicast mask 5 names CTA rank 2, but the kernel's cluster has 2 CTAs
  sched.tma.load %tm[%c0, %c0], %s[%c0, %c0], %b[%c0] multicast 5 : !sched.tensor_map<memref<64x64xbf16>, box [64, 64], swizzle 128>, memref<64x64xbf16, 3>, memref<1xi64, 3>
  sched.return
}

// -----

sched.kernel @mask0(%tm : !sched.tensor_map<memref<64x64xbf16>, box [64, 64], swizzle 128>) grid [2, 1, 1] block [128, 1, 1] smem 0 cluster [2, 1, 1] {
  %c0 = arith.constant 0 : index
  %s = sched.alloc : memref<64x64xbf16, 3>
  %b = sched.alloc : memref<1xi64, 3>
  // CHECK: {{.*}}cluster-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.tma.load' op multicast mask 0 must be in 1 .. 0xFFFF (one bit per CTA rank)
  sched.tma.load %tm[%c0, %c0], %s[%c0, %c0], %b[%c0] multicast 0 : !sched.tensor_map<memref<64x64xbf16>, box [64, 64], swizzle 128>, memref<64x64xbf16, 3>, memref<1xi64, 3>
  sched.return
}

// -----

// CHECK: error: 'sched.kernel' op @odd: cluster [2, 1, 1] must be 3 positive extents that divide the grid [3, 1, 1]
sched.kernel @odd() grid [3, 1, 1] block [128, 1, 1] smem 0 cluster [2, 1, 1] {
  sched.return
}
