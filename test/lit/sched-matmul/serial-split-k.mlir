// RUN: fuser-opt %s -p to-sched | filecheck %s
// RUN: fuser-opt %s -p to-sched | filecheck %s --check-prefix=SYNCS
// RUN: fuser-opt %s -p 'to-sched{matmul_persistent=1 sms=3}' | filecheck %s --check-prefix=PERS
// RUN: fuser-opt %s -p 'default{matmul_persistent=1 sms=3}' | filecheck %s --check-prefix=LAUNCH
// RUN: not fuser-opt %s -p 'to-sched{matmul_pingpong=1}' 2>&1 | filecheck %s --check-prefix=PINGPONG

// Serial split-K (`k_chunk 1024 serial`: 4 splits of one 128x128 tile, one kernel). Each
// consumer warpgroup's rows take turns by split through their own counter (2 per tile):
// split z waits for turn z (an acquire spin, then the async-proxy fence that orders the bulk
// copies after it); split 0 TMA-stores its f32 rows into the workspace and later splits
// TMA-reduce-add them; then sched-insert-bulk-syncs completes and fences the bulk copies before
// the release of turn z + 1. The last split takes its turn, resets the counter for the next
// launch (the workspace is kept_zero: zeroed once by the executor), and runs the epilogue on
// its accumulators plus the workspace. The host allocates the f32 workspace and the counters.

// CHECK-LABEL: sched.kernel @mm_k0
// CHECK-SAME:    %[[WS:[0-9]+]] : memref<128x128xf32>, %[[SEM:[0-9]+]] : memref<2xi32>) grid [4, 1, 1]
// CHECK-SAME:    fuser.matmul = "tile=128x128 stages=6 persistent=0 grid=4 tiles=1 split=4 k_chunk=1024 serial=1 store=tma"
// CHECK-NOT:     fuser.coresident
// The last split: wait, reset, the warpgroup's barrier, then the sum of the workspace and the accumulators.
// CHECK:         sched.semaphore.wait %[[SEM]][%[[I:[0-9]+]]] until %[[Z:[0-9]+]] : memref<2xi32>
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.semaphore.signal %[[SEM]][%[[I]]], %{{[0-9]+}} : memref<2xi32>
// CHECK:         sched.named_barrier sync 3, 128
// CHECK:         sched.wgmma.wait_group 0
// CHECK:         sched.load %[[WS]][{{.*}}] : memref<128x128xf32> -> vector<2xf32>
// CHECK:         sched.tma.store {{.*}} : memref<2x2x4096xbf16, 3 : i64>, !sched.tensor_map<memref<128x128xbf16>, box [64, 64], swizzle 128>
// The earlier splits: the first chunk waits for the turn, split 0 stores, the others reduce.
// CHECK:       } else {
// CHECK:         sched.wgmma.wait_group 0
// CHECK:         sched.semaphore.wait %[[SEM]][%[[I]]] until %[[Z]] : memref<2xi32>
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK:         scf.if
// CHECK-NEXT:      sched.tma.store %{{[0-9]+}}[{{.*}}], %[[WSMAP:[0-9]+]][{{.*}}] : memref<2x2x2048xf32, 3 : i64>, !sched.tensor_map<memref<128x128xf32>, box [64, 32], swizzle 128>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      sched.tma.reduce add %{{[0-9]+}}[{{.*}}], %[[WSMAP]][{{.*}}] : memref<2x2x2048xf32, 3 : i64>, !sched.tensor_map<memref<128x128xf32>, box [64, 32], swizzle 128>
// CHECK-COUNT-3: sched.tma.reduce add
// Turn z + 1, once the bulk copies are complete and visible.
// CHECK:         %[[NEXT:[0-9]+]] = arith.addi %[[Z]], %{{[0-9]+}} : index
// CHECK-NEXT:    sched.bulk.commit_group
// CHECK-NEXT:    sched.bulk.wait_group 0
// CHECK-NEXT:    sched.fence.proxy_async global
// CHECK-NEXT:    sched.semaphore.signal %[[SEM]][%[[I]]], %[[NEXT]] : memref<2xi32>
// CHECK-LABEL: func.func @mm
// CHECK:         %[[HWS:[0-9]+]] = sched.workspace : memref<128x128xf32>
// CHECK-NEXT:    %[[HSEM:[0-9]+]] = sched.workspace kept_zero : memref<2xi32>
// CHECK-NEXT:    %[[HMAP:[0-9]+]] = sched.tensor_map %[[HWS]] : !sched.tensor_map<memref<128x128xf32>, box [64, 32], swizzle 128>
// CHECK-NEXT:    sched.launch @mm_k0({{.*}}, %[[HMAP]], %[[HWS]], %[[HSEM]])

// The complete wait (wait_group 0) appears twice: before the release, and where the
// warpgroup drains its last stores before exiting; nowhere else.
// SYNCS-COUNT-2: sched.bulk.wait_group 0{{$}}
// SYNCS-NOT:     sched.bulk.wait_group 0{{$}}

// A persistent grid of 3 CTAs for the 4 work items: a CTA's second item waits on other CTAs'
// first ones, so the grid must be resident at once; the launch carries fuser.coresident and the
// executor checks the GPU holds the grid (one CTA per item needs no such check: a split waits
// only for splits of lower block index, dispatched first).
// PERS: fuser.matmul = "tile=128x128 stages=6 persistent=1 grid=3 tiles=1 split=4 k_chunk=1024 serial=1 store=tma"
// PERS-SAME: fuser.coresident
// LAUNCH: "gpu.launch_func"({{.*}}) <{kernel = @mm_kernels::@mm_k0, {{.*}}}> {fuser.coresident}

// PINGPONG: error: pass 'convert-fusion-to-sched' failed: 'fusion.matmul' 128x128x4096: matmul_pingpong=1: not built for serial split-K
func.func @mm(%a: tensor<128x4096xbf16>, %b: tensor<4096x128xbf16>) -> tensor<128x128xbf16> {
  %c = fusion.matmul %a, %b k_chunk 1024 serial : tensor<128x4096xbf16>, tensor<4096x128xbf16> -> tensor<128x128xbf16>
  func.return %c : tensor<128x128xbf16>
}
