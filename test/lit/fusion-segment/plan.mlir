// RUN: fuser-opt %s --split-input-file -p fusion-segment | filecheck %s
// RUN: fuser-opt %s --split-input-file -p 'fusion-segment{block=128 tile="128x256"}' | filecheck %s --check-prefix=OPTS
// RUN: fuser-opt %s --split-input-file -p fusion-segment | fuser-opt --split-input-file | filecheck %s

// fusion-segment writes on every segment it makes the schedule options its scheduler will be
// converted with, as a typed `fuser.plan` dictionary (i64 integers, booleans, strings) that
// prints and parses back unchanged: what the scheduler decides, as the options that reproduce
// it (a pointwise segment's block and vector width: 256 threads, 4 f32 lanes; an inner
// reduction's threads per row, vector width and chunks per row; an outer reduction's vector
// width and row chunks; a normalization's threads per row and vector width; a matmul's tile,
// grid and store path: 128x128 tiles, one CTA each, TMA stores), and otherwise the options the
// pipeline gives (OPTS) or the defaults (a matmul's pipeline depth follows from its tile and
// epilogue, which the conversion plans).

// CHECK-LABEL: func.func @scale
// CHECK:         fusion.segment "pointwise"
// CHECK-SAME:    fuser.plan = {sms = 132 : i64, block = 256 : i64, vector = 4 : i64}
// OPTS-LABEL:  func.func @scale
// OPTS:          fuser.plan = {sms = 132 : i64, block = 128 : i64, vector = 4 : i64}
func.func @scale(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %y = fusion.add %x, %x : tensor<64x128xf32>
  func.return %y : tensor<64x128xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
// CHECK:         fusion.segment "normalization"
// CHECK:         fuser.plan = {sms = 132 : i64, block = 64 : i64, vector = 4 : i64, split = 0 : i64, persistent = true}
func.func @layer_norm(%x: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %s = fusion.reduce sum %x dims [1] : tensor<256x1024xf32> to tensor<256xf32>
  %m = fusion.broadcast %s dims [1] : tensor<256xf32> to tensor<256x1024xf32>
  %y = fusion.sub %x, %m : tensor<256x1024xf32>
  func.return %y : tensor<256x1024xf32>
}

// -----

// 64 rows of 4096: 256 threads per row, one chunk; with block=128, at most 128 threads per row.
// CHECK-LABEL: func.func @row_sum
// CHECK:         fusion.segment "reduction"
// CHECK-SAME:    fuser.plan = {sms = 132 : i64, block = 256 : i64, vector = 4 : i64, split = 1 : i64}
// OPTS-LABEL:  func.func @row_sum
// OPTS:          fuser.plan = {sms = 132 : i64, block = 128 : i64, vector = 4 : i64, split = 1 : i64}
func.func @row_sum(%x: tensor<64x4096xf32>) -> tensor<64xf32> {
  %s = fusion.reduce sum %x dims [1] : tensor<64x4096xf32> to tensor<64xf32>
  func.return %s : tensor<64xf32>
}

// -----

// A column sum of bf16 read as 8-lane vectors, its 4096 rows in 32 chunks (the outer
// reduction lays its threads out itself: `block` stays the option).
// CHECK-LABEL: func.func @col_sum
// CHECK:         fusion.segment "reduction"
// CHECK-SAME:    fuser.plan = {sms = 132 : i64, block = 0 : i64, vector = 8 : i64, split = 32 : i64}
func.func @col_sum(%x: tensor<4096x256xbf16>) -> tensor<256xf32> {
  %xf = fusion.cast %x : tensor<4096x256xbf16> to tensor<4096x256xf32>
  %s = fusion.reduce sum %xf dims [0] : tensor<4096x256xf32> to tensor<256xf32>
  func.return %s : tensor<256xf32>
}

// -----

// CHECK-LABEL: func.func @mm
// CHECK:         fusion.segment "matmul"
// CHECK:         fuser.plan = {sms = 132 : i64, tile = "128x128", stages = 0 : i64, matmul_persistent = 0 : i64, matmul_pingpong = 0 : i64, matmul_cluster = 1 : i64, matmul_store = "tma", matmul_smem_reuse = -1 : i64}
// OPTS-LABEL:  func.func @mm
// OPTS:          fuser.plan = {sms = 132 : i64, tile = "128x256", stages = 0 : i64, matmul_persistent = 0 : i64, matmul_pingpong = 0 : i64, matmul_cluster = 1 : i64, matmul_store = "tma", matmul_smem_reuse = -1 : i64}
func.func @mm(%a: tensor<256x64xbf16>, %b: tensor<64x512xbf16>) -> tensor<256x512xf32> {
  %c = fusion.matmul %a, %b : tensor<256x64xbf16>, tensor<64x512xbf16> -> tensor<256x512xf32>
  func.return %c : tensor<256x512xf32>
}
