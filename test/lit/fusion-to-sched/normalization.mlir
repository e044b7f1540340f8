// RUN: fuser-opt %s --split-input-file -p 'fusion-translate-welford{mode=never},fusion-segment,convert-fusion-to-sched,sched-alias-smem' | filecheck %s
// mode=never: these cases check the Welford state's kernels (fusion-segment alone would take the
// two-pass form where the row stays on chip).
// RUN: fuser-opt %s --split-input-file -p 'fusion-segment,convert-fusion-to-sched{persistent=false}' | filecheck %s --check-prefix=SPLIT

// The normalization scheduler keeps a row in registers between a reduction and the outputs
// computed from it at that row, so x - max(x) reads x once, in one kernel. Without it (or when
// the row does not fit) the max is materialized and a second kernel reads x again.
// CHECK-LABEL: sched.kernel @centered_k0
// CHECK-SAME:    attributes {fuser.schedule = "persistent: 8 row(s)/block, 32 threads/row, 2 x 4-element vectors/thread in registers"}
// CHECK-COUNT-2: sched.load %{{.*}} : memref<8x256xf32> -> vector<4xf32>
// CHECK-NOT:     sched.load %{{.*}} : memref<8x256xf32>
// CHECK:         arith.maximumf
// CHECK:         sched.shfl_xor
// CHECK-NOT:     sched.barrier
// CHECK:         arith.subf
// CHECK:         sched.store %{{.*}} : vector<4xf32>, memref<8x256xf32>
// CHECK-NOT:   sched.kernel @centered_k1
// SPLIT-LABEL: sched.kernel @centered_k0
// SPLIT-NOT:     fuser.schedule
// SPLIT:       sched.kernel @centered_k1
// SPLIT:       sched.workspace : memref<8x1xf32>
func.func @centered(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %m = fusion.reduce max %x dims [1] keepdim : tensor<8x256xf32> to tensor<8x1xf32>
  %r = fusion.reshape %m : tensor<8x1xf32> to tensor<8xf32>
  %b = fusion.broadcast %r dims [1] : tensor<8xf32> to tensor<8x256xf32>
  %y = fusion.sub %x, %b : tensor<8x256xf32>
  func.return %y : tensor<8x256xf32>
}

// -----
// Layer norm (bf16 in and out, f32 statistics, weight and bias): one kernel, 16-byte loads of
// 8 bf16, the Welford state (avg, M2, n) merged across the row's threads with shuffles, the
// normalized row stored as bf16, then the mean and 1/std by one thread per row (last: a store
// before the row's loads and stores would hold them back, as they may alias it).
// CHECK-LABEL: sched.kernel @layer_norm_k0
// CHECK-SAME:    grid [512, 1, 1] block [32, 8, 1]
// CHECK-SAME:    fuser.schedule = "persistent: 8 row(s)/block, 32 threads/row, 4 x 8-element vectors/thread in registers"
// CHECK-COUNT-4: sched.load %{{.*}} : memref<4096x1024xbf16> -> vector<8xbf16>
// CHECK:         arith.divf
// CHECK-COUNT-3: sched.shfl_xor %{{.*}}, 16 : f32
// CHECK:         math.rsqrt
// CHECK-NOT:     sched.store %{{.*}} : f32, memref<4096xf32>
// CHECK-COUNT-4: sched.store %{{.*}} : vector<8xbf16>, memref<4096x1024xbf16>
// CHECK:         scf.if
// CHECK:           sched.store %{{.*}} : f32, memref<4096xf32>
// CHECK-NOT:   sched.kernel @layer_norm_k1
// The statistic no output returns (the sum of x - mean) stays in registers: no workspace.
// CHECK:       func.func @layer_norm
// CHECK-NEXT:    sched.launch @layer_norm_k0
// CHECK-NEXT:    func.return
// SPLIT-LABEL: sched.kernel @layer_norm_k0
// SPLIT:       sched.kernel @layer_norm_k1
func.func @layer_norm(%x: tensor<4096x1024xbf16>, %w: tensor<1024xf32>, %b: tensor<1024xf32>) -> (tensor<4096x1024xbf16>, tensor<4096xf32>, tensor<4096xf32>) {
  %var, %mean = fusion.var_mean %x dims [1] correction 0 : tensor<4096x1024xbf16> to tensor<4096xf32>, tensor<4096xf32>
  %eps = fusion.full 1.0e-05 : tensor<4096xf32>
  %ve = fusion.add %var, %eps : tensor<4096xf32>
  %rstd = fusion.rsqrt %ve : tensor<4096xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<4096xf32> to tensor<4096x1024xf32>
  %rb = fusion.broadcast %rstd dims [1] : tensor<4096xf32> to tensor<4096x1024xf32>
  %xf = fusion.cast %x : tensor<4096x1024xbf16> to tensor<4096x1024xf32>
  %d = fusion.sub %xf, %mb : tensor<4096x1024xf32>
  %n = fusion.mul %d, %rb : tensor<4096x1024xf32>
  %wb = fusion.broadcast %w dims [0] : tensor<1024xf32> to tensor<4096x1024xf32>
  %bb = fusion.broadcast %b dims [0] : tensor<1024xf32> to tensor<4096x1024xf32>
  %y0 = fusion.mul %n, %wb : tensor<4096x1024xf32>
  %y1 = fusion.add %y0, %bb : tensor<4096x1024xf32>
  %y = fusion.cast %y1 : tensor<4096x1024xf32> to tensor<4096x1024xbf16>
  func.return %y, %mean, %rstd : tensor<4096x1024xbf16>, tensor<4096xf32>, tensor<4096xf32>
}

