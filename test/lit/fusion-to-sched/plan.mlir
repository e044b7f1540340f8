// RUN: fuser-opt %s -p convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %S/../../../examples/layer_norm.mlir -p fusion-translate-welford,fusion-segment | fuser-opt -p 'convert-fusion-to-sched{persistent=false}' | filecheck %s --check-prefix=SPLIT
// RUN: fuser-opt %S/../../../examples/layer_norm.mlir -p fusion-translate-welford,fusion-segment | fuser-opt -p convert-fusion-to-sched | filecheck %s --check-prefix=KEPT

// convert-fusion-to-sched makes each segment's kernels with the options in its `fuser.plan`:
// an edited plan changes the kernel, a segment without one takes the pass's options, and an
// option given to the conversion itself wins over what the segment recorded. So a layer norm
// segmented with the defaults and converted with persistent=false becomes reduction and
// pointwise kernels (SPLIT), and the same segments converted as they are, one persistent
// kernel (KEPT).

// CHECK-LABEL: sched.kernel @edited_k0
// CHECK-SAME:    block [128, 1, 1]
// CHECK-LABEL: sched.kernel @unplanned_k0
// CHECK-SAME:    block [256, 1, 1]
func.func @edited(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %y = fusion.segment "pointwise" (%xs = %x : tensor<64x128xf32>) -> (tensor<64x128xf32>) attributes {fuser.plan = {sms = 132 : i64, block = 128 : i64, vector = 0 : i64}} {
    %e = fusion.add %xs, %xs : tensor<64x128xf32>
    fusion.yield %e : tensor<64x128xf32>
  }
  func.return %y : tensor<64x128xf32>
}
func.func @unplanned(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %y = fusion.segment "pointwise" (%xs = %x : tensor<64x128xf32>) -> (tensor<64x128xf32>) {
    %e = fusion.add %xs, %xs : tensor<64x128xf32>
    fusion.yield %e : tensor<64x128xf32>
  }
  func.return %y : tensor<64x128xf32>
}

// SPLIT-COUNT-5: sched.kernel @layer_norm_k
// SPLIT-NOT:     sched.kernel
// SPLIT-NOT:     fuser.schedule = "persistent
// KEPT:          sched.kernel @layer_norm_k0
// KEPT-SAME:     fuser.schedule = "persistent
// KEPT-NOT:      sched.kernel @layer_norm_k1
