// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched,sched-verify-buffers | filecheck %s

// Multi-output fusions: every output is computed where it is stored, and every other use of it
// computes it too; no kernel reads back an output buffer. (An output read back from its own
// buffer returned garbage on the GPU, silently.)

// An output another output reads: tanh(x) is computed once, multiplied, and both are stored.
// CHECK-LABEL: sched.kernel @feeds_k0
// CHECK:         sched.load
// CHECK-NOT:     sched.load
// CHECK:         math.tanh
// CHECK-NOT:     sched.load
// CHECK:         arith.mulf
// CHECK:         sched.store
// CHECK:         sched.store
// CHECK:       func.func @feeds(%x: memref<31x33xf32>, %y: memref<31x33xf32>, %t: memref<31x33xf32>)
// CHECK-NEXT:    sched.launch @feeds_k0(%y, %t, %x)
// CHECK-NEXT:    func.return
func.func @feeds(%x: tensor<31x33xf32>) -> (tensor<31x33xf32>, tensor<31x33xf32>) {
  %t = fusion.tanh %x : tensor<31x33xf32>
  %y = fusion.mul %x, %t : tensor<31x33xf32>
  func.return %y, %t : tensor<31x33xf32>, tensor<31x33xf32>
}

// -----
// A value returned twice is stored once and copied into the second output.
// CHECK-LABEL: sched.kernel @twice_k1
// CHECK:         %[[V:.*]] = sched.load %0
// CHECK:         sched.store %[[V]], %1
// CHECK:       func.func @twice(%x: memref<31x33xf32>, %c: memref<31x33xf16>, %c_1: memref<31x33xf16>)
// CHECK-NEXT:    sched.launch @twice_k0(%c, %x)
// CHECK-NEXT:    sched.launch @twice_k1(%c, %c_1)
// CHECK-NEXT:    func.return
func.func @twice(%x: tensor<31x33xf32>) -> (tensor<31x33xf16>, tensor<31x33xf16>) {
  %c = fusion.cast %x : tensor<31x33xf32> to tensor<31x33xf16>
  func.return %c, %c : tensor<31x33xf16>, tensor<31x33xf16>
}

// -----
// An input returned as is: copied into its output, never written in place.
// CHECK-LABEL: func.func @passthrough(%x: memref<5x7xf32>, %e: memref<5x7xf32>, %x_1: memref<5x7xf32>)
// CHECK-NEXT:    sched.launch @passthrough_k0(%e, %x)
// CHECK-NEXT:    sched.launch @passthrough_k1(%x, %x_1)
// CHECK-NEXT:    func.return
func.func @passthrough(%x: tensor<5x7xf32>) -> (tensor<5x7xf32>, tensor<5x7xf32>) {
  %e = fusion.exp %x : tensor<5x7xf32>
  func.return %e, %x : tensor<5x7xf32>, tensor<5x7xf32>
}

// -----
// An output that is also a reduction's input: the reduction computes tanh(x) itself rather
// than reading the output buffer another kernel writes.
// CHECK-LABEL: sched.kernel @feeds_sum_k0
// CHECK:         math.tanh
// CHECK-LABEL: sched.kernel @feeds_sum_k1
// CHECK:         math.tanh
// CHECK:       func.func @feeds_sum(%x: memref<64x96xf32>, %t: memref<64x96xf32>, %s: memref<64xf32>)
// CHECK-NEXT:    sched.launch @feeds_sum_k0(%t, %x)
// CHECK-NEXT:    sched.launch @feeds_sum_k1(%s, %x)
func.func @feeds_sum(%x: tensor<64x96xf32>) -> (tensor<64x96xf32>, tensor<64xf32>) {
  %t = fusion.tanh %x : tensor<64x96xf32>
  %s = fusion.reduce sum %t dims [1] : tensor<64x96xf32> to tensor<64xf32>
  func.return %t, %s : tensor<64x96xf32>, tensor<64xf32>
}

// -----
// Outputs of different shapes fed by one value: each kernel computes exp(x).
// CHECK-LABEL: sched.kernel @shapes_k0
// CHECK:         math.exp
// CHECK-LABEL: sched.kernel @shapes_k1
// CHECK:         math.exp
// CHECK:       func.func @shapes(%x: memref<8x16xf32>, %e: memref<8x16xf32>, %r: memref<128xf32>)
func.func @shapes(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<128xf32>) {
  %e = fusion.exp %x : tensor<8x16xf32>
  %r = fusion.reshape %e : tensor<8x16xf32> to tensor<128xf32>
  func.return %e, %r : tensor<8x16xf32>, tensor<128xf32>
}

