// RUN: fuser-opt %s -p default --arch sm_80 | filecheck %s --check-prefix=PLAIN
// RUN: fuser-opt %s -p default --arch sm_90 | filecheck %s --check-prefix=PDL
// RUN: fuser-opt %s -p default -t ptx --arch sm_80 | filecheck %s --check-prefix=PTX80

// A plan of two kernels (a long row sum split over blocks, then the merge of its partials).
// Programmatic dependent launch needs sm_90 (griddepcontrol): for sm_80 the pipeline leaves
// sched-dependent-launch out, so the second launch is plain and neither kernel has the
// instruction; sm_90 and sm_90a keep it.

// PLAIN:     gpu.launch_func
// PLAIN-NOT: fuser.dependent_launch
// PLAIN-NOT: griddepcontrol

// PDL:       "gpu.launch_func"{{.*}}@long_sum_k1{{.*}} {fuser.dependent_launch}
// PDL:       llvm.func @long_sum_k0
// PDL:       nvvm.griddepcontrol launch_dependents
// PDL:       llvm.func @long_sum_k1
// PDL:       nvvm.griddepcontrol wait

// PTX80:     .target sm_80
// PTX80-NOT: griddepcontrol
// PTX80:     .entry long_sum_k0(
// PTX80-NOT: griddepcontrol
// PTX80:     .entry long_sum_k1(
// PTX80-NOT: griddepcontrol
func.func @long_sum(%x: tensor<8x1048576xf32>) -> tensor<8xf32> {
  %s = fusion.reduce sum %x dims [1] : tensor<8x1048576xf32> to tensor<8xf32>
  func.return %s : tensor<8xf32>
}
