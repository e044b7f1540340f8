// RUN: fuser-opt %s --split-input-file -p 'fusion-segment,convert-fusion-to-sched{matmul_store=direct},sched-flush-wgmma' | filecheck %s
// RUN: fuser-opt %s --split-input-file -p fusion-segment,convert-fusion-to-sched,sched-flush-wgmma | filecheck %s --check-prefix=TMA
// RUN: fuser-opt %s --split-input-file -p 'fusion-segment,convert-fusion-to-sched{sms=5 tile="128x128"},sched-flush-wgmma' | filecheck %s --check-prefix=PERS

// A split-K matmul (what fusion-split-k makes of 128x128x131072 with a bias + gelu + bf16
// epilogue): 1 tile x 128 splits = 128 work items, one CTA each (one wave on 132 SMs). Work
// item w is split z = w / 1 over K-slices [16z, 16z + 16); its f32 tile goes to rows z*128.. of
// the partials, seen as [128*128, 128] rows, guarded against (z + 1) * 128 (direct stores).
// With TMA stores (the default) the partials' tensor map is 3-D and the store names split z,
// so TMA itself drops a ragged tile's rows past M within the split.
// TMA:      sched.kernel @mm_k0({{.*}}!sched.tensor_map<memref<128x128x128xf32>, box [1, 64, 32], swizzle 128>
// TMA-SAME: fuser.matmul = "tile=128x128 stages=6 persistent=0 grid=128 tiles=1 split=128 k_chunk=1024 store=tma"
// TMA-NOT:  memref.collapse_shape
// TMA:      %[[Z:.*]] = sched.block_idx x
// TMA:      sched.tma.store %{{.*}}, %{{.*}}[%[[Z]], %{{.*}}, %{{.*}}] : memref<2x2x2048xf32, 3 : i64>, !sched.tensor_map<memref<128x128x128xf32>, box [1, 64, 32], swizzle 128>
// CHECK:      sched.kernel @mm_k0({{.*}}memref<128x128x128xf32>
// CHECK-SAME: grid [128, 1, 1] block [384, 1, 1]
// CHECK-SAME: fuser.matmul = "tile=128x128 stages=6 persistent=0 grid=128 tiles=1 split=128 k_chunk=1024 store=direct"
// CHECK:        %[[VIEW:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0 : i64, 1 : i64], [2 : i64]] : memref<128x128x128xf32> into memref<16384x128xf32>
// CHECK:        %[[Z:.*]] = sched.block_idx x
// the producer: 16 K-slices from 16z
// CHECK:        sched.setmaxnreg dec 40
// CHECK:        %[[C16:.*]] = arith.constant 16 : index
// CHECK:        %[[FIRST:.*]] = arith.muli %[[Z]], %[[C16]] : index
// CHECK:        scf.for %[[KT:.*]] = %{{.*}} to %[[C16]]
// CHECK:          %[[KS:.*]] = arith.addi %[[FIRST]], %[[KT]] : index
// CHECK:          %[[K0:.*]] = arith.muli %[[KS]], %{{.*}} : index
// CHECK:          sched.tma.load %{{.*}}[%{{.*}}, %[[K0]]]
// the consumers: the same 16 slices, then the epilogue into the view at rows z*128 + ...
// CHECK:        sched.setmaxnreg inc 232
// CHECK:        scf.for
// CHECK:          sched.wgmma.mma_async m64n128k16
// CHECK:          scf.yield %{{.*}} : vector<64xf32>
// CHECK:        %[[ZM:.*]] = arith.muli %{{.*}}, %[[C128:.*]] : index
// CHECK:        %[[END:.*]] = arith.addi %[[ZM]], %[[C128]] : index
// CHECK:        sched.wgmma.wait_group 0
// CHECK:        arith.cmpi ult, %{{.*}}, %[[END]] : index
// CHECK:        sched.store %{{.*}}, %[[VIEW]][%{{.*}}, %{{.*}}] : vector<2xf32>, memref<16384x128xf32>
// The sum of the 128 partials and the epilogue: one column-reduction kernel (16 thread rows of
// 8 partials each), storing only the bf16 output, never the f32 sum.
// CHECK:      sched.kernel @mm_k1(%{{.*}} : memref<128x128xbf16>, %{{.*}} : memref<128x128x128xf32>, %{{.*}} : memref<128xf32>) grid [256, 1, 1] block [16, 16, 1]
// CHECK:        sched.for bind(thread.y)
// CHECK:          sched.load %{{.*}} : memref<128x128x128xf32> -> vector<4xf32>
// CHECK:        math.exp
// CHECK:        sched.store %{{.*}} : bf16, memref<128x128xbf16>
// CHECK:      func.func @mm
// CHECK-NEXT:   %[[P:.*]] = sched.workspace : memref<128x128x128xf32>
// CHECK-NOT:    sched.workspace
// CHECK:        sched.launch @mm_k0(%{{.*}}, %{{.*}}, %[[P]])
// CHECK-NEXT:   sched.launch @mm_k1(%{{.*}}, %[[P]], %{{.*}})
func.func @mm(%a: tensor<128x131072xbf16>, %b: tensor<131072x128xbf16>, %bias: tensor<128xf32>) -> tensor<128x128xbf16> {
  %p = fusion.matmul %a, %b k_chunk 1024 : tensor<128x131072xbf16>, tensor<131072x128xbf16> -> tensor<128x128x128xf32>
  %s = fusion.reduce sum %p dims [0] : tensor<128x128x128xf32> to tensor<128x128xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<128xf32> to tensor<128x128xf32>
  %d = fusion.add %s, %bb : tensor<128x128xf32>
  %g = fusion.gelu %d {approximate = "tanh"} : tensor<128x128xf32>
  %o = fusion.cast %g : tensor<128x128xf32> to tensor<128x128xbf16>
  func.return %o : tensor<128x128xbf16>
}

