// RUN: fuser-opt %s --split-input-file -p fusion-segment | filecheck %s

// A pointwise chain with two outputs of one shape: one pointwise segment; the constant and the
// intermediate values are inside it, its operands are what its kernel loads.
// CHECK-LABEL: func.func @chain
// CHECK:         %[[M:.*]], %[[O:.*]] = fusion.segment "pointwise" (%[[X:.*]] = %x : tensor<64x128xf32>, %[[Y:.*]] = %y : tensor<64x128xbf16>) -> (tensor<64x128xf32>, tensor<64x128xbf16>)
// CHECK-SAME:      attributes {fuser.segment = "2 output(s) of [64, 128]; reads 49152 B, writes 49152 B", fuser.plan = {sms = 132 : i64, block = 256 : i64, vector = 4 : i64}, fuser.merged = "pointwise (saves 49152 B)"}
// CHECK-NEXT:      %[[YF:.*]] = fusion.cast %[[Y]]
// CHECK-NEXT:      fusion.add %[[X]], %[[YF]]
// CHECK-NEXT:      fusion.full 2.0
// CHECK:           fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[M]], %[[O]]
func.func @chain(%x: tensor<64x128xf32>, %y: tensor<64x128xbf16>) -> (tensor<64x128xf32>, tensor<64x128xbf16>) {
  %yf = fusion.cast %y : tensor<64x128xbf16> to tensor<64x128xf32>
  %s = fusion.add %x, %yf : tensor<64x128xf32>
  %c = fusion.full 2.0 : tensor<64x128xf32>
  %m = fusion.mul %s, %c : tensor<64x128xf32>
  %t = fusion.tanh %m : tensor<64x128xf32>
  %o = fusion.cast %t : tensor<64x128xf32> to tensor<64x128xbf16>
  func.return %m, %o : tensor<64x128xf32>, tensor<64x128xbf16>
}

// -----
// A reduction with an epilogue (bias + sum, cast) at the reduced index, and a pointwise output
// of the input's shape that also needs exp(x): exp is recomputed in both segments.
// CHECK-LABEL: func.func @reduce_epilogue
// CHECK:         %[[N:.*]] = fusion.segment "pointwise" (%{{.*}} = %x : tensor<256x1024xf32>) -> (tensor<256x1024xf32>)
// CHECK-NEXT:      fusion.exp
// CHECK-NEXT:      fusion.neg
// CHECK:         %[[O:.*]] = fusion.segment "reduction" (%{{.*}} = %x : tensor<256x1024xf32>, %{{.*}} = %b : tensor<256xf32>) -> (tensor<256xbf16>)
// CHECK-SAME:      fuser.segment = "'fusion.reduce' over dims [1] of [256, 1024]; reads 1049600 B, writes 512 B"
// CHECK-NEXT:      fusion.exp
// CHECK-NEXT:      fusion.reduce sum
// CHECK-NEXT:      fusion.add
// CHECK-NEXT:      fusion.cast
// CHECK-NEXT:      fusion.yield
// CHECK:         func.return %[[O]], %[[N]]
func.func @reduce_epilogue(%x: tensor<256x1024xf32>, %b: tensor<256xf32>) -> (tensor<256xbf16>, tensor<256x1024xf32>) {
  %e = fusion.exp %x : tensor<256x1024xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<256x1024xf32> to tensor<256xf32>
  %sb = fusion.add %s, %b : tensor<256xf32>
  %o = fusion.cast %sb : tensor<256xf32> to tensor<256xbf16>
  %n = fusion.neg %e : tensor<256x1024xf32>
  func.return %o, %n : tensor<256xbf16>, tensor<256x1024xf32>
}

// -----
// segment_set always cuts: its operand is written, and the reduction reads it back.
// CHECK-LABEL: func.func @cut
// CHECK:         %[[C:.*]] = fusion.segment "pointwise" (%{{.*}} = %x : tensor<32x64xf32>)
// CHECK-SAME:      fuser.segment = "segment_set of [32, 64]; reads 8192 B, writes 8192 B"
// CHECK-NEXT:      fusion.exp
// CHECK-NEXT:      fusion.segment_set
// CHECK:         %[[S:.*]] = fusion.segment "reduction" (%[[CA:.*]] = %[[C]] : tensor<32x64xf32>)
// CHECK-NEXT:      fusion.reduce max %[[CA]]
// CHECK:         func.return %[[S]]
func.func @cut(%x: tensor<32x64xf32>) -> tensor<32xf32> {
  %e = fusion.exp %x : tensor<32x64xf32>
  %c = fusion.segment_set %e : tensor<32x64xf32> to tensor<32x64xf32>
  %s = fusion.reduce max %c dims [1] : tensor<32x64xf32> to tensor<32xf32>
  func.return %s : tensor<32xf32>
}

