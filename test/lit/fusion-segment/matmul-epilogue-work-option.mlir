// RUN: fuser-opt %s -p 'fusion-segment{matmul_epilogue_work=0}' | filecheck %s --check-prefix=NONE
// RUN: fuser-opt %s -p 'fusion-segment{matmul_epilogue_work=7}' | filecheck %s --check-prefix=SEVEN
// RUN: fuser-opt %s -p fusion-segment | filecheck %s --check-prefix=DEFAULT
// RUN: not fuser-opt %s -p 'fusion-segment{matmul_epilogue_work=-2}' 2>&1 | filecheck %s --check-prefix=BAD

// matmul_epilogue_work bounds what the planner puts into a matmul's epilogue. Both outputs cost 7
// (tanh, exp and log, two each, and one output beyond the first), tanh alone 2: 0 keeps the
// product alone, 7 takes both, the default (2) takes tanh and leaves exp and log to a pointwise
// kernel that reads the stored product.
// NONE-LABEL:  func.func @work
// NONE:          fusion.segment "matmul" ({{.*}}) -> (tensor<256x256xf32>)
// NONE-NOT:        fuser.merged
// NONE:          fusion.segment "pointwise"
// SEVEN-LABEL:   func.func @work
// SEVEN:           fusion.segment "matmul" ({{.*}}) -> (tensor<256x256xf32>, tensor<256x256xf32>)
// SEVEN-SAME:        fuser.merged = "epilogue (saves
// SEVEN-NOT:       fusion.segment "pointwise"
// DEFAULT-LABEL: func.func @work
// DEFAULT:       %[[C:.*]], %{{.*}} = fusion.segment "matmul" ({{.*}}) -> (tensor<256x256xf32>, tensor<256x256xf32>)
// DEFAULT:       fusion.segment "pointwise" (%{{.*}} = %[[C]] : tensor<256x256xf32>) -> (tensor<256x256xf32>)
// BAD: matmul_epilogue_work must be >= 0 (or -1, the default), got -2
func.func @work(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> (tensor<256x256xf32>, tensor<256x256xf32>) {
  %c = fusion.matmul %a, %b : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xf32>
  %t = fusion.tanh %c : tensor<256x256xf32>
  %e = fusion.exp %c : tensor<256x256xf32>
  %l = fusion.log %e : tensor<256x256xf32>
  func.return %t, %l : tensor<256x256xf32>, tensor<256x256xf32>
}
