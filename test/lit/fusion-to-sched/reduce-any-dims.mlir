// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched | filecheck %s

// A middle dim: the outer scheduler reads [4, 5, 6] as the view [5, 4, 6] (5 rows into 24
// columns), so each thread owns a 2-element vector along the contiguous dim and loads it at the
// input's own index (a, b, c); the output is stored as a plain column reduction's.
// CHECK-LABEL: sched.kernel @middle_k0
// CHECK-SAME:    fuser.schedule = "outer reduction of a view permuted by [1, 0, 2]: 5 rows into 24 columns"
// CHECK:         sched.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<4x5x6xf32> -> vector<2xf32>
// CHECK:         sched.store %{{.*}} : f32, memref<4x6xf32>
// CHECK-NOT:   sched.kernel @middle_k1
func.func @middle(%x: tensor<4x5x6xf32>) -> tensor<4x6xf32> {
  %s = fusion.reduce sum %x dims [1] : tensor<4x5x6xf32> to tensor<4x6xf32>
  func.return %s : tensor<4x6xf32>
}

// -----
// Non-adjacent dims [1, 3] with the last one reduced: the inner scheduler reads the view
// [2, 4, 3, 5] (8 rows of 15), vectors along nothing but the contiguous dim; keepdim only
// reshapes the output.
// CHECK-LABEL: sched.kernel @two_dims_k0
// CHECK-SAME:    fuser.schedule = "inner reduction of a view permuted by [0, 2, 1, 3]: 8 rows of 15"
// CHECK:         sched.load %{{.*}} : memref<2x3x4x5xbf16> -> bf16
// CHECK:         arith.maximumf
// CHECK:         sched.store %{{.*}} : bf16, memref<2x1x4x1xbf16>
func.func @two_dims(%x: tensor<2x3x4x5xbf16>) -> tensor<2x1x4x1xbf16> {
  %m = fusion.reduce max %x dims [1, 3] keepdim : tensor<2x3x4x5xbf16> to tensor<2x1x4x1xbf16>
  func.return %m : tensor<2x1x4x1xbf16>
}

// -----
// The outer dims [0, 2] of a var_mean: Welford states over 3*33 elements per column; the
// segment record names the view too.
// CHECK-LABEL: sched.kernel @ends_k0
// CHECK-SAME:    fuser.schedule = "inner reduction of a view permuted by [1, 0, 2]: 7 rows of 99"
func.func @ends(%x: tensor<3x7x33xf32>) -> (tensor<7xf32>, tensor<7xf32>) {
  %v, %m = fusion.var_mean %x dims [0, 2] correction 1 : tensor<3x7x33xf32> to tensor<7xf32>, tensor<7xf32>
  func.return %v, %m : tensor<7xf32>, tensor<7xf32>
}
