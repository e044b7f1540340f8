// RUN: fuser-opt %s --split-input-file --verify-diagnostics
// RUN: not fuser-opt %S/../../../examples/row_sum.mlir -p 'fusion-segment,convert-fusion-to-sched{split=70000}' 2>&1 | filecheck %s --check-prefix=SPLIT
// RUN: not fuser-opt %S/../../../examples/row_sum.mlir -p 'default{block=2048}' 2>&1 | filecheck %s --check-prefix=BLOCK
// RUN: fuser-opt %S/../../../examples/row_sum.mlir -p 'fusion-segment,convert-fusion-to-sched{split=65535 persistent=false}' | filecheck %s --check-prefix=MAXSPLIT

// A sched.kernel's launch geometry stays within CUDA's limits (grid.x 2^31-1, grid.y and
// grid.z 65535; block 1024x1024x64 and 1024 threads; clusters of 8 CTAs), and its name is a
// PTX identifier, so no scheduler and no hand-written kernel reaches a failing launch.

// expected-error@+1 {{'sched.kernel' op @gy: grid.y of 70000 exceeds 65535, CUDA's limit for grid.y}}
sched.kernel @gy() grid [1, 70000, 1] block [32, 1, 1] smem 0 {
  sched.return
}

// -----

// expected-error@+1 {{'sched.kernel' op @gz: grid.z of 65536 exceeds 65535, CUDA's limit for grid.z}}
sched.kernel @gz() grid [1, 1, 65536] block [32, 1, 1] smem 0 {
  sched.return
}

// -----

// expected-error@+1 {{'sched.kernel' op @gx: grid.x of 2147483648 exceeds 2147483647, CUDA's limit for grid.x}}
sched.kernel @gx() grid [2147483648, 1, 1] block [32, 1, 1] smem 0 {
  sched.return
}

// -----

// expected-error@+1 {{'sched.kernel' op @bz: block.z of 128 exceeds 64, CUDA's limit for block.z}}
sched.kernel @bz() grid [1, 1, 1] block [1, 1, 128] smem 0 {
  sched.return
}

// -----

// expected-error@+1 {{'sched.kernel' op @bx: block.x of 2048 exceeds 1024, CUDA's limit for block.x}}
sched.kernel @bx() grid [1, 1, 1] block [2048, 1, 1] smem 0 {
  sched.return
}

// -----

// expected-error@+1 {{'sched.kernel' op @cl: cluster [16, 1, 1] of 16 CTAs exceeds 8, CUDA's portable cluster size}}
sched.kernel @cl() grid [32, 1, 1] block [128, 1, 1] smem 0 cluster [16, 1, 1] {
  sched.return
}

// -----

// The largest extents are fine.
sched.kernel @max() grid [2147483647, 65535, 65535] block [16, 1, 64] smem 0 cluster [1, 1, 1] {
  sched.return
}
sched.kernel @cl8() grid [8, 1, 1] block [1024, 1, 1] smem 0 cluster [2, 2, 2] {
  sched.return
}

// -----

// expected-error@+1 {{'sched.kernel' op @"k-1": a kernel name must be a PTX identifier (letters, digits, '_', '$'; not starting with a digit)}}
sched.kernel @"k-1"() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  sched.return
}

// -----

// expected-error@+1 {{'sched.kernel' op @"1k": a kernel name must be a PTX identifier}}
sched.kernel @"1k"() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  sched.return
}

// SPLIT: error: bad options for pass 'convert-fusion-to-sched': split must be at most 65535 (a reduction's chunks are its grid.y, which CUDA limits to 65535), got 70000
// BLOCK: error: bad options for pass 'convert-fusion-to-sched': block must be at most 1024 (CUDA's limit on threads per block), got 2048
// MAXSPLIT: sched.kernel @row_stats_k0({{.*}}) grid [4097, 65535, 1]
