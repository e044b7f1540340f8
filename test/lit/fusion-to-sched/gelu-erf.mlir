// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// GELU's erf form of bf16 and f32 tensors, computed in f32 as x/2 erfc(-x / sqrt 2) with
// erfc(a) = t exp(-a^2 + P(t)), t = 1 / (1 + a/2), in upstream math and arith ops (the NVVM level
// stays upstream MLIR): not 1 + erf(x / sqrt 2), which cancels for x << 0 (gelu(-5) had a 5%
// error; an f32 ulp is 6e-8 of the 1). x^2 is split exactly by an fma for exp(-x^2 / 2).

// CHECK-LABEL: sched.kernel @gelus_k0
// CHECK-NOT: math.erf
// CHECK: math.absf
// CHECK: arith.minimumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.divf {{.*}} fastmath<arcp,afn>
// CHECK: %[[XX:[0-9]+]] = arith.mulf %[[AX:[0-9]+]], %[[AX]] : f32
// CHECK: %[[NEG:[0-9]+]] = arith.negf %[[XX]] : f32
// CHECK: math.fma %[[AX]], %[[AX]], %[[NEG]] : f32
// CHECK-COUNT-9: math.fma
// CHECK: math.exp
// CHECK: math.exp
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK-NOT: math.gelu

// LLVM-LABEL: define ptx_kernel void @gelus_k0
// LLVM-NOT: @__fuser_erff
// LLVM-NOT: @__fuser_geluf
// LLVM: fdiv afn arcp float 0x3FF0000000000000
// LLVM: call float @__fuser_expf(

// per element: one reciprocal and two exps (gauss and exp(P))
// PTX-LABEL: .entry gelus_k0
// PTX: rcp.approx.f32
// PTX-NOT: rcp.approx
// PTX: ex2.approx.ftz.f32
// PTX-NOT: rcp.approx
// PTX: ex2.approx.ftz.f32
// PTX-NOT: ex2.approx
// PTX: rcp.approx.f32
// PTX: cvt.rn.bf16x2.f32
func.func @gelus(%x: tensor<1000xbf16>, %y: tensor<1000xf32>) -> (tensor<1000xbf16>, tensor<1000xf32>) {
  %a = fusion.gelu %x : tensor<1000xbf16>
  %b = fusion.gelu %y : tensor<1000xf32>
  func.return %a, %b : tensor<1000xbf16>, tensor<1000xf32>
}
