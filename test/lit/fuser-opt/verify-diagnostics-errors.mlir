// RUN: not fuser-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// Annotations that the diagnostics do not match: each mismatch is reported the mlir-opt way
// and fuser-opt exits 1 (hence `not`).

// An expected error on valid IR.
// CHECK: verify-diagnostics-errors.mlir:[[# @LINE + 2]]:6: error: expected error "no such error" was not produced
sched.kernel @ok() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  // expected-error@+1 {{no such error}}
  sched.return
}

// -----

// The right line, the wrong message: the error is unexpected and the annotation unmatched.
sched.kernel @shfl() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %v = arith.constant 1.0 : f32
  // CHECK: verify-diagnostics-errors.mlir:[[# @LINE + 2]]:3: error: unexpected error: 'sched.shfl_xor' op offset 3 must be 1, 2, 4, 8 or 16
  // CHECK: verify-diagnostics-errors.mlir:[[# @LINE + 1]]:38: error: expected error "offset 5" was not produced
  %r = sched.shfl_xor %v, 3 : f32 // expected-error {{offset 5}}
  sched.return
}

// -----

// The right message on the wrong line.
// CHECK: verify-diagnostics-errors.mlir:[[# @LINE + 3]]:1: error: unexpected error: 'sched.kernel' op @big: block of 2048 threads exceeds 1024
// CHECK: verify-diagnostics-errors.mlir:[[# @LINE + 1]]:4: error: expected error "exceeds 1024" was not produced
// expected-error@+2 {{exceeds 1024}}
sched.kernel @big() grid [1, 1, 1] block [1024, 2, 1] smem 0 {
  sched.return
}

// -----

// Another severity: fuser-opt's diagnostics are errors.
sched.kernel @gal() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  // CHECK: verify-diagnostics-errors.mlir:[[# @LINE + 3]]:3: error: unexpected error: 'sched.alloc' op result memref<8xf32> must be in shared (3) or register (5) space
  // CHECK: verify-diagnostics-errors.mlir:[[# @LINE + 1]]:6: error: expected warning "must be in shared" was not produced
  // expected-warning@+1 {{must be in shared}}
  %s = sched.alloc : memref<8xf32>
  sched.return
}

// -----

// An annotation that does not parse is an error of its own; the chunk still counts as annotated.
sched.kernel @gal() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  // CHECK: verify-diagnostics-errors.mlir:[[# @LINE + 2]]:6: error: malformed expected-error annotation; expected 'expected-{{.*}}'
  // CHECK: verify-diagnostics-errors.mlir:[[# @LINE + 2]]:3: error: unexpected error: 'sched.alloc' op result
  // expected-error@+1 {{must be in shared
  %s = sched.alloc : memref<8xf32>
  sched.return
}
