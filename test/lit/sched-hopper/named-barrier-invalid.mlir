// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

sched.kernel @id() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  // CHECK: {{.*}}named-barrier-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.named_barrier' op id 0 must be in 1..15
  sched.named_barrier sync 0, 128
  sched.return
}

// -----

sched.kernel @count() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  // CHECK: {{.*}}named-barrier-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.named_barrier' op thread count 100 must be a positive multiple of 32 up to 1024
  sched.named_barrier arrive 1, 100
  sched.return
}

// -----

sched.kernel @action() grid [1, 1, 1] block [128, 1, 1] smem 0 {
  // CHECK: {{.*}}named-barrier-invalid.mlir:[[# @LINE + 1]]:3: error: 'sched.named_barrier' op action must be sync or arrive, got 'wait'
  sched.named_barrier wait 1, 128
  sched.return
}