// -----
// Softmax: the sum needs the max first, so the kernel runs two stages over the same registers
// (two shuffle rounds), then divides and stores; x is loaded once.
// CHECK-LABEL: sched.kernel @softmax_k0
// CHECK-COUNT-4: sched.load %{{.*}} : memref<1000x4096xf32> -> vector<4xf32>
// CHECK-NOT:     sched.load %{{.*}} : memref<1000x4096xf32>
// CHECK:         arith.maximumf
// CHECK:         sched.barrier
// CHECK:         math.exp
// CHECK:         sched.barrier
// CHECK:         arith.divf
// CHECK-NOT:   sched.kernel @softmax_k1
func.func @softmax(%x: tensor<1000x4096xf32>) -> tensor<1000x4096xf32> {
  %m = fusion.reduce max %x dims [1] : tensor<1000x4096xf32> to tensor<1000xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<1000xf32> to tensor<1000x4096xf32>
  %d = fusion.sub %x, %mb : tensor<1000x4096xf32>
  %e = fusion.exp %d : tensor<1000x4096xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<1000x4096xf32> to tensor<1000xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<1000xf32> to tensor<1000x4096xf32>
  %y = fusion.div %e, %sb : tensor<1000x4096xf32>
  func.return %y : tensor<1000x4096xf32>
}

