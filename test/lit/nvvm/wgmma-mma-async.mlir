// RUN: fuser-opt %s | fuser-opt | filecheck %s
// RUN: fuser-opt %s --print-op-generic | fuser-opt | filecheck %s

// nvvm.wgmma.mma_async in upstream's syntax: the attributes may be written in full
// (#nvvm.shape<...>, #nvvm.wgmma_scale_out<...>) or bare (<...>), and print bare, as upstream
// prints them. The generic form carries upstream's operand order: inouts, descriptorA, descriptorB.

// CHECK-LABEL: llvm.func @wgmma(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.struct<(f32, f32, f32, f32)>)
// CHECK-NEXT:    %[[R:.*]] = nvvm.wgmma.mma_async %[[A:.*]], %[[B:.*]], %[[C:.*]], <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:    %{{.*}} = nvvm.wgmma.mma_async %[[A]], %[[B]], %[[R]], <m = 64, n = 8, k = 16>, D[<f32>, <zero>], A[<f16>, <neg>, <col>], B[<f16>, <one>, <row>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
llvm.func @wgmma(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32)> {
  %r = nvvm.wgmma.mma_async %a, %b, %c, #nvvm.shape<m = 64, n = 8, k = 16>, D [<f32>, #nvvm.wgmma_scale_out<one>], A [#nvvm.wgmma_type<bf16>, #nvvm.wgmma_scale_in<one>, #nvvm.mma_layout<row>], B [<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  %s = nvvm.wgmma.mma_async %a, %b, %r, <m = 64, n = 8, k = 16>, D[<f32>, <zero>], A[<f16>, <neg>, <col>], B[<f16>, <one>, <row>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  llvm.return %s : !llvm.struct<(f32, f32, f32, f32)>
}
