// RUN: fuser-opt %s -p fusion-sort-scatters | filecheck %s
// RUN: fuser-opt %s -p fusion-sort-scatters,fusion-sort-scatters | filecheck %s

// fusion-sort-scatters (issue 32): a scatter whose index line is longer than 16 positions gets
// its sorted form: the line's indices normalized (below 0 from the end, then clamped into
// [0, extent)), `dim` moved innermost, cut into chunks (at most 16384 a sort row; the last padded
// with the extent) and stably sorted; the scatter reads the sorted indices and their positions.
// Idempotent: a sorted scatter is left as it is.

// A short line (the one-hot of a loss gradient) is read whole by each element: no sort.
// CHECK-LABEL: func.func @one_hot
// CHECK-NOT: fusion.sort
// CHECK: %r = fusion.scatter %x, %i, %s dim 1 : tensor<9x11xf32>, tensor<9x1xi32>, tensor<9x1xf32> to tensor<9x11xf32>
func.func @one_hot(%x: tensor<9x11xf32>, %i: tensor<9x1xi32>, %s: tensor<9x1xf32>) -> tensor<9x11xf32> {
  %r = fusion.scatter %x, %i, %s dim 1 : tensor<9x11xf32>, tensor<9x1xi32>, tensor<9x1xf32> to tensor<9x11xf32>
  func.return %r : tensor<9x11xf32>
}

// index_add's shared line (the embedding backward): one sort of 300 ids, as i32 (the extent
// fits: half the sort's key bytes).
// CHECK-LABEL: func.func @emb_bwd
// CHECK: %[[LT:.*]] = fusion.cmp lt, %ids, %{{.*}} : tensor<300x1xi64>
// CHECK: %[[FROM_END:.*]] = fusion.add %ids, %{{.*}} : tensor<300x1xi64>
// CHECK: %[[W:.*]] = fusion.where %[[LT]], %[[FROM_END]], %ids : tensor<300x1xi64>
// CHECK: %[[MAX:.*]] = fusion.max %[[W]]
// CHECK: %[[TOP:.*]] = fusion.full 999 : tensor<300x1xi64>
// CHECK: %[[MIN:.*]] = fusion.min %[[MAX]], %[[TOP]] : tensor<300x1xi64>
// CHECK: %[[N:.*]] = fusion.cast %[[MIN]] : tensor<300x1xi64> to tensor<300x1xi32>
// CHECK: %[[P:.*]] = fusion.permute %[[N]] [1, 0] : tensor<300x1xi32> to tensor<1x300xi32>
// CHECK: %[[R:.*]] = fusion.reshape %[[P]] : tensor<1x300xi32> to tensor<1x1x300xi32>
// CHECK: %[[V:.*]], %[[O:.*]] = fusion.sort %[[R]] dim 2 : tensor<1x1x300xi32> to tensor<1x1x300xi32>, tensor<1x1x300xi64>
// CHECK: %r = fusion.scatter %w, %[[V]], %g, %[[O]] dim 0 add : tensor<1000x64xbf16>, tensor<1x1x300xi32>, tensor<300x64xbf16>, tensor<1x1x300xi64> to tensor<1000x64xbf16>
func.func @emb_bwd(%g: tensor<300x64xbf16>, %ids: tensor<300x1xi64>, %w: tensor<1000x64xbf16>) -> tensor<1000x64xbf16> {
  %r = fusion.scatter %w, %ids, %g dim 0 add : tensor<1000x64xbf16>, tensor<300x1xi64>, tensor<300x64xbf16> to tensor<1000x64xbf16>
  func.return %r : tensor<1000x64xbf16>
}

// A line per row along dim 1, longer than a sort row: two chunks of 10001 (one pad position,
// the extent 50), one sort row per chunk of each of the 3 lines.
// CHECK-LABEL: func.func @chunks
// CHECK: %[[PAD:.*]] = fusion.full 50 : tensor<i32>
// CHECK: %[[PADDED:.*]] = fusion.pad %{{.*}}, %[[PAD]] low [0, 0] high [0, 1] : tensor<3x20001xi32> to tensor<3x20002xi32>
// CHECK: %[[R:.*]] = fusion.reshape %[[PADDED]] : tensor<3x20002xi32> to tensor<3x2x10001xi32>
// CHECK: %[[V:.*]], %[[O:.*]] = fusion.sort %[[R]] dim 2 : tensor<3x2x10001xi32> to tensor<3x2x10001xi32>, tensor<3x2x10001xi64>
// CHECK: %r = fusion.scatter %x, %[[V]], %s, %[[O]] dim 1 : tensor<3x50xf32>, tensor<3x2x10001xi32>, tensor<3x20001xf32>, tensor<3x2x10001xi64> to tensor<3x50xf32>
func.func @chunks(%x: tensor<3x50xf32>, %i: tensor<3x20001xi32>, %s: tensor<3x20001xf32>) -> tensor<3x50xf32> {
  %r = fusion.scatter %x, %i, %s dim 1 : tensor<3x50xf32>, tensor<3x20001xi32>, tensor<3x20001xf32> to tensor<3x50xf32>
  func.return %r : tensor<3x50xf32>
}

// A scatter inside a hand-written segment that names its scheduler stays unsorted (a sort would
// be a second task there); one that names none is sorted (fusion-segment splits it).
// CHECK-LABEL: func.func @in_segment
// CHECK-NOT: fusion.sort
// CHECK: fusion.scatter %{{.*}}, %{{.*}}, %{{.*}} dim 0 add : tensor<10x4xf32>, tensor<40x1xi64>, tensor<40x4xf32> to tensor<10x4xf32>
func.func @in_segment(%x: tensor<10x4xf32>, %i: tensor<40x1xi64>, %s: tensor<40x4xf32>) -> tensor<10x4xf32> {
  %r = fusion.segment "pointwise" (%a = %x : tensor<10x4xf32>, %b = %i : tensor<40x1xi64>, %c = %s : tensor<40x4xf32>) -> (tensor<10x4xf32>) {
    %y = fusion.scatter %a, %b, %c dim 0 add : tensor<10x4xf32>, tensor<40x1xi64>, tensor<40x4xf32> to tensor<10x4xf32>
    fusion.yield %y : tensor<10x4xf32>
  }
  func.return %r : tensor<10x4xf32>
}

// CHECK-LABEL: func.func @in_unnamed_segment
// CHECK: fusion.segment (
// CHECK: fusion.sort
// CHECK: fusion.scatter %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} dim 0 add
func.func @in_unnamed_segment(%x: tensor<10x4xf32>, %i: tensor<40x1xi64>, %s: tensor<40x4xf32>) -> tensor<10x4xf32> {
  %r = fusion.segment (%a = %x : tensor<10x4xf32>, %b = %i : tensor<40x1xi64>, %c = %s : tensor<40x4xf32>) -> (tensor<10x4xf32>) {
    %y = fusion.scatter %a, %b, %c dim 0 add : tensor<10x4xf32>, tensor<40x1xi64>, tensor<40x4xf32> to tensor<10x4xf32>
    fusion.yield %y : tensor<10x4xf32>
  }
  func.return %r : tensor<10x4xf32>
}
