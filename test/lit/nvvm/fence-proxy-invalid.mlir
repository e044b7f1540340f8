// RUN: fuser-opt %s --split-input-file --verify-diagnostics

// A shared-memory window goes with async.shared only, and async.shared needs one.
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
