// RUN: fuser-opt %s -p convert-sched-to-nvvm --split-input-file --verify-diagnostics | filecheck %s

// What the lowering cannot handle is reported with the op, its location and the kernel.

sched.kernel @k(%x : memref<8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<8xf32>
  sched.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: cannot lower 'memref.load' at {{.*}}errors.mlir:7:3 in kernel @k

// -----

sched.kernel @k(%x : memref<8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  sched.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: cannot lower 'gpu.thread_id' at {{.*}}errors.mlir:16:3 in kernel @k

// -----

func.func @f(%x : memref<8xf32>) {
  sched.launch @missing(%x) : memref<8xf32>
  func.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: 'sched.launch' at {{.*}}errors.mlir:24:3 in @f: no sched.kernel @missing in this module

// -----

sched.kernel @k(%x : memref<8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  sched.return
}
func.func @f(%x : memref<4xf32>) {
  sched.launch @k(%x) : memref<4xf32>
  func.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: 'sched.launch' at {{.*}}errors.mlir:35:3 in @f: arguments (memref<4xf32>) do not match @k's (memref<8xf32>)
