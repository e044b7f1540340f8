// RUN: fuser-opt %s -p default -t ptx | filecheck %s

// i32 and i64 abs leave the PTX as a compare, a complement, an add and a select
// (lowering/target/ptx.py): on an H100, abs.s32 of INT_MIN read by rem.s32 gave the remainder
// of +2^31 (GPU fuzz seed 9920000).
// CHECK-NOT:   abs.s32
// CHECK-NOT:   abs.s64
// CHECK-DAG:   setp.lt.s32 %abs_p
// CHECK-DAG:   setp.lt.s64 %abs_p
// CHECK-DAG:   rem.s32
// CHECK-NOT:   abs.s32
// CHECK-NOT:   abs.s64
func.func @abs_then_fmod(%x: tensor<1024xi32>, %d: tensor<1024xi32>, %y: tensor<1024xi64>, %e: tensor<1024xi64>) -> (tensor<1024xi32>, tensor<1024xi64>) {
  %a = fusion.abs %x : tensor<1024xi32>
  %r = fusion.fmod %a, %d : tensor<1024xi32>
  %b = fusion.abs %y : tensor<1024xi64>
  %s = fusion.fmod %b, %e : tensor<1024xi64>
  func.return %r, %s : tensor<1024xi32>, tensor<1024xi64>
}
