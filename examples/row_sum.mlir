// Row sum of a fused pointwise expression, and its row max.
func.func @row_stats(%x: tensor<4097x4099xf32>) -> (tensor<4097xf32>, tensor<4097xf32>) {
  %e = fusion.exp %x : tensor<4097x4099xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<4097x4099xf32> to tensor<4097xf32>
  %m = fusion.reduce max %x dims [1] : tensor<4097x4099xf32> to tensor<4097xf32>
  func.return %s, %m : tensor<4097xf32>, tensor<4097xf32>
}
