// A linear layer with its epilogue fused: gelu(a @ w + bias), bf16 in and out, f32 accumulation.
// The Hopper matmul scheduler runs it as one kernel (TMA loads, wgmma, epilogue through TMA stores).
func.func @linear_gelu(%a: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>, %bias: tensor<4096xf32>) -> tensor<4096x4096xbf16> {
  %c = fusion.matmul %a, %w : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<4096xf32> to tensor<4096x4096xf32>
  %d = fusion.add %c, %bb : tensor<4096x4096xf32>
  %g = fusion.gelu %d {approximate = "tanh"} : tensor<4096x4096xf32>
  %o = fusion.cast %g : tensor<4096x4096xf32> to tensor<4096x4096xbf16>
  func.return %o : tensor<4096x4096xbf16>
}
