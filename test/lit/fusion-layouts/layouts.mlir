// RUN: fuser-opt %s -p fusion-layouts | filecheck %s --check-prefix=LAYOUT
// RUN: fuser-opt %s -p fusion-layouts | fuser-opt -p fusion-layouts | filecheck %s --check-prefix=LAYOUT
// RUN: fuser-opt %s -p default | filecheck %s --check-prefix=HOST
// RUN: fuser-opt %s -p to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// Layouts at a fusion's boundary (issue 32). A strided argument (fusion.strides, fusion.offset)
// becomes its 1-D storage read through fusion.as_strided: the kernel computes each element's
// address from the strides, in place, never a copy. A result with fusion.stride_order is
// returned as the dense permute in that order. The host function keeps the declarations (the
// runtime checks arrays against them and returns the permuted view). fusion-layouts is
// idempotent.

// A transposed slice with a row gap (x[i, j] at 3 + 16 j + i of a 136-element storage): each
// lane's address is 16 j + i + 3, one scalar load per lane.
// LAYOUT-LABEL: func.func @transposed
// LAYOUT-SAME: (%x: tensor<136xf32> {fusion.strides = array<i64: 1, 16>, fusion.offset = 3 : i64, fusion.view = array<i64: 5, 9>}
// LAYOUT-NEXT: %x_1 = fusion.as_strided %x strides [1, 16] offset 3 : tensor<136xf32> to tensor<5x9xf32>
// LAYOUT-NEXT: %y = fusion.exp %x_1 : tensor<5x9xf32>
// HOST-LABEL: func.func @transposed(%x: memref<136xf32> {fusion.strides = array<i64: 1, 16>, fusion.offset = 3 : i64, fusion.view = array<i64: 5, 9>}
// CHECK-LABEL: sched.kernel @transposed_k0
// CHECK-SAME: (%{{.*}} : memref<5x9xf32>, %[[X:[0-9]+]] : memref<136xf32>)
// CHECK: %[[COL:.*]] = arith.remui
// CHECK: %[[ROW:.*]] = arith.divui
// CHECK: %[[SIXTEEN:.*]] = arith.constant 16 : index
// CHECK: %[[J16:.*]] = arith.muli %[[COL]], %[[SIXTEEN]] : index
// CHECK: %[[SUM:.*]] = arith.addi %[[ROW]], %[[J16]] : index
// CHECK: %[[THREE:.*]] = arith.constant 3 : index
// CHECK: %[[AT:.*]] = arith.addi %[[SUM]], %[[THREE]] : index
// CHECK: sched.load %[[X]][%[[AT]]] : memref<136xf32> -> f32
// CHECK-NOT: sched.kernel @transposed_k1
func.func @transposed(%x: tensor<5x9xf32> {fusion.strides = array<i64: 1, 16>, fusion.offset = 3 : i64}) -> tensor<5x9xf32> {
  %y = fusion.exp %x : tensor<5x9xf32>
  func.return %y : tensor<5x9xf32>
}

// Rows 40 elements apart, contiguous within a row, at offset 8: lane groups of 4 f32 stay
// aligned, so each is one vector load from the storage (16-byte ld.global.v4).
// CHECK-LABEL: sched.kernel @rows_k0
// CHECK: sched.load %{{.*}}[%{{.*}}] : memref<280xf32> -> vector<4xf32>
// PTX-LABEL: .entry rows_k0
// PTX: ld.global.v4
func.func @rows(%x: tensor<7x32xf32> {fusion.strides = array<i64: 40, 1>, fusion.offset = 8 : i64}) -> tensor<7x32xf32> {
  %y = fusion.neg %x : tensor<7x32xf32>
  func.return %y : tensor<7x32xf32>
}

