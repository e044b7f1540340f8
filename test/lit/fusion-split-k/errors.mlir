// RUN: not fuser-opt %s -p 'fusion-split-k{factor=often}' 2>&1 | filecheck %s --check-prefix=WORD
// RUN: not fuser-opt %s -p 'fusion-split-k{factor=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not fuser-opt %s -p 'fusion-split-k{factor=-2}' 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not fuser-opt %s -p 'fusion-split-k{sms=0}' 2>&1 | filecheck %s --check-prefix=SMS
// RUN: not fuser-opt %s -p 'fusion-split-k{strategy=tree}' 2>&1 | filecheck %s --check-prefix=STRATEGY
// RUN: not fuser-opt %s -p 'fusion-split-k{factor=4}' 2>&1 | filecheck %s --check-prefix=SHORT

// WORD: error: pass 'fusion-split-k' failed: fusion-split-k: factor must be 'auto' or a positive integer, got 'often'
// ZERO: error: pass 'fusion-split-k' failed: fusion-split-k: factor must be 'auto' or a positive integer, got '0'
// NEG: error: pass 'fusion-split-k' failed: fusion-split-k: factor must be 'auto' or a positive integer, got '-2'
// SMS: error: bad options for pass 'fusion-split-k': sms must be a positive integer, got 0
// STRATEGY: error: pass 'fusion-split-k' failed: fusion-split-k: strategy must be one of auto, two-kernel, serial, got 'tree'

// A forced factor needs a whole 64-element K-slice per split; the error points at the matmul.
// SHORT: errors.mlir:[[# @LINE + 2]]:3: error: pass 'fusion-split-k' failed: fusion-split-k: factor=4 needs K of at least 193 (4 slices of 64); this 'fusion.matmul' has K=160
func.func @f(%a: tensor<128x160xbf16>, %b: tensor<160x128xbf16>) -> tensor<128x128xf32> {
  %c = fusion.matmul %a, %b : tensor<128x160xbf16>, tensor<160x128xbf16> -> tensor<128x128xf32>
  func.return %c : tensor<128x128xf32>
}
