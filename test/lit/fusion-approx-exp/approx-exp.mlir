// RUN: fuser-opt %s --split-input-file -p fusion-approx-exp | filecheck %s

// An exp of bf16 is rounded to bf16 at once: marked.
// CHECK-LABEL: func.func @narrow_exp
// CHECK-NEXT:    %y = fusion.exp %x {fuser.approx} : tensor<64xbf16>
func.func @narrow_exp(%x: tensor<64xbf16>) -> tensor<64xbf16> {
  %y = fusion.exp %x : tensor<64xbf16>
  func.return %y : tensor<64xbf16>
}

// -----

// An f32 exp read only through arithmetic, a broadcast's value and a where's value, into a cast
// to f16: marked.
// CHECK-LABEL: func.func @into_a_cast
// CHECK-NEXT:    %e = fusion.exp %x {fuser.approx} : tensor<4x64xf32>
func.func @into_a_cast(%x: tensor<4x64xf32>, %s: tensor<4xf32>, %m: tensor<4x64xi1>) -> tensor<4x64xf16> {
  %e = fusion.exp %x : tensor<4x64xf32>
  %b = fusion.broadcast %s dims [1] : tensor<4xf32> to tensor<4x64xf32>
  %d = fusion.div %e, %b : tensor<4x64xf32>
  %z = fusion.full 0.0 : tensor<4x64xf32>
  %w = fusion.where %m, %d, %z : tensor<4x64xf32>
  %n = fusion.neg %w : tensor<4x64xf32>
  %c = fusion.cast %n : tensor<4x64xf32> to tensor<4x64xf16>
  func.return %c : tensor<4x64xf16>
}

// -----

// A softmax's exp: its sum keeps the accurate exp; the bf16 output reads a marked copy.
// CHECK-LABEL: func.func @softmax
// CHECK:         %e = fusion.exp %z : tensor<4x64xf32>
// CHECK-NEXT:    %e_approx = fusion.exp %z {fuser.approx} : tensor<4x64xf32>
// CHECK-NEXT:    %s = fusion.reduce sum %e dims [1]
// CHECK:         %p = fusion.div %e_approx, %b : tensor<4x64xf32>
func.func @softmax(%x: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  %xf = fusion.cast %x : tensor<4x64xbf16> to tensor<4x64xf32>
  %mx = fusion.reduce max %xf dims [1] : tensor<4x64xf32> to tensor<4xf32>
  %mb = fusion.broadcast %mx dims [1] : tensor<4xf32> to tensor<4x64xf32>
  %z = fusion.sub %xf, %mb : tensor<4x64xf32>
  %e = fusion.exp %z : tensor<4x64xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<4x64xf32> to tensor<4xf32>
  %b = fusion.broadcast %s dims [1] : tensor<4xf32> to tensor<4x64xf32>
  %p = fusion.div %e, %b : tensor<4x64xf32>
  %y = fusion.cast %p : tensor<4x64xf32> to tensor<4x64xbf16>
  func.return %y : tensor<4x64xbf16>
}

// -----

// Read unrounded: returned as f32, compared, reduced, cast to an integer, or through an op that
// may amplify its error (log): left accurate. An f64 exp is never marked.
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     fuser.approx
// CHECK:         func.return
func.func @kept(%x: tensor<64xf32>, %d: tensor<64xf64>) -> (tensor<64xf32>, tensor<64xi1>, tensor<f32>, tensor<64xi32>, tensor<64xbf16>, tensor<64xf64>) {
  %a = fusion.exp %x : tensor<64xf32>
  %b = fusion.exp %x : tensor<64xf32>
  %one = fusion.full 1.0 : tensor<64xf32>
  %c = fusion.cmp gt, %b, %one : tensor<64xf32>
  %e = fusion.exp %x : tensor<64xf32>
  %s = fusion.reduce sum %e dims [0] : tensor<64xf32> to tensor<f32>
  %f = fusion.exp %x : tensor<64xf32>
  %i = fusion.cast %f : tensor<64xf32> to tensor<64xi32>
  %g = fusion.exp %x : tensor<64xf32>
  %l = fusion.log %g : tensor<64xf32>
  %lb = fusion.cast %l : tensor<64xf32> to tensor<64xbf16>
  %h = fusion.exp %d : tensor<64xf64>
  func.return %a, %c, %s, %i, %lb, %h : tensor<64xf32>, tensor<64xi1>, tensor<f32>, tensor<64xi32>, tensor<64xbf16>, tensor<64xf64>
}
