// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s --split-input-file -p default -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s --split-input-file -p default -t ptx | filecheck %s --check-prefix=PTX

// f64 computed in f64 (issue 31): math, reductions and scans of f64 tensors stay in f64
// registers. The kernel's values, constants, reduction states and shuffles are f64; the
// transcendental ops call the f64 helpers of libm_f64.py (double in, double out: never a
// round trip through float); a 64-bit shuffle is two 32-bit ones of the halves of its bits.

// ROUND: fusion.exp %x : tensor<37x129xf64>
// ROUND: fusion.reduce sum %e dims [1] : tensor<37x129xf64> to tensor<37xf64>

// CHECK-LABEL: sched.kernel @exp_sum_k0
// CHECK: %[[X:.*]] = sched.load %{{.*}} : memref<37x129xf64> -> f64
// CHECK: %[[E:.*]] = math.exp %[[X]] : f64
// CHECK: arith.addf %{{.*}}, %[[E]] : f64
// CHECK: sched.shfl_xor %{{.*}}, 16 : f64
// CHECK: sched.store %{{.*}} : f64, memref<37xf64>

// LLVM-LABEL: define ptx_kernel void @exp_sum_k0
// LLVM: call double @__fuser_exp(double
// LLVM: fadd double
// The f64 state shuffled as the two halves of its bits:
// LLVM: bitcast double %{{.*}} to i64
// LLVM: trunc i64 %{{.*}} to i32
// LLVM: lshr i64 %{{.*}}, 32
// LLVM: call i32 @llvm.nvvm.shfl.sync.bfly.i32
// LLVM: call i32 @llvm.nvvm.shfl.sync.bfly.i32
// LLVM: shl i64 %{{.*}}, 32
// LLVM: bitcast i64 %{{.*}} to double
// LLVM-LABEL: define internal double @__fuser_exp(double %x)
// LLVM-NOT: float
// LLVM: call double @llvm.fma.f64
// LLVM: ret double

// PTX-LABEL: .entry exp_sum_k0
// PTX-NOT: cvt.rn.f32.f64
// PTX-NOT: ex2.approx
// PTX: fma.rn.f64
// PTX: add.rn.f64
// PTX: shfl.sync.bfly.b32
// PTX: shfl.sync.bfly.b32
func.func @exp_sum(%x: tensor<37x129xf64>) -> tensor<37xf64> {
  %e = fusion.exp %x : tensor<37x129xf64>
  %s = fusion.reduce sum %e dims [1] : tensor<37x129xf64> to tensor<37xf64>
  func.return %s : tensor<37xf64>
}

// -----

// var_mean of f64: a Welford state of three f64s; a cumulative sum in f64; sqrt and division IEEE.
// CHECK-LABEL: sched.kernel @stats_k0
// CHECK: sched.shfl_xor %{{.*}}, 16 : f64
// CHECK: arith.divf %{{.*}}, %{{.*}} : f64
// CHECK: sched.store %{{.*}} : f64, memref<37xf64>
// CHECK-LABEL: sched.kernel @stats_k1
// CHECK: arith.addf %{{.*}}, %{{.*}} : f64
// CHECK: sched.shfl_xor %{{.*}}, 1 : f64

// PTX-LABEL: .entry stats_k0
// PTX-NOT: cvt.rn.f32.f64
// PTX: div.rn.f64
// PTX-LABEL: .entry stats_k1
// PTX-NOT: cvt.rn.f32.f64
// PTX: sqrt.rn.f64
func.func @stats(%x: tensor<37x4099xf64>) -> (tensor<37xf64>, tensor<37xf64>, tensor<37x4099xf64>) {
  %v, %m = fusion.var_mean %x dims [1] correction 1 : tensor<37x4099xf64> to tensor<37xf64>, tensor<37xf64>
  %r = fusion.sqrt %x : tensor<37x4099xf64>
  %c = fusion.scan sum %r dim 1 : tensor<37x4099xf64> to tensor<37x4099xf64>
  func.return %v, %m, %c : tensor<37xf64>, tensor<37xf64>, tensor<37x4099xf64>
}

// -----

// lgamma of f64 (libm_lgamma_f64.py): one math op on the f64 value, its own f64 helper (not the
// f32 one, __fuser_lgammaf): log|gamma| carried as a double-double, the shift into [3/2, 5/2)
// by floor, the reflection's sin(pi x) reduced by rint; never a float.
// ROUND: fusion.lgamma %x : tensor<7x33xf64>
// CHECK-LABEL: sched.kernel @lgamma64_k0
// CHECK: %[[X:.*]] = sched.load %{{.*}} : memref<7x33xf64> -> f64
// CHECK: %[[L:.*]] = math.lgamma %[[X]] : f64
// CHECK: sched.store %[[L]], %{{.*}} : f64, memref<7x33xf64>

// LLVM-LABEL: define ptx_kernel void @lgamma64_k0
// LLVM: call double @__fuser_lgamma(double
// LLVM-NOT: __fuser_lgammaf
// LLVM-LABEL: define internal double @__fuser_lgamma(double %x)
// LLVM-NOT: float
// LLVM: call double @llvm.floor.f64
// LLVM: call double @llvm.fma.f64
// LLVM: call double @llvm.rint.f64
// LLVM: ret double

// PTX-LABEL: .entry lgamma64_k0
// PTX-NOT: cvt.rn.f32.f64
// PTX-NOT: lg2.approx
// PTX: cvt.rmi.f64.f64
// PTX: fma.rn.f64
// PTX: cvt.rni.f64.f64
func.func @lgamma64(%x: tensor<7x33xf64>) -> tensor<7x33xf64> {
  %l = fusion.lgamma %x : tensor<7x33xf64>
  func.return %l : tensor<7x33xf64>
}
