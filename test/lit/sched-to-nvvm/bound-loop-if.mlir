// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// Bound loops whose trip count the binding covers need no loop: 200 iterations over 256
// threads is an scf.if (whose else branch yields the inits), 256 iterations over 256 threads is
// straight-line code, 0 iterations is nothing, and 300 iterations stay an scf.for.

builtin.module {
  sched.kernel @k(%x : memref<300xf32>, %y : memref<2x300xf32>) grid [2, 1, 1] block [256, 1, 1] smem 0 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c200 = arith.constant 200 : index
    %c256 = arith.constant 256 : index
    %c300 = arith.constant 300 : index
    %zero = arith.constant 0.000000e+00 : f32
    %bx = sched.block_idx x
    %r = sched.for bind(thread.x) %i = %c0 to %c200 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = sched.load %x[%i] : memref<300xf32> -> f32
      %s = arith.addf %acc, %v : f32
      sched.yield %s : f32
    }
    sched.for bind(thread.x) %i = %c0 to %c256 step %c1 {
      sched.store %r, %y[%bx, %i] : f32, memref<2x300xf32>
    }
    %n = sched.for bind(thread.x) %i = %c200 to %c200 step %c1 iter_args(%a = %r) -> (f32) {
      sched.yield %zero : f32
    }
    sched.for bind(block.x) %b = %c0 to %c2 step %c1 {
      sched.for bind(thread.x) %i = %c0 to %c300 step %c1 {
        sched.store %n, %y[%b, %i] : f32, memref<2x300xf32>
      }
    }
    sched.return
  }
  func.func @f(%x : memref<300xf32>, %y : memref<2x300xf32>) attributes {fuser.num_outputs = 1 : i64} {
    sched.launch @k(%x, %y) : memref<300xf32>, memref<2x300xf32>
    func.return
  }
}

// CHECK:      llvm.func @k(%[[X:.*]]: !llvm.ptr<1>, %[[Y:.*]]: !llvm.ptr<1>)
// CHECK-DAG:    %[[BX:.*]] = arith.index_cast{{(ui)?}} %{{.*}} : i32 to index
// CHECK-DAG:    %[[TX:tid_x]] = arith.index_cast{{(ui)?}} %{{.*}} : i32 to index
// CHECK-DAG:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:        %[[IN:.*]] = arith.cmpi slt, %[[TX]], %c200 : index
// CHECK-NEXT:   %[[R:.*]] = scf.if %[[IN]] -> (f32) {
// CHECK-NEXT:     %[[OFF:.*]] = arith.index_cast %[[TX]] : index to i64
// CHECK-NEXT:     %[[P:.*]] = llvm.getelementptr %[[X]][%[[OFF]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:     %[[V:.*]] = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK-NEXT:     %[[S:.*]] = arith.addf %[[ZERO]], %[[V]] : f32
// CHECK-NEXT:     scf.yield %[[S]] : f32
// CHECK-NEXT:   } else {
// CHECK-NEXT:     scf.yield %[[ZERO]] : f32
// CHECK-NEXT:   }
// 256 iterations, 256 threads: no condition.
// CHECK-NEXT:   %[[RO:.*]] = arith.muli %[[BX]], %[[C300:.*]] : index
// CHECK-NEXT:   %[[LIN:.*]] = arith.addi %[[RO]], %[[TX]] : index
// CHECK-NEXT:   %[[OFF2:.*]] = arith.index_cast %[[LIN]] : index to i64
// CHECK-NEXT:   %[[Q:.*]] = llvm.getelementptr %[[Y]][%[[OFF2]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:   llvm.store %[[R]], %[[Q]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// No iterations: the result is the init, %[[R]]. block.x over 2 blocks of a grid of 2: no loop,
// the block index is ctaid.x. thread.x over 300 with 256 threads: a loop.
// CHECK-NEXT:   scf.for %[[I:.*]] = %[[TX]] to %c300 step %[[C256:.*]] {
// CHECK-NEXT:     %[[B0:.*]] = arith.muli %[[BX]], %[[C300]] : index
// CHECK-NEXT:     %[[LIN3:.*]] = arith.addi %[[B0]], %[[I]] : index
// CHECK-NEXT:     %[[OFF3:.*]] = arith.index_cast %[[LIN3]] : index to i64
// CHECK-NEXT:     %[[Q3:.*]] = llvm.getelementptr %[[Y]][%[[OFF3]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:     llvm.store %[[R]], %[[Q3]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-NEXT:   }
// CHECK-NEXT:   llvm.return

// PTX: .entry k(
// PTX: setp.{{.*}}, 199;
// PTX: ld.global.{{[bf]}}32
// PTX: st.global.{{[bf]}}32
