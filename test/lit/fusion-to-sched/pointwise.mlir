// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{block=128}' | filecheck %s --check-prefix=BLOCK

// A pointwise fusion with a broadcast bias becomes one kernel (gelu-tanh as x/(1+exp(-2u))): a grid-stride loop over
// 16-byte vectors of the output, with the bias read as a vector along the kept last dim.
// CHECK-LABEL: sched.kernel @bias_gelu_k0
// CHECK-SAME:    grid [1056, 1, 1] block [256, 1, 1]
// CHECK:         sched.for bind(grid.x) %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-DAG:       sched.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<1024x4096xf32> -> vector<4xf32>
// CHECK-DAG:       sched.load %{{.*}}[%{{.*}}] : memref<4096xf32> -> vector<4xf32>
// CHECK:           math.exp
// CHECK:           sched.store %{{.*}} : vector<4xf32>, memref<1024x4096xf32>
// CHECK:       func.func @bias_gelu(%{{.*}}: memref<1024x4096xf32>, %{{.*}}: memref<1024x4096xf32>, %{{.*}}: memref<4096xf32>, %{{.*}}: memref<1024x4096xf32>)
// CHECK-SAME:    fuser.num_outputs = 1
// CHECK-NEXT:    sched.launch @bias_gelu_k0
// BLOCK: block [128, 1, 1]
func.func @bias_gelu(%x: tensor<1024x4096xf32>, %y: tensor<1024x4096xf32>, %b: tensor<4096xf32>) -> tensor<1024x4096xf32> {
  %xy = fusion.mul %x, %y : tensor<1024x4096xf32>
  %bb = fusion.broadcast %b dims [0] : tensor<4096xf32> to tensor<1024x4096xf32>
  %s = fusion.add %xy, %bb : tensor<1024x4096xf32>
  %g = fusion.gelu %s {approximate = "tanh"} : tensor<1024x4096xf32>
  func.return %g : tensor<1024x4096xf32>
}

// -----
// bf16 in and out: 8 lanes per 16-byte access, compute in f32, round on store.
// CHECK-LABEL: sched.kernel @scale_k0
// CHECK:         sched.load %{{.*}} : memref<1000x64xbf16> -> vector<8xbf16>
// CHECK:         arith.extf %{{.*}} : bf16 to f32
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK:         sched.store %{{.*}} : vector<8xbf16>, memref<1000x64xbf16>
func.func @scale(%x: tensor<1000x64xbf16>) -> tensor<1000x64xbf16> {
  %c = fusion.full 2.0 : tensor<1000x64xbf16>
  %y = fusion.mul %x, %c : tensor<1000x64xbf16>
  func.return %y : tensor<1000x64xbf16>
}

// -----
// An odd last extent cannot be vectorized: scalar accesses, still one kernel.
// CHECK-LABEL: sched.kernel @odd_k0
// CHECK:         sched.load %{{.*}} : memref<3x5xf32> -> f32
// CHECK-NOT:     vector<
func.func @odd(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = fusion.exp %x : tensor<3x5xf32>
  func.return %y : tensor<3x5xf32>
}