// -----
// More work items than SMs (6 tiles of 128x128 x 3 splits on 5 SMs): a persistent grid, each CTA walking
// items pid, pid + 5, ... The last split has 4 K-slices, not 6 (K = 1000 is 16 slices), so an
// item's slice count is min(6, 16 - 6z), and the circular buffer's count before a CTA's i-th item
// is 6i less 2 for each earlier item of the last split (items 12..17 of the walk).
// PERS:      sched.kernel @ragged_k0
// PERS-SAME: grid [5, 1, 1] block [384, 1, 1]
// PERS-SAME: fuser.matmul = "tile=128x128 stages=6 persistent=1 grid=5 tiles=6 split=3 k_chunk=384 store=tma"
// PERS:        sched.setmaxnreg dec 40
// PERS:        scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// PERS:          %[[FULL:.*]] = arith.muli %[[I]], %[[C6:.*]] : index
// PERS:          %[[C12:.*]] = arith.constant 12 : index
// PERS:          %[[AHEAD:.*]] = arith.maxui %[[C12]], %[[PID:.*]] : index
// PERS:          arith.subi %[[AHEAD]], %[[PID]] : index
// PERS:          %[[J0:.*]] = arith.divui
// PERS:          %[[MI:.*]] = arith.maxui %[[I]], %[[J0]] : index
// PERS:          %[[NSHORT:.*]] = arith.subi %[[MI]], %[[J0]] : index
// PERS:          %[[SH:.*]] = arith.muli %[[NSHORT]], %{{.*}} : index
// PERS:          %[[BASE:.*]] = arith.subi %[[FULL]], %[[SH]] : index
// PERS:          %[[C16:.*]] = arith.constant 16 : index
// PERS:          %[[LEFT:.*]] = arith.subi %[[C16]], %{{.*}} : index
// PERS:          %[[COUNT:.*]] = arith.minui %[[C6]], %[[LEFT]] : index
// PERS:          scf.for %[[KT:.*]] = %{{.*}} to %[[COUNT]]
// PERS:            arith.addi %[[BASE]], %[[KT]] : index
// PERS:        sched.setmaxnreg inc 232
// the sum of 3 partials: 4 thread rows (a power of two), their other threads on the columns
// PERS:      sched.kernel @ragged_k1
// PERS-SAME: grid [207, 1, 1] block [64, 4, 1]
func.func @ragged(%a: tensor<200x1000xbf16>, %b: tensor<1000x264xbf16>) -> tensor<200x264xf32> {
  %p = fusion.matmul %a, %b k_chunk 384 : tensor<200x1000xbf16>, tensor<1000x264xbf16> -> tensor<3x200x264xf32>
  %s = fusion.reduce sum %p dims [0] : tensor<3x200x264xf32> to tensor<200x264xf32>
  func.return %s : tensor<200x264xf32>
}
