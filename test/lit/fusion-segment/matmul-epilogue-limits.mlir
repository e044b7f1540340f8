// RUN: fuser-opt %s --split-input-file -p fusion-segment | filecheck %s

// The segment_set in front of the second matmul is written by the first matmul's epilogue
// (bias add and cast), not by a pointwise kernel of its own: two segments.
// CHECK-LABEL: func.func @segment_set_in_epilogue
// CHECK:         %[[HS:.*]] = fusion.segment "matmul" ({{.*}}) -> (tensor<256x256xbf16>)
// CHECK-SAME:      fuser.merged = "epilogue (saves
// CHECK:           fusion.segment_set
// CHECK-NEXT:      fusion.yield
// CHECK:         fusion.segment "matmul" ({{.*}}%[[HS]] : tensor<256x256xbf16>)
// CHECK-NOT:     fusion.segment
// CHECK:         func.return
func.func @segment_set_in_epilogue(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %w: tensor<256x128xbf16>, %bias: tensor<256xf32>) -> tensor<256x128xf32> {
  %c = fusion.matmul %a, %b : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<256xf32> to tensor<256x256xf32>
  %d = fusion.add %c, %bb : tensor<256x256xf32>
  %h = fusion.cast %d : tensor<256x256xf32> to tensor<256x256xbf16>
  %hs = fusion.segment_set %h : tensor<256x256xbf16> to tensor<256x256xbf16>
  %e = fusion.matmul %hs, %w : tensor<256x256xbf16>, tensor<256x128xbf16> -> tensor<256x128xf32>
  func.return %e : tensor<256x128xf32>
}

// -----

// An epilogue takes on at most MATMUL_EPILOGUE_WORK (2): two per op other than simple arithmetic,
// one per output beyond the first. tanh joins the matmul (its product is stored for the rest);
// exp and log (two more ops, a second output) go to a pointwise segment.
// CHECK-LABEL: func.func @heavy_epilogue
// CHECK:         %[[C:.*]], %[[T:.*]] = fusion.segment "matmul"
// CHECK-SAME:      fuser.merged = "epilogue (saves
// CHECK:         %[[E:.*]], %[[L:.*]] = fusion.segment "pointwise" (%{{.*}} = %[[C]] : tensor<256x256xf32>)
// CHECK:         func.return %[[T]], %[[E]], %[[L]]
func.func @heavy_epilogue(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> (tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>) {
  %c = fusion.matmul %a, %b : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  %t = fusion.tanh %c : tensor<256x256xf32>
  %e = fusion.exp %c : tensor<256x256xf32>
  %l = fusion.log %e : tensor<256x256xf32>
  func.return %t, %e, %l : tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>
}

// -----

// The reduction reads the raw f32 product, so the matmul stores it; a bf16 epilogue output beside
// that store was measured 15x slower, so the bias add and cast get a pointwise segment.
// CHECK-LABEL: func.func @product_read_elsewhere
// CHECK:         %[[C:.*]] = fusion.segment "matmul" ({{.*}}) -> (tensor<256x256xf32>)
// CHECK-NOT:       fuser.merged
// CHECK:         fusion.segment "pointwise" ({{.*}}%[[C]] : tensor<256x256xf32>) -> (tensor<256x256xbf16>)
// CHECK:         fusion.segment "reduction" ({{.*}}%[[C]] : tensor<256x256xf32>)
func.func @product_read_elsewhere(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %bias: tensor<256xf32>) -> (tensor<256x256xbf16>, tensor<256xf32>) {
  %c = fusion.matmul %a, %b : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<256xf32> to tensor<256x256xf32>
  %d = fusion.add %c, %bb : tensor<256x256xf32>
  %h = fusion.cast %d : tensor<256x256xf32> to tensor<256x256xbf16>
  %s = fusion.reduce sum %c dims [1] : tensor<256x256xf32> to tensor<256xf32>
  func.return %h, %s : tensor<256x256xbf16>, tensor<256xf32>
}
