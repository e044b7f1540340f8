// RUN: fuser-opt %s -p 'fusion-translate-welford,fusion-segment,convert-fusion-to-sched{persistent=false}' | filecheck %s
// RUN: fuser-opt %s -p 'fusion-translate-welford' | filecheck %s --check-prefix=AUTO
// RUN: not fuser-opt %s -p 'fusion-translate-welford{persistent=true},fusion-segment,convert-fusion-to-sched{persistent=false}' 2>&1 | filecheck %s --check-prefix=CONFLICT

// Schedule options are pipeline-wide: with persistent=false given to the scheduler, the
// translation is decided as that scheduler will run (no persistent kernel, so the Welford op
// stays), and the fusion takes the 2 kernels of the untranslated form, not 5.
// CHECK-COUNT-2: sched.kernel
// CHECK-NOT:     sched.kernel
// CHECK:         func.func @ln

// Alone, the pass plans with the defaults and translates (one persistent kernel).
// AUTO:          fusion.reduce sum {{.*}}fuser.welford = "translated from fusion.var_mean (persistent:

// CONFLICT: error: schedule option 'persistent' is True for pass 'fusion-translate-welford' but False for pass 'convert-fusion-to-sched'; schedule options are pipeline-wide
func.func @ln(%x: tensor<4096x1024xbf16>) -> (tensor<4096x1024xbf16>, tensor<4096xf32>) {
  %var, %mean = fusion.var_mean %x dims [1] correction 0 : tensor<4096x1024xbf16> to tensor<4096xf32>, tensor<4096xf32>
  %eps = fusion.full 1.0e-05 : tensor<4096xf32>
  %ve = fusion.add %var, %eps : tensor<4096xf32>
  %rstd = fusion.rsqrt %ve : tensor<4096xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<4096xf32> to tensor<4096x1024xf32>
  %rb = fusion.broadcast %rstd dims [1] : tensor<4096xf32> to tensor<4096x1024xf32>
  %xf = fusion.cast %x : tensor<4096x1024xbf16> to tensor<4096x1024xf32>
  %d = fusion.sub %xf, %mb : tensor<4096x1024xf32>
  %n = fusion.mul %d, %rb : tensor<4096x1024xf32>
  %y = fusion.cast %n : tensor<4096x1024xf32> to tensor<4096x1024xbf16>
  func.return %y, %mean : tensor<4096x1024xbf16>, tensor<4096xf32>
}
