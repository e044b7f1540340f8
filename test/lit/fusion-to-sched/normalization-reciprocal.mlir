// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s

// A division by a row statistic the persistent kernel holds in registers (softmax's sum) is
// its reciprocal once and a multiply per element, not a division per element (div.rn.f32 is
// about ten instructions; the cross-entropy row over 50257 columns is bound by instructions).
// A division by anything else stays a division (correctly rounded, as torch.div).

// CHECK-LABEL: sched.kernel @softmax_k0
// CHECK: math.exp
// CHECK: %[[R:[0-9]+]] = arith.divf %{{[0-9]+}}, %[[S:[0-9]+]] : f32
// CHECK-NEXT: arith.mulf %{{[0-9]+}}, %[[R]] : f32
// CHECK-NEXT: arith.mulf %{{[0-9]+}}, %[[R]] : f32
// CHECK-NOT: arith.divf
// CHECK: sched.return
func.func @softmax(%x: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
  %m = fusion.reduce max %x dims [1] : tensor<64x1000xf32> to tensor<64xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<64xf32> to tensor<64x1000xf32>
  %d = fusion.sub %x, %mb : tensor<64x1000xf32>
  %e = fusion.exp %d : tensor<64x1000xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<64x1000xf32> to tensor<64xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<64xf32> to tensor<64x1000xf32>
  %y = fusion.div %e, %sb : tensor<64x1000xf32>
  func.return %y : tensor<64x1000xf32>
}

// CHECK-LABEL: sched.kernel @ratio_k0
// CHECK: arith.divf %{{[0-9]+}}, %{{[0-9]+}} : f32
func.func @ratio(%x: tensor<64x1000xf32>, %y: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
  %q = fusion.div %x, %y : tensor<64x1000xf32>
  func.return %q : tensor<64x1000xf32>
}
