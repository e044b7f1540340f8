"""The host side, lowered in place:

- each `sched.workspace` becomes `gpu.alloc`, plus `gpu.memset` of zero when `zero_init`; a
  `kept_zero` one gets no memset but the unit attribute `fuser.kept_zero` on its `gpu.alloc`,
  which tells the runtime to zero it once when it allocates it (its kernels leave it zero);
  every workspace gets a `gpu.dealloc` before its block's terminator;
- each `sched.launch` becomes a `gpu.launch_func` with the kernel's static geometry and dynamic
  shared memory;
- each `sched.tensor_map` becomes upstream's `nvgpu.tma.create.descriptor` on the buffer cast to
  an unranked memref (`memref.cast`), its box as index constants: the runtime executes it
  (cuTensorMapEncodeTiled) and passes the descriptor to the kernel by value.

This stays a walk: it is a handful of ops, with constants hoisted to the function's entry and every
workspace's dealloc placed once all are known; patterns would add a driver and gain nothing.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, gpu
from xdsl.dialects.builtin import (AnyFloat, FloatAttr, IndexType, IntegerAttr, IntegerType, MemRefType, SymbolRefAttr,
                                  UnitAttr, UnrankedMemRefType, i32, i64)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.traits import IsTerminator

from fuser.dialects import sched
from fuser.dialects.gpu_ext import MemsetOp
from fuser.dialects.host_attrs import CORESIDENT_ATTR, DEPENDENT_LAUNCH_ATTR, KEPT_ZERO_ATTR
from fuser.dialects.memref_ext import CastOp
from fuser.dialects.nvgpu import SWIZZLE, TensorMapDescriptorType, TmaCreateDescriptorOp
from fuser.lowering.provenance import located

from .common import EntryBuilder, SchedToNVVMError, where


def _zero(t: Attribute) -> arith.ConstantOp:
    if isinstance(t, AnyFloat):
        return arith.ConstantOp(FloatAttr(0.0, t))
    if isinstance(t, IntegerType | IndexType):
        return arith.ConstantOp(IntegerAttr(0, t))
    raise SchedToNVVMError(f"cannot zero-initialise a workspace of element type {t}")


def _lower_tensor_map(op: sched.TensorMapOp, const) -> None:
    """`sched.tensor_map %buf` -> `nvgpu.tma.create.descriptor (memref.cast %buf) box[...]`."""
    t: sched.TensorMapType = op.result.type
    buf = op.operands[0]
    elem = t.tensor.element_type
    cast = CastOp.create(operands=[buf], result_types=[UnrankedMemRefType.from_type(elem)])
    box = MemRefType(elem, t.box_dims, memory_space=IntegerAttr(3, i64))
    desc = TmaCreateDescriptorOp(cast, [const(b) for b in t.box_dims],
                                 TensorMapDescriptorType(box, SWIZZLE[t.swizzle.data]))
    cast.location = desc.location = op.location
    Rewriter.replace_op(op, [cast, desc])


def lower_host(fn: func.FuncOp, kernels: dict[str, sched.KernelOp], gpu_module: str | None) -> None:
    entry = fn.body.blocks[0] if fn.body.blocks else None
    if entry is None:
        return
    const = EntryBuilder(entry).const
    fname = fn.sym_name.data
    workspaces: list[tuple[SSAValue, Block]] = []
    tensor_maps: list[sched.TensorMapOp] = []
    for op in list(fn.walk()):
        with located(op):  # what replaces a host op, and the constants it hoists, point where it did
            _lower_host_op(op, const, kernels, gpu_module, fname, workspaces, tensor_maps)
    for op in tensor_maps:
        with located(op):
            _lower_tensor_map(op, const)
    for ws, block in workspaces:
        term = block.last_op
        dealloc = gpu.DeallocOp(ws)
        dealloc.location = ws.owner.location
        if term is None or not term.has_trait(IsTerminator):
            block.add_op(dealloc)
        else:
            block.insert_op_before(dealloc, term)


def _lower_host_op(op: Operation, const, kernels: dict[str, sched.KernelOp], gpu_module: str | None, fname: str,
                   workspaces: list, tensor_maps: list) -> None:
    """Lower one host op in place; workspaces (freed at the end) and tensor maps (lowered after
    the launches) are collected."""
    if isinstance(op, sched.WorkspaceOp):
        t = op.result.type
        new: list[Operation] = [gpu.AllocOp(t)]
        if op.kept_zero is not None:
            new[0].attributes[KEPT_ZERO_ATTR] = UnitAttr()
        if op.zero_init is not None:
            zero = _zero(t.element_type)
            new += [zero, MemsetOp(new[0], zero)]
        block = op.parent_block()
        assert block is not None
        for n in new:
            n.location = op.location
            block.insert_op_before(n, op)
        op.result.replace_all_uses_with(new[0].results[0])
        op.detach()
        op.erase()
        workspaces.append((new[0].results[0], block))
    elif isinstance(op, sched.LaunchOp):
        kname = op.kernel.root_reference.data
        k = kernels.get(kname)
        at = f"'sched.launch'{where(op)} in @{fname}"
        if k is None or gpu_module is None:
            raise SchedToNVVMError(f"{at}: no sched.kernel @{kname} in this module")
        want = list(k.function_type.inputs.data)
        got = [a.type for a in op.args]
        if want != got:
            raise SchedToNVVMError(f"{at}: arguments ({', '.join(map(str, got))}) "
                                   f"do not match @{kname}'s ({', '.join(map(str, want))})")
        cluster = [const(c) for c in k.cluster.get_values()] if k.cluster is not None else None
        launch = gpu.LaunchFuncOp(
            SymbolRefAttr(gpu_module, [kname]),
            [const(g) for g in k.grid_dims],
            [const(t) for t in k.block_dims],
            clusterSize=cluster,
            kernelOperands=list(op.args),
            dynamicSharedMemorySize=const(k.smem.value.data, i32),
        )
        if CORESIDENT_ATTR in k.attributes:  # the executor checks that the grid fits on the GPU at once
            launch.attributes[CORESIDENT_ATTR] = UnitAttr()
        if DEPENDENT_LAUNCH_ATTR in op.attributes:  # launched with programmatic stream serialization
            launch.attributes[DEPENDENT_LAUNCH_ATTR] = UnitAttr()
        launch.location = op.location
        Rewriter.replace_op(op, launch)
    elif isinstance(op, sched.TensorMapOp):
        tensor_maps.append(op)  # after the launches: their argument check reads the sched type
    elif op.dialect_name() == "sched":
        raise SchedToNVVMError(f"cannot lower '{op.name}'{where(op)} in host function @{fname}")
