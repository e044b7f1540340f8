// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One verifier error per chunk; each CHECK pins the message, which names the op and the operand
// or attribute at fault. Ops with a fixed result type in their custom syntax use the generic form.

// Unary ops take float tensors.
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.exp' op operand #0 ('input') has element type i64, expected one of bf16, f16, f32, f64
func.func @unary_int(%x: tensor<4xi64>) -> tensor<4xi64> {
  %0 = fusion.exp %x : tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

// The rounding ops too: torch's floor of an integer tensor is the identity, left to PyTorch.
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.floor' op operand #0 ('input') has element type i64, expected one of bf16, f16, f32, f64
func.func @floor_int(%x: tensor<4xi64>) -> tensor<4xi64> {
  %0 = fusion.floor %x : tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

// A test of a float gives an i1 mask of the operand's shape (generic form: the custom one derives it).
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.isnan' op result must be tensor<4xi1>, got tensor<4xf32>
func.func @isnan_f32_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fusion.isnan"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// The logical ops take masks.
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.logical_and' op operand #0 ('lhs') has element type f32, expected i1 (a mask)
func.func @and_of_floats(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fusion.logical_and %x, %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.sqrt' op result type tensor<4xf16> must equal the operand type tensor<4xf32>
func.func @unary_result(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = "fusion.sqrt"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  func.return %0 : tensor<4xf16>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.relu' op operand #0 ('input') has a dynamic extent (tensor<?xf32>); only static shapes are supported
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = fusion.relu %x : tensor<?xf32>
  func.return %0 : tensor<?xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.gelu' op attribute 'approximate' must be "none" or "tanh", got "fast"
func.func @gelu_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fusion.gelu %x {approximate = "fast"} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.add' op operand #1 ('rhs') has type tensor<8xf32>, expected tensor<4x8xf32> (the type of operand #0 'lhs'); use fusion.broadcast or fusion.cast to match them
func.func @binary_shape(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "fusion.add"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.mul' op operand #1 ('rhs') has type tensor<8xf32>, expected tensor<8xbf16> (the type of operand #0 'lhs'); use fusion.broadcast or fusion.cast to match them
func.func @binary_dtype(%a: tensor<8xbf16>, %b: tensor<8xf32>) -> tensor<8xbf16> {
  %0 = "fusion.mul"(%a, %b) : (tensor<8xbf16>, tensor<8xf32>) -> tensor<8xbf16>
  func.return %0 : tensor<8xbf16>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.max' op operand #0 ('lhs') has element type i1, expected one of bf16, f16, f32, f64
func.func @binary_int(%a: tensor<8xi1>, %b: tensor<8xi1>) -> tensor<8xi1> {
  %0 = fusion.max %a, %b : tensor<8xi1>
  func.return %0 : tensor<8xi1>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.sub' op result type tensor<8xf16> must equal the operand type tensor<8xf32>
func.func @binary_result(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf16> {
  %0 = "fusion.sub"(%a, %b) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf16>
  func.return %0 : tensor<8xf16>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.cmp' op predicate 'ult' is not one of eq, ne, lt, le, gt, ge
func.func @cmp_predicate(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xi1> {
  %0 = fusion.cmp ult, %a, %b : tensor<8xf32>
  func.return %0 : tensor<8xi1>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.cmp' op operand #1 ('rhs') has type tensor<8xf16>, expected tensor<8xf32>
func.func @cmp_rhs(%a: tensor<8xf32>, %b: tensor<8xf16>) -> tensor<8xi1> {
  %0 = "fusion.cmp"(%a, %b) <{predicate = "lt"}> : (tensor<8xf32>, tensor<8xf16>) -> tensor<8xi1>
  func.return %0 : tensor<8xi1>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.cmp' op result must be tensor<8xi1>, got tensor<8xf32>
func.func @cmp_result(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "fusion.cmp"(%a, %b) <{predicate = "lt"}> : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

// The condition's type is implied by the result type (an i1 tensor of its shape), so a
// mismatch is caught while parsing, at the operand.
// CHECK: invalid.mlir:[[# @LINE + 2]]:21: error: operand is used with type tensor<8xi1>, but has been previously used or defined with type tensor<8xf32>
func.func @where_cond(%c: tensor<8xf32>, %a: tensor<8xf32>) -> tensor<8xf32> {
  %0 = fusion.where %c, %a, %a : tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.where' op operand #2 ('rhs') has type tensor<8xbf16>, expected tensor<8xf32>
func.func @where_rhs(%c: tensor<8xi1>, %a: tensor<8xf32>, %b: tensor<8xbf16>) -> tensor<8xf32> {
  %0 = "fusion.where"(%c, %a, %b) : (tensor<8xi1>, tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.cast' op changes the shape: tensor<4x8xbf16> to tensor<32xf32>; a cast changes only the element type
func.func @cast_shape(%x: tensor<4x8xbf16>) -> tensor<32xf32> {
  %0 = fusion.cast %x : tensor<4x8xbf16> to tensor<32xf32>
  func.return %0 : tensor<32xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.broadcast' op dims entry 2 is out of range for rank 2
func.func @broadcast_range(%x: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.broadcast %x dims [2] : tensor<8xf32> to tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.broadcast' op dims [0, 0] has repeated entries
func.func @broadcast_repeat(%x: tensor<8xf32>) -> tensor<4x4x8xf32> {
  %0 = fusion.broadcast %x dims [0, 0] : tensor<8xf32> to tensor<4x4x8xf32>
  func.return %0 : tensor<4x4x8xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.broadcast' op operand #0 ('input') has shape [8], but the result tensor<8x4xf32> with new dims [0] keeps dimensions of extents [4]
func.func @broadcast_extent(%x: tensor<8xf32>) -> tensor<8x4xf32> {
  %0 = fusion.broadcast %x dims [0] : tensor<8xf32> to tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.broadcast' op result element type f16 differs from the operand's f32
func.func @broadcast_dtype(%x: tensor<8xf32>) -> tensor<4x8xf16> {
  %0 = fusion.broadcast %x dims [0] : tensor<8xf32> to tensor<4x8xf16>
  func.return %0 : tensor<4x8xf16>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reshape' op cannot reshape tensor<4x8xf32> to tensor<30xf32>: element counts or types differ
func.func @reshape_count(%x: tensor<4x8xf32>) -> tensor<30xf32> {
  %0 = fusion.reshape %x : tensor<4x8xf32> to tensor<30xf32>
  func.return %0 : tensor<30xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.permute' op permutation [1, 1] is not a permutation of rank 2
func.func @permute_perm(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = fusion.permute %x [1, 1] : tensor<4x8xf32> to tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.permute' op result tensor<4x8xf32> does not match tensor<4x8xf32> permuted by [1, 0]
func.func @permute_result(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.permute %x [1, 0] : tensor<4x8xf32> to tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.segment_set' op result type tensor<32xf32> must equal operand type tensor<4x8xf32>
func.func @segment_set_type(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %0 = fusion.segment_set %x : tensor<4x8xf32> to tensor<32xf32>
  func.return %0 : tensor<32xf32>
}

// -----

// A full of an integer type holds an integer in its range (issue 31)
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.full' op value 2.5 is not an integer, as its element type i8 needs
func.func @full_int_fraction() -> tensor<4xi8> {
  %0 = fusion.full 2.5 : tensor<4xi8>
  func.return %0 : tensor<4xi8>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.full' op value 256 is out of the range of ui8 [0, 255]
func.func @full_u8_range() -> tensor<4xui8> {
  %0 = fusion.full 256 : tensor<4xui8>
  func.return %0 : tensor<4xui8>
}

// -----

// Integer division with a rounding mode takes integers: a float operand is named
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.floor_div' op operand #0 ('lhs') has element type f32, expected one of i8, i16, i32, i64, u8
func.func @floor_div_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fusion.floor_div %x, %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// fusion.div is true division, of floats (the Python API divides integers in f32)
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.div' op operand #0 ('lhs') has element type i32, expected one of bf16, f16, f32, f64
func.func @div_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = fusion.div %x, %x : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

// Integer operands of two types are not promoted in the IR
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.add' op operand #1 ('rhs') has type tensor<4xui8>, expected tensor<4xi8>
func.func @add_i8_u8(%x: tensor<4xi8>, %y: tensor<4xui8>) -> tensor<4xi8> {
  %0 = "fusion.add"(%x, %y) : (tensor<4xi8>, tensor<4xui8>) -> tensor<4xi8>
  func.return %0 : tensor<4xi8>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op kind 'mean' is not one of sum, max, min, prod, any, all, argmax, argmin
func.func @reduce_kind(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = fusion.reduce mean %x dims [1] : tensor<4x8xf32> to tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op reduces no dimension: 'dims' is empty
func.func @reduce_no_dims(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = fusion.reduce sum %x dims [] : tensor<4x8xf32> to tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op dims entry 2 is out of range for rank 2
func.func @reduce_dim_range(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = fusion.reduce max %x dims [2] : tensor<4x8xf32> to tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op result 'result' has shape [4], expected [4, 1] (reducing dims [1] of tensor<4x8xf32> with keepdim)
func.func @reduce_shape(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = fusion.reduce sum %x dims [1] keepdim : tensor<4x8xf32> to tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op result element type bf16 must be f32 or the input's f16
func.func @reduce_dtype(%x: tensor<4x8xf16>) -> tensor<4xbf16> {
  %0 = fusion.reduce sum %x dims [1] : tensor<4x8xf16> to tensor<4xbf16>
  func.return %0 : tensor<4xbf16>
}

// -----

// f64 is accumulated in f64, and its sum is f64: no f32 result (as f16's may have).
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op sum of f64 has result element type f32, expected f64
func.func @reduce_f64_to_f32(%x: tensor<4x8xf64>) -> tensor<4xf32> {
  %0 = fusion.reduce sum %x dims [1] : tensor<4x8xf64> to tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// f64 statistics are f64.
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.var_mean' op result 'var' must have element type f64, got f32
func.func @var_mean_f64_to_f32(%x: tensor<4x8xf64>) -> tensor<4xf32> {
  %v, %m = fusion.var_mean %x dims [1] correction 1 : tensor<4x8xf64> to tensor<4xf32>, tensor<4xf32>
  func.return %v : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op operand #0 ('a') is f64: matmul takes bf16, f16 or FP8 operands (wgmma; f32 through them), f64 matmul is not supported
func.func @matmul_f64(%a: tensor<4x8xf64>, %b: tensor<8x16xf64>) -> tensor<4x16xf64> {
  %c = fusion.matmul %a, %b : tensor<4x8xf64>, tensor<8x16xf64> -> tensor<4x16xf64>
  func.return %c : tensor<4x16xf64>
}

// -----

// A sum of masks counts them: its result is i64, never i1
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op sum of i1 has result element type i1, expected i64
func.func @reduce_sum_mask(%x: tensor<4x8xi1>) -> tensor<4xi1> {
  %0 = fusion.reduce sum %x dims [1] : tensor<4x8xi1> to tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op sum of i8 has result element type i32, expected i64 or i8
func.func @reduce_sum_i8(%x: tensor<4x8xi8>) -> tensor<4xi32> {
  %0 = fusion.reduce sum %x dims [1] : tensor<4x8xi8> to tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op max of i16 has result element type i64, expected i16
func.func @reduce_max_i16(%x: tensor<4x8xi16>) -> tensor<4xi64> {
  %0 = fusion.reduce max %x dims [1] : tensor<4x8xi16> to tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op any of f32 has result element type f32, expected i1
func.func @reduce_any_type(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = fusion.reduce any %x dims [1] : tensor<4x8xf32> to tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op argmax of bf16 has result element type i32, expected i64
func.func @reduce_argmax_type(%x: tensor<4x8xbf16>) -> tensor<4xi32> {
  %0 = fusion.reduce argmax %x dims [1] : tensor<4x8xbf16> to tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op argmin reduces dims [0, 2] of tensor<4x8x3xf32>: it takes one dim or all of them
func.func @reduce_argmin_dims(%x: tensor<4x8x3xf32>) -> tensor<8xi64> {
  %0 = fusion.reduce argmin %x dims [0, 2] : tensor<4x8x3xf32> to tensor<8xi64>
  func.return %0 : tensor<8xi64>
}

// -----

// As torch's: integer variances are refused (cast to a float first)
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.var_mean' op operand #0 ('input') has element type i32, expected one of bf16, f16, f32, f64
func.func @var_mean_int(%x: tensor<4x8xi32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %v, %m = fusion.var_mean %x dims [1] correction 1 : tensor<4x8xi32> to tensor<4xf32>, tensor<4xf32>
  func.return %v, %m : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.welford' op result 'M2' has shape [8], expected [4] (reducing dims [1] of tensor<4x8xf32>)
func.func @welford_shape(%x: tensor<4x8xf32>) -> tensor<4xi64> {
  %a, %m2, %n = fusion.welford %x dims [1] : tensor<4x8xf32> to tensor<4xf32>, tensor<8xf32>, tensor<4xi64>
  func.return %n : tensor<4xi64>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.welford' op result 'N' must have element type i64, got f32
func.func @welford_count(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %a, %m2, %n = fusion.welford %x dims [1] : tensor<4x8xf32> to tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  func.return %n : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.var_mean' op correction must be >= 0, got -1
func.func @var_mean_correction(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %v, %m = fusion.var_mean %x dims [1] correction -1 : tensor<4x8xf32> to tensor<4xf32>, tensor<4xf32>
  func.return %v : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.var_mean' op result 'var' must have element type f32, got bf16
func.func @var_mean_dtype(%x: tensor<4x8xbf16>) -> tensor<4xbf16> {
  %v, %m = fusion.var_mean %x dims [1] correction 1 : tensor<4x8xbf16> to tensor<4xbf16>, tensor<4xf32>
  func.return %v : tensor<4xbf16>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op operand #0 ('a') must be 2-D, got tensor<2x4x8xbf16>
func.func @matmul_rank(%a: tensor<2x4x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<4x16xf32> {
  %c = fusion.matmul %a, %b : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xf32>
  func.return %c : tensor<4x16xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op operand #1 ('b') has element type f16, expected bf16 like operand #0 ('a')
func.func @matmul_dtype(%a: tensor<4x8xbf16>, %b: tensor<8x16xf16>) -> tensor<4x16xf32> {
  %c = fusion.matmul %a, %b : tensor<4x8xbf16>, tensor<8x16xf16> -> tensor<4x16xf32>
  func.return %c : tensor<4x16xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op contraction extents differ: operand #0 ('a') tensor<4x8xbf16> has K=8, operand #1 ('b') tensor<16x8xbf16> has K=16
func.func @matmul_k(%a: tensor<4x8xbf16>, %b: tensor<16x8xbf16>) -> tensor<4x8xf32> {
  %c = fusion.matmul %a, %b : tensor<4x8xbf16>, tensor<16x8xbf16> -> tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op contraction extents differ: operand #0 ('a') tensor<8x4xbf16> has K=8, operand #1 ('b') tensor<16x6xbf16> has K=6
func.func @matmul_transpose_k(%a: tensor<8x4xbf16>, %b: tensor<16x6xbf16>) -> tensor<4x16xf32> {
  %c = fusion.matmul %a, %b transpose_a transpose_b : tensor<8x4xbf16>, tensor<16x6xbf16> -> tensor<4x16xf32>
  func.return %c : tensor<4x16xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op result has shape [16, 4], expected [4, 16]
func.func @matmul_result(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<16x4xf32> {
  %c = fusion.matmul %a, %b : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<16x4xf32>
  func.return %c : tensor<16x4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op result has element type i64, expected one of bf16, f16, f32
func.func @matmul_result_dtype(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<4x16xi64> {
  %c = fusion.matmul %a, %b : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xi64>
  func.return %c : tensor<4x16xi64>
}

// -----

// A fusion tensor's element type is one every scheduler stores, loads and casts.
// CHECK: invalid.mlir:[[# @LINE + 1]]:1: error: 'func.func' op @arg_i128 argument #0 (tensor<4xi128>): element type i128 is not supported; fusion tensors hold f32, f16, bf16, i1, i8, i16, i32, i64, ui8, f64
func.func @arg_i128(%x: tensor<4xi128>) -> tensor<4xi128> {
  func.return %x : tensor<4xi128>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.cast' op result: element type ui16 is not supported; fusion tensors hold f32, f16, bf16, i1, i8, i16, i32, i64, ui8, f64
func.func @cast_to_u16(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fusion.cast %x : tensor<4xf32> to tensor<4xui16>
  %1 = fusion.cast %0 : tensor<4xui16> to tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

// The seed and offset of a random op are 0-d i64 tensors (runtime values).
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.uniform' op operand #0 ('seed') has type tensor<1xi64>, expected tensor<i64> (a 0-d i64 tensor: the seed and offset are runtime values)
func.func @uniform_seed(%s: tensor<1xi64>, %o: tensor<i64>) -> tensor<4xf32> {
  %u = "fusion.uniform"(%s, %o) <{low = 0.0 : f64, high = 1.0 : f64}> : (tensor<1xi64>, tensor<i64>) -> tensor<4xf32>
  func.return %u : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.uniform' op operand #1 ('offset') has type tensor<i32>, expected tensor<i64>
func.func @uniform_offset(%s: tensor<i64>, %o: tensor<i32>) -> tensor<4xf32> {
  %u = "fusion.uniform"(%s, %o) <{low = 0.0 : f64, high = 1.0 : f64}> : (tensor<i64>, tensor<i32>) -> tensor<4xf32>
  func.return %u : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.normal' op result has element type i32, expected one of bf16, f16, f32, f64
func.func @normal_i32(%s: tensor<i64>, %o: tensor<i64>) -> tensor<4xi32> {
  %n = fusion.normal %s, %o mean 0.0 std 1.0 : tensor<4xi32>
  func.return %n : tensor<4xi32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.uniform' op result has element type i32, expected one of bf16, f16, f32, f64
func.func @uniform_int(%s: tensor<i64>, %o: tensor<i64>) -> tensor<4xi32> {
  %u = fusion.uniform %s, %o low 0 high 10 : tensor<4xi32>
  func.return %u : tensor<4xi32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.iota' op step 0.5 must be an integer of at most 2^53 in magnitude for element type i32
func.func @iota_fraction() -> tensor<4xi32> {
  %i = fusion.iota start 0 step 0.5 : tensor<4xi32>
  func.return %i : tensor<4xi32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.iota' op result has element type i1, expected one of bf16, f16, f32, f64, i8, i16, i32, i64, u8
func.func @iota_mask() -> tensor<4xi1> {
  %i = fusion.iota start 0 step 1 : tensor<4xi1>
  func.return %i : tensor<4xi1>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.iota' op start -1 is negative for the unsigned element type ui8
func.func @iota_u8() -> tensor<4xui8> {
  %i = fusion.iota start -1 step 1 : tensor<4xui8>
  func.return %i : tensor<4xui8>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.uniform' op high inf is not finite
func.func @uniform_inf(%s: tensor<i64>, %o: tensor<i64>) -> tensor<4xf32> {
  %u = "fusion.uniform"(%s, %o) <{low = 0.0 : f64, high = 0x7FF0000000000000 : f64}> : (tensor<i64>, tensor<i64>) -> tensor<4xf32>
  func.return %u : tensor<4xf32>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.erfcinv' op operand #0 ('input') has element type i32, expected one of bf16, f16, f32, f64
func.func @erfcinv_i32(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = fusion.erfcinv %x : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

// nextafter takes every float type, f64 included (a step of the bits), and no integers.
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.nextafter' op operand #0 ('lhs') has element type i64, expected one of bf16, f16, f32, f64
func.func @nextafter_i64(%x: tensor<4xi64>) -> tensor<4xi64> {
  %0 = fusion.nextafter %x, %x : tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.nextafter' op operand #1 ('rhs') has type tensor<4xf32>, expected tensor<4xf64> (the type of operand #0 'lhs'); use fusion.broadcast or fusion.cast to match them
func.func @nextafter_mixed(%x: tensor<4xf64>, %y: tensor<4xf32>) -> tensor<4xf64> {
  %0 = "fusion.nextafter"(%x, %y) : (tensor<4xf64>, tensor<4xf32>) -> tensor<4xf64>
  func.return %0 : tensor<4xf64>
}
