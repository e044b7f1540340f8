// RUN: fuser-opt %s -p default -t ptx | filecheck %s

// i16 negation and abs leave the PTX as a complement and an add (lowering/target/ptx.py): on an
// H100, neg.s16 and abs.s16 of -32768 were read by a following shr.s16 or a division's
// mul.hi.s16 as +32768 (GPU fuzz seeds 9311602, 708886357).
// CHECK-NOT:   neg.s16
// CHECK-NOT:   abs.s16
// CHECK:       not.b16 [[T:%rs[0-9]+]], %rs{{[0-9]+}};
// CHECK-NEXT:  add.s16 [[T]], [[T]], 1;
// CHECK:       shr.s16
// CHECK:       setp.lt.s16 %abs_p
// CHECK-NOT:   neg.s16
// CHECK-NOT:   abs.s16
func.func @neg_then_shift(%x: tensor<1024xi16>) -> (tensor<1024xi16>, tensor<1024xi16>) {
  %m = fusion.neg %x : tensor<1024xi16>
  %s = fusion.full 3 : tensor<1024xi16>
  %r = fusion.bitwise_right_shift %m, %s : tensor<1024xi16>
  %a = fusion.abs %x : tensor<1024xi16>
  %d = fusion.full 3 : tensor<1024xi16>
  %q = fusion.remainder %a, %d : tensor<1024xi16>
  func.return %r, %q : tensor<1024xi16>, tensor<1024xi16>
}