// -----
// A reduction's epilogue with one output feeding another: both computed from the sum in
// registers, in the reduction's own kernel.
// CHECK-LABEL: sched.kernel @chain_k0
// CHECK:       func.func @chain(%x: memref<64x96xf32>, %a: memref<64xf32>, %b: memref<64xf32>)
// CHECK-NEXT:    sched.launch @chain_k0(
// CHECK-NEXT:    func.return
func.func @chain(%x: tensor<64x96xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %s = fusion.reduce sum %x dims [1] : tensor<64x96xf32> to tensor<64xf32>
  %a = fusion.exp %s : tensor<64xf32>
  %b = fusion.neg %a : tensor<64xf32>
  func.return %a, %b : tensor<64xf32>, tensor<64xf32>
}

// -----
// A returned value and a segment_set of its reshape (a gradient returned as 4x8x64 that the
// next matmul reads as 32x64): one kernel computes it once and stores it at two spellings of
// one index, the row of the second built from the first's indices (no second split of the
// linear index, no second load of the inputs).
// CHECK-LABEL: sched.kernel @stored_twice_reshaped_k0
// CHECK-SAME:    (%[[B:.*]] : memref<4x8x64xbf16>, %[[C:.*]] : memref<32x64xbf16>, %[[X:.*]] : memref<4x8x64xf32>, %[[Y:.*]] : memref<4x8x64xf32>)
// CHECK-COUNT-2: arith.divui
// CHECK-NOT:     arith.divui
// CHECK:         sched.load %[[X]][%[[I:.*]], %[[J:.*]], %[[K:.*]]]
// CHECK-COUNT-4: math.exp
// CHECK-NOT:     math.exp
// CHECK:         sched.load %[[Y]][%[[I]], %[[J]], %[[K]]]
// CHECK-NOT:     sched.load
// CHECK:         sched.store %{{.*}}, %[[B]][%[[I]], %[[J]], %[[K]]]
// CHECK:         %[[IS:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK-NEXT:    %[[ROW:.*]] = arith.addi %[[IS]], %[[J]] : index
// CHECK-NOT:     sched.load
// CHECK:         sched.store %{{.*}}, %[[C]][%[[ROW]], %[[K]]]
// CHECK:       sched.kernel @stored_twice_reshaped_k1
func.func @stored_twice_reshaped(%x: tensor<4x8x64xf32>, %y: tensor<4x8x64xf32>, %w: tensor<64x128xbf16>) -> (tensor<4x8x64xbf16>, tensor<32x128xf32>) {
  %e = fusion.exp %x : tensor<4x8x64xf32>
  %m = fusion.mul %e, %y : tensor<4x8x64xf32>
  %b = fusion.cast %m : tensor<4x8x64xf32> to tensor<4x8x64xbf16>
  %r = fusion.reshape %b : tensor<4x8x64xbf16> to tensor<32x64xbf16>
  %c = fusion.segment_set %r : tensor<32x64xbf16> to tensor<32x64xbf16>
  %p = fusion.matmul %c, %w : tensor<32x64xbf16>, tensor<64x128xbf16> -> tensor<32x128xf32>
  func.return %b, %p : tensor<4x8x64xbf16>, tensor<32x128xf32>
}

// -----
// A returned value and a segment_set of it, of one shape (SiLU's gradient, returned for the
// weight gradient and read by the next matmul): the segment_set's buffer is the output's, so the
// kernel stores it once and the matmul reads the output (one buffer, no workspace).
// CHECK-LABEL: sched.kernel @returned_and_set_k0
// CHECK-SAME:    (%[[G:.*]] : memref<32x64xbf16>, %[[X:.*]] : memref<32x64xf32>)
// CHECK:         sched.load %[[X]]
// CHECK-NOT:     sched.load
// CHECK:         sched.store %{{.*}}, %[[G]]
// CHECK-NOT:     sched.store
// CHECK:       sched.kernel @returned_and_set_k1
// CHECK:       func.func @returned_and_set(%x: memref<32x64xf32>, %w: memref<64x128xbf16>, %g: memref<32x64xbf16>, %p: memref<32x128xf32>)
// CHECK-NOT:     sched.workspace
// CHECK:         sched.launch @returned_and_set_k0(%g, %x)
// CHECK-NEXT:    sched.tensor_map %g :
// CHECK:         sched.launch @returned_and_set_k1(
func.func @returned_and_set(%x: tensor<32x64xf32>, %w: tensor<64x128xbf16>) -> (tensor<32x64xbf16>, tensor<32x128xf32>) {
  %s = fusion.sigmoid %x : tensor<32x64xf32>
  %m = fusion.mul %x, %s : tensor<32x64xf32>
  %g = fusion.cast %m : tensor<32x64xf32> to tensor<32x64xbf16>
  %c = fusion.segment_set %g : tensor<32x64xbf16> to tensor<32x64xbf16>
  %p = fusion.matmul %c, %w : tensor<32x64xbf16>, tensor<64x128xbf16> -> tensor<32x128xf32>
  func.return %g, %p : tensor<32x64xbf16>, tensor<32x128xf32>
}

