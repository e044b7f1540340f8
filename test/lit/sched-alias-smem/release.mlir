// RUN: fuser-opt %s --split-input-file -p sched-alias-smem | filecheck %s

// `sched.release`: the scheduler's word that buffers are dead for everything after it in its
// block. A warp-specialized kernel: the producer (tid < 128) fills %slots, the 256 consumer
// threads read them, release them, then stage their results in %staging. Without the release,
// both buffers are in use somewhere inside the same `scf.if` and get bytes of their own; with
// it, %staging takes %slots' bytes behind a barrier of the 256 releasing threads (a named
// barrier with the first free id: 1 and 2 are taken), and the release itself is gone.
// CHECK-LABEL: sched.kernel @warp_specialized
// CHECK-SAME:    smem 16384
// CHECK-SAME:    fuser.smem = "peak 16384 bytes, 20480 without reuse; %staging reuses %slots"
// CHECK:         %slots = sched.alloc offset 0 : i64 : memref<4096xf32, 3 : i64>
// CHECK:         %staging = sched.alloc offset 0 : i64 : memref<1024xf32, 3 : i64>
// CHECK:       } else {
// CHECK:         %x = sched.load %slots
// CHECK-NEXT:    sched.named_barrier sync 3, 256
// CHECK:         sched.store %x, %staging
// CHECK-NOT:     sched.release
// CHECK-NOT:     sched.barrier
sched.kernel @warp_specialized(%out : memref<1024xf32>) grid [1, 1, 1] block [384, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %c128 = arith.constant 128 : index
  %v = arith.constant 1.0 : f32
  %slots = sched.alloc : memref<4096xf32, 3>
  %staging = sched.alloc : memref<1024xf32, 3>
  %prod = arith.cmpi ult, %tx, %c128 : index
  scf.if %prod {
    sched.named_barrier sync 1, 128
    sched.store %v, %slots[%tx] : f32, memref<4096xf32, 3>
    sched.named_barrier arrive 2, 384
  } else {
    sched.named_barrier sync 2, 384
    %x = sched.load %slots[%tx] : memref<4096xf32, 3> -> f32
    sched.release %slots threads 256 : memref<4096xf32, 3>
    %i = arith.subi %tx, %c128 : index
    sched.store %x, %staging[%i] : f32, memref<1024xf32, 3>
    %y = sched.load %staging[%i] : memref<1024xf32, 3> -> f32
    sched.store %y, %out[%i] : f32, memref<1024xf32>
  }
  sched.return
}

// -----
// A wgmma reading the released buffer is complete only at its wait_group 0: the barrier goes
// after the wait (at the release's block level), not at the release.
// CHECK-LABEL: sched.kernel @after_wait
// CHECK-SAME:    fuser.smem = "peak 32768 bytes, 40960 without reuse; %staging reuses %a"
// CHECK:         sched.wgmma.commit_group
// CHECK-NEXT:    %d_ready = sched.wgmma.wait_group 0, %d
// CHECK-NEXT:    sched.named_barrier sync 1, 128
// CHECK-NEXT:    %x = vector.extract %d_ready[0]
// CHECK-NEXT:    sched.store %x, %staging
sched.kernel @after_wait(%out : memref<4xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %z = arith.constant dense<0.0> : vector<64xf32>
  %a = sched.alloc : memref<2x128x64xbf16, 3>
  %staging = sched.alloc : memref<2048xf32, 3>
  %wg1 = arith.cmpi uge, %tx, %c128 : index
  scf.if %wg1 {
    %da = sched.wgmma.desc %a[%c0, %c0, %c0] swizzle 128 lbo 16 sbo 1024 : memref<2x128x64xbf16, 3>
    sched.wgmma.fence
    %d = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %z : vector<64xf32>
    sched.wgmma.commit_group
    sched.release %a threads 128 : memref<2x128x64xbf16, 3>
    %d_ready = sched.wgmma.wait_group 0, %d : vector<64xf32>
    %x = vector.extract %d_ready[0] : f32 from vector<64xf32>
    sched.store %x, %staging[%tx] : f32, memref<2048xf32, 3>
    %y = sched.load %staging[%c0] : memref<2048xf32, 3> -> f32
    sched.store %y, %out[%c0] : f32, memref<4xf32>
  }
  sched.return
}

// -----
// A release that frees nothing (the staging buffer is in use before it) adds no barrier; the
// release is erased all the same.
// CHECK-LABEL: sched.kernel @nothing_freed
// CHECK-SAME:    fuser.smem = "peak 20480 bytes, 20480 without reuse"
// CHECK-NOT:     sched.named_barrier
// CHECK-NOT:     sched.barrier
// CHECK-NOT:     sched.release
sched.kernel @nothing_freed(%out : memref<1024xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %v = arith.constant 1.0 : f32
  %slots = sched.alloc : memref<4096xf32, 3>
  %staging = sched.alloc : memref<1024xf32, 3>
  sched.store %v, %staging[%tx] : f32, memref<1024xf32, 3>
  sched.store %v, %slots[%tx] : f32, memref<4096xf32, 3>
  %x = sched.load %slots[%tx] : memref<4096xf32, 3> -> f32
  sched.release %slots threads 256 : memref<4096xf32, 3>
  %y = sched.load %staging[%tx] : memref<1024xf32, 3> -> f32
  sched.store %y, %out[%tx] : f32, memref<1024xf32>
  sched.return
}

// -----
// A release at the kernel's top level by every thread of the block is a CTA barrier (here the
// lifetimes alone would allow the reuse too).
// CHECK-LABEL: sched.kernel @whole_block
// CHECK-SAME:    fuser.smem = "peak 16384 bytes, 20480 without reuse; %staging reuses %slots"
// CHECK:         %x = sched.load %slots
// CHECK-NEXT:    sched.barrier
// CHECK-NEXT:    sched.store %x, %staging
sched.kernel @whole_block(%out : memref<1024xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
  %tx = sched.thread_idx x
  %v = arith.constant 1.0 : f32
  %slots = sched.alloc : memref<4096xf32, 3>
  %staging = sched.alloc : memref<1024xf32, 3>
  sched.store %v, %slots[%tx] : f32, memref<4096xf32, 3>
  %x = sched.load %slots[%tx] : memref<4096xf32, 3> -> f32
  sched.release %slots threads 256 : memref<4096xf32, 3>
  sched.store %x, %staging[%tx] : f32, memref<1024xf32, 3>
  %y = sched.load %staging[%tx] : memref<1024xf32, 3> -> f32
  sched.store %y, %out[%tx] : f32, memref<1024xf32>
  sched.return
}
