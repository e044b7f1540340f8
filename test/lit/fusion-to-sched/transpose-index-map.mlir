// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s

// A transpose kernel stages a permute's elements in a shared tile, each valid at its own output
// position. An index map that reads the permute at another position (here index_select's
// gathered column) must compute it there, from the permute's source, not take the tile's element
// (which it did: GPU fuzz seeds 12016027 and 12028026, a cat of slices and an index_select
// reading a double permute, gave the tile's values on the H100).

// CHECK-LABEL: sched.kernel @f_k0(
// CHECK-SAME: %[[A:[0-9]+]] : memref<64x48xf32>, %[[B:[0-9]+]] : memref<64x48xi16>, %[[I:[0-9]+]] : memref<48xi64>, %[[X:[0-9]+]] : memref<64x48xi16>)
// CHECK-SAME: transpose: 32x32 tiles
// CHECK: sched.barrier
// CHECK: %[[T:[0-9]+]] = sched.load %tile0[%{{.*}}, %{{.*}}] : memref<32x33xi16, 3 : i64> -> i16
// CHECK: sched.load %[[I]][%{{.*}}] : memref<48xi64> -> i64
// CHECK: %[[G:[0-9]+]] = sched.load %[[X]][%{{.*}}, %{{.*}}] : memref<64x48xi16> -> i16
// CHECK: sched.store %{{.*}}, %[[A]][
// CHECK-NEXT: sched.store %[[G]], %[[B]][
func.func @f(%x: tensor<64x48xi16>, %i: tensor<48xi64>) -> (tensor<64x48xf32>, tensor<64x48xi16>) {
  %p = fusion.permute %x [1, 0] : tensor<64x48xi16> to tensor<48x64xi16>
  %q = fusion.permute %p [1, 0] : tensor<48x64xi16> to tensor<64x48xi16>
  %a = fusion.cast %q : tensor<64x48xi16> to tensor<64x48xf32>
  %b = fusion.index_select %q, %i dim 1 : tensor<64x48xi16>, tensor<48xi64> to tensor<64x48xi16>
  func.return %a, %b : tensor<64x48xf32>, tensor<64x48xi16>
}
