// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched | filecheck %s

// The joint row and column reduction: one kernel reads x once, a warp (32 threads) across column
// vectors. With two column blocks each row has two partials, which the next kernel merges and
// casts; two row chunks leave two column partials, merged by the last kernel.
// CHECK-LABEL: builtin.module
// CHECK:         sched.kernel @casts_k0(%{{.*}} : memref<1x2x300xf32>, %{{.*}} : memref<300x70xbf16>, %{{.*}} : memref<1x2x70xf32>) grid [2, 2, 1] block [32, 8, 1]
// CHECK-SAME:      fuser.schedule = "joint row and column reduction of [300, 70] as 300 rows x 70 columns: 32x8 threads over 2-element column vectors, 2 row chunk(s); each row folded per 32 column vectors, 2 partials per row merged by the next kernel"
// CHECK:           sched.shfl_xor
// CHECK:         sched.kernel @casts_k1(%{{.*}} : memref<300xbf16>, %{{.*}} : memref<1x2x300xf32>)
// CHECK:         sched.kernel @casts_k2(%{{.*}} : memref<70xbf16>, %{{.*}} : memref<1x2x70xf32>)
// CHECK:         sched.launch @casts_k0(%[[RP:.*]], %x, %[[CP:.*]]) :
// CHECK-NEXT:    sched.launch @casts_k1(%rb, %[[RP]])
// CHECK-NEXT:    sched.launch @casts_k2(%cb, %[[CP]])
func.func @casts(%x: tensor<300x70xbf16>) -> (tensor<300xbf16>, tensor<70xbf16>) {
  %r = fusion.reduce sum %x dims [1] {dtype = "f32"} : tensor<300x70xbf16> to tensor<300xf32>
  %c = fusion.reduce max %x dims [0] {dtype = "f32"} : tensor<300x70xbf16> to tensor<70xf32>
  %rb = fusion.cast %r : tensor<300xf32> to tensor<300xbf16>
  %cb = fusion.cast %c : tensor<70xf32> to tensor<70xbf16>
  func.return %rb, %cb : tensor<300xbf16>, tensor<70xbf16>
}

// -----
// One block spans the 40 columns (10 vectors of 4): kernel 1 stores the row minima itself.
// CHECK-LABEL: builtin.module
// CHECK:         sched.kernel @rank3_k0(%{{.*}} : memref<40xf32>, %{{.*}} : memref<8x16xf32>, %{{.*}} : memref<8x16x40xf32>) grid [1, 1, 1] block [32, 8, 1]
// CHECK-SAME:      "joint row and column reduction of [8, 16, 40] as 128 rows x 40 columns: 32x8 threads over 4-element column vectors, 1 row chunk(s); each row folded per 32 column vectors"
// CHECK-NOT:     sched.kernel
// CHECK:         sched.launch @rank3_k0(%c, %r, %x)
// CHECK-NOT:     sched.launch
func.func @rank3(%x: tensor<8x16x40xf32>) -> (tensor<40xf32>, tensor<8x16xf32>) {
  %c = fusion.reduce sum %x dims [0, 1] : tensor<8x16x40xf32> to tensor<40xf32>
  %r = fusion.reduce min %x dims [2] : tensor<8x16x40xf32> to tensor<8x16xf32>
  func.return %c, %r : tensor<40xf32>, tensor<8x16xf32>
}
