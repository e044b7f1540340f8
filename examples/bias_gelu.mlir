// gelu(x * y + b): a pointwise fusion with a broadcast bias.
func.func @bias_gelu(%x: tensor<1024x4096xf32>, %y: tensor<1024x4096xf32>, %b: tensor<4096xf32>) -> tensor<1024x4096xf32> {
  %xy = fusion.mul %x, %y : tensor<1024x4096xf32>
  %bb = fusion.broadcast %b dims [0] : tensor<4096xf32> to tensor<1024x4096xf32>
  %s = fusion.add %xy, %bb : tensor<1024x4096xf32>
  %g = fusion.gelu %s {approximate = "tanh"} : tensor<1024x4096xf32>
  func.return %g : tensor<1024x4096xf32>
}
