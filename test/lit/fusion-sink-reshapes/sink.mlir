// RUN: fuser-opt %s --split-input-file -p fusion-sink-reshapes | filecheck %s

// A linear layer on [batch, seq, hidden]: the bias add, cast and residual add after the
// reshape back to 3-D move before it, into the matmul's [M, N]; the residual (a function
// argument) is reshaped instead, and the 3-D result is one reshape of the 2-D sum.
// CHECK-LABEL: func.func @linear_residual
// CHECK-NEXT:    %[[MM:.*]] = fusion.matmul
// CHECK-NEXT:    %[[B:.*]] = fusion.broadcast %bias dims [0] : tensor<64xf32> to tensor<32x64xf32>
// CHECK-NEXT:    %[[A:.*]] = fusion.add %[[MM]], %[[B]] : tensor<32x64xf32>
// CHECK-NEXT:    %[[C:.*]] = fusion.cast %[[A]] : tensor<32x64xf32> to tensor<32x64xbf16>
// CHECK-NEXT:    %[[R:.*]] = fusion.reshape %res : tensor<4x8x64xbf16> to tensor<32x64xbf16>
// CHECK-NEXT:    %[[S:.*]] = fusion.add %[[C]], %[[R]] : tensor<32x64xbf16>
// CHECK-NEXT:    %[[O:.*]] = fusion.reshape %[[S]] : tensor<32x64xbf16> to tensor<4x8x64xbf16>
// CHECK-NEXT:    func.return %[[O]]
func.func @linear_residual(%x: tensor<32x16xbf16>, %w: tensor<16x64xbf16>, %bias: tensor<64xf32>, %res: tensor<4x8x64xbf16>) -> tensor<4x8x64xbf16> {
  %mm = fusion.matmul %x, %w : tensor<32x16xbf16>, tensor<16x64xbf16> -> tensor<32x64xf32>
  %m3 = fusion.reshape %mm : tensor<32x64xf32> to tensor<4x8x64xf32>
  %b = fusion.broadcast %bias dims [0, 1] : tensor<64xf32> to tensor<4x8x64xf32>
  %a = fusion.add %m3, %b : tensor<4x8x64xf32>
  %c = fusion.cast %a : tensor<4x8x64xf32> to tensor<4x8x64xbf16>
  %s = fusion.add %c, %res : tensor<4x8x64xbf16>
  func.return %s : tensor<4x8x64xbf16>
}

// -----

// A 2-D -> 3-D -> 2-D round trip around elementwise ops disappears: the ops run in 2-D, the
// fulls are made again in 2-D, and an operand computed from an argument is made again there.
// CHECK-LABEL: func.func @round_trip
// CHECK-NEXT:    %[[T:.*]] = fusion.tanh %x : tensor<32x64xf32>
// CHECK-NEXT:    %[[F:.*]] = fusion.full 2.0 : tensor<32x64xf32>
// CHECK-NEXT:    %[[M:.*]] = fusion.mul %[[T]], %[[F]] : tensor<32x64xf32>
// CHECK-NEXT:    %[[R:.*]] = fusion.reshape %y : tensor<4x8x64xf32> to tensor<32x64xf32>
// CHECK-NEXT:    %[[E:.*]] = fusion.exp %[[R]] : tensor<32x64xf32>
// CHECK-NEXT:    %[[S:.*]] = fusion.sub %[[M]], %[[E]] : tensor<32x64xf32>
// CHECK-NEXT:    %[[SS:.*]] = fusion.segment_set %[[S]]
// CHECK-NEXT:    func.return %[[SS]]
func.func @round_trip(%x: tensor<32x64xf32>, %y: tensor<4x8x64xf32>) -> tensor<32x64xf32> {
  %t = fusion.tanh %x : tensor<32x64xf32>
  %t3 = fusion.reshape %t : tensor<32x64xf32> to tensor<4x8x64xf32>
  %two = fusion.full 2.0 : tensor<4x8x64xf32>
  %m = fusion.mul %t3, %two : tensor<4x8x64xf32>
  %e = fusion.exp %y : tensor<4x8x64xf32>
  %s = fusion.sub %m, %e : tensor<4x8x64xf32>
  %s2 = fusion.reshape %s : tensor<4x8x64xf32> to tensor<32x64xf32>
  %ss = fusion.segment_set %s2 : tensor<32x64xf32> to tensor<32x64xf32>
  func.return %ss : tensor<32x64xf32>
}

// -----

// Nothing moves where it would cost: a reshape of an argument is already free, a broadcast
// whose input varies along the regrouped dims cannot follow, and reductions stop the sinking.
// CHECK-LABEL: func.func @stays
// CHECK-NEXT:    %[[X3:.*]] = fusion.reshape %x : tensor<32x64xf32> to tensor<4x8x64xf32>
// CHECK-NEXT:    %[[N:.*]] = fusion.neg %[[X3]] : tensor<4x8x64xf32>
// CHECK-NEXT:    %[[T:.*]] = fusion.tanh %x : tensor<32x64xf32>
// CHECK-NEXT:    %[[T3:.*]] = fusion.reshape %[[T]] : tensor<32x64xf32> to tensor<4x8x64xf32>
// CHECK-NEXT:    %[[B:.*]] = fusion.broadcast %v dims [2] : tensor<4x8xf32> to tensor<4x8x64xf32>
// CHECK-NEXT:    %[[A:.*]] = fusion.add %[[T3]], %[[B]] : tensor<4x8x64xf32>
// CHECK-NEXT:    %[[S:.*]] = fusion.reduce sum %[[A]] dims [2]
func.func @stays(%x: tensor<32x64xf32>, %v: tensor<4x8xf32>) -> (tensor<4x8x64xf32>, tensor<4x8xf32>) {
  %x3 = fusion.reshape %x : tensor<32x64xf32> to tensor<4x8x64xf32>
  %n = fusion.neg %x3 : tensor<4x8x64xf32>
  %t = fusion.tanh %x : tensor<32x64xf32>
  %t3 = fusion.reshape %t : tensor<32x64xf32> to tensor<4x8x64xf32>
  %b = fusion.broadcast %v dims [2] : tensor<4x8xf32> to tensor<4x8x64xf32>
  %a = fusion.add %t3, %b : tensor<4x8x64xf32>
  %s = fusion.reduce sum %a dims [2] : tensor<4x8x64xf32> to tensor<4x8xf32>
  func.return %n, %s : tensor<4x8x64xf32>, tensor<4x8xf32>
}
