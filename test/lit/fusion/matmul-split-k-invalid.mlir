// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the split-K matmul (k_chunk): each names the op and what was expected.

// S must be ceil(K / k_chunk): ceil(4096 / 1024) = 4, not 3.
// CHECK: matmul-split-k-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op result has shape [3, 128, 32], expected [4, 128, 32] (S = ceil(K / k_chunk) = ceil(4096 / 1024) partial products of 128x32)
func.func @wrong_s(%a: tensor<128x4096xbf16>, %b: tensor<4096x32xbf16>) -> tensor<3x128x32xf32> {
  %p = fusion.matmul %a, %b k_chunk 1024 : tensor<128x4096xbf16>, tensor<4096x32xbf16> -> tensor<3x128x32xf32>
  func.return %p : tensor<3x128x32xf32>
}

// -----

// The split form keeps the S axis even when S = 1.
// CHECK: matmul-split-k-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op result has shape [128, 32], expected [1, 128, 32] (S = ceil(K / k_chunk) = ceil(64 / 64) partial products of 128x32)
func.func @no_s_axis(%a: tensor<128x64xbf16>, %b: tensor<64x32xbf16>) -> tensor<128x32xf32> {
  %p = fusion.matmul %a, %b k_chunk 64 : tensor<128x64xbf16>, tensor<64x32xbf16> -> tensor<128x32xf32>
  func.return %p : tensor<128x32xf32>
}

// -----

// CHECK: matmul-split-k-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op k_chunk must be positive, got 0
func.func @zero_chunk(%a: tensor<128x64xbf16>, %b: tensor<64x32xbf16>) -> tensor<1x128x32xf32> {
  %p = fusion.matmul %a, %b k_chunk 0 : tensor<128x64xbf16>, tensor<64x32xbf16> -> tensor<1x128x32xf32>
  func.return %p : tensor<1x128x32xf32>
}

// -----

// CHECK: matmul-split-k-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op k_chunk must be positive, got -64
func.func @negative_chunk(%a: tensor<128x64xbf16>, %b: tensor<64x32xbf16>) -> tensor<1x128x32xf32> {
  %p = fusion.matmul %a, %b k_chunk -64 : tensor<128x64xbf16>, tensor<64x32xbf16> -> tensor<1x128x32xf32>
  func.return %p : tensor<1x128x32xf32>
}

// -----

// Partial products are f32: rounding each one to bf16 would lose what the sum needs.
// CHECK: matmul-split-k-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op with k_chunk has element type bf16; its partial products must be f32 (cast after the fusion.reduce sum)
func.func @bf16_partials(%a: tensor<128x256xbf16>, %b: tensor<256x32xbf16>) -> tensor<2x128x32xbf16> {
  %p = fusion.matmul %a, %b k_chunk 128 : tensor<128x256xbf16>, tensor<256x32xbf16> -> tensor<2x128x32xbf16>
  func.return %p : tensor<2x128x32xbf16>
}

// -----

// CHECK: matmul-split-k-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op 'serial' needs a k_chunk (it says how the split K is reduced)
func.func @serial_no_chunk(%a: tensor<128x64xbf16>, %b: tensor<64x32xbf16>) -> tensor<128x32xf32> {
  %p = fusion.matmul %a, %b serial : tensor<128x64xbf16>, tensor<64x32xbf16> -> tensor<128x32xf32>
  func.return %p : tensor<128x32xf32>
}

// -----

// The serial form's result is the product, not the partials.
// CHECK: matmul-split-k-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op result has shape [4, 128, 32], expected [128, 32]
func.func @serial_partials(%a: tensor<128x4096xbf16>, %b: tensor<4096x32xbf16>) -> tensor<4x128x32xf32> {
  %p = fusion.matmul %a, %b k_chunk 1024 serial : tensor<128x4096xbf16>, tensor<4096x32xbf16> -> tensor<4x128x32xf32>
  func.return %p : tensor<4x128x32xf32>
}
