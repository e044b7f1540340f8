// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s --split-input-file -p fusion-segment | filecheck %s --check-prefix=SEG
// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s --split-input-file -p default -t llvm | filecheck %s --check-prefix=LLVM

// fusion.sort (sort, argsort, topk along the innermost dim): one kernel, `bx` threads per row.
// The row's bits and i32 positions go to shared memory (slots past the row get position n and
// sort last); a bitonic network of compare-exchanges, a barrier after each stage, orders them by
// an unsigned key made from the bits and, on equal keys, by position (so the sort is stable);
// the first k slots are stored as values and i64 indices. Producers are recomputed in the kernel;
// pointwise consumers of the results' shape are stored from it (an epilogue).

// ROUND: %v, %i = fusion.sort %x dim 1 : tensor<37x1000xf32> to tensor<37x1000xf32>, tensor<37x1000xi64>

// A whole row of f32 in a network of 1024 slots. Each element's key is made as it goes in: -0.0
// made 0.0 (eq 0), a negative's bits complemented (xori -1), a positive's sign set (ori), every NaN
// the greatest key (ugt the infinity's bits). A step compares keys, and positions on equal keys; a
// descending half of a merge (lo & s) swaps on the complement of the test. A value that comes back
// a zero or a NaN is read again at its position (the scf.if), for its own sign and bits.
// SEG-LABEL: func.func @sort_rows
// SEG: fusion.segment "sort"
// SEG-SAME: "'fusion.sort' ascending along dim 1 of [37, 1000]; reads 148000 B, writes 444000 B"
// SEG-SAME: fuser.plan = {sms = 132 : i64, block = 512 : i64}
// CHECK-LABEL: sched.kernel @sort_rows_k0
// CHECK-SAME: grid [37, 1, 1] block [512, 1, 1]
// CHECK-SAME: fuser.schedule = "sort of 37 rows of 1000, first 1000 kept: 512 threads per row, 1 rows per block, a bitonic network of 1024 in shared memory (55 stages, 8192 bytes of shared memory)"
// CHECK: %sort_keys = sched.alloc : memref<1024xi32, 3 : i64>
// CHECK: %sort_pos = sched.alloc : memref<1024xi32, 3 : i64>
// CHECK: scf.for
// CHECK: sched.load %{{.*}} : memref<37x1000xf32> -> f32
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.andi
// CHECK: arith.cmpi ugt
// CHECK: arith.cmpi eq
// CHECK: arith.cmpi slt
// CHECK: arith.xori
// CHECK: arith.ori
// CHECK: sched.store %{{.*}}, %sort_keys
// CHECK: sched.store %{{.*}}, %sort_pos
// CHECK: sched.barrier
// CHECK: sched.load %sort_keys
// CHECK: sched.load %sort_keys
// CHECK: sched.load %sort_pos
// CHECK: sched.load %sort_pos
// CHECK-NEXT: arith.cmpi ult
// CHECK-NEXT: arith.cmpi uge
// CHECK-NEXT: arith.cmpi ult
// CHECK-NEXT: arith.cmpi eq
// CHECK-NEXT: arith.cmpi ult
// CHECK: arith.cmpi ne
// CHECK-NEXT: arith.xori %{{.*}}, %{{.*}} : i1
// CHECK: sched.store %{{.*}}, %sort_keys
// CHECK: sched.store %{{.*}}, %sort_pos
// CHECK: sched.store %{{.*}}, %sort_pos
// CHECK-NEXT: sched.barrier
// CHECK-COUNT-54: sched.barrier
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK: sched.load %{{.*}} : memref<37x1000xf32> -> f32
// CHECK: } else {
// CHECK: arith.extui %{{.*}} : i32 to i64
// CHECK: sched.store %{{.*}} : f32, memref<37x1000xf32>
// CHECK: sched.store %{{.*}} : i64, memref<37x1000xi64>
// CHECK-NOT: sched.barrier
// CHECK: sched.return
func.func @sort_rows(%x: tensor<37x1000xf32>) -> (tensor<37x1000xf32>, tensor<37x1000xi64>) {
  %v, %i = fusion.sort %x dim 1 : tensor<37x1000xf32> to tensor<37x1000xf32>, tensor<37x1000xi64>
  func.return %v, %i : tensor<37x1000xf32>, tensor<37x1000xi64>
}

