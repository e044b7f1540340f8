// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// A row sum: one block of 256 threads per row. Each thread accumulates a strided slice of the
// row (a thread.x loop with a loop-carried value), warps reduce with butterfly shuffles, warp
// leaders meet in shared memory across a barrier, and warp 0 finishes.

builtin.module {
  sched.kernel @rowsum_k0(%x : memref<64x1000xf32>, %y : memref<64xf32>) grid [64, 1, 1] block [256, 1, 1] smem 0 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c1000 = arith.constant 1000 : index
    %zero = arith.constant 0.000000e+00 : f32
    %row = sched.block_idx x
    %tid = sched.thread_idx x
    %part = sched.for bind(thread.x) %j = %c0 to %c1000 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = sched.load %x[%row, %j] : memref<64x1000xf32> -> f32
      %s = arith.addf %acc, %v : f32
      sched.yield %s : f32
    }
    %o16 = sched.shfl_xor %part, 16 : f32
    %a16 = arith.addf %part, %o16 : f32
    %o8 = sched.shfl_xor %a16, 8 : f32
    %a8 = arith.addf %a16, %o8 : f32
    %o4 = sched.shfl_xor %a8, 4 : f32
    %a4 = arith.addf %a8, %o4 : f32
    %o2 = sched.shfl_xor %a4, 2 : f32
    %a2 = arith.addf %a4, %o2 : f32
    %o1 = sched.shfl_xor %a2, 1 : f32
    %warp_sum = arith.addf %a2, %o1 : f32
    %smem = sched.alloc : memref<8xf32, 3>
    %lane = arith.remui %tid, %c32 : index
    %warp = arith.divui %tid, %c32 : index
    %leader = arith.cmpi eq, %lane, %c0 : index
    scf.if %leader {
      sched.store %warp_sum, %smem[%warp] : f32, memref<8xf32, 3>
    }
    sched.barrier
    %first = arith.cmpi eq, %warp, %c0 : index
    scf.if %first {
      %l = arith.minui %lane, %c7 : index
      %w = sched.load %smem[%l] : memref<8xf32, 3> -> f32
      %in = arith.cmpi ult, %lane, %c8 : index
      %t = arith.select %in, %w, %zero : f32
      %p4 = sched.shfl_xor %t, 4 : f32
      %t4 = arith.addf %t, %p4 : f32
      %p2 = sched.shfl_xor %t4, 2 : f32
      %t2 = arith.addf %t4, %p2 : f32
      %p1 = sched.shfl_xor %t2, 1 : f32
      %total = arith.addf %t2, %p1 : f32
      %is0 = arith.cmpi eq, %tid, %c0 : index
      scf.if %is0 {
        sched.store %total, %y[%row] : f32, memref<64xf32>
      }
    }
    sched.return
  }
  func.func @rowsum(%x : memref<64x1000xf32>, %y : memref<64xf32>) attributes {fuser.num_outputs = 1 : i64} {
    sched.launch @rowsum_k0(%x, %y) : memref<64x1000xf32>, memref<64xf32>
    func.return
  }
}

// CHECK:      "gpu.module"() <{sym_name = "rowsum_kernels"}> ({
// CHECK-NEXT:   llvm.mlir.global internal @__smem_rowsum_k0_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8 x f32>
// CHECK-NEXT:   llvm.func @rowsum_k0(%[[X:.*]]: !llvm.ptr<1>, %[[Y:.*]]: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>} {
// CHECK-DAG:      %[[CTAID:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-DAG:      %[[ROW:.*]] = arith.index_cast{{(ui)?}} %[[CTAID]] : i32 to index
// CHECK-DAG:      %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-DAG:      %[[TX:.*]] = arith.index_cast{{(ui)?}} %[[TID]] : i32 to index
// CHECK-DAG:      %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG:      %[[MASK:.*]] = arith.constant -1 : i32
// CHECK-DAG:      %[[CLAMP:.*]] = arith.constant 31 : i32
// CHECK-DAG:      %[[O16:.*]] = arith.constant 16 : i32
// CHECK-DAG:      %[[O1:.*]] = arith.constant 1 : i32
// CHECK-DAG:      %[[SMEM:.*]] = llvm.mlir.addressof @__smem_rowsum_k0_0 : !llvm.ptr<3>
// CHECK-DAG:      %[[C1000:.*]] = arith.constant 1000 : index
// CHECK:          %[[PART:.*]] = scf.for %[[J:.*]] = %[[TX]] to %{{.*}} step %[[C256]] iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:       %[[R:.*]] = arith.muli %[[ROW]], %[[C1000]] : index
// CHECK-NEXT:       %[[LIN:.*]] = arith.addi %[[R]], %[[J]] : index
// CHECK-NEXT:       %[[OFF:.*]] = arith.index_cast %[[LIN]] : index to i64
// CHECK-NEXT:       %[[P:.*]] = llvm.getelementptr %[[X]][%[[OFF]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:       %[[V:.*]] = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK-NEXT:       %[[S:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// CHECK-NEXT:       scf.yield %[[S]] : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     %{{.*}} = nvvm.shfl.sync bfly %[[MASK]], %[[PART]], %[[O16]], %[[CLAMP]] : f32 -> f32
// CHECK-COUNT-4:  nvvm.shfl.sync bfly %[[MASK]], %{{.*}}, %{{.*}}, %[[CLAMP]] : f32 -> f32
// CHECK:          scf.if %{{.*}} {
// CHECK-NEXT:       %[[WOFF:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-NEXT:       %[[WP:.*]] = llvm.getelementptr %[[SMEM]][%[[WOFF]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
// CHECK-NEXT:       llvm.store %{{.*}}, %[[WP]] {alignment = 4 : i64} : f32, !llvm.ptr<3>
// CHECK-NEXT:     }
// CHECK-NEXT:     nvvm.barrier
// CHECK:          scf.if %{{.*}} {
// CHECK:            llvm.getelementptr %[[SMEM]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
// CHECK-NEXT:       llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> f32
// CHECK:            nvvm.shfl.sync bfly %[[MASK]], %{{.*}}, %{{.*}}, %[[CLAMP]] : f32 -> f32
// CHECK:            nvvm.shfl.sync bfly %[[MASK]], %{{.*}}, %[[O1]], %[[CLAMP]] : f32 -> f32
// CHECK:            scf.if %{{.*}} {
// CHECK-NEXT:         %[[YOFF:.*]] = arith.index_cast %[[ROW]] : index to i64
// CHECK-NEXT:         %[[YP:.*]] = llvm.getelementptr %[[Y]][%[[YOFF]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:         llvm.store %{{.*}}, %[[YP]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     llvm.return
// CHECK-NOT:    sched.

// PTX:      .entry rowsum_k0(
// PTX:      .shared .align 16 .b8 __smem_rowsum_k0_0[32];
// PTX:      ld.global.{{[bf]}}32
// PTX:      shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// PTX:      st.shared.{{[bf]}}32
// PTX:      bar.sync 0;
// PTX:      ld.shared.{{[bf]}}32
// PTX:      shfl.sync.bfly.b32
// PTX:      st.global.{{[bf]}}32
