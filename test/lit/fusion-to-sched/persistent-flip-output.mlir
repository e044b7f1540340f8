// RUN: fuser-opt %s -p "to-sched{block=128}" | filecheck %s

// A flip of a row value is both an output of a persistent normalization kernel and a row it
// keeps in shared memory (a reduction reads it): the copy computes the row (the flipped cast of
// x * x * 4), it does not load the output's buffer, which the kernel has not written yet (CPU
// fuzz seed 11290006: sched-verify-buffers refused the kernel). (A row that only an output reads
// is not copied: then there was no reduction of %f.)
// CHECK:     sched.kernel @flip_out_k0(%{{[0-9]+}} : memref<5xf64>, %{{[0-9]+}} : memref<5xi32>, %{{[0-9]+}} : memref<5xi8>, %[[OUT:[0-9]+]] : memref<5x3000xi32>
// CHECK-SAME: persistent: {{.*}} in {{[0-9]+}} bytes of shared memory
// CHECK:     %row_f = sched.alloc
// CHECK-NOT: sched.load %[[OUT]][
// CHECK:     sched.store %{{.*}}, %[[OUT]][
func.func @flip_out(%x: tensor<5x3000xf32>, %y: tensor<5x3000xf64>, %z: tensor<5x3000xf64>) -> (tensor<5x3000xi32>, tensor<5xi8>, tensor<5xf64>, tensor<5xi32>) {
  %m = fusion.mul %x, %x : tensor<5x3000xf32>
  %r = fusion.reduce max %m dims [1] : tensor<5x3000xf32> to tensor<5xf32>
  %ri = fusion.cast %r : tensor<5xf32> to tensor<5xi8>
  %c = fusion.full 4.0 : tensor<5x3000xf32>
  %s = fusion.mul %m, %c : tensor<5x3000xf32>
  %i = fusion.cast %s : tensor<5x3000xf32> to tensor<5x3000xi32>
  %f = fusion.flip %i dims [1] : tensor<5x3000xi32> to tensor<5x3000xi32>
  %k = fusion.full 0.761 : tensor<5x3000xf64>
  %ne = fusion.cmp ne, %y, %k : tensor<5x3000xf64>
  %w = fusion.where %ne, %y, %z : tensor<5x3000xf64>
  %t = fusion.tanh %w : tensor<5x3000xf64>
  %h = fusion.mul %t, %k : tensor<5x3000xf64>
  %e = fusion.erfcinv %h : tensor<5x3000xf64>
  %q = fusion.reduce max %e dims [1] : tensor<5x3000xf64> to tensor<5xf64>
  %fm = fusion.reduce max %f dims [1] : tensor<5x3000xi32> to tensor<5xi32>
  func.return %f, %ri, %q, %fm : tensor<5x3000xi32>, tensor<5xi8>, tensor<5xf64>, tensor<5xi32>
}
