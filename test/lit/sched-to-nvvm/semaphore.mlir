// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// Grid semaphores and the global async-proxy fence: a wait is an ld.acquire.gpu spin loop on
// the counter's global address (a 64-bit register, with a label unique per inlined copy), a
// signal one st.release.gpu, `fence.proxy_async global` fence.proxy.async.global; the bare
// fence stays fence.proxy.async.shared::cta. (The TMA reduction is lowered in
// test/lit/sched-insert-bulk-syncs/to-ptx.mlir.)

// CHECK-LABEL: llvm.func @turns(%sems: !llvm.ptr<1>, %out: !llvm.ptr<1>)
// CHECK:       %[[WAITPTR:.*]] = llvm.getelementptr %sems[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK-NEXT:  %[[Z:.*]] = arith.index_cast %ctaid_y : index to i32
// CHECK-NEXT:  llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0A.reg .b32 sem;\0ALAB_SEM_WAIT_${:uid}:\0Ald.acquire.gpu.global.b32 sem, [$0];\0Asetp.ne.b32 p, sem, $1;\0A@p bra LAB_SEM_WAIT_${:uid};\0A}", "l,r,~{memory}" %[[WAITPTR]], %[[Z]] : (!llvm.ptr<1>, i32) -> ()
// CHECK-NEXT:  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT:  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK:       llvm.store
// CHECK:       %[[SIGPTR:.*]] = llvm.getelementptr %sems[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK-NEXT:  %[[NEXT:.*]] = arith.index_cast %next : index to i32
// CHECK-NEXT:  llvm.inline_asm has_side_effects "st.release.gpu.global.b32 [$0], $1;", "l,r,~{memory}" %[[SIGPTR]], %[[NEXT]] : (!llvm.ptr<1>, i32) -> ()
// CHECK-NEXT:  llvm.inline_asm has_side_effects "st.release.gpu.global.b32 [$0], $1;", "l,r,~{memory}" %{{.*}}, %{{.*}} : (!llvm.ptr<1>, i32) -> ()
// CHECK-NEXT:  llvm.return

// PTX-LABEL: .visible .entry turns(
// PTX:       LAB_SEM_WAIT_0:
// PTX-NEXT:  ld.acquire.gpu.global.b32 sem, [%rd{{[0-9]+}}];
// PTX-NEXT:  setp.ne.b32 p, sem, %r{{[0-9]+}};
// PTX-NEXT:  @p bra LAB_SEM_WAIT_0;
// PTX:       fence.proxy.async.global;
// PTX:       fence.proxy.async.shared::cta;
// PTX:       st.global.b32
// PTX:       st.release.gpu.global.b32 [%rd{{[0-9]+}}], %r{{[0-9]+}};
// PTX:       st.release.gpu.global.b32 [%rd{{[0-9]+}}], %r{{[0-9]+}};
// PTX:       ret;

builtin.module {
sched.kernel @turns(%sems : memref<16xi32>, %out : memref<16x4xf32>) grid [16, 4, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tile = sched.block_idx x
  %z = sched.block_idx y
  %next = arith.addi %z, %c1 : index
  %v = arith.constant 1.0 : f32
  sched.semaphore.wait %sems[%tile] until %z : memref<16xi32>
  sched.fence.proxy_async global
  sched.fence.proxy_async
  sched.store %v, %out[%tile, %z] : f32, memref<16x4xf32>
  sched.semaphore.signal %sems[%tile], %next : memref<16xi32>
  sched.semaphore.signal %sems[%c0], %c0 : memref<16xi32>
  sched.return
}
}
