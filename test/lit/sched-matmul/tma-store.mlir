// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{sms=4},sched-flush-wgmma,sched-alias-smem' | filecheck %s
// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{sms=4 matmul_store=direct},sched-flush-wgmma' | filecheck %s --check-prefix=DIRECT
// RUN: not fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{sms=4 matmul_store=tma}' 2>&1 | filecheck %s --check-prefix=FORCED
// RUN: not fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{sms=4 matmul_store=smem}' 2>&1 | filecheck %s --check-prefix=BAD

// The TMA-store epilogue: each consumer warpgroup writes a 64-row x 128-byte chunk of an output
// into one of its two swizzled staging buffers (bytes of their own, placed by sched-alias-smem
// after the B and A slots, 1024-byte aligned; seen as bf16 through a view), fences the async proxy, syncs its 128 threads on its named barrier (3 or 4), and one
// thread stores the chunk with TMA, then waits until the previous chunk's buffer has been read.

// CHECK-LABEL: sched.kernel @mm_k0
// the output's tensor map: 64 rows x 64 bf16 (128 bytes) boxes
// CHECK-SAME:  !sched.tensor_map<memref<696x904xbf16>, box [64, 64], swizzle 128>
// CHECK-SAME:  smem 229440
// CHECK-SAME:  fuser.matmul = "tile=128x256 stages=4 persistent=1 grid=4 tiles=24 store=tma"
// CHECK-SAME:  fuser.smem = "peak 229440 bytes, 229440 without reuse"
// CHECK:       %[[BYTES:.*]] = sched.alloc offset 196608 : i64 : memref<32768xi8, 3 : i64>
// CHECK:       %[[STAGE:.*]] = memref.view %[[BYTES]][%{{.*}}][] : memref<32768xi8, 3 : i64> to memref<2x2x4096xbf16, 3 : i64>
// CHECK:       sched.alloc offset 131072 : i64 : memref<4x8192xbf16, 3 : i64>
// CHECK:       sched.alloc offset 0 : i64 : memref<4x16384xbf16, 3 : i64>
// CHECK:       sched.wgmma.wait_group 0
// CHECK:       sched.store %{{.*}}, %[[STAGE]][%{{.*}}, %{{.*}}, %{{.*}}] : vector<2xbf16>
// CHECK:       sched.fence.proxy_async
// CHECK:       sched.named_barrier sync 3, 128
// CHECK:       sched.named_barrier sync 4, 128
// CHECK:       sched.tma.store %[[STAGE]]
// CHECK-NEXT:  sched.bulk.commit_group
// CHECK-NEXT:  sched.bulk.wait_group 1 read
// after the tile loop: the last stores have read the staging memory before the CTA exits
// CHECK:       sched.bulk.wait_group 0
// CHECK-NEXT:  }
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.return
// CHECK-NOT:   sched.store %{{.*}} : vector<2xbf16>, memref<696x904xbf16>

// DIRECT-LABEL: sched.kernel @mm_k0
// DIRECT-NOT:   tensor_map<memref<696x904xbf16>
// DIRECT-SAME:  fuser.matmul = "tile=128x256 stages=4 persistent=1 grid=4 tiles=24 store=direct"
// DIRECT-NOT:   sched.tma.store
// DIRECT:       sched.store %{{.*}} : vector<2xbf16>, memref<696x904xbf16>
// DIRECT-NOT:   sched.tma.store

func.func @mm(%a: tensor<696x520xbf16>, %b: tensor<520x904xbf16>) -> tensor<696x904xbf16> {
  %c = fusion.matmul %a, %b : tensor<696x520xbf16>, tensor<520x904xbf16> -> tensor<696x904xf32>
  %o = fusion.cast %c : tensor<696x904xf32> to tensor<696x904xbf16>
  func.return %o : tensor<696x904xbf16>
}

