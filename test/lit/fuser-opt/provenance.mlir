// RUN: fuser-opt %s -p to-sched --mlir-print-debuginfo | filecheck %s --check-prefix=SCHED
// RUN: fuser-opt %s -p default --mlir-print-debuginfo | filecheck %s --check-prefix=NVVM
// RUN: fuser-opt %s -p default -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// Provenance: the ops a pass or conversion makes carry the location of the fusion op they come
// from, at the sched level, at the nvvm level, as debug locations in the LLVM IR (directives
// only: no DWARF sections, no `debug` target) and as `.loc` lines in the PTX, so a profiler or
// the sanitizer names the line of the fusion op (the exp is on line 33, the add on line 34).

// SCHED:     sched.kernel @scale_exp_k0
// SCHED:       math.exp {{.*}} loc("{{.*}}provenance.mlir":33:3)
// SCHED:       arith.addf {{.*}} loc("{{.*}}provenance.mlir":34:3)
// SCHED:     sched.launch @scale_exp_k0{{.*}} loc("{{.*}}provenance.mlir":34:3)

// NVVM:      llvm.func @scale_exp_k0
// NVVM:        llvm.load {{.*}} loc("{{.*}}provenance.mlir":34:3)
// NVVM:        math.exp {{.*}} loc("{{.*}}provenance.mlir":33:3)
// NVVM:        llvm.store {{.*}} loc("{{.*}}provenance.mlir":34:3)

// LLVM:      define ptx_kernel void @scale_exp_k0({{.*}}) #0 !dbg ![[SP:[0-9]+]] {
// LLVM:      !llvm.dbg.cu = !{![[CU:[0-9]+]]}
// LLVM-DAG:  ![[CU]] = distinct !DICompileUnit(language: DW_LANG_C, file: ![[FILE:[0-9]+]], producer: "fuser", {{.*}}emissionKind: DebugDirectivesOnly)
// LLVM-DAG:  ![[FILE]] = !DIFile(filename: "provenance.mlir", directory: "{{.*}}fuser-opt")
// LLVM-DAG:  ![[SP]] = distinct !DISubprogram(name: "scale_exp_k0"
// LLVM-DAG:  !DILocation(line: 33, column: 3, scope: ![[SP]])

// PTX:       .target sm_90a{{$}}
// PTX:       .loc 1 33 3
// PTX:       ex2.approx
// PTX:       .file 1 "{{.*}}provenance.mlir"
func.func @scale_exp(%x: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = fusion.exp %x : tensor<1024xf32>
  %y = fusion.add %e, %b : tensor<1024xf32>
  func.return %y : tensor<1024xf32>
}
