// RUN: fuser-opt %s -p sched-insert-bulk-syncs | filecheck %s
// RUN: fuser-opt %s -p 'sched-insert-bulk-syncs,sched-insert-bulk-syncs' | filecheck %s
// RUN: fuser-opt %s -p sched-insert-bulk-syncs | fuser-opt -p sched-insert-bulk-syncs | filecheck %s

// Running the pass twice gives what running it once gives: every signal it synced finds
// nothing pending and every wait already has its fence. The kernel mixes the cases above (a
// branch, a loop carrying a reduction around its back edge, a wait with and without a fence).

// CHECK-LABEL: sched.kernel @twice
// CHECK:       sched.semaphore.wait %sems[%tile] until %z
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  scf.if %first {
// CHECK-NEXT:    sched.tma.store
// CHECK-NEXT:  } else {
// CHECK-NEXT:    sched.tma.reduce add
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%tile], %next
// CHECK-NEXT:  scf.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.semaphore.signal %sems[%i], %c1
// CHECK-NEXT:    sched.semaphore.wait %sems[%i] until %c4
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.tma.reduce add
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%tile], %c0
// CHECK-NEXT:  sched.return
// CHECK-NOT:   sched.fence.proxy_async
sched.kernel @twice(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 4] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %tile = sched.block_idx x
  %z = sched.block_idx z
  %next = arith.addi %z, %c1 : index
  %first = arith.cmpi eq, %z, %c0 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.semaphore.wait %sems[%tile] until %z : memref<16xi32>
  scf.if %first {
    sched.tma.store %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  } else {
    sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  }
  sched.semaphore.signal %sems[%tile], %next : memref<16xi32>
  scf.for %i = %c0 to %c4 step %c1 {
    sched.semaphore.signal %sems[%i], %c1 : memref<16xi32>
    sched.semaphore.wait %sems[%i] until %c4 : memref<16xi32>
    sched.fence.proxy_async global
    sched.tma.reduce add %t[%c0, %c0], %tm[%i, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  }
  sched.semaphore.signal %sems[%tile], %c0 : memref<16xi32>
  sched.return
}
