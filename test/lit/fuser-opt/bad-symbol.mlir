// RUN: not fuser-opt %s -t ptx 2>&1 | filecheck %s

// A hand-written LLVM-level function whose name is not a PTX identifier: LLVM's NVPTX backend
// would abort the process ("Symbol name with unsupported characters"), so the translation
// refuses it first. (fuser names its own kernels with sched.kernel_symbol.)

// CHECK: error: -t ptx: llvm.func @"k-1": a function name must be a PTX identifier (letters, digits, '_', '$'; not starting with a digit)
// CHECK-NOT: LLVM ERROR

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @"k-1"(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
      llvm.return
    }
  }) : () -> ()
}
