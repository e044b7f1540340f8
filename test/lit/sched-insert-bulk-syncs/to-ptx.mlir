// RUN: fuser-opt %s -p sched-insert-bulk-syncs,convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p sched-insert-bulk-syncs,convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// One split of a serial split-K tile, as a scheduler writes it: wait for its turn, TMA-reduce-add
// the f32 tile into the workspace, hand the turn on. The pass adds the fence after the wait and
// the commit / wait_group 0 / global fence before the signal; the lowering makes the wait an
// ld.acquire.gpu spin loop and the signal an st.release.gpu. The shared::cta fence written in
// the input keeps its PTX.

// CHECK-LABEL: llvm.func @split(%tm: !llvm.ptr<0> {{.*}}, %sems: !llvm.ptr<1>)
// CHECK:       %[[WAITPTR:.*]] = llvm.getelementptr %sems[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK-NEXT:  %[[Z:.*]] = arith.index_cast %ctaid_z : index to i32
// CHECK-NEXT:  llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0A.reg .b32 sem;\0ALAB_SEM_WAIT_${:uid}:\0Ald.acquire.gpu.global.b32 sem, [$0];\0Asetp.ne.b32 p, sem, $1;\0A@p bra LAB_SEM_WAIT_${:uid};\0A}", "l,r,~{memory}" %[[WAITPTR]], %[[Z]] : (!llvm.ptr<1>, i32) -> ()
// CHECK-NEXT:  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT:  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK:       nvvm.cp.async.bulk.tensor.reduce %tm, %{{.*}}, box[%{{.*}}, %{{.*}}] {redKind = #nvvm.tma_redux_kind<add>} : !llvm.ptr<0>, !llvm.ptr<3>
// CHECK-NEXT:  nvvm.cp.async.bulk.commit.group
// CHECK-NEXT:  nvvm.cp.async.bulk.wait_group 0{{$}}
// CHECK-NEXT:  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK:       %[[SIGPTR:.*]] = llvm.getelementptr %sems[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK-NEXT:  %[[NEXT:.*]] = arith.index_cast %next : index to i32
// CHECK-NEXT:  llvm.inline_asm has_side_effects "st.release.gpu.global.b32 [$0], $1;", "l,r,~{memory}" %[[SIGPTR]], %[[NEXT]] : (!llvm.ptr<1>, i32) -> ()
// CHECK-NEXT:  llvm.return

// PTX:       .extern .shared .align 1024 .b8 __dynamic_smem_split[];
// PTX-LABEL: .visible .entry split(
// PTX:       LAB_SEM_WAIT_0:
// PTX-NEXT:  ld.acquire.gpu.global.b32 sem, [%rd{{[0-9]+}}];
// PTX-NEXT:  setp.ne.b32 p, sem, %r{{[0-9]+}};
// PTX-NEXT:  @p bra LAB_SEM_WAIT_0;
// PTX:       fence.proxy.async.global;
// PTX:       fence.proxy.async.shared::cta;
// PTX:       cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
// PTX:       cp.async.bulk.commit_group;
// PTX:       cp.async.bulk.wait_group 0;
// PTX:       fence.proxy.async.global;
// PTX:       st.release.gpu.global.b32 [%rd{{[0-9]+}}], %r{{[0-9]+}};
// PTX-NOT:   fence.proxy.async
// PTX:       ret;

builtin.module {
sched.kernel @split(%tm : !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>, %sems : memref<16xi32>) grid [16, 1, 4] block [128, 1, 1] smem 8192 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tile = sched.block_idx x
  %z = sched.block_idx z
  %next = arith.addi %z, %c1 : index
  %c64 = arith.constant 64 : index
  %row = arith.muli %tile, %c64 : index
  %t = sched.alloc offset 0 : i64 : memref<64x32xf32, 3>
  sched.semaphore.wait %sems[%tile] until %z : memref<16xi32>
  sched.fence.proxy_async
  sched.tma.reduce add %t[%c0, %c0], %tm[%row, %c0] : memref<64x32xf32, 3>, !sched.tensor_map<memref<256x256xf32>, box [64, 32], swizzle 128>
  sched.semaphore.signal %sems[%tile], %next : memref<16xi32>
  sched.return
}
}
