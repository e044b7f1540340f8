// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// fusion.scatter's verifier: one error per chunk, naming the op and the operand at fault.

// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter' op dim 2 is out of range for rank 2
func.func @dim_out_of_range(%x: tensor<4x3xf32>, %i: tensor<5x3xi64>, %s: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %r = fusion.scatter %x, %i, %s dim 2 : tensor<4x3xf32>, tensor<5x3xi64>, tensor<5x3xf32> to tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter' op operand #1 ('index') has element type f32, expected i32 or i64
func.func @float_index(%x: tensor<4x3xf32>, %i: tensor<5x3xf32>, %s: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<5x3xf32>, tensor<5x3xf32> to tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter' op operand #2 ('src') has element type bf16, expected f32 (the input's)
func.func @src_type(%x: tensor<4x3xf32>, %i: tensor<5x3xi64>, %s: tensor<5x3xbf16>) -> tensor<4x3xf32> {
  %r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<5x3xi64>, tensor<5x3xbf16> to tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter' op operand #2 ('src') tensor<5x4xf32> is larger than the input tensor<4x3xf32> along dim 1
func.func @src_too_wide(%x: tensor<4x3xf32>, %i: tensor<5x4xi64>, %s: tensor<5x4xf32>) -> tensor<4x3xf32> {
  %r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<5x4xi64>, tensor<5x4xf32> to tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter' op operand #1 ('index') tensor<6x3xi64> must have src's rank and its extent 5 along dim 0
func.func @index_length(%x: tensor<4x3xf32>, %i: tensor<6x3xi64>, %s: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<6x3xi64>, tensor<5x3xf32> to tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// An index line is src's along the other dims, or shared (extent 1): index_add's.
// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter' op operand #1 ('index') tensor<5x2xi64> has extent 2 along its index line's dim 0: expected src's 3 or 1 (shared)
func.func @index_lines(%x: tensor<4x3xf32>, %i: tensor<5x2xi64>, %s: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %r = fusion.scatter %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<5x2xi64>, tensor<5x3xf32> to tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter' op 'add' takes no masks: operand #0 ('input') is tensor<4x3xi1>
func.func @add_masks(%x: tensor<4x3xi1>, %i: tensor<5x3xi64>, %s: tensor<5x3xi1>) -> tensor<4x3xi1> {
  %r = fusion.scatter %x, %i, %s dim 0 add : tensor<4x3xi1>, tensor<5x3xi64>, tensor<5x3xi1> to tensor<4x3xi1>
  func.return %r : tensor<4x3xi1>
}

// -----

// The sorted form: the order is the sort's i64 indices, of the sorted index's shape.
// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter' op operand #3 ('order') tensor<1x2x4xi32> must be i64 of the sorted index's shape [1, 2, 4]
func.func @order_type(%x: tensor<4x3xf32>, %i: tensor<1x2x4xi64>, %s: tensor<5x3xf32>, %o: tensor<1x2x4xi32>) -> tensor<4x3xf32> {
  %r = fusion.scatter %x, %i, %s, %o dim 0 add : tensor<4x3xf32>, tensor<1x2x4xi64>, tensor<5x3xf32>, tensor<1x2x4xi32> to tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter' op operand #1 ('index') tensor<1x3x4xi64>: 3 chunks of 4 do not cover the 5 index positions along dim 0 in as few chunks
func.func @chunks(%x: tensor<4x3xf32>, %i: tensor<1x3x4xi64>, %s: tensor<5x3xf32>, %o: tensor<1x3x4xi64>) -> tensor<4x3xf32> {
  %r = fusion.scatter %x, %i, %s, %o dim 0 add : tensor<4x3xf32>, tensor<1x3x4xi64>, tensor<5x3xf32>, tensor<1x3x4xi64> to tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// The atomic variant takes what red.global.add adds: f32, f64, i32, i64.
// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter_add_atomic' op operand #0 ('input') is tensor<4x3xbf16>: atomic adds take f32, f64, i32, i64 (fusion.scatter ... add takes every type)
func.func @atomic_bf16(%x: tensor<4x3xbf16>, %i: tensor<5x3xi64>, %s: tensor<5x3xbf16>) -> tensor<4x3xbf16> {
  %r = fusion.scatter_add_atomic %x, %i, %s dim 0 : tensor<4x3xbf16>, tensor<5x3xi64>, tensor<5x3xbf16> to tensor<4x3xbf16>
  func.return %r : tensor<4x3xbf16>
}

// -----

// CHECK: scatter-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scatter_add_atomic' op operand #1 ('index') tensor<6x3xi64> must have src's rank and its extent 5 along dim 0
func.func @atomic_index(%x: tensor<4x3xf32>, %i: tensor<6x3xi64>, %s: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %r = fusion.scatter_add_atomic %x, %i, %s dim 0 : tensor<4x3xf32>, tensor<6x3xi64>, tensor<5x3xf32> to tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}
