// RUN: fuser-opt %s --split-input-file -p fusion-segment | filecheck %s
// RUN: fuser-opt %s --split-input-file -p fusion-segment,fusion-segment | filecheck %s
// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched | filecheck %s --check-prefix=SCHED

// Hand-written segments keep their boundaries. Softmax's max is cut off by hand, so the rest is
// not one normalization segment with it: the segment gets its scheduler's name, and the ops
// outside it are segmented around it (the sum and division form their own normalization
// segment, which reads the stored max).
// CHECK-LABEL: func.func @by_hand
// CHECK:         %[[M:.*]] = fusion.segment "reduction" (%{{.*}} = %x : tensor<16x512xf32>) -> (tensor<16xf32>)
// CHECK-SAME:      fuser.segment = "hand-written; 'fusion.reduce' over dims [1] of [16, 512]; reads 32768 B, writes 64 B"
// CHECK-NEXT:      fusion.reduce max
// CHECK:         %[[Y:.*]] = fusion.segment "normalization" (%{{.*}} = %x : tensor<16x512xf32>, %{{.*}} = %[[M]] : tensor<16xf32>)
// CHECK:         func.return %[[Y]]
// SCHED-LABEL: sched.kernel @by_hand_k0
// SCHED-NOT:     fuser.schedule = "persistent
// SCHED:       sched.kernel @by_hand_k1
// SCHED-SAME:    fuser.schedule = "persistent
// SCHED-NOT:   sched.kernel @by_hand_k2
func.func @by_hand(%x: tensor<16x512xf32>) -> tensor<16x512xf32> {
  %m = fusion.segment (%xs = %x : tensor<16x512xf32>) -> (tensor<16xf32>) {
    %r = fusion.reduce max %xs dims [1] : tensor<16x512xf32> to tensor<16xf32>
    fusion.yield %r : tensor<16xf32>
  }
  %mb = fusion.broadcast %m dims [1] : tensor<16xf32> to tensor<16x512xf32>
  %d = fusion.sub %x, %mb : tensor<16x512xf32>
  %e = fusion.exp %d : tensor<16x512xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<16x512xf32> to tensor<16xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<16xf32> to tensor<16x512xf32>
  %y = fusion.div %e, %sb : tensor<16x512xf32>
  func.return %y : tensor<16x512xf32>
}

// -----
// A hand-written segment of two unrelated reductions is more than one scheduler takes: it is
// split into one segment per reduction, each recording why, and nothing outside it is merged in.
// CHECK-LABEL: func.func @split_by_hand
// CHECK:         %[[A:.*]] = fusion.segment "reduction" (%{{.*}} = %x : tensor<64x32xf32>) -> (tensor<64xf32>)
// CHECK-SAME:      fuser.segment = "split from a hand-written segment of 2 kernel tasks; 'fusion.reduce' over dims [1] of [64, 32]
// CHECK:         %[[B:.*]] = fusion.segment "reduction" (%{{.*}} = %y : tensor<64x32xf32>) -> (tensor<32xf32>)
// CHECK-SAME:      fuser.segment = "split from a hand-written segment of 2 kernel tasks; 'fusion.reduce' over dims [0] of [64, 32]
// CHECK:         func.return %[[A]], %[[B]]
func.func @split_by_hand(%x: tensor<64x32xf32>, %y: tensor<64x32xf32>) -> (tensor<64xf32>, tensor<32xf32>) {
  %a, %b = fusion.segment (%xs = %x : tensor<64x32xf32>, %ys = %y : tensor<64x32xf32>) -> (tensor<64xf32>, tensor<32xf32>) {
    %r = fusion.reduce sum %xs dims [1] : tensor<64x32xf32> to tensor<64xf32>
    %c = fusion.reduce max %ys dims [0] : tensor<64x32xf32> to tensor<32xf32>
    fusion.yield %r, %c : tensor<64xf32>, tensor<32xf32>
  }
  func.return %a, %b : tensor<64xf32>, tensor<32xf32>
}

