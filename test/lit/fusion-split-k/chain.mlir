// RUN: fuser-opt %s -p 'fusion-split-k{strategy=two-kernel}' | filecheck %s

// A bf16 result read by another matmul: that matmul reads its operand from memory (TMA), so
// the cast of the sum is put in a buffer again (fusion.segment_set). A matmul that already
// carries k_chunk is left alone.
// CHECK-LABEL: func.func @chain
// CHECK:         %[[P:.*]] = fusion.matmul %a, %b k_chunk 2048
// CHECK-NEXT:    %[[S:.*]] = fusion.reduce sum %[[P]] dims [0]
// CHECK-NEXT:    %[[C:.*]] = fusion.cast %[[S]] : tensor<128x128xf32> to tensor<128x128xbf16>
// CHECK-NEXT:    %h = fusion.segment_set %[[C]] : tensor<128x128xbf16> to tensor<128x128xbf16>
// CHECK-NEXT:    %o = fusion.matmul %h, %w {fuser.split_k = "kept (K=128 is 2 slices of 64, {{.*}}"} : tensor<128x128xbf16>, tensor<128x64xbf16> -> tensor<128x64xf32>
// CHECK-NEXT:    %q = fusion.matmul %a, %b k_chunk 65536 : tensor<128x131072xbf16>, tensor<131072x128xbf16> -> tensor<2x128x128xf32>
// CHECK-NEXT:    func.return %o, %q
func.func @chain(%a: tensor<128x131072xbf16>, %b: tensor<131072x128xbf16>, %w: tensor<128x64xbf16>) -> (tensor<128x64xf32>, tensor<2x128x128xf32>) {
  %h = fusion.matmul %a, %b : tensor<128x131072xbf16>, tensor<131072x128xbf16> -> tensor<128x128xbf16>
  %o = fusion.matmul %h, %w : tensor<128x128xbf16>, tensor<128x64xbf16> -> tensor<128x64xf32>
  %q = fusion.matmul %a, %b k_chunk 65536 : tensor<128x131072xbf16>, tensor<131072x128xbf16> -> tensor<2x128x128xf32>
  func.return %o, %q : tensor<128x64xf32>, tensor<2x128x128xf32>
}
