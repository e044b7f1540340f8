// RUN: fuser-opt %s | fuser-opt | filecheck %s
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: fuser-opt %s -t llvm | filecheck %s --check-prefix=LLVM
// RUN: fuser-opt %s -t ptx | filecheck %s --check-prefix=PTX

// Programmatic dependent launch in upstream's syntax: the wait for the grids this one depends
// on, and the trigger that lets the dependent grid be dispatched. Both are LLVM intrinsics.

// CHECK-LABEL: llvm.func @dependent
// CHECK-NEXT:  nvvm.griddepcontrol wait
// CHECK-NEXT:  nvvm.griddepcontrol launch_dependents
// CHECK-NEXT:  llvm.return

// GENERIC: "nvvm.griddepcontrol"() <{kind = #nvvm<grid_dep_action wait>}> : () -> ()
// GENERIC: "nvvm.griddepcontrol"() <{kind = #nvvm<grid_dep_action launch_dependents>}> : () -> ()

// LLVM: call void @llvm.nvvm.griddepcontrol.wait()
// LLVM: call void @llvm.nvvm.griddepcontrol.launch.dependents()

// PTX: griddepcontrol.wait;
// PTX: griddepcontrol.launch_dependents;
module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @dependent() attributes {nvvm.kernel} {
      nvvm.griddepcontrol wait
      nvvm.griddepcontrol launch_dependents
      llvm.return
    }
  }) : () -> ()
}
