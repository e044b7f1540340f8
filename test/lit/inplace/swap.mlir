// RUN: fuser-opt %s -p to-sched | filecheck %s

// Two inputs swapped in place (fuzz seed 11271021): one output is staged. Since its value is an
// input that the other output writes, that input is copied to a workspace before any kernel,
// and the workspace into place after every other copy.
// CHECK:      func.func @swap(%a: memref<31x33xf32>, %b: memref<31x33xf32>
// CHECK-SAME: fuser.staged_aliases = array<i64: 0>
// CHECK:      [[W:%[a-z0-9_]+]] = sched.workspace
// CHECK-NEXT: sched.launch @swap_k0(%a, [[W]]) :
// CHECK-NEXT: sched.launch @swap_k1(%b, %a) {{.*}}:
// CHECK-NEXT: sched.launch @swap_k2([[W]], %b) {{.*}}:
func.func @swap(%a: tensor<31x33xf32>, %b: tensor<31x33xf32>) -> (tensor<31x33xf32> {fusion.alias = 1 : i64}, tensor<31x33xf32> {fusion.alias = 0 : i64}) {
  func.return %a, %b : tensor<31x33xf32>, tensor<31x33xf32>
}
