// RUN: fuser-opt %s | fuser-opt | filecheck %s
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: fuser-opt %s --print-op-generic | fuser-opt | filecheck %s

// The TMA load in upstream's syntax: a shared::cluster destination (this CTA's shared memory
// cast to address space 7), the tensor map, the mbarrier, the box's coordinates, and an
// optional multicast mask. The generic form has upstream's eight operand groups and properties.

// CHECK-LABEL: llvm.func @load
// CHECK:       %[[D:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK-NEXT:  nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D]], %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK-NEXT:  nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D]], %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}] multicast_mask = %{{.*}} : !llvm.ptr<7>, !llvm.ptr

// GENERIC: "nvvm.cp.async.bulk.tensor.shared.cluster.global"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{isCTAOnly = false, mode = #nvvm.tma_load_mode<tile>, operandSegmentSizes = array<i32: 1, 1, 2, 1, 0, 0, 0, 0>}> : (!llvm.ptr<7>, !llvm.ptr, i32, i32, !llvm.ptr<3>) -> ()
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 3, 1, 0, 1, 0, 0>}> : (!llvm.ptr<7>, !llvm.ptr, i32, i32, i32, !llvm.ptr<3>, i16) -> ()
llvm.func @load(%smem: !llvm.ptr<3>, %tmap: !llvm.ptr, %bar: !llvm.ptr<3>, %x: i32, %mask: i16) {
  %d = llvm.addrspacecast %smem : !llvm.ptr<3> to !llvm.ptr<7>
  nvvm.cp.async.bulk.tensor.shared.cluster.global %d, %tmap, %bar, box[%x, %x] : !llvm.ptr<7>, !llvm.ptr
  nvvm.cp.async.bulk.tensor.shared.cluster.global %d, %tmap, %bar, box[%x, %x, %x] multicast_mask = %mask : !llvm.ptr<7>, !llvm.ptr
  llvm.return
}
