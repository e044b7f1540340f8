// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{matmul_persistent=1 sms=4},sched-flush-wgmma' | filecheck %s --check-prefix=PERS
// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{matmul_persistent=0 sms=4},sched-flush-wgmma' | filecheck %s --check-prefix=ONE
// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{sms=4},sched-flush-wgmma' | filecheck %s --check-prefix=PERS

// The persistent matmul grid: min(sms, tiles) CTAs, each walking tiles pid, pid + 4, ...; the
// choice is recorded on the kernel. 696x904 at 128x256 is 6 x 4 = 24 tiles (ragged on both).
// The heuristic goes persistent because 24 tiles > 4 SMs.

// PERS:      sched.kernel @mm_k0
// PERS-SAME: grid [4, 1, 1] block [384, 1, 1]
// PERS-SAME: fuser.matmul = "tile=128x256 stages=4 persistent=1 grid=4 tiles=24 store=tma"
// the producer: a tile loop around the K loop (9 K-slices of 64)
// PERS:      sched.setmaxnreg dec 40
// PERS:      scf.for
// PERS:        scf.for
// PERS:          sched.tma.load
// the consumers: per tile, the K loop, one wait_group 0 (sched-flush-wgmma's), the epilogue,
// then the last slot handed back
// PERS:      sched.setmaxnreg inc 232
// PERS:      scf.for
// PERS:        scf.for
// PERS:          sched.wgmma.mma_async m64n256k16
// PERS:          sched.wgmma.wait_group 1
// PERS:        sched.wgmma.wait_group 0
// PERS-NOT:    sched.wgmma.wait_group
// PERS:        sched.store
// PERS:        sched.mbarrier.arrive
// PERS-NOT:  sched.wgmma.wait_group

// ONE:      sched.kernel @mm_k0
// ONE-SAME: grid [24, 1, 1] block [384, 1, 1]
// ONE-SAME: fuser.matmul = "tile=128x256 stages=4 persistent=0 grid=24 tiles=24 store=tma"
// ONE:      sched.wgmma.wait_group 0
// ONE-NOT:  sched.wgmma.wait_group

func.func @mm(%a: tensor<696x520xbf16>, %b: tensor<520x904xbf16>) -> tensor<696x904xbf16> {
  %c = fusion.matmul %a, %b : tensor<696x520xbf16>, tensor<520x904xbf16> -> tensor<696x904xf32>
  %o = fusion.cast %c : tensor<696x904xf32> to tensor<696x904xbf16>
  func.return %o : tensor<696x904xbf16>
}
