// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// GELU's erf form of bf16 and f32 tensors is one helper, math.gelu of the f32 compute type:
// x/2 erfc(-x / sqrt 2), with erfc(a) = t exp(-a^2 + P(t)), t = 1 / (1 + a/2). Not 1 + erf(x / sqrt 2),
// which cancels for x << 0 (gelu(-5) had a 5% error; an f32 ulp is 6e-8 of the 1).

// CHECK-LABEL: sched.kernel @gelus_k0
// CHECK-DAG: math.gelu %{{.*}} : f32
// CHECK-DAG: math.gelu %{{.*}} : f32
// CHECK-NOT: math.erf

// LLVM-LABEL: define ptx_kernel void @gelus_k0
// LLVM-NOT: @__fuser_erff
// LLVM: call float @__fuser_geluf(float
// LLVM-LABEL: define internal float @__fuser_geluf(float %x)
// LLVM: call float @llvm.minimum.f32(float %{{.*}}, float 0x402D000000000000)
// LLVM: fdiv afn arcp float 0x3FF0000000000000
// the exact low part of x^2, which exp(-x^2 / 2) takes in
// LLVM: fneg float
// LLVM: call float @llvm.fma.f32
// LLVM: fcmp olt float %x, 0x0000000000000000
// LLVM: ret float

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
