// RUN: fuser-opt %s --split-input-file -p fusion-translate-welford,fusion-segment | filecheck %s
// RUN: fuser-opt %s --split-input-file -p fusion-segment | filecheck %s
// fusion-segment alone takes the Welford decisions fusion-translate-welford would (the default
// pipeline leaves them to it, so that each fusion is planned once): the same output.

// Softmax: max, exp(x - max), sum and the division read x at the row: one persistent
// normalization segment whose record is the scheduler's geometry.
// CHECK-LABEL: func.func @softmax
// The statistics stay in registers: the segment's only result is %y.
// CHECK:         %[[Y:.*]] = fusion.segment "normalization" (%[[X:.*]] = %x : tensor<64x1024xf32>) -> (tensor<64x1024xf32>)
// CHECK-SAME:      fuser.segment = "persistent: 4 row(s)/block, 64 threads/row, 4 x 4-element vectors/thread in registers; reads 262144 B, writes 262144 B"
// CHECK-NEXT:      fusion.reduce max %[[X]]
// CHECK:           fusion.reduce sum
// CHECK:           fusion.div
// CHECK-NEXT:      fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[Y]]
func.func @softmax(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %m = fusion.reduce max %x dims [1] : tensor<64x1024xf32> to tensor<64xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<64xf32> to tensor<64x1024xf32>
  %d = fusion.sub %x, %mb : tensor<64x1024xf32>
  %e = fusion.exp %d : tensor<64x1024xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<64x1024xf32> to tensor<64xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<64xf32> to tensor<64x1024xf32>
  %y = fusion.div %e, %sb : tensor<64x1024xf32>
  func.return %y : tensor<64x1024xf32>
}

// -----
// Layer norm through var_mean: fusion-translate-welford turns it into the two-pass sums because
// the translated group stays on chip; then one normalization segment takes all of it.
// CHECK-LABEL: func.func @layer_norm
// CHECK:         fusion.segment "normalization" (%{{.*}} = %x : tensor<128x768xbf16>, %{{.*}} = %w : tensor<768xf32>)
// CHECK-SAME:      fuser.segment = "persistent: 8 row(s)/block, 32 threads/row, 3 x 8-element vectors/thread in registers;
// CHECK-COUNT-3:   fusion.reduce sum {{.*}}fuser.welford = "translated from fusion.var_mean
// CHECK:           fusion.yield
// CHECK-NOT:     fusion.segment
// CHECK:         func.return
func.func @layer_norm(%x: tensor<128x768xbf16>, %w: tensor<768xf32>) -> tensor<128x768xbf16> {
  %xf = fusion.cast %x : tensor<128x768xbf16> to tensor<128x768xf32>
  %var, %mean = fusion.var_mean %xf dims [1] correction 0 : tensor<128x768xf32> to tensor<128xf32>, tensor<128xf32>
  %eps = fusion.full 1.0e-05 : tensor<128xf32>
  %ve = fusion.add %var, %eps : tensor<128xf32>
  %r = fusion.rsqrt %ve : tensor<128xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<128xf32> to tensor<128x768xf32>
  %rb = fusion.broadcast %r dims [1] : tensor<128xf32> to tensor<128x768xf32>
  %wb = fusion.broadcast %w dims [0] : tensor<768xf32> to tensor<128x768xf32>
  %c = fusion.sub %xf, %mb : tensor<128x768xf32>
  %n = fusion.mul %c, %rb : tensor<128x768xf32>
  %o = fusion.mul %n, %wb : tensor<128x768xf32>
  %ob = fusion.cast %o : tensor<128x768xf32> to tensor<128x768xbf16>
  func.return %ob : tensor<128x768xbf16>
}

// -----
// The same softmax over rows of 1M elements: no row fits on chip, so the normalization
// scheduler refuses the group and it is resegmented into its two reductions (each recording the
// refusal) and a pointwise segment that reads both results back.
// CHECK-LABEL: func.func @long_softmax
// CHECK:         %[[M:.*]] = fusion.segment "reduction" (%{{.*}} = %x : tensor<4x1048576xf32>)
// CHECK-SAME:      fuser.segment = "'fusion.reduce' over dims [1] of [4, 1048576]; resegmented: the normalization scheduler refused its group (a row of 1048576 elements from 1 input(s) needs 1024 registers/thread
// CHECK:         %[[S:.*]] = fusion.segment "reduction" (%{{.*}} = %x : tensor<4x1048576xf32>, %{{.*}} = %[[M]] : tensor<4xf32>)
// CHECK-SAME:      resegmented
// CHECK:         %[[Y:.*]] = fusion.segment "pointwise" (%{{.*}} = %x : tensor<4x1048576xf32>, %{{.*}} = %[[M]] : tensor<4xf32>, %{{.*}} = %[[S]] : tensor<4xf32>)
// CHECK-SAME:      fuser.segment = "1 output(s) of [4, 1048576]; reads 16777248 B, writes 16777216 B"
// CHECK:         func.return %[[Y]]
func.func @long_softmax(%x: tensor<4x1048576xf32>) -> tensor<4x1048576xf32> {
  %m = fusion.reduce max %x dims [1] : tensor<4x1048576xf32> to tensor<4xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<4xf32> to tensor<4x1048576xf32>
  %d = fusion.sub %x, %mb : tensor<4x1048576xf32>
  %e = fusion.exp %d : tensor<4x1048576xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<4x1048576xf32> to tensor<4xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<4xf32> to tensor<4x1048576xf32>
  %y = fusion.div %e, %sb : tensor<4x1048576xf32>
  func.return %y : tensor<4x1048576xf32>
}

