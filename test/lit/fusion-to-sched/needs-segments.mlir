// RUN: fuser-opt %s --split-input-file --verify-diagnostics -p convert-fusion-to-sched
// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched | filecheck %s

// convert-fusion-to-sched carries out fusion-segment's cut and makes none itself: a fusion op
// outside a segment, or a segment that names no scheduler, is refused with the advice to run
// fusion-segment first. After fusion-segment the same inputs convert.

// CHECK-LABEL: func.func @loose
// CHECK:         sched.launch @loose_k0
func.func @loose(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'fusion.exp' is outside any fusion.segment: convert-fusion-to-sched converts segmented fusions; run fusion-segment first (or the to-sched / default pipeline)}}
  %y = fusion.exp %x : tensor<64xf32>
  func.return %y : tensor<64xf32>
}

// -----

// CHECK-LABEL: func.func @unnamed
// CHECK:         sched.launch @unnamed_k0
func.func @unnamed(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{fusion.segment names no scheduler: run fusion-segment first, which names it or splits the segment into the kernels its ops need}}
  %y = fusion.segment (%xs = %x : tensor<64xf32>) -> (tensor<64xf32>) {
    %e = fusion.exp %xs : tensor<64xf32>
    fusion.yield %e : tensor<64xf32>
  }
  func.return %y : tensor<64xf32>
}
