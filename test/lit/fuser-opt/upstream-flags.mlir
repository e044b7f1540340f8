// RUN: fuser-opt %s --pass-pipeline='builtin.module(canonicalize,fusion-segment)' | filecheck %s
// RUN: fuser-opt %s -p canonicalize,fusion-segment | filecheck %s
// RUN: fuser-opt %s --pass-pipeline='builtin.module(canonicalize)' --mlir-print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=DUMP
// RUN: fuser-opt %s --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: fuser-opt %s --mlir-print-debuginfo | filecheck %s --check-prefix=LOC
// RUN: fuser-opt %s -p default --verify-each=false --mlir-timing -o /dev/null 2>&1 | filecheck %s --check-prefix=TIMING
// RUN: not fuser-opt %s --pass-pipeline='builtin.module(func.func(cse))' 2>&1 | filecheck %s --check-prefix=NESTED
// RUN: not fuser-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | filecheck %s --check-prefix=OPEN
// RUN: not fuser-opt %s --verify-each=maybe 2>&1 | filecheck %s --check-prefix=FLAG

// fuser-opt takes mlir-opt's spellings: `--pass-pipeline` with the `builtin.module(...)` anchor
// (the same pipeline as `-p`), `--mlir-print-ir-after-all`, `--mlir-print-op-generic`,
// `--mlir-print-debuginfo`, `--mlir-timing` and `--verify-each=false` (verify once, at the end).

// CHECK: fusion.segment "pointwise"
// DUMP: // -----// IR Dump After canonicalize //----- //
// GENERIC: "func.func"() <{
// GENERIC: "fusion.add"(%{{.*}}, %{{.*}}) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
// LOC: fusion.add {{.*}} loc("{{.*}}upstream-flags.mlir":[[# @LINE + 11]]:3)
// TIMING: Execution time report
// TIMING: convert-sched-to-nvvm
// TIMING: verify
// NESTED: error: pipeline 'func.func(cse)' nests passes under 'func.func(...)': fuser's passes run on the whole
// NESTED-SAME: module, so only a 'builtin.module(...)' anchor around the whole list is taken
// OPEN: error: malformed pipeline 'builtin.module(cse': 'builtin.module(' is not closed
// FLAG: error: argument --verify-each: expected true or false, got 'maybe'
// NESTED-NOT: Traceback

func.func @scale(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = fusion.add %x, %x : tensor<64xf32>
  func.return %y : tensor<64xf32>
}
