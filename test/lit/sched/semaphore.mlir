// RUN: fuser-opt %s | filecheck %s
// RUN: fuser-opt %s | fuser-opt | filecheck %s
// RUN: fuser-opt %s --print-op-generic | fuser-opt | filecheck %s

// Grid semaphores, TMA reductions and the global async-proxy fence print and parse back
// unchanged; the shared::cta fence keeps its bare form.

// CHECK-LABEL: sched.kernel @serial_split(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>)
// CHECK:       %t = sched.alloc : memref<64x32xf32, 3 : i64>
// CHECK-NEXT:  sched.semaphore.wait %sems[%tile] until %z : memref<16xi32>
// CHECK-NEXT:  sched.fence.proxy_async global{{$}}
// CHECK-NEXT:  sched.fence.proxy_async{{$}}
// CHECK-NEXT:  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %z] : memref<64x32xf32, 3 : i64>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
// CHECK-NEXT:  sched.tma.reduce min %t[%c0, %c0], %tm[%z, %c0] : memref<64x32xf32, 3 : i64>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
// CHECK-NEXT:  sched.tma.reduce max %t[%c0, %c0], %tm[%c0, %c0] {fuser.note = "m"} : memref<64x32xf32, 3 : i64>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 0{{$}}
// CHECK-NEXT:  sched.fence.proxy_async global{{$}}
// CHECK-NEXT:  sched.semaphore.signal %sems[%tile], %next : memref<16xi32>
// CHECK-NEXT:  sched.semaphore.signal %sems[%tile], %c0 {fuser.note = "reset"} : memref<16xi32>
// CHECK-NEXT:  sched.return
sched.kernel @serial_split(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 4] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tile = sched.block_idx x
  %z = sched.block_idx z
  %next = arith.addi %z, %c1 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  sched.semaphore.wait %sems[%tile] until %z : memref<16xi32>
  sched.fence.proxy_async global
  sched.fence.proxy_async shared
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %z] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.tma.reduce min %t[%c0, %c0], %tm[%z, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.tma.reduce max %t[%c0, %c0], %tm[%c0, %c0] {fuser.note = "m"} : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.bulk.commit_group
  sched.bulk.wait_group 0
  sched.fence.proxy_async global
  sched.semaphore.signal %sems[%tile], %next : memref<16xi32>
  sched.semaphore.signal %sems[%tile], %c0 {fuser.note = "reset"} : memref<16xi32>
  sched.return
}
