// RUN: fuser-opt %s -p to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// Any function name MLIR accepts compiles: a kernel's name is its function's name made a PTX
// identifier (each character outside [A-Za-z0-9_], and a leading digit, as $<hex>$); a plain
// name is kept. The host function keeps its own name.

// CHECK: sched.kernel @k$2d$1_k0(
// CHECK: func.func @"k-1"(
// CHECK: sched.launch @k$2d$1_k0(
// PTX-DAG: .entry k$2d$1_k0(
func.func @"k-1"(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = fusion.exp %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: sched.kernel @k$2e$x_k0(
// PTX-DAG: .entry k$2e$x_k0(
func.func @"k.x"(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = fusion.exp %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: sched.kernel @a$20$b_k0(
// PTX-DAG: .entry a$20$b_k0(
func.func @"a b"(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = fusion.exp %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: sched.kernel @$540d$$524d$_k0(
// PTX-DAG: .entry $540d$$524d$_k0(
func.func @"名前"(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = fusion.exp %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// A leading digit and a '$' are escaped too, so no escaped name equals a kept one.
// CHECK: sched.kernel @$31$k_k0(
// CHECK: sched.kernel @a$24$b_k0(
func.func @"1k"(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = fusion.exp %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
func.func @"a$b"(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = fusion.exp %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// A kernel name another symbol of the module has is skipped: @f's first kernel is not @f_k0.
// CHECK: sched.kernel @f_k1(
// CHECK: func.func @f(
// CHECK: sched.launch @f_k1(
// CHECK: sched.kernel @f_k0_k0(
// CHECK: func.func @f_k0(
// PTX-DAG: .entry f_k1(
// PTX-DAG: .entry f_k0_k0(
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = fusion.exp %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
func.func @f_k0(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = fusion.exp %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
