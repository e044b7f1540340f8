// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX
// RUN: not fuser-opt %s -p default -t ptx --arch sm_80 2>&1 | filecheck %s --check-prefix=SM80

// The FP8 types (issue 34): f8E4M3FN and f8E5M2 buffers keep their types (the runtime reads
// them) while kernels move their bits as signless i8 (loads, stores, where's select). A cast to
// FP8 is arith.truncf to the FP8 type (torch's rule: nearest even, f8E4M3FN saturating, f8E5M2
// overflowing to inf), then a bitcast to the bits; from FP8, a bitcast and arith.extf (exact).
// The LLVM IR converts with the sm_89+ cvt forms: llvm.nvvm.ff.to.{e4m3,e5m2}x2.rn is
// cvt.rn.satfinite, whose saturation is torch's for f8E4M3FN past 448 (the select of 0x7E |
// sign keeps inf there too), and wrong for f8E5M2: |x| >= 61440 (0x40EE000000000000) selects
// inf (0x7C | sign); NaN selects 0x7F | its sign. The way back is cvt.rn.f16x2.{e4m3,e5m2}x2
// on the low byte, then the f16 widened. Four FP8 values move as one 32-bit word.

// ROUND: fusion.cast %x : tensor<1000xf32> to tensor<1000xf8E4M3FN>
// ROUND: fusion.where %m, %q, %c : tensor<1000xf8E5M2>

// CHECK-LABEL: sched.kernel @fp8casts_k0
// CHECK-DAG: sched.load %{{.*}} : memref<1000xf8E5M2> -> vector<{{[0-9]+}}xi8>
// CHECK-DAG: arith.truncf %{{.*}} : f32 to f8E4M3FN
// CHECK-DAG: arith.bitcast %{{.*}} : f8E4M3FN to i8
// CHECK-DAG: arith.bitcast %{{.*}} : i8 to f8E5M2
// CHECK-DAG: arith.extf %{{.*}} : f8E5M2 to f32
// CHECK-DAG: arith.truncf %{{.*}} : f32 to f8E5M2
// CHECK-DAG: arith.select %{{.*}}, %{{.*}}, %{{.*}} : i8
// CHECK-DAG: sched.store %{{.*}}, %{{.*}} : vector<{{[0-9]+}}xi8>, memref<1000xf8E4M3FN>
// CHECK-DAG: sched.store %{{.*}}, %{{.*}} : vector<{{[0-9]+}}xi8>, memref<1000xf8E5M2>

// LLVM-LABEL: define ptx_kernel void @fp8casts_k0
// LLVM:      %[[P:.*]] = call i16 @llvm.nvvm.ff.to.e4m3x2.rn(float %[[X:v[0-9]+]], float %[[X]])
// LLVM-NEXT: %[[B:.*]] = trunc i16 %[[P]] to i8
// LLVM-NEXT: %[[I:.*]] = bitcast float %[[X]] to i32
// LLVM-NEXT: %[[NEG:.*]] = icmp slt i32 %[[I]], 0
// LLVM-NEXT: %[[S:.*]] = select i1 %[[NEG]], i8 -128, i8 0
// LLVM-NEXT: %[[A:.*]] = call float @llvm.fabs.f32(float %[[X]])
// LLVM-NEXT: %[[BIG:.*]] = fcmp ogt float %[[A]], 0x407C000000000000
// LLVM-NEXT: %[[SAT:.*]] = or i8 %[[S]], 126
// LLVM-NEXT: %[[R:.*]] = select i1 %[[BIG]], i8 %[[SAT]], i8 %[[B]]
// LLVM-NEXT: %[[NAN:.*]] = fcmp uno float %[[X]], 0.0
// LLVM-NEXT: %[[QN:.*]] = or i8 %[[S]], 127
// LLVM-NEXT: select i1 %[[NAN]], i8 %[[QN]], i8 %[[R]]
// LLVM:      call <2 x half> @llvm.nvvm.e5m2x2.to.f16x2.rn(i16
// LLVM:      call i16 @llvm.nvvm.ff.to.e5m2x2.rn(
// LLVM:      fcmp oge float %{{.*}}, 0x40EE000000000000
// LLVM-NEXT: or i8 %{{.*}}, 124

// PTX: .version {{[89]\.[0-9]}}
// PTX-LABEL: .entry fp8casts_k0
// PTX-DAG: cvt.rn.satfinite.e4m3x2.f32
// PTX-DAG: cvt.rn.satfinite.e5m2x2.f32
// PTX-DAG: cvt.rn.f16x2.e5m2x2
// PTX-DAG: ld.global.b32
// PTX-DAG: st.global.b32
// SM80: error: -t ptx: kernel @fp8casts_k0 needs sm_90: it uses cvt with .e4m3x2/.e5m2x2 (FP8 conversions), which sm_80 lacks
func.func @fp8casts(%x: tensor<1000xf32>, %q: tensor<1000xf8E5M2>, %m: tensor<1000xi1>) -> (tensor<1000xf8E4M3FN>, tensor<1000xbf16>, tensor<1000xf8E5M2>) {
  %a = fusion.cast %x : tensor<1000xf32> to tensor<1000xf8E4M3FN>
  %b = fusion.cast %q : tensor<1000xf8E5M2> to tensor<1000xbf16>
  %c = fusion.cast %x : tensor<1000xf32> to tensor<1000xf8E5M2>
  %w = fusion.where %m, %q, %c : tensor<1000xf8E5M2>
  func.return %a, %b, %w : tensor<1000xf8E4M3FN>, tensor<1000xbf16>, tensor<1000xf8E5M2>
}

// A transposed FP8 copy moves bytes (the tiles in shared memory are i8) and a full's constant is
// its bits: 470 saturates to 448 (0x7E = 126) in f8E4M3FN.
// CHECK-LABEL: sched.kernel @fp8_moves_k0
// CHECK: sched.alloc : memref<{{[0-9x]+}}xi8, 3 : i64>
// CHECK-LABEL: sched.kernel @fp8_moves_k1
// CHECK: arith.constant 126 : i8
// PTX-LABEL: .entry fp8_moves
// PTX-NOT: cvt.rn
// PTX: ret;
func.func @fp8_moves(%x: tensor<64x96xf8E4M3FN>) -> (tensor<96x64xf8E4M3FN>, tensor<64x96xf8E4M3FN>) {
  %p = fusion.permute %x [1, 0] : tensor<64x96xf8E4M3FN> to tensor<96x64xf8E4M3FN>
  %c = fusion.full 470.0 : tensor<64x96xf8E4M3FN>
  func.return %p, %c : tensor<96x64xf8E4M3FN>, tensor<64x96xf8E4M3FN>
}
