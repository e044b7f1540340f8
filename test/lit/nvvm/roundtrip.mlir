// RUN: fuser-opt %s | fuser-opt | filecheck %s

// Every nvvm op prints in upstream MLIR's custom form and parses back to the same text
// (test/python/test_nvvm_upstream.py checks the same text against upstream MLIR itself).

// CHECK-LABEL: llvm.func @sregs()
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.tid.y : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.tid.z : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.ntid.x : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.ntid.y : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.ntid.z : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.ctaid.y : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.ctaid.z : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.nctaid.x : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.nctaid.y : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.nctaid.z : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.laneid : i32
// CHECK-NEXT:    %{{.*}} = nvvm.read.ptx.sreg.warpsize : i32
// CHECK-NEXT:    llvm.return
llvm.func @sregs() {
  %0 = nvvm.read.ptx.sreg.tid.x : i32
  %1 = nvvm.read.ptx.sreg.tid.y : i32
  %2 = nvvm.read.ptx.sreg.tid.z : i32
  %3 = nvvm.read.ptx.sreg.ntid.x : i32
  %4 = nvvm.read.ptx.sreg.ntid.y : i32
  %5 = nvvm.read.ptx.sreg.ntid.z : i32
  %6 = nvvm.read.ptx.sreg.ctaid.x : i32
  %7 = nvvm.read.ptx.sreg.ctaid.y : i32
  %8 = nvvm.read.ptx.sreg.ctaid.z : i32
  %9 = nvvm.read.ptx.sreg.nctaid.x : i32
  %10 = nvvm.read.ptx.sreg.nctaid.y : i32
  %11 = nvvm.read.ptx.sreg.nctaid.z : i32
  %12 = nvvm.read.ptx.sreg.laneid : i32
  %13 = nvvm.read.ptx.sreg.warpsize : i32
  llvm.return
}

// CHECK-LABEL: llvm.func @barriers(%{{.*}}: i32, %{{.*}}: i32)
// CHECK-NEXT:    nvvm.barrier{{$}}
// CHECK-NEXT:    nvvm.barrier id = %[[ID:.*]]{{$}}
// CHECK-NEXT:    nvvm.barrier id = %[[ID]] number_of_threads = %[[N:.*]]{{$}}
// CHECK-NEXT:    nvvm.barrier.arrive id = %[[ID]] number_of_threads = %[[N]]{{$}}
// CHECK-NEXT:    nvvm.barrier.arrive number_of_threads = %[[N]]{{$}}
llvm.func @barriers(%id : i32, %n : i32) {
  nvvm.barrier
  nvvm.barrier id = %id
  nvvm.barrier id = %id number_of_threads = %n
  nvvm.barrier.arrive id = %id number_of_threads = %n
  nvvm.barrier.arrive number_of_threads = %n
  llvm.return
}

// The proxy fence: kind and (for async.shared) the shared-memory window, in the attribute
// dictionary as upstream prints them.
// CHECK-LABEL: llvm.func @fences()
// CHECK-NEXT:    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
llvm.func @fences() {
  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
  llvm.return
}

// TMA stores and reductions from shared memory, coordinates innermost first.
// CHECK-LABEL: llvm.func @tma_from_shared(
// CHECK-NEXT:    nvvm.cp.async.bulk.tensor.global.shared.cta %tm, %src, box[%c0, %c1] : !llvm.ptr, !llvm.ptr<3>
// CHECK-NEXT:    nvvm.cp.async.bulk.tensor.reduce %tm, %src, box[%c0, %c1] {redKind = #nvvm.tma_redux_kind<add>} : !llvm.ptr, !llvm.ptr<3>
// CHECK-NEXT:    nvvm.cp.async.bulk.tensor.reduce %tm, %src, box[%c0] {redKind = #nvvm.tma_redux_kind<max>} : !llvm.ptr, !llvm.ptr<3>
llvm.func @tma_from_shared(%tm : !llvm.ptr, %src : !llvm.ptr<3>, %c0 : i32, %c1 : i32) {
  nvvm.cp.async.bulk.tensor.global.shared.cta %tm, %src, box[%c0, %c1] : !llvm.ptr, !llvm.ptr<3>
  nvvm.cp.async.bulk.tensor.reduce %tm, %src, box[%c0, %c1] {redKind = #nvvm.tma_redux_kind<add>} : !llvm.ptr, !llvm.ptr<3>
  nvvm.cp.async.bulk.tensor.reduce %tm, %src, box[%c0] {redKind = #nvvm.tma_redux_kind<max>} : !llvm.ptr, !llvm.ptr<3>
  llvm.return
}

// CHECK-LABEL: llvm.func @shuffles(
// CHECK-NEXT:    %{{.*}} = nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32 -> f32
// CHECK-NEXT:    %{{.*}} = nvvm.shfl.sync down %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32 -> f32
// CHECK-NEXT:    %{{.*}} = nvvm.shfl.sync up %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i32 -> i32
// CHECK-NEXT:    %{{.*}} = nvvm.shfl.sync idx %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i32 -> i32
// CHECK-NEXT:    %{{.*}} = nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {return_value_and_is_valid} : f32 -> !llvm.struct<(f32, i1)>
llvm.func @shuffles(%mask : i32, %f : f32, %i : i32, %off : i32, %clamp : i32) {
  %0 = nvvm.shfl.sync bfly %mask, %f, %off, %clamp : f32 -> f32
  %1 = nvvm.shfl.sync down %mask, %f, %off, %clamp : f32 -> f32
  %2 = nvvm.shfl.sync up %mask, %i, %off, %clamp : i32 -> i32
  %3 = nvvm.shfl.sync idx %mask, %i, %off, %clamp : i32 -> i32
  %4 = nvvm.shfl.sync bfly %mask, %f, %off, %clamp {return_value_and_is_valid} : f32 -> !llvm.struct<(f32, i1)>
  llvm.return
}

// The generic form (what --print-op-generic prints) parses too.
// CHECK-LABEL: llvm.func @generic(
// CHECK-NEXT:    nvvm.barrier{{$}}
// CHECK-NEXT:    %{{.*}} = nvvm.shfl.sync idx %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32 -> f32
llvm.func @generic(%mask : i32, %f : f32) {
  "nvvm.barrier"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> ()
  %0 = "nvvm.shfl.sync"(%mask, %f, %mask, %mask) <{kind = #nvvm<shfl_kind idx>}> : (i32, f32, i32, i32) -> f32
  llvm.return
}
