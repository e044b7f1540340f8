// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// A grid-stride loop copying 4096 floats as vector<4xf32>: 1024 vectors over 4 x 128 threads,
// so each thread runs two iterations and the loop stays a loop.

builtin.module {
  sched.kernel @copy_k0(%x : memref<4096xf32>, %y : memref<4096xf32>) grid [4, 1, 1] block [128, 1, 1] smem 0 {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c4096 = arith.constant 4096 : index
    sched.for bind(grid.x) %i = %c0 to %c4096 step %c4 {
      %v = sched.load %x[%i] : memref<4096xf32> -> vector<4xf32>
      %w = arith.mulf %v, %v : vector<4xf32>
      sched.store %w, %y[%i] : vector<4xf32>, memref<4096xf32>
    }
    sched.return
  }
  func.func @copy(%x : memref<4096xf32>, %y : memref<4096xf32>) attributes {fuser.num_outputs = 1 : i64} {
    sched.launch @copy_k0(%x, %y) : memref<4096xf32>, memref<4096xf32>
    func.return
  }
}

// CHECK:      builtin.module attributes {gpu.container_module} {
// CHECK:        "gpu.module"() <{sym_name = "copy_kernels"}> ({
// CHECK-NEXT:     llvm.func @copy_k0(%[[X:.*]]: !llvm.ptr<1>, %[[Y:.*]]: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
// CHECK-DAG:        %[[CTAID:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-DAG:        %[[BX:.*]] = arith.index_cast{{(ui)?}} %[[CTAID]] : i32 to index
// CHECK-DAG:        %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-DAG:        %[[TX:.*]] = arith.index_cast{{(ui)?}} %[[TID]] : i32 to index
// CHECK-DAG:        %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG:        %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:        %[[C2048:.*]] = arith.constant 2048 : index
// CHECK:            %[[BASE:.*]] = arith.muli %[[BX]], %[[C128]] : index
// CHECK-NEXT:       %[[POS:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK-NEXT:       %[[LB:.*]] = arith.muli %[[POS]], %[[C4]] : index
// CHECK-NEXT:       scf.for %[[I:.*]] = %[[LB]] to %{{.*}} step %[[C2048]] {
// CHECK-NEXT:         %[[OFF:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK-NEXT:         %[[P:.*]] = llvm.getelementptr %[[X]][%[[OFF]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:         %[[V:.*]] = llvm.load %[[P]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK-NEXT:         %[[W:.*]] = arith.mulf %[[V]], %[[V]] : vector<4xf32>
// CHECK-NEXT:         %[[OFF2:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK-NEXT:         %[[Q:.*]] = llvm.getelementptr %[[Y]][%[[OFF2]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:         llvm.store %[[W]], %[[Q]] {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK-NEXT:       }
// CHECK-NEXT:       llvm.return
// CHECK-NEXT:     }
// CHECK-NEXT:   }) : () -> ()
// CHECK-NOT:    sched.

// PTX:       .target sm_90a
// PTX:       .entry copy_k0(
// PTX:       .maxntid 128, 1, 1
// PTX:       mov.u32 {{.*}}%ctaid.x
// PTX:       mov.u32 {{.*}}%tid.x
// PTX:       ld.global.v4.{{[bf]}}32
// PTX:       mul.rn.f32
// PTX:       st.global.v4.{{[bf]}}32
