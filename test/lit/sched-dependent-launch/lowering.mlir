// RUN: fuser-opt %s -p sched-dependent-launch,convert-sched-to-nvvm | filecheck %s
// RUN: fuser-opt %s -p sched-dependent-launch,convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// A two-kernel plan after the pass, lowered: the dependent launch keeps its attribute on the
// gpu.launch_func (the runtime launches it with programmatic stream serialization), the kernels
// hold upstream's nvvm.griddepcontrol, and the PTX the two griddepcontrol instructions.


// CHECK:       "gpu.launch_func"({{.*}}) <{kernel = @split_kernels::@split_k0, {{[^}]*}}}> : (
// CHECK-NEXT:  "gpu.launch_func"({{.*}}) <{kernel = @split_kernels::@split_k1, {{.*}}}> {fuser.dependent_launch} : {{.*}}
// (the special registers the kernel reads are hoisted to its top; no memory access comes before the wait)
// CHECK:       llvm.func @split_k0(
// CHECK-NOT:     llvm.load
// CHECK:         nvvm.griddepcontrol launch_dependents
// CHECK:       llvm.func @split_k1(
// CHECK-NOT:     llvm.load
// CHECK:         nvvm.griddepcontrol wait
// CHECK:         llvm.load

// PTX:       .entry split_k0(
// PTX:         griddepcontrol.launch_dependents;
// PTX:       .entry split_k1(
// PTX-NOT:     ld.global
// PTX:         griddepcontrol.wait;
// PTX:         ld.global
builtin.module {
  sched.kernel @split_k0(%x : memref<1024xf32>, %ws : memref<8xf32>) grid [8, 1, 1] block [128, 1, 1] smem 0 {
    %c0 = arith.constant 0 : index
    %b = sched.block_idx x
    %v = sched.load %x[%c0] : memref<1024xf32> -> f32
    sched.store %v, %ws[%b] : f32, memref<8xf32>
    sched.return
  }
  sched.kernel @split_k1(%ws : memref<8xf32>, %y : memref<1xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
    %c0 = arith.constant 0 : index
    %v = sched.load %ws[%c0] : memref<8xf32> -> f32
    sched.store %v, %y[%c0] : f32, memref<1xf32>
    sched.return
  }
  func.func @split(%x : memref<1024xf32>, %y : memref<1xf32>) attributes {fuser.num_outputs = 1 : i64} {
    %ws = sched.workspace : memref<8xf32>
    sched.launch @split_k0(%x, %ws) : memref<1024xf32>, memref<8xf32>
    sched.launch @split_k1(%ws, %y) : memref<8xf32>, memref<1xf32>
    func.return
  }
}
