// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// fusion.cast between the element types, with torch's semantics. Values are computed in f32
// (f16, bf16, f32), f64, i1 or i64. Float to i64 truncates toward zero and saturates (LLVM
// leaves an out-of-range fptosi undefined, so the limits and NaN -> 0 are selects); i64 to f64
// is one sitofp; f64 to bf16 goes through f32 as torch converts it; f64 to i1 is `!= 0` (NaN
// true); i1 widens with uitofp / extui (true is 1); i64 to i1 is `!= 0`.

// CHECK-LABEL: sched.kernel @casts_k0
// CHECK:      %[[T:.*]] = arith.fptosi %[[X:.*]] : f32 to i64
// CHECK:      %[[HI:.*]] = arith.cmpf oge, %[[X]], %{{.*}} : f32
// CHECK:      %[[S1:.*]] = arith.select %[[HI]], %{{.*}}, %[[T]] : i64
// CHECK:      %[[LO:.*]] = arith.cmpf olt, %[[X]], %{{.*}} : f32
// CHECK:      %[[S2:.*]] = arith.select %[[LO]], %{{.*}}, %[[S1]] : i64
// CHECK:      %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK:      arith.select %[[NAN]], %{{.*}}, %[[S2]] : i64
// CHECK:      sched.store %{{.*}} : vector<2xi64>, memref<1000xi64>
// CHECK:      arith.sitofp %{{.*}} : i64 to f64
// CHECK:      sched.store %{{.*}} : vector<2xf64>, memref<1000xf64>
// CHECK:      %[[F:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK:      arith.truncf %[[F]] : f32 to bf16
// CHECK:      arith.cmpf une, %{{.*}}, %{{.*}} : f64
// CHECK:      sched.store %{{.*}} : vector<2xi1>, memref<1000xi1>
// CHECK:      %[[M:.*]] = sched.load %{{.*}} : memref<1000xi1> -> vector<2xi1>
// CHECK:      arith.uitofp %{{.*}} : i1 to f32
// CHECK:      arith.extui %{{.*}} : i1 to i64
// CHECK:      %[[NZ:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : i64
// CHECK:      %[[ONE:.*]] = arith.uitofp %[[NZ]] : i1 to f32
// CHECK:      arith.mulf %{{.*}}, %[[ONE]] : f32

// PTX-LABEL: .entry casts_k0
// PTX-DAG: cvt.rzi.s64.f32
// PTX-DAG: cvt.rn.f64.s64
// PTX-DAG: cvt.rn.f32.f64
// PTX-DAG: cvt.rn.bf16x2.f32
// PTX-DAG: ld.global.v2.b8
// PTX-DAG: st.global.v2.b8

func.func @casts(%x: tensor<1000xf32>, %n: tensor<1000xi64>, %d: tensor<1000xf64>, %m: tensor<1000xi1>) -> (tensor<1000xi64>, tensor<1000xf64>, tensor<1000xbf16>, tensor<1000xi1>, tensor<1000xf16>, tensor<1000xi64>, tensor<1000xf32>) {
  %0 = fusion.cast %x : tensor<1000xf32> to tensor<1000xi64>
  %1 = fusion.cast %n : tensor<1000xi64> to tensor<1000xf64>
  %2 = fusion.cast %d : tensor<1000xf64> to tensor<1000xbf16>
  %3 = fusion.cast %d : tensor<1000xf64> to tensor<1000xi1>
  %4 = fusion.cast %m : tensor<1000xi1> to tensor<1000xf16>
  %5 = fusion.cast %m : tensor<1000xi1> to tensor<1000xi64>
  %6 = fusion.cast %n : tensor<1000xi64> to tensor<1000xi1>
  %7 = fusion.cast %6 : tensor<1000xi1> to tensor<1000xf32>
  %8 = fusion.mul %x, %7 : tensor<1000xf32>
  func.return %0, %1, %2, %3, %4, %5, %8 : tensor<1000xi64>, tensor<1000xf64>, tensor<1000xbf16>, tensor<1000xi1>, tensor<1000xf16>, tensor<1000xi64>, tensor<1000xf32>
}
