// RUN: fuser-opt %s -p sched-insert-bulk-syncs --split-input-file | filecheck %s

// scf.if: both branches start from the state before the if; after it, writes may be pending
// when they may be on either branch (a missing else keeps the state before the if).

// (1) The serial split-K shape: split 0 stores, later splits reduce, on two branches; one
// thread signals inside another if. Pending on both branches: the triple goes inside the
// signalling branch, right before the signal; nothing is added to the branches themselves.

// CHECK-LABEL: sched.kernel @store_or_reduce
// CHECK:       scf.if %first {
// CHECK-NEXT:    sched.tma.store
// CHECK-NEXT:  } else {
// CHECK-NEXT:    sched.tma.reduce add
// CHECK-NEXT:  }
// CHECK-NEXT:  scf.if %leader {
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.semaphore.signal %sems[%tile], %next
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.return
sched.kernel @store_or_reduce(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 4] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tile = sched.block_idx x
  %z = sched.block_idx z
  %tid = sched.thread_idx x
  %next = arith.addi %z, %c1 : index
  %first = arith.cmpi eq, %z, %c0 : index
  %leader = arith.cmpi eq, %tid, %c0 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  scf.if %first {
    sched.tma.store %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  } else {
    sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  }
  scf.if %leader {
    sched.semaphore.signal %sems[%tile], %next : memref<16xi32>
  }
  sched.return
}

// -----

// (2) Pending on one branch only (the other syncs, or has no bulk write): still pending after
// the if. A branch with no else counts as its own missing branch.

// CHECK-LABEL: sched.kernel @one_branch
// CHECK:       scf.if %first {
// CHECK-NEXT:    sched.tma.reduce add
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c1
// CHECK-NEXT:  scf.if %first {
// CHECK-NEXT:    sched.tma.reduce add
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:  } else {
// CHECK-NEXT:    sched.tma.store
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c1], %c1
// CHECK-NEXT:  sched.return
sched.kernel @one_branch(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 4] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = sched.block_idx z
  %first = arith.cmpi eq, %z, %c0 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  scf.if %first {
    sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  }
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  scf.if %first {
    sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
    sched.bulk.commit_group
    sched.bulk.wait_group 0
    sched.fence.proxy_async global
  } else {
    sched.tma.store %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  }
  sched.semaphore.signal %sems[%c1], %c1 : memref<16xi32>
  sched.return
}

// -----

// (3) Both branches sync (one of them by signalling): nothing pending after the if, so the
// signal after it gets nothing; the signal inside the else branch gets its triple there.

// CHECK-LABEL: sched.kernel @both_sync
// CHECK:       scf.if %first {
// CHECK-NEXT:    sched.tma.reduce add
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:  } else {
// CHECK-NEXT:    sched.tma.store
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.semaphore.signal %sems[%c0], %c0
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c1
// CHECK-NEXT:  sched.return
sched.kernel @both_sync(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 4] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = sched.block_idx z
  %first = arith.cmpi eq, %z, %c0 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  scf.if %first {
    sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
    sched.bulk.commit_group
    sched.bulk.wait_group 0
    sched.fence.proxy_async global
  } else {
    sched.tma.store %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
    sched.semaphore.signal %sems[%c0], %c0 : memref<16xi32>
  }
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.return
}

// -----

// (4) Pending before an if without else whose then-branch syncs: the missing branch keeps the
// writes pending, so the signal after the if gets the triple.

// CHECK-LABEL: sched.kernel @no_else
// CHECK:       sched.tma.reduce add
// CHECK-NEXT:  scf.if %first {
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c1
// CHECK-NEXT:  sched.return
sched.kernel @no_else(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 4] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = sched.block_idx z
  %first = arith.cmpi eq, %z, %c0 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  scf.if %first {
    sched.bulk.commit_group
    sched.bulk.wait_group 0
    sched.fence.proxy_async global
  }
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.return
}
