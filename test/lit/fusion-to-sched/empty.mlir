// RUN: not fuser-opt %s --split-input-file -p to-sched 2>&1 | filecheck %s

// Zero-size tensors are refused with the value that has no elements (a zero-extent launch
// would be an empty grid); tensors past 2^31 elements compile (test/lit/nvvm/huge-tensor.mlir).
// CHECK: empty.mlir:[[# @LINE + 1]]:1: error: pass 'convert-fusion-to-sched' failed: %x is tensor<0x8xf32>, a tensor with no elements: fuser compiles fusions over non-empty tensors (an empty input needs no kernel)
func.func @z(%x: tensor<0x8xf32>) -> tensor<0x8xf32> {
  %y = fusion.relu %x : tensor<0x8xf32>
  func.return %y : tensor<0x8xf32>
}

// -----
// A reduction over an empty dimension is refused the same way (its input has no elements).
// CHECK: empty.mlir:[[# @LINE + 1]]:1: error: pass 'convert-fusion-to-sched' failed: %x is tensor<0x8xf32>, a tensor with no elements
func.func @zr(%x: tensor<0x8xf32>) -> tensor<8xf32> {
  %y = fusion.reduce sum %x dims [0] : tensor<0x8xf32> to tensor<8xf32>
  func.return %y : tensor<8xf32>
}
