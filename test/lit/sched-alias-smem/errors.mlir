// RUN: not fuser-opt %s -p sched-alias-smem 2>&1 | filecheck %s
// RUN: not fuser-opt %s --split-input-file -p sched-alias-smem 2>&1 | filecheck %s --check-prefix=REL
// RUN: not fuser-opt %s -p 'sched-alias-smem{budget=1000}' 2>&1 | filecheck %s --check-prefix=SMALL

// Over the budget: two live 128 KB buffers do not fit one block's shared memory.
// CHECK: error: pass 'sched-alias-smem' failed: 'sched.kernel' @big: its shared buffers need 262144 bytes at their peak, over the 232448-byte budget of one block
// SMALL: error: pass 'sched-alias-smem' failed: 'sched.kernel' @big: its shared buffers need 262144 bytes at their peak, over the 1000-byte budget of one block
sched.kernel @big(%out : memref<4xf32>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %v = arith.constant 1.0 : f32
  %a = sched.alloc : memref<32768xf32, 3>
  %b = sched.alloc : memref<32768xf32, 3>
  sched.store %v, %a[%tx] : f32, memref<32768xf32, 3>
  sched.store %v, %b[%tx] : f32, memref<32768xf32, 3>
  %x = sched.load %a[%tx] : memref<32768xf32, 3> -> f32
  %y = sched.load %b[%tx] : memref<32768xf32, 3> -> f32
  sched.return
}

// -----
// A buffer used after its release breaks the release's promise.
// REL: error: pass 'sched-alias-smem' failed: 'sched.release' in kernel @late_use: %a is used after its release, by 'sched.load' at {{.*}}errors.mlir:[[# @LINE + 7]]:3
sched.kernel @late_use(%out : memref<256xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %v = arith.constant 1.0 : f32
  %a = sched.alloc : memref<256xf32, 3>
  sched.store %v, %a[%tx] : f32, memref<256xf32, 3>
  sched.release %a threads 256 : memref<256xf32, 3>
  %x = sched.load %a[%tx] : memref<256xf32, 3> -> f32
  sched.store %x, %out[%tx] : f32, memref<256xf32>
  sched.return
}
