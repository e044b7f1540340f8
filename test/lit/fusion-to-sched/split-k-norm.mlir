// RUN: fuser-opt %s -p to-sched | filecheck %s

// A long-K matmul (split 8 ways by fusion-split-k) followed by a layer norm: the partials'
// sum is its own kernel, and the normalization reads it from memory instead of trying to
// recompute a reduction inside its kernel (which failed with "'fusion.reduce' cannot be
// recomputed inside a kernel" while the split's cast back to bf16, a pointwise output, counted
// as materialized).
// CHECK:      sched.kernel @f_k0
// CHECK-SAME:   fuser.matmul = "tile=128x128 stages=6 persistent=0 grid=64 tiles=8 split=8 k_chunk=8192
// CHECK:      sched.kernel @f_k1
// CHECK:      sched.kernel @f_k2
// CHECK-SAME:   fuser.schedule = "persistent:
// CHECK:      func.func @f
// CHECK:        sched.launch @f_k0
// CHECK-NEXT:   sched.launch @f_k1
// CHECK-NEXT:   sched.launch @f_k2
func.func @f(%a: tensor<128x65536xbf16>, %b: tensor<65536x1024xbf16>, %w: tensor<1024xf32>) -> (tensor<128x1024xbf16>, tensor<128xf32>, tensor<128xf32>) {
  %c = fusion.matmul %a, %b : tensor<128x65536xbf16>, tensor<65536x1024xbf16> -> tensor<128x1024xbf16>
  %var, %mean = fusion.var_mean %c dims [1] correction 0 : tensor<128x1024xbf16> to tensor<128xf32>, tensor<128xf32>
  %eps = fusion.full 1.0e-05 : tensor<128xf32>
  %ve = fusion.add %var, %eps : tensor<128xf32>
  %rstd = fusion.rsqrt %ve : tensor<128xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<128xf32> to tensor<128x1024xf32>
  %rb = fusion.broadcast %rstd dims [1] : tensor<128xf32> to tensor<128x1024xf32>
  %cf = fusion.cast %c : tensor<128x1024xbf16> to tensor<128x1024xf32>
  %d = fusion.sub %cf, %mb : tensor<128x1024xf32>
  %n = fusion.mul %d, %rb : tensor<128x1024xf32>
  %wb = fusion.broadcast %w dims [0] : tensor<1024xf32> to tensor<128x1024xf32>
  %y0 = fusion.mul %n, %wb : tensor<128x1024xf32>
  %y = fusion.cast %y0 : tensor<128x1024xf32> to tensor<128x1024xbf16>
  func.return %y, %mean, %rstd : tensor<128x1024xbf16>, tensor<128xf32>, tensor<128xf32>
}
