// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// Bitwise ops, shifts and gcd (issue 31). and/or/xor/not are arith's (of i1 masks: the logical
// ones; not is an xor with all ones). A shift never reaches LLVM with an amount of the width or
// more (poison there; a negative amount is such, read unsigned): the amount is made 0 and the
// answer selected, 0 for a left or logical shift, the sign (a >> width - 1) for an arithmetic
// one, as torch defines them; u8 shifts right logically. gcd is Euclid's algorithm in an scf.for
// of the worst-case step count for the width (12 for i8, 93 for i64; Lame), its divisor never 0.

// ROUND: %l = fusion.bitwise_left_shift %a, %s : tensor<1024xi8>
// ROUND: %g = fusion.gcd %w, %v : tensor<1024xi64>

// CHECK-LABEL: sched.kernel @bits_k0
// CHECK-DAG: %[[IN:.*]] = arith.cmpi ult, %[[S:.*]], %{{.*}} : i8
// CHECK-DAG: %[[SAFE:.*]] = arith.select %[[IN]], %[[S]], %{{.*}} : i8
// CHECK-DAG: arith.shli %{{.*}}, %[[SAFE]] : i8
// CHECK-DAG: arith.shrsi %{{.*}}, %{{.*}} : i8
// CHECK-DAG: arith.shrui %{{.*}}, %{{.*}} : i8
// CHECK-DAG: arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-DAG: arith.xori %{{.*}}, %{{.*}} : i8
// CHECK-DAG: arith.ori %{{.*}}, %{{.*}} : i8
// CHECK-DAG: %{{.*}}, %{{.*}} = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (i64, i64)
// CHECK-DAG: arith.remsi %{{.*}}, %{{.*}} : i64

// PTX-LABEL: .entry bits_k0
// PTX-DAG: shl.b16
// PTX-DAG: shr.s16
// PTX-DAG: rem.s64

func.func @bits(%a: tensor<1024xi8>, %s: tensor<1024xi8>, %u: tensor<1024xui8>, %m: tensor<1024xi1>, %k: tensor<1024xi1>, %w: tensor<1024xi64>, %v: tensor<1024xi64>) -> (tensor<1024xi8>, tensor<1024xui8>, tensor<1024xi1>, tensor<1024xi64>) {
  %l = fusion.bitwise_left_shift %a, %s : tensor<1024xi8>
  %r = fusion.bitwise_right_shift %l, %s : tensor<1024xi8>
  %x = fusion.bitwise_xor %r, %a : tensor<1024xi8>
  %n = fusion.bitwise_not %x : tensor<1024xi8>
  %o = fusion.bitwise_or %n, %s : tensor<1024xi8>
  %su = fusion.bitwise_right_shift %u, %u : tensor<1024xui8>
  %lr = fusion.logical_right_shift %o, %a : tensor<1024xi8>
  %mk = fusion.bitwise_and %m, %k : tensor<1024xi1>
  %g = fusion.gcd %w, %v : tensor<1024xi64>
  func.return %lr, %su, %mk, %g : tensor<1024xi8>, tensor<1024xui8>, tensor<1024xi1>, tensor<1024xi64>
}
