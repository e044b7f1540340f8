// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// Casts of the narrow integers (issue 31): i8, i16, i32 and u8 (spelled ui8). A u8 buffer keeps
// its ui8 type (the runtime reads the sign from it) but its values are signless i8 in the
// kernel (arith takes no signed or unsigned integers): u8 widens with extui and converts with
// uitofp; i8 widens with extsi and converts with sitofp; a narrowing wraps (trunci); u8 <-> i8
// keeps the bits. Float to i16 truncates to i32, saturating (as cvt.rzi does, NaN -> 0), then
// wraps, as torch's CUDA casts do; float to u8 goes through i64 and wraps, as torch defines it.

// ROUND: fusion.cast %u : tensor<1000xui8> to tensor<1000xi32>

// CHECK-LABEL: sched.kernel @icasts_k0
// CHECK-DAG: sched.load %{{.*}} : memref<1000xui8> -> vector<{{[0-9]+}}xi8>
// CHECK-DAG: arith.extui %{{.*}} : i8 to i32
// CHECK-DAG: arith.extsi %{{.*}} : i8 to i32
// CHECK-DAG: arith.uitofp %{{.*}} : i8 to f32
// CHECK-DAG: arith.sitofp %{{.*}} : i16 to f32
// CHECK-DAG: arith.trunci %{{.*}} : i32 to i16
// CHECK-DAG: arith.fptosi %{{.*}} : f32 to i32
// CHECK-DAG: arith.trunci %{{.*}} : i32 to i16
// CHECK-DAG: arith.fptosi %{{.*}} : f32 to i64
// CHECK-DAG: arith.trunci %{{.*}} : i64 to i8
// CHECK-DAG: sched.store %{{.*}}, %{{.*}} : {{.*}}xi8>, memref<1000xui8>
// CHECK-DAG: sched.store %{{.*}}, %{{.*}} : {{.*}}xi8>, memref<1000xi8>

// PTX-LABEL: .entry icasts_k0
// PTX-DAG: cvt.rn.f32.s16
// PTX-DAG: cvt.rn.f32.u32
// PTX-DAG: cvt.rzi.s32.f32
// PTX-DAG: cvt.rzi.s64.f32

func.func @icasts(%u: tensor<1000xui8>, %b: tensor<1000xi8>, %s: tensor<1000xi16>, %w: tensor<1000xi32>, %x: tensor<1000xf32>) -> (tensor<1000xi32>, tensor<1000xi32>, tensor<1000xf32>, tensor<1000xf32>, tensor<1000xi16>, tensor<1000xi16>, tensor<1000xui8>, tensor<1000xi8>) {
  %0 = fusion.cast %u : tensor<1000xui8> to tensor<1000xi32>
  %1 = fusion.cast %b : tensor<1000xi8> to tensor<1000xi32>
  %2 = fusion.cast %u : tensor<1000xui8> to tensor<1000xf32>
  %3 = fusion.cast %s : tensor<1000xi16> to tensor<1000xf32>
  %4 = fusion.cast %w : tensor<1000xi32> to tensor<1000xi16>
  %5 = fusion.cast %x : tensor<1000xf32> to tensor<1000xi16>
  %6 = fusion.cast %x : tensor<1000xf32> to tensor<1000xui8>
  %7 = fusion.cast %u : tensor<1000xui8> to tensor<1000xi8>
  func.return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<1000xi32>, tensor<1000xi32>, tensor<1000xf32>, tensor<1000xf32>, tensor<1000xi16>, tensor<1000xi16>, tensor<1000xui8>, tensor<1000xi8>
}

// An integer cast to f16 overflows to +-inf explicitly: LLVM folds the f16 round trip of an
// integer it knows to have few significant bits (here one from a bf16) back to the integer's
// f32, ignoring f16's range (-15925248 came back as itself on an H100; GPU fuzz seed 9310671).
// CHECK-LABEL: func.func @int_to_f16_overflows
// PTX-LABEL: .entry int_to_f16_overflows
// PTX:         cvt.rn.f32.s64
// PTX:         selp.f32 {{.*}}, 0f7F800000,
// PTX:         selp.f32 {{.*}}, 0fFF800000,
func.func @int_to_f16_overflows(%x: tensor<2x1024xbf16>) -> tensor<2x1024xf32> {
  %i = fusion.cast %x : tensor<2x1024xbf16> to tensor<2x1024xi64>
  %h = fusion.cast %i : tensor<2x1024xi64> to tensor<2x1024xf16>
  %f = fusion.cast %h : tensor<2x1024xf16> to tensor<2x1024xf32>
  func.return %f : tensor<2x1024xf32>
}
