// RUN: fuser-opt %s -p sched-verify-buffers | filecheck %s

// Schedules the check accepts, printed back unchanged: inputs, a zero-initialized workspace,
// a workspace an earlier launch filled, and a kernel that stores, syncs its block, then reads
// its own store.

// CHECK-LABEL: sched.kernel @partials
// CHECK-LABEL: sched.kernel @fold
// CHECK-LABEL: sched.kernel @own
// CHECK-LABEL: func.func @f
// CHECK-NEXT:    %ws = sched.workspace : memref<8xf32>
// CHECK-NEXT:    %zeros = sched.workspace zero_init : memref<8xf32>
// CHECK-NEXT:    sched.launch @partials(%x, %ws)
// CHECK-NEXT:    sched.launch @fold(%ws, %zeros, %y)
// CHECK-NEXT:    sched.launch @own(%z)
builtin.module {
  sched.kernel @partials(%x : memref<8xf32>, %ws : memref<8xf32>) grid [1, 1, 1] block [8, 1, 1] smem 0 {
    %i = sched.thread_idx x
    %v = sched.load %x[%i] : memref<8xf32> -> f32
    sched.store %v, %ws[%i] : f32, memref<8xf32>
    sched.return
  }
  sched.kernel @fold(%ws : memref<8xf32>, %zeros : memref<8xf32>, %y : memref<8xf32>) grid [1, 1, 1] block [8, 1, 1] smem 0 {
    %i = sched.thread_idx x
    %a = sched.load %ws[%i] : memref<8xf32> -> f32
    %b = sched.load %zeros[%i] : memref<8xf32> -> f32
    %s = arith.addf %a, %b : f32
    sched.store %s, %y[%i] : f32, memref<8xf32>
    sched.return
  }
  sched.kernel @own(%z : memref<8xf32>) grid [1, 1, 1] block [8, 1, 1] smem 0 {
    %i = sched.thread_idx x
    %c0 = arith.constant 0 : index
    %v = arith.constant 1.0 : f32
    sched.store %v, %z[%i] : f32, memref<8xf32>
    sched.barrier
    %w = sched.load %z[%c0] : memref<8xf32> -> f32
    sched.return
  }
  func.func @f(%x : memref<8xf32>, %y : memref<8xf32>, %z : memref<8xf32>) attributes {fuser.num_outputs = 2 : i64} {
    %ws = sched.workspace : memref<8xf32>
    %zeros = sched.workspace zero_init : memref<8xf32>
    sched.launch @partials(%x, %ws) : memref<8xf32>, memref<8xf32>
    sched.launch @fold(%ws, %zeros, %y) : memref<8xf32>, memref<8xf32>, memref<8xf32>
    sched.launch @own(%z) : memref<8xf32>
    func.return
  }
}
