// RUN: fuser-opt %s | filecheck %s
// RUN: fuser-opt %s | fuser-opt | filecheck %s
// RUN: fuser-opt %s -p convert-sched-to-nvvm -t ptx | filecheck %s --check-prefix=PTX

// Named barriers (the ping-pong matmul's turn-taking): print, parse back, and lower to bar.sync /
// bar.arrive with an immediate id and thread count.

// CHECK-LABEL: sched.kernel @turns
sched.kernel @turns() grid [1, 1, 1] block [384, 1, 1] smem 0 {
  // CHECK:      sched.named_barrier arrive 1, 256
  // CHECK-NEXT: sched.named_barrier sync 2, 256
  sched.named_barrier arrive 1, 256
  sched.named_barrier sync 2, 256
  sched.return
}

// PTX: bar.arrive 1, 256;
// PTX: bar.sync 2, 256;
