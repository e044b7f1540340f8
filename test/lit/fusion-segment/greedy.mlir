// RUN: fuser-opt -p fusion-segment %s | filecheck %s

// Greedy merging: from a segment per reduction and per output, the merge that saves the most
// traffic goes first; `fuser.merged` lists a segment's merges, in order, with the bytes each saved.

// Three outputs of one shape and level: neighbours in return order merge, the pair that shares
// more inputs first (%a and %b share %x and %y: 2 x 16 KB; then %c, sharing %x).
// CHECK-LABEL: func.func @neighbours
// CHECK:         fusion.segment "pointwise"
// CHECK-SAME:      fuser.merged = "pointwise (saves 32768 B), pointwise (saves 16384 B)"
// CHECK-NOT:     fusion.segment
func.func @neighbours(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>, %z: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %c = fusion.mul %x, %z : tensor<64x64xf32>
  %a = fusion.add %x, %y : tensor<64x64xf32>
  %b = fusion.sub %x, %y : tensor<64x64xf32>
  func.return %c, %a, %b : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}

// Each of %o1, %o2 can be an epilogue of its reduction, or the two can share a pointwise
// kernel (which saves more bytes right away: the three vectors they share are read once). The
// two plans are played out: two kernels moving 1 KB more beat three kernels, so the epilogues
// win.
// CHECK-LABEL: func.func @epilogues_or_pointwise
// CHECK:         %r1, %o1 = fusion.segment "reduction"
// CHECK-SAME:      fuser.merged = "epilogue (saves 1024 B)"
// CHECK:         %r2, %o2 = fusion.segment "reduction"
// CHECK-SAME:      fuser.merged = "epilogue (saves 1024 B)"
// CHECK-NOT:     fusion.segment
func.func @epilogues_or_pointwise(%x1: tensor<256x1024xf32>, %x2: tensor<256x512xf32>, %y: tensor<256xf32>, %z: tensor<256xf32>, %w: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>) {
  %r1 = fusion.reduce sum %x1 dims [1] : tensor<256x1024xf32> to tensor<256xf32>
  %r2 = fusion.reduce sum %x2 dims [1] : tensor<256x512xf32> to tensor<256xf32>
  %yz = fusion.mul %y, %z : tensor<256xf32>
  %yzw = fusion.mul %yz, %w : tensor<256xf32>
  %o1 = fusion.add %r1, %yzw : tensor<256xf32>
  %o2 = fusion.sub %r2, %yzw : tensor<256xf32>
  func.return %r1, %r2, %o1, %o2 : tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>
}

// The same with 16 MB vectors: a third kernel costs less than reading the three vectors twice.
// CHECK-LABEL: func.func @pointwise_when_it_pays
// CHECK:         %r1 = fusion.segment "reduction"
// CHECK-NOT:       fuser.merged
// CHECK:         %r2 = fusion.segment "reduction"
// CHECK:         %o1, %o2 = fusion.segment "pointwise"
// CHECK-SAME:      fuser.merged = "pointwise (saves 50331648 B)"
func.func @pointwise_when_it_pays(%x1: tensor<4194304x4xf32>, %x2: tensor<4194304x2xf32>, %y: tensor<4194304xf32>, %z: tensor<4194304xf32>, %w: tensor<4194304xf32>) -> (tensor<4194304xf32>, tensor<4194304xf32>, tensor<4194304xf32>, tensor<4194304xf32>) {
  %r1 = fusion.reduce sum %x1 dims [1] : tensor<4194304x4xf32> to tensor<4194304xf32>
  %r2 = fusion.reduce sum %x2 dims [1] : tensor<4194304x2xf32> to tensor<4194304xf32>
  %yz = fusion.mul %y, %z : tensor<4194304xf32>
  %yzw = fusion.mul %yz, %w : tensor<4194304xf32>
  %o1 = fusion.add %r1, %yzw : tensor<4194304xf32>
  %o2 = fusion.sub %r2, %yzw : tensor<4194304xf32>
  func.return %r1, %r2, %o1, %o2 : tensor<4194304xf32>, tensor<4194304xf32>, tensor<4194304xf32>, tensor<4194304xf32>
}

// Layer norm: the statistics and the normalized row merge into one persistent segment, which
// saves the input's second and third reads and the statistics' round trips.
// CHECK-LABEL: func.func @layer_norm
// CHECK:         fusion.segment "normalization"
// CHECK-SAME:      fuser.merged = "normalization (saves
// CHECK-NOT:     fusion.segment
func.func @layer_norm(%x: tensor<128x1024xf32>) -> tensor<128x1024xf32> {
  %s = fusion.reduce sum %x dims [1] : tensor<128x1024xf32> to tensor<128xf32>
  %n = fusion.full 1024.0 : tensor<128xf32>
  %mean = fusion.div %s, %n : tensor<128xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<128xf32> to tensor<128x1024xf32>
  %d = fusion.sub %x, %mb : tensor<128x1024xf32>
  %d2 = fusion.mul %d, %d : tensor<128x1024xf32>
  %v = fusion.reduce sum %d2 dims [1] : tensor<128x1024xf32> to tensor<128xf32>
  %var = fusion.div %v, %n : tensor<128xf32>
  %rs = fusion.rsqrt %var : tensor<128xf32>
  %rb = fusion.broadcast %rs dims [1] : tensor<128xf32> to tensor<128x1024xf32>
  %y = fusion.mul %d, %rb : tensor<128x1024xf32>
  func.return %y : tensor<128x1024xf32>
}
