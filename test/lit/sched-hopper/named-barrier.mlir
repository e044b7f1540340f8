// RUN: fuser-opt %s | filecheck %s
// RUN: fuser-opt %s | fuser-opt | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm | filecheck %s --check-prefix=NVVM
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// Named barriers (the ping-pong matmul's turn-taking): print, parse back, and lower to upstream's
// nvvm.barrier.arrive / nvvm.barrier with the id and thread count, which become bar.arrive /
// bar.sync with immediates.

// CHECK-LABEL: sched.kernel @turns
sched.kernel @turns() grid [1, 1, 1] block [384, 1, 1] smem 0 {
  // CHECK:      sched.named_barrier arrive 1, 256
  // CHECK-NEXT: sched.named_barrier sync 2, 256
  sched.named_barrier arrive 1, 256
  sched.named_barrier sync 2, 256
  sched.return
}

// NVVM-DAG:  %[[ONE:.*]] = arith.constant 1 : i32
// NVVM-DAG:  %[[TWO:.*]] = arith.constant 2 : i32
// NVVM-DAG:  %[[N:.*]] = arith.constant 256 : i32
// NVVM:      nvvm.barrier.arrive id = %[[ONE]] number_of_threads = %[[N]]
// NVVM-NEXT: nvvm.barrier id = %[[TWO]] number_of_threads = %[[N]]
// NVVM-NOT:  llvm.inline_asm

// PTX: bar.arrive {{[[:space:]]*}}1, 256;
// PTX: bar.sync {{[[:space:]]*}}2, 256;
