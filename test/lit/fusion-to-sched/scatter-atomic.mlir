// RUN: fuser-opt %s -p fusion-segment | filecheck %s --check-prefix=SEG
// RUN: fuser-opt %s -p to-sched | filecheck %s
// RUN: fuser-opt %s -p default | filecheck %s --check-prefix=NVVM
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// fusion.scatter_add_atomic (issue 32; the API's deterministic=False): a kernel boundary with a
// segment of its own, two kernels: the input (computed from what it reads) copied into the
// result, then one thread per src element adding itself at its target with sched.atomic_add
// (PTX red.global.add, in no fixed order). A consumer reads the result back.

// SEG: fusion.segment "scatter"
// SEG-SAME: "'fusion.scatter_add_atomic' of [300, 64] into [1000, 64] along dim 0 (a copy, then atomic adds)
// SEG: fusion.segment "pointwise"
// CHECK-LABEL: sched.kernel @atomic_k0
// CHECK-SAME: fuser.schedule = "copy of the input into the atomic scatter's result
// CHECK: math.exp
// CHECK: sched.store %{{.*}}, %0[%{{.*}}, %{{.*}}] : vector<4xf32>, memref<1000x64xf32>
// CHECK-LABEL: sched.kernel @atomic_k1
// CHECK-SAME: fuser.schedule = "atomic scatter of 19200 elements, one a thread (256 threads a block): red.global.add"
// CHECK: %[[ID:.*]] = sched.load %2[%[[ROW:.*]], %{{.*}}] : memref<300x1xi64> -> i64
// CHECK: arith.maxsi
// CHECK: %[[POS:.*]] = arith.minsi
// CHECK: %[[T:.*]] = arith.index_cast %[[POS]] : i64 to index
// CHECK: %[[G:.*]] = sched.load %1[%[[ROW]], %[[COL:.*]]] : memref<300x64xf32> -> f32
// CHECK: sched.atomic_add %[[G]], %0[%[[T]], %[[COL]]] : f32, memref<1000x64xf32>
// CHECK-LABEL: sched.kernel @atomic_k2
// CHECK: arith.mulf
// CHECK: sched.launch @atomic_k0(%r, %w)
// CHECK: sched.launch @atomic_k1(%r, %g, %ids)
// CHECK: sched.launch @atomic_k2(%y, %r)
// NVVM: llvm.inline_asm has_side_effects "red.global.add.f32 [$0], $1;", "l,f,~{memory}"
// PTX-LABEL: .entry atomic_k1
// PTX: red.global.add.f32 [%rd{{[0-9]+}}], %{{.*}};
func.func @atomic(%g: tensor<300x64xf32>, %ids: tensor<300x1xi64>, %w: tensor<1000x64xf32>) -> tensor<1000x64xf32> {
  %e = fusion.exp %w : tensor<1000x64xf32>
  %r = fusion.scatter_add_atomic %e, %ids, %g dim 0 : tensor<1000x64xf32>, tensor<300x1xi64>, tensor<300x64xf32> to tensor<1000x64xf32>
  %y = fusion.mul %r, %r : tensor<1000x64xf32>
  func.return %y : tensor<1000x64xf32>
}
