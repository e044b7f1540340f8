// RUN: not fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched 2>&1 | filecheck %s

// A segment that names a scheduler that does not take its ops: the error names both.
// CHECK: errors.mlir:[[# @LINE + 2]]:3: error: pass 'convert-fusion-to-sched' failed: fusion.segment names the 'normalization' scheduler, but its ops are a 'reduction' task
func.func @wrong_scheduler(%x: tensor<64x32xf32>) -> tensor<64xf32> {
  %s = fusion.segment "normalization" (%xs = %x : tensor<64x32xf32>) -> (tensor<64xf32>) {
    %r = fusion.reduce sum %xs dims [1] : tensor<64x32xf32> to tensor<64xf32>
    fusion.yield %r : tensor<64xf32>
  }
  func.return %s : tensor<64xf32>
}

// -----
// A named segment holding two kernel tasks is not split behind the user's back.
// CHECK: errors.mlir:[[# @LINE + 2]]:3: error: pass 'convert-fusion-to-sched' failed: fusion.segment "reduction" holds 2 kernel tasks (reduction, reduction); a segment is one scheduler's task: split it, or drop its scheduler name so that fusion-segment splits it
func.func @two_tasks(%x: tensor<64x32xf32>, %y: tensor<64x32xf32>) -> (tensor<64xf32>, tensor<32xf32>) {
  %a, %b = fusion.segment "reduction" (%xs = %x : tensor<64x32xf32>, %ys = %y : tensor<64x32xf32>) -> (tensor<64xf32>, tensor<32xf32>) {
    %r = fusion.reduce sum %xs dims [1] : tensor<64x32xf32> to tensor<64xf32>
    %c = fusion.reduce max %ys dims [0] : tensor<64x32xf32> to tensor<32xf32>
    fusion.yield %r, %c : tensor<64xf32>, tensor<32xf32>
  }
  func.return %a, %b : tensor<64xf32>, tensor<32xf32>
}
