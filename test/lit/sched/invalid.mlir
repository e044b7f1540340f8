// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.kernel' op @big: block of 2048 threads exceeds 1024
  sched.kernel @big() grid [1, 1, 1] block [1024, 2, 1] smem 0 {
    sched.return
  }

// -----

sched.kernel @shfl() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %v = arith.constant 1.0 : f32
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.shfl_xor' op offset 3 must be 1, 2, 4, 8 or 16
  %r = sched.shfl_xor %v, 3 : f32
  sched.return
}

// -----

sched.kernel @idx(%x : memref<4x8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.load' op has 1 indices for the rank-2 buffer memref<4x8xf32>
  %v = sched.load %x[%c0] : memref<4x8xf32> -> f32
  sched.return
}

// -----

sched.kernel @vec(%x : memref<4x6xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.load' op vector of 4 does not divide the last extent 6 of memref<4x6xf32>
  %v = sched.load %x[%c0, %c0] : memref<4x6xf32> -> vector<4xf32>
  sched.return
}

// -----

sched.kernel @vecst(%x : memref<6xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %v = arith.constant dense<0.0> : vector<4xf32>
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.store' op vector of 4 does not divide the last extent 6 of memref<6xf32>
  sched.store %v, %x[%c0] : vector<4xf32>, memref<6xf32>
  sched.return
}

// -----

sched.kernel @gal() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.alloc' op result memref<8xf32> must be in shared (3) or register (5) space
  %s = sched.alloc : memref<8xf32>
  sched.return
}

// -----

// CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:1: error: 'sched.kernel' op @arg: argument #1 must be a global memref, got memref<8xf32, 3 : i64>
sched.kernel @arg(%x : memref<8xf32>, %s : memref<8xf32, 3>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  sched.return
}

// -----

sched.kernel @elt(%x : memref<8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.load' op value type f16 differs from the buffer's element type f32
  %v = sched.load %x[%c0] : memref<8xf32> -> f16
  sched.return
}

// -----

sched.kernel @bind() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.for' op bind(warp.x) is not one of thread.x, thread.y, block.x, block.y, grid.x
  sched.for bind(warp.x) %i = %c0 to %c0 step %c0 {
  }
  sched.return
}

// -----

sched.kernel @shflty() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %v = arith.constant 1.0 : f16
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.shfl_xor' op value must be f32, f64, i32 or i64, got f16
  %r = sched.shfl_xor %v, 1 : f16
  sched.return
}

// -----

sched.kernel @idxop() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.thread_idx' op dimension must be x, y or z, got 'w'
  %t = sched.thread_idx w
  sched.return
}

// -----

// CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:1: error: 'sched.kernel' op @grid: grid must be 3 positive extents, got [0, 1, 1]
sched.kernel @grid() grid [0, 1, 1] block [32, 1, 1] smem 0 {
  sched.return
}

// -----

func.func @ws() {
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.workspace' op 'zero_init' and 'kept_zero' are mutually exclusive: a kept_zero workspace is zeroed once, at allocation
  %ws = sched.workspace zero_init kept_zero : memref<16xi32>
  func.return
}

// -----

sched.kernel @griddep() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:24: error: 'sched.griddepcontrol' op kind must be wait or launch_dependents, got 'signal'
  sched.griddepcontrol signal
  sched.return
}

// -----

func.func @griddep_outside() {
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.griddepcontrol' op must be inside a sched.kernel
  sched.griddepcontrol wait
  func.return
}

// -----

sched.kernel @atomic_bf16(%x : memref<8xbf16>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %v = arith.constant 1.0 : bf16
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.atomic_add' op value type bf16 is not one of f32, f64, i32, i64
  sched.atomic_add %v, %x[%c0] : bf16, memref<8xbf16>
  sched.return
}

// -----

sched.kernel @atomic_shared() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %s = sched.alloc : memref<8xf32, 3>
  %v = arith.constant 1.0 : f32
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.atomic_add' op buffer memref<8xf32, 3 : i64> is not in global memory
  sched.atomic_add %v, %s[%c0] : f32, memref<8xf32, 3>
  sched.return
}
