// RUN: fuser-opt %s --split-input-file --verify-diagnostics -p fusion-segment,convert-fusion-to-sched | filecheck %s

// CHECK: errors.mlir:[[# @LINE + 2]]:3: error: pass 'convert-fusion-to-sched' failed: 'fusion.matmul' operands are f32; the Hopper matmul takes bf16 or f16
func.func @mm(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %c = fusion.matmul %a, %b : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  func.return %c : tensor<64x16xf32>
}