// -----
// Rows of 65536 bf16 (128 KB) are too long for registers: each block copies its row into
// dynamic shared memory once (16-byte vectors, four loads ahead of their stores), then the
// statistics and the normalized output loop over it there. Still one read of x from global
// memory and one write of y. One block an SM (its row takes more than half the shared memory):
// no nvvm.minctasm.
// CHECK-LABEL: sched.kernel @smem_rows_k0
// CHECK-SAME:    grid [8, 1, 1] block [1024, 1, 1] smem 131456
// CHECK-SAME:    fuser.schedule = "persistent: 1 row(s)/block, 1024 threads/row, 8 x 8-element vectors/thread in 131072 bytes of shared memory"
// CHECK-NOT:     nvvm.minctasm
// CHECK:         %[[ROW:.*]] = sched.alloc offset 0 : i64 : memref<1x65536xbf16, 3 : i64>
// CHECK-COUNT-4: sched.load %{{.*}} : memref<8x65536xbf16> -> vector<8xbf16>
// CHECK-COUNT-4: sched.store %{{.*}}, %[[ROW]][%{{.*}}, %{{.*}}] : vector<8xbf16>, memref<1x65536xbf16, 3 : i64>
// CHECK-COUNT-4: sched.load %{{.*}} : memref<8x65536xbf16> -> vector<8xbf16>
// CHECK-COUNT-4: sched.store %{{.*}}, %[[ROW]][%{{.*}}, %{{.*}}] : vector<8xbf16>, memref<1x65536xbf16, 3 : i64>
// CHECK:         sched.barrier
// CHECK:         sched.for bind(thread.x) %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK:           sched.load %[[ROW]]
// CHECK-NOT:     sched.load %{{.*}} : memref<8x65536xbf16> ->
// CHECK:         scf.for
// CHECK:           sched.load %[[ROW]]
// CHECK:           sched.store %{{.*}} : vector<8xbf16>, memref<8x65536xbf16>
// CHECK-NOT:   sched.kernel @smem_rows_k1
func.func @smem_rows(%x: tensor<8x65536xbf16>) -> tensor<8x65536xbf16> {
  %var, %mean = fusion.var_mean %x dims [1] correction 0 : tensor<8x65536xbf16> to tensor<8xf32>, tensor<8xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<8xf32> to tensor<8x65536xf32>
  %xf = fusion.cast %x : tensor<8x65536xbf16> to tensor<8x65536xf32>
  %d = fusion.sub %xf, %mb : tensor<8x65536xf32>
  %y = fusion.cast %d : tensor<8x65536xf32> to tensor<8x65536xbf16>
  func.return %y : tensor<8x65536xbf16>
}

// -----
// A language model's log-softmax: 50257-wide rows (odd: one-element accesses) of an 8x1024
// batch, read through a reshape. The input is still read at the row element for element, so
// its rows (100 KB of bf16) are copied into shared memory from the 3-D buffer; the max, the
// sum and the output each loop over the copy, and x is not read from global memory again. The
// reshape keeps the column dim, so a column index needs no division.
// CHECK-LABEL: sched.kernel @vocab_rows_k0
// CHECK-SAME:    grid [6, 1, 1] block [1024, 1, 1]
// CHECK-SAME:    fuser.schedule = "persistent: 1 row(s)/block, 1024 threads/row, 50 x 1-element vectors/thread in 100514 bytes of shared memory", nvvm.minctasm = 2
// CHECK:         %[[ROW:.*]] = sched.alloc offset 0 : i64 : memref<1x50257xbf16, 3 : i64>
// CHECK-COUNT-16: sched.load %{{.*}} : memref<2x3x50257xbf16> -> bf16
// CHECK:         sched.store %{{.*}}, %[[ROW]]
// CHECK:         sched.barrier
// CHECK-NOT:     sched.load %{{.*}} : memref<2x3x50257xbf16>
// CHECK:         sched.for bind(thread.x) {{.*}} -> (f32) {
// CHECK-NOT:       arith.constant 50257
// CHECK:           sched.load %[[ROW]]
// CHECK:           arith.maximumf
// CHECK:         sched.for bind(thread.x) {{.*}} -> (f32) {
// CHECK:           sched.load %[[ROW]]
// CHECK:           math.exp
// CHECK:         scf.for
// CHECK-COUNT-8:   sched.load %[[ROW]]
// CHECK-COUNT-8:   sched.store %{{.*}} : f32, memref<6x50257xf32>
// CHECK-NOT:   sched.kernel @vocab_rows_k1
func.func @vocab_rows(%x: tensor<2x3x50257xbf16>) -> tensor<6x50257xf32> {
  %xf = fusion.cast %x : tensor<2x3x50257xbf16> to tensor<2x3x50257xf32>
  %r = fusion.reshape %xf : tensor<2x3x50257xf32> to tensor<6x50257xf32>
  %m = fusion.reduce max %r dims [1] : tensor<6x50257xf32> to tensor<6xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<6xf32> to tensor<6x50257xf32>
  %z = fusion.sub %r, %mb : tensor<6x50257xf32>
  %e = fusion.exp %z : tensor<6x50257xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<6x50257xf32> to tensor<6xf32>
  %l = fusion.log %s : tensor<6xf32>
  %lb = fusion.broadcast %l dims [1] : tensor<6xf32> to tensor<6x50257xf32>
  %y = fusion.sub %z, %lb : tensor<6x50257xf32>
  func.return %y : tensor<6x50257xf32>
}

