// Layer norm over rows of 1024 bf16 values with f32 statistics, weight and bias.
//   fuser-opt examples/layer_norm.mlir -p fusion-translate-welford     # the translation decision
//   fuser-opt examples/layer_norm.mlir -p to-sched                     # one persistent kernel
//   fuser-run examples/layer_norm.mlir
func.func @layer_norm(%x: tensor<4096x1024xbf16>, %w: tensor<1024xf32>, %b: tensor<1024xf32>) -> (tensor<4096x1024xbf16>, tensor<4096xf32>, tensor<4096xf32>) {
  %var, %mean = fusion.var_mean %x dims [1] correction 0 : tensor<4096x1024xbf16> to tensor<4096xf32>, tensor<4096xf32>
  %eps = fusion.full 1.0e-05 : tensor<4096xf32>
  %ve = fusion.add %var, %eps : tensor<4096xf32>
  %rstd = fusion.rsqrt %ve : tensor<4096xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<4096xf32> to tensor<4096x1024xf32>
  %rb = fusion.broadcast %rstd dims [1] : tensor<4096xf32> to tensor<4096x1024xf32>
  %xf = fusion.cast %x : tensor<4096x1024xbf16> to tensor<4096x1024xf32>
  %d = fusion.sub %xf, %mb : tensor<4096x1024xf32>
  %n = fusion.mul %d, %rb : tensor<4096x1024xf32>
  %wb = fusion.broadcast %w dims [0] : tensor<1024xf32> to tensor<4096x1024xf32>
  %bb = fusion.broadcast %b dims [0] : tensor<1024xf32> to tensor<4096x1024xf32>
  %y0 = fusion.mul %n, %wb : tensor<4096x1024xf32>
  %y1 = fusion.add %y0, %bb : tensor<4096x1024xf32>
  %y = fusion.cast %y1 : tensor<4096x1024xf32> to tensor<4096x1024xbf16>
  func.return %y, %mean, %rstd : tensor<4096x1024xbf16>, tensor<4096xf32>, tensor<4096xf32>
}
