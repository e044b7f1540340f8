// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The index-map shape ops (issue 32): slice, pad, cat, flip. Each error names the op and the
// operand, dim or list at fault.

// Steps are positive: a reversed dim is a fusion.flip.
// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.slice' op step -1 of dim 1 is not positive; reverse a dim with fusion.flip, then slice it
func.func @slice_negative_step(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = fusion.slice %x start [0, 9] stop [4, 0] step [1, -1] : tensor<4x10xf32> to tensor<4x10xf32>
  func.return %0 : tensor<4x10xf32>
}

// -----

// Bounds are normalized: 0 <= start <= stop <= extent.
// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.slice' op dim 1: start 2 and stop 11 must satisfy 0 <= start <= stop <= 10 (the operand's extent)
func.func @slice_past_end(%x: tensor<4x10xf32>) -> tensor<4x9xf32> {
  %0 = fusion.slice %x start [0, 2] stop [4, 11] step [1, 1] : tensor<4x10xf32> to tensor<4x9xf32>
  func.return %0 : tensor<4x9xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.slice' op result tensor<4x3xf32> should have shape [4, 4]
func.func @slice_shape(%x: tensor<4x10xf32>) -> tensor<4x3xf32> {
  %0 = fusion.slice %x start [0, 0] stop [4, 10] step [1, 3] : tensor<4x10xf32> to tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.slice' op start [0] has 1 entries; the operand has rank 2
func.func @slice_rank(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = fusion.slice %x start [0] stop [4, 10] step [1, 1] : tensor<4x10xf32> to tensor<4x10xf32>
  func.return %0 : tensor<4x10xf32>
}

// -----

// The pad value is a 0-d tensor of the operand's element type (generic form: the custom one derives it).
// CHECK: index-maps-invalid.mlir:[[# @LINE + 3]]:3: error: 'fusion.pad' op operand #1 ('value') has type tensor<f16>, expected tensor<f32>
func.func @pad_value_type(%x: tensor<4x5xf32>) -> tensor<5x5xf32> {
  %v = fusion.full 0.0 : tensor<f16>
  %0 = "fusion.pad"(%x, %v) <{low = array<i64: 1, 0>, high = array<i64: 0, 0>}> : (tensor<4x5xf32>, tensor<f16>) -> tensor<5x5xf32>
  func.return %0 : tensor<5x5xf32>
}

// -----

// A negative pad removes elements, at most the dim's extent.
// CHECK: index-maps-invalid.mlir:[[# @LINE + 3]]:3: error: 'fusion.pad' op dim 1: pads -6 and 7 remove more than its 5 elements
func.func @pad_removes_too_much(%x: tensor<4x5xf32>) -> tensor<4x6xf32> {
  %v = fusion.full 0.0 : tensor<f32>
  %0 = fusion.pad %x, %v low [0, -6] high [0, 7] : tensor<4x5xf32> to tensor<4x6xf32>
  func.return %0 : tensor<4x6xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 3]]:3: error: 'fusion.pad' op result tensor<4x5xf32> should have shape [5, 3]
func.func @pad_shape(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %v = fusion.full 0.0 : tensor<f32>
  %0 = fusion.pad %x, %v low [1, 0] high [0, -2] : tensor<4x5xf32> to tensor<4x5xf32>
  func.return %0 : tensor<4x5xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.cat' op operand #1 has shape [3, 4]; along dims other than 1 it must match the result tensor<2x7xf32>
func.func @cat_other_dims(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x7xf32> {
  %0 = fusion.cat %a, %b dim 1 : tensor<2x3xf32>, tensor<3x4xf32> to tensor<2x7xf32>
  func.return %0 : tensor<2x7xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.cat' op result extent 8 of dim 1 is not the operands' sum 7
func.func @cat_extent(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %0 = fusion.cat %a, %b dim 1 : tensor<2x3xf32>, tensor<2x4xf32> to tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.cat' op result element type f32 differs from operand #1's f16
func.func @cat_types(%a: tensor<2x3xf32>, %b: tensor<2x4xf16>) -> tensor<2x7xf32> {
  %0 = fusion.cat %a, %b dim 1 : tensor<2x3xf32>, tensor<2x4xf16> to tensor<2x7xf32>
  func.return %0 : tensor<2x7xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.cat' op dim 2 is out of range for rank 2
func.func @cat_dim(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = fusion.cat %a dim 2 : tensor<2x3xf32> to tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.flip' op dims [1, 1] has repeated entries
func.func @flip_repeated(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = fusion.flip %x dims [1, 1] : tensor<4x5xf32> to tensor<4x5xf32>
  func.return %0 : tensor<4x5xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.flip' op result type tensor<5x4xf32> must equal the operand's tensor<4x5xf32>
func.func @flip_type(%x: tensor<4x5xf32>) -> tensor<5x4xf32> {
  %0 = fusion.flip %x dims [0] : tensor<4x5xf32> to tensor<5x4xf32>
  func.return %0 : tensor<5x4xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.gather' op operand #1 ('index') has element type f32, expected i32 or i64
func.func @gather_float_index(%x: tensor<4x10xf32>, %i: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = fusion.gather %x, %i dim 1 : tensor<4x10xf32>, tensor<4x2xf32> to tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

// take_along_axis: the index matches the input in every other dim.
// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.gather' op operand #1 ('index') tensor<3x2xi64> must match the input tensor<4x10xf32> in every dim but 1
func.func @gather_shape(%x: tensor<4x10xf32>, %i: tensor<3x2xi64>) -> tensor<3x2xf32> {
  %0 = fusion.gather %x, %i dim 1 : tensor<4x10xf32>, tensor<3x2xi64> to tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.index_select' op operand #1 ('index') tensor<2x3xi32> must be 1-D
func.func @index_select_rank(%x: tensor<4x10xf32>, %i: tensor<2x3xi32>) -> tensor<6x10xf32> {
  %0 = fusion.index_select %x, %i dim 0 : tensor<4x10xf32>, tensor<2x3xi32> to tensor<6x10xf32>
  func.return %0 : tensor<6x10xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.index_select' op result tensor<4x7xbf16> should have shape [4, 6]
func.func @index_select_shape(%x: tensor<4x10xbf16>, %i: tensor<6xi64>) -> tensor<4x7xbf16> {
  %0 = fusion.index_select %x, %i dim 1 : tensor<4x10xbf16>, tensor<6xi64> to tensor<4x7xbf16>
  func.return %0 : tensor<4x7xbf16>
}

// -----

// fusion.as_strided (issue 32) reads a 1-D storage.
// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.as_strided' op operand #0 ('input') tensor<4x8xf32> must be a 1-D storage tensor
func.func @as_strided_2d(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = fusion.as_strided %x strides [1, 8] offset 0 : tensor<4x8xf32> to tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.as_strided' op strides [1] has 1 entries; the result tensor<8x4xf32> has rank 2
func.func @as_strided_rank(%x: tensor<32xf32>) -> tensor<8x4xf32> {
  %0 = fusion.as_strided %x strides [1] offset 0 : tensor<32xf32> to tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.as_strided' op the view tensor<8x4xf32> with strides [1, 8] at offset 1 reaches storage element 32, past operand #0 ('input') tensor<32xf32>
func.func @as_strided_past_end(%x: tensor<32xf32>) -> tensor<8x4xf32> {
  %0 = fusion.as_strided %x strides [1, 8] offset 1 : tensor<32xf32> to tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.as_strided' op strides [-1, 8] and offset 7 must not be negative
func.func @as_strided_negative(%x: tensor<32xf32>) -> tensor<8x4xf32> {
  %0 = fusion.as_strided %x strides [-1, 8] offset 7 : tensor<32xf32> to tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

// CHECK: index-maps-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.as_strided' op result element type f16 differs from the operand's f32
func.func @as_strided_type(%x: tensor<32xf32>) -> tensor<8x4xf16> {
  %0 = fusion.as_strided %x strides [4, 1] offset 0 : tensor<32xf32> to tensor<8x4xf16>
  func.return %0 : tensor<8x4xf16>
}
