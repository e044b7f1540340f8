// RUN: fuser-opt %s --split-input-file --verify-diagnostics

// fusion.full's hex float literal (valid ones: hex-float-literals.mlir): a pattern wider than
// the element type, a sign, or an element type with no float format are errors.

func.func @wide() -> tensor<4xbf16> {
  // expected-error@+1 {{hexadecimal float literal 0x7F800000 does not fit the 16 bits of bf16}}
  %0 = fusion.full 0x7F800000 : tensor<4xbf16>
  func.return %0 : tensor<4xbf16>
}

// -----

func.func @neg() -> tensor<4xf32> {
  // expected-error@+1 {{a hexadecimal float literal is a bit pattern and takes no '-'}}
  %0 = fusion.full -0x7F800000 : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @int() -> tensor<4xi32> {
  // expected-error@+1 {{a hexadecimal float literal needs a float element type, got i32}}
  %0 = fusion.full 0x1 : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}