// -----
// The row sum and column max of one input, written as one segment: one scheduler (the joint
// reduction) takes both, so the segment is kept whole and named.
// CHECK-LABEL: func.func @joint_by_hand
// CHECK:         %{{.*}}, %{{.*}} = fusion.segment "reduction" (%{{.*}} = %x : tensor<64x32xf32>) -> (tensor<64xf32>, tensor<32xf32>)
// CHECK-SAME:      fuser.segment = "hand-written; joint reduction of %xs [64, 32]: 'fusion.reduce' max over dims [0] and 'fusion.reduce' sum over dims [1]
func.func @joint_by_hand(%x: tensor<64x32xf32>) -> (tensor<64xf32>, tensor<32xf32>) {
  %a, %b = fusion.segment (%xs = %x : tensor<64x32xf32>) -> (tensor<64xf32>, tensor<32xf32>) {
    %r = fusion.reduce sum %xs dims [1] : tensor<64x32xf32> to tensor<64xf32>
    %c = fusion.reduce max %xs dims [0] : tensor<64x32xf32> to tensor<32xf32>
    fusion.yield %r, %c : tensor<64xf32>, tensor<32xf32>
  }
  func.return %a, %b : tensor<64xf32>, tensor<32xf32>
}

// -----
// A segment that takes a pointwise value from outside: segments exchange stored values only,
// so the ops computing it (exp, the broadcast of %w) are pulled into the segment, which then
// reads %x and %w.
// CHECK-LABEL: func.func @pull_in
// CHECK:         fusion.segment "reduction" (%[[X:.*]] = %x : tensor<8x128xf32>, %[[W:.*]] = %w : tensor<128xf32>) -> (tensor<8xf32>)
// CHECK-SAME:      fuser.segment = "hand-written; 'fusion.reduce' over dims [1] of [8, 128]; reads 4608 B, writes 32 B"
// CHECK-NEXT:      fusion.exp %[[X]]
// CHECK-NEXT:      fusion.broadcast %[[W]]
// CHECK-NEXT:      fusion.mul
// CHECK-NEXT:      fusion.reduce sum
func.func @pull_in(%x: tensor<8x128xf32>, %w: tensor<128xf32>) -> tensor<8xf32> {
  %e = fusion.exp %x : tensor<8x128xf32>
  %wb = fusion.broadcast %w dims [0] : tensor<128xf32> to tensor<8x128xf32>
  %p = fusion.mul %e, %wb : tensor<8x128xf32>
  %s = fusion.segment "reduction" (%ps = %p : tensor<8x128xf32>) -> (tensor<8xf32>) {
    %r = fusion.reduce sum %ps dims [1] : tensor<8x128xf32> to tensor<8xf32>
    fusion.yield %r : tensor<8xf32>
  }
  func.return %s : tensor<8xf32>
}

// -----
// A segment that passes its operands through keeps their buffers: the next segment reads %x
// itself, and only the pass-through to a function output (%b) and the value yielded twice (%d)
// are copied, each right after its segment, before anything can read it.
// CHECK-LABEL: func.func @pass_through
// CHECK:         fusion.segment (
// CHECK-NOT:       fuser.segment
// CHECK:           fusion.yield
// CHECK:         fusion.segment "pointwise"
// SCHED-LABEL: func.func @pass_through
// SCHED-NEXT:    sched.launch @pass_through_k0(%y, %b)
// SCHED-NEXT:    sched.launch @pass_through_k1(%c, %x)
// SCHED-NEXT:    sched.launch @pass_through_k2(%c, %d)
// SCHED-NEXT:    func.return
func.func @pass_through(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %a, %b = fusion.segment (%xs = %x : tensor<8x16xf32>, %ys = %y : tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    fusion.yield %xs, %ys : tensor<8x16xf32>, tensor<8x16xf32>
  }
  %c, %d = fusion.segment "pointwise" (%as = %a : tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    %e = fusion.exp %as : tensor<8x16xf32>
    fusion.yield %e, %e : tensor<8x16xf32>, tensor<8x16xf32>
  }
  func.return %c, %d, %b : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
