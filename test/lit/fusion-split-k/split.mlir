// RUN: fuser-opt %s --split-input-file -p 'fusion-split-k{strategy=two-kernel}' | filecheck %s --check-prefix=AUTO
// RUN: fuser-opt %s --split-input-file -p 'fusion-split-k{factor=4 strategy=two-kernel}' | filecheck %s --check-prefix=FOUR
// RUN: fuser-opt %s --split-input-file -p 'fusion-split-k{sms=8 strategy=two-kernel}' | filecheck %s --check-prefix=SMS8

// One 128x128 tile with K = 131072 (2048 K-slices of 64) on 132 SMs: a wave would be
// min(132 // 1, 2048 / 8) = 132 chunks, rounded to whole slices (16 slices, k_chunk = 1024),
// which makes 128 splits; the cost model finds half as many, twice as long splits faster (half
// the partials' round trip), so 64 splits of 32 slices (k_chunk = 2048). The partials are f32; the sum over them is cast back to bf16 and
// every use of the old result (the bias + gelu epilogue) reads the sum.
// AUTO-LABEL: func.func @large_k
// AUTO:         %[[P:.*]] = fusion.matmul %a, %b k_chunk 2048 {fuser.split_k = "split 64 ways, k_chunk=2048 (1 tile of 128x128 on 132 SMs, K=131072)"} : tensor<128x131072xbf16>, tensor<131072x128xbf16> -> tensor<64x128x128xf32>
// AUTO-NEXT:    %[[S:.*]] = fusion.reduce sum %[[P]] dims [0] : tensor<64x128x128xf32> to tensor<128x128xf32>
// AUTO-NEXT:    %c = fusion.cast %[[S]] : tensor<128x128xf32> to tensor<128x128xbf16>
// AUTO-NEXT:    %cf = fusion.cast %c : tensor<128x128xbf16> to tensor<128x128xf32>
// AUTO-NEXT:    %bb = fusion.broadcast %bias
// AUTO-NEXT:    %d = fusion.add %cf, %bb
// AUTO-NEXT:    %g = fusion.gelu %d
// AUTO-NEXT:    func.return %g, %c : tensor<128x128xf32>, tensor<128x128xbf16>
// factor=4: 2048 slices / 4 = 512 slices a split.
// FOUR-LABEL: func.func @large_k
// FOUR:         fusion.matmul %a, %b k_chunk 32768 {fuser.split_k = "split 4 ways, k_chunk=32768 (factor=4, K=131072)"} : {{.*}} -> tensor<4x128x128xf32>
// 8 SMs: 8 splits of 256 slices.
// SMS8-LABEL: func.func @large_k
// SMS8:         fusion.matmul %a, %b k_chunk 16384 {fuser.split_k = "split 8 ways, k_chunk=16384 (1 tile of 128x128 on 8 SMs, K=131072)"} : {{.*}} -> tensor<8x128x128xf32>
func.func @large_k(%a: tensor<128x131072xbf16>, %b: tensor<131072x128xbf16>, %bias: tensor<128xf32>) -> (tensor<128x128xf32>, tensor<128x128xbf16>) {
  %c = fusion.matmul %a, %b : tensor<128x131072xbf16>, tensor<131072x128xbf16> -> tensor<128x128xbf16>
  %cf = fusion.cast %c : tensor<128x128xbf16> to tensor<128x128xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<128xf32> to tensor<128x128xf32>
  %d = fusion.add %cf, %bb : tensor<128x128xf32>
  %g = fusion.gelu %d : tensor<128x128xf32>
  func.return %g, %c : tensor<128x128xf32>, tensor<128x128xbf16>
}

