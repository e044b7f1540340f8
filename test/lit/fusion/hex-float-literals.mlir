// RUN: fuser-opt %s --split-input-file | filecheck %s
// RUN: fuser-opt %s --split-input-file | fuser-opt - --split-input-file | filecheck %s
// RUN: fuser-opt %s --split-input-file -p default -t ptx | filecheck %s --check-prefix=PTX

// As in MLIR, a hex integer literal in fusion.full's float position is the bit pattern of the
// element type (16 bits for f16 and bf16, 32 for f32), not the number it spells. It prints as
// the value; a NaN other than the plain quiet one keeps its pattern.

// CHECK-LABEL: func.func @bits
// CHECK: fusion.full inf : tensor<4xf32>
// CHECK: fusion.full -inf : tensor<4xf32>
// CHECK: fusion.full nan : tensor<4xf32>
// CHECK: fusion.full nan : tensor<4xbf16>
// CHECK: fusion.full 1.0 : tensor<4xf16>
// CHECK: fusion.full 0x7FC00001 : tensor<4xf32>
// CHECK: fusion.full 0xFFC00000 : tensor<4xf32>
// CHECK: fusion.full 0xFE01 : tensor<4xf16>
func.func @bits() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>) {
  %0 = fusion.full 0x7F800000 : tensor<4xf32>
  %1 = fusion.full 0xFF800000 : tensor<4xf32>
  %2 = fusion.full 0x7FC00000 : tensor<4xf32>
  %3 = fusion.full 0x7FC0 : tensor<4xbf16>
  %4 = fusion.full 0x3C00 : tensor<4xf16>
  %5 = fusion.full 0x7FC00001 : tensor<4xf32>
  %6 = fusion.full 0xFFC00000 : tensor<4xf32>
  %7 = fusion.full 0xFE01 : tensor<4xf16>
  func.return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>
}

// -----

// The kernel sees the value: x + inf.
// PTX: add.rn.f32 {{.*}}, 0f7F800000;
func.func @add_inf(%x: tensor<4xf32>) -> tensor<4xf32> {
  %i = fusion.full 0x7F800000 : tensor<4xf32>
  %y = fusion.add %x, %i : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
