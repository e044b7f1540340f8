// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// The unary math of torch's elementwise set beyond exp/log/tanh: each prints and parses back,
// becomes one math op of the kernel (erf, exp2, log2, log10 and log1p by fuser's own f32
// helpers; floor, ceil, trunc and round, halves to even, by LLVM's intrinsics, which PTX does
// in one cvt each), and 1/x is a correctly rounded division (rcp.rn). sign is (x > 0) - (x < 0),
// so NaN and both zeros give 0, as torch.sign.

// ROUND-LABEL: func.func @unary_math
// ROUND: %e = fusion.erf %x : tensor<64x256xf32>
// ROUND: %s = fusion.sign %o : tensor<64x256xbf16>

// CHECK-LABEL: sched.kernel @unary_math_k0
// CHECK-DAG: math.erf
// CHECK-DAG: math.exp2
// CHECK-DAG: math.log2
// CHECK-DAG: math.log10
// CHECK-DAG: math.log1p
// CHECK-DAG: math.floor
// CHECK-DAG: math.ceil
// CHECK-DAG: math.trunc
// CHECK-DAG: math.roundeven
// CHECK-DAG: arith.cmpf ogt
// CHECK-DAG: arith.cmpf olt

// PTX-DAG: rcp.rn.f32
// PTX-DAG: cvt.rmi.f32.f32
// PTX-DAG: cvt.rpi.f32.f32
// PTX-DAG: cvt.rzi.f32.f32
// PTX-DAG: cvt.rni.f32.f32
func.func @unary_math(%x: tensor<64x256xf32>) -> (tensor<64x256xf32>, tensor<64x256xbf16>) {
  %e = fusion.erf %x : tensor<64x256xf32>
  %a = fusion.exp2 %e : tensor<64x256xf32>
  %b = fusion.log2 %a : tensor<64x256xf32>
  %c = fusion.log10 %a : tensor<64x256xf32>
  %d = fusion.log1p %a : tensor<64x256xf32>
  %r = fusion.reciprocal %a : tensor<64x256xf32>
  %f = fusion.floor %b : tensor<64x256xf32>
  %g = fusion.ceil %c : tensor<64x256xf32>
  %t = fusion.trunc %d : tensor<64x256xf32>
  %n = fusion.round %r : tensor<64x256xf32>
  %s1 = fusion.add %f, %g : tensor<64x256xf32>
  %s2 = fusion.add %t, %n : tensor<64x256xf32>
  %s3 = fusion.add %s1, %s2 : tensor<64x256xf32>
  %o = fusion.cast %s3 : tensor<64x256xf32> to tensor<64x256xbf16>
  %s = fusion.sign %o : tensor<64x256xbf16>
  func.return %s3, %s : tensor<64x256xf32>, tensor<64x256xbf16>
}


// The tests of a float give i1 masks: isnan is an unordered compare of x with itself, isinf and
// isfinite compare |x| with inf (isfinite is false for NaN), signbit reads the bit itself (so
// -0.0 and negative NaNs count), through an integer view of the f32 value.

// ROUND-LABEL: func.func @float_tests
// ROUND: %n = fusion.isnan %x : tensor<64x256xbf16>
// ROUND: %s = fusion.signbit %x : tensor<64x256xbf16>

// CHECK-LABEL: sched.kernel @float_tests_k0
// CHECK-DAG: arith.cmpf uno
// CHECK-DAG: arith.cmpf olt
// CHECK-DAG: arith.bitcast %{{.*}} : f32 to i32
// CHECK-DAG: arith.cmpi slt
func.func @float_tests(%x: tensor<64x256xbf16>) -> (tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>) {
  %n = fusion.isnan %x : tensor<64x256xbf16>
  %i = fusion.isinf %x : tensor<64x256xbf16>
  %f = fusion.isfinite %x : tensor<64x256xbf16>
  %p = fusion.isposinf %x : tensor<64x256xbf16>
  %m = fusion.isneginf %x : tensor<64x256xbf16>
  %s = fusion.signbit %x : tensor<64x256xbf16>
  func.return %n, %i, %f, %p, %m, %s : tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>
}

// Masks combine with logical_not / and / or / xor: one i1 instruction each (xor with true is
// the not), whatever kernel computes them.

// ROUND-LABEL: func.func @masks
// ROUND: %n = fusion.logical_not %a : tensor<64x256xi1>
// ROUND: %x = fusion.logical_xor %a, %b : tensor<64x256xi1>

// CHECK-LABEL: sched.kernel @masks_k0
// CHECK-DAG: arith.xori
// CHECK-DAG: arith.andi
// CHECK-DAG: arith.ori
// PTX-DAG: and.pred
// PTX-DAG: or.pred
func.func @masks(%a: tensor<64x256xi1>, %b: tensor<64x256xi1>) -> (tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>) {
  %n = fusion.logical_not %a : tensor<64x256xi1>
  %y = fusion.logical_and %n, %b : tensor<64x256xi1>
  %o = fusion.logical_or %a, %b : tensor<64x256xi1>
  %x = fusion.logical_xor %a, %b : tensor<64x256xi1>
  func.return %n, %y, %o, %x : tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>, tensor<64x256xi1>
}