// An expanded input (stride 0 along the rows: a bias broadcast by torch's expand) is its one
// row of storage; the innermost stride 0 of the other (one value per row) reads one element
// for all the lanes of a group.
// LAYOUT-LABEL: func.func @expanded
// LAYOUT: fusion.as_strided %b strides [0, 1] offset 0 : tensor<24xbf16> to tensor<6x24xbf16>
// LAYOUT: fusion.as_strided %s strides [1, 0] offset 0 : tensor<6xbf16> to tensor<6x24xbf16>
// CHECK-LABEL: sched.kernel @expanded_k0
// CHECK-SAME: (%{{.*}} : memref<6x24xbf16>, %[[B:[0-9]+]] : memref<24xbf16>, %[[S:[0-9]+]] : memref<6xbf16>)
// CHECK: %[[COL:.*]] = arith.remui
// CHECK: %[[ROW:.*]] = arith.divui
// CHECK: sched.load %[[B]][%[[COL]]] : memref<24xbf16> -> vector<8xbf16>
// CHECK: sched.load %[[S]][%[[ROW]]] : memref<6xbf16> -> bf16
// CHECK-NOT: sched.load %[[S]]
// CHECK: sched.store %{{.*}} : vector<8xbf16>, memref<6x24xbf16>
func.func @expanded(%b: tensor<6x24xbf16> {fusion.strides = array<i64: 0, 1>}, %s: tensor<6x24xbf16> {fusion.strides = array<i64: 1, 0>}) -> tensor<6x24xbf16> {
  %y = fusion.mul %b, %s : tensor<6x24xbf16>
  func.return %y : tensor<6x24xbf16>
}

// An output in stride order [0, 1] (column-major: dim 0 innermost): a kernel writes the dense [9, 5] permute;
// the host's output buffer is that [9, 5] array and keeps the logical view [5, 9]. A second
// result without an order is written row-major.
// LAYOUT-LABEL: func.func @ordered
// LAYOUT-SAME: -> (tensor<9x5xf32> {fusion.stride_order = array<i64: 0, 1>, fusion.view = array<i64: 5, 9>}, tensor<5x9xf32>)
// LAYOUT: %y_1 = fusion.permute %y [1, 0] : tensor<5x9xf32> to tensor<9x5xf32>
// LAYOUT: func.return %y_1, %y : tensor<9x5xf32>, tensor<5x9xf32>
// HOST-LABEL: func.func @ordered
// HOST-SAME: %y: memref<9x5xf32> {fusion.stride_order = array<i64: 0, 1>, fusion.view = array<i64: 5, 9>}
// CHECK-LABEL: sched.kernel @ordered_k0
// CHECK: sched.store %{{.*}} : f32, memref<5x9xf32>
// CHECK-LABEL: sched.kernel @ordered_k1
// CHECK: sched.store %{{.*}} : f32, memref<9x5xf32>
func.func @ordered(%x: tensor<5x9xf32>) -> (tensor<5x9xf32> {fusion.stride_order = array<i64: 0, 1>}, tensor<5x9xf32>) {
  %y = fusion.sigmoid %x : tensor<5x9xf32>
  func.return %y, %y : tensor<5x9xf32>, tensor<5x9xf32>
}

// A hand-written segment keeps its boundary: it takes the strided argument's storage and reads it
// through its own fusion.as_strided, and yields the permute of the ordered result in its place
// (one kernel, as without the segment).
// LAYOUT-LABEL: func.func @by_hand
// LAYOUT-SAME: (%x: tensor<78xf32> {fusion.strides = array<i64: 1, 8>, fusion.view = array<i64: 6, 10>}) -> (tensor<10x6xf32> {fusion.stride_order = array<i64: 0, 1>, fusion.view = array<i64: 6, 10>})
// LAYOUT-NEXT: %y = fusion.segment (%a = %x : tensor<78xf32>) -> (tensor<10x6xf32>) {
// LAYOUT-NEXT: %a_1 = fusion.as_strided %a strides [1, 8] offset 0 : tensor<78xf32> to tensor<6x10xf32>
// LAYOUT-NEXT: %e = fusion.exp %a_1 : tensor<6x10xf32>
// LAYOUT-NEXT: %y_1 = fusion.permute %e [1, 0] : tensor<6x10xf32> to tensor<10x6xf32>
// LAYOUT-NEXT: fusion.yield %y_1 : tensor<10x6xf32>
// LAYOUT: func.return %y : tensor<10x6xf32>
// CHECK-LABEL: sched.kernel @by_hand_k0
// CHECK-SAME: (%{{.*}} : memref<10x6xf32>, %{{.*}} : memref<78xf32>)
// CHECK-NOT: sched.kernel @by_hand_k1
func.func @by_hand(%x: tensor<6x10xf32> {fusion.strides = array<i64: 1, 8>}) -> (tensor<6x10xf32> {fusion.stride_order = array<i64: 0, 1>}) {
  %y = fusion.segment (%a = %x : tensor<6x10xf32>) -> (tensor<6x10xf32>) {
    %e = fusion.exp %a : tensor<6x10xf32>
    fusion.yield %e : tensor<6x10xf32>
  }
  func.return %y : tensor<6x10xf32>
}
