// RUN: fuser-opt %s | filecheck %s --check-prefix=ROUNDTRIP
// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// A kept_zero workspace (here a split-K kernel's per-tile semaphores) is zeroed once by the
// runtime when it allocates it, and its kernels leave it zero: it lowers to a gpu.alloc tagged
// fuser.kept_zero and, unlike a zero_init one, gets no gpu.memset.

builtin.module {
  sched.kernel @mm_k0(%a : memref<64x64xf32>, %part : memref<64xf32>, %sem : memref<16xi32>, %c : memref<64x64xf32>) grid [16, 4, 1] block [128, 1, 1] smem 0 {
    sched.return
  }
  func.func @mm(%a : memref<64x64xf32>, %c : memref<64x64xf32>) attributes {fuser.num_outputs = 1 : i64} {
    %part = sched.workspace zero_init : memref<64xf32>
    %sem = sched.workspace kept_zero : memref<16xi32>
    sched.launch @mm_k0(%a, %part, %sem, %c) : memref<64x64xf32>, memref<64xf32>, memref<16xi32>, memref<64x64xf32>
    func.return
  }
}

// ROUNDTRIP:      %part = sched.workspace zero_init : memref<64xf32>
// ROUNDTRIP-NEXT: %sem = sched.workspace kept_zero : memref<16xi32>

// CHECK:      func.func @mm(
// CHECK:        %[[PART:.*]] = "gpu.alloc"() <{operandSegmentSizes = array<i32: 0, 0, 0>}> : () -> memref<64xf32>
// CHECK-NEXT:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   gpu.memset %[[PART]], %[[ZERO]] : memref<64xf32>, f32
// CHECK-NEXT:   %[[SEM:.*]] = "gpu.alloc"() <{operandSegmentSizes = array<i32: 0, 0, 0>}> {fuser.kept_zero} : () -> memref<16xi32>
// CHECK-NOT:    gpu.memset
// CHECK:        "gpu.launch_func"({{.*}}, %[[PART]], %[[SEM]], %{{.*}}) <{kernel = @mm_kernels::@mm_k0
// CHECK-NEXT:   "gpu.dealloc"(%[[PART]])
// CHECK-NEXT:   "gpu.dealloc"(%[[SEM]])
// CHECK-NEXT:   func.return

// PTX: .entry mm_k0(