// Two outputs of different element types: one tensor map each (f32 boxes are 32 wide), and a
// view of the same staging memory per element type.
// CHECK-LABEL: sched.kernel @two_k0
// CHECK-SAME:  !sched.tensor_map<memref<256x512xf32>, box [64, 32], swizzle 128>
// CHECK-SAME:  !sched.tensor_map<memref<256x512xbf16>, box [64, 64], swizzle 128>
// CHECK-SAME:  store=tma
// CHECK:       %[[BYTES:.*]] = sched.alloc offset {{[0-9]+}} : i64 : memref<32768xi8, 3 : i64>
// CHECK:       memref.view %[[BYTES]][%{{.*}}][] : memref<32768xi8, 3 : i64> to memref<2x2x2048xf32, 3 : i64>
// CHECK:       memref.view %[[BYTES]][%{{.*}}][] : memref<32768xi8, 3 : i64> to memref<2x2x4096xbf16, 3 : i64>
// CHECK:       sched.tma.store {{.*}} : memref<2x2x2048xf32, 3 : i64>, !sched.tensor_map<memref<256x512xf32>
// CHECK:       sched.tma.store {{.*}} : memref<2x2x4096xbf16, 3 : i64>, !sched.tensor_map<memref<256x512xbf16>
func.func @two(%a: tensor<256x64xbf16>, %b: tensor<64x512xbf16>) -> (tensor<256x512xf32>, tensor<256x512xbf16>) {
  %c = fusion.matmul %a, %b : tensor<256x64xbf16>, tensor<64x512xbf16> -> tensor<256x512xf32>
  %r = fusion.relu %c : tensor<256x512xf32>
  %o = fusion.cast %r : tensor<256x512xf32> to tensor<256x512xbf16>
  func.return %c, %o : tensor<256x512xf32>, tensor<256x512xbf16>
}

// Rows of 100 bf16 (200 bytes) cannot be TMA-stored: auto stages them as for TMA stores, and
// then each warp of the warpgroup stores 16 rows of the 64-row chunk, a row's 32 consecutive
// columns per store (one element per lane, read back through the 128-byte swizzle), guarded
// against the tensor's edge; no tensor map for the output, no bulk copies, no proxy fence.
// A forced matmul_store=tma is an error that says why.
// CHECK-LABEL: sched.kernel @narrow_k0
// CHECK-NOT:   tensor_map<memref<300x100xbf16>
// CHECK-SAME:  store=rows
// CHECK-SAME:  fuser.matmul_epilogue = "direct 2 stages, staged 2, staged+reuse 2: staged"
// CHECK:       %[[BYTES:.*]] = sched.alloc offset {{[0-9]+}} : i64 : memref<32768xi8, 3 : i64>
// CHECK:       %[[STAGE:.*]] = memref.view %[[BYTES]][%{{.*}}][] : memref<32768xi8, 3 : i64> to memref<2x2x4096xbf16, 3 : i64>
// CHECK:       sched.wgmma.wait_group 0
// CHECK:       sched.store %{{.*}}, %[[STAGE]][%{{.*}}, %{{.*}}, %{{.*}}] : vector<2xbf16>
// CHECK-NOT:   sched.fence.proxy_async
// CHECK:       sched.named_barrier sync 3, 128
// CHECK:       %[[X:.*]] = sched.load %[[STAGE]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x2x4096xbf16, 3 : i64> -> bf16
// CHECK:       scf.if
// CHECK-NEXT:    sched.store %[[X]], %{{.*}}[%{{.*}}, %{{.*}}] : bf16, memref<300x100xbf16>
// CHECK-NOT:   sched.tma.store
// CHECK-NOT:   sched.bulk
// DIRECT-LABEL: sched.kernel @narrow_k0
// DIRECT-SAME:  store=direct
// FORCED: tma-store.mlir:[[# @LINE + 2]]:3: error: pass 'convert-fusion-to-sched' failed: 'fusion.matmul' 300x100x64: matmul_store=tma: output tensor<300x100xbf16> has rows of 200 bytes; TMA stores need a multiple of 16
func.func @narrow(%a: tensor<300x64xbf16>, %b: tensor<100x64xbf16>) -> tensor<300x100xbf16> {
  %c = fusion.matmul %a, %b transpose_b : tensor<300x64xbf16>, tensor<100x64xbf16> -> tensor<300x100xf32>
  %o = fusion.cast %c : tensor<300x100xf32> to tensor<300x100xbf16>
  func.return %o : tensor<300x100xbf16>
}

// BAD: error: bad options for pass 'convert-fusion-to-sched': matmul_store must be one of auto, tma, rows, direct, got 'smem'