// -----
// A loss gradient whose sum is of the labels alone (a one-hot row): the reduction reads no
// full-size tensor, so nothing is copied into shared memory; the logits are read once, by the
// output's loop after the sum, straight from global memory (a 100 KB copy per row would only
// cost occupancy; it was made before, as for a row the reduction reads). The output's loop
// runs in rounds of 8 elements a thread (6 rounds of 8 x 1024 cover 49152 of the 50257), all
// 8 loads of a round ahead of its stores, so that they are in flight together; the round
// checks no bounds, and a loop of one element a thread does the remaining 1105. Two blocks
// share an SM (nvvm.minctasm: 32 registers a thread).
// CHECK-LABEL: sched.kernel @label_sum_rows_k0
// CHECK-SAME:    fuser.schedule = "persistent: 1 row(s)/block, 1024 threads/row, 50 x 1-element vectors/thread looped, nothing cached", nvvm.minctasm = 2
// CHECK-NOT:     sched.alloc {{.*}} memref<1x50257
// CHECK:         sched.for bind(thread.x) {{.*}} -> (f32) {
// CHECK-NOT:       sched.load %{{.*}} : memref<6x50257xbf16>
// CHECK:         %[[ROUNDS:.*]] = arith.constant 6 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[ROUNDS]] step
// CHECK-NOT:       arith.minui
// CHECK-COUNT-8:   sched.load %{{.*}} : memref<6x50257xbf16>
// CHECK-NOT:       sched.load %{{.*}} : memref<6x50257xbf16>
// CHECK-COUNT-8:   sched.store %{{.*}} : bf16, memref<6x50257xbf16>
// CHECK-NOT:       sched.store
// CHECK:         %[[REST:.*]] = arith.constant 49152 : index
// CHECK:         sched.for bind(thread.x) %{{.*}} = %[[REST]] to
// CHECK:           sched.load %{{.*}} : memref<6x50257xbf16>
// CHECK-NOT:       sched.load %{{.*}} : memref<6x50257xbf16>
// CHECK:           sched.store %{{.*}} : bf16, memref<6x50257xbf16>
// CHECK-NOT:   sched.kernel @label_sum_rows_k1
func.func @label_sum_rows(%logits: tensor<6x50257xbf16>, %lse: tensor<6xf32>, %labels: tensor<6xi64>) -> tensor<6x50257xbf16> {
  %iota = fusion.iota start 0 step 1 : tensor<50257xi64>
  %ib = fusion.broadcast %iota dims [0] : tensor<50257xi64> to tensor<6x50257xi64>
  %lb = fusion.broadcast %labels dims [1] : tensor<6xi64> to tensor<6x50257xi64>
  %hit = fusion.cmp eq, %ib, %lb : tensor<6x50257xi64>
  %m1 = fusion.full -1.0 : tensor<6x50257xf32>
  %z = fusion.full 0.0 : tensor<6x50257xf32>
  %onehot = fusion.where %hit, %m1, %z : tensor<6x50257xf32>
  %s = fusion.reduce sum %onehot dims [1] : tensor<6x50257xf32> to tensor<6xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<6xf32> to tensor<6x50257xf32>
  %x = fusion.cast %logits : tensor<6x50257xbf16> to tensor<6x50257xf32>
  %lseb = fusion.broadcast %lse dims [1] : tensor<6xf32> to tensor<6x50257xf32>
  %d = fusion.sub %x, %lseb : tensor<6x50257xf32>
  %p = fusion.exp %d : tensor<6x50257xf32>
  %ps = fusion.mul %p, %sb : tensor<6x50257xf32>
  %g = fusion.sub %onehot, %ps : tensor<6x50257xf32>
  %gb = fusion.cast %g : tensor<6x50257xf32> to tensor<6x50257xbf16>
  func.return %gb : tensor<6x50257xbf16>
}

