// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// With --verify-diagnostics, a chunk with `expected-*` annotations must produce exactly the
// diagnostics they name: fuser-opt exits 0 here, and prints nothing for those chunks.

// CHECK:      {{^}}//{{ }}-----{{$}}
// CHECK-NEXT: {{^}}//{{ }}-----{{$}}
// CHECK-NEXT: {{^}}//{{ }}-----{{$}}
// CHECK-NEXT: {{^}}//{{ }}-----{{$}}
// CHECK-NEXT: {{^}}//{{ }}-----{{$}}
// CHECK-NEXT: {{^}}//{{ }}-----{{$}}

sched.kernel @shfl() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %v = arith.constant 1.0 : f32
  %r = sched.shfl_xor %v, 3 : f32 // expected-error {{offset 3 must be 1, 2, 4, 8 or 16}}
  sched.return
}

// -----

// expected-error@+1 {{'sched.kernel' op @big: block of 2048 threads exceeds 1024}}
sched.kernel @big() grid [1, 1, 1] block [1024, 2, 1] smem 0 {
  sched.return
}

// -----

sched.kernel @idx(%x : memref<4x8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %v = sched.load %x[%c0] : memref<4x8xf32> -> f32
  // expected-error@-1 {{has 1 indices for the rank-2 buffer}}
  sched.return
}

// -----

sched.kernel @gal() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  // @below and @above: the nearest line that is not an annotation itself.
  // expected-error@below {{must be in shared (3) or register (5) space}}
  %s = sched.alloc : memref<8xf32>
  sched.return
}

// -----

sched.kernel @vecst(%x : memref<6xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %v = arith.constant dense<0.0> : vector<4xf32>
  sched.store %v, %x[%c0] : vector<4xf32>, memref<6xf32>
  // expected-error@above {{vector of 4 does not divide the last extent 6}}
  sched.return
}

// -----

// A parse error is matched on its first line.
// expected-error@+1 {{type expected}}
%x = arith.constant 1.0 : f33

// -----

// A chunk with no annotations keeps the old behaviour: its diagnostic goes to stdout for FileCheck.
sched.kernel @elt(%x : memref<8xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  // CHECK-NEXT: verify-diagnostics.mlir:[[# @LINE + 1]]:3: error: 'sched.load' op value type f16 differs from the buffer's element type f32
  %v = sched.load %x[%c0] : memref<8xf32> -> f16
  sched.return
}
