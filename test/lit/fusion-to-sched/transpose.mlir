// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched,sched-alias-smem | filecheck %s

// out = permute(x) + y: a block stages a 32x32 tile of x read along x's last dim (tx walks
// the second index of the load), then writes out along its last dim (tx walks the second index
// of the store), reading y at the output's index; the tile is padded to 33 columns.
// CHECK-LABEL: sched.kernel @t_k0
// CHECK-SAME:    grid [6, 1, 1] block [32, 8, 1]
// CHECK-SAME:    fuser.schedule = "transpose: 32x32 tiles through shared memory (output dims 0 and 1), 32x8 threads, 6 blocks"
// CHECK:         %[[TX:.*]] = sched.thread_idx x
// CHECK:         %[[TILE:.*]] = sched.alloc offset 0 : i64 : memref<32x33xf32, 3 : i64>
// CHECK:         %[[I:.*]] = arith.addi %{{.*}}, %[[TX]] : index
// CHECK:         sched.load %{{.*}}[%{{.*}}, %[[I]]] : memref<33x65xf32> -> f32
// CHECK:         sched.store %{{.*}}, %[[TILE]][%{{.*}}, %[[TX]]]
// CHECK-COUNT-3: sched.load %{{.*}} : memref<33x65xf32> -> f32
// CHECK:         sched.barrier
// CHECK:         %[[J:.*]] = arith.addi %{{.*}}, %[[TX]] : index
// CHECK:         sched.load %[[TILE]][%[[TX]], %{{.*}}]
// CHECK:         sched.load %{{.*}}[%{{.*}}, %[[J]]] : memref<65x33xf32> -> f32
// CHECK:         arith.addf
// CHECK:         sched.store %{{.*}}, %{{.*}}[%{{.*}}, %[[J]]] : f32, memref<65x33xf32>
func.func @t(%x: tensor<33x65xf32>, %y: tensor<65x33xf32>) -> tensor<65x33xf32> {
  %p = fusion.permute %x [1, 0] : tensor<33x65xf32> to tensor<65x33xf32>
  %s = fusion.add %p, %y : tensor<65x33xf32>
  func.return %s : tensor<65x33xf32>
}

// -----
// A batched permute [0, 2, 1]: the batch dim is the block's first coordinate; 3 x 3 x 2 tiles.
// CHECK-LABEL: sched.kernel @batched_k0
// CHECK-SAME:    grid [18, 1, 1] block [32, 8, 1]
// CHECK-SAME:    fuser.schedule = "transpose: 32x32 tiles through shared memory (output dims 1 and 2), 32x8 threads, 18 blocks"
func.func @batched(%x: tensor<3x33x65xbf16>) -> tensor<3x65x33xbf16> {
  %p = fusion.permute %x [0, 2, 1] : tensor<3x33x65xbf16> to tensor<3x65x33xbf16>
  func.return %p : tensor<3x65x33xbf16>
}

// -----
// A permute that keeps the last dim in place is no transpose: the pointwise kernel, with
// 16-byte vectors, reads and writes along it.
// CHECK-LABEL: sched.kernel @keeps_last_k0
// CHECK-NOT:     fuser.schedule
// CHECK:         sched.load %{{.*}} : memref<8x16x64xf32> -> vector<4xf32>
func.func @keeps_last(%x: tensor<8x16x64xf32>) -> tensor<16x8x64xf32> {
  %p = fusion.permute %x [1, 0, 2] : tensor<8x16x64xf32> to tensor<16x8x64xf32>
  func.return %p : tensor<16x8x64xf32>
}

// -----
// Too narrow to tile (3 columns): the pointwise kernel.
// CHECK-LABEL: sched.kernel @narrow_k0
// CHECK-NOT:     fuser.schedule
func.func @narrow(%x: tensor<3x1000xf32>) -> tensor<1000x3xf32> {
  %p = fusion.permute %x [1, 0] : tensor<3x1000xf32> to tensor<1000x3xf32>
  func.return %p : tensor<1000x3xf32>
}

// -----
// 2-byte elements with even extents: each thread moves 2 side by side (64x64 tiles, 16x8
// threads), so a warp reads and writes 128-byte rows.
// CHECK-LABEL: sched.kernel @pairs_k0
// CHECK-SAME:    grid [8, 1, 1] block [32, 8, 1]
// CHECK-SAME:    fuser.schedule = "transpose: 64x64 tiles through shared memory (output dims 0 and 1), 32x8 threads, 2-element vectors, 8 blocks"
// CHECK:         sched.load %{{.*}} : memref<128x256xbf16> -> vector<2xbf16>
// CHECK:         sched.barrier
// CHECK:         sched.store %{{.*}} : vector<2xbf16>, memref<256x128xbf16>
func.func @pairs(%x: tensor<128x256xbf16>) -> tensor<256x128xbf16> {
  %p = fusion.permute %x [1, 0] : tensor<128x256xbf16> to tensor<256x128xbf16>
  func.return %p : tensor<256x128xbf16>
}
