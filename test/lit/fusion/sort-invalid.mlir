// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// fusion.sort's verifier: one error per chunk, naming the op and what is at fault.

// Only the innermost dim is sorted (the API permutes another one last).
// CHECK: sort-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.sort' op sorts dim 0 of tensor<3x4xf32>: only the innermost dim (1) is sorted; permute the input so that dim 0 is last
func.func @outer_dim(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xi64>) {
  %v, %i = fusion.sort %x dim 0 : tensor<3x4xf32> to tensor<3x4xf32>, tensor<3x4xi64>
  func.return %v, %i : tensor<3x4xf32>, tensor<3x4xi64>
}

// -----

// CHECK: sort-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.sort' op dim 2 is out of range for tensor<3x4xf32>
func.func @dim_out_of_range(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xi64>) {
  %v, %i = fusion.sort %x dim 2 : tensor<3x4xf32> to tensor<3x4xf32>, tensor<3x4xi64>
  func.return %v, %i : tensor<3x4xf32>, tensor<3x4xi64>
}

// -----

// topk's k is at most the row's length.
// CHECK: sort-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.sort' op k 5 is out of range for operand #0 ('input') tensor<3x4xf32>: k must be in [0, 4] (the sorted dim's extent)
func.func @k_too_large(%x: tensor<3x4xf32>) -> (tensor<3x5xf32>, tensor<3x5xi64>) {
  %v, %i = fusion.sort %x dim 1 descending k 5 : tensor<3x4xf32> to tensor<3x5xf32>, tensor<3x5xi64>
  func.return %v, %i : tensor<3x5xf32>, tensor<3x5xi64>
}

// -----

// CHECK: sort-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.sort' op result #0 ('values') has shape [3, 4], expected [3, 2] (the input's with k along the sorted dim)
func.func @k_shape(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xi64>) {
  %v, %i = fusion.sort %x dim 1 k 2 : tensor<3x4xf32> to tensor<3x4xf32>, tensor<3x4xi64>
  func.return %v, %i : tensor<3x4xf32>, tensor<3x4xi64>
}

// -----

// The indices are i64, as torch's.
// CHECK: sort-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.sort' op result #1 ('indices') has element type i32, expected i64
func.func @index_type(%x: tensor<3x4xi8>) -> (tensor<3x4xi8>, tensor<3x4xi32>) {
  %v, %i = fusion.sort %x dim 1 : tensor<3x4xi8> to tensor<3x4xi8>, tensor<3x4xi32>
  func.return %v, %i : tensor<3x4xi8>, tensor<3x4xi32>
}

// -----

// CHECK: sort-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.sort' op result #0 ('values') has element type f16, expected bf16 (the input's)
func.func @value_type(%x: tensor<3x4xbf16>) -> (tensor<3x4xf16>, tensor<3x4xi64>) {
  %v, %i = fusion.sort %x dim 1 : tensor<3x4xbf16> to tensor<3x4xf16>, tensor<3x4xi64>
  func.return %v, %i : tensor<3x4xf16>, tensor<3x4xi64>
}

// -----

// CHECK: sort-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.sort' op operand #0 ('input') is tensor<f32>: a sort takes a tensor of rank 1 or more
func.func @zero_d(%x: tensor<f32>) -> (tensor<f32>, tensor<i64>) {
  %v, %i = fusion.sort %x dim 0 : tensor<f32> to tensor<f32>, tensor<i64>
  func.return %v, %i : tensor<f32>, tensor<i64>
}
