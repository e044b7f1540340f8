// RUN: fuser-opt %s --split-input-file --verify-diagnostics -p sched-verify-buffers | filecheck %s

// Hand-written schedules that read data no launch has produced. Each must be refused with the
// kernel, the buffer (named after the value it holds) and the reading op.

// The planner bug this check exists for: one kernel reads tanh(x) back from the output buffer
// it is about to store it in.
// CHECK: errors.mlir:24:5: error: kernel @f_k0 reads %t (output #1 of @f) through argument #1 and also writes it, with no store and sched.barrier ordering its write before the read ('sched.load' at {{.*}}errors.mlir:16:7); it would read the value before computing it
builtin.module {
  sched.kernel @f_k0(%y : memref<64xf32>, %t : memref<64xf32>, %x : memref<64xf32>) grid [1, 1, 1] block [64, 1, 1] smem 0 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    sched.for bind(grid.x) %i = %c0 to %c64 step %c1 {
      %a = sched.load %x[%i] : memref<64xf32> -> f32
      %b = sched.load %t[%i] : memref<64xf32> -> f32
      %m = arith.mulf %a, %b : f32
      sched.store %m, %y[%i] : f32, memref<64xf32>
      sched.store %b, %t[%i] : f32, memref<64xf32>
    }
    sched.return
  }
  func.func @f(%x : memref<64xf32>, %y : memref<64xf32>, %t : memref<64xf32>) attributes {fuser.num_outputs = 2 : i64} {
    sched.launch @f_k0(%y, %t, %x) : memref<64xf32>, memref<64xf32>, memref<64xf32>
    func.return
  }
}

// -----
// Read of an output that a later launch writes (the launches are in the wrong order).
// CHECK: errors.mlir:47:5: error: kernel @use reads %s (output #0 of @g) through argument #0 ('sched.load' at {{.*}}errors.mlir:41:5), but no earlier launch writes it
builtin.module {
  sched.kernel @produce(%x : memref<8xf32>, %s : memref<8xf32>) grid [1, 1, 1] block [8, 1, 1] smem 0 {
    %i = sched.thread_idx x
    %v = sched.load %x[%i] : memref<8xf32> -> f32
    sched.store %v, %s[%i] : f32, memref<8xf32>
    sched.return
  }
  sched.kernel @use(%s : memref<8xf32>, %z : memref<8xf32>) grid [1, 1, 1] block [8, 1, 1] smem 0 {
    %i = sched.thread_idx x
    %v = sched.load %s[%i] : memref<8xf32> -> f32
    %w = arith.addf %v, %v : f32
    sched.store %w, %z[%i] : f32, memref<8xf32>
    sched.return
  }
  func.func @g(%x : memref<8xf32>, %s : memref<8xf32>, %z : memref<8xf32>) attributes {fuser.num_outputs = 2 : i64} {
    sched.launch @use(%s, %z) : memref<8xf32>, memref<8xf32>
    sched.launch @produce(%x, %s) : memref<8xf32>, memref<8xf32>
    func.return
  }
}

// -----
// A workspace read before anything fills it (only zero_init workspaces start defined).
// CHECK: errors.mlir:67:5: error: kernel @k reads %ws (a workspace) through argument #0
builtin.module {
  sched.kernel @k(%ws : memref<8xf32>, %y : memref<8xf32>) grid [1, 1, 1] block [8, 1, 1] smem 0 {
    %i = sched.thread_idx x
    %v = sched.load %ws[%i] : memref<8xf32> -> f32
    sched.store %v, %y[%i] : f32, memref<8xf32>
    sched.return
  }
  func.func @h(%x : memref<8xf32>, %y : memref<8xf32>) attributes {fuser.num_outputs = 1 : i64} {
    %ws = sched.workspace : memref<8xf32>
    %zeros = sched.workspace zero_init : memref<8xf32>
    sched.launch @k(%zeros, %y) : memref<8xf32>, memref<8xf32>
    sched.launch @k(%ws, %y) : memref<8xf32>, memref<8xf32>
    func.return
  }
}

// -----
// A read through a TMA descriptor counts: the tensor map stands for the output it describes.
// CHECK: errors.mlir:88:5: error: kernel @tma reads %out (output #0 of @host) through argument #0 ('sched.tma.load'
builtin.module {
  sched.kernel @tma(%tm : !sched.tensor_map<memref<128x64xbf16>, box [128, 64], swizzle 128>) grid [1, 1, 1] block [128, 1, 1] smem 17408 {
    %c0 = arith.constant 0 : index
    %a = sched.alloc offset 0 : i64 : memref<128x64xbf16, 3>
    %bars = sched.alloc offset 16384 : i64 : memref<1xi64, 3>
    sched.mbarrier.init %bars[%c0], 1 : memref<1xi64, 3>
    sched.mbarrier.arrive_expect_tx %bars[%c0], 16384 : memref<1xi64, 3>
    sched.tma.load %tm[%c0, %c0], %a[%c0, %c0], %bars[%c0] : !sched.tensor_map<memref<128x64xbf16>, box [128, 64], swizzle 128>, memref<128x64xbf16, 3>, memref<1xi64, 3>
    sched.mbarrier.wait %bars[%c0], %c0 : memref<1xi64, 3>
    sched.return
  }
  func.func @host(%x : memref<128x64xbf16>, %out : memref<128x64xbf16>) attributes {fuser.num_outputs = 1 : i64} {
    %tm = sched.tensor_map %out : !sched.tensor_map<memref<128x64xbf16>, box [128, 64], swizzle 128>
    sched.launch @tma(%tm) : !sched.tensor_map<memref<128x64xbf16>, box [128, 64], swizzle 128>
    func.return
  }
}

// -----
// A kernel that stores and then reads back without a barrier between: another thread's store
// need not be visible yet.
// CHECK: errors.mlir:106:5: error: kernel @nobar reads %y (output #0 of @p) through argument #0 and also writes it
builtin.module {
  sched.kernel @nobar(%y : memref<8xf32>) grid [1, 1, 1] block [8, 1, 1] smem 0 {
    %i = sched.thread_idx x
    %v = arith.constant 1.0 : f32
    sched.store %v, %y[%i] : f32, memref<8xf32>
    %w = sched.load %y[%i] : memref<8xf32> -> f32
    sched.return
  }
  func.func @p(%y : memref<8xf32>) attributes {fuser.num_outputs = 1 : i64} {
    sched.launch @nobar(%y) : memref<8xf32>
    func.return
  }
}
