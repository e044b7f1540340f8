// RUN: fuser-opt %s -p sched-insert-bulk-syncs --split-input-file | filecheck %s

// Loops: the body starts from the state before the loop joined with the state at its own end
// (the back edge), to a fixed point. After the loop the state is the body's end, joined with
// the state before it when the loop may run zero times.

// (1) A body that waits, reduces, then signals (serial splits in one CTA): the triple before
// the signal, the fence after the wait; nothing pending after the loop (it runs: 0 < 4), so
// the signal after it gets nothing.

// CHECK-LABEL: sched.kernel @reduce_then_signal
// CHECK:       scf.for %z = %c0 to %c4 step %c1 {
// CHECK-NEXT:    sched.semaphore.wait %sems[%c0] until %z
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.tma.reduce add
// CHECK-NEXT:    %next = arith.addi %z, %c1 : index
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.semaphore.signal %sems[%c0], %next
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.semaphore.signal %sems[%c1], %c0
// CHECK-NEXT:  sched.return
sched.kernel @reduce_then_signal(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  scf.for %z = %c0 to %c4 step %c1 {
    sched.semaphore.wait %sems[%c0] until %z : memref<16xi32>
    sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %z] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
    %next = arith.addi %z, %c1 : index
    sched.semaphore.signal %sems[%c0], %next : memref<16xi32>
  }
  sched.semaphore.signal %sems[%c1], %c0 : memref<16xi32>
  sched.return
}

// -----

// (2) A body that signals, then reduces: nothing is pending on entry, but the reduction of one
// iteration reaches the next iteration's signal around the back edge, so the signal gets the
// triple; the last reduction is pending after the loop, so the signal after it gets one too.

// CHECK-LABEL: sched.kernel @carried
// CHECK:       scf.for %z = %c0 to %c4 step %c1 {
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.semaphore.signal %sems[%c0], %z
// CHECK-NEXT:    sched.tma.reduce add
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c1], %c0
// CHECK-NEXT:  sched.return
sched.kernel @carried(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  scf.for %z = %c0 to %c4 step %c1 {
    sched.semaphore.signal %sems[%c0], %z : memref<16xi32>
    sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %z] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  }
  sched.semaphore.signal %sems[%c1], %c0 : memref<16xi32>
  sched.return
}

// -----

// (3) A store before a loop whose body syncs and signals: the loop may run zero times (its
// bound is not a constant), so the store may still be pending after it and the signal after
// the loop gets the triple; inside the body the entry state makes the first signal need one.

// CHECK-LABEL: sched.kernel @maybe_zero_trips
// CHECK:       sched.tma.store
// CHECK-NEXT:  scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.semaphore.signal %sems[%i], %c1
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c1
// CHECK-NEXT:  sched.return
sched.kernel @maybe_zero_trips(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = sched.block_idx x
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.tma.store %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  scf.for %i = %c0 to %n step %c1 {
    sched.semaphore.signal %sems[%i], %c1 : memref<16xi32>
  }
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.return
}

// -----

// (4) A sched.for spreads its iterations over threads: even with constant bounds a thread may
// run none, so what was pending before it stays pending after it.

// CHECK-LABEL: sched.kernel @bound_loop
// CHECK:       sched.tma.reduce add
// CHECK-NEXT:  sched.for bind(thread.x) %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.semaphore.signal %sems[%i], %c1
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global
// CHECK-NEXT:  sched.semaphore.signal %sems[%c0], %c1
sched.kernel @bound_loop(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.for bind(thread.x) %i = %c0 to %c4 step %c1 {
    sched.semaphore.signal %sems[%i], %c1 : memref<16xi32>
  }
  sched.semaphore.signal %sems[%c0], %c1 : memref<16xi32>
  sched.return
}

// -----

// (5) Nested loops: a reduction in the inner loop reaches the outer body's signal through both
// back edges; the signal at the top of the outer body needs the triple from the second outer
// iteration on.

// CHECK-LABEL: sched.kernel @nested
// CHECK:       scf.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.semaphore.signal %sems[%i], %c1
// CHECK-NEXT:    scf.for %j = %c0 to %c4 step %c1 {
// CHECK-NEXT:      sched.tma.reduce add
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.return
sched.kernel @nested(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  scf.for %i = %c0 to %c4 step %c1 {
    sched.semaphore.signal %sems[%i], %c1 : memref<16xi32>
    scf.for %j = %c0 to %c4 step %c1 {
      sched.tma.reduce add %t[%c0, %c0], %tm[%j, %i] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
    }
  }
  sched.return
}
