// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s --split-input-file -p fusion-segment | filecheck %s --check-prefix=SEG
// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s --split-input-file -p default -t llvm | filecheck %s --check-prefix=LLVM

// fusion.scan (cumsum, cumprod, cummax, cummin along the innermost dim): one kernel, `bx` threads
// per row walking it in tiles with a carry. Each thread scans its 8 elements in registers, the
// chunk totals go through a butterfly of shuffles (a lane of the upper half puts its partner's
// total before its own), the warps' totals through shared memory, and the carry (an scf.for's
// iter_arg) into the next tile. Producers are recomputed in the kernel; a pointwise consumer of
// the scan's shape is stored from its registers (an epilogue).

// ROUND: fusion.scan max %x dim 1 : tensor<37x4097xf32> to tensor<37x4097xf32>

// A cummax of floats: torch's rule, NaN sticks (uno) and the later of equal elements wins (oge).
// CHECK-LABEL: sched.kernel @cummax_rows_k0
// CHECK-SAME: grid [37, 1, 1] block [512, 1, 1]
// CHECK-SAME: fuser.schedule = "scan of 37 rows of 4097: 512 threads per row, 1 rows per block, 8x1 elements per thread per tile, 2 tile(s) per row with a carry"
// CHECK: %warp_totals = sched.alloc : memref<16xf32, 3 : i64>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[CARRY:.*]] = %{{.*}}) -> (f32) {
// CHECK: sched.load %{{.*}} : memref<37x4097xf32> -> f32
// CHECK: arith.cmpf oge
// CHECK: arith.cmpf uno
// CHECK: sched.shfl_xor %{{.*}}, 1 : f32
// CHECK: sched.shfl_xor %{{.*}}, 16 : f32
// CHECK: sched.store %{{.*}}, %warp_totals
// CHECK: sched.barrier
// CHECK: sched.load %warp_totals
// CHECK: sched.barrier
// CHECK: sched.store %{{.*}} : f32, memref<37x4097xf32>
// CHECK: scf.yield
func.func @cummax_rows(%x: tensor<37x4097xf32>) -> tensor<37x4097xf32> {
  %0 = fusion.scan max %x dim 1 : tensor<37x4097xf32> to tensor<37x4097xf32>
  func.return %0 : tensor<37x4097xf32>
}

// LLVM-LABEL: define ptx_kernel void @cummax_rows_k0
// LLVM: call float @llvm.nvvm.shfl.sync.bfly.f32
// LLVM: call void @llvm.nvvm.barrier

// -----

// An i8 cumsum in i64 (torch's result type) of a producer: x * 3 is computed in the kernel,
// and short rows take one warp each, 8 rows to a block; the running sums cross lanes as i64.
// SEG-LABEL: func.func @int_cumsum
// SEG: fusion.segment "scan"
// SEG-SAME: fuser.plan = {sms = 132 : i64, block = 32 : i64, vector = 2 : i64}
// CHECK-LABEL: sched.kernel @int_cumsum_k0
// CHECK-SAME: block [32, 8, 1]
// CHECK-NOT: warp_totals
// CHECK: arith.muli %{{.*}}, %{{.*}} : i8
// CHECK: arith.extsi %{{.*}} : i8 to i64
// CHECK: arith.addi %{{.*}}, %{{.*}} : i64
// CHECK: sched.shfl_xor %{{.*}}, 16 : i64
// CHECK: sched.store %{{.*}} : vector<2xi64>, memref<300x34xi64>
func.func @int_cumsum(%x: tensor<300x34xi8>) -> tensor<300x34xi64> {
  %three = fusion.full 3 : tensor<300x34xi8>
  %y = fusion.mul %x, %three : tensor<300x34xi8>
  %0 = fusion.scan sum %y dim 1 : tensor<300x34xi8> to tensor<300x34xi64>
  func.return %0 : tensor<300x34xi64>
}

// -----

// A bf16 cumsum and the outputs computed from it: one scan segment (the epilogue merge) writing
// the running sum and exp(cumsum) * y; a row sum of the running sum is a kernel of its own.
// SEG-LABEL: func.func @epilogue
// SEG: fusion.segment "scan"
// SEG-SAME: "'fusion.scan' sum along dim 1 of [5, 1000] with 1 output(s) computed from it; reads 20000 B, writes 20000 B"
// SEG-SAME: fuser.merged = "epilogue
// SEG: fusion.scan sum
// SEG: fusion.exp
// SEG: fusion.yield
// SEG: fusion.segment "reduction"
// CHECK-LABEL: sched.kernel @epilogue_k0
// CHECK: sched.shfl_xor
// CHECK: math.exp
// CHECK: sched.store %{{.*}} : vector<8xbf16>
// CHECK-LABEL: sched.kernel @epilogue_k1
// CHECK-NOT: fusion.scan
func.func @epilogue(%x: tensor<5x1000xbf16>, %y: tensor<5x1000xbf16>) -> (tensor<5x1000xbf16>, tensor<5xbf16>) {
  %c = fusion.scan sum %x dim 1 : tensor<5x1000xbf16> to tensor<5x1000xbf16>
  %e = fusion.exp %c : tensor<5x1000xbf16>
  %o = fusion.mul %e, %y : tensor<5x1000xbf16>
  %s = fusion.reduce sum %c dims [1] : tensor<5x1000xbf16> to tensor<5xbf16>
  func.return %o, %s : tensor<5x1000xbf16>, tensor<5xbf16>
}
