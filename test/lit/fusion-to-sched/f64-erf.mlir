// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// The erf family in f64 (issue 31): erf, erfc, erfinv, erfcinv and gelu's erf form of f64
// tensors call the f64 helpers of libm_erf_f64.py (double in, double out); gelu's erf form is
// one helper, math.gelu (x/2 erfc(-x / sqrt 2): no 1 + erf to cancel); erfc's scaled part reads
// the module's table of erfcx coefficients.

// ROUND: fusion.erf %x : tensor<7x33xf64>
// ROUND: fusion.gelu %x : tensor<7x33xf64>

// CHECK-LABEL: sched.kernel @erfs_k0
// CHECK: %[[X:.*]] = sched.load %{{.*}} : memref<7x33xf64> -> f64
// CHECK-DAG: math.erf %[[X]] : f64
// CHECK-DAG: math.erfc %[[X]] : f64
// CHECK-DAG: math.gelu %[[X]] : f64
// CHECK-DAG: math.erfinv %{{.*}} : f64
// CHECK-DAG: math.erfcinv %{{.*}} : f64

// LLVM: @__fuser_erfcx_table = internal unnamed_addr constant [168 x double]
// LLVM-LABEL: define ptx_kernel void @erfs_k0
// LLVM-DAG: call double @__fuser_erf(double
// LLVM-DAG: call double @__fuser_erfc(double
// LLVM-DAG: call double @__fuser_gelu(double
// LLVM-DAG: call double @__fuser_erfinv(double
// LLVM-DAG: call double @__fuser_erfcinv(double
// LLVM-LABEL: define internal double @__fuser_erf(double %x)
// LLVM-NOT: float
// LLVM: getelementptr inbounds [168 x double], ptr @__fuser_erfcx_table
// LLVM: call double @llvm.fma.f64
// LLVM: ret double

// PTX-LABEL: .entry erfs_k0
// PTX-NOT: cvt.rn.f32.f64
// PTX-NOT: ex2.approx
// PTX: fma.rn.f64
func.func @erfs(%x: tensor<7x33xf64>) -> (tensor<7x33xf64>, tensor<7x33xf64>, tensor<7x33xf64>, tensor<7x33xf64>, tensor<7x33xf64>) {
  %a = fusion.erf %x : tensor<7x33xf64>
  %b = fusion.erfc %x : tensor<7x33xf64>
  %c = fusion.gelu %x : tensor<7x33xf64>
  %t = fusion.tanh %x : tensor<7x33xf64>
  %d = fusion.erfinv %t : tensor<7x33xf64>
  %e = fusion.erfcinv %b : tensor<7x33xf64>
  func.return %a, %b, %c, %d, %e : tensor<7x33xf64>, tensor<7x33xf64>, tensor<7x33xf64>, tensor<7x33xf64>, tensor<7x33xf64>
}
