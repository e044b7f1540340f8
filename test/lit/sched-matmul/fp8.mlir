// RUN: fuser-opt %s --split-input-file -p 'fusion-segment,convert-fusion-to-sched{sms=4},sched-flush-wgmma,sched-alias-smem' | filecheck %s
// RUN: fuser-opt %s --split-input-file -p 'fusion-segment,convert-fusion-to-sched{sms=4},sched-flush-wgmma,sched-alias-smem,convert-sched-to-nvvm' -t ptx | filecheck %s --check-prefix=PTX
// RUN: not fuser-opt %s --split-input-file -p 'fusion-split-k{factor=2}' 2>&1 | filecheck %s --check-prefix=SPLIT

// An FP8 matmul (e4m3, A [M, K] and B stored [N, K], both K-major as FP8 wgmmas read them) keeps
// the bf16 kernel's byte geometry: a slot holds a 128-byte row of K per operand row, which is 128
// FP8 elements (bf16: 64), so the TMA boxes are 128 bytes wide, a slot of A (128 rows) is 16 KB
// and one of B (256 rows) 32 KB, as for bf16, and a K-slice is four m64nNk32 wgmmas (bf16: four
// k16). The epilogue is the bf16 kernel's (f32 accumulators, a bf16 output through TMA stores).
// CHECK-LABEL: sched.kernel @mm8_k0
// CHECK-SAME:  !sched.tensor_map<memref<512x1024xf8E4M3FN>, box [128, 128], swizzle 128>
// CHECK-SAME:  !sched.tensor_map<memref<768x1024xf8E4M3FN>, box [256, 128], swizzle 128>
// CHECK-SAME:  !sched.tensor_map<memref<512x768xbf16>, box [64, 64], swizzle 128>
// CHECK-SAME:  fuser.matmul = "tile=128x256 stages=4 persistent=1 grid=4 tiles=12 store=tma"
// CHECK:       sched.alloc offset 131072 : i64 : memref<4x16384xf8E4M3FN, 3 : i64>
// CHECK:       sched.alloc offset 0 : i64 : memref<4x32768xf8E4M3FN, 3 : i64>
// CHECK:       sched.mbarrier.arrive_expect_tx %{{.*}}, 49152
// CHECK-COUNT-4: sched.wgmma.mma_async m64n256k32 e4m3 %{{[^,]*}}, %{{[^,]*}}, %{{[^ ]*}} : vector<128xf32>
// CHECK-NOT:   sched.wgmma.mma_async
// CHECK:       sched.tma.store
// PTX-LABEL:   .entry mm8_k0
// PTX-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {{.*}}, p, 1, 1;
// SPLIT:       fp8.mlir:[[# @LINE + 2]]:3: error: pass 'fusion-split-k' failed: fusion-split-k: factor=2: FP8 matmuls are not split yet
func.func @mm8(%a: tensor<512x1024xf8E4M3FN>, %b: tensor<768x1024xf8E4M3FN>) -> tensor<512x768xbf16> {
  %c = fusion.matmul %a, %b transpose_b : tensor<512x1024xf8E4M3FN>, tensor<768x1024xf8E4M3FN> -> tensor<512x768xf32>
  %o = fusion.cast %c : tensor<512x768xf32> to tensor<512x768xbf16>
  func.return %o : tensor<512x768xbf16>
}

// -----

// e5m2, a ragged shape, and a bias + GELU epilogue
// CHECK-LABEL: sched.kernel @mm5_k0
// CHECK-SAME:  !sched.tensor_map<memref<300x640xf8E5M2>, box [256, 128], swizzle 128>
// CHECK-SAME:  !sched.tensor_map<memref<200x640xf8E5M2>, box [128, 128], swizzle 128>
// CHECK-SAME:  fuser.matmul = "tile=256x128 stages=4 persistent=0 grid=4 tiles=4 store=tma"
// CHECK:       sched.wgmma.mma_async m64n{{[0-9]+}}k32 e5m2
// CHECK:       math.exp
// PTX-LABEL:   .entry mm5_k0
// PTX:         wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k32.f32.e5m2.e5m2
func.func @mm5(%a: tensor<300x640xf8E5M2>, %b: tensor<200x640xf8E5M2>, %bias: tensor<200xf32>) -> tensor<300x200xbf16> {
  %c = fusion.matmul %a, %b transpose_b : tensor<300x640xf8E5M2>, tensor<200x640xf8E5M2> -> tensor<300x200xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<200xf32> to tensor<300x200xf32>
  %s = fusion.add %c, %bb : tensor<300x200xf32>
  %g = fusion.gelu %s {approximate = "tanh"} : tensor<300x200xf32>
  %o = fusion.cast %g : tensor<300x200xf32> to tensor<300x200xbf16>
  func.return %o : tensor<300x200xbf16>
}