// LLVM-LABEL: define ptx_kernel void @sort_rows_k0
// LLVM: call void @llvm.nvvm.barrier

// -----

// topk of bf16 rows of 32000 (k = 8, largest): each of 256 threads walks columns t, t + 256, ...
// keeping its first 8 (key, position) as the loop's iter_args; an element that goes before the
// last entry takes the insertion network (scf.if), the rest pass. The 2048 candidates go through
// the network; descending complements each key (the second xori with -1).
// SEG-LABEL: func.func @topk_rows
// SEG: fusion.segment "sort"
// SEG-SAME: "'fusion.sort' descending along dim 1 of [37, 32000], the first 8; reads 2368000 B, writes 2960 B"
// CHECK-LABEL: sched.kernel @topk_rows_k0
// CHECK-SAME: grid [37, 1, 1] block [256, 1, 1]
// CHECK-SAME: each of 256 threads keeps its first 8 in registers, 2048 candidates in a bitonic network of 2048 (66 stages, 12288 bytes of shared memory)
// CHECK: %sort_keys = sched.alloc : memref<2048xi16, 3 : i64>
// CHECK: scf.for %{{.*}} iter_args({{.*}}) -> (i16, i32, i16, i32, i16, i32, i16, i32, i16, i32, i16, i32, i16, i32, i16, i32) {
// CHECK: sched.load %{{.*}} : memref<37x32000xbf16> -> bf16
// CHECK: arith.bitcast %{{.*}} : bf16 to i16
// CHECK: arith.xori %{{.*}}, %[[ONES:.*]] : i16
// CHECK: scf.if %{{.*}} -> (i16, i32, i16
// CHECK: } else {
// CHECK: scf.yield
// CHECK: sched.store %{{.*}}, %sort_keys
// CHECK: sched.barrier
// CHECK-COUNT-66: sched.barrier
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK: sched.store %{{.*}} : bf16, memref<37x8xbf16>
func.func @topk_rows(%x: tensor<37x32000xbf16>) -> (tensor<37x8xbf16>, tensor<37x8xi64>) {
  %v, %i = fusion.sort %x dim 1 descending k 8 : tensor<37x32000xbf16> to tensor<37x8xbf16>, tensor<37x8xi64>
  func.return %v, %i : tensor<37x8xbf16>, tensor<37x8xi64>
}

// -----

// An argsort of a mask made by a producer (x > 0, recomputed in the kernel) whose indices feed a
// pointwise consumer (indices + y, an epilogue in the same segment); many short rows, a warp each,
// 8 rows to a block; the values nobody reads are not stored.
// SEG-LABEL: func.func @argsort_mask
// SEG: fusion.segment "sort"
// SEG-SAME: with 1 output(s) computed from it
// SEG: fusion.cmp
// SEG: fusion.sort
// SEG: fusion.add
// SEG-NOT: fusion.segment
// CHECK-LABEL: sched.kernel @argsort_mask_k0
// CHECK-SAME: block [32, 8, 1]
// CHECK-SAME: a bitonic network of 8
// CHECK: %sort_keys = sched.alloc : memref<64xi8, 3 : i64>
// CHECK: arith.cmpf ogt
// CHECK: arith.extui %{{.*}} : i1 to i8
// CHECK: arith.addi %{{.*}}, %{{.*}} : i64
// CHECK: sched.store %{{.*}} : i64, memref<300x7xi64>
// CHECK-NOT: memref<300x7xi1>
// CHECK: sched.return
func.func @argsort_mask(%x: tensor<300x7xf32>, %y: tensor<300x7xi64>) -> tensor<300x7xi64> {
  %zero = fusion.full 0.0 : tensor<300x7xf32>
  %m = fusion.cmp gt, %x, %zero : tensor<300x7xf32>
  %v, %i = fusion.sort %m dim 1 : tensor<300x7xi1> to tensor<300x7xi1>, tensor<300x7xi64>
  %o = fusion.add %i, %y : tensor<300x7xi64>
  func.return %o : tensor<300x7xi64>
}
