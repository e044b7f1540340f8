// RUN: fuser-opt %s --split-input-file -p fusion-segment | filecheck %s
// RUN: fuser-opt %s --split-input-file -p 'fusion-segment{block=128 tile="128x256"}' | filecheck %s --check-prefix=OPTS
// RUN: fuser-opt %s --split-input-file -p fusion-segment | fuser-opt --split-input-file | filecheck %s

// fusion-segment writes on every segment it makes the schedule options its scheduler will be
// converted with, as a typed `fuser.plan` dictionary (i64 integers, booleans, strings) that
// prints and parses back unchanged: what the scheduler decides where it can say before any
// kernel exists (a pointwise segment's block and vector width: 256 threads, 4 f32 lanes; a
// matmul's tile, grid and store path: 128x128 tiles, one CTA each, TMA stores), the options
// the pipeline gives (OPTS), else the defaults (0 or -1: the heuristic decides in the
// conversion; a normalization's geometry, and a matmul's pipeline depth, which follows from
// its tile and store path).

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
// CHECK:         fuser.plan = {sms = 132 : i64, block = 0 : i64, vector = 0 : i64, split = 0 : i64, persistent = true}
func.func @layer_norm(%x: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %s = fusion.reduce sum %x dims [1] : tensor<256x1024xf32> to tensor<256xf32>
  %m = fusion.broadcast %s dims [1] : tensor<256xf32> to tensor<256x1024xf32>
  %y = fusion.sub %x, %m : tensor<256x1024xf32>
  func.return %y : tensor<256x1024xf32>
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
