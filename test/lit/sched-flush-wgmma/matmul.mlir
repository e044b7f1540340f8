// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s --check-prefix=SCHED
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched,sched-flush-wgmma | filecheck %s --check-prefix=FLUSH

// The matmul scheduler leaves the accumulators' read-after-write sync to sched-flush-wgmma:
// its kernel has no wait_group 0 (the main loop's wait_group 1 only recycles slots), and the
// pass adds exactly one, after the main loop, before the epilogue's first read.

// SCHED-LABEL: sched.kernel @mm_k0
// SCHED:         sched.wgmma.commit_group
// SCHED-NEXT:    sched.wgmma.wait_group 1
// SCHED-NOT:     sched.wgmma.wait_group 0

// FLUSH-LABEL: sched.kernel @mm_k0
// FLUSH:         %[[ACC:.*]] = scf.for
// FLUSH:           sched.wgmma.commit_group
// FLUSH-NEXT:      sched.wgmma.wait_group 1
// FLUSH:         %[[READY:.*]] = sched.wgmma.wait_group 0, %[[ACC]] : vector<64xf32>
// FLUSH-NEXT:    vector.extract %[[READY]][0]
// FLUSH-NOT:     sched.wgmma.wait_group 0
func.func @mm(%a: tensor<256x512xbf16>, %b: tensor<512x128xbf16>, %bias: tensor<128xf32>) -> tensor<256x128xbf16> {
  %c = fusion.matmul %a, %b : tensor<256x512xbf16>, tensor<512x128xbf16> -> tensor<256x128xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<128xf32> to tensor<256x128xf32>
  %d = fusion.add %c, %bb : tensor<256x128xf32>
  %o = fusion.cast %d : tensor<256x128xf32> to tensor<256x128xbf16>
  func.return %o : tensor<256x128xbf16>
}
