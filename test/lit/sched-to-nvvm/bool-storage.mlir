// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// An i1 element is one byte holding 0 or 1 in every memory space, as torch and numpy keep
// booleans. A vector of i1 is loaded as bytes and compared != 0 (any nonzero byte is true), and
// stored zero-extended to bytes: LLVM would pack a vector<8xi1> into 8 bits of one byte.

builtin.module {
  sched.kernel @mask_k0(%m : memref<64x8xi1>, %out : memref<64x8xi1>) grid [1, 1, 1] block [64, 1, 1] smem 0 {
    %c0 = arith.constant 0 : index
    %tid = sched.thread_idx x
    %tile = sched.alloc : memref<64x8xi1, 3>
    %v = sched.load %m[%tid, %c0] : memref<64x8xi1> -> vector<8xi1>
    sched.store %v, %tile[%tid, %c0] : vector<8xi1>, memref<64x8xi1, 3>
    sched.barrier
    %s = sched.load %tile[%tid, %c0] : memref<64x8xi1, 3> -> i1
    sched.store %s, %out[%tid, %c0] : i1, memref<64x8xi1>
    sched.return
  }
}

// CHECK: llvm.mlir.global internal @__smem_mask_k0_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<512 x i8>
// CHECK: llvm.func @mask_k0(
// CHECK: %[[P:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK: %[[RAW:.*]] = llvm.load %[[P]] {alignment = 8 : i64} : !llvm.ptr<1> -> vector<8xi8>
// CHECK: %[[ZERO:.*]] = arith.constant dense<0> : vector<8xi8>
// CHECK: %[[V:.*]] = llvm.icmp "ne" %[[RAW]], %[[ZERO]] : vector<8xi8>
// CHECK: %[[W:.*]] = llvm.zext %[[V]] : vector<8xi1> to vector<8xi8>
// CHECK: llvm.store %[[W]], %{{.*}} {alignment = 8 : i64} : vector<8xi8>, !llvm.ptr<3>
// CHECK: %[[RAW1:.*]] = llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr<3> -> i8
// CHECK: %[[S:.*]] = llvm.icmp "ne" %[[RAW1]], %{{.*}} : i8
// CHECK: %[[W1:.*]] = llvm.zext %[[S]] : i1 to i8
// CHECK: llvm.store %[[W1]], %{{.*}} {alignment = 1 : i64} : i8, !llvm.ptr<1>

// PTX: ld.global.v2.b32
// PTX: st.shared.v2.b32
// PTX: ld.shared.b8
// PTX: st.global.b8