// -----
// A returned value that a segment_set also stores (as a backward pass stores a gradient it
// returns and the next matmul reads): one kernel computes it once and writes both buffers,
// where two kernels would each read %x and %y and compute it.
// CHECK-LABEL: func.func @stored_twice
// CHECK:         %[[M:.*]], %[[C:.*]] = fusion.segment "pointwise" (%{{.*}} = %x : tensor<32x64xf32>, %{{.*}} = %y : tensor<32x64xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>)
// CHECK-SAME:      fuser.segment = "2 output(s) of [32, 64]; reads 16384 B, writes 16384 B"
// CHECK-SAME:      fuser.merged = "segment_set joins its producer (saves 16384 B)"
// CHECK:           %[[MI:.*]] = fusion.mul
// CHECK-NEXT:      %[[CI:.*]] = fusion.segment_set %[[MI]]
// CHECK-NEXT:      fusion.yield %[[MI]], %[[CI]]
// CHECK:         %[[S:.*]] = fusion.segment "reduction" (%{{.*}} = %[[C]] : tensor<32x64xf32>)
// CHECK-NOT:     fusion.segment "pointwise"
// CHECK:         func.return %[[M]], %[[S]]
func.func @stored_twice(%x: tensor<32x64xf32>, %y: tensor<32x64xf32>) -> (tensor<32x64xf32>, tensor<32xf32>) {
  %e = fusion.exp %x : tensor<32x64xf32>
  %m = fusion.mul %e, %y : tensor<32x64xf32>
  %c = fusion.segment_set %m : tensor<32x64xf32> to tensor<32x64xf32>
  %s = fusion.reduce max %c dims [1] : tensor<32x64xf32> to tensor<32xf32>
  func.return %m, %s : tensor<32x64xf32>, tensor<32xf32>
}

// -----
// Row and column sums of one input are one joint reduction segment: the record says it reads
// the input once, and the merge what that saved.
// CHECK-LABEL: func.func @row_and_column
// CHECK:         %[[C:.*]], %[[R:.*]] = fusion.segment "reduction" (%{{.*}} = %x : tensor<512x256xf32>) -> (tensor<256xf32>, tensor<512xf32>)
// CHECK-SAME:      fuser.segment = "joint reduction of %x [512, 256]: 'fusion.reduce' sum over dims [0] and 'fusion.reduce' sum over dims [1]; one read of %x (524288 B) where a kernel each would read it twice; reads 524288 B, writes 3072 B"
// CHECK-SAME:      fuser.merged = "siblings (saves 524288 B)"
// CHECK:         func.return %[[R]], %[[C]]
func.func @row_and_column(%x: tensor<512x256xf32>) -> (tensor<512xf32>, tensor<256xf32>) {
  %r = fusion.reduce sum %x dims [1] : tensor<512x256xf32> to tensor<512xf32>
  %c = fusion.reduce sum %x dims [0] : tensor<512x256xf32> to tensor<256xf32>
  func.return %r, %c : tensor<512xf32>, tensor<256xf32>
}

// -----
// The same through a reshape that keeps the last dim (the gradient returned as 4x8x64 and read
// by the next matmul as 32x64): the segment_set joins the kernel that computes the value.
// CHECK-LABEL: func.func @stored_twice_reshaped
// CHECK:         %[[B:.*]], %[[C:.*]] = fusion.segment "pointwise" (%{{.*}} = %x : tensor<4x8x64xf32>, %{{.*}} = %y : tensor<4x8x64xf32>) -> (tensor<4x8x64xbf16>, tensor<32x64xbf16>)
// CHECK-SAME:      fuser.merged = "segment_set joins its producer (saves 16384 B)"
// CHECK:           fusion.reshape
// CHECK-NEXT:      fusion.segment_set
// CHECK-NOT:     fusion.segment "pointwise"
// CHECK:         fusion.segment "matmul" (%{{.*}} = %w : tensor<64x128xbf16>, %{{.*}} = %[[C]] : tensor<32x64xbf16>)
func.func @stored_twice_reshaped(%x: tensor<4x8x64xf32>, %y: tensor<4x8x64xf32>, %w: tensor<64x128xbf16>) -> (tensor<4x8x64xbf16>, tensor<32x128xf32>) {
  %e = fusion.exp %x : tensor<4x8x64xf32>
  %m = fusion.mul %e, %y : tensor<4x8x64xf32>
  %b = fusion.cast %m : tensor<4x8x64xf32> to tensor<4x8x64xbf16>
  %r = fusion.reshape %b : tensor<4x8x64xbf16> to tensor<32x64xbf16>
  %c = fusion.segment_set %r : tensor<32x64xbf16> to tensor<32x64xbf16>
  %p = fusion.matmul %c, %w : tensor<32x64xbf16>, tensor<64x128xbf16> -> tensor<32x128xf32>
  func.return %b, %p : tensor<4x8x64xbf16>, tensor<32x128xf32>
}
