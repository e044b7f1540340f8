// RUN: fuser-opt %s -p sched-dependent-launch --split-input-file | filecheck %s
// RUN: fuser-opt %s -p sched-dependent-launch,sched-dependent-launch --split-input-file | filecheck %s

// Three kernels launched in a row: the second and third launches are dependent launches; each
// of their kernels starts with the wait, and each kernel that a later launch follows starts
// with the trigger (the middle kernel: wait first, then trigger). Running the pass twice gives
// the same IR (second RUN line).

// CHECK-LABEL: sched.kernel @first
// CHECK-NEXT:    sched.griddepcontrol launch_dependents
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NOT:     sched.griddepcontrol
// CHECK:         sched.return
// CHECK-LABEL: sched.kernel @middle
// CHECK-NEXT:    sched.griddepcontrol wait
// CHECK-NEXT:    sched.griddepcontrol launch_dependents
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NOT:     sched.griddepcontrol
// CHECK:         sched.return
// CHECK-LABEL: sched.kernel @last
// CHECK-NEXT:    sched.griddepcontrol wait
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NOT:     sched.griddepcontrol
// CHECK:         sched.return
// CHECK-LABEL: func.func @three
// CHECK:         sched.launch @first(%{{.*}}) : memref<1024xf32>, memref<8xf32>
// CHECK-NEXT:    sched.launch @middle(%{{.*}}) {fuser.dependent_launch} : memref<8xf32>, memref<1xf32>
// CHECK-NEXT:    sched.launch @last(%{{.*}}) {fuser.dependent_launch} : memref<1xf32>, memref<1xf32>
// CHECK-NEXT:    func.return
builtin.module {
  sched.kernel @first(%x : memref<1024xf32>, %ws : memref<8xf32>) grid [8, 1, 1] block [128, 1, 1] smem 0 {
    %c0 = arith.constant 0 : index
    %b = sched.block_idx x
    %v = sched.load %x[%c0] : memref<1024xf32> -> f32
    sched.store %v, %ws[%b] : f32, memref<8xf32>
    sched.return
  }
  sched.kernel @middle(%ws : memref<8xf32>, %t : memref<1xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
    %c0 = arith.constant 0 : index
    %v = sched.load %ws[%c0] : memref<8xf32> -> f32
    sched.store %v, %t[%c0] : f32, memref<1xf32>
    sched.return
  }
  sched.kernel @last(%t : memref<1xf32>, %y : memref<1xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
    %c0 = arith.constant 0 : index
    %v = sched.load %t[%c0] : memref<1xf32> -> f32
    sched.store %v, %y[%c0] : f32, memref<1xf32>
    sched.return
  }
  func.func @three(%x : memref<1024xf32>, %y : memref<1xf32>) attributes {fuser.num_outputs = 1 : i64} {
    %ws = sched.workspace : memref<8xf32>
    %t = sched.workspace : memref<1xf32>
    sched.launch @first(%x, %ws) : memref<1024xf32>, memref<8xf32>
    sched.launch @middle(%ws, %t) : memref<8xf32>, memref<1xf32>
    sched.launch @last(%t, %y) : memref<1xf32>, memref<1xf32>
    func.return
  }
}

// -----

// One launch: nothing to overlap, nothing changes.

// CHECK-LABEL: sched.kernel @alone
// CHECK-NOT:     sched.griddepcontrol
// CHECK-LABEL: func.func @single
// CHECK-NEXT:    sched.launch @alone(%{{.*}}) : memref<4xf32>
// CHECK-NOT:     fuser.dependent_launch
builtin.module {
  sched.kernel @alone(%x : memref<4xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
    sched.return
  }
  func.func @single(%x : memref<4xf32>) attributes {fuser.num_outputs = 1 : i64} {
    sched.launch @alone(%x) : memref<4xf32>
    func.return
  }
}

// -----

// A kernel that already starts with its wait (written by hand) keeps just that one.

// CHECK-LABEL: sched.kernel @second
// CHECK-NEXT:    sched.griddepcontrol wait
// CHECK-NEXT:    sched.return
// CHECK-LABEL: func.func @two
// CHECK:         sched.launch @second(%{{.*}}) {fuser.dependent_launch} : memref<4xf32>
builtin.module {
  sched.kernel @one(%x : memref<4xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
    sched.return
  }
  sched.kernel @second(%x : memref<4xf32>) grid [1, 1, 1] block [32, 1, 1] smem 0 {
    sched.griddepcontrol wait
    sched.return
  }
  func.func @two(%x : memref<4xf32>) attributes {fuser.num_outputs = 1 : i64} {
    sched.launch @one(%x) : memref<4xf32>
    sched.launch @second(%x) : memref<4xf32>
    func.return
  }
}
