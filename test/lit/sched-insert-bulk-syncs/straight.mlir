// RUN: fuser-opt %s -p sched-insert-bulk-syncs --split-input-file | filecheck %s

// Straight-line code: a signal that may publish bulk writes to global gets commit_group,
// wait_group 0, fence.proxy_async global right before it; a wait gets one global fence after it.

// (1) A TMA store then a signal: the triple before the signal. The wait before the store gets
// its fence.

// CHECK-LABEL: sched.kernel @store_then_signal
// CHECK:       sched.semaphore.wait %sems[%c0] until %c0 : memref<16xi32>
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.tma.store
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
// CHECK-NEXT:  sched.return
sched.kernel @store_then_signal(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [4, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.semaphore.wait %sems[%c0] until %c0 : memref<16xi32>
  sched.tma.store %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.return
}

// -----

// (2) A signal with nothing pending (no bulk write, or only after it) gets nothing; nothing is
// added after the last reduction either.

// CHECK-LABEL: sched.kernel @nothing_pending
// CHECK:       %t = sched.alloc
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
// CHECK-NEXT:  sched.tma.reduce add
// CHECK-NEXT:  sched.return
sched.kernel @nothing_pending(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [4, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.return
}

// -----

// (3) The syncs already there (and a fence already after the wait): nothing is added.

// CHECK-LABEL: sched.kernel @already_synced
// CHECK:       sched.semaphore.wait %sems[%c0] until %c0 : memref<16xi32>
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.tma.reduce add
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
// CHECK-NEXT:  sched.return
sched.kernel @already_synced(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [4, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.semaphore.wait %sems[%c0] until %c0 : memref<16xi32>
  sched.fence.proxy_async global
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.bulk.commit_group
  sched.bulk.wait_group 0
  sched.fence.proxy_async global
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.return
}

// -----

// (4) Syncs that do not complete and publish the writes: `wait_group 0 read` (the source may be
// reused, the writes may still be in flight, so a fence after it publishes nothing), a wait for
// groups never committed, a shared::cta fence, a wait_group 1. Each signal gets the full triple.

// CHECK-LABEL: sched.kernel @not_enough
// CHECK:       sched.tma.store
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0 read
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c1
// CHECK-NEXT:  sched.tma.reduce add
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c1], %c1
// CHECK-NEXT:  sched.tma.reduce add
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 1{{$}}
// CHECK-NEXT:  sched.fence.proxy_async{{$}}
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c0
// CHECK-NEXT:  sched.return
sched.kernel @not_enough(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [4, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.tma.store %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.bulk.commit_group
  sched.bulk.wait_group 0 read
  sched.fence.proxy_async global
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.bulk.wait_group 0
  sched.fence.proxy_async global
  sched.semaphore.signal %sems[%c1], %c1 : memref<16xi32>
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.bulk.commit_group
  sched.bulk.wait_group 1
  sched.fence.proxy_async
  sched.semaphore.signal %sems[%c0], %c0 : memref<16xi32>
  sched.return
}

// -----

// (5) One fence after every wait, none after a wait already followed by one; one triple serves
// the first signal only (the second finds nothing pending).

// CHECK-LABEL: sched.kernel @waits
// CHECK:       sched.semaphore.wait %sems[%c0] until %c0
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.wait %sems[%c1] until %c0
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.tma.reduce add
// CHECK-NEXT:  sched.semaphore.wait %sems[%c0] until %c1
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c1
// CHECK-NEXT:  sched.semaphore.signal %sems[%c1], %c1
// CHECK-NEXT:  sched.return
sched.kernel @waits(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [4, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.semaphore.wait %sems[%c0] until %c0 : memref<16xi32>
  sched.semaphore.wait %sems[%c1] until %c0 : memref<16xi32>
  sched.fence.proxy_async global
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.semaphore.wait %sems[%c0] until %c1 : memref<16xi32>
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.semaphore.signal %sems[%c1], %c1 : memref<16xi32>
  sched.return
}
