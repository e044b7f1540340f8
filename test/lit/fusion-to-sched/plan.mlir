// RUN: fuser-opt %s -p convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %S/../../../examples/layer_norm.mlir -p fusion-translate-welford,fusion-segment | fuser-opt -p 'convert-fusion-to-sched{persistent=false}' | filecheck %s --check-prefix=SPLIT
// RUN: fuser-opt %S/../../../examples/layer_norm.mlir -p fusion-translate-welford,fusion-segment | fuser-opt -p convert-fusion-to-sched | filecheck %s --check-prefix=KEPT

// convert-fusion-to-sched makes each segment's kernels with the options in its `fuser.plan`:
// an edited plan changes the kernel, a segment without one takes the pass's options, and an
// option given to the conversion itself that changes what the segment recorded plans that
// segment again under the conversion's options. So a layer norm segmented with the defaults and
// converted with persistent=false becomes reduction and pointwise kernels of their own geometry
// (not the normalization kernel's threads per row as their block size), and the same
// segments converted as they are, one persistent kernel (KEPT).

// CHECK-LABEL: sched.kernel @edited_k0
// CHECK-SAME:    block [128, 1, 1]
func.func @edited(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %y = fusion.segment "pointwise" (%xs = %x : tensor<64x128xf32>) -> (tensor<64x128xf32>) attributes {fuser.plan = {sms = 132 : i64, block = 128 : i64, vector = 0 : i64}} {
    %e = fusion.add %xs, %xs : tensor<64x128xf32>
    fusion.yield %e : tensor<64x128xf32>
  }
  func.return %y : tensor<64x128xf32>
}
// A matmul segment's recorded tile, grid and store path, edited: 128x256 tiles with stores
// straight from the registers, where fusion-segment recorded 128x128 tiles and TMA stores.
// CHECK-LABEL: sched.kernel @edited_matmul_k0
// CHECK-SAME:    fuser.matmul = "tile=128x256 {{.*}} store=direct"
func.func @edited_matmul(%a: tensor<256x64xbf16>, %b: tensor<64x512xbf16>) -> tensor<256x512xf32> {
  %c = fusion.segment "matmul" (%as = %a : tensor<256x64xbf16>, %bs = %b : tensor<64x512xbf16>) -> (tensor<256x512xf32>) attributes {fuser.plan = {sms = 132 : i64, tile = "128x256", stages = 0 : i64, matmul_persistent = 0 : i64, matmul_pingpong = 0 : i64, matmul_cluster = 1 : i64, matmul_store = "direct", matmul_smem_reuse = -1 : i64}} {
    %m = fusion.matmul %as, %bs : tensor<256x64xbf16>, tensor<64x512xbf16> -> tensor<256x512xf32>
    fusion.yield %m : tensor<256x512xf32>
  }
  func.return %c : tensor<256x512xf32>
}
// A reduction segment's recorded geometry, edited: 64 threads per row (4 rows a block), 2-lane
// vectors, each row in 4 chunks (a second kernel folds them), where fusion-segment recorded 256
// threads, 4 lanes and one chunk.
// CHECK-LABEL: sched.kernel @edited_reduction_k0
// CHECK-SAME:    grid [16, 4, 1] block [64, 4, 1]
// CHECK:         sched.load {{.*}} -> vector<2xf32>
// CHECK-LABEL: sched.kernel @edited_reduction_k1
func.func @edited_reduction(%x: tensor<64x4096xf32>) -> tensor<64xf32> {
  %s = fusion.segment "reduction" (%xs = %x : tensor<64x4096xf32>) -> (tensor<64xf32>) attributes {fuser.plan = {sms = 132 : i64, block = 64 : i64, vector = 2 : i64, split = 4 : i64}} {
    %r = fusion.reduce sum %xs dims [1] : tensor<64x4096xf32> to tensor<64xf32>
    fusion.yield %r : tensor<64xf32>
  }
  func.return %s : tensor<64xf32>
}
// CHECK-LABEL: sched.kernel @unplanned_k0
// CHECK-SAME:    block [256, 1, 1]
func.func @unplanned(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %y = fusion.segment "pointwise" (%xs = %x : tensor<64x128xf32>) -> (tensor<64x128xf32>) {
    %e = fusion.add %xs, %xs : tensor<64x128xf32>
    fusion.yield %e : tensor<64x128xf32>
  }
  func.return %y : tensor<64x128xf32>
}

// SPLIT-COUNT-5: sched.kernel @layer_norm_k
// SPLIT-NOT:     sched.kernel
// SPLIT-NOT:     fuser.schedule = "persistent
// KEPT:          sched.kernel @layer_norm_k0
// KEPT-SAME:     fuser.schedule = "persistent
// KEPT-NOT:      sched.kernel @layer_norm_k1
