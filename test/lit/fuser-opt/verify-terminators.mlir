// RUN: not fuser-opt %s 2>&1 | filecheck %s

// The verifier checks each region-free op signature once (the same class, operand and result
// types, properties and parent class verify alike), but every terminator is verified itself:
// a func.return checks its operands against its own function's result types, which the
// signature does not hold. Here the first return passes and the second, of the same signature,
// must still fail.

// CHECK: verify-terminators.mlir:[[# @LINE + 5]]:3: error: 'func.return' op Expected arguments to have the same types as the function output types: expected [i32], got [index]
func.func @f(%x: index) -> index {
  func.return %x : index
}
func.func @g(%x: index) -> i32 {
  func.return %x : index
}
