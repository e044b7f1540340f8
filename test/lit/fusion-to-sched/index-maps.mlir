// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUND
// RUN: fuser-opt %s -p fusion-segment,convert-fusion-to-sched | filecheck %s
// RUN: fuser-opt %s -p default -t ptx | filecheck %s --check-prefix=PTX

// The index-map shape ops and the indexed reads (issue 32) are index computations inside the kernel that reads them,
// never a copy: a cat reads each source at an index clamped into it and selects the one the
// index falls in, a pad selects its value outside its source, a slice scales and offsets the
// index, a flip counts from the end. Lane groups that stay inside one source, aligned, remain
// one vector access (the rotary-embedding half swap below: 8 bf16 lanes); a strided slice maps
// each lane alone.

// ROUND: %c = fusion.cat %n, %lo dim 1 : tensor<8x32xbf16>, tensor<8x32xbf16> to tensor<8x64xbf16>
// ROUND: %s = fusion.slice %x start [0, 1] stop [5, 33] step [1, 2] : tensor<5x33xf32> to tensor<5x16xf32>
// ROUND: %v = fusion.full -1.5 : tensor<f64>
// ROUND: %f = fusion.flip %x dims [0] : tensor<6x30xf64> to tensor<6x30xf64>
// ROUND: %p = fusion.pad %f, %v low [0, 2] high [0, 0] : tensor<6x30xf64> to tensor<6x32xf64>
// ROUND: %e = fusion.index_select %w, %ids dim 0 : tensor<1000x64xbf16>, tensor<37xi32> to tensor<37x64xbf16>
// ROUND: %p = fusion.gather %x, %lab dim 1 : tensor<5x50xf32>, tensor<5x1xi64> to tensor<5x1xf32>

// One kernel: both halves of x read in place, the second half for the first result half.
// CHECK-LABEL: sched.kernel @rope_k0
// CHECK-SAME: (%{{.*}} : memref<8x64xbf16>, %[[X:[0-9]+]] : memref<8x64xbf16>)
// CHECK: %[[COL:.*]] = arith.remui %{{.*}}, %{{.*}} : index
// CHECK: %[[HALF:.*]] = arith.constant 32 : index
// CHECK: %[[UP:.*]] = arith.maxui %[[COL]], %[[HALF]] : index
// CHECK: %[[SHIFT:.*]] = arith.subi %[[UP]], %[[HALF]] : index
// CHECK: %[[LAST:.*]] = arith.constant 24 : index
// CHECK: %[[LO_AT:.*]] = arith.minui %[[SHIFT]], %[[LAST]] : index
// CHECK: sched.load %[[X]][%{{.*}}, %[[LO_AT]]] : memref<8x64xbf16> -> vector<8xbf16>
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %[[COL]], %[[HALF]] : index
// CHECK: %[[HI_CLAMP:.*]] = arith.minui %[[COL]], %[[LAST]] : index
// CHECK: %[[HI_AT:.*]] = arith.addi %[[HI_CLAMP]], %[[HALF]] : index
// CHECK: sched.load %[[X]][%{{.*}}, %[[HI_AT]]] : memref<8x64xbf16> -> vector<8xbf16>
// CHECK: arith.negf
// CHECK: arith.select %[[FIRST]], %{{.*}}, %{{.*}} : f32
// CHECK: sched.store %{{.*}} : vector<8xbf16>, memref<8x64xbf16>
// CHECK-NOT: sched.kernel @rope_k1
func.func @rope(%x: tensor<8x64xbf16>) -> tensor<8x64xbf16> {
  %lo = fusion.slice %x start [0, 0] stop [8, 32] step [1, 1] : tensor<8x64xbf16> to tensor<8x32xbf16>
  %hi = fusion.slice %x start [0, 32] stop [8, 64] step [1, 1] : tensor<8x64xbf16> to tensor<8x32xbf16>
  %n = fusion.neg %hi : tensor<8x32xbf16>
  %c = fusion.cat %n, %lo dim 1 : tensor<8x32xbf16>, tensor<8x32xbf16> to tensor<8x64xbf16>
  func.return %c : tensor<8x64xbf16>
}

// Every other element from the second: each lane reads column 2 j + 1 alone.
// CHECK-LABEL: sched.kernel @odd_k0
// CHECK: %[[J:.*]] = arith.remui
// CHECK: %[[TWO:.*]] = arith.constant 2 : index
// CHECK: %[[J2:.*]] = arith.muli %[[J]], %[[TWO]] : index
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[AT:.*]] = arith.addi %[[J2]], %[[ONE]] : index
// CHECK: sched.load %{{.*}}[%{{.*}}, %[[AT]]] : memref<5x33xf32> -> f32
// CHECK-COUNT-3: sched.load %{{.*}} : memref<5x33xf32> -> f32
// CHECK: sched.store %{{.*}} : vector<4xf32>, memref<5x16xf32>
func.func @odd(%x: tensor<5x33xf32>) -> tensor<5x16xf32> {
  %s = fusion.slice %x start [0, 1] stop [5, 33] step [1, 2] : tensor<5x33xf32> to tensor<5x16xf32>
  func.return %s : tensor<5x16xf32>
}

