// RUN: fuser-opt %s --split-input-file -p sched-alias-smem | filecheck %s

// A buffer used inside a serial loop lives for the whole loop: %b, first used after %a's last
// use inside the loop, cannot take %a's bytes (the next iteration comes back to %a).
// CHECK-LABEL: sched.kernel @serial
// CHECK-SAME:    fuser.smem = "peak 2048 bytes, 2048 without reuse"
// CHECK:         %a = sched.alloc offset 0 : i64
// CHECK:         %b = sched.alloc offset 1024 : i64
sched.kernel @serial(%out : memref<256xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %v = arith.constant 1.0 : f32
  %a = sched.alloc : memref<256xf32, 3>
  %b = sched.alloc : memref<256xf32, 3>
  scf.for %i = %c0 to %c4 step %c1 {
    sched.store %v, %a[%tx] : f32, memref<256xf32, 3>
    %x = sched.load %a[%tx] : memref<256xf32, 3> -> f32
    sched.store %x, %b[%tx] : f32, memref<256xf32, 3>
    %y = sched.load %b[%tx] : memref<256xf32, 3> -> f32
    sched.store %y, %out[%tx] : f32, memref<256xf32>
  }
  sched.return
}

// -----
// Loops bound to threads are no loops in the generated code: a buffer used in one lives only as
// long as that loop, so %b, used in the next bound loop, takes %a's bytes, with a barrier
// between the two loops (never inside one, where threads may not all arrive).
// CHECK-LABEL: sched.kernel @parallel
// CHECK-SAME:    fuser.smem = "peak 1024 bytes, 2048 without reuse; %b reuses %a"
// CHECK:         %a = sched.alloc offset 0 : i64
// CHECK:         %b = sched.alloc offset 0 : i64
// CHECK:         sched.for bind(thread.x)
// CHECK:         }
// CHECK-NEXT:    sched.barrier
// CHECK-NEXT:    sched.for bind(thread.x)
// CHECK-NOT:     sched.barrier
sched.kernel @parallel(%out : memref<256xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %v = arith.constant 1.0 : f32
  %a = sched.alloc : memref<256xf32, 3>
  %b = sched.alloc : memref<256xf32, 3>
  sched.for bind(thread.x) %i = %c0 to %c256 step %c1 {
    sched.store %v, %a[%i] : f32, memref<256xf32, 3>
    %x = sched.load %a[%i] : memref<256xf32, 3> -> f32
    sched.store %x, %out[%i] : f32, memref<256xf32>
  }
  sched.for bind(thread.x) %i = %c0 to %c256 step %c1 {
    sched.store %v, %b[%i] : f32, memref<256xf32, 3>
    %y = sched.load %b[%i] : memref<256xf32, 3> -> f32
    sched.store %y, %out[%i] : f32, memref<256xf32>
  }
  sched.return
}

// -----
// Inside one bound loop no barrier can separate two buffers, so they stay apart.
// CHECK-LABEL: sched.kernel @same_bound_loop
// CHECK-SAME:    fuser.smem = "peak 2048 bytes, 2048 without reuse"
// CHECK-NOT:     sched.barrier
sched.kernel @same_bound_loop(%out : memref<256xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %v = arith.constant 1.0 : f32
  %a = sched.alloc : memref<256xf32, 3>
  %b = sched.alloc : memref<256xf32, 3>
  sched.for bind(thread.x) %i = %c0 to %c256 step %c1 {
    sched.store %v, %a[%i] : f32, memref<256xf32, 3>
    %x = sched.load %a[%i] : memref<256xf32, 3> -> f32
    sched.store %x, %b[%i] : f32, memref<256xf32, 3>
    %y = sched.load %b[%i] : memref<256xf32, 3> -> f32
    sched.store %y, %out[%i] : f32, memref<256xf32>
  }
  sched.return
}

