// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// fusion.alias declarations the compiler cannot honour: the verifier names the function, the
// result and the argument.

// CHECK: error: 'func.func' op @dtype result #0 has type tensor<4x8xf16>, but the argument it aliases, argument 0 ('%x'), has type tensor<4x8xf32>: an in-place output has its input's shape and element type
func.func @dtype(%x: tensor<4x8xf32>) -> (tensor<4x8xf16> {fusion.alias = 0 : i64}) {
  %y = fusion.cast %x : tensor<4x8xf32> to tensor<4x8xf16>
  func.return %y : tensor<4x8xf16>
}

// -----

// CHECK: error: 'func.func' op @shape result #0 has type tensor<4xf32>, but the argument it aliases, argument 0 ('%x'), has type tensor<4x8xf32>
func.func @shape(%x: tensor<4x8xf32>) -> (tensor<4xf32> {fusion.alias = 0 : i64}) {
  %y = fusion.reduce sum %x dims [1] : tensor<4x8xf32> to tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// CHECK: error: 'func.func' op @twice result #1 and result #0 both alias argument 0 ('%x'): an input can take one in-place output
func.func @twice(%x: tensor<4xf32>) -> (tensor<4xf32> {fusion.alias = 0 : i64}, tensor<4xf32> {fusion.alias = 0 : i64}) {
  %y = fusion.neg %x : tensor<4xf32>
  %z = fusion.abs %x : tensor<4xf32>
  func.return %y, %z : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK: error: 'func.func' op @expanded result #0 aliases argument 0 ('%x'), a stride-0 or overlapping view (fusion.strides [0, 1] of shape [4, 8]): several of its elements share one address, so it cannot be written in place
func.func @expanded(%x: tensor<4x8xf32> {fusion.strides = array<i64: 0, 1>}) -> (tensor<4x8xf32> {fusion.alias = 0 : i64}) {
  %y = fusion.neg %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// CHECK: error: 'func.func' op @transposed result #0 aliases argument 0 ('%x'), whose layout (fusion.strides [1, 4]) differs from the dense row-major result: an aliased input must be dense
func.func @transposed(%x: tensor<4x8xf32> {fusion.strides = array<i64: 1, 4>}) -> (tensor<4x8xf32> {fusion.alias = 0 : i64}) {
  %y = fusion.neg %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// CHECK: error: 'func.func' op @ordered result #0 aliases argument 0 ('%x') but declares fusion.stride_order: an in-place output is stored row-major, as its input is; drop the stride order
func.func @ordered(%x: tensor<4x8xf32>) -> (tensor<4x8xf32> {fusion.alias = 0 : i64, fusion.stride_order = array<i64: 1, 0>}) {
  %y = fusion.neg %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// CHECK: error: 'func.func' op @range result #0: fusion.alias = 3 names no argument (the function has 1)
func.func @range(%x: tensor<4xf32>) -> (tensor<4xf32> {fusion.alias = 3 : i64}) {
  %y = fusion.neg %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
