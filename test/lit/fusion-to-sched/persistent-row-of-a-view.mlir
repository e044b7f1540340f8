// RUN: fuser-opt %s -p "to-sched{block=128}" | filecheck %s

// A bf16 input read through a view (strides and an offset) is the row a persistent kernel keeps
// in shared memory: the row is evaluated through the view and stored as bf16, the buffer's
// type (GPU fuzz seed 11283004 stored the f32 values it computes in, and the kernel wrote
// wrong numbers; fuser-opt's verifier now names the store).
// CHECK:     sched.kernel @row_of_a_view_k0
// CHECK:     %row_x = sched.alloc {{.*}}: memref<1x30000xbf16, 3 : i64>
// CHECK:     sched.load %{{.*}} : memref<150007xbf16> -> bf16
// CHECK:     arith.truncf %{{.*}} : f32 to bf16
// CHECK:     sched.store %{{.*}}, %row_x[%{{.*}}, %{{.*}}] : vector<8xbf16>, memref<1x30000xbf16, 3 : i64>
func.func @row_of_a_view(%x: tensor<5x30000xbf16> {fusion.strides = array<i64: 30000, 1>, fusion.offset = 7 : i64}) -> tensor<5x30000xf16> {
  %f = fusion.cast %x : tensor<5x30000xbf16> to tensor<5x30000xf32>
  %s = fusion.reduce sum %f dims [1] : tensor<5x30000xf32> to tensor<5xf32>
  %b = fusion.broadcast %s dims [1] : tensor<5xf32> to tensor<5x30000xf32>
  %d = fusion.sub %f, %b : tensor<5x30000xf32>
  %h = fusion.cast %d : tensor<5x30000xf32> to tensor<5x30000xf16>
  func.return %h : tensor<5x30000xf16>
}
