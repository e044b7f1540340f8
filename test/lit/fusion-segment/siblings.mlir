// RUN: fuser-opt %s --split-input-file -p 'fusion-translate-welford{mode=never},fusion-segment' | filecheck %s

// Sibling reductions of one input: a reduction over its leading dims and one over the rest are
// one "reduction" segment (the joint kernel reads the input once); each keeps its epilogue.
// CHECK-LABEL: func.func @casts
// CHECK:         %[[RB:.*]], %[[CB:.*]] = fusion.segment "reduction" (%{{.*}} = %x : tensor<300x70xbf16>) -> (tensor<300xbf16>, tensor<70xbf16>)
// CHECK-SAME:      fuser.segment = "joint reduction of %x [300, 70]: 'fusion.reduce' max over dims [0] and 'fusion.reduce' sum over dims [1]; one read of %x (42000 B) where a kernel each would read it twice; reads 42000 B, writes 740 B"
// CHECK-SAME:      fuser.merged = "siblings (saves 42000 B), epilogue (saves 2400 B), epilogue (saves 560 B)"
// CHECK-NEXT:      fusion.reduce sum
// CHECK-NEXT:      fusion.reduce max
// CHECK-NEXT:      fusion.cast
// CHECK-NEXT:      fusion.cast
// CHECK:         func.return %[[RB]], %[[CB]]
func.func @casts(%x: tensor<300x70xbf16>) -> (tensor<300xbf16>, tensor<70xbf16>) {
  %r = fusion.reduce sum %x dims [1] {dtype = "f32"} : tensor<300x70xbf16> to tensor<300xf32>
  %c = fusion.reduce max %x dims [0] {dtype = "f32"} : tensor<300x70xbf16> to tensor<70xf32>
  %rb = fusion.cast %r : tensor<300xf32> to tensor<300xbf16>
  %cb = fusion.cast %c : tensor<70xf32> to tensor<70xbf16>
  func.return %rb, %cb : tensor<300xbf16>, tensor<70xbf16>
}

// -----
// Any split of the dims: [0, 1] for the columns, [2] for the rows.
// CHECK-LABEL: func.func @rank3
// CHECK:         fusion.segment "reduction" (%{{.*}} = %x : tensor<8x16x40xf32>) -> (tensor<40xf32>, tensor<8x16xf32>)
// CHECK-SAME:      fuser.segment = "joint reduction of %x [8, 16, 40]: 'fusion.reduce' sum over dims [0, 1] and 'fusion.reduce' min over dims [2];
func.func @rank3(%x: tensor<8x16x40xf32>) -> (tensor<40xf32>, tensor<8x16xf32>) {
  %c = fusion.reduce sum %x dims [0, 1] : tensor<8x16x40xf32> to tensor<40xf32>
  %r = fusion.reduce min %x dims [2] : tensor<8x16x40xf32> to tensor<8x16xf32>
  func.return %c, %r : tensor<40xf32>, tensor<8x16xf32>
}

// -----
// Welford siblings keep a kernel each, and the record says why.
// CHECK-LABEL: func.func @welford
// CHECK:         fusion.segment "reduction" (%{{.*}} = %x : tensor<64x32xf32>) -> (tensor<64xf32>, tensor<64xf32>)
// CHECK-SAME:      fuser.segment = "'fusion.var_mean' over dims [1] of [64, 32]; reads 8192 B, writes 512 B; siblings: 2 reductions of %x over different dims, one kernel each (a Welford state is not folded per row inside the column kernel), read 2 times (16384 B)"
// CHECK:         fusion.segment "reduction" (%{{.*}} = %x : tensor<64x32xf32>) -> (tensor<32xf32>, tensor<32xf32>)
// CHECK-SAME:      siblings: 2 reductions of %x over different dims, one kernel each (a Welford state
func.func @welford(%x: tensor<64x32xf32>) -> (tensor<64xf32>, tensor<32xf32>) {
  %v0, %m0 = fusion.var_mean %x dims [1] correction 1 : tensor<64x32xf32> to tensor<64xf32>, tensor<64xf32>
  %v1, %m1 = fusion.var_mean %x dims [0] correction 1 : tensor<64x32xf32> to tensor<32xf32>, tensor<32xf32>
  func.return %v0, %v1 : tensor<64xf32>, tensor<32xf32>
}

// -----
// Dims [0] and [2] of a rank-3 input do not split it into rows and columns: a kernel each.
// CHECK-LABEL: func.func @not_complementary
// CHECK:         fusion.segment "reduction"
// CHECK-SAME:      one kernel each (no pair reduces its leading dims and the rest), read 2 times (40960 B)"
// CHECK:         fusion.segment "reduction"
// CHECK-SAME:      one kernel each (no pair reduces its leading dims and the rest)
func.func @not_complementary(%x: tensor<8x16x40xf32>) -> (tensor<16x40xf32>, tensor<8x16xf32>) {
  %c = fusion.reduce sum %x dims [0] : tensor<8x16x40xf32> to tensor<16x40xf32>
  %r = fusion.reduce sum %x dims [2] : tensor<8x16x40xf32> to tensor<8x16xf32>
  func.return %c, %r : tensor<16x40xf32>, tensor<8x16xf32>
}

// -----
// The joint kernel finishes the rows and the columns in different kernels, so an output that
// reads both results is not its epilogue (a pointwise segment computes it); one reading only the
// row sums is.
// CHECK-LABEL: func.func @both_read
// CHECK:         %[[C:.*]], %[[R:.*]], %[[E:.*]] = fusion.segment "reduction" (%{{.*}} = %x : tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
// CHECK-SAME:      fuser.merged = "siblings (saves 16384 B), epilogue (saves 256 B)"
// CHECK:           fusion.exp
// CHECK:         %[[S:.*]] = fusion.segment "pointwise" (%{{.*}} = %[[R]] : tensor<64xf32>, %{{.*}} = %[[C]] : tensor<64xf32>)
// CHECK-NEXT:      fusion.add
// CHECK:         func.return %[[S]], %[[E]]
func.func @both_read(%x: tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %r = fusion.reduce sum %x dims [1] : tensor<64x64xf32> to tensor<64xf32>
  %c = fusion.reduce sum %x dims [0] : tensor<64x64xf32> to tensor<64xf32>
  %s = fusion.add %r, %c : tensor<64xf32>
  %e = fusion.exp %r : tensor<64xf32>
  func.return %s, %e : tensor<64xf32>, tensor<64xf32>
}
