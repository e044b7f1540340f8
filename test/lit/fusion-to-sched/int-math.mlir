// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// Integer arithmetic (issue 31): add, sub, mul, neg wrap (arith's integer ops); max/min are
// signed, or unsigned for u8 (its values are signless i8 in the kernel); cmp of u8 and of masks
// is unsigned; a full of u8 200 is the i8 -56 (the same bits). The divisions never reach sdiv
// or udiv with a 0 or (signed) -1 divisor, which LLVM leaves undefined: the divisor is made 1
// there and the answer selected (a / 0 = a % 0 = -1, a / -1 = 0 - a, wrapping). floor_div
// and remainder correct the truncated quotient where the remainder's sign is not the divisor's.

// ROUND: %q = fusion.floor_div %s, %b : tensor<1024xi16>
// ROUND: %c = fusion.full 200 : tensor<1024xui8>

// CHECK-LABEL: sched.kernel @ints_k0
// CHECK-DAG: arith.addi %{{.*}}, %{{.*}} : i16
// CHECK-DAG: arith.muli %{{.*}}, %{{.*}} : i32
// CHECK-DAG: arith.maxui %{{.*}}, %{{.*}} : i8
// CHECK-DAG: arith.minsi %{{.*}}, %{{.*}} : i16
// CHECK-DAG: arith.constant -56 : i8
// CHECK-DAG: arith.cmpi ult, %{{.*}}, %{{.*}} : i8
// CHECK-DAG: arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// CHECK-DAG: %[[Z:.*]] = arith.cmpi eq, %[[B:.*]], %{{.*}} : i16
// CHECK-DAG: %[[SAFE:.*]] = arith.select %{{.*}}, %{{.*}}, %[[B]] : i16
// CHECK-DAG: arith.divsi %{{.*}}, %[[SAFE]] : i16
// CHECK-DAG: arith.remsi %{{.*}}, %[[SAFE]] : i16
// CHECK-DAG: arith.remui %{{.*}}, %{{.*}} : i8
// CHECK-DAG: arith.subi %{{.*}}, %{{.*}} : i32

// LLVM-LABEL: define ptx_kernel void @ints_k0
// LLVM-DAG: sdiv i16
// LLVM-DAG: urem i8
// LLVM-DAG: icmp ult i8

// PTX-LABEL: .entry ints_k0
// PTX-DAG: div.s16
// PTX-DAG: rem.u16
// PTX-DAG: rem.s16

func.func @ints(%s: tensor<1024xi16>, %b: tensor<1024xi16>, %u: tensor<1024xui8>, %v: tensor<1024xui8>, %w: tensor<1024xi32>, %m: tensor<1024xi1>) -> (tensor<1024xi16>, tensor<1024xui8>, tensor<1024xi32>, tensor<1024xi1>, tensor<1024xi16>) {
  %a = fusion.add %s, %b : tensor<1024xi16>
  %q = fusion.floor_div %s, %b : tensor<1024xi16>
  %r = fusion.remainder %q, %a : tensor<1024xi16>
  %n = fusion.min %r, %s : tensor<1024xi16>
  %c = fusion.full 200 : tensor<1024xui8>
  %x = fusion.max %u, %c : tensor<1024xui8>
  %f = fusion.fmod %x, %v : tensor<1024xui8>
  %lt = fusion.cmp lt, %u, %v : tensor<1024xui8>
  %y = fusion.where %lt, %f, %u : tensor<1024xui8>
  %p = fusion.mul %w, %w : tensor<1024xi32>
  %g = fusion.neg %p : tensor<1024xi32>
  %k = fusion.abs %g : tensor<1024xi32>
  %ml = fusion.cmp gt, %m, %lt : tensor<1024xi1>
  %t = fusion.trunc_div %n, %s : tensor<1024xi16>
  func.return %t, %y, %k, %ml, %q : tensor<1024xi16>, tensor<1024xui8>, tensor<1024xi32>, tensor<1024xi1>, tensor<1024xi16>
}