// -----
// Alignment: an mbarrier array takes 8..16 bytes, a TMA destination 1024-byte alignment; the
// TMA tile goes first (larger), the barriers after it at a 16-byte boundary.
// CHECK-LABEL: sched.kernel @aligned
// CHECK-SAME:    smem 16400
// CHECK-DAG:     %tile = sched.alloc offset 0 : i64 : memref<128x64xbf16, 3 : i64>
// CHECK-DAG:     %bars = sched.alloc offset 16384 : i64 : memref<2xi64, 3 : i64>
sched.kernel @aligned(%tm : !sched.tensor_map<memref<128x64xbf16>, box [128, 64], swizzle 128>, %out : memref<4xbf16>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %bars = sched.alloc : memref<2xi64, 3>
  %tile = sched.alloc : memref<128x64xbf16, 3>
  sched.mbarrier.init %bars[%c0], 1 : memref<2xi64, 3>
  sched.mbarrier.arrive_expect_tx %bars[%c0], 16384 : memref<2xi64, 3>
  sched.tma.load %tm[%c0, %c0], %tile[%c0, %c0], %bars[%c0] : !sched.tensor_map<memref<128x64xbf16>, box [128, 64], swizzle 128>, memref<128x64xbf16, 3>, memref<2xi64, 3>
  sched.mbarrier.wait %bars[%c0], %c0 : memref<2xi64, 3>
  %x = sched.load %tile[%c0, %c0] : memref<128x64xbf16, 3> -> bf16
  sched.store %x, %out[%c0] : bf16, memref<4xbf16>
  sched.return
}

// -----
// The tie rule: the layout depends on sizes and lifetimes, not on the order the allocs were
// written in. The same three buffers in two orders get the same offsets.
// CHECK-LABEL: sched.kernel @order1
// CHECK-DAG:     %p = sched.alloc offset 0 : i64 : memref<64xf32, 3 : i64>
// CHECK-DAG:     %q = sched.alloc offset 256 : i64 : memref<64xf32, 3 : i64>
// CHECK-DAG:     %r = sched.alloc offset 512 : i64 : memref<64xf32, 3 : i64>
// CHECK-LABEL: sched.kernel @order2
// CHECK-DAG:     %p = sched.alloc offset 0 : i64 : memref<64xf32, 3 : i64>
// CHECK-DAG:     %q = sched.alloc offset 256 : i64 : memref<64xf32, 3 : i64>
// CHECK-DAG:     %r = sched.alloc offset 512 : i64 : memref<64xf32, 3 : i64>
builtin.module {
  sched.kernel @order1(%out : memref<64xf32>) grid [1, 1, 1] block [64, 1, 1] smem 0 {
    %tx = sched.thread_idx x
    %v = arith.constant 1.0 : f32
    %p = sched.alloc : memref<64xf32, 3>
    %q = sched.alloc : memref<64xf32, 3>
    %r = sched.alloc : memref<64xf32, 3>
    sched.store %v, %p[%tx] : f32, memref<64xf32, 3>
    sched.store %v, %q[%tx] : f32, memref<64xf32, 3>
    sched.store %v, %r[%tx] : f32, memref<64xf32, 3>
    %a = sched.load %p[%tx] : memref<64xf32, 3> -> f32
    %b = sched.load %q[%tx] : memref<64xf32, 3> -> f32
    %c = sched.load %r[%tx] : memref<64xf32, 3> -> f32
    sched.return
  }
  sched.kernel @order2(%out : memref<64xf32>) grid [1, 1, 1] block [64, 1, 1] smem 0 {
    %tx = sched.thread_idx x
    %v = arith.constant 1.0 : f32
    %r = sched.alloc : memref<64xf32, 3>
    %q = sched.alloc : memref<64xf32, 3>
    %p = sched.alloc : memref<64xf32, 3>
    sched.store %v, %p[%tx] : f32, memref<64xf32, 3>
    sched.store %v, %q[%tx] : f32, memref<64xf32, 3>
    sched.store %v, %r[%tx] : f32, memref<64xf32, 3>
    %a = sched.load %p[%tx] : memref<64xf32, 3> -> f32
    %b = sched.load %q[%tx] : memref<64xf32, 3> -> f32
    %c = sched.load %r[%tx] : memref<64xf32, 3> -> f32
    sched.return
  }
}
