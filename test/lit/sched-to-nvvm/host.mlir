// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// The host function: workspaces become gpu.alloc (+ gpu.memset when zero_init) and are freed
// before the return; launches become gpu.launch_func with the kernel's geometry and dynamic
// shared memory, into one gpu.module named after the host function.

builtin.module {
  sched.kernel @split_k0(%x : memref<1024xf32>, %ws : memref<8xf32>) grid [8, 1, 1] block [128, 1, 1] smem 1024 {
    %c0 = arith.constant 0 : index
    %b = sched.block_idx x
    %v = sched.load %x[%c0] : memref<1024xf32> -> f32
    sched.store %v, %ws[%b] : f32, memref<8xf32>
    sched.return
  }
  sched.kernel @split_k1(%ws : memref<8xf32>, %cnt : memref<1xi32>, %y : memref<1xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 cluster [1, 1, 1] {
    %c0 = arith.constant 0 : index
    %v = sched.load %ws[%c0] : memref<8xf32> -> f32
    sched.store %v, %y[%c0] : f32, memref<1xf32>
    sched.return
  }
  func.func @split(%x : memref<1024xf32>, %y : memref<1xf32>) attributes {fuser.num_outputs = 1 : i64} {
    %ws = sched.workspace : memref<8xf32>
    %cnt = sched.workspace zero_init : memref<1xi32>
    sched.launch @split_k0(%x, %ws) : memref<1024xf32>, memref<8xf32>
    sched.launch @split_k1(%ws, %cnt, %y) : memref<8xf32>, memref<1xi32>, memref<1xf32>
    func.return
  }
}

// CHECK:      builtin.module attributes {gpu.container_module} {
// CHECK-NEXT:   func.func @split(%[[X:.*]]: memref<1024xf32>, %[[Y:.*]]: memref<1xf32>) attributes {fuser.num_outputs = 1 : i64} {
// CHECK-DAG:      %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:      %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:      %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG:      %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:      %[[SMEM1K:.*]] = arith.constant 1024 : i32
// CHECK-DAG:      %[[SMEM0:.*]] = arith.constant 0 : i32
// CHECK:          %[[WS:.*]] = "gpu.alloc"() <{operandSegmentSizes = array<i32: 0, 0, 0>}> : () -> memref<8xf32>
// CHECK-NEXT:     %[[CNT:.*]] = "gpu.alloc"() <{operandSegmentSizes = array<i32: 0, 0, 0>}> : () -> memref<1xi32>
// CHECK-NEXT:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:     gpu.memset %[[CNT]], %[[ZERO]] : memref<1xi32>, i32
// CHECK-NEXT:     "gpu.launch_func"(%[[C8]], %[[C1]], %[[C1]], %[[C128]], %[[C1]], %[[C1]], %[[SMEM1K]], %[[X]], %[[WS]]) <{kernel = @split_kernels::@split_k0, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 2, 0>}> : (index, index, index, index, index, index, i32, memref<1024xf32>, memref<8xf32>) -> ()
// CHECK-NEXT:     "gpu.launch_func"(%[[C1]], %[[C1]], %[[C1]], %[[C32]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[SMEM0]], %[[WS]], %[[CNT]], %[[Y]]) <{kernel = @split_kernels::@split_k1, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 0>}>
// CHECK-NEXT:     "gpu.dealloc"(%[[WS]])
// CHECK-NEXT:     "gpu.dealloc"(%[[CNT]])
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   "gpu.module"() <{sym_name = "split_kernels"}> ({
// CHECK-NEXT:     llvm.func @split_k0(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
// CHECK:          llvm.func @split_k1(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>, nvvm.cluster_dim = array<i32: 1, 1, 1>} {
// CHECK-NOT:    sched.

// PTX: .entry split_k0(
// PTX: .maxntid 128, 1, 1
// PTX: .entry split_k1(
// PTX: .maxntid 32, 1, 1
// PTX: .reqnctapercluster 1, 1, 1
