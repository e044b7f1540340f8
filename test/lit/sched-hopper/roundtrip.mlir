// RUN: fuser-opt %s | filecheck %s
// RUN: fuser-opt %s | fuser-opt | filecheck %s

// The Hopper ops of the sched dialect print and parse back unchanged.

// CHECK-LABEL: sched.kernel @hopper(%tm : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>, %out : memref<1000x1000xf32>, %tm_z : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>)
sched.kernel @hopper(%tm : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>, %out : memref<1000x1000xf32>, %tm_z : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>) grid [1, 1, 1] block [384, 1, 1] smem 33792 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = sched.alloc offset 0 : i64 : memref<2x128x64xbf16, 3>
  %bars = sched.alloc offset 32768 : i64 : memref<2xi64, 3>
  // CHECK: sched.mbarrier.init %bars[%c0], 1 : memref<2xi64, 3 : i64>
  sched.mbarrier.init %bars[%c0], 1 : memref<2xi64, 3>
  // CHECK-NEXT: sched.fence.proxy_async
  sched.fence.proxy_async
  // CHECK-NEXT: sched.setmaxnreg dec 40
  sched.setmaxnreg dec 40
  // CHECK-NEXT: sched.mbarrier.arrive_expect_tx %bars[%c0], 16384 : memref<2xi64, 3 : i64>
  sched.mbarrier.arrive_expect_tx %bars[%c0], 16384 : memref<2xi64, 3>
  // CHECK-NEXT: sched.tma.load %tm[%c0, %c1], %a[%c0, %c0, %c0], %bars[%c0] : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>, memref<2x128x64xbf16, 3 : i64>, memref<2xi64, 3 : i64>
  sched.tma.load %tm[%c0, %c1], %a[%c0, %c0, %c0], %bars[%c0] : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>, memref<2x128x64xbf16, 3>, memref<2xi64, 3>
  // CHECK-NEXT: sched.mbarrier.wait %bars[%c0], %c0 : memref<2xi64, 3 : i64>
  sched.mbarrier.wait %bars[%c0], %c0 : memref<2xi64, 3>
  // CHECK-NEXT: sched.mbarrier.arrive %bars[%c1] : memref<2xi64, 3 : i64>
  sched.mbarrier.arrive %bars[%c1] : memref<2xi64, 3>
  // CHECK-NEXT: %da = sched.wgmma.desc %a[%c0, %c0, %c0] swizzle 128 lbo 16 sbo 1024 : memref<2x128x64xbf16, 3 : i64>
  %da = sched.wgmma.desc %a[%c0, %c0, %c0] swizzle 128 lbo 16 sbo 1024 : memref<2x128x64xbf16, 3>
  %zero = arith.constant dense<0.0> : vector<64xf32>
  // CHECK: sched.wgmma.fence
  sched.wgmma.fence
  // CHECK-NEXT: %d = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %zero trans_b : vector<64xf32>
  %d = sched.wgmma.mma_async m64n128k16 bf16 %da, %da, %zero trans_b : vector<64xf32>
  // CHECK-NEXT: %e = sched.wgmma.mma_async m64n128k16 f16 %da, %da, %d trans_a trans_b : vector<64xf32>
  %e = sched.wgmma.mma_async m64n128k16 f16 %da, %da, %d trans_a trans_b : vector<64xf32>
  // FP8 operands: k = 32, both operands K-major
  // CHECK-NEXT: %f = sched.wgmma.mma_async m64n128k32 e4m3 %da, %da, %e : vector<64xf32>
  %f = sched.wgmma.mma_async m64n128k32 e4m3 %da, %da, %e : vector<64xf32>
  // CHECK-NEXT: %g = sched.wgmma.mma_async m64n128k32 e5m2 %da, %da, %f : vector<64xf32>
  %g = sched.wgmma.mma_async m64n128k32 e5m2 %da, %da, %f : vector<64xf32>
  // CHECK-NEXT: sched.wgmma.commit_group
  sched.wgmma.commit_group
  // CHECK-NEXT: sched.wgmma.wait_group 1
  sched.wgmma.wait_group 1
  // CHECK-NEXT: %r = sched.wgmma.wait_group 0, %e : vector<64xf32>
  %r = sched.wgmma.wait_group 0, %e : vector<64xf32>
  // CHECK-NEXT: %r2, %r3 = sched.wgmma.wait_group 0, %r, %e : vector<64xf32>, vector<64xf32>
  %r2, %r3 = sched.wgmma.wait_group 0, %r, %e : vector<64xf32>, vector<64xf32>
  // CHECK-NEXT: sched.tma.store %a[%c1, %c0, %c0], %tm_z[%c0, %c0] : memref<2x128x64xbf16, 3 : i64>, !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  sched.tma.store %a[%c1, %c0, %c0], %tm_z[%c0, %c0] : memref<2x128x64xbf16, 3>, !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  // CHECK-NEXT: sched.bulk.commit_group
  sched.bulk.commit_group
  // CHECK-NEXT: sched.bulk.wait_group 0 read
  sched.bulk.wait_group 0 read
  // CHECK-NEXT: sched.bulk.wait_group 1
  sched.bulk.wait_group 1
  sched.return
}

// CHECK-LABEL: func.func @host
func.func @host(%x : memref<1000x1000xbf16>, %y : memref<1000x1000xf32>, %z : memref<1000x1000xbf16>) attributes {fuser.num_outputs = 2 : i64} {
  // CHECK: %tm = sched.tensor_map %x : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  %tm = sched.tensor_map %x : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  // CHECK-NEXT: %tm_z = sched.tensor_map %z : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  %tm_z = sched.tensor_map %z : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  // CHECK-NEXT: sched.launch @hopper(%tm, %y, %tm_z) : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>, memref<1000x1000xf32>, !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  sched.launch @hopper(%tm, %y, %tm_z) : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>, memref<1000x1000xf32>, !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>
  func.return
}
