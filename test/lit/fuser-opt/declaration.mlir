// RUN: not fuser-opt %s -p default 2>&1 | filecheck %s
// RUN: fuser-opt %s | filecheck %s --check-prefix=PARSE

// A body-less func.func (a declaration) has nothing to compile: running passes on it is a
// located error, not a failure inside a pass. Without passes it parses and prints.

// CHECK: declaration.mlir:[[# @LINE + 3]]:1: error: function @f has no body; fuser compiles function definitions
// CHECK-NOT: Traceback
// PARSE: func.func @f(tensor<4xf32>) -> tensor<4xf32>
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32>
