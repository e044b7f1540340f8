// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// fusion.scan's verifier: one error per chunk, naming the op and what is at fault.

// Only the innermost dim is scanned (the API permutes another one last).
// CHECK: scan-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scan' op scans dim 0 of tensor<3x4xf32>: only the innermost dim (1) is scanned; permute the input so that dim 0 is last
func.func @outer_dim(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = fusion.scan sum %x dim 0 : tensor<3x4xf32> to tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

// CHECK: scan-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scan' op dim 2 is out of range for tensor<3x4xf32>
func.func @dim_out_of_range(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = fusion.scan max %x dim 2 : tensor<3x4xf32> to tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

// CHECK: scan-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scan' op kind 'mean' is not one of sum, prod, max, min
func.func @bad_kind(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = fusion.scan mean %x dim 1 : tensor<3x4xf32> to tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

// CHECK: scan-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scan' op result 'result' has shape [3, 5], expected [3, 4] (the input's)
func.func @bad_shape(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %0 = fusion.scan sum %x dim 1 : tensor<3x4xf32> to tensor<3x5xf32>
  func.return %0 : tensor<3x5xf32>
}

// -----

// A running sum of integers is i64 (or the input's type, wrapped), as torch's cumsum.
// CHECK: scan-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scan' op sum of i8 has result element type i32, expected i64 or i8
func.func @int_sum_type(%x: tensor<3x4xi8>) -> tensor<3x4xi32> {
  %0 = fusion.scan sum %x dim 1 : tensor<3x4xi8> to tensor<3x4xi32>
  func.return %0 : tensor<3x4xi32>
}

// -----

// CHECK: scan-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scan' op max of bf16 has result element type f16, expected bf16 or f32
func.func @float_max_type(%x: tensor<3x4xbf16>) -> tensor<3x4xf16> {
  %0 = fusion.scan max %x dim 1 : tensor<3x4xbf16> to tensor<3x4xf16>
  func.return %0 : tensor<3x4xf16>
}

// -----

// A running sum of f64 is f64 (scanned in f64): no f32 result.
// CHECK: scan-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scan' op sum of f64 has result element type f32, expected f64
func.func @f64_input(%x: tensor<3x4xf64>) -> tensor<3x4xf32> {
  %0 = fusion.scan sum %x dim 1 : tensor<3x4xf64> to tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

// CHECK: scan-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.scan' op operand #0 ('input') is tensor<f32>: a scan takes a tensor of rank 1 or more
func.func @rank0(%x: tensor<f32>) -> tensor<f32> {
  %0 = fusion.scan sum %x dim 0 : tensor<f32> to tensor<f32>
  func.return %0 : tensor<f32>
}