// -----
// 8192^3: 2048 tiles of 128x256 already fill the machine; kept, with the reason. factor=4
// splits it anyway (an f32 result: no cast after the sum).
// AUTO-LABEL: func.func @large
// AUTO:         %c = fusion.matmul %a, %b {fuser.split_k = "kept (2048 tiles of 128x256 fill 132 SMs)"} : tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xf32>
// AUTO-NEXT:    func.return %c
// FOUR-LABEL: func.func @large
// FOUR:         %[[P:.*]] = fusion.matmul %a, %b k_chunk 2048 {fuser.split_k = "split 4 ways, k_chunk=2048 (factor=4, K=8192)"} : {{.*}} -> tensor<4x8192x8192xf32>
// FOUR-NEXT:    %c = fusion.reduce sum %[[P]] dims [0] : tensor<4x8192x8192xf32> to tensor<8192x8192xf32>
// FOUR-NEXT:    func.return %c : tensor<8192x8192xf32>
func.func @large(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xf32> {
  %c = fusion.matmul %a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xf32>
  func.return %c : tensor<8192x8192xf32>
}

// -----
// 1024x1024x32768: 64 tiles of 128x128 fill at most half of the SMs, so it splits; split, it
// has the work items for the wide tile: 32 tiles of 128x256 x 4 splits of 8192 = 128 work
// items, one wave. 256x4096x16384 would need 4 splits of 4096 for the wide tile, below
// SPLIT_WIDE_MIN_K: it keeps 128x128, 64 tiles x 2 splits. 80 tiles fill more than half: kept.
// AUTO-LABEL: func.func @half
// AUTO:         fusion.matmul %a, %b transpose_b k_chunk 8192 {fuser.split_k = "split 4 ways, k_chunk=8192 (32 tiles of 128x256 on 132 SMs, K=32768)"} : {{.*}} -> tensor<4x1024x1024xf32>
// AUTO:         fusion.matmul %x, %w k_chunk 8192 {fuser.split_k = "split 2 ways, k_chunk=8192 (64 tiles of 128x128 on 132 SMs, K=16384)"} : {{.*}} -> tensor<2x256x4096xf32>
// AUTO:         fusion.matmul %p, %q {fuser.split_k = "kept (80 tiles of 128x128 fill more than half of 132 SMs)"}
func.func @half(%a: tensor<1024x32768xbf16>, %b: tensor<1024x32768xbf16>, %x: tensor<256x16384xbf16>, %w: tensor<16384x4096xbf16>, %p: tensor<1280x8192xbf16>, %q: tensor<8192x1024xbf16>) -> (tensor<1024x1024xbf16>, tensor<256x4096xbf16>, tensor<1280x1024xbf16>) {
  %c = fusion.matmul %a, %b transpose_b : tensor<1024x32768xbf16>, tensor<1024x32768xbf16> -> tensor<1024x1024xbf16>
  %y = fusion.matmul %x, %w : tensor<256x16384xbf16>, tensor<16384x4096xbf16> -> tensor<256x4096xbf16>
  %r = fusion.matmul %p, %q : tensor<1280x8192xbf16>, tensor<8192x1024xbf16> -> tensor<1280x1024xbf16>
  func.return %c, %y, %r : tensor<1024x1024xbf16>, tensor<256x4096xbf16>, tensor<1280x1024xbf16>
}

// -----
// 768x3072x8192 (a GPT-2 weight gradient): 144 tiles of 128x128 on 132 SMs run as two waves,
// the second of 12 tiles. Four splits of 2048 make 576 work items, five waves nearly full.
// AUTO-LABEL: func.func @last_wave
// AUTO:         fusion.matmul %a, %b transpose_a k_chunk 2048 {fuser.split_k = "split 4 ways, k_chunk=2048 (144 tiles of 128x128 would leave 120 of 264 SM slots idle in 2 waves; 576 items of 128x128: model 80 us against 111 us, K=8192)"} : {{.*}} -> tensor<4x768x3072xf32>
func.func @last_wave(%a: tensor<8192x768xbf16>, %b: tensor<8192x3072xbf16>) -> tensor<768x3072xbf16> {
  %c = fusion.matmul %a, %b transpose_a : tensor<8192x768xbf16>, tensor<8192x3072xbf16> -> tensor<768x3072xbf16>
  func.return %c : tensor<768x3072xbf16>
}

// -----
// A short K is kept: 16 K-slices would gain less than the reduction kernel costs.
// AUTO-LABEL: func.func @short_k
// AUTO:         fusion.matmul %a, %b {fuser.split_k = "kept (K=1000 is 16 slices of 64, fewer than 64: the reduction kernel would cost about what splitting saves)"}
// A K that 4 does not divide into whole slices: 1000 is 16 slices, 4 a split (k_chunk = 256);
// the last split holds 232.
// FOUR-LABEL: func.func @short_k
// FOUR:         fusion.matmul %a, %b k_chunk 256 {fuser.split_k = "split 4 ways, k_chunk=256 (factor=4, K=1000)"} : tensor<128x1000xbf16>, tensor<1000x128xbf16> -> tensor<4x128x128xf32>
func.func @short_k(%a: tensor<128x1000xbf16>, %b: tensor<1000x128xbf16>) -> tensor<128x128xf32> {
  %c = fusion.matmul %a, %b : tensor<128x1000xbf16>, tensor<1000x128xbf16> -> tensor<128x128xf32>
  func.return %c : tensor<128x128xf32>
}

// -----
// The gated MLP: the two matmuls share x and run in one main loop; auto keeps them (a forced
// factor splits both).
// AUTO-LABEL: func.func @gated
// AUTO:         %g = fusion.matmul %x, %w1 {fuser.split_k = "kept (fused horizontally with the matmul %u that shares operand A: both accumulate in one main loop)"}
// AUTO:         %u = fusion.matmul %x, %w2 {fuser.split_k = "kept (fused horizontally with the matmul %g that shares operand A: both accumulate in one main loop)"}
// FOUR-LABEL: func.func @gated
// FOUR-COUNT-2: fusion.matmul %x, %w{{[12]}} k_chunk 16384
func.func @gated(%x: tensor<128x65536xbf16>, %w1: tensor<65536x128xbf16>, %w2: tensor<65536x128xbf16>) -> tensor<128x128xbf16> {
  %g = fusion.matmul %x, %w1 : tensor<128x65536xbf16>, tensor<65536x128xbf16> -> tensor<128x128xf32>
  %u = fusion.matmul %x, %w2 : tensor<128x65536xbf16>, tensor<65536x128xbf16> -> tensor<128x128xf32>
  %s = fusion.silu %g : tensor<128x128xf32>
  %p = fusion.mul %s, %u : tensor<128x128xf32>
  %o = fusion.cast %p : tensor<128x128xf32> to tensor<128x128xbf16>
  func.return %o : tensor<128x128xbf16>
}
