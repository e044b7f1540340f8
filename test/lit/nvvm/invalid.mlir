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
