// RUN: not fuser-opt %s --split-input-file -p fusion-layouts 2>&1 | filecheck %s
// RUN: not fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched 2>&1 | filecheck %s --check-prefix=UNAPPLIED

// Declared layouts are checked by fusion-layouts, naming the function and the argument or result.

// CHECK: error: pass 'fusion-layouts' failed: @bad_strides argument 0 ('%x'): fusion.strides [1] has 1 entries for the 2-D view of shape [4, 8]
// UNAPPLIED: error: pass 'convert-fusion-to-sched' failed: @bad_strides argument 0 declares fusion.strides, which fusion-layouts applies: run it first (the named pipelines do)
func.func @bad_strides(%x: tensor<4x8xf32> {fusion.strides = array<i64: 1>}) -> tensor<4x8xf32> {
  func.return %x : tensor<4x8xf32>
}

// -----

// CHECK: error: pass 'fusion-layouts' failed: @negative argument 0 ('%x'): fusion.strides [-8, 1] and fusion.offset 24 must not be negative
func.func @negative(%x: tensor<4x8xf32> {fusion.strides = array<i64: -8, 1>, fusion.offset = 24 : i64}) -> tensor<4x8xf32> {
  func.return %x : tensor<4x8xf32>
}

// -----

// CHECK: error: pass 'fusion-layouts' failed: @bad_order result 0: fusion.stride_order [1, 1] is not a permutation of its 2 dims
// UNAPPLIED: error: pass 'convert-fusion-to-sched' failed: @bad_order result 0 declares fusion.stride_order, which fusion-layouts applies: run it first (the named pipelines do)
func.func @bad_order(%x: tensor<4x8xf32>) -> (tensor<4x8xf32> {fusion.stride_order = array<i64: 1, 1>}) {
  %y = fusion.neg %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// CHECK: error: pass 'fusion-layouts' failed: @offset_alone argument 0 ('%x'): fusion.offset or fusion.view without fusion.strides
func.func @offset_alone(%x: tensor<4x8xf32> {fusion.offset = 2 : i64}) -> tensor<4x8xf32> {
  func.return %x : tensor<4x8xf32>
}
