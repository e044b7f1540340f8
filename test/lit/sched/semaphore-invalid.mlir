// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the grid semaphore ops, sched.tma.reduce and the async-proxy fence: each
// names the op and the operand or property at fault.

sched.kernel @elt(%sems : memref<16xi64>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  // CHECK: {{.*}}semaphore-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.semaphore.wait' op semaphore operand 'sems' must be a 1-D global i32 buffer (memref<Nxi32>), got memref<16xi64>
  sched.semaphore.wait %sems[%c0] until %c0 : memref<16xi64>
  sched.return
}

// -----

sched.kernel @space() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %sems = sched.alloc : memref<16xi32, 3>
  // CHECK: {{.*}}semaphore-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.semaphore.signal' op semaphore operand 'sems' must be a 1-D global i32 buffer (memref<Nxi32>), got memref<16xi32, 3 : i64>
  sched.semaphore.signal %sems[%c0], %c0 : memref<16xi32, 3>
  sched.return
}

// -----

sched.kernel @rank(%sems : memref<4x4xi32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  // CHECK: {{.*}}semaphore-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.semaphore.signal' op semaphore operand 'sems' must be a 1-D global i32 buffer (memref<Nxi32>), got memref<4x4xi32>
  sched.semaphore.signal %sems[%c0], %c0 : memref<4x4xi32>
  sched.return
}

// -----

sched.kernel @coords(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  // CHECK: {{.*}}semaphore-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.tma.reduce' op has 1 coordinates for the rank-2 tensor map
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.return
}

// -----

sched.kernel @kind(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %t = sched.alloc : memref<64x32xf32, 3>
  // CHECK: {{.*}}semaphore-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.tma.reduce' op kind 'mul' must be one of add, min, max
  sched.tma.reduce mul %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.return
}

// -----

sched.kernel @src(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %g : memref<64x32xf32>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  // CHECK: {{.*}}semaphore-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.tma.reduce' op source (operand 'src') must be a shared-memory (space 3) memref, got memref<64x32xf32>
  sched.tma.reduce add %g[%c0, %c0], %tm[%c0, %c0] : memref<64x32xf32>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.return
}

// -----

sched.kernel @elt(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %t = sched.alloc : memref<64x32xbf16, 3>
  // CHECK: {{.*}}semaphore-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.tma.reduce' op source element type bf16 differs from the tensor map's f32
  sched.tma.reduce add %t[%c0, %c0], %tm[%c0, %c0] : memref<64x32xbf16, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.return
}

// -----

sched.kernel @fence() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  // CHECK: {{.*}}semaphore-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.fence.proxy_async' op space 'cluster' must be one of shared, global
  "sched.fence.proxy_async"() <{space = "cluster"}> : () -> ()
  sched.return
}
