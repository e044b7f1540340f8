// RUN: fuser-opt %s | fuser-opt | filecheck %s

// Every fusion op prints in its custom form and parses back to the same text.

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x8xf32>, %h: tensor<16xbf16>) -> (tensor<4x8xf32>, tensor<16xbf16>) {
  // CHECK-NEXT: %neg = fusion.neg %x : tensor<4x8xf32>
  // CHECK-NEXT: %abs = fusion.abs %neg : tensor<4x8xf32>
  // CHECK-NEXT: %exp = fusion.exp %abs : tensor<4x8xf32>
  // CHECK-NEXT: %log = fusion.log %exp : tensor<4x8xf32>
  // CHECK-NEXT: %tanh = fusion.tanh %log : tensor<4x8xf32>
  // CHECK-NEXT: %sqrt = fusion.sqrt %tanh : tensor<4x8xf32>
  // CHECK-NEXT: %rsqrt = fusion.rsqrt %sqrt : tensor<4x8xf32>
  // CHECK-NEXT: %relu = fusion.relu %rsqrt : tensor<4x8xf32>
  // CHECK-NEXT: %sigmoid = fusion.sigmoid %relu : tensor<4x8xf32>
  // CHECK-NEXT: %silu = fusion.silu %sigmoid : tensor<4x8xf32>
  // CHECK-NEXT: %gelu = fusion.gelu %silu : tensor<4x8xf32>
  // CHECK-NEXT: %gelu_tanh = fusion.gelu %gelu {approximate = "tanh"} : tensor<4x8xf32>
  // CHECK-NEXT: %gelu_none = fusion.gelu %h {approximate = "none"} : tensor<16xbf16>
  // CHECK-NEXT: func.return %gelu_tanh, %gelu_none : tensor<4x8xf32>, tensor<16xbf16>
  %neg = fusion.neg %x : tensor<4x8xf32>
  %abs = fusion.abs %neg : tensor<4x8xf32>
  %exp = fusion.exp %abs : tensor<4x8xf32>
  %log = fusion.log %exp : tensor<4x8xf32>
  %tanh = fusion.tanh %log : tensor<4x8xf32>
  %sqrt = fusion.sqrt %tanh : tensor<4x8xf32>
  %rsqrt = fusion.rsqrt %sqrt : tensor<4x8xf32>
  %relu = fusion.relu %rsqrt : tensor<4x8xf32>
  %sigmoid = fusion.sigmoid %relu : tensor<4x8xf32>
  %silu = fusion.silu %sigmoid : tensor<4x8xf32>
  %gelu = fusion.gelu %silu : tensor<4x8xf32>
  %gelu_tanh = fusion.gelu %gelu {approximate = "tanh"} : tensor<4x8xf32>
  %gelu_none = fusion.gelu %h {approximate = "none"} : tensor<16xbf16>
  func.return %gelu_tanh, %gelu_none : tensor<4x8xf32>, tensor<16xbf16>
}

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<3x5xf16>, %b: tensor<3x5xf16>) -> tensor<3x5xf16> {
  // CHECK-NEXT: %add = fusion.add %a, %b : tensor<3x5xf16>
  // CHECK-NEXT: %sub = fusion.sub %add, %b : tensor<3x5xf16>
  // CHECK-NEXT: %mul = fusion.mul %sub, %a : tensor<3x5xf16>
  // CHECK-NEXT: %div = fusion.div %mul, %b : tensor<3x5xf16>
  // CHECK-NEXT: %max = fusion.max %div, %a : tensor<3x5xf16>
  // CHECK-NEXT: %min = fusion.min %max, %b : tensor<3x5xf16>
  // CHECK-NEXT: %pow = fusion.pow %min, %a : tensor<3x5xf16>
  // CHECK-NEXT: func.return %pow : tensor<3x5xf16>
  %add = fusion.add %a, %b : tensor<3x5xf16>
  %sub = fusion.sub %add, %b : tensor<3x5xf16>
  %mul = fusion.mul %sub, %a : tensor<3x5xf16>
  %div = fusion.div %mul, %b : tensor<3x5xf16>
  %max = fusion.max %div, %a : tensor<3x5xf16>
  %min = fusion.min %max, %b : tensor<3x5xf16>
  %pow = fusion.pow %min, %a : tensor<3x5xf16>
  func.return %pow : tensor<3x5xf16>
}