// -----
// A Welford redefinition that does not pay is undone: the two-pass form of this var_mean over
// rows too long for the chip would read the input twice, so fusion-translate-welford keeps the
// Welford op and records why; its segment is a reduction.
// CHECK-LABEL: func.func @long_var
// CHECK:         fusion.segment "reduction"
// CHECK-SAME:      fuser.segment = "'fusion.var_mean' over dims [1] of [4, 1048576]; the Welford translation was tried and undone; reads 16777216 B, writes 32 B"
// CHECK-NEXT:      fusion.var_mean {{.*}}fuser.welford = "kept (a row of 1048576 elements
func.func @long_var(%x: tensor<4x1048576xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %var, %mean = fusion.var_mean %x dims [1] correction 1 : tensor<4x1048576xf32> to tensor<4xf32>, tensor<4xf32>
  func.return %var, %mean : tensor<4xf32>, tensor<4xf32>
}

// -----
// Inside a segment that names its scheduler, the Welford translation is not tried (it would
// turn the named reduction into a normalization group); in an unnamed one it is decided for
// that segment alone.
// CHECK-LABEL: func.func @named_var
// CHECK:         fusion.segment "reduction"
// CHECK-NEXT:      fusion.var_mean {{.*}}fuser.welford = "kept (inside a fusion.segment named 'reduction')"
// CHECK:         fusion.segment "normalization"
// CHECK-COUNT-3:   fusion.reduce sum {{.*}}fuser.welford = "translated from fusion.var_mean
func.func @named_var(%x: tensor<64x256xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>) {
  %v, %m = fusion.segment "reduction" (%xs = %x : tensor<64x256xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
    %a, %b = fusion.var_mean %xs dims [1] correction 0 : tensor<64x256xf32> to tensor<64xf32>, tensor<64xf32>
    fusion.yield %a, %b : tensor<64xf32>, tensor<64xf32>
  }
  %y = fusion.segment (%xs = %x : tensor<64x256xf32>) -> (tensor<64x256xf32>) {
    %a, %b = fusion.var_mean %xs dims [1] correction 0 : tensor<64x256xf32> to tensor<64xf32>, tensor<64xf32>
    %bb = fusion.broadcast %b dims [1] : tensor<64xf32> to tensor<64x256xf32>
    %c = fusion.sub %xs, %bb : tensor<64x256xf32>
    %ab = fusion.broadcast %a dims [1] : tensor<64xf32> to tensor<64x256xf32>
    %d = fusion.mul %c, %ab : tensor<64x256xf32>
    fusion.yield %d : tensor<64x256xf32>
  }
  func.return %v, %m, %y : tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>
}

// -----
// The max of %x is of kernel level 1, the sum of the matmul product of level 2. One
// normalization kernel for both would run at level 2, after the pointwise kernel of %w, which
// reads the max (through a permute pair, so the group cannot take %w): no group is formed, and
// every segment comes after what it reads (this crashed fusion-segment: fuzzer seed 1001856232).
// CHECK-LABEL: func.func @member_read_early
// CHECK:         %[[MM:.*]] = fusion.segment "matmul"
// CHECK:         %[[K:.*]] = fusion.segment "reduction" (%{{.*}} = %x : tensor<200x264xf32>)
// CHECK:         %[[W:.*]] = fusion.segment "pointwise" ({{.*}}%{{.*}} = %[[K]] : tensor<200xf32>)
// CHECK:         %[[R:.*]] = fusion.segment "reduction" (%{{.*}} = %[[MM]] : tensor<200x264xf32>)
// CHECK-NOT:     fusion.segment "normalization"
// CHECK:         func.return %[[R]], %[[W]]
func.func @member_read_early(%a: tensor<200x64xbf16>, %b: tensor<64x264xbf16>, %x: tensor<200x264xf32>) -> (tensor<200xf32>, tensor<200x264xf32>) {
  %mm = fusion.matmul %a, %b : tensor<200x64xbf16>, tensor<64x264xbf16> -> tensor<200x264xf32>
  %r = fusion.reduce sum %mm dims [1] : tensor<200x264xf32> to tensor<200xf32>
  %k = fusion.reduce max %x dims [1] : tensor<200x264xf32> to tensor<200xf32>
  %kb = fusion.broadcast %k dims [1] : tensor<200xf32> to tensor<200x264xf32>
  %d = fusion.sub %x, %kb : tensor<200x264xf32>
  %p = fusion.permute %d [1, 0] : tensor<200x264xf32> to tensor<264x200xf32>
  %q = fusion.permute %p [1, 0] : tensor<264x200xf32> to tensor<200x264xf32>
  %w = fusion.add %q, %mm : tensor<200x264xf32>
  func.return %r, %w : tensor<200xf32>, tensor<200x264xf32>
}

