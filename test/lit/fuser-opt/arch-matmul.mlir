// RUN: not fuser-opt %s -p default -t ptx --arch sm_80 2>&1 | filecheck %s

// The Hopper matmul kernel (TMA, mbarriers, wgmma, setmaxnreg) for a target without wgmma: an
// MLIR-style error naming the kernel and the instruction, exit status 1, before LLVM (which
// would abort the process). (sm_90 lacks wgmma too: test/python/test_arch_targets.py.)

// CHECK: arch-matmul.mlir: error: -t ptx: kernel @mm_k0 needs sm_90a: it uses wgmma.mma_async (warpgroup MMA), which sm_80 lacks; compile with --arch sm_90a
// CHECK-NOT: LLVM ERROR
func.func @mm(%a: tensor<256x128xbf16>, %b: tensor<128x256xbf16>) -> tensor<256x256xbf16> {
  %c = fusion.matmul %a, %b : tensor<256x128xbf16>, tensor<128x256xbf16> -> tensor<256x256xbf16>
  func.return %c : tensor<256x256xbf16>
}
