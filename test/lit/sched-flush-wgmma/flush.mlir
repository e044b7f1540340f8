// RUN: fuser-opt %s -p sched-flush-wgmma --split-input-file | filecheck %s

// (1) Two independent mmas, each followed by its own consumer: two waits, one before each
// consumer; each wait flushes what is in flight at that point (no commit_group is added).

// CHECK-LABEL: sched.kernel @two_consumers
// CHECK:       %d = sched.wgmma.mma_async
// CHECK-NEXT:  sched.wgmma.commit_group
// CHECK-NEXT:  %d_ready = sched.wgmma.wait_group 0, %d : vector<64xf32>
// CHECK-NEXT:  %x = vector.extract %d_ready[0] : f32 from vector<64xf32>
// CHECK-NEXT:  %e = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %d_ready
// CHECK-NEXT:  sched.wgmma.commit_group
// CHECK-NEXT:  %e_ready = sched.wgmma.wait_group 0, %e : vector<64xf32>
// CHECK-NEXT:  %y = vector.extract %e_ready[1] : f32 from vector<64xf32>
// CHECK-NEXT:  %z = vector.extract %e_ready[2]
// CHECK-NOT:   sched.wgmma.wait_group
sched.kernel @two_consumers(%out : memref<4xf32>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %da = arith.constant 0 : i64
  %z0 = arith.constant dense<0.0> : vector<64xf32>
  sched.wgmma.fence
  %d = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %z0 : vector<64xf32>
  sched.wgmma.commit_group
  %x = vector.extract %d[0] : f32 from vector<64xf32>
  %e = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %d : vector<64xf32>
  sched.wgmma.commit_group
  %y = vector.extract %e[1] : f32 from vector<64xf32>
  %z = vector.extract %e[2] : f32 from vector<64xf32>
  sched.return
}

// -----

// (2) Two mmas horizontally fused in one main loop (wait_group 1 inside releases smem slots and
// is not a flush); consumers after the loop: one wait, after the loop, threading both.

// CHECK-LABEL: sched.kernel @fused_loop
// CHECK:       scf.for
// CHECK:         sched.wgmma.wait_group 1{{$}}
// CHECK:       }
// CHECK-NEXT:  %[[R0:.*]], %[[R1:.*]] = sched.wgmma.wait_group 0, %[[L0:.*]], %[[L1:.*]] : vector<64xf32>, vector<64xf32>
// CHECK-NEXT:  %g = vector.extract %[[R0]][0]
// CHECK-NEXT:  %u = vector.extract %[[R1]][0]
// CHECK-NOT:   sched.wgmma.wait_group
sched.kernel @fused_loop(%out : memref<4xf32>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %da = arith.constant 0 : i64
  %z0 = arith.constant dense<0.0> : vector<64xf32>
  %loop:2 = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc1 = %z0, %acc2 = %z0) -> (vector<64xf32>, vector<64xf32>) {
    sched.wgmma.fence
    %n1 = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %acc1 : vector<64xf32>
    %n2 = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %acc2 : vector<64xf32>
    sched.wgmma.commit_group
    sched.wgmma.wait_group 1
    scf.yield %n1, %n2 : vector<64xf32>, vector<64xf32>
  }
  %g = vector.extract %loop#0[0] : f32 from vector<64xf32>
  %u = vector.extract %loop#1[0] : f32 from vector<64xf32>
  %p = arith.mulf %g, %u : f32
  sched.store %p, %out[%c0] : f32, memref<4xf32>
  sched.return
}

// -----

// (3) One mma with an epilogue chain b = D + bias; a = relu(b): one wait, before the add.

// CHECK-LABEL: sched.kernel @epilogue
// CHECK:       %d = sched.wgmma.mma_async
// CHECK-NEXT:  sched.wgmma.commit_group
// CHECK-NEXT:  %d_ready = sched.wgmma.wait_group 0, %d : vector<64xf32>
// CHECK-NEXT:  %b = arith.addf %d_ready, %bias : vector<64xf32>
// CHECK-NEXT:  %a = arith.maximumf %b, %z0 : vector<64xf32>
// CHECK-NOT:   sched.wgmma.wait_group
sched.kernel @epilogue(%out : memref<4xf32>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %da = arith.constant 0 : i64
  %z0 = arith.constant dense<0.0> : vector<64xf32>
  %bias = arith.constant dense<1.0> : vector<64xf32>
  sched.wgmma.fence
  %d = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %z0 : vector<64xf32>
  sched.wgmma.commit_group
  %b = arith.addf %d, %bias : vector<64xf32>
  %a = arith.maximumf %b, %z0 : vector<64xf32>
  sched.return
}