// -----
// The same rows reached through a permute are not read at the row element for element, so
// there is nothing to copy; rather than re-read each row from global memory in every stage,
// the general plan runs: the max split across blocks, its combination, then the output.
// CHECK-LABEL: sched.kernel @moved_rows_k0
// CHECK-NOT:     persistent
// CHECK-LABEL: sched.kernel @moved_rows_k2
// CHECK-SAME:    memref<6x50257xf32>
func.func @moved_rows(%x: tensor<50257x6xbf16>) -> tensor<6x50257xf32> {
  %p = fusion.permute %x [1, 0] : tensor<50257x6xbf16> to tensor<6x50257xbf16>
  %r = fusion.cast %p : tensor<6x50257xbf16> to tensor<6x50257xf32>
  %m = fusion.reduce max %r dims [1] : tensor<6x50257xf32> to tensor<6xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<6xf32> to tensor<6x50257xf32>
  %y = fusion.sub %r, %mb : tensor<6x50257xf32>
  func.return %y : tensor<6x50257xf32>
}

// -----
// Rows of 55296 f32 (216 KB): the block reductions' scratch (here one Welford state per warp,
// 384 bytes) takes under 1 KB now that sched-alias-smem places it beside the row (successive
// reductions share it), so the row gets the rest of the block's 227 KB and stays on chip; it
// did not with the 200 KB row budget before.
// CHECK-LABEL: sched.kernel @wide_rows_k0
// CHECK-SAME:    smem 221568
// CHECK-SAME:    fuser.schedule = "persistent: 1 row(s)/block, 1024 threads/row, 14 x 4-element vectors/thread in 221184 bytes of shared memory"
// CHECK-SAME:    fuser.smem = "peak 221568 bytes, 221568 without reuse"
// CHECK-NOT:   sched.kernel @wide_rows_k1
func.func @wide_rows(%x: tensor<16x55296xf32>) -> tensor<16x55296xf32> {
  %var, %mean = fusion.var_mean %x dims [1] correction 0 : tensor<16x55296xf32> to tensor<16xf32>, tensor<16xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<16xf32> to tensor<16x55296xf32>
  %y = fusion.sub %x, %mb : tensor<16x55296xf32>
  func.return %y : tensor<16x55296xf32>
}

// -----
// A row of 65536 f32 fits neither in registers nor in shared memory: no persistent kernel; the Welford statistics kernel splits each row across blocks, then a
// pointwise kernel reads x again.
// CHECK-LABEL: sched.kernel @long_rows_k0
// CHECK-NOT:     fuser.schedule
// CHECK:       sched.kernel @long_rows_k1
// CHECK:       sched.kernel @long_rows_k2
func.func @long_rows(%x: tensor<64x65536xf32>) -> tensor<64x65536xf32> {
  %var, %mean = fusion.var_mean %x dims [1] correction 0 : tensor<64x65536xf32> to tensor<64xf32>, tensor<64xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<64xf32> to tensor<64x65536xf32>
  %y = fusion.sub %x, %mb : tensor<64x65536xf32>
  func.return %y : tensor<64x65536xf32>
}

// -----
// The row statistic is read at another row (a transpose of the broadcast): not a row-local
// use, so the scheduler does not group it.
// CHECK-LABEL: sched.kernel @transposed_k0
// CHECK-NOT:     fuser.schedule
// CHECK:       sched.kernel @transposed_k1
func.func @transposed(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %m = fusion.reduce sum %x dims [1] : tensor<64x64xf32> to tensor<64xf32>
  %mb = fusion.broadcast %m dims [0] : tensor<64xf32> to tensor<64x64xf32>
  %y = fusion.sub %x, %mb : tensor<64x64xf32>
  func.return %y : tensor<64x64xf32>
}
