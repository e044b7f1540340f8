// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

sched.kernel @bar(%x : memref<4xf32>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %b = sched.alloc : memref<4xi32, 3>
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.mbarrier.init' op barrier operand must be a 1-D shared-memory i64 buffer (memref<Nxi64, 3>), got memref<4xi32, 3 : i64>
  sched.mbarrier.init %b[%c0], 1 : memref<4xi32, 3>
  sched.return
}

// -----

sched.kernel @count() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %b = sched.alloc : memref<4xi64, 3>
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.mbarrier.init' op count 0 must be in 1 .. 2^20-1
  sched.mbarrier.init %b[%c0], 0 : memref<4xi64, 3>
  sched.return
}

// -----

// CHECK: error: !sched.tensor_map: the box's inner extent spans 256 bytes, more than the 128-byte swizzle
sched.kernel @box(%tm : !sched.tensor_map<memref<64x256xbf16>, box [64, 128], swizzle 128>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  sched.return
}

// -----

// CHECK: error: !sched.tensor_map: rows of memref<64x100xbf16> are 200 bytes apart; TMA needs a multiple of 16 (the inner extent must be a multiple of 8 elements)
sched.kernel @stride(%tm : !sched.tensor_map<memref<64x100xbf16>, box [64, 64], swizzle 128>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  sched.return
}

// -----

sched.kernel @tma(%tm : !sched.tensor_map<memref<64x64xbf16>, box [64, 64], swizzle 128>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %s = sched.alloc : memref<64x64xf16, 3>
  %b = sched.alloc : memref<1xi64, 3>
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.tma.load' op destination element type f16 differs from the tensor map's bf16
  sched.tma.load %tm[%c0, %c0], %s[%c0, %c0], %b[%c0] : !sched.tensor_map<memref<64x64xbf16>, box [64, 64], swizzle 128>, memref<64x64xf16, 3>, memref<1xi64, 3>
  sched.return
}

// -----

sched.kernel @tmag(%tm : !sched.tensor_map<memref<64x64xbf16>, box [64, 64], swizzle 128>, %g : memref<64x64xbf16>) grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %b = sched.alloc : memref<1xi64, 3>
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.tma.load' op destination (operand 'dst') must be a shared-memory (space 3) memref, got memref<64x64xbf16>
  sched.tma.load %tm[%c0, %c0], %g[%c0, %c0], %b[%c0] : !sched.tensor_map<memref<64x64xbf16>, box [64, 64], swizzle 128>, memref<64x64xbf16>, memref<1xi64, 3>
  sched.return
}

// -----

sched.kernel @mma() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %d = arith.constant 0 : i64
  %z = arith.constant dense<0.0> : vector<32xf32>
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.wgmma.mma_async' op operand #2 ('acc') must be vector<64xf32>, got vector<32xf32>
  %r = sched.wgmma.mma_async m64n128k16 bf16 %d, %d, %z : vector<32xf32>
  sched.return
}

// -----

sched.kernel @mmatype() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %d = arith.constant 0 : i64
  %z = arith.constant dense<0.0> : vector<64xf32>
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.wgmma.mma_async' op operand type f32 must be one of bf16, f16, e4m3, e5m2
  %r = sched.wgmma.mma_async m64n128k16 f32 %d, %d, %z : vector<64xf32>
  sched.return
}

// -----

sched.kernel @fp8trans() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %d = arith.constant 0 : i64
  %z = arith.constant dense<0.0> : vector<64xf32>
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.wgmma.mma_async' op e4m3 operands are read K-major only: trans_a and trans_b are for bf16 and f16
  %r = sched.wgmma.mma_async m64n128k32 e4m3 %d, %d, %z trans_b : vector<64xf32>
  sched.return
}

// -----

sched.kernel @fp8k() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %d = arith.constant 0 : i64
  %z = arith.constant dense<0.0> : vector<64xf32>
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'sched.wgmma.mma_async' shape m64n128k16: a e5m2 wgmma has k = 32
  %r = sched.wgmma.mma_async m64n128k16 e5m2 %d, %d, %z : vector<64xf32>
  sched.return
}

// -----

sched.kernel @desc() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  %c0 = arith.constant 0 : index
  %s = sched.alloc : memref<64x64xbf16, 3>
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.wgmma.desc' op sbo 1000 must be a multiple of 16 below 2^18
  %d = sched.wgmma.desc %s[%c0, %c0] swizzle 128 lbo 16 sbo 1000 : memref<64x64xbf16, 3>
  sched.return
}

// -----

sched.kernel @wait() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.wgmma.wait_group' op pending count 9 must be in 0..7
  sched.wgmma.wait_group 9
  sched.return
}

// -----

sched.kernel @nreg() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.setmaxnreg' op register count 100 must be a multiple of 8 in 24..256
  sched.setmaxnreg inc 100
  sched.return
}

// -----

func.func @host(%x : memref<64x64xbf16>) {
  // CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.tensor_map' op operand #0 has type memref<64x64xbf16>, but the result describes memref<64x128xbf16>
  %tm = "sched.tensor_map"(%x) : (memref<64x64xbf16>) -> !sched.tensor_map<memref<64x128xbf16>, box [64, 64], swizzle 128>
  func.return
}
