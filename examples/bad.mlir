// A fusion the verifier refuses: fusion.mul takes operands of one type (broadcasts and casts
// are explicit). `fuser-opt examples/bad.mlir` prints the error below and exits 1;
// `fuser-opt examples/bad.mlir --verify-diagnostics` checks it against the annotation and exits 0.
func.func @bad(%x: tensor<3x4xf32>, %y: tensor<3x4xf16>) -> tensor<3x4xf32> {
  // expected-error@+1 {{'fusion.mul' op operand #1 ('rhs') has type tensor<3x4xf16>, expected tensor<3x4xf32>}}
  %z = "fusion.mul"(%x, %y) : (tensor<3x4xf32>, tensor<3x4xf16>) -> tensor<3x4xf32>
  func.return %z : tensor<3x4xf32>
}
