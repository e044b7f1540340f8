// RUN: not fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched 2>&1 | filecheck %s

// Without fusion-fold-empty (the default pipelines run it first: test/lit/fusion-fold-empty),
// an op that reads or makes a tensor with no elements is refused, naming the value (a kernel
// over it would launch an empty grid); tensors past 2^31 elements compile
// (test/lit/nvvm/huge-tensor.mlir).
// CHECK: empty.mlir:[[# @LINE + 2]]:3: error: pass 'fusion-segment' failed: %x is tensor<0x8xf32>, a tensor with no elements, read or made by 'fusion.relu': run fusion-fold-empty first (the default pipelines do), which folds such values away
func.func @z(%x: tensor<0x8xf32>) -> tensor<0x8xf32> {
  %y = fusion.relu %x : tensor<0x8xf32>
  func.return %y : tensor<0x8xf32>
}

// -----
// CHECK: empty.mlir:[[# @LINE + 2]]:3: error: pass 'fusion-segment' failed: %x is tensor<0x8xf32>, a tensor with no elements, read or made by 'fusion.reduce'
func.func @zr(%x: tensor<0x8xf32>) -> tensor<8xf32> {
  %y = fusion.reduce sum %x dims [0] : tensor<0x8xf32> to tensor<8xf32>
  func.return %y : tensor<8xf32>
}
