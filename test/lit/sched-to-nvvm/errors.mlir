// RUN: fuser-opt %s -p convert-sched-to-nvvm --split-input-file --verify-diagnostics | filecheck %s

// What the lowering cannot handle is reported with the op, its location and the kernel.

sched.kernel @k(%x : memref<8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<8xf32>
  sched.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: cannot lower 'memref.load' at {{.*}}errors.mlir:7:3 in kernel @k

// -----

sched.kernel @k(%x : memref<8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  sched.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: cannot lower 'gpu.thread_id' at {{.*}}errors.mlir:16:3 in kernel @k

// -----

func.func @f(%x : memref<8xf32>) {
  sched.launch @missing(%x) : memref<8xf32>
  func.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: 'sched.launch' at {{.*}}errors.mlir:24:3 in @f: no sched.kernel @missing in this module

// -----

sched.kernel @k(%x : memref<8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  sched.return
}
func.func @f(%x : memref<4xf32>) {
  sched.launch @k(%x) : memref<4xf32>
  func.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: 'sched.launch' at {{.*}}errors.mlir:35:3 in @f: arguments (memref<4xf32>) do not match @k's (memref<8xf32>)

// -----

// A wgmma result read before any wait_group 0: the sync is sched-flush-wgmma's to place, and
// lowering without it would read the accumulators before the tensor cores wrote them.
sched.kernel @unflushed(%out : memref<4xf32>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %da = arith.constant 0 : i64
  %z0 = arith.constant dense<0.0> : vector<64xf32>
  sched.wgmma.fence
  %d = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %z0 : vector<64xf32>
  sched.wgmma.commit_group
  %x = vector.extract %d[0] : f32 from vector<64xf32>
  sched.store %x, %out[%c0] : f32, memref<4xf32>
  sched.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: 'sched.kernel' @unflushed: 'vector.extract' at {{.*}}errors.mlir:51:3 reads a 'sched.wgmma.mma_async' result before any 'sched.wgmma.wait_group 0'; run sched-flush-wgmma before convert-sched-to-nvvm

// -----

// Shared buffers without offsets become static globals; past 48 KiB the kernel cannot declare
// them, and the error says which pass places them in dynamic shared memory instead.
sched.kernel @unplaced(%out : memref<4xf32>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %a = sched.alloc : memref<8192xf32, 3>
  %b = sched.alloc : memref<8192xf32, 3>
  %x = sched.load %a[%c0] : memref<8192xf32, 3> -> f32
  %y = sched.load %b[%c0] : memref<8192xf32, 3> -> f32
  %s = arith.addf %x, %y : f32
  sched.store %s, %out[%c0] : f32, memref<4xf32>
  sched.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: 'sched.alloc' at {{.*}}errors.mlir:[[# @LINE - 7]]:3 in kernel @unplaced: the shared buffers without an offset take 65536 bytes, over the 49152-byte limit of static shared memory; run sched-alias-smem before convert-sched-to-nvvm to place them in dynamic shared memory

// -----

// A view at a byte shift known only at run time has no static pointer offset.
sched.kernel @dynamic_shift(%out : memref<64xf32>) grid [1, 1, 1] block [32, 1, 1] smem 1024 {
  %tx = sched.thread_idx x
  %bytes = sched.alloc offset 0 : i64 : memref<1024xi8, 3>
  %f = memref.view %bytes[%tx][] : memref<1024xi8, 3> to memref<4x48xf32, 3>
  %x = sched.load %f[%tx, %tx] : memref<4x48xf32, 3> -> f32
  sched.store %x, %out[%tx] : f32, memref<64xf32>
  sched.return
}
// CHECK: error: pass 'convert-sched-to-nvvm' failed: cannot lower (only static row-major views at a constant byte shift) 'memref.view' at {{.*}}errors.mlir:[[# @LINE - 5]]:3 in kernel @dynamic_shift
