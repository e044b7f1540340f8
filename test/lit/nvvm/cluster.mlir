// RUN: fuser-opt %s | fuser-opt | filecheck %s
// RUN: fuser-opt %s -t llvm | filecheck %s --check-prefix=LLVM

// The cluster ops (and the mbarrier wait) in upstream's syntax: the barrier halves (optionally .aligned), the fence
// that publishes mbarrier inits, mapa, and an arrive on another CTA's mbarrier (no state
// returned). The barrier halves and the fence are LLVM intrinsics; mapa and the remote arrive
// become one asm in convert-nvvm-to-llvm.

// CHECK-LABEL: llvm.func @cluster
// CHECK:       nvvm.fence.mbarrier.init
// CHECK-NEXT:  nvvm.cluster.arrive
// CHECK-NEXT:  nvvm.cluster.wait
// CHECK-NEXT:  nvvm.cluster.arrive {aligned}
// CHECK-NEXT:  nvvm.cluster.wait {aligned}
// CHECK-NEXT:  %[[S:.*]] = nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3> -> i64
// CHECK-NEXT:  %[[R:.*]] = nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT:  nvvm.mbarrier.arrive %[[R]] : !llvm.ptr<7>
// CHECK-NEXT:  nvvm.mbarrier.try_wait.parity %{{.*}}, %[[PH:.*]], %[[PH]] : !llvm.ptr<3>, i32, i32

// LLVM: call void @llvm.nvvm.fence.mbarrier_init.release.cluster()
// LLVM: call void @llvm.nvvm.barrier.cluster.arrive()
// LLVM: call void @llvm.nvvm.barrier.cluster.wait()
// LLVM: call void @llvm.nvvm.barrier.cluster.arrive.aligned()
// LLVM: call void @llvm.nvvm.barrier.cluster.wait.aligned()
// LLVM: call i64 @llvm.nvvm.mbarrier.arrive.shared(
// LLVM: call void asm sideeffect "{\0A.reg .b32 remote;\0Amapa.shared::cluster.u32 remote, $0, $1;\0Ambarrier.arrive.shared::cluster.b64 _, [remote];\0A}", "r,r,~{memory}"
// LLVM: call void asm sideeffect "{\0A.reg .pred p;\0ALAB_WAIT_${:uid}:\0Ambarrier.try_wait.parity.shared::cta.b64 p, [$0], $1, $2;\0A@!p bra LAB_WAIT_${:uid};\0A}", "r,r,r,~{memory}"
module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.mlir.global external @bars() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<2 x i64>
    llvm.func @cluster(%cta: i32) attributes {nvvm.kernel} {
      %p = llvm.mlir.addressof @bars : !llvm.ptr<3>
      nvvm.fence.mbarrier.init
      nvvm.cluster.arrive
      nvvm.cluster.wait
      nvvm.cluster.arrive {aligned}
      nvvm.cluster.wait {aligned}
      %s = nvvm.mbarrier.arrive %p : !llvm.ptr<3> -> i64
      %r = nvvm.mapa %p, %cta : !llvm.ptr<3> -> !llvm.ptr<7>
      nvvm.mbarrier.arrive %r : !llvm.ptr<7>
      nvvm.mbarrier.try_wait.parity %p, %cta, %cta : !llvm.ptr<3>, i32, i32
      llvm.return
    }
  }) : () -> ()
}
