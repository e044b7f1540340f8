// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// Buffers: a 2-D shared tile with vector accesses (static global, aligned for the vector),
// two buffers placed in dynamic shared memory by their byte offsets, and a register array
// (an entry-block alloca that SROA turns into registers).

builtin.module {
  sched.kernel @t(%x : memref<32x64xf32>, %y : memref<32x64xf32>) grid [1, 1, 1] block [16, 32, 1] smem 8192 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %tx = sched.thread_idx x
    %ty = sched.thread_idx y
    %tile = sched.alloc : memref<32x64xf32, 3>
    %d0 = sched.alloc offset 0 : i64 : memref<64xf32, 3>
    %d1 = sched.alloc offset 4096 : i64 : memref<2x32xf32, 3>
    %regs = sched.alloc : memref<4xf32, 5>
    %col = arith.muli %tx, %c4 : index
    %v = sched.load %x[%ty, %col] : memref<32x64xf32> -> vector<4xf32>
    sched.store %v, %tile[%ty, %col] : vector<4xf32>, memref<32x64xf32, 3>
    sched.barrier
    %w = sched.load %tile[%tx, %col] : memref<32x64xf32, 3> -> vector<4xf32>
    sched.store %w, %regs[%c0] : vector<4xf32>, memref<4xf32, 5>
    %e = sched.load %regs[%c1] : memref<4xf32, 5> -> f32
    sched.store %e, %d0[%tx] : f32, memref<64xf32, 3>
    sched.store %e, %d1[%c1, %tx] : f32, memref<2x32xf32, 3>
    %f = sched.load %d1[%c1, %c4] : memref<2x32xf32, 3> -> f32
    sched.store %f, %regs[%c0] : f32, memref<4xf32, 5>
    %z = sched.load %regs[%c0] : memref<4xf32, 5> -> vector<4xf32>
    sched.store %z, %y[%ty, %col] : vector<4xf32>, memref<32x64xf32>
    sched.return
  }
}

// CHECK:      "gpu.module"() <{sym_name = "kernels"}> ({
// CHECK-NEXT:   llvm.mlir.global internal @__smem_t_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<2048 x f32>
// CHECK-NEXT:   llvm.mlir.global external @__dynamic_smem_t() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK-NEXT:   llvm.func @t(%[[X:.*]]: !llvm.ptr<1>, %[[Y:.*]]: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 16, 32, 1>} {
// CHECK-DAG:      %[[TX:tid_x]] = arith.index_cast{{(ui)?}} %{{.*}} : i32 to index
// CHECK-DAG:      %[[TY:tid_y]] = arith.index_cast{{(ui)?}} %{{.*}} : i32 to index
// CHECK-DAG:      %[[TILE:.*]] = llvm.mlir.addressof @__smem_t_0 : !llvm.ptr<3>
// CHECK-DAG:      %[[DYN:.*]] = llvm.mlir.addressof @__dynamic_smem_t : !llvm.ptr<3>
// CHECK-DAG:      %[[D1:.*]] = llvm.getelementptr %[[DYN]][4096] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK-DAG:      %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG:      %[[REGS:.*]] = llvm.alloca %[[ONE]] x !llvm.array<4 x f32> {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK-DAG:      %[[C64:.*]] = arith.constant 64 : index
// CHECK:          %[[COL:.*]] = arith.muli %[[TX]], %{{.*}} : index
// CHECK-NEXT:     %[[R:.*]] = arith.muli %[[TY]], %[[C64]] : index
// CHECK-NEXT:     %[[L:.*]] = arith.addi %[[R]], %[[COL]] : index
// CHECK-NEXT:     %[[O:.*]] = arith.index_cast %[[L]] : index to i64
// CHECK-NEXT:     %[[P:.*]] = llvm.getelementptr %[[X]][%[[O]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:     %[[V:.*]] = llvm.load %[[P]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK:          %[[TP:.*]] = llvm.getelementptr %[[TILE]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
// CHECK-NEXT:     llvm.store %[[V]], %[[TP]] {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<3>
// CHECK-NEXT:     nvvm.barrier
// CHECK:          %[[W:.*]] = llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
// CHECK-NEXT:     llvm.store %[[W]], %[[REGS]] {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr
// CHECK-NEXT:     %[[EP:.*]] = llvm.getelementptr %[[REGS]][1] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK-NEXT:     %[[E:.*]] = llvm.load %[[EP]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:     %[[O0:.*]] = arith.index_cast %[[TX]] : index to i64
// CHECK-NEXT:     %[[P0:.*]] = llvm.getelementptr %[[DYN]][%[[O0]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
// CHECK-NEXT:     llvm.store %[[E]], %[[P0]] {alignment = 4 : i64} : f32, !llvm.ptr<3>
// CHECK-NEXT:     %[[L1:.*]] = arith.addi %[[TX]], %{{.*}} : index
// CHECK-NEXT:     %[[O1:.*]] = arith.index_cast %[[L1]] : index to i64
// CHECK-NEXT:     %[[P1:.*]] = llvm.getelementptr %[[D1]][%[[O1]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
// CHECK-NEXT:     llvm.store %[[E]], %[[P1]] {alignment = 4 : i64} : f32, !llvm.ptr<3>
// CHECK-NEXT:     %[[FP:.*]] = llvm.getelementptr %[[D1]][36] : (!llvm.ptr<3>) -> !llvm.ptr<3>, f32
// CHECK-NEXT:     %[[F:.*]] = llvm.load %[[FP]] {alignment = 4 : i64} : !llvm.ptr<3> -> f32
// CHECK-NEXT:     llvm.store %[[F]], %[[REGS]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK-NEXT:     %[[Z:.*]] = llvm.load %[[REGS]] {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK:          llvm.store %[[Z]], %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK-NEXT:     llvm.return

// PTX:     .extern .shared .align 16 .b8 __dynamic_smem_t[];
// PTX:     .entry t(
// PTX:     .maxntid 16, 32, 1
// PTX:     .shared .align 16 .b8 __smem_t_0[8192];
// PTX-NOT: .local
// PTX:     ld.global.v4.{{[bf]}}32
// PTX:     st.shared.v4.{{[bf]}}32
// PTX:     bar.sync 0;
// PTX:     ld.shared.v4.{{[bf]}}32
// PTX:     st.global.v4.{{[bf]}}32
