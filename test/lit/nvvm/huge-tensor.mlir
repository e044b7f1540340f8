// RUN: fuser-opt %s -p to-sched,convert-sched-to-nvvm | filecheck %s
// RUN: not fuser-opt %s -p 'to-sched,convert-sched-to-nvvm{index_bitwidth=32}' 2>&1 | filecheck %s --check-prefix=I32

// A tensor past 2^31 elements (99999999999 x 8 = 8e11): offsets are 64-bit by default, so the
// kernel addresses all of it (the grid-stride loop covers any extent; a tensor larger than the
// device's memory is refused when it is allocated at launch). 32-bit offsets would wrap: refused.
// CHECK:       llvm.func @h_k0
// CHECK:         llvm.getelementptr {{.*}} : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// I32: error: pass 'convert-sched-to-nvvm' failed: 'sched.kernel' @h_k0 at {{.*}}huge-tensor.mlir:[[# @LINE + 2]]:3: buffer memref<99999999999x8xf32> has 799999999992 elements, past the 2^31 - 1 that index-bitwidth=32 offsets reach; use index-bitwidth=64
func.func @h(%x: tensor<99999999999x8xf32>) -> tensor<99999999999x8xf32> {
  %y = fusion.relu %x : tensor<99999999999x8xf32>
  func.return %y : tensor<99999999999x8xf32>
}
