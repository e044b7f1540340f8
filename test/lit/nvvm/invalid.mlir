// RUN: fuser-opt %s --split-input-file --verify-diagnostics

// Verifier errors of the Hopper nvvm ops. A proxy fence's shared-memory window goes with
// async.shared only, and async.shared needs one.
llvm.func @no_space() {
  // expected-error @+1 {{'nvvm.fence.proxy' op takes a shared-memory space exactly when its kind is async.shared}}
  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>}
  llvm.return
}

// -----

llvm.func @space_on_global() {
  // expected-error @+1 {{'nvvm.fence.proxy' op takes a shared-memory space exactly when its kind is async.shared}}
  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>, space = #nvvm.shared_space<cta>}
  llvm.return
}

// -----

llvm.func @tma_from_global(%tm : !llvm.ptr, %src : !llvm.ptr<1>, %c0 : i32) {
  // expected-error @+1 {{'nvvm.cp.async.bulk.tensor.global.shared.cta' op source must be a shared-memory pointer (!llvm.ptr<3>), got address space 1}}
  nvvm.cp.async.bulk.tensor.global.shared.cta %tm, %src, box[%c0] : !llvm.ptr, !llvm.ptr<1>
  llvm.return
}

// -----

// nvvm.wgmma.mma_async: shape, types and accumulator registers as PTX allows them.
llvm.func @wgmma_m(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op shape m = 128: wgmma is m64}}
  %r = nvvm.wgmma.mma_async %a, %b, %c, <m = 128, n = 8, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_k(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op shape k = 32: a bf16 wgmma has k = 16}}
  %r = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 32>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_n(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op shape n = 12: must be a multiple of 8 in 8..256}}
  %r = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 12, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_registers(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op accumulator operand must be a struct of 8 f32 for n = 16}}
  %r = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 16, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_mixed(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op A is bf16 but B is f16}}
  %r = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_transposed_fp8(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op only f16 and bf16 operands may be transposed (A col / B row), not e4m3}}
  %r = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <col>], B[<e4m3>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_accumulator_type(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op a bf16 wgmma accumulates in f32, not s32}}
  %r = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 16>, D[<s32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_bad_attr(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{expected #nvvm.wgmma_scale_out<...>}}
  %r = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 16>, D[<f32>, #nvvm.wgmma_scale_in<one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

// The TMA load's destination is a shared::cluster address.
llvm.func @tma_load_to_cta_pointer(%smem: !llvm.ptr<3>, %tmap: !llvm.ptr, %x: i32) {
  // expected-error @+1 {{'nvvm.cp.async.bulk.tensor.shared.cluster.global' op destination must be a shared::cluster pointer (!llvm.ptr<7>), got !llvm.ptr<3>}}
  nvvm.cp.async.bulk.tensor.shared.cluster.global %smem, %tmap, %smem, box[%x] : !llvm.ptr<3>, !llvm.ptr
  llvm.return
}

// -----

llvm.func @tma_load_six_coordinates(%d: !llvm.ptr<7>, %tmap: !llvm.ptr, %bar: !llvm.ptr<3>, %x: i32) {
  // expected-error @+1 {{'nvvm.cp.async.bulk.tensor.shared.cluster.global' op takes 1 to 5 coordinates, got 6}}
  nvvm.cp.async.bulk.tensor.shared.cluster.global %d, %tmap, %bar, box[%x, %x, %x, %x, %x, %x] : !llvm.ptr<7>, !llvm.ptr
  llvm.return
}

// -----

llvm.func @cast_to_itself(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{'llvm.addrspacecast' op casts !llvm.ptr<3> to itself}}
  %q = llvm.addrspacecast %p : !llvm.ptr<3> to !llvm.ptr<3>
  llvm.return
}

// -----

llvm.func @mapa_from_global(%p: !llvm.ptr<1>, %cta: i32) {
  // expected-error @+1 {{'nvvm.mapa' op maps a !llvm.ptr<3> to a !llvm.ptr<7>, got !llvm.ptr<1> -> !llvm.ptr<7>}}
  %r = nvvm.mapa %p, %cta : !llvm.ptr<1> -> !llvm.ptr<7>
  llvm.return
}

// -----

llvm.func @remote_arrive_state(%r: !llvm.ptr<7>) {
  // expected-error @+1 {{'nvvm.mbarrier.arrive' op on a shared::cluster mbarrier returns no state}}
  %s = nvvm.mbarrier.arrive %r : !llvm.ptr<7> -> i64
  llvm.return
}

// -----

llvm.func @wait_on_global(%p: !llvm.ptr<1>, %x: i32) {
  // expected-error @+1 {{'nvvm.mbarrier.try_wait.parity' op waits on a shared-memory mbarrier (!llvm.ptr<3>), got !llvm.ptr<1>}}
  nvvm.mbarrier.try_wait.parity %p, %x, %x : !llvm.ptr<1>, i32, i32
  llvm.return
}

// -----

func.func @descriptor_box_rank(%u: memref<*xbf16>, %c: index) {
  // expected-error @+1 {{'nvgpu.tma.create.descriptor' op has 1 box dimensions for a descriptor of rank 2}}
  %d = nvgpu.tma.create.descriptor %u box[%c] : memref<*xbf16> -> !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
  func.return
}

// -----

func.func @descriptor_swizzle(%u: memref<*xbf16>, %c: index) {
  // expected-error @+1 {{swizzle must be one of swizzle_none, swizzle_32b, swizzle_64b, swizzle_128b, got swizzle_256b}}
  %d = nvgpu.tma.create.descriptor %u box[%c, %c] : memref<*xbf16> -> !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_256b, l2promo = l2promo_256b, oob = zero, interleave = none>
  func.return
}

// -----

// An address of a global that does not exist (was: invalid LLVM IR, and a Python traceback).
module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @f() attributes {nvvm.kernel} {
      // expected-error @+1 {{'llvm.mlir.addressof' op refers to @partials, which no llvm.mlir.global or llvm.func of the enclosing gpu.module defines}}
      %p = llvm.mlir.addressof @partials : !llvm.ptr<3>
      llvm.return
    }
  }) : () -> ()
}

// -----

llvm.func @bad_griddep() {
  // expected-error @+1 {{'nvvm.griddepcontrol' op kind must be wait or launch_dependents, got 'launch'}}
  nvvm.griddepcontrol launch
  llvm.return
}
