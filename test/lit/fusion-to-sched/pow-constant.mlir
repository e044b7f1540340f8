// RUN: fuser-opt %s -p to-sched | filecheck %s

// A constant exponent of 2 or 3 is multiplied out, as torch's CUDA pow does (HF GPT-2's GELU
// computes x ** 3 per element: through exp2 and log2 its backward kernel ran at a third of the
// memory bandwidth); any other exponent keeps the exp2/log2 form with powf's special cases.
// CHECK-LABEL: sched.kernel @cube_k0
// CHECK-NOT:     math.log2
// CHECK:         %[[SQ:.*]] = arith.mulf %[[X:.*]], %[[X]] : f32
// CHECK:         arith.mulf %[[SQ]], %[[X]] : f32
// CHECK-NOT:     math.exp2
// CHECK:       sched.kernel @square_k0
// CHECK-NOT:     math.log2
// CHECK:         arith.mulf %[[Y:.*]], %[[Y]] : f32
// CHECK-NOT:     math.exp2
// CHECK:       sched.kernel @other_k0
// CHECK:         math.log2
// CHECK:         math.exp2
func.func @cube(%x: tensor<37x129xf32>) -> tensor<37x129xf32> {
  %c = fusion.full 3.0 : tensor<37x129xf32>
  %y = fusion.pow %x, %c : tensor<37x129xf32>
  func.return %y : tensor<37x129xf32>
}

func.func @square(%x: tensor<37x129xf32>) -> tensor<37x129xf32> {
  %c = fusion.full 2.0 : tensor<37x129xf32>
  %y = fusion.pow %x, %c : tensor<37x129xf32>
  func.return %y : tensor<37x129xf32>
}

func.func @other(%x: tensor<37x129xf32>) -> tensor<37x129xf32> {
  %c = fusion.full 2.5 : tensor<37x129xf32>
  %y = fusion.pow %x, %c : tensor<37x129xf32>
  func.return %y : tensor<37x129xf32>
}
