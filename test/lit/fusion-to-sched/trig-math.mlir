// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// The trigonometric and hyperbolic functions, erfc, erfinv and atan2 (of two operands): each prints and parses back and becomes one math op
// of the kernel; the LLVM IR computes them in f64 through fuser's helpers (sin, cos and tan
// reduce by pi/2 with three-part Cody-Waite, or above |x| = 2^48 by a branch to the chunked 2/pi
// reduction) and rounds the result to f32 once. bf16 operands are extended to f32 first.

// ROUND-LABEL: func.func @trig
// ROUND: %s = fusion.sin %x : tensor<64x256xf32>
// ROUND: %m = fusion.expm1 %hb : tensor<64x256xbf16>
// ROUND: %y0 = fusion.atan2 %a3, %x : tensor<64x256xf32>
// ROUND: %y = fusion.erfc %y0 : tensor<64x256xf32>
// ROUND: %e = fusion.erfinv %m : tensor<64x256xbf16>

// CHECK-LABEL: sched.kernel @trig_k0
// CHECK-DAG: math.sin
// CHECK-DAG: math.cos
// CHECK-DAG: math.tan
// CHECK-DAG: math.asin
// CHECK-DAG: math.acos
// CHECK-DAG: math.atan
// CHECK-DAG: math.sinh
// CHECK-DAG: math.cosh
// CHECK-DAG: math.asinh
// CHECK-DAG: math.acosh
// CHECK-DAG: math.atanh
// CHECK-DAG: math.expm1
// CHECK-DAG: math.atan2
// CHECK-DAG: math.erfc
// CHECK-DAG: math.erfinv

// LLVM-LABEL: define internal float @__fuser_sinf(float %x)
// LLVM: fpext float %x to double
// LLVM: br i1 %{{.*}}, label %pio2_big{{[0-9]+}}, label %pio2_join{{[0-9]+}}
// LLVM: phi double
// LLVM: fptrunc double
// LLVM-DAG: define internal float @__fuser_atan2f(float %a, float %b)
// LLVM-DAG: define internal float @__fuser_erfinvf(float %x)

// PTX-DAG: cvt.rni.f64.f64
// PTX-DAG: fma.rn.f64
// PTX-DAG: sqrt.rn.f64
// PTX-DAG: cvt.rn.f32.f64
func.func @trig(%x: tensor<64x256xf32>, %h: tensor<64x256xbf16>) -> (tensor<64x256xf32>, tensor<64x256xbf16>) {
  %s = fusion.sin %x : tensor<64x256xf32>
  %c = fusion.cos %x : tensor<64x256xf32>
  %t = fusion.tan %x : tensor<64x256xf32>
  %as = fusion.asin %s : tensor<64x256xf32>
  %ac = fusion.acos %c : tensor<64x256xf32>
  %at = fusion.atan %t : tensor<64x256xf32>
  %sh = fusion.sinh %as : tensor<64x256xf32>
  %ch = fusion.cosh %ac : tensor<64x256xf32>
  %ash = fusion.asinh %sh : tensor<64x256xf32>
  %ach = fusion.acosh %ch : tensor<64x256xf32>
  %ath = fusion.atanh %s : tensor<64x256xf32>
  %a1 = fusion.add %at, %ash : tensor<64x256xf32>
  %a2 = fusion.add %ach, %ath : tensor<64x256xf32>
  %a3 = fusion.add %a1, %a2 : tensor<64x256xf32>
  %hb = fusion.sin %h : tensor<64x256xbf16>
  %m = fusion.expm1 %hb : tensor<64x256xbf16>
  %y0 = fusion.atan2 %a3, %x : tensor<64x256xf32>
  %y = fusion.erfc %y0 : tensor<64x256xf32>
  %e = fusion.erfinv %m : tensor<64x256xbf16>
  func.return %y, %e : tensor<64x256xf32>, tensor<64x256xbf16>
}
