// RUN: fuser-opt %s -p 'default,cse' -t llvm --time-passes -o /dev/null 2>&1 | filecheck %s
// RUN: fuser-opt %s --split-input-file --time-passes 2>&1 >/dev/null | filecheck %s --check-prefix=PARSE

// --time-passes prints mlir-opt's timing table to stderr: parse, every pass in pipeline order
// (cse twice here: one row per place in the pipeline), verification, the translation, the rest, Total.

// CHECK:      ===-------------------------------------------------------------------------===
// CHECK-NEXT:                          ... Execution time report ...
// CHECK-NEXT: ===-------------------------------------------------------------------------===
// CHECK-NEXT:   Total Execution Time: {{[0-9]+\.[0-9]+}} seconds
// CHECK-EMPTY:
// CHECK-NEXT:   ----Wall Time----  ----Name----
// CHECK-NEXT:   {{ *[0-9]+\.[0-9][0-9][0-9][0-9]}} ({{ *[0-9]+\.[0-9]}}%)  parse
// CHECK-NEXT:   {{.*}}%)  canonicalize
// CHECK-NEXT:   {{.*}}%)  fusion-layouts
// CHECK-NEXT:   {{.*}}%)  fusion-fold-empty
// CHECK-NEXT:   {{.*}}%)  fusion-sort-scatters
// CHECK-NEXT:   {{.*}}%)  fusion-sink-reshapes
// CHECK-NEXT:   {{.*}}%)  fusion-approx-exp
// CHECK-NEXT:   {{.*}}%)  fusion-split-k
// CHECK-NEXT:   {{.*}}%)  fusion-segment
// CHECK-NEXT:   {{.*}}%)  convert-fusion-to-sched
// CHECK-NEXT:   {{.*}}%)  sched-verify-buffers
// CHECK-NEXT:   {{.*}}%)  sched-flush-wgmma
// CHECK-NEXT:   {{.*}}%)  sched-insert-bulk-syncs
// CHECK-NEXT:   {{.*}}%)  sched-alias-smem
// CHECK-NEXT:   {{.*}}%)  sched-dependent-launch
// CHECK-NEXT:   {{.*}}%)  cse
// CHECK-NEXT:   {{.*}}%)  convert-sched-to-nvvm
// CHECK-NEXT:   {{.*}}%)  cse
// CHECK-NEXT:   {{.*}}%)  verify
// CHECK-NEXT:   {{.*}}%)  translate to llvm
// CHECK-NEXT:   {{.*}}%)  rest
// CHECK-NEXT:   {{ *[0-9]+\.[0-9][0-9][0-9][0-9]}} (100.0%)  Total
// CHECK-NOT: {{.}}

// Without passes, and summed over --split-input-file chunks: parse, verify, print.
// PARSE:      ----Wall Time----  ----Name----
// PARSE-NEXT: %)  parse
// PARSE-NEXT: %)  verify
// PARSE-NEXT: %)  print
// PARSE-NEXT: %)  rest
// PARSE-NEXT: (100.0%)  Total

func.func @row_sum(%x: tensor<64x128xf32>) -> tensor<64xf32> {
  %s = fusion.reduce sum %x dims [1] : tensor<64x128xf32> to tensor<64xf32>
  func.return %s : tensor<64xf32>
}

// -----

func.func @scale(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = fusion.add %x, %x : tensor<64xf32>
  func.return %y : tensor<64xf32>
}