// CHECK-LABEL: func.func @cmp_where_full_cast
func.func @cmp_where_full_cast(%a: tensor<8xbf16>, %b: tensor<8xbf16>) -> (tensor<8xf32>, tensor<8xi1>) {
  // CHECK-NEXT: %eq = fusion.cmp eq, %a, %b : tensor<8xbf16>
  // CHECK-NEXT: %ne = fusion.cmp ne, %a, %b : tensor<8xbf16>
  // CHECK-NEXT: %lt = fusion.cmp lt, %a, %b : tensor<8xbf16>
  // CHECK-NEXT: %le = fusion.cmp le, %a, %b : tensor<8xbf16>
  // CHECK-NEXT: %gt = fusion.cmp gt, %a, %b : tensor<8xbf16>
  // CHECK-NEXT: %ge = fusion.cmp ge, %a, %b : tensor<8xbf16>
  // CHECK-NEXT: %zero = fusion.full 0.0 : tensor<8xbf16>
  // CHECK-NEXT: %neg = fusion.full -2.5 : tensor<8xbf16>
  // CHECK-NEXT: %sel = fusion.where %lt, %a, %zero : tensor<8xbf16>
  // CHECK-NEXT: %sel2 = fusion.where %ge, %sel, %neg : tensor<8xbf16>
  // CHECK-NEXT: %f = fusion.cast %sel2 : tensor<8xbf16> to tensor<8xf32>
  // CHECK-NEXT: %m = fusion.cast %f : tensor<8xf32> to tensor<8xf16>
  // CHECK-NEXT: %i = fusion.cast %eq : tensor<8xi1> to tensor<8xf32>
  // CHECK-NEXT: func.return %f, %ne : tensor<8xf32>, tensor<8xi1>
  %eq = fusion.cmp eq, %a, %b : tensor<8xbf16>
  %ne = fusion.cmp ne, %a, %b : tensor<8xbf16>
  %lt = fusion.cmp lt, %a, %b : tensor<8xbf16>
  %le = fusion.cmp le, %a, %b : tensor<8xbf16>
  %gt = fusion.cmp gt, %a, %b : tensor<8xbf16>
  %ge = fusion.cmp ge, %a, %b : tensor<8xbf16>
  %zero = fusion.full 0.0 : tensor<8xbf16>
  %neg = fusion.full -2.5 : tensor<8xbf16>
  %sel = fusion.where %lt, %a, %zero : tensor<8xbf16>
  %sel2 = fusion.where %ge, %sel, %neg : tensor<8xbf16>
  %f = fusion.cast %sel2 : tensor<8xbf16> to tensor<8xf32>
  %m = fusion.cast %f : tensor<8xf32> to tensor<8xf16>
  %i = fusion.cast %eq : tensor<8xi1> to tensor<8xf32>
  func.return %f, %ne : tensor<8xf32>, tensor<8xi1>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<6xf32>, %y: tensor<2x3x4xf32>) -> (tensor<6x5xf32>, tensor<4x2x3xf32>, tensor<24xf32>) {
  // CHECK-NEXT: %b = fusion.broadcast %x dims [1] : tensor<6xf32> to tensor<6x5xf32>
  // CHECK-NEXT: %b2 = fusion.broadcast %x dims [0, 2] : tensor<6xf32> to tensor<3x6x2xf32>
  // CHECK-NEXT: %p = fusion.permute %y [2, 0, 1] : tensor<2x3x4xf32> to tensor<4x2x3xf32>
  // CHECK-NEXT: %r = fusion.reshape %y : tensor<2x3x4xf32> to tensor<24xf32>
  // CHECK-NEXT: %s = fusion.segment_set %r : tensor<24xf32> to tensor<24xf32>
  // CHECK-NEXT: func.return %b, %p, %s : tensor<6x5xf32>, tensor<4x2x3xf32>, tensor<24xf32>
  %b = fusion.broadcast %x dims [1] : tensor<6xf32> to tensor<6x5xf32>
  %b2 = fusion.broadcast %x dims [0, 2] : tensor<6xf32> to tensor<3x6x2xf32>
  %p = fusion.permute %y [2, 0, 1] : tensor<2x3x4xf32> to tensor<4x2x3xf32>
  %r = fusion.reshape %y : tensor<2x3x4xf32> to tensor<24xf32>
  %s = fusion.segment_set %r : tensor<24xf32> to tensor<24xf32>
  func.return %b, %p, %s : tensor<6x5xf32>, tensor<4x2x3xf32>, tensor<24xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<8x64xbf16>) -> (tensor<8xf32>, tensor<8x1xbf16>, tensor<1x64xbf16>, tensor<8xi64>, tensor<8x1xf32>) {
  // CHECK-NEXT: %sum = fusion.reduce sum %x dims [1] : tensor<8x64xbf16> to tensor<8xf32>
  // CHECK-NEXT: %max = fusion.reduce max %x dims [1] keepdim : tensor<8x64xbf16> to tensor<8x1xbf16>
  // CHECK-NEXT: %min = fusion.reduce min %x dims [0] keepdim : tensor<8x64xbf16> to tensor<1x64xbf16>
  // CHECK-NEXT: %all = fusion.reduce sum %x dims [0, 1] : tensor<8x64xbf16> to tensor<f32>
  // CHECK-NEXT: %avg, %m2, %n = fusion.welford %x dims [1] : tensor<8x64xbf16> to tensor<8xf32>, tensor<8xf32>, tensor<8xi64>
  // CHECK-NEXT: %var, %mean = fusion.var_mean %x dims [1] correction 0 keepdim : tensor<8x64xbf16> to tensor<8x1xf32>, tensor<8x1xf32>
  // CHECK-NEXT: func.return %sum, %max, %min, %n, %var : tensor<8xf32>, tensor<8x1xbf16>, tensor<1x64xbf16>, tensor<8xi64>, tensor<8x1xf32>
  %sum = fusion.reduce sum %x dims [1] : tensor<8x64xbf16> to tensor<8xf32>
  %max = fusion.reduce max %x dims [1] keepdim : tensor<8x64xbf16> to tensor<8x1xbf16>
  %min = fusion.reduce min %x dims [0] keepdim : tensor<8x64xbf16> to tensor<1x64xbf16>
  %all = fusion.reduce sum %x dims [0, 1] : tensor<8x64xbf16> to tensor<f32>
  %avg, %m2, %n = fusion.welford %x dims [1] : tensor<8x64xbf16> to tensor<8xf32>, tensor<8xf32>, tensor<8xi64>
  %var, %mean = fusion.var_mean %x dims [1] correction 0 keepdim : tensor<8x64xbf16> to tensor<8x1xf32>, tensor<8x1xf32>
  func.return %sum, %max, %min, %n, %var : tensor<8xf32>, tensor<8x1xbf16>, tensor<1x64xbf16>, tensor<8xi64>, tensor<8x1xf32>
}

