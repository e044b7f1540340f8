// RUN: fuser-opt %s -p convert-sched-to-nvvm --split-input-file --verify-diagnostics | filecheck %s

// A signal that may publish TMA writes still in flight (or not fenced against the release)
// would let the next split run before this one's reduction landed: the lowering refuses it and
// names the pass that places the syncs.

sched.kernel @unsynced(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.bulk.commit_group
  sched.bulk.wait_group 0 read
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: 'sched.kernel' @unsynced: 'sched.semaphore.signal' at {{.*}}lowering-errors.mlir:14:3 may publish TMA stores or reductions that are not complete and fenced (commit_group, wait_group 0, fence.proxy_async global); run sched-insert-bulk-syncs before convert-sched-to-nvvm

// -----

// Completed but not fenced: still refused.
sched.kernel @unfenced(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  scf.for %i = %c0 to %c1 step %c1 {
    sched.tma.store %t[%c0, %c0], %tm[%i, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
    sched.bulk.commit_group
    sched.bulk.wait_group 0
  }
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: 'sched.kernel' @unfenced: 'sched.semaphore.signal' at {{.*}}lowering-errors.mlir:31:3 may publish
