// RUN: fuser-opt %s -p to-sched | filecheck %s
// RUN: fuser-opt %s -p 'canonicalize,fusion-segment,convert-fusion-to-sched' | filecheck %s --check-prefix=ACCURATE

// In the default pipelines an exp rounded to bf16 is 2^(x log2 e) (math.exp2: ex2.approx);
// without fusion-approx-exp it is math.exp (fuser's accurate f32 helper).
// CHECK:     %[[L:.*]] = arith.constant 1.44269502 : f32
// CHECK:     %[[T:.*]] = arith.mulf %{{.*}}, %[[L]] : f32
// CHECK:     math.exp2 %[[T]] : f32
// CHECK-NOT: math.exp %
// ACCURATE:     math.exp %{{.*}} : f32
// ACCURATE-NOT: math.exp2
func.func @narrow_exp(%x: tensor<64xbf16>) -> tensor<64xbf16> {
  %y = fusion.exp %x : tensor<64xbf16>
  func.return %y : tensor<64xbf16>
}
