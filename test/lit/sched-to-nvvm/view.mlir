// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s

// memref.view: typed views of one byte buffer (the matmul epilogue sees its staging bytes as
// each output's element type). A view is the buffer's pointer moved by the constant byte
// shift; its accesses index it with the view's own element type.
sched.kernel @views(%out : memref<64xf32>) grid [1, 1, 1] block [32, 1, 1] smem 2048 {
  %tx = sched.thread_idx x
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  %bytes = sched.alloc offset 1024 : i64 : memref<1024xi8, 3>
  %h = memref.view %bytes[%c0][] : memref<1024xi8, 3> to memref<2x256xbf16, 3>
  %f = memref.view %bytes[%c256][] : memref<1024xi8, 3> to memref<4x48xf32, 3>
  %x = sched.load %h[%c0, %tx] : memref<2x256xbf16, 3> -> bf16
  %y = arith.extf %x : bf16 to f32
  sched.store %y, %f[%c0, %tx] : f32, memref<4x48xf32, 3>
  sched.store %y, %out[%tx] : f32, memref<64xf32>
  sched.return
}
// CHECK:      llvm.func @views
// CHECK-DAG:  %[[DYN:.*]] = llvm.mlir.addressof @__dynamic_smem_views : !llvm.ptr<3>
// CHECK-DAG:  %[[BYTES:.*]] = llvm.getelementptr %[[DYN]][1024] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK-DAG:  %[[F:.*]] = llvm.getelementptr %[[BYTES]][256] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK:      %[[HP:.*]] = llvm.getelementptr %[[BYTES]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, bf16
// CHECK-NEXT: llvm.load %[[HP]] {alignment = 2 : i64} : !llvm.ptr<3> -> bf16
// CHECK:      %[[FP:.*]] = llvm.getelementptr %[[F]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
// CHECK-NEXT: llvm.store %{{.*}}, %[[FP]] {alignment = 4 : i64} : f32, !llvm.ptr<3>
// CHECK-NOT:  memref.view
