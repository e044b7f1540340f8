// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched,sched-verify-buffers | filecheck %s

// Multi-output fusions: every output is computed where it is stored, and every other use of it
// computes it too; no kernel reads back an output buffer. (An output read back from its own
// buffer returned garbage on the GPU, silently.)

// An output another output reads: tanh(x) is computed once, multiplied, and both are stored.
// CHECK-LABEL: sched.kernel @feeds_k0
// CHECK:         sched.load
// CHECK-NOT:     sched.load
// CHECK:         math.tanh
// CHECK-NOT:     sched.load
// CHECK:         arith.mulf
// CHECK:         sched.store
// CHECK:         sched.store
// CHECK:       func.func @feeds(%x: memref<31x33xf32>, %y: memref<31x33xf32>, %t: memref<31x33xf32>)
// CHECK-NEXT:    sched.launch @feeds_k0(%y, %t, %x)
// CHECK-NEXT:    func.return
func.func @feeds(%x: tensor<31x33xf32>) -> (tensor<31x33xf32>, tensor<31x33xf32>) {
  %t = fusion.tanh %x : tensor<31x33xf32>
  %y = fusion.mul %x, %t : tensor<31x33xf32>
  func.return %y, %t : tensor<31x33xf32>, tensor<31x33xf32>
}

// -----
// A value returned twice is stored once and copied into the second output.
// CHECK-LABEL: sched.kernel @twice_k1
// CHECK:         %[[V:.*]] = sched.load %0
// CHECK:         sched.store %[[V]], %1
// CHECK:       func.func @twice(%x: memref<31x33xf32>, %c: memref<31x33xf16>, %c_1: memref<31x33xf16>)
// CHECK-NEXT:    sched.launch @twice_k0(%c, %x)
// CHECK-NEXT:    sched.launch @twice_k1(%c, %c_1)
// CHECK-NEXT:    func.return
func.func @twice(%x: tensor<31x33xf32>) -> (tensor<31x33xf16>, tensor<31x33xf16>) {
  %c = fusion.cast %x : tensor<31x33xf32> to tensor<31x33xf16>
  func.return %c, %c : tensor<31x33xf16>, tensor<31x33xf16>
}

// -----
// An input returned as is: copied into its output, never written in place.
// CHECK-LABEL: func.func @passthrough(%x: memref<5x7xf32>, %e: memref<5x7xf32>, %x_1: memref<5x7xf32>)
// CHECK-NEXT:    sched.launch @passthrough_k0(%e, %x)
// CHECK-NEXT:    sched.launch @passthrough_k1(%x, %x_1)
// CHECK-NEXT:    func.return
func.func @passthrough(%x: tensor<5x7xf32>) -> (tensor<5x7xf32>, tensor<5x7xf32>) {
  %e = fusion.exp %x : tensor<5x7xf32>
  func.return %e, %x : tensor<5x7xf32>, tensor<5x7xf32>
}

// -----
// An output that is also a reduction's input: the reduction computes tanh(x) itself rather
// than reading the output buffer another kernel writes.
// CHECK-LABEL: sched.kernel @feeds_sum_k0
// CHECK:         math.tanh
// CHECK-LABEL: sched.kernel @feeds_sum_k1
// CHECK:         math.tanh
// CHECK:       func.func @feeds_sum(%x: memref<64x96xf32>, %t: memref<64x96xf32>, %s: memref<64xf32>)
// CHECK-NEXT:    sched.launch @feeds_sum_k0(%t, %x)
// CHECK-NEXT:    sched.launch @feeds_sum_k1(%s, %x)
func.func @feeds_sum(%x: tensor<64x96xf32>) -> (tensor<64x96xf32>, tensor<64xf32>) {
  %t = fusion.tanh %x : tensor<64x96xf32>
  %s = fusion.reduce sum %t dims [1] : tensor<64x96xf32> to tensor<64xf32>
  func.return %t, %s : tensor<64x96xf32>, tensor<64xf32>
}

// -----
// Outputs of different shapes fed by one value: each kernel computes exp(x).
// CHECK-LABEL: sched.kernel @shapes_k0
// CHECK:         math.exp
// CHECK-LABEL: sched.kernel @shapes_k1
// CHECK:         math.exp
// CHECK:       func.func @shapes(%x: memref<8x16xf32>, %e: memref<8x16xf32>, %r: memref<128xf32>)
func.func @shapes(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<128xf32>) {
  %e = fusion.exp %x : tensor<8x16xf32>
  %r = fusion.reshape %e : tensor<8x16xf32> to tensor<128xf32>
  func.return %e, %r : tensor<8x16xf32>, tensor<128xf32>
}

// -----
// A reduction's epilogue with one output feeding another: both computed from the sum in
// registers, in the reduction's own kernel.
// CHECK-LABEL: sched.kernel @chain_k0
// CHECK:       func.func @chain(%x: memref<64x96xf32>, %a: memref<64xf32>, %b: memref<64xf32>)
// CHECK-NEXT:    sched.launch @chain_k0(
// CHECK-NEXT:    func.return
func.func @chain(%x: tensor<64x96xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %s = fusion.reduce sum %x dims [1] : tensor<64x96xf32> to tensor<64xf32>
  %a = fusion.exp %s : tensor<64xf32>
  %b = fusion.neg %a : tensor<64xf32>
  func.return %a, %b : tensor<64xf32>, tensor<64xf32>
}
