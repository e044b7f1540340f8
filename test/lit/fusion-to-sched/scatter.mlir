// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// fusion.scatter (issue 32) is computed where its result is read, deterministically and with
// no atomics: each result element starts from the input's value and takes the src elements
// whose index lands on it, in index order (a select per position: the last wins; `add`: a sum
// in f32, rounded once). A short index line is read whole (an scf.for over it); a long one is
// sorted first (fusion-sort-scatters: a sort kernel) and each element binary-searches the
// sorted chunk for its range of positions, then reads them in order.

// ROUND: %r = fusion.scatter %x, %i, %s dim 1 : tensor<9x11xf32>, tensor<9x1xi32>, tensor<9x1xf32> to tensor<9x11xf32>
// ROUND: %r = fusion.scatter %w, %ids, %g dim 0 add : tensor<1000x64xbf16>, tensor<300x1xi64>, tensor<300x64xbf16> to tensor<1000x64xbf16>

// The one-hot: one kernel, a loop over the row's one index that normalizes it, compares it
// with the element's column and selects src's element or keeps the input's.
// CHECK-LABEL: sched.kernel @one_hot_k0
// CHECK: %[[X:.*]] = sched.load %3[%{{.*}}, %{{.*}}] : memref<9x11xf32> -> f32
// CHECK: %[[COL:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[OUT:.*]] = scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[X]]) -> (f32) {
// CHECK: %[[I:.*]] = sched.load %1[%{{.*}}, %[[J]]] : memref<9x1xi32> -> i32
// CHECK: arith.maxsi
// CHECK: %[[POS:.*]] = arith.minsi
// CHECK: %[[HIT:.*]] = arith.cmpi eq, %[[POS]], %[[COL]] : i32
// CHECK: %[[S:.*]] = sched.load %2[%{{.*}}, %[[J]]] : memref<9x1xf32> -> f32
// CHECK: %[[NEW:.*]] = arith.select %[[HIT]], %[[S]], %[[ACC]] : f32
// CHECK: scf.yield %[[NEW]] : f32
// CHECK: sched.store %[[OUT]], %0[%{{.*}}, %{{.*}}] : f32, memref<9x11xf32>
// CHECK-NOT: sched.atomic
func.func @one_hot(%x: tensor<9x11xf32>, %i: tensor<9x1xi32>, %s: tensor<9x1xf32>) -> tensor<9x11xf32> {
  %r = fusion.scatter %x, %i, %s dim 1 : tensor<9x11xf32>, tensor<9x1xi32>, tensor<9x1xf32> to tensor<9x11xf32>
  func.return %r : tensor<9x11xf32>
}

// The embedding backward: a sort kernel of the 300 ids, then the sorted segment pass: each
// lane group of a weight row (one shared id line: one search for its lanes) finds the first
// sorted id not below its row and the first above it (two 9-step searches of the i32 sorted
// ids, unrolled, one probe a step, in 32-bit arithmetic), then sums its rows of the gradient in token order, read as 16-byte vectors (the
// i64 positions, read one per lane group, do not narrow them), into f32, stored as bf16.
// CHECK-LABEL: sched.kernel @emb_bwd_k0
// CHECK-SAME: fuser.schedule = "sort of 1 rows of 300, first 300 kept
// CHECK-LABEL: sched.kernel @emb_bwd_k1
// CHECK: %[[W:.*]] = sched.load %4[%[[ROW:.*]], %[[COL:.*]]] : memref<1000x64xbf16> -> vector<8xbf16>
// CHECK: %[[ID:.*]] = arith.index_cast %[[ROW]] : index to i32
// CHECK: %[[NEXT:.*]] = arith.addi %[[ID]], %{{.*}} : i32
// CHECK: scf.for %[[K:.*]] = %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NOT: scf.for
// CHECK-COUNT-9: arith.cmpi slt, %{{.*}}, %[[ID]] : i32
// CHECK: %[[LO:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NOT: scf.for
// CHECK: sched.load %1[%{{.*}}, %[[K]], %{{.*}}] : memref<1x1x300xi32> -> i32
// CHECK-COUNT-9: arith.cmpi slt, %{{.*}}, %[[NEXT]] : i32
// CHECK: %[[HI:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: scf.for %[[C:.*]] = %[[LO]] to %[[HI]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: %[[O:.*]] = sched.load %2[%{{.*}}, %[[K]], %[[C]]] : memref<1x1x300xi64> -> i64
// CHECK: %[[T:.*]] = arith.index_cast %[[O]] : i64 to index
// CHECK: %[[G:.*]] = sched.load %3[%{{.*}}, %[[COL]]] : memref<300x64xbf16> -> vector<8xbf16>
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: sched.store %{{.*}}, %0[%[[ROW]], %[[COL]]] : vector<8xbf16>, memref<1000x64xbf16>
// CHECK: sched.launch @emb_bwd_k0
// CHECK: sched.launch @emb_bwd_k1
// PTX-NOT: red.global
// PTX-NOT: atom.global
// PTX: .entry emb_bwd_k1
func.func @emb_bwd(%g: tensor<300x64xbf16>, %ids: tensor<300x1xi64>, %w: tensor<1000x64xbf16>) -> tensor<1000x64xbf16> {
  %r = fusion.scatter %w, %ids, %g dim 0 add : tensor<1000x64xbf16>, tensor<300x1xi64>, tensor<300x64xbf16> to tensor<1000x64xbf16>
  func.return %r : tensor<1000x64xbf16>
}
