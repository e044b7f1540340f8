// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s --split-input-file -p default -t llvm | filecheck %s --check-prefix=LLVM

// Reductions of issue 31. Integer sums and products accumulate in i64 (the loop carries i64
// states, partials cross lanes as two 32-bit shuffles and sit in i64 shared memory), max/min
// of integers compare the widened i64 signed (a u8 widened by zeros); any/all fold the nonzero
// test (NaN is nonzero: `une`) into an i32 of 0 or 1; argmax carries (value, i64 index) and
// takes the other state where it is NaN against a number, larger, or equal and earlier.

// ROUND: fusion.reduce sum %x dims [1] : tensor<37x1000xi8> to tensor<37xi64>

// CHECK-LABEL: sched.kernel @int_sum_k0
// CHECK: arith.extsi %{{.*}} : i8 to i64
// CHECK: arith.addi %{{.*}}, %{{.*}} : i64
// CHECK: sched.shfl_xor %{{.*}}, 16 : i64
func.func @int_sum(%x: tensor<37x1000xi8>) -> tensor<37xi64> {
  %0 = fusion.reduce sum %x dims [1] : tensor<37x1000xi8> to tensor<37xi64>
  func.return %0 : tensor<37xi64>
}

// LLVM-LABEL: define ptx_kernel void @int_sum_k0
// LLVM: trunc i64 %{{.*}} to i32
// LLVM: lshr i64 %{{.*}}, 32
// LLVM: call i32 @llvm.nvvm.shfl.sync.bfly.i32
// LLVM: call i32 @llvm.nvvm.shfl.sync.bfly.i32
// LLVM: shl i64 %{{.*}}, 32
// LLVM: or i64

// -----

// Few long rows: the chunks' partial states go through an i64 workspace.
// CHECK-LABEL: sched.kernel @split_prod_k0(%{{.*}} : memref<3x1000003xui8>, %{{.*}} : memref<1x3x{{[0-9]+}}xi64>)
// CHECK: arith.extui %{{.*}} : i8 to i64
// CHECK: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: %warp_partials = sched.alloc : memref<{{[0-9]+}}xi64, 3 : i64>
// CHECK-LABEL: sched.kernel @split_prod_k1
// CHECK: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.trunci %{{.*}} : i64 to i8
// CHECK: func.func @split_prod
// CHECK: sched.workspace : memref<1x3x{{[0-9]+}}xi64>
func.func @split_prod(%x: tensor<3x1000003xui8>) -> tensor<3xui8> {
  %0 = fusion.reduce prod %x dims [1] : tensor<3x1000003xui8> to tensor<3xui8>
  func.return %0 : tensor<3xui8>
}

// -----

// CHECK-LABEL: sched.kernel @column_any_k0
// CHECK: %[[NZ:.*]] = arith.cmpf une, %{{.*}}, %{{.*}} : f32
// CHECK: arith.extui %[[NZ]] : i1 to i32
// CHECK: arith.ori %{{.*}}, %{{.*}} : i32
// CHECK: %column_partials = sched.alloc : memref<{{[0-9]+}}x{{[0-9]+}}xi32, 3 : i64>
// CHECK: arith.cmpi ne, %{{.*}}, %{{.*}} : i32
func.func @column_any(%x: tensor<1027x33xbf16>) -> tensor<33xi1> {
  %0 = fusion.reduce any %x dims [0] : tensor<1027x33xbf16> to tensor<33xi1>
  func.return %0 : tensor<33xi1>
}

// -----

// CHECK-LABEL: sched.kernel @row_max_k0
// CHECK: arith.extsi %{{.*}} : i16 to i64
// CHECK: arith.maxsi %{{.*}}, %{{.*}} : i64
// CHECK: arith.trunci %{{.*}} : i64 to i16
func.func @row_max(%x: tensor<64x300xi16>) -> tensor<64xi16> {
  %0 = fusion.reduce max %x dims [1] : tensor<64x300xi16> to tensor<64xi16>
  func.return %0 : tensor<64xi16>
}

// -----

// argmax over all dims: the element's position is its index in the flattened row.
// CHECK-LABEL: sched.kernel @arg_k0
// CHECK-DAG: %[[BN:.*]] = arith.cmpf uno, %[[B:.*]], %[[B]] : f32
// CHECK-DAG: %[[AN:.*]] = arith.cmpf uno, %[[A:.*]], %[[A]] : f32
// CHECK-DAG: arith.cmpf ogt, %[[B]], %[[A]] : f32
// CHECK-DAG: arith.cmpf oeq, %[[B]], %[[A]] : f32
// CHECK-DAG: arith.cmpi slt, %{{.*}}, %{{.*}} : i64
// CHECK: arith.select %{{.*}}, %[[B]], %[[A]] : f32
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : i64
// CHECK: sched.shfl_xor %{{.*}}, 16 : f32
// CHECK: sched.shfl_xor %{{.*}}, 16 : i64
// CHECK-DAG: %warp_partials = sched.alloc : memref<{{[0-9]+}}xf32, 3 : i64>
// CHECK-DAG: %warp_partials_i64 = sched.alloc : memref<{{[0-9]+}}xi64, 3 : i64>
func.func @arg(%x: tensor<33x31xf32>) -> tensor<i64> {
  %0 = fusion.reduce argmax %x dims [0, 1] : tensor<33x31xf32> to tensor<i64>
  func.return %0 : tensor<i64>
}
