// RUN: not fuser-opt %s --split-input-file -t ptx --arch sm_80 2>&1 >/dev/null | filecheck %s --check-prefix=SM80
// RUN: not fuser-opt %s --split-input-file -t ptx --arch sm_90 2>&1 >/dev/null | filecheck %s --check-prefix=SM90
// RUN: not fuser-opt %s --split-input-file -t llvm --arch sm_90 2>&1 >/dev/null | filecheck %s --check-prefix=SM90
// RUN: fuser-opt %s --split-input-file -t ptx --arch sm_90a | filecheck %s --check-prefix=SM90A

// A kernel that uses an instruction the target lacks is refused before LLVM (which would abort
// the process), naming the kernel, the instruction and the targets that have it: wgmma and
// setmaxnreg are sm_90a only, the other Hopper instructions sm_90 and later. One kernel a chunk,
// one instruction family each; sm_90a takes them all.

// SM80: error: -t ptx: kernel @wgmma needs sm_90a: it uses wgmma.mma_async (warpgroup MMA), which sm_80 lacks; compile with --arch sm_90a
// SM80: error: -t ptx: kernel @wgmma_sync needs sm_90a: it uses wgmma.fence/commit_group/wait_group (warpgroup MMA), which sm_80 lacks; compile with --arch sm_90a
// SM80: error: -t ptx: kernel @setmaxnreg needs sm_90a: it uses setmaxnreg
// SM80: error: -t ptx: kernel @tma_store needs sm_90: it uses cp.async.bulk.tensor (TMA), which sm_80 lacks; compile with --arch sm_90 or sm_90a
// SM80: error: -t ptx: kernel @bulk_group needs sm_90: it uses cp.async.bulk (bulk async copies and their groups)
// SM80: error: -t ptx: kernel @try_wait needs sm_90: it uses mbarrier.try_wait
// SM80: error: -t ptx: kernel @expect_tx needs sm_90: it uses mbarrier expect_tx
// SM80: error: -t ptx: kernel @cluster_barrier needs sm_90: it uses thread-block clusters
// SM80: error: -t ptx: kernel @cluster_launch needs sm_90: it uses thread-block clusters
// SM80: error: -t ptx: kernel @proxy_fence needs sm_90: it uses fence.proxy.async
// SM80: error: -t ptx: kernel @griddepcontrol needs sm_90: it uses griddepcontrol (programmatic dependent launch), which sm_80 lacks; compile with --arch sm_90 or sm_90a
// SM80: error: -t ptx: function @helper needs sm_90: it uses griddepcontrol

// SM90: error: -t {{llvm|ptx}}: kernel @wgmma needs sm_90a: it uses wgmma.mma_async (warpgroup MMA), which sm_90 lacks
// SM90: error: -t {{llvm|ptx}}: kernel @wgmma_sync needs sm_90a: it uses wgmma.fence
// SM90: error: -t {{llvm|ptx}}: kernel @setmaxnreg needs sm_90a: it uses setmaxnreg (warpgroup register reallocation), which sm_90 lacks; compile with --arch sm_90a
// SM90-NOT: needs sm_90:

// SM90A-COUNT-12: .target sm_90a

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @wgmma(%a: i64, %b: i64, %out: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %zero = llvm.mlir.constant(0.0 : f32) : f32
      %u = llvm.mlir.undef : !llvm.struct<(f32, f32, f32, f32)>
      %c1 = llvm.insertvalue %zero, %u[0] : !llvm.struct<(f32, f32, f32, f32)>
      %c2 = llvm.insertvalue %zero, %c1[1] : !llvm.struct<(f32, f32, f32, f32)>
      %c3 = llvm.insertvalue %zero, %c2[2] : !llvm.struct<(f32, f32, f32, f32)>
      %c = llvm.insertvalue %zero, %c3[3] : !llvm.struct<(f32, f32, f32, f32)>
      %d = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      %x = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
      llvm.store %x, %out : f32, !llvm.ptr<1>
      llvm.return
    }
  }) : () -> ()
}

// -----

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @wgmma_sync() attributes {nvvm.kernel} {
      nvvm.wgmma.fence.aligned
      nvvm.wgmma.commit.group.sync.aligned
      nvvm.wgmma.wait.group.sync.aligned 0
      llvm.return
    }
  }) : () -> ()
}

// -----

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @setmaxnreg() attributes {nvvm.kernel} {
      nvvm.setmaxregister increase 232
      llvm.return
    }
  }) : () -> ()
}

// -----

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.mlir.global external @smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<4096 x i8>
    llvm.func @tma_store(%tm: !llvm.ptr) attributes {nvvm.kernel} {
      %p = llvm.mlir.addressof @smem : !llvm.ptr<3>
      %c0 = llvm.mlir.constant(0 : i32) : i32
      nvvm.cp.async.bulk.tensor.global.shared.cta %tm, %p, box[%c0, %c0] : !llvm.ptr, !llvm.ptr<3>
      llvm.return
    }
  }) : () -> ()
}

// -----

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @bulk_group() attributes {nvvm.kernel} {
      nvvm.cp.async.bulk.commit.group
      nvvm.cp.async.bulk.wait_group 0 {read}
      llvm.return
    }
  }) : () -> ()
}

// -----

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.mlir.global external @bars() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<2 x i64>
    llvm.func @try_wait(%phase: i32) attributes {nvvm.kernel} {
      %p = llvm.mlir.addressof @bars : !llvm.ptr<3>
      nvvm.mbarrier.try_wait.parity %p, %phase, %phase : !llvm.ptr<3>, i32, i32
      llvm.return
    }
  }) : () -> ()
}

// -----

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.mlir.global external @bars() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<2 x i64>
    llvm.func @expect_tx() attributes {nvvm.kernel} {
      %p = llvm.mlir.addressof @bars : !llvm.ptr<3>
      %one = llvm.mlir.constant(1 : i32) : i32
      nvvm.mbarrier.init %p, %one : !llvm.ptr<3>, i32
      nvvm.mbarrier.arrive.expect_tx %p, %one : !llvm.ptr<3>, i32
      llvm.return
    }
  }) : () -> ()
}

// -----

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @cluster_barrier() attributes {nvvm.kernel} {
      nvvm.cluster.arrive {aligned}
      nvvm.cluster.wait {aligned}
      llvm.return
    }
  }) : () -> ()
}

// -----

// A cluster launch alone (the kernel's attribute, no cluster instruction in its body).
module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @cluster_launch() attributes {nvvm.kernel, nvvm.cluster_dim = array<i32: 2, 1, 1>} {
      llvm.return
    }
  }) : () -> ()
}

// -----

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @proxy_fence() attributes {nvvm.kernel} {
      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
      llvm.return
    }
  }) : () -> ()
}

// -----

module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @griddepcontrol() attributes {nvvm.kernel} {
      nvvm.griddepcontrol wait
      nvvm.griddepcontrol launch_dependents
      llvm.return
    }
  }) : () -> ()
}

// -----

// A device function (not a kernel) is named as one.
module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @helper() {
      nvvm.griddepcontrol wait
      llvm.return
    }
    llvm.func @uses_helper() attributes {nvvm.kernel} {
      llvm.call @helper() : () -> ()
      llvm.return
    }
  }) : () -> ()
}
