// RUN: fuser-opt %s --split-input-file -p fusion-translate-welford | filecheck %s --check-prefix=AUTO
// RUN: fuser-opt %s --split-input-file -p 'fusion-translate-welford{mode=always}' | filecheck %s --check-prefix=ALWAYS
// RUN: fuser-opt %s --split-input-file -p 'fusion-translate-welford{mode=never}' | filecheck %s --check-prefix=NEVER

// Layer norm over rows of 1024 bf16: the normalization scheduler keeps a row in registers, so
// auto translates var_mean into mean = sum(x)/N and the corrected two-pass variance
// (sum(d*d) - sum(d)^2/N) / (N - correction) with d = x - mean, and records why. Every use of
// var and mean now reads the translated values.
// AUTO-LABEL: func.func @layer_norm
// AUTO-NOT:     = fusion.var_mean
// AUTO:         %[[S:.*]] = fusion.reduce sum %x dims [1] {fuser.welford = "translated from fusion.var_mean (persistent: 8 row(s)/block, 32 threads/row, 4 x 8-element vectors/thread in registers)"} : tensor<4096x1024xbf16> to tensor<4096xf32>
// AUTO:         %[[MEAN:.*]] = fusion.div %[[S]], %[[N:.*]] : tensor<4096xf32>
// AUTO:         %[[MB:.*]] = fusion.broadcast %[[MEAN]] dims [1]
// AUTO:         %[[D:.*]] = fusion.sub %{{.*}}, %[[MB]] : tensor<4096x1024xf32>
// AUTO:         %[[DD:.*]] = fusion.mul %[[D]], %[[D]]
// AUTO:         %[[SSQ:.*]] = fusion.reduce sum %[[DD]] dims [1] {fuser.welford = "translated
// AUTO:         %[[SD:.*]] = fusion.reduce sum %[[D]] dims [1] {fuser.welford = "translated
// AUTO:         %[[SD2:.*]] = fusion.mul %[[SD]], %[[SD]]
// AUTO:         %[[C:.*]] = fusion.div %[[SD2]], %[[N]]
// AUTO:         %[[M2:.*]] = fusion.sub %[[SSQ]], %[[C]]
// AUTO:         %[[DEN:.*]] = fusion.full 1024.0 : tensor<4096xf32>
// AUTO:         %[[VAR:.*]] = fusion.div %[[M2]], %[[DEN]]
// AUTO:         fusion.add %[[VAR]], %eps
// AUTO:         fusion.broadcast %[[MEAN]] dims [1]
// AUTO:         func.return %y, %[[MEAN]], %rstd
// ALWAYS-LABEL: func.func @layer_norm
// ALWAYS:         fusion.reduce sum %x dims [1] {fuser.welford = "translated from fusion.var_mean (mode=always)"}
// NEVER-LABEL: func.func @layer_norm
// NEVER:         fusion.var_mean %x dims [1] correction 0 {fuser.welford = "kept (mode=never)"}
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

// -----
// Rows of 65536 f32 fit neither in registers nor in shared memory: auto keeps the one-pass
// Welford reduction (the two-pass form would read x twice) and says why; always translates anyway.
// AUTO-LABEL: func.func @long_rows
// AUTO:         fusion.var_mean %x dims [1] correction 1 {fuser.welford = "kept (a row of 65536 elements from 1 input(s) needs 64 registers/thread at 1024 threads/block (budget 32) or 262144 bytes of shared memory (budget 231424))"}
// ALWAYS-LABEL: func.func @long_rows
// ALWAYS-NOT:     = fusion.var_mean
// ALWAYS:         fusion.reduce sum %x dims [1] {fuser.welford = "translated from fusion.var_mean (mode=always)"}
func.func @long_rows(%x: tensor<64x65536xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %var, %mean = fusion.var_mean %x dims [1] correction 1 : tensor<64x65536xf32> to tensor<64xf32>, tensor<64xf32>
  func.return %var, %mean : tensor<64xf32>, tensor<64xf32>
}

