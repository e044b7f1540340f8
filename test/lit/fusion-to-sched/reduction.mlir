// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched | filecheck %s

// Inner (row) reduction with a fused pointwise prologue: one block of 256 threads per row,
// vector loads along the row, warp shuffles, then a shared-memory step across the 8 warps.
// CHECK-LABEL: sched.kernel @row_sum_k0
// CHECK-SAME:    grid [512, 1, 1] block [256, 1, 1]
// CHECK:         sched.for bind(thread.x) {{.*}} iter_args
// CHECK:           sched.load {{.*}} -> vector<4xf32>
// CHECK:           math.exp
// CHECK:         sched.shfl_xor %{{.*}}, 16 : f32
// CHECK:         sched.alloc : memref<8xf32, 3 : i64>
// CHECK:         sched.barrier
// CHECK:         scf.if
// CHECK-NEXT:      sched.store {{.*}} : f32, memref<512xf32>
func.func @row_sum(%x: tensor<512x4096xf32>) -> tensor<512xf32> {
  %e = fusion.exp %x : tensor<512x4096xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<512x4096xf32> to tensor<512xf32>
  func.return %s : tensor<512xf32>
}

// -----
// Short rows: several rows per block (block [64, 4, 1]).
// CHECK-LABEL: sched.kernel @short_rows_k0
// CHECK-SAME:    block [64, 4, 1]
func.func @short_rows(%x: tensor<262144x1024xf32>) -> tensor<262144xf32> {
  %s = fusion.reduce sum %x dims [1] : tensor<262144x1024xf32> to tensor<262144xf32>
  func.return %s : tensor<262144xf32>
}

// -----
// One very long row: split into chunks; partial states go to a workspace [state, row, chunk],
// a second kernel merges them.
// CHECK-LABEL: sched.kernel @total_k0
// CHECK-SAME:    grid [1, {{[0-9]+}}, 1]
// CHECK:       sched.kernel @total_k1
// CHECK:       func.func @total
// CHECK:         %[[WS:.*]] = sched.workspace : memref<1x1x{{[0-9]+}}xf32>
// CHECK:         sched.launch @total_k0(%{{.*}}, %[[WS]])
// CHECK:         sched.launch @total_k1(%{{.*}}, %[[WS]])
func.func @total(%x: tensor<16777216xf32>) -> tensor<f32> {
  %s = fusion.reduce sum %x dims [0] : tensor<16777216xf32> to tensor<f32>
  func.return %s : tensor<f32>
}

// -----
// Outer (column) reduction: threads own column vectors and walk rows (bind(thread.y)).
// CHECK-LABEL: sched.kernel @col_max_k0
// CHECK:         sched.for bind(thread.y)
// CHECK:           arith.maximumf
// CHECK:         sched.barrier
func.func @col_max(%x: tensor<4096x1024xf32>) -> tensor<1024xf32> {
  %s = fusion.reduce max %x dims [0] : tensor<4096x1024xf32> to tensor<1024xf32>
  func.return %s : tensor<1024xf32>
}

// -----
// A pointwise output of the reduced shape is computed in the reduction kernel's epilogue:
// one kernel, storing both results.
// CHECK-LABEL: sched.kernel @epilogue_k0
// CHECK:         scf.if
// CHECK:           sched.store {{.*}} memref<64x1xf32>
// CHECK:           arith.mulf
// CHECK:           sched.store {{.*}} memref<64x1xf32>
// CHECK-NOT:   sched.kernel @epilogue_k1
func.func @epilogue(%x: tensor<64x100xf32>) -> (tensor<64x1xf32>, tensor<64x1xf32>) {
  %m = fusion.reduce max %x dims [1] keepdim : tensor<64x100xf32> to tensor<64x1xf32>
  %two = fusion.full 2.0 : tensor<64x1xf32>
  %y = fusion.mul %m, %two : tensor<64x1xf32>
  func.return %m, %y : tensor<64x1xf32>, tensor<64x1xf32>
}
