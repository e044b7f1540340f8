// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX
// RUN: fuser-opt %s -p 'fusion-segment,convert-fusion-to-sched{vector=4}' | filecheck %s --check-prefix=VEC

// iota and the random numbers (issue 31). An element's value comes from its row-major linear
// index: iota is start + i * step (an i64 multiply-add, truncated to i32); uniform and normal
// take the seed and offset, 0-d i64 inputs loaded at the empty index, as Philox 4x32-10's key
// and counter words 2-3, with block i / 4 in counter words 0-1. Each of the ten rounds is two
// arith.mului_extended (mul.lo + mul.hi.u32 in the PTX, never a 64-bit multiply). The 1024-wide
// uniform is computed in whole blocks (one Philox per 4 lanes); the 7x9 one element by element,
// each picking its word with selects. 24 bits of the word make the f32 uniform (x 2^-24), then
// u * (high - low) + low, a multiply and an add (no fma: the reference rounds each).

// ROUND: %u = fusion.uniform %seed, %off low -1.5 high 2.0 : tensor<7x9xf32>
// ROUND: %n = fusion.normal %seed, %off mean 0.5 std 2.0 : tensor<5xbf16>
// ROUND: %i = fusion.iota start 3 step -2 : tensor<10xi32>
// ROUND: %h = fusion.iota start 0.5 step 0.25 : tensor<6xf16>

// CHECK-LABEL: sched.kernel @rng_k0
// CHECK: sched.load %{{.*}}[] : memref<i64> -> i64
// CHECK-COUNT-20: arith.mului_extended %{{.*}}, %{{.*}} : i32
// CHECK: arith.shrui %{{.*}}, %{{.*}} : i32
// CHECK: arith.uitofp %{{.*}} : i32 to f32
// CHECK-LABEL: sched.kernel @rng_k2
// CHECK: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.trunci %{{.*}} : i64 to i32

// VEC-LABEL: sched.kernel @rng_k4
// VEC-COUNT-20: arith.mului_extended
// VEC-NOT: arith.mului_extended
// VEC: sched.store %{{.*}} : vector<4xf32>, memref<256x1024xf32>

// PTX-LABEL: .entry rng_k0
// PTX-NOT: mul.lo.s64
// PTX: mul.hi.u32
// PTX-NOT: fma.rn.f32
// PTX: mul.rn.f32
// PTX: add.rn.f32
// PTX: .entry rng_k1

func.func @rng(%seed: tensor<i64>, %off: tensor<i64>) -> (tensor<7x9xf32>, tensor<5xbf16>, tensor<10xi32>, tensor<6xf16>, tensor<256x1024xf32>) {
  %u = fusion.uniform %seed, %off low -1.5 high 2 : tensor<7x9xf32>
  %n = fusion.normal %seed, %off mean 0.5 std 2.0 : tensor<5xbf16>
  %i = fusion.iota start 3 step -2 : tensor<10xi32>
  %h = fusion.iota start 0.5 step 0.25 : tensor<6xf16>
  %w = fusion.uniform %seed, %off low 0.0 high 1.0 : tensor<256x1024xf32>
  func.return %u, %n, %i, %h, %w : tensor<7x9xf32>, tensor<5xbf16>, tensor<10xi32>, tensor<6xf16>, tensor<256x1024xf32>
}
