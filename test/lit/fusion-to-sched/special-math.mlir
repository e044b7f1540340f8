// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// lgamma and erfcinv become one math op each, computed in f64 by fuser's helpers and rounded to
// f32 once (bf16 extended first, rounded again at the end). nextafter is a step of the bits on
// its operands' own grid: an f32 value's i32 bits, a bf16's and an f16's i16 bits (the f32
// compute value narrowed first, exactly), an f64's i64 bits; no helper, nothing rounds.

// ROUND-LABEL: func.func @special
// ROUND: %l = fusion.lgamma %x : tensor<33x100xf32>
// ROUND: %e = fusion.erfcinv %hb : tensor<33x100xbf16>
// ROUND: %n = fusion.nextafter %l, %x : tensor<33x100xf32>
// ROUND: %nb = fusion.nextafter %e, %hb : tensor<33x100xbf16>
// ROUND: %nh = fusion.nextafter %h16, %g16 : tensor<33x100xf16>
// ROUND: %nd = fusion.nextafter %d, %d2 : tensor<33x100xf64>

// CHECK-LABEL: sched.kernel @special_k0
// CHECK-DAG: math.lgamma %{{.*}} : f32
// CHECK-DAG: math.erfcinv %{{.*}} : f32
// CHECK-DAG: arith.bitcast %{{.*}} : f32 to i32
// CHECK-DAG: arith.bitcast %{{.*}} : bf16 to i16
// CHECK-DAG: arith.bitcast %{{.*}} : f16 to i16
// CHECK-DAG: arith.bitcast %{{.*}} : f64 to i64
// CHECK-DAG: arith.bitcast %{{.*}} : i64 to f64

// LLVM-DAG: define internal float @__fuser_lgammaf(float %x)
// LLVM-DAG: define internal float @__fuser_erfcinvf(float %x)
// LLVM-DAG: bitcast bfloat %{{.*}} to i16
// LLVM-DAG: bitcast half %{{.*}} to i16
// LLVM-DAG: bitcast double %{{.*}} to i64
// LLVM-NOT: @__fuser_nextafter

// PTX-DAG: cvt.rn.f32.f64
// PTX-DAG: fma.rn.f64
// PTX-DAG: add.s64
func.func @special(%x: tensor<33x100xf32>, %h: tensor<33x100xbf16>, %h16: tensor<33x100xf16>, %g16: tensor<33x100xf16>,
                   %d: tensor<33x100xf64>, %d2: tensor<33x100xf64>)
    -> (tensor<33x100xf32>, tensor<33x100xbf16>, tensor<33x100xf16>, tensor<33x100xf64>) {
  %l = fusion.lgamma %x : tensor<33x100xf32>
  %hb = fusion.sin %h : tensor<33x100xbf16>
  %e = fusion.erfcinv %hb : tensor<33x100xbf16>
  %n = fusion.nextafter %l, %x : tensor<33x100xf32>
  %nb = fusion.nextafter %e, %hb : tensor<33x100xbf16>
  %nh = fusion.nextafter %h16, %g16 : tensor<33x100xf16>
  %nd = fusion.nextafter %d, %d2 : tensor<33x100xf64>
  func.return %n, %nb, %nh, %nd : tensor<33x100xf32>, tensor<33x100xbf16>, tensor<33x100xf16>, tensor<33x100xf64>
}
