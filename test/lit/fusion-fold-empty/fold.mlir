// RUN: fuser-opt %s -p fusion-fold-empty | filecheck %s
// RUN: fuser-opt %s -p to-sched | filecheck %s --check-prefix=SCHED

// Values with no elements fold away (issue 32): an empty result is a fusion.full, a reduction
// over an empty dim its identity, a matmul with K = 0 zeros, a pad of an empty tensor its value,
// a cat drops its empty operands. No op is left reading an empty value, and no kernel runs for
// the empty outputs (the runtime allocates them with no memory).

// CHECK-LABEL: func.func @reductions
// CHECK-DAG: %e = fusion.full 0.0 : tensor<3x0xf32>
// CHECK-DAG: %s = fusion.full 0.0 : tensor<3xf32>
// CHECK-DAG: %p = fusion.full 1.0 : tensor<3xf32>
// CHECK-DAG: %mx = fusion.full -inf : tensor<3xf32>
// CHECK-DAG: %mi = fusion.full 2147483647 : tensor<3xi32>
// CHECK-DAG: %an = fusion.full 0 : tensor<3xi1>
// CHECK-DAG: %al = fusion.full 1 : tensor<3xi1>
// CHECK-DAG: %am = fusion.full 0 : tensor<3xi64>
// CHECK-DAG: %var = fusion.full nan : tensor<3xf32>
// CHECK-NOT: fusion.reduce
// CHECK-NOT: fusion.exp
// CHECK: func.return %e, %s, %p, %mx, %mi, %an, %al, %am, %var
func.func @reductions(%x: tensor<3x0xf32>, %i: tensor<3x0xi32>) -> (tensor<3x0xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>, tensor<3xi1>, tensor<3xi1>, tensor<3xi64>, tensor<3xf32>) {
  %e = fusion.exp %x : tensor<3x0xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<3x0xf32> to tensor<3xf32>
  %p = fusion.reduce prod %x dims [1] : tensor<3x0xf32> to tensor<3xf32>
  %mx = fusion.reduce max %x dims [1] : tensor<3x0xf32> to tensor<3xf32>
  %mi = fusion.reduce min %i dims [1] : tensor<3x0xi32> to tensor<3xi32>
  %an = fusion.reduce any %x dims [1] : tensor<3x0xf32> to tensor<3xi1>
  %al = fusion.reduce all %x dims [1] : tensor<3x0xf32> to tensor<3xi1>
  %am = fusion.reduce argmax %x dims [1] : tensor<3x0xf32> to tensor<3xi64>
  %var, %mean = fusion.var_mean %x dims [1] correction 1 : tensor<3x0xf32> to tensor<3xf32>, tensor<3xf32>
  func.return %e, %s, %p, %mx, %mi, %an, %al, %am, %var : tensor<3x0xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>, tensor<3xi1>, tensor<3xi1>, tensor<3xi64>, tensor<3xf32>
}

// CHECK-LABEL: func.func @moves
// CHECK: %c = fusion.cat %a, %b dim 0 : tensor<2x4xbf16>, tensor<3x4xbf16> to tensor<5x4xbf16>
// CHECK: %[[V:.*]] = fusion.full 7.0 : tensor<bf16>
// CHECK: %p = fusion.broadcast %[[V]] dims [0, 1] : tensor<bf16> to tensor<2x4xbf16>
// CHECK: %m = fusion.full 0.0 : tensor<2x4xf32>
// CHECK: func.return %c, %p, %m
func.func @moves(%a: tensor<2x4xbf16>, %z: tensor<0x4xbf16>, %b: tensor<3x4xbf16>, %k: tensor<2x0xbf16>, %l: tensor<0x4xbf16>) -> (tensor<5x4xbf16>, tensor<2x4xbf16>, tensor<2x4xf32>) {
  %c = fusion.cat %a, %z, %b dim 0 : tensor<2x4xbf16>, tensor<0x4xbf16>, tensor<3x4xbf16> to tensor<5x4xbf16>
  %v = fusion.full 7.0 : tensor<bf16>
  %p = fusion.pad %z, %v low [1, 0] high [1, 0] : tensor<0x4xbf16> to tensor<2x4xbf16>
  %m = fusion.matmul %k, %l : tensor<2x0xbf16>, tensor<0x4xbf16> -> tensor<2x4xf32>
  func.return %c, %p, %m : tensor<5x4xbf16>, tensor<2x4xbf16>, tensor<2x4xf32>
}

// An empty output gets a buffer and no kernel.
// SCHED-LABEL: func.func @only_empty
// SCHED-SAME: (%x: memref<0x8xf32>, %y: memref<0x8xf32>)
// SCHED-NOT: sched.launch
// SCHED: func.return
func.func @only_empty(%x: tensor<0x8xf32>) -> tensor<0x8xf32> {
  %y = fusion.relu %x : tensor<0x8xf32>
  func.return %y : tensor<0x8xf32>
}
