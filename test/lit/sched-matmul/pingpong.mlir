// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{matmul_pingpong=1 sms=4},sched-flush-wgmma' | filecheck %s
// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{matmul_pingpong=1 sms=4 tile="64x256"},sched-flush-wgmma' | filecheck %s --check-prefix=WIDE
// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{sms=4},sched-flush-wgmma' | filecheck %s --check-prefix=AUTO

// Ping-pong consumers (forced): a persistent grid whose two consumer warpgroups take alternate
// tiles (128x128 by default: 6 x 8 = 48 ragged tiles), each slot read by one warpgroup (4 warps
// release it); named barriers 1 and 2 pass the main-loop turn; one wait_group 0 per tile.

// CHECK:      sched.kernel @mm_k0
// CHECK-SAME: grid [4, 1, 1] block [384, 1, 1]
// CHECK-SAME: fuser.matmul = "tile=128x128 stages=6 persistent=1 grid=4 tiles=48 pingpong=1 store=tma"
// CHECK:      sched.mbarrier.init %{{.*}}, 1
// CHECK-NEXT: sched.mbarrier.init %{{.*}}, 4
// CHECK:      sched.setmaxnreg dec 40
// CHECK:      sched.tma.load
// CHECK:      sched.setmaxnreg inc 232
// warpgroup 1 opens warpgroup 0's first turn
// CHECK:      sched.named_barrier arrive 1, 256
// CHECK:      scf.for
// CHECK:        sched.named_barrier sync 1, 256
// CHECK:        sched.named_barrier sync 2, 256
// CHECK:        scf.for
// CHECK:          sched.wgmma.mma_async m64n128k16
// CHECK:          sched.wgmma.mma_async m64n128k16
// CHECK:          sched.wgmma.wait_group 1
// the other warpgroup's turn, if it has a next tile; then the one flush and the epilogue
// CHECK:        sched.named_barrier arrive 2, 256
// CHECK:        sched.named_barrier arrive 1, 256
// CHECK:        sched.wgmma.wait_group 0
// CHECK-NOT:    sched.wgmma.wait_group
// CHECK:        sched.store
// CHECK-NOT:  sched.wgmma.wait_group

// WIDE:      fuser.matmul = "tile=64x256 stages=4 persistent=1 grid=4 tiles=44 pingpong=1 store=tma"
// WIDE:      sched.wgmma.mma_async m64n256k16
// WIDE-NOT:  m64n128k16

// the heuristic keeps the cooperative kernel (ping-pong measured slower, docs/matmul-notes.md)
// AUTO:      fuser.matmul = "tile=128x256 stages=4 persistent=1 grid=4 tiles=24 store=tma"
// AUTO-NOT:  named_barrier {{sync|arrive}} {{1|2}}, 256

func.func @mm(%a: tensor<696x520xbf16>, %b: tensor<520x904xbf16>) -> tensor<696x904xbf16> {
  %c = fusion.matmul %a, %b : tensor<696x520xbf16>, tensor<520x904xbf16> -> tensor<696x904xf32>
  %o = fusion.cast %c : tensor<696x904xf32> to tensor<696x904xbf16>
  func.return %o : tensor<696x904xbf16>
}
