// RUN: fuser-opt %s --split-input-file -p fusion-widen-floats | filecheck %s

// A bf16 chain is computed in f32: each argument is widened once (x read by the mul and the
// where), a broadcast of an argument is widened after it, a where and a permute of a widened
// value take its f32 value, and a cast to f32 of one is that value itself. What leaves the chain
// is rounded once: the returned bf16 values, and the reduction's input (reductions read the
// rounded value).
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[X:.*]] = fusion.cast %x : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT:    %[[Y:.*]] = fusion.cast %y : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT:    %[[M:.*]] = fusion.mul %[[X]], %[[Y]] : tensor<4x8xf32>
// CHECK-NEXT:    %[[T:.*]] = fusion.tanh %[[M]] : tensor<4x8xf32>
// CHECK-NEXT:    %[[BB:.*]] = fusion.broadcast %b dims [0] : tensor<8xbf16> to tensor<4x8xbf16>
// CHECK-NEXT:    %[[BW:.*]] = fusion.cast %[[BB]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT:    %[[S:.*]] = fusion.add %[[T]], %[[BW]] : tensor<4x8xf32>
// CHECK-NEXT:    %[[SR:.*]] = fusion.cast %[[S]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT:    %[[W:.*]] = fusion.where %c, %[[S]], %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    %[[WR:.*]] = fusion.cast %[[W]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT:    %[[P:.*]] = fusion.permute %[[S]] [1, 0] : tensor<4x8xf32> to tensor<8x4xf32>
// CHECK-NEXT:    %[[PR:.*]] = fusion.cast %[[P]] : tensor<8x4xf32> to tensor<8x4xbf16>
// CHECK-NEXT:    %[[R:.*]] = fusion.reduce sum %[[SR]] dims [1] keepdim : tensor<4x8xbf16> to tensor<4x1xf32>
// CHECK-NEXT:    func.return %[[WR]], %[[W]], %[[PR]], %[[R]]
func.func @chain(%x: tensor<4x8xbf16>, %y: tensor<4x8xbf16>, %b: tensor<8xbf16>, %c: tensor<4x8xi1>) -> (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<8x4xbf16>, tensor<4x1xf32>) {
  %a = fusion.mul %x, %y : tensor<4x8xbf16>
  %t = fusion.tanh %a : tensor<4x8xbf16>
  %bb = fusion.broadcast %b dims [0] : tensor<8xbf16> to tensor<4x8xbf16>
  %s = fusion.add %t, %bb : tensor<4x8xbf16>
  %w = fusion.where %c, %s, %x : tensor<4x8xbf16>
  %f = fusion.cast %w : tensor<4x8xbf16> to tensor<4x8xf32>
  %p = fusion.permute %s [1, 0] : tensor<4x8xbf16> to tensor<8x4xbf16>
  %r = fusion.reduce sum %s dims [1] keepdim : tensor<4x8xbf16> to tensor<4x1xf32>
  func.return %w, %f, %p, %r : tensor<4x8xbf16>, tensor<4x8xf32>, tensor<8x4xbf16>, tensor<4x1xf32>
}

// -----

// f16 too; a cast of a widened value to another narrow type is made from the f32 value (one
// rounding, not two; the f16 rounding no op reads is gone); f32 math, integers and nextafter
// (one ulp of its own type) stay as they are.
// CHECK-LABEL: func.func @kept
// CHECK-NEXT:    %[[H:.*]] = fusion.cast %h : tensor<16xf16> to tensor<16xf32>
// CHECK-NEXT:    %[[E:.*]] = fusion.exp %[[H]] : tensor<16xf32>
// CHECK-NEXT:    %[[B:.*]] = fusion.cast %[[E]] : tensor<16xf32> to tensor<16xbf16>
// CHECK-NEXT:    %[[N:.*]] = fusion.nextafter %[[B]], %[[B]] : tensor<16xbf16>
// CHECK-NEXT:    %[[F:.*]] = fusion.neg %f : tensor<16xf32>
// CHECK-NEXT:    %[[I:.*]] = fusion.add %i, %i : tensor<16xi32>
// CHECK-NEXT:    func.return %[[N]], %[[F]], %[[I]]
func.func @kept(%h: tensor<16xf16>, %f: tensor<16xf32>, %i: tensor<16xi32>) -> (tensor<16xbf16>, tensor<16xf32>, tensor<16xi32>) {
  %e = fusion.exp %h : tensor<16xf16>
  %b = fusion.cast %e : tensor<16xf16> to tensor<16xbf16>
  %n = fusion.nextafter %b, %b : tensor<16xbf16>
  %nf = fusion.neg %f : tensor<16xf32>
  %ii = fusion.add %i, %i : tensor<16xi32>
  func.return %n, %nf, %ii : tensor<16xbf16>, tensor<16xf32>, tensor<16xi32>
}
