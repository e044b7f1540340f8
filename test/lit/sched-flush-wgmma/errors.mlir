// RUN: fuser-opt %s --verify-diagnostics -p sched-flush-wgmma | filecheck %s

// An mma read before any commit_group: wait_group waits for committed groups only, so no wait
// the pass could insert would make %d ready. Refused, naming the reader.

// CHECK: errors.mlir:14:3: error: pass 'sched-flush-wgmma' failed: 'vector.extract' reads the result of a 'sched.wgmma.mma_async' that no 'sched.wgmma.commit_group' has committed; wait_group cannot wait for it
sched.kernel @uncommitted(%out : memref<4xf32>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %da = arith.constant 0 : i64
  %z0 = arith.constant dense<0.0> : vector<64xf32>
  sched.wgmma.fence
  %d = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %z0 : vector<64xf32>
  // a commit_group belongs here
  %x = vector.extract %d[0] : f32 from vector<64xf32>
  sched.store %x, %out[%c0] : f32, memref<4xf32>
  sched.return
}
