// RUN: fuser-opt %s --split-input-file --verify-diagnostics -p sched-verify-buffers | filecheck %s

// In-place outputs (issue 32): schedules that read an aliased input after writing it. Made by
// convert-fusion-to-sched before it staged such outputs; each must be refused, naming the input,
// the output and the kernels.

// A flip into itself: thread t reads element 999 - 4t.. and writes 4t.., which another thread reads.
// CHECK: error: kernel @flip_k0 reads and writes %x (input #0 of @flip, written in place by output #0), the input that output #0 aliases: 'sched.load' at another index or in another block than the store (threads may read elements other threads have written)
builtin.module {
  sched.kernel @flip_k0(%0 : memref<1000xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
    %1 = arith.constant 0 : index
    %2 = arith.constant 250 : index
    %3 = arith.constant 1 : index
    sched.for bind(grid.x) %4 = %1 to %2 step %3 {
      %5 = arith.constant 4 : index
      %6 = arith.muli %4, %5 : index
      %7 = arith.constant 996 : index
      %8 = arith.subi %7, %6 : index
      %9 = sched.load %0[%8] : memref<1000xf32> -> vector<4xf32>
      %10 = vector.extract %9[0] : f32 from vector<4xf32>
      %11 = vector.extract %9[1] : f32 from vector<4xf32>
      %12 = vector.extract %9[2] : f32 from vector<4xf32>
      %13 = vector.extract %9[3] : f32 from vector<4xf32>
      %14 = vector.broadcast %13 : f32 to vector<4xf32>
      %15 = vector.insert %12, %14 [1] : f32 into vector<4xf32>
      %16 = vector.insert %11, %15 [2] : f32 into vector<4xf32>
      %17 = vector.insert %10, %16 [3] : f32 into vector<4xf32>
      sched.store %17, %0[%6] : vector<4xf32>, memref<1000xf32>
    }
    sched.return
  }
  func.func @flip(%x: memref<1000xf32>, %n: memref<1000xf32> {fusion.alias = 0 : i64}) attributes {fuser.num_outputs = 1 : i64} {
    sched.launch @flip_k0(%x) : memref<1000xf32>
    func.return
  }
}

// -----