// -----
// One input read by two values through two reshapes (a gate read as 4x8x64 and as 32x64):
// its element is loaded once, at one index built once, though outputs are stored between.
// CHECK-LABEL: sched.kernel @two_reshapes_k0
// CHECK-SAME:    (%[[A:.*]] : memref<32x64xf32>, %[[B:.*]] : memref<32x64xf32>, %[[X:.*]] : memref<4x8x64xf32>)
// CHECK:         sched.load %[[X]]
// CHECK-NOT:     sched.load
// CHECK:         sched.store %{{.*}}, %[[A]]
// CHECK-NOT:     sched.load
// CHECK:         sched.store %{{.*}}, %[[B]]
func.func @two_reshapes(%x: tensor<4x8x64xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
  %r1 = fusion.reshape %x : tensor<4x8x64xf32> to tensor<32x64xf32>
  %a = fusion.exp %r1 : tensor<32x64xf32>
  %r2 = fusion.reshape %x : tensor<4x8x64xf32> to tensor<32x64xf32>
  %b = fusion.tanh %r2 : tensor<32x64xf32>
  func.return %a, %b : tensor<32x64xf32>, tensor<32x64xf32>
}

// -----
// A row kernel's full-size output returned and read by a matmul through a segment_set (a loss's
// logits gradient: returned for the weight gradient, read by the input gradient's matmul): the
// row kernel writes it once, into the output, and the matmul reads the output. No kernel of its
// own computes the rows again for the segment_set, and the row statistic is not stored.
// CHECK-LABEL: sched.kernel @softmax_returned_and_set_k0
// CHECK-SAME:    (%[[P:.*]] : memref<64x96xbf16>, %[[X:.*]] : memref<64x96xf32>)
// CHECK-SAME:    fuser.schedule = "persistent
// CHECK-COUNT-1: sched.store %{{.*}}, %[[P]]
// CHECK-NOT:     sched.store
// CHECK:       sched.kernel @softmax_returned_and_set_k1
// CHECK-SAME:    fuser.matmul
// CHECK-NOT:   sched.kernel
// CHECK:       func.func @softmax_returned_and_set(%x: memref<64x96xf32>, %w: memref<96x128xbf16>, %p: memref<64x96xbf16>, %y: memref<64x128xf32>)
// CHECK-NOT:     sched.workspace
// CHECK:         sched.launch @softmax_returned_and_set_k0(%p, %x)
// CHECK-NEXT:    sched.tensor_map %p :
func.func @softmax_returned_and_set(%x: tensor<64x96xf32>, %w: tensor<96x128xbf16>) -> (tensor<64x96xbf16>, tensor<64x128xf32>) {
  %m = fusion.reduce max %x dims [1] : tensor<64x96xf32> to tensor<64xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<64xf32> to tensor<64x96xf32>
  %d = fusion.sub %x, %mb : tensor<64x96xf32>
  %e = fusion.exp %d : tensor<64x96xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<64x96xf32> to tensor<64xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<64xf32> to tensor<64x96xf32>
  %q = fusion.div %e, %sb : tensor<64x96xf32>
  %p = fusion.cast %q : tensor<64x96xf32> to tensor<64x96xbf16>
  %c = fusion.segment_set %p : tensor<64x96xbf16> to tensor<64x96xbf16>
  %y = fusion.matmul %c, %w : tensor<64x96xbf16>, tensor<96x128xbf16> -> tensor<64x128xf32>
  func.return %p, %y : tensor<64x96xbf16>, tensor<64x128xf32>
}