// Rows read from the end (5 - row), two f64 columns a lane group, -1.5 (an f64 full) in the
// first two columns.
// CHECK-LABEL: sched.kernel @pad_flip_k0
// CHECK: %[[ROW:.*]] = arith.divui
// CHECK: %[[FILL:.*]] = arith.constant -1.500000e+00 : f64
// CHECK: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK: %[[FIVE:.*]] = arith.constant 5 : index
// CHECK: %[[FROM_END:.*]] = arith.subi %[[FIVE]], %[[ROW]] : index
// CHECK: sched.load %{{.*}}[%[[FROM_END]], %{{.*}}] : memref<6x30xf64> -> vector<2xf64>
// CHECK: arith.select %[[IN]], %{{.*}}, %[[FILL]] : f64
func.func @pad_flip(%x: tensor<6x30xf64>) -> tensor<6x32xf64> {
  %v = fusion.full -1.5 : tensor<f64>
  %f = fusion.flip %x dims [0] : tensor<6x30xf64> to tensor<6x30xf64>
  %p = fusion.pad %f, %v low [0, 2] high [0, 0] : tensor<6x30xf64> to tensor<6x32xf64>
  func.return %p : tensor<6x32xf64>
}

// Both dims flipped, four f32 lanes a group: the row counts from 6 - 1, the lane group from 64 - 4.
// CHECK-LABEL: sched.kernel @flip_both_k0
// CHECK: %[[COL:.*]] = arith.remui
// CHECK: %[[ROW:.*]] = arith.divui
// CHECK: %[[FIVE:.*]] = arith.constant 5 : index
// CHECK: %[[R:.*]] = arith.subi %[[FIVE]], %[[ROW]] : index
// CHECK: %[[SIXTY:.*]] = arith.constant 60 : index
// CHECK: %[[C:.*]] = arith.subi %[[SIXTY]], %[[COL]] : index
// CHECK: sched.load %{{.*}}[%[[R]], %[[C]]] : memref<6x64xf32> -> vector<4xf32>
func.func @flip_both(%x: tensor<6x64xf32>) -> tensor<6x64xf32> {
  %f = fusion.flip %x dims [0, 1] : tensor<6x64xf32> to tensor<6x64xf32>
  func.return %f : tensor<6x64xf32>
}

// An embedding row: the index, counted from the end if negative and clamped into [0, 999], is
// loaded once per lane group, and the row read as 16-byte vectors (the i32 index, read one per
// lane group, does not narrow them).
// CHECK-LABEL: sched.kernel @embed_k0
// CHECK: %[[ID:.*]] = sched.load %{{.*}}[%{{.*}}] : memref<37xi32> -> i32
// CHECK: %[[FROM_END:.*]] = arith.addi %[[ID]], %{{.*}} : i32
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[ID]], %{{.*}} : i32
// CHECK: %[[W:.*]] = arith.select %[[NEG]], %[[FROM_END]], %[[ID]] : i32
// CHECK: %[[LO:.*]] = arith.maxsi %[[W]], %{{.*}} : i32
// CHECK: %[[LAST:.*]] = arith.constant 999 : i32
// CHECK: %[[ROW:.*]] = arith.minsi %[[LO]], %[[LAST]] : i32
// CHECK: %[[AT:.*]] = arith.index_cast %[[ROW]] : i32 to index
// CHECK: sched.load %{{.*}}[%[[AT]], %{{.*}}] : memref<1000x64xbf16> -> vector<8xbf16>
func.func @embed(%w: tensor<1000x64xbf16>, %ids: tensor<37xi32>) -> tensor<37x64xbf16> {
  %e = fusion.index_select %w, %ids dim 0 : tensor<1000x64xbf16>, tensor<37xi32> to tensor<37x64xbf16>
  func.return %e : tensor<37x64xbf16>
}

// A cross-entropy's label pick: each row reads one column where its label says.
// CHECK-LABEL: sched.kernel @pick_k0
// CHECK: %[[LAB:.*]] = sched.load %{{.*}} : memref<5x1xi64> -> i64
// CHECK: arith.constant 49 : i64
// CHECK: %[[COL:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: sched.load %{{.*}}[%{{.*}}, %[[COL]]] : memref<5x50xf32> -> f32
func.func @pick(%x: tensor<5x50xf32>, %lab: tensor<5x1xi64>) -> tensor<5x1xf32> {
  %p = fusion.gather %x, %lab dim 1 : tensor<5x50xf32>, tensor<5x1xi64> to tensor<5x1xf32>
  func.return %p : tensor<5x1xf32>
}

// PTX-LABEL: .entry rope_k0
// PTX-COUNT-2: ld.global.v4.b32
// PTX-LABEL: .entry odd_k0
// PTX-COUNT-4: ld.global.b32
// PTX-LABEL: .entry pad_flip_k0
// PTX: ld.global.v2.b64
