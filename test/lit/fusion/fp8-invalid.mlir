// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// FP8 tensors (f8E4M3FN, f8E5M2: issue 34) are storage, as in torch: casts, shape ops, full and
// where take them; arithmetic, comparisons, reductions, scans, sorts and matmul refuse them,
// naming the op and the operand and saying what to do.

// CHECK: fp8-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.add' op operand #0 ('lhs') has element type f8E4M3FN: FP8 tensors are storage only, with no arithmetic, as in torch; cast to f32 or bf16 first (fusion.cast); this op takes bf16, f16, f32, f64, i8, i16, i32, i64, u8
func.func @add_fp8(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  %0 = fusion.add %x, %x : tensor<4xf8E4M3FN>
  func.return %0 : tensor<4xf8E4M3FN>
}

// -----

// CHECK: fp8-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.exp' op operand #0 ('input') has element type f8E5M2: FP8 tensors are storage only, with no arithmetic, as in torch; cast to f32 or bf16 first (fusion.cast); this op takes bf16, f16, f32, f64
func.func @exp_fp8(%x: tensor<4xf8E5M2>) -> tensor<4xf8E5M2> {
  %0 = fusion.exp %x : tensor<4xf8E5M2>
  func.return %0 : tensor<4xf8E5M2>
}

// -----

// CHECK: fp8-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op operand #0 ('input') has element type f8E4M3FN: FP8 tensors are storage only
func.func @sum_fp8(%x: tensor<4x8xf8E4M3FN>) -> tensor<4xf32> {
  %0 = "fusion.reduce"(%x) <{kind = "sum", dims = array<i64: 1>}> : (tensor<4x8xf8E4M3FN>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// A matmul takes FP8 operands (issue 34) but computes in f32: its result is f32, bf16 or f16
// (cast it to FP8 after, as torch._scaled_mm's out_dtype does)
// CHECK: fp8-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op result has element type f8E4M3FN: FP8 tensors are storage only
func.func @matmul_fp8(%a: tensor<64x64xf8E4M3FN>, %b: tensor<64x64xf8E4M3FN>) -> tensor<64x64xf8E4M3FN> {
  %0 = fusion.matmul %a, %b transpose_b : tensor<64x64xf8E4M3FN>, tensor<64x64xf8E4M3FN> -> tensor<64x64xf8E4M3FN>
  func.return %0 : tensor<64x64xf8E4M3FN>
}

// -----

// CHECK: fp8-invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op operand #1 ('b') has element type f8E5M2, expected f8E4M3FN like operand #0 ('a')
func.func @matmul_mixed(%a: tensor<64x64xf8E4M3FN>, %b: tensor<64x64xf8E5M2>) -> tensor<64x64xf32> {
  %0 = fusion.matmul %a, %b transpose_b : tensor<64x64xf8E4M3FN>, tensor<64x64xf8E5M2> -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}

// -----

// f8E4M3FNUZ (another FP8 flavour, AMD's) is not a fusion type
// CHECK: fp8-invalid.mlir:[[# @LINE + 1]]:1: error: 'func.func' op @fnuz argument #0 (tensor<4xf8E4M3FNUZ>): element type f8E4M3FNUZ is not supported
func.func @fnuz(%x: tensor<4xf8E4M3FNUZ>) -> tensor<4xf8E4M3FNUZ> {
  func.return %x : tensor<4xf8E4M3FNUZ>
}
