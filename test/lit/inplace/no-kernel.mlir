// RUN: fuser-opt %s -p default | filecheck %s
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX
// RUN: fuser-opt %s -p default -t llvm | filecheck %s --check-prefix=LLVM

// An input returned into itself needs no kernel: the host function launches nothing, and the
// PTX and LLVM IR say so instead of failing (the compile driver once raised "no gpu.module").
// CHECK:     func.func @same(%x: memref<4xf32>, %x_1: memref<4xf32> {fusion.alias = 0 : i64})
// CHECK-NOT: launch
// CHECK:     func.return
// PTX:  // @same launches no kernel (nothing to compute): no PTX to emit
// LLVM: ; @same launches no kernel (nothing to compute): no LLVM to emit
func.func @same(%x: tensor<4xf32>) -> (tensor<4xf32> {fusion.alias = 0 : i64}) {
  func.return %x : tensor<4xf32>
}
