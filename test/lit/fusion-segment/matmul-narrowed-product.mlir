// RUN: fuser-opt %s --split-input-file -p fusion-segment | filecheck %s

// torch's addmm: cast(product + bias) to bf16, read by a residual add and a row sum. The matmul
// kernel holds the bf16 value as one of its results: the residual add is its epilogue, and it
// writes the bf16 value for the row sum, which reads that; the f32 product is never stored (it
// was, and each reader recomputed the bf16 value from it at twice the bytes).
// CHECK-LABEL: func.func @addmm_read_twice
// CHECK:         %[[R:.*]], %[[H:.*]] = fusion.segment "matmul" ({{.*}}) -> (tensor<256x256xbf16>, tensor<256x256xbf16>)
// CHECK-SAME:      fuser.merged = "epilogue (saves
// CHECK-NOT:     tensor<256x256xf32>)
// CHECK:         fusion.segment "reduction" ({{.*}}%[[H]] : tensor<256x256xbf16>)
// CHECK:         func.return %[[R]]
func.func @addmm_read_twice(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %bias: tensor<256xbf16>, %x: tensor<256x256xbf16>) -> (tensor<256x256xbf16>, tensor<256xf32>) {
  %c = fusion.matmul %a, %b : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  %bf = fusion.cast %bias : tensor<256xbf16> to tensor<256xf32>
  %bb = fusion.broadcast %bf dims [0] : tensor<256xf32> to tensor<256x256xf32>
  %d = fusion.add %c, %bb : tensor<256x256xf32>
  %h = fusion.cast %d : tensor<256x256xf32> to tensor<256x256xbf16>
  %r = fusion.add %h, %x : tensor<256x256xbf16>
  %hf = fusion.cast %h : tensor<256x256xbf16> to tensor<256x256xf32>
  %e = fusion.exp %hf : tensor<256x256xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<256x256xf32> to tensor<256xf32>
  func.return %r, %s : tensor<256x256xbf16>, tensor<256xf32>
}

// -----

// The f32 product is also read as it is (a row sum of it): it is stored, and the bf16 value is
// computed from it where it is needed, as before.
// CHECK-LABEL: func.func @product_read_raw
// CHECK:         %[[C:.*]] = fusion.segment "matmul" ({{.*}}) -> (tensor<256x256xf32>)
// CHECK:         fusion.segment "reduction" ({{.*}}%[[C]] : tensor<256x256xf32>)
func.func @product_read_raw(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %x: tensor<256x256xbf16>) -> (tensor<256x256xbf16>, tensor<256xf32>) {
  %c = fusion.matmul %a, %b : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  %h = fusion.cast %c : tensor<256x256xf32> to tensor<256x256xbf16>
  %r = fusion.add %h, %x : tensor<256x256xbf16>
  %s = fusion.reduce sum %c dims [1] : tensor<256x256xf32> to tensor<256xf32>
  func.return %r, %s : tensor<256x256xbf16>, tensor<256xf32>
}

// -----

// A full-size tensor joins the chain before the cast (a residual added in f32): not a light
// epilogue, so the product is stored in f32 and the pointwise kernel computes the rest.
// CHECK-LABEL: func.func @residual_before_the_cast
// CHECK:         %[[C:.*]] = fusion.segment "matmul" ({{.*}}) -> (tensor<256x256xf32>)
// CHECK:         fusion.segment "pointwise" ({{.*}}%[[C]] : tensor<256x256xf32>)
func.func @residual_before_the_cast(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %x: tensor<256x256xf32>) -> (tensor<256x256xbf16>, tensor<256x256xf32>) {
  %c = fusion.matmul %a, %b : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  %d = fusion.add %c, %x : tensor<256x256xf32>
  %h = fusion.cast %d : tensor<256x256xf32> to tensor<256x256xbf16>
  %t = fusion.tanh %h : tensor<256x256xbf16>
  %u = fusion.exp %h : tensor<256x256xbf16>
  %v = fusion.cast %u : tensor<256x256xbf16> to tensor<256x256xf32>
  func.return %t, %v : tensor<256x256xbf16>, tensor<256x256xf32>
}

// -----

// Only the epilogue reads the narrowed value (a GELU on it): one kernel, which writes the GELU
// and neither the product nor the narrowed value.
// CHECK-LABEL: func.func @epilogue_on_the_narrowed_value
// CHECK:         %[[G:.*]] = fusion.segment "matmul" ({{.*}}) -> (tensor<256x256xbf16>)
// CHECK-SAME:      writes 131072 B
// CHECK-NOT:     fusion.segment
// CHECK:         func.return %[[G]]
func.func @epilogue_on_the_narrowed_value(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>, %bias: tensor<256xbf16>) -> tensor<256x256xbf16> {
  %c = fusion.matmul %a, %b : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  %bf = fusion.cast %bias : tensor<256xbf16> to tensor<256xf32>
  %bb = fusion.broadcast %bf dims [0] : tensor<256xf32> to tensor<256x256xf32>
  %d = fusion.add %c, %bb : tensor<256x256xf32>
  %h = fusion.cast %d : tensor<256x256xf32> to tensor<256x256xbf16>
  %g = fusion.gelu %h : tensor<256x256xbf16>
  func.return %g : tensor<256x256xbf16>
}

// -----

// The bias is another kernel's result (a column minimum): the matmul's kernel does not wait for
// that kernel, so it does not compute the narrowed value; the reduction runs first and a
// pointwise kernel adds its result to the stored product (fuzz seed 9200688 had the matmul
// segment read the minimum before any segment wrote it).
// CHECK-LABEL: func.func @bias_from_a_reduction
// CHECK:         %[[M:.*]] = fusion.segment "matmul"
// CHECK-SAME:      -> (tensor<128x128xf32>)
// CHECK:         %[[R:.*]] = fusion.segment "reduction"
// CHECK:         fusion.segment "pointwise" ({{.*}}%[[M]]{{.*}}%[[R]]
func.func @bias_from_a_reduction(%a: tensor<128x64xbf16>, %b: tensor<64x128xbf16>, %x: tensor<128x128xf32>) -> (tensor<128x128xbf16>, tensor<128xf32>) {
  %m = fusion.matmul %a, %b : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
  %r = fusion.reduce min %x dims [0] : tensor<128x128xf32> to tensor<128xf32>
  %rb = fusion.broadcast %r dims [0] : tensor<128xf32> to tensor<128x128xf32>
  %d = fusion.add %m, %rb : tensor<128x128xf32>
  %h = fusion.cast %d : tensor<128x128xf32> to tensor<128x128xbf16>
  func.return %h, %r : tensor<128x128xbf16>, tensor<128xf32>
}
