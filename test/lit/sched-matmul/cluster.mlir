// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{matmul_cluster=2 matmul_persistent=1 sms=5},sched-flush-wgmma' | filecheck %s --check-prefix=CL
// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{matmul_cluster=2 matmul_persistent=0 sms=4},sched-flush-wgmma' | filecheck %s --check-prefix=ONE
// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{matmul_cluster=1 sms=4},sched-flush-wgmma' | filecheck %s --check-prefix=OFF
// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{sms=4},sched-flush-wgmma' | filecheck %s --check-prefix=OFF

// 2-CTA clusters along M (convert-fusion-to-sched's matmul_cluster=2): the two CTAs of a
// cluster compute vertically adjacent 128x256 tiles of 696x904 (6 tile rows, 4 tile columns:
// 24 tiles), each loads its own A and half of the shared B (two of its four 64-wide chunks),
// multicast into both CTAs (mask 3). Each CTA's full barrier expects the whole stage (A 16 KB +
// B 32 KB); its empty barrier counts the 8 consumer warps of both CTAs, which arrive locally
// and on the peer. A persistent grid is even (5 SMs -> 4 CTAs). The heuristic keeps it off.

// CL:      sched.kernel @mm_k0
// CL-SAME: grid [4, 1, 1] block [384, 1, 1] smem {{[0-9]+}} cluster [2, 1, 1]
// CL-SAME: fuser.matmul = "tile=128x256 stages=4 persistent=1 grid=4 tiles=24 cluster=2 store=tma"
// CL:        sched.mbarrier.init %{{.*}}, 1
// CL-NEXT:   sched.mbarrier.init %{{.*}}, 16
// CL:        sched.fence.mbarrier_init
// CL:      sched.barrier
// CL-NEXT: sched.cluster.barrier
// CL:      sched.setmaxnreg dec 40
// CL:        sched.mbarrier.arrive_expect_tx %{{.*}}, 49152
// CL:        sched.tma.load %{{[0-9]+}}[{{.*}}] : !sched.tensor_map<memref<696x520xbf16>
// CL:        sched.tma.load {{.*}} multicast 3 : !sched.tensor_map<memref<520x904xbf16>, box [64, 64]
// CL:        sched.tma.load {{.*}} multicast 3 : !sched.tensor_map<memref<520x904xbf16>, box [64, 64]
// CL-NOT:    sched.tma.load
// CL:      sched.setmaxnreg inc 232
// CL:          sched.mbarrier.arrive %[[E:[a-z0-9_]+]][%[[I:[0-9]+]]]
// CL-NEXT:     sched.mbarrier.arrive_cluster %[[E]][%[[I]]], cta
// CL:        sched.wgmma.wait_group 0
// CL:        sched.mbarrier.arrive %[[E2:[a-z0-9_]+]][%[[I2:[0-9]+]]]
// CL-NEXT:   sched.mbarrier.arrive_cluster %[[E2]][%[[I2]]], cta
// CL:      sched.cluster.barrier
// CL-NEXT: sched.return

// ONE:      grid [24, 1, 1] block [384, 1, 1] smem {{[0-9]+}} cluster [2, 1, 1]
// ONE-SAME: fuser.matmul = "tile=128x256 stages=4 persistent=0 grid=24 tiles=24 cluster=2 store=tma"

// OFF:      fuser.matmul = "tile=128x256 stages=4 persistent=1 grid=4 tiles=24 store=tma"
// OFF-NOT:  cluster
// OFF-NOT:  multicast
// OFF:      sched.return

func.func @mm(%a: tensor<696x520xbf16>, %b: tensor<520x904xbf16>) -> tensor<696x904xbf16> {
  %c = fusion.matmul %a, %b : tensor<696x520xbf16>, tensor<520x904xbf16> -> tensor<696x904xf32>
  %o = fusion.cast %c : tensor<696x904xf32> to tensor<696x904xbf16>
  func.return %o : tensor<696x904xbf16>
}
