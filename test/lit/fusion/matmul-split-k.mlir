// RUN: fuser-opt %s | fuser-opt | filecheck %s

// The split-K form of fusion.matmul: `k_chunk KC` after the layout flags, the result holds the
// S = ceil(K / KC) f32 partial products. It prints in its custom form and parses back.

// CHECK-LABEL: func.func @split
func.func @split(%a: tensor<128x4096xbf16>, %b: tensor<4096x32xbf16>, %at: tensor<1000x100xf16>, %bt: tensor<200x1000xf16>) -> (tensor<4x128x32xf32>, tensor<128x32xf32>, tensor<4x100x200xf32>) {
  // CHECK-NEXT: %p = fusion.matmul %a, %b k_chunk 1024 : tensor<128x4096xbf16>, tensor<4096x32xbf16> -> tensor<4x128x32xf32>
  // CHECK-NEXT: %s = fusion.reduce sum %p dims [0] : tensor<4x128x32xf32> to tensor<128x32xf32>
  // a K (1000) that k_chunk does not divide: the last of the 4 chunks holds 232
  // CHECK-NEXT: %q = fusion.matmul %at, %bt transpose_a transpose_b k_chunk 256 {fuser.split_k = "note"} : tensor<1000x100xf16>, tensor<200x1000xf16> -> tensor<4x100x200xf32>
  // CHECK-NEXT: func.return %p, %s, %q
  %p = fusion.matmul %a, %b k_chunk 1024 : tensor<128x4096xbf16>, tensor<4096x32xbf16> -> tensor<4x128x32xf32>
  %s = fusion.reduce sum %p dims [0] : tensor<4x128x32xf32> to tensor<128x32xf32>
  %q = fusion.matmul %at, %bt transpose_a transpose_b k_chunk 256 {fuser.split_k = "note"} : tensor<1000x100xf16>, tensor<200x1000xf16> -> tensor<4x100x200xf32>
  func.return %p, %s, %q : tensor<4x128x32xf32>, tensor<128x32xf32>, tensor<4x100x200xf32>
}

// The generic form carries k_chunk as a property.
// CHECK-LABEL: func.func @generic
// CHECK-NEXT: %p = fusion.matmul %a, %b k_chunk 64 : tensor<8x100xbf16>, tensor<100x16xbf16> -> tensor<2x8x16xf32>
func.func @generic(%a: tensor<8x100xbf16>, %b: tensor<100x16xbf16>) -> tensor<2x8x16xf32> {
  %p = "fusion.matmul"(%a, %b) <{k_chunk = 64 : i64}> : (tensor<8x100xbf16>, tensor<100x16xbf16>) -> tensor<2x8x16xf32>
  func.return %p : tensor<2x8x16xf32>
}

// -----
// The serial form: `k_chunk KC serial`; the result is the whole product, of any float type.
// CHECK-LABEL: func.func @serial
func.func @serial(%a: tensor<128x4096xbf16>, %b: tensor<4096x32xbf16>) -> tensor<128x32xbf16> {
  // CHECK-NEXT: %c = fusion.matmul %a, %b k_chunk 1024 serial : tensor<128x4096xbf16>, tensor<4096x32xbf16> -> tensor<128x32xbf16>
  %c = fusion.matmul %a, %b k_chunk 1024 serial : tensor<128x4096xbf16>, tensor<4096x32xbf16> -> tensor<128x32xbf16>
  func.return %c : tensor<128x32xbf16>
}