// -----

// (4) A wait already present: no duplicate.

// CHECK-LABEL: sched.kernel @already
// CHECK:       sched.wgmma.commit_group
// CHECK-NEXT:  %r = sched.wgmma.wait_group 0, %d : vector<64xf32>
// CHECK-NEXT:  %x = vector.extract %r[0]
// CHECK-NOT:   sched.wgmma.wait_group
sched.kernel @already(%out : memref<4xf32>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %da = arith.constant 0 : i64
  %z0 = arith.constant dense<0.0> : vector<64xf32>
  sched.wgmma.fence
  %d = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %z0 : vector<64xf32>
  sched.wgmma.commit_group
  %r = sched.wgmma.wait_group 0, %d : vector<64xf32>
  %x = vector.extract %r[0] : f32 from vector<64xf32>
  sched.return
}

// -----

// (5) A persistent matmul: a tile loop around the K loop, accumulators reset per tile. Without
// a wait the pass flushes once per tile, inside the tile loop, right before the epilogue read
// (not before the next tile's K loop, whose mmas start from fresh zeros).

// CHECK-LABEL: sched.kernel @tiles
// CHECK:       scf.for %t
// CHECK:         %k, %k_1 = scf.for %kt
// CHECK:           sched.wgmma.wait_group 1
// CHECK-NEXT:      scf.yield %d1, %d2
// CHECK-NEXT:    }
// CHECK-NEXT:    %k_ready, %k_ready_1 = sched.wgmma.wait_group 0, %k, %k_1 : vector<64xf32>, vector<64xf32>
// CHECK-NEXT:    %x = vector.extract %k_ready[0]
// CHECK-NEXT:    %y = vector.extract %k_ready_1[0]
// CHECK-NEXT:  }
// CHECK-NOT:   sched.wgmma.wait_group 0
sched.kernel @tiles(%out : memref<4xf32>) grid [132, 1, 1] block [128, 1, 1] smem 0 {
  %da = arith.constant 0 : i64
  %z0 = arith.constant dense<0.0> : vector<64xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %t = %c0 to %c8 step %c1 {
    %k:2 = scf.for %kt = %c0 to %c8 step %c1 iter_args(%a1 = %z0, %a2 = %z0) -> (vector<64xf32>, vector<64xf32>) {
      sched.wgmma.fence
      %d1 = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %a1 : vector<64xf32>
      %d2 = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %a2 : vector<64xf32>
      sched.wgmma.commit_group
      sched.wgmma.wait_group 1
      scf.yield %d1, %d2 : vector<64xf32>, vector<64xf32>
    }
    %x = vector.extract %k#0[0] : f32 from vector<64xf32>
    %y = vector.extract %k#1[0] : f32 from vector<64xf32>
    scf.yield
  }
  sched.return
}

// -----

// (6) A loop that may run zero times (its bound is not a constant): its body flushes before
// its own read, but the read after the loop still needs a wait, since the body may not run.

// CHECK-LABEL: sched.kernel @maybe_empty
// CHECK:       scf.for
// CHECK-NEXT:    %d_ready = sched.wgmma.wait_group 0, %d : vector<64xf32>
// CHECK-NEXT:    vector.extract %d_ready[0]
// CHECK:       }
// CHECK-NEXT:  %d_ready_1 = sched.wgmma.wait_group 0, %d : vector<64xf32>
// CHECK-NEXT:  %y = vector.extract %d_ready_1[1]
sched.kernel @maybe_empty(%out : memref<4xf32>, %n : memref<1xi64>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %da = arith.constant 0 : i64
  %z0 = arith.constant dense<0.0> : vector<64xf32>
  %ni = sched.load %n[%c0] : memref<1xi64> -> i64
  %count = arith.index_cast %ni : i64 to index
  sched.wgmma.fence
  %d = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %z0 : vector<64xf32>
  sched.wgmma.commit_group
  scf.for %i = %c0 to %count step %c1 {
    %x = vector.extract %d[0] : f32 from vector<64xf32>
    sched.store %x, %out[%c0] : f32, memref<4xf32>
    scf.yield
  }
  %y = vector.extract %d[1] : f32 from vector<64xf32>
  sched.store %y, %out[%c1] : f32, memref<4xf32>
  sched.return
}