// -----
// Rows of 49152 f32 (192 KB) are too long for registers but fit in shared memory: still one
// read, so auto translates.
// AUTO-LABEL: func.func @smem_rows
// AUTO:         fusion.reduce sum %x dims [1] {fuser.welford = "translated from fusion.var_mean (persistent: 1 row(s)/block, 1024 threads/row, 12 x 4-element vectors/thread in 196608 bytes of shared memory)"}
func.func @smem_rows(%x: tensor<16x49152xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %var, %mean = fusion.var_mean %x dims [1] correction 1 : tensor<16x49152xf32> to tensor<16xf32>, tensor<16xf32>
  func.return %var, %mean : tensor<16xf32>, tensor<16xf32>
}

// -----
// Statistics over the first axis: the column cannot stay on chip, Welford stays.
// AUTO-LABEL: func.func @columns
// AUTO:         fusion.welford %x dims [0] {fuser.welford = "kept (its reductions would not share one kernel; the second pass would read the input again)"}
func.func @columns(%x: tensor<8192x256xf32>) -> (tensor<256xf32>, tensor<256xf32>, tensor<256xi64>) {
  %avg, %m2, %n = fusion.welford %x dims [0] : tensor<8192x256xf32> to tensor<256xf32>, tensor<256xf32>, tensor<256xi64>
  func.return %avg, %m2, %n : tensor<256xf32>, tensor<256xf32>, tensor<256xi64>
}

// -----
// Welford with keepdim: all three results keep their uses; N becomes the count cast to i64,
// and each result is reshaped back to the keepdim shape.
// ALWAYS-LABEL: func.func @welford_keepdim
// ALWAYS:         %[[S:.*]] = fusion.reduce sum %x dims [1] {{.*}} : tensor<16x128xf32> to tensor<16xf32>
// ALWAYS:         %[[CNT:.*]] = fusion.full 128.0 : tensor<16xf32>
// ALWAYS:         %[[MEAN:.*]] = fusion.div %[[S]], %[[CNT]]
// ALWAYS:         %[[M2:.*]] = fusion.sub %{{[0-9]+}}, %{{[0-9]+}} : tensor<16xf32>
// ALWAYS:         %[[N:.*]] = fusion.cast %[[CNT]] : tensor<16xf32> to tensor<16xi64>
// ALWAYS:         %[[A1:.*]] = fusion.reshape %[[MEAN]] : tensor<16xf32> to tensor<16x1xf32>
// ALWAYS:         %[[M21:.*]] = fusion.reshape %[[M2]] : tensor<16xf32> to tensor<16x1xf32>
// ALWAYS:         %[[N1:.*]] = fusion.reshape %[[N]] : tensor<16xi64> to tensor<16x1xi64>
// ALWAYS:         %[[Q:.*]] = fusion.mul %[[A1]], %[[M21]]
// ALWAYS:         func.return %[[Q]], %[[N1]]
func.func @welford_keepdim(%x: tensor<16x128xf32>) -> (tensor<16x1xf32>, tensor<16x1xi64>) {
  %avg, %m2, %n = fusion.welford %x dims [1] keepdim : tensor<16x128xf32> to tensor<16x1xf32>, tensor<16x1xf32>, tensor<16x1xi64>
  %q = fusion.mul %avg, %m2 : tensor<16x1xf32>
  func.return %q, %n : tensor<16x1xf32>, tensor<16x1xi64>
}

// -----

// Only the mean of a var_mean is read: the two-pass form is one sum and a division, with no
// second pass and no dead variance reductions (they would cost a kernel a second read of
// each row). Even a row too long to stay on chip is translated, since nothing reads it twice.
// AUTO-LABEL: func.func @mean_only
// AUTO-NEXT:    %[[S:.*]] = fusion.reduce sum %x dims [1] {fuser.welford = "translated from fusion.var_mean (only its mean is read: one sum, no second pass)"} : tensor<64x65536xbf16> to tensor<64xf32>
// AUTO-NEXT:    %[[N:.*]] = fusion.full 65536.0 : tensor<64xf32>
// AUTO-NEXT:    %mean = fusion.div %[[S]], %[[N]] : tensor<64xf32>
// AUTO-NEXT:    func.return %mean
// ALWAYS-LABEL: func.func @mean_only
// ALWAYS-NOT:     fusion.mul
// ALWAYS:         func.return
func.func @mean_only(%x: tensor<64x65536xbf16>) -> tensor<64xf32> {
  %var, %mean = fusion.var_mean %x dims [1] correction 1 : tensor<64x65536xbf16> to tensor<64xf32>, tensor<64xf32>
  func.return %mean : tensor<64xf32>
}