// An update written in place by the first kernel, and a sum of the input by the second, which
// would add the updated values.
// CHECK: error: kernel @twice_k1 reads %x (input #0 of @twice, written in place by output #0) after kernel @twice_k0 wrote output #0 into it in place: it would read the updated values, not the input's
builtin.module {
  sched.kernel @twice_k0(%0 : memref<1000xf32>) grid [1, 1, 1] block [256, 1, 1] smem 0 {
    %1 = arith.constant 0 : index
    %2 = arith.constant 250 : index
    %3 = arith.constant 1 : index
    sched.for bind(grid.x) %4 = %1 to %2 step %3 {
      %5 = arith.constant 4 : index
      %6 = arith.muli %4, %5 : index
      %7 = sched.load %0[%6] : memref<1000xf32> -> vector<4xf32>
      %8 = vector.extract %7[0] : f32 from vector<4xf32>
      %9 = vector.extract %7[1] : f32 from vector<4xf32>
      %10 = vector.extract %7[2] : f32 from vector<4xf32>
      %11 = vector.extract %7[3] : f32 from vector<4xf32>
      %12 = arith.constant 2.000000e+00 : f32
      %13 = arith.mulf %8, %12 : f32
      %14 = arith.mulf %9, %12 : f32
      %15 = arith.mulf %10, %12 : f32
      %16 = arith.mulf %11, %12 : f32
      %17 = vector.broadcast %13 : f32 to vector<4xf32>
      %18 = vector.insert %14, %17 [1] : f32 into vector<4xf32>
      %19 = vector.insert %15, %18 [2] : f32 into vector<4xf32>
      %20 = vector.insert %16, %19 [3] : f32 into vector<4xf32>
      sched.store %20, %0[%6] : vector<4xf32>, memref<1000xf32>
    }
    sched.return
  }
  sched.kernel @twice_k1(%0 : memref<f32>, %1 : memref<1000xf32>) grid [1, 1, 1] block [64, 4, 1] smem 0 {
    %2 = sched.thread_idx x
    %3 = sched.thread_idx y
    %4 = sched.block_idx x
    %5 = arith.constant 4 : index
    %6 = arith.muli %4, %5 : index
    %7 = arith.addi %6, %3 : index
    %8 = arith.constant 0 : index
    %9 = arith.minui %7, %8 : index
    %10 = arith.constant 250 : index
    %11 = arith.constant 0.000000e+00 : f32
    %12 = arith.constant 1 : index
    %13, %14, %15, %16 = sched.for bind(thread.x) %17 = %8 to %10 step %12 iter_args(%18 = %11, %19 = %11, %20 = %11, %21 = %11) -> (f32, f32, f32, f32) {
      %22 = arith.constant 4 : index
      %23 = arith.muli %17, %22 : index
      %24 = sched.load %1[%23] : memref<1000xf32> -> vector<4xf32>
      %25 = vector.extract %24[0] : f32 from vector<4xf32>
      %26 = vector.extract %24[1] : f32 from vector<4xf32>
      %27 = vector.extract %24[2] : f32 from vector<4xf32>
      %28 = vector.extract %24[3] : f32 from vector<4xf32>
      %29 = arith.addf %18, %25 : f32
      %30 = arith.addf %19, %26 : f32
      %31 = arith.addf %20, %27 : f32
      %32 = arith.addf %21, %28 : f32
      sched.yield %29, %30, %31, %32 : f32, f32, f32, f32
    }
    %33 = arith.addf %13, %14 : f32
    %34 = arith.addf %33, %15 : f32
    %35 = arith.addf %34, %16 : f32
    %36 = sched.shfl_xor %35, 16 : f32
    %37 = arith.addf %35, %36 : f32
    %38 = sched.shfl_xor %37, 8 : f32
    %39 = arith.addf %37, %38 : f32
    %40 = sched.shfl_xor %39, 4 : f32
    %41 = arith.addf %39, %40 : f32
    %42 = sched.shfl_xor %41, 2 : f32
    %43 = arith.addf %41, %42 : f32
    %44 = sched.shfl_xor %43, 1 : f32
    %45 = arith.addf %43, %44 : f32
    %warp_partials = sched.alloc : memref<8xf32, 3 : i64>
    %46 = arith.constant 32 : index
    %47 = arith.remui %2, %46 : index
    %48 = arith.divui %2, %46 : index
    %49 = arith.constant 2 : index
    %50 = arith.muli %3, %49 : index
    %51 = arith.addi %50, %48 : index
    %52 = arith.cmpi eq, %47, %8 : index
    scf.if %52 {
      sched.store %45, %warp_partials[%51] : f32, memref<8xf32, 3 : i64>
    }
    sched.barrier
    %53 = arith.muli %3, %49 : index
    %54 = arith.minui %47, %12 : index
    %55 = arith.addi %53, %54 : index
    %56 = sched.load %warp_partials[%55] : memref<8xf32, 3 : i64> -> f32
    %57 = arith.cmpi ult, %47, %49 : index
    %58 = arith.select %57, %56, %11 : f32
    %59 = sched.shfl_xor %58, 16 : f32
    %60 = arith.addf %58, %59 : f32
    %61 = sched.shfl_xor %60, 8 : f32
    %62 = arith.addf %60, %61 : f32
    %63 = sched.shfl_xor %62, 4 : f32
    %64 = arith.addf %62, %63 : f32
    %65 = sched.shfl_xor %64, 2 : f32
    %66 = arith.addf %64, %65 : f32
    %67 = sched.shfl_xor %66, 1 : f32
    %68 = arith.addf %66, %67 : f32
    %69 = arith.cmpi eq, %2, %8 : index
    %70 = arith.cmpi ult, %7, %12 : index
    %71 = arith.andi %69, %70 : i1
    scf.if %71 {
      sched.store %68, %0[] : f32, memref<f32>
    }
    sched.return
  }
  func.func @twice(%x: memref<1000xf32>, %n: memref<1000xf32> {fusion.alias = 0 : i64}, %s: memref<f32>) attributes {fuser.num_outputs = 2 : i64} {
    sched.launch @twice_k0(%x) : memref<1000xf32>
    sched.launch @twice_k1(%s, %x) : memref<f32>, memref<1000xf32>
    func.return
  }
}