// -----
// A residual sum that the layer norm reads and the fusion returns (a transformer block's residual
// stream) is written by the normalization kernel, which has it at hand: x and r are read once.
// A producer output only joins a group; with a lone sum and nothing computed from it, it stays
// apart (see basic.mlir's reduce_epilogue).
// CHECK-LABEL: func.func @add_layer_norm
// CHECK:         %{{.*}}, %[[S:.*]] = fusion.segment "normalization" (%{{.*}} = %x : tensor<64x1024xf32>, %{{.*}} = %r : tensor<64x1024xf32>) -> (tensor<64x1024xf32>, tensor<64x1024xf32>)
// CHECK-NOT:     fusion.segment "pointwise"
func.func @add_layer_norm(%x: tensor<64x1024xf32>, %r: tensor<64x1024xf32>) -> (tensor<64x1024xf32>, tensor<64x1024xf32>) {
  %s = fusion.add %x, %r : tensor<64x1024xf32>
  %var, %mean = fusion.var_mean %s dims [1] correction 0 : tensor<64x1024xf32> to tensor<64xf32>, tensor<64xf32>
  %eps = fusion.full 1.0e-05 : tensor<64xf32>
  %ve = fusion.add %var, %eps : tensor<64xf32>
  %rstd = fusion.rsqrt %ve : tensor<64xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<64xf32> to tensor<64x1024xf32>
  %rb = fusion.broadcast %rstd dims [1] : tensor<64xf32> to tensor<64x1024xf32>
  %d = fusion.sub %s, %mb : tensor<64x1024xf32>
  %y = fusion.mul %d, %rb : tensor<64x1024xf32>
  func.return %y, %s : tensor<64x1024xf32>, tensor<64x1024xf32>
}

// -----
// A log-softmax over logits[:, 1:] (a language model's shift, read through fusion.slice): the
// slice's result is the row the group caches, so the 40001-column f32 rows are copied into
// shared memory once (the copy evaluates the slice) instead of being read from memory per stage.
// CHECK-LABEL: func.func @log_softmax_of_slice
// CHECK:         fusion.segment "normalization" (%{{.*}} = %x : tensor<2x6x40001xf32>)
// CHECK-SAME:      fuser.segment = "persistent: 1 row(s)/block, 1024 threads/row, 40 x 1-element vectors/thread in 160004 bytes of shared memory;
// CHECK:           fusion.slice
// CHECK:           fusion.yield
// CHECK-NOT:     fusion.segment
func.func @log_softmax_of_slice(%x: tensor<2x6x40001xf32>) -> tensor<10x40001xf32> {
  %s = fusion.slice %x start [0, 1, 0] stop [2, 6, 40001] step [1, 1, 1] : tensor<2x6x40001xf32> to tensor<2x5x40001xf32>
  %r = fusion.reshape %s : tensor<2x5x40001xf32> to tensor<10x40001xf32>
  %m = fusion.reduce max %r dims [1] : tensor<10x40001xf32> to tensor<10xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<10xf32> to tensor<10x40001xf32>
  %d = fusion.sub %r, %mb : tensor<10x40001xf32>
  %e = fusion.exp %d : tensor<10x40001xf32>
  %t = fusion.reduce sum %e dims [1] : tensor<10x40001xf32> to tensor<10xf32>
  %l = fusion.log %t : tensor<10xf32>
  %lb = fusion.broadcast %l dims [1] : tensor<10xf32> to tensor<10x40001xf32>
  %y = fusion.sub %d, %lb : tensor<10x40001xf32>
  func.return %y : tensor<10x40001xf32>
}

// -----
// A segment_set of a row kernel's full-size output that the row kernel itself reads: it stays a
// segment of its own, before the rows (folding it into them made the row kernel its own
// producer: CPU fuzz seed 4242213 crashed fusion-segment).
// CHECK-LABEL: func.func @set_read_by_its_rows
// CHECK:         %[[S:.*]] = fusion.segment "pointwise"
// CHECK:           fusion.segment_set
// CHECK:         %{{.*}}, %{{.*}} = fusion.segment "normalization" ({{.*}}%{{.*}} = %[[S]] :
// CHECK-NOT:       fusion.segment_set
// CHECK:         func.return
func.func @set_read_by_its_rows(%x: tensor<64x96xf32>) -> (tensor<64x96xf32>, tensor<64x96xf32>) {
  %e = fusion.exp %x : tensor<64x96xf32>
  %s = fusion.segment_set %e : tensor<64x96xf32> to tensor<64x96xf32>
  %d = fusion.add %s, %e : tensor<64x96xf32>
  %m = fusion.reduce sum %d dims [1] : tensor<64x96xf32> to tensor<64xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<64xf32> to tensor<64x96xf32>
  %y = fusion.div %d, %mb : tensor<64x96xf32>
  func.return %e, %y : tensor<64x96xf32>, tensor<64x96xf32>
}
