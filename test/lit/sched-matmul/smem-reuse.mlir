// RUN: fuser-opt %s --split-input-file -p to-sched | filecheck %s
// RUN: not fuser-opt %s --split-input-file -p 'to-sched{matmul_smem_reuse=1}' 2>/dev/null | filecheck %s --check-prefix=REUSE
// RUN: not fuser-opt %s --split-input-file -p 'to-sched{stages=7}' 2>/dev/null | filecheck %s --check-prefix=SEVEN
// RUN: not fuser-opt %s --split-input-file -p 'to-sched{matmul_smem_reuse=1}' 2>&1 >/dev/null | filecheck %s --check-prefix=FORCED

// The epilogue's TMA-store staging in the operand slots' bytes (sched-alias-smem). One CTA per
// tile, so after the main loop nothing reads the slots again: the consumers release them, and
// once their last wgmmas are done (the wait_group 0), a barrier of the 256 consumer threads
// lets the staging take slot 0's bytes.
//
// The heuristic compares the three plans by stages (every plan runs one CTA per SM). A 128x128
// tile takes at most 6 slots (7 measured slower), which fit beside staging of its own, so it
// keeps that and spends no barrier:
// CHECK-LABEL: sched.kernel @bias_k0
// CHECK-SAME:    fuser.matmul = "tile=128x128 stages=6 persistent=0 grid=120 tiles=120 store=tma"
// CHECK-SAME:    fuser.matmul_epilogue = "direct 6 stages, staged 6, staged+reuse 6: staged"
// CHECK-SAME:    fuser.smem = "peak 229472 bytes, 229472 without reuse"
// CHECK-NOT:     sched.named_barrier sync 1, 256
// CHECK-NOT:     sched.release
// Forced (matmul_smem_reuse=1): the same 6 slots in 32 KB less.
// REUSE-LABEL: sched.kernel @bias_k0
// REUSE-SAME:    fuser.matmul = "tile=128x128 stages=6 persistent=0 grid=120 tiles=120 store=tma smem_reuse=1"
// REUSE-SAME:    fuser.matmul_epilogue = "direct 6 stages, staged 6, staged+reuse 6: staged+reuse (forced)"
// REUSE-SAME:    fuser.smem = "peak 196704 bytes, 229472 without reuse; %staging reuses %a_slots"
// REUSE:         %staging = sched.alloc offset 0 : i64 : memref<32768xi8, 3 : i64>
// REUSE:         %a_slots = sched.alloc offset 0 : i64 : memref<6x8192xbf16, 3 : i64>
// REUSE:         %b_slots = sched.alloc offset 98304 : i64 : memref<6x8192xbf16, 3 : i64>
// REUSE:       } else {
// REUSE:         sched.wgmma.mma_async
// REUSE:         sched.wgmma.wait_group 0
// REUSE-NEXT:    sched.named_barrier sync 1, 256
// REUSE-NOT:     sched.release
// REUSE:         sched.tma.store
// Seven slots asked for fit only in the slots' bytes: the heuristic reuses on its own.
// SEVEN-LABEL: sched.kernel @bias_k0
// SEVEN-SAME:    fuser.matmul = "tile=128x128 stages=7 persistent=0 grid=120 tiles=120 store=tma smem_reuse=1"
// SEVEN-SAME:    fuser.matmul_epilogue = "direct 6 stages, staged 6, staged+reuse 6: staged+reuse (7 stages forced)"
// SEVEN-SAME:    fuser.smem = "peak 229488 bytes, 262256 without reuse; %staging reuses %a_slots"
// SEVEN:         %staging = sched.alloc offset 0 : i64
// SEVEN:         %a_slots = sched.alloc offset 0 : i64 : memref<7x8192xbf16, 3 : i64>
func.func @bias(%a: tensor<1536x4096xbf16>, %b: tensor<4096x1280xbf16>, %bias: tensor<1280xf32>) -> tensor<1536x1280xbf16> {
  %c = fusion.matmul %a, %b : tensor<1536x4096xbf16>, tensor<4096x1280xbf16> -> tensor<1536x1280xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<1280xf32> to tensor<1536x1280xf32>
  %s = fusion.add %c, %bb : tensor<1536x1280xf32>
  %o = fusion.cast %s : tensor<1536x1280xf32> to tensor<1536x1280xbf16>
  func.return %o : tensor<1536x1280xbf16>
}

// -----
// `a @ b + a`: the epilogue reads A again, but from global memory (clamped loads of %a, never
// the swizzled slot), so A's tile is dead after the main loop like any other and the staging
// may still take the slots' bytes. (A tile read after its release is refused by
// sched-alias-smem: test/lit/sched-alias-smem/errors.mlir.)
// REUSE-LABEL: sched.kernel @residual_k0
// REUSE-SAME:    smem_reuse=1
// REUSE-SAME:    fuser.smem = "peak 196704 bytes, 229472 without reuse; %staging reuses %a_slots"
// REUSE:         sched.wgmma.wait_group 0
// REUSE-NEXT:    sched.named_barrier sync 1, 256
// REUSE:         sched.load %{{.*}} : memref<1024x1024xbf16> -> bf16
func.func @residual(%a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>) -> tensor<1024x1024xf32> {
  %c = fusion.matmul %a, %b : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xf32>
  %af = fusion.cast %a : tensor<1024x1024xbf16> to tensor<1024x1024xf32>
  %s = fusion.add %c, %af : tensor<1024x1024xf32>
  func.return %s : tensor<1024x1024xf32>
}

// -----
// A persistent kernel keeps its own staging: its producer loads the next tile's first slices
// into the slots while the consumers run the epilogue. Forcing the reuse there is an error.
// CHECK-LABEL: sched.kernel @persistent_k0
// CHECK-SAME:    fuser.matmul = "tile=128x256 stages=4 persistent=1 grid=132 tiles=1024 store=tma"
// CHECK-SAME:    fuser.matmul_epilogue = "direct 4 stages, staged 4, staged+reuse -: staged (persistent: the producer loads the next tile into the slots during the epilogue)"
// CHECK-SAME:    fuser.smem = "peak 229440 bytes, 229440 without reuse"
// FORCED: error: pass 'convert-fusion-to-sched' failed: 'fusion.matmul' 8192x4096x1024: matmul_smem_reuse=1: persistent: the producer loads the next tile into the slots during the epilogue
func.func @persistent(%a: tensor<8192x1024xbf16>, %b: tensor<1024x4096xbf16>) -> tensor<8192x4096xbf16> {
  %c = fusion.matmul %a, %b : tensor<8192x1024xbf16>, tensor<1024x4096xbf16> -> tensor<8192x4096xf32>
  %o = fusion.cast %c : tensor<8192x4096xf32> to tensor<8192x4096xbf16>
  func.return %o : tensor<8192x4096xbf16>
}
