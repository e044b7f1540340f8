// RUN: fuser-opt %s --split-input-file -p 'fusion-split-k{strategy=two-kernel},fusion-segment' | filecheck %s

// A matmul with a bias + relu epilogue and a row sum of the epilogue's result: the epilogue
// joins the matmul's segment. Pointwise values are recomputed, never read back, so the
// reduction's segment reads the product and the bias and recomputes relu(c + bias): the matmul
// segment stores the product as well as the epilogue's output.
// CHECK-LABEL: func.func @mm_then_sum
// CHECK:         %[[C:.*]], %[[R:.*]] = fusion.segment "matmul" (%{{.*}} = %a : tensor<256x512xbf16>, %{{.*}} = %b : tensor<512x256xbf16>, %{{.*}} = %bias : tensor<256xf32>) -> (tensor<256x256xf32>, tensor<256x256xf32>)
// CHECK-SAME:      fuser.segment = "matmul 256x256x512; split-K: kept (K=512 is 8 slices of 64
// CHECK-NEXT:      fusion.matmul
// CHECK-NEXT:      fusion.broadcast
// CHECK-NEXT:      fusion.add
// CHECK-NEXT:      fusion.relu
// CHECK-NEXT:      fusion.yield
// CHECK:         %[[S:.*]] = fusion.segment "reduction" (%{{.*}} = %bias : tensor<256xf32>, %{{.*}} = %[[C]] : tensor<256x256xf32>) -> (tensor<256xf32>)
// CHECK-NEXT:      fusion.broadcast
// CHECK-NEXT:      fusion.add
// CHECK-NEXT:      fusion.relu
// CHECK-NEXT:      fusion.reduce sum
// CHECK:         func.return %[[R]], %[[S]]
func.func @mm_then_sum(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %bias: tensor<256xf32>) -> (tensor<256x256xf32>, tensor<256xf32>) {
  %c = fusion.matmul %a, %b : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<256xf32> to tensor<256x256xf32>
  %d = fusion.add %c, %bb : tensor<256x256xf32>
  %r = fusion.relu %d : tensor<256x256xf32>
  %s = fusion.reduce sum %r dims [1] : tensor<256x256xf32> to tensor<256xf32>
  func.return %r, %s : tensor<256x256xf32>, tensor<256xf32>
}

// -----
// Split-K (two-kernel): the partial products are one matmul segment, their sum with the cast
// and the epilogue a reduction segment.
// CHECK-LABEL: func.func @large_k
// CHECK:         %[[P:.*]] = fusion.segment "matmul" (%{{.*}} = %a : tensor<128x131072xbf16>, %{{.*}} = %b : tensor<131072x128xbf16>) -> (tensor<64x128x128xf32>)
// CHECK-SAME:      fuser.segment = "matmul 128x128x131072; split-K: split 64 ways, k_chunk=2048 (1 tile of 128x128 on 132 SMs, K=131072); reads 67108864 B, writes 4194304 B"
// CHECK-NEXT:      fusion.matmul %{{.*}} k_chunk 2048
// CHECK-NEXT:      fusion.yield
// CHECK:         %[[G:.*]] = fusion.segment "reduction" (%{{.*}} = %[[P]] : tensor<64x128x128xf32>) -> (tensor<128x128xbf16>)
// CHECK-SAME:      fuser.segment = "'fusion.reduce' over dims [0] of [64, 128, 128]; reads 4194304 B, writes 32768 B"
// CHECK-NEXT:      fusion.reduce sum
// CHECK-NEXT:      fusion.cast
// CHECK-NEXT:      fusion.gelu
// CHECK:         func.return %[[G]]
func.func @large_k(%a: tensor<128x131072xbf16>, %b: tensor<131072x128xbf16>) -> tensor<128x128xbf16> {
  %c = fusion.matmul %a, %b : tensor<128x131072xbf16>, tensor<131072x128xbf16> -> tensor<128x128xbf16>
  %g = fusion.gelu %c : tensor<128x128xbf16>
  func.return %g : tensor<128x128xbf16>
}

// -----
// The matmul scheduler reads A and B with TMA, so an operand computed by pointwise ops cannot
// be recomputed in its kernel: instead of refusing, fusion-segment gives it a kernel of its own
// (a segment_set) and says why.
// CHECK-LABEL: func.func @computed_operand
// CHECK:         %[[A:.*]] = fusion.segment "pointwise" (%{{.*}} = %x : tensor<128x256xf32>) -> (tensor<128x256xbf16>)
// CHECK-SAME:      fuser.segment = "segment_set of [128, 256]; resegmented: the matmul scheduler reads operand 'a' from memory (TMA), so it is stored first; reads 131072 B, writes 65536 B"
// CHECK-NEXT:      fusion.cast
// CHECK-NEXT:      fusion.segment_set
// CHECK:         fusion.segment "matmul" (%{{.*}} = %w : tensor<256x128xbf16>, %{{.*}} = %[[A]] : tensor<128x256xbf16>)
func.func @computed_operand(%x: tensor<128x256xf32>, %w: tensor<256x128xbf16>) -> tensor<128x128xf32> {
  %a = fusion.cast %x : tensor<128x256xf32> to tensor<128x256xbf16>
  %c = fusion.matmul %a, %w : tensor<128x256xbf16>, tensor<256x128xbf16> -> tensor<128x128xf32>
  func.return %c : tensor<128x128xf32>
}

// -----
// A matmul inside a segment that names its scheduler is left whole by fusion-split-k: the user
// fixed that kernel (an unnamed segment would be split into the partials and their sum).
// CHECK-LABEL: func.func @named_large_k
// CHECK:         fusion.segment "matmul"
// CHECK-NEXT:      fusion.matmul %{{.*}}, %{{.*}} {fuser.split_k = "kept (inside a fusion.segment named 'matmul')"}
func.func @named_large_k(%a: tensor<128x131072xbf16>, %b: tensor<131072x128xbf16>) -> tensor<128x128xbf16> {
  %c = fusion.segment "matmul" (%as = %a : tensor<128x131072xbf16>, %bs = %b : tensor<131072x128xbf16>) -> (tensor<128x128xbf16>) {
    %m = fusion.matmul %as, %bs : tensor<128x131072xbf16>, tensor<131072x128xbf16> -> tensor<128x128xbf16>
    fusion.yield %m : tensor<128x128xbf16>
  }
  func.return %c : tensor<128x128xbf16>
}
