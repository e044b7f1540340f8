// RUN: fuser-opt %s --split-input-file --verify-diagnostics -p fusion-segment,convert-fusion-to-sched | filecheck %s

// CHECK: errors.mlir:[[# @LINE + 2]]:3: error: pass 'convert-fusion-to-sched' failed: 'fusion.matmul' operands are f32; the Hopper matmul takes bf16, f16, f8E4M3FN or f8E5M2 (cast them first)
func.func @mm(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %c = fusion.matmul %a, %b : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  func.return %c : tensor<64x16xf32>
}

// -----

// FP8 wgmmas read both operands K-major: B stored [K, N] is refused with the layout to use.
// CHECK: errors.mlir:[[# @LINE + 2]]:3: error: pass 'convert-fusion-to-sched' failed: 'fusion.matmul' on f8e4m3fn: operand #1 ('b') is stored [K, N], but FP8 wgmmas read both operands K-major: store A as [M, K] and B as [N, K] (transpose_b), as torch._scaled_mm takes them
func.func @mm8(%a: tensor<64x128xf8E4M3FN>, %b: tensor<128x32xf8E4M3FN>) -> tensor<64x32xf32> {
  %c = fusion.matmul %a, %b : tensor<64x128xf8E4M3FN>, tensor<128x32xf8E4M3FN> -> tensor<64x32xf32>
  func.return %c : tensor<64x32xf32>
}

// -----

// CHECK: errors.mlir:[[# @LINE + 2]]:3: error: pass 'convert-fusion-to-sched' failed: 'fusion.matmul' on f8e5m2: operand #0 ('a') is stored [K, M] (transpose_a), but FP8 wgmmas read both operands K-major
func.func @mm8t(%a: tensor<128x64xf8E5M2>, %b: tensor<32x128xf8E5M2>) -> tensor<64x32xf32> {
  %c = fusion.matmul %a, %b transpose_a transpose_b : tensor<128x64xf8E5M2>, tensor<32x128xf8E5M2> -> tensor<64x32xf32>
  func.return %c : tensor<64x32xf32>
}
