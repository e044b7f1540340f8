// RUN: fuser-opt %s | fuser-opt | filecheck %s
// RUN: fuser-opt %s --print-op-generic | fuser-opt | filecheck %s

// Every sched op prints in a form that parses back to the same IR.

builtin.module {
  sched.kernel @k(%x : memref<4x256xf32>, %y : memref<4xf32>) grid [4, 1, 1] block [128, 2, 1] smem 4096 cluster [2, 1, 1] attributes {fuser.note = "k"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    %tx = sched.thread_idx x
    %ty = sched.thread_idx y
    %bx = sched.block_idx x
    %bdx = sched.block_dim x
    %gdz = sched.grid_dim z
    %smem = sched.alloc : memref<8xf32, 3>
    %dyn = sched.alloc offset 128 : i64 : memref<4x32xf32, 3>
    %regs = sched.alloc : memref<4xf32, 5>
    %zero = arith.constant 0.000000e+00 : f32
    %sum = sched.for bind(thread.x) %j = %c0 to %c256 step %c4 iter_args(%acc = %zero) -> (f32) {
      %v = sched.load %x[%bx, %j] : memref<4x256xf32> -> vector<4xf32>
      sched.store %v, %regs[%c0] : vector<4xf32>, memref<4xf32, 5>
      %e = sched.load %regs[%c1] : memref<4xf32, 5> -> f32
      %a = arith.addf %acc, %e : f32
      sched.yield %a : f32
    }
    sched.for bind(grid.x) %i = %c0 to %c4 step %c1 {
      sched.store %sum, %y[%i] : f32, memref<4xf32>
      sched.atomic_add %sum, %y[%i] : f32, memref<4xf32>
    }
    sched.for bind(block.y) %i = %c0 to %c4 step %c1 {
    }
    %r = sched.shfl_xor %sum, 16 : f32
    sched.store %r, %smem[%tx] : f32, memref<8xf32, 3>
    sched.barrier
    %d = sched.load %dyn[%ty, %tx] : memref<4x32xf32, 3> -> f32
    sched.griddepcontrol wait
    sched.griddepcontrol launch_dependents
    sched.return
  }
  func.func @f(%x : memref<4x256xf32>, %y : memref<4xf32>) attributes {fuser.num_outputs = 1 : i64} {
    %ws = sched.workspace zero_init : memref<64xf32>
    %ws2 = sched.workspace : memref<8xi32>
    sched.launch @k(%x, %y) : memref<4x256xf32>, memref<4xf32>
    sched.launch @k(%x, %y) {fuser.dependent_launch} : memref<4x256xf32>, memref<4xf32>
    func.return
  }
}

// CHECK:       sched.kernel @k(%{{.*}} : memref<4x256xf32>, %{{.*}} : memref<4xf32>) grid [4, 1, 1] block [128, 2, 1] smem 4096 cluster [2, 1, 1] attributes {fuser.note = "k"} {
// CHECK:         %{{.*}} = sched.thread_idx x
// CHECK-NEXT:    %{{.*}} = sched.thread_idx y
// CHECK-NEXT:    %[[BX:.*]] = sched.block_idx x
// CHECK-NEXT:    %{{.*}} = sched.block_dim x
// CHECK-NEXT:    %{{.*}} = sched.grid_dim z
// CHECK-NEXT:    %{{.*}} = sched.alloc : memref<8xf32, 3 : i64>
// CHECK-NEXT:    %{{.*}} = sched.alloc offset 128 : i64 : memref<4x32xf32, 3 : i64>
// CHECK-NEXT:    %{{.*}} = sched.alloc : memref<4xf32, 5 : i64>
// CHECK:         %{{.*}} = sched.for bind(thread.x) %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK-NEXT:      %{{.*}} = sched.load %{{.*}}[%[[BX]], %{{.*}}] : memref<4x256xf32> -> vector<4xf32>
// CHECK-NEXT:      sched.store %{{.*}}, %{{.*}}[%{{.*}}] : vector<4xf32>, memref<4xf32, 5 : i64>
// CHECK-NEXT:      %{{.*}} = sched.load %{{.*}}[%{{.*}}] : memref<4xf32, 5 : i64> -> f32
// CHECK-NEXT:      %{{.*}} = arith.addf
// CHECK-NEXT:      sched.yield %{{.*}} : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    sched.for bind(grid.x) %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      sched.store %{{.*}}, %{{.*}}[%{{.*}}] : f32, memref<4xf32>
// CHECK-NEXT:      sched.atomic_add %{{.*}}, %{{.*}}[%{{.*}}] : f32, memref<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    sched.for bind(block.y)
// CHECK:         %{{.*}} = sched.shfl_xor %{{.*}}, 16 : f32
// CHECK-NEXT:    sched.store %{{.*}}, %{{.*}}[%{{.*}}] : f32, memref<8xf32, 3 : i64>
// CHECK-NEXT:    sched.barrier
// CHECK-NEXT:    %{{.*}} = sched.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<4x32xf32, 3 : i64> -> f32
// CHECK-NEXT:    sched.griddepcontrol wait
// CHECK-NEXT:    sched.griddepcontrol launch_dependents
// CHECK-NEXT:    sched.return
// CHECK-NEXT:  }
// CHECK:       func.func @f(%{{.*}}: memref<4x256xf32>, %{{.*}}: memref<4xf32>) attributes {fuser.num_outputs = 1 : i64} {
// CHECK-NEXT:    %{{.*}} = sched.workspace zero_init : memref<64xf32>
// CHECK-NEXT:    %{{.*}} = sched.workspace : memref<8xi32>
// CHECK-NEXT:    sched.launch @k(%{{.*}}, %{{.*}}) : memref<4x256xf32>, memref<4xf32>
// CHECK-NEXT:    sched.launch @k(%{{.*}}, %{{.*}}) {fuser.dependent_launch} : memref<4x256xf32>, memref<4xf32>
// CHECK-NEXT:    func.return
