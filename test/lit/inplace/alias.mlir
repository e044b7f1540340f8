// RUN: fuser-opt %s --split-input-file | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s --split-input-file -p to-sched | filecheck %s
// RUN: fuser-opt %s --split-input-file -p default | filecheck %s --check-prefix=NVVM

// In-place outputs (issue 32): `fusion.alias = I` on a result round-trips, and the schedule
// writes the result into argument I's buffer: the kernel stores through the input's pointer and
// the output's own argument is left unused (the runtime allocates nothing for it).

// ROUND: func.func @sgd(%p: tensor<37x5xf32>, %g: tensor<37x5xf32>) -> (tensor<37x5xf32> {fusion.alias = 0 : i64})
// CHECK: sched.kernel @sgd_k0(%[[P:.*]] : memref<37x5xf32>, %{{.*}} : memref<37x5xf32>)
// CHECK: sched.load %[[P]]
// CHECK: sched.store %{{.*}}, %[[P]]
// CHECK: func.func @sgd(%p: memref<37x5xf32>, %g: memref<37x5xf32>, %{{.*}}: memref<37x5xf32> {fusion.alias = 0 : i64}) attributes {fuser.num_outputs = 1 : i64} {
// CHECK-NEXT: sched.launch @sgd_k0(%p, %g)
// CHECK-NEXT: func.return
// NVVM: func.func @sgd(%p: memref<37x5xf32>, %g: memref<37x5xf32>, %{{.*}}: memref<37x5xf32> {fusion.alias = 0 : i64})
// NVVM: "gpu.launch_func"({{.*}}, %p, %g) <{kernel = @sgd_kernels::@sgd_k0
func.func @sgd(%p: tensor<37x5xf32>, %g: tensor<37x5xf32>) -> (tensor<37x5xf32> {fusion.alias = 0 : i64}) {
  %c = fusion.full 0.1 : tensor<37x5xf32>
  %s = fusion.mul %g, %c : tensor<37x5xf32>
  %n = fusion.sub %p, %s : tensor<37x5xf32>
  func.return %n : tensor<37x5xf32>
}

// -----

// A running statistic updated in the reduction's epilogue: the thread that finishes channel c
// loads running[c] and stores it, in one block at one index: in place.
// CHECK: sched.kernel @stats_k0(%[[R:.*]] : memref<3xf32>, %{{.*}} : memref<8x3x5x5xf32>)
// CHECK: %{{.*}} = sched.load %[[R]][%[[I:.*]]] : memref<3xf32> -> f32
// CHECK-NOT: scf.if
// CHECK: sched.store %{{.*}}, %[[R]][%[[I]]] : f32, memref<3xf32>
// CHECK: func.func @stats(%x: memref<8x3x5x5xf32>, %rm: memref<3xf32>, %{{.*}}: memref<3xf32> {fusion.alias = 1 : i64}) attributes {fuser.num_outputs = 1 : i64} {
// CHECK-NEXT: sched.launch @stats_k0(%rm, %x)
func.func @stats(%x: tensor<8x3x5x5xf32>, %rm: tensor<3xf32>) -> (tensor<3xf32> {fusion.alias = 1 : i64}) {
  %s = fusion.reduce sum %x dims [0, 2, 3] : tensor<8x3x5x5xf32> to tensor<3xf32>
  %c = fusion.full 0.9 : tensor<3xf32>
  %a = fusion.mul %rm, %c : tensor<3xf32>
  %n = fusion.add %a, %s : tensor<3xf32>
  func.return %n : tensor<3xf32>
}

// -----

// A flip into itself would read elements other threads write: the result is staged in a
// workspace and copied into the input by a last kernel.
// CHECK: func.func @flip(%x: memref<1000xf32>, %{{.*}}: memref<1000xf32> {fusion.alias = 0 : i64}) attributes {fuser.num_outputs = 1 : i64, fuser.staged_aliases = array<i64: 0>} {
// CHECK-NEXT: %[[W:.*]] = sched.workspace : memref<1000xf32>
// CHECK-NEXT: sched.launch @flip_k0(%[[W]], %x)
// CHECK-NEXT: sched.launch @flip_k1(%[[W]], %x)
func.func @flip(%x: tensor<1000xf32>) -> (tensor<1000xf32> {fusion.alias = 0 : i64}) {
  %n = fusion.flip %x dims [0] : tensor<1000xf32> to tensor<1000xf32>
  func.return %n : tensor<1000xf32>
}

// -----

// A reduction of the input beside its update: the reduction's kernel runs first (readers of an
// aliased input before its writer), then the update is written in place.
// CHECK: func.func @twice(%x: memref<1000xf32>, %{{.*}}: memref<1000xf32> {fusion.alias = 0 : i64}, %s: memref<f32>) attributes {fuser.num_outputs = 2 : i64} {
// CHECK-NEXT: sched.launch @twice_k0(%s, %x)
// CHECK-NEXT: sched.launch @twice_k1(%x)
// CHECK-NEXT: func.return
func.func @twice(%x: tensor<1000xf32>) -> (tensor<1000xf32> {fusion.alias = 0 : i64}, tensor<f32>) {
  %c = fusion.full 2.0 : tensor<1000xf32>
  %n = fusion.mul %x, %c : tensor<1000xf32>
  %s = fusion.reduce sum %x dims [0] : tensor<1000xf32> to tensor<f32>
  func.return %n, %s : tensor<1000xf32>, tensor<f32>
}
