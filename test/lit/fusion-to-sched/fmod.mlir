// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t llvm | filecheck %s --check-prefix=LLVM

// fmod is arith.remf (C's fmod), and remainder is it plus b where the result is nonzero and its
// sign differs from b's (torch.remainder). The LLVM IR computes remf exactly, on the operands'
// integer mantissas (24-bit products in i64, 2^(Ea - Eb) mod Mb by square-and-multiply), not with
// LLVM's frem, which NVPTX expands to a - b * trunc(a / b).

// ROUND-LABEL: func.func @mods
// ROUND: %f = fusion.fmod %a, %b : tensor<64x256xf32>
// ROUND: %r = fusion.remainder %a, %h : tensor<64x256xf32>

// CHECK-LABEL: sched.kernel @mods_k0
// CHECK: arith.remf
// CHECK: arith.remf
// CHECK: arith.cmpf olt
// CHECK: arith.xori
// CHECK: arith.select

// LLVM-LABEL: define internal float @__fuser_remff(float %a, float %b)
// LLVM: bitcast float %a to i32
// LLVM: urem i64
// LLVM-NOT: frem
func.func @mods(%a: tensor<64x256xf32>, %b: tensor<64x256xf32>, %h: tensor<64x256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  %f = fusion.fmod %a, %b : tensor<64x256xf32>
  %r = fusion.remainder %a, %h : tensor<64x256xf32>
  func.return %f, %r : tensor<64x256xf32>, tensor<64x256xf32>
}
