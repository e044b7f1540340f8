// RUN: fuser-opt %s --split-input-file -p sched-alias-smem | filecheck %s

// Two buffers whose lifetimes do not meet share offset 0; the second one's first write gets a
// barrier (every thread must be done with the first).
// CHECK-LABEL: sched.kernel @disjoint
// CHECK-SAME:    smem 1024
// CHECK-SAME:    fuser.smem = "peak 1024 bytes, 2048 without reuse; %b reuses %a"
// CHECK:         %a = sched.alloc offset 0 : i64 : memref<256xf32, 3 : i64>
// CHECK:         %b = sched.alloc offset 0 : i64 : memref<256xf32, 3 : i64>
// CHECK:         sched.store %{{.*}}, %a[%tx]
// CHECK-NEXT:    %{{.*}} = sched.load %a[%tx]
// CHECK-NEXT:    sched.barrier
// CHECK-NEXT:    sched.store %{{.*}}, %b[%tx]
sched.kernel @disjoint(%out : memref<256xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %v = arith.constant 1.0 : f32
  %a = sched.alloc : memref<256xf32, 3>
  %b = sched.alloc : memref<256xf32, 3>
  sched.store %v, %a[%tx] : f32, memref<256xf32, 3>
  %x = sched.load %a[%tx] : memref<256xf32, 3> -> f32
  sched.store %x, %b[%tx] : f32, memref<256xf32, 3>
  %y = sched.load %b[%tx] : memref<256xf32, 3> -> f32
  sched.store %y, %out[%tx] : f32, memref<256xf32>
  sched.return
}

// -----
// Overlapping lifetimes: apart, and no barrier is added (no bytes are reused).
// CHECK-LABEL: sched.kernel @overlap
// CHECK-SAME:    smem 2048
// CHECK-SAME:    fuser.smem = "peak 2048 bytes, 2048 without reuse"
// CHECK:         %a = sched.alloc offset 0 : i64
// CHECK:         %b = sched.alloc offset 1024 : i64
// CHECK-NOT:     sched.barrier
sched.kernel @overlap(%out : memref<256xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %v = arith.constant 1.0 : f32
  %a = sched.alloc : memref<256xf32, 3>
  %b = sched.alloc : memref<256xf32, 3>
  sched.store %v, %a[%tx] : f32, memref<256xf32, 3>
  sched.store %v, %b[%tx] : f32, memref<256xf32, 3>
  %x = sched.load %a[%tx] : memref<256xf32, 3> -> f32
  %y = sched.load %b[%tx] : memref<256xf32, 3> -> f32
  %s = arith.addf %x, %y : f32
  sched.store %s, %out[%tx] : f32, memref<256xf32>
  sched.return
}

// -----
// A barrier already between the two lifetimes makes the reuse safe: none is added.
// CHECK-LABEL: sched.kernel @has_barrier
// CHECK-SAME:    fuser.smem = "peak 1024 bytes, 2048 without reuse; %b reuses %a"
// CHECK:         sched.barrier
// CHECK-NOT:     sched.barrier
sched.kernel @has_barrier(%out : memref<256xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %v = arith.constant 1.0 : f32
  %a = sched.alloc : memref<256xf32, 3>
  %b = sched.alloc : memref<256xf32, 3>
  sched.store %v, %a[%tx] : f32, memref<256xf32, 3>
  %x = sched.load %a[%tx] : memref<256xf32, 3> -> f32
  sched.barrier
  sched.store %x, %b[%tx] : f32, memref<256xf32, 3>
  %y = sched.load %b[%tx] : memref<256xf32, 3> -> f32
  sched.store %y, %out[%tx] : f32, memref<256xf32>
  sched.return
}

// -----
// no_reuse: the second buffer keeps bytes of its own though the first is dead.
// CHECK-LABEL: sched.kernel @no_reuse
// CHECK-SAME:    fuser.smem = "peak 2048 bytes, 2048 without reuse"
// CHECK:         %a = sched.alloc offset 0 : i64
// CHECK:         %b = sched.alloc offset 1024 : i64 {fuser.smem = "no_reuse"}
// CHECK-NOT:     sched.barrier
sched.kernel @no_reuse(%out : memref<256xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %v = arith.constant 1.0 : f32
  %a = sched.alloc : memref<256xf32, 3>
  %b = sched.alloc {fuser.smem = "no_reuse"} : memref<256xf32, 3>
  sched.store %v, %a[%tx] : f32, memref<256xf32, 3>
  %x = sched.load %a[%tx] : memref<256xf32, 3> -> f32
  sched.store %x, %b[%tx] : f32, memref<256xf32, 3>
  %y = sched.load %b[%tx] : memref<256xf32, 3> -> f32
  sched.store %y, %out[%tx] : f32, memref<256xf32>
  sched.return
}