// CHECK-LABEL: func.func @matmuls
func.func @matmuls(%a: tensor<128x64xbf16>, %b: tensor<64x32xbf16>, %at: tensor<64x128xbf16>, %bt: tensor<32x64xbf16>) -> (tensor<128x32xf32>, tensor<128x32xbf16>) {
  // CHECK-NEXT: %c = fusion.matmul %a, %b : tensor<128x64xbf16>, tensor<64x32xbf16> -> tensor<128x32xf32>
  // CHECK-NEXT: %c1 = fusion.matmul %at, %b transpose_a : tensor<64x128xbf16>, tensor<64x32xbf16> -> tensor<128x32xf32>
  // CHECK-NEXT: %c2 = fusion.matmul %a, %bt transpose_b : tensor<128x64xbf16>, tensor<32x64xbf16> -> tensor<128x32xbf16>
  // CHECK-NEXT: %c3 = fusion.matmul %at, %bt transpose_a transpose_b : tensor<64x128xbf16>, tensor<32x64xbf16> -> tensor<128x32xf16>
  // CHECK-NEXT: func.return %c, %c2 : tensor<128x32xf32>, tensor<128x32xbf16>
  %c = fusion.matmul %a, %b : tensor<128x64xbf16>, tensor<64x32xbf16> -> tensor<128x32xf32>
  %c1 = fusion.matmul %at, %b transpose_a : tensor<64x128xbf16>, tensor<64x32xbf16> -> tensor<128x32xf32>
  %c2 = fusion.matmul %a, %bt transpose_b : tensor<128x64xbf16>, tensor<32x64xbf16> -> tensor<128x32xbf16>
  %c3 = fusion.matmul %at, %bt transpose_a transpose_b : tensor<64x128xbf16>, tensor<32x64xbf16> -> tensor<128x32xf16>
  func.return %c, %c2 : tensor<128x32xf32>, tensor<128x32xbf16>
}

// Discardable attributes survive on every op.
// CHECK-LABEL: func.func @attrs
func.func @attrs(%x: tensor<4xf32>) -> tensor<f32> {
  // CHECK-NEXT: %e = fusion.exp %x {tag = "t0"} : tensor<4xf32>
  // CHECK-NEXT: %a = fusion.add %e, %x {tag = "t1"} : tensor<4xf32>
  // CHECK-NEXT: %r = fusion.reduce sum %a dims [0] {tag = "t2"} : tensor<4xf32> to tensor<f32>
  // CHECK-NEXT: func.return %r : tensor<f32>
  %e = fusion.exp %x {tag = "t0"} : tensor<4xf32>
  %a = fusion.add %e, %x {tag = "t1"} : tensor<4xf32>
  %r = fusion.reduce sum %a dims [0] {tag = "t2"} : tensor<4xf32> to tensor<f32>
  func.return %r : tensor<f32>
}
