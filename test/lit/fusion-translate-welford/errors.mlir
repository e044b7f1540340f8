// RUN: not fuser-opt %s -p 'fusion-translate-welford{mode=sometimes}' 2>&1 | filecheck %s
// CHECK: error: pass 'fusion-translate-welford' failed: fusion-translate-welford: mode must be one of auto, always, never, got 'sometimes'
func.func @f(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %v, %m = fusion.var_mean %x dims [1] correction 1 : tensor<4x8xf32> to tensor<4xf32>, tensor<4xf32>
  func.return %v, %m : tensor<4xf32>, tensor<4xf32>
}
