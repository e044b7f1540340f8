"""One `sched.kernel` to one `llvm.func` (bare-pointer convention, `gpu.kernel` / `nvvm.kernel`).

The kernel's ops move into the function's entry block, whose arguments are the pointers; then one
`PatternRewriteWalker` pass applies every op family's patterns in block order, parents before their
regions, without revisiting the ops the patterns create. Buffer-defining ops are erased after it.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from fuser.dialects import sched
from fuser.lowering.provenance import located, stamp

from .cluster import cluster_patterns
from .common import PASSTHROUGH_DIALECTS, Buffer, SchedToNVVMError, ptr_type
from .context import DispatchingApplier, KernelContext, KernelPattern
from .control import control_patterns
from .indices import index_patterns
from .memory import memory_patterns
from .tma import tma_patterns
from .wgmma import wgmma_patterns


class CheckRemainingOp(KernelPattern):
    """Last in line: what no pattern lowered must be an op that stays (arith, math, scf, vector, llvm,
    nvvm, touching no memref) or a buffer waiting to be erased; anything else is an error that names
    the op and the kernel."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        k = self.k
        if op.results and op.results[0] in k.buffers:
            return  # sched.alloc / memref.collapse_shape: erased after the walk
        if isinstance(op, sched.YieldOp):
            raise k.fail(op, "misplaced")
        if op.dialect_name() not in PASSTHROUGH_DIALECTS:
            raise k.fail(op)
        k.check_kept(op)


class StopAtFirstError(RewritePattern):
    """Applies `pattern` until it raises `SchedToNVVMError`, which is kept in the context for
    `lower_kernel` to raise after the walk. (Raised through the walker, the error would come out
    carrying a dump of the half-lowered kernel.)"""

    def __init__(self, k: KernelContext, pattern: RewritePattern):
        self.k = k
        self.pattern = pattern

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if self.k.error is not None:
            return
        # What the patterns build for `op` carries its location (lowering/provenance.py).
        rewriter.operation_insertion_handler.append(stamp)
        try:
            with located(op):
                self.pattern.match_and_rewrite(op, rewriter)
        except SchedToNVVMError as e:
            self.k.error = e
        finally:
            rewriter.operation_insertion_handler.remove(stamp)


def kernel_patterns(k: KernelContext) -> RewritePattern:
    # no dead-code elimination: an unused value the input computes stays in the output
    return StopAtFirstError(k, DispatchingApplier(
        [*index_patterns(k), *memory_patterns(k), *control_patterns(k), *tma_patterns(k), *wgmma_patterns(k),
         *cluster_patterns(k)], CheckRemainingOp(k)))


def lower_kernel(kernel: sched.KernelOp, index_bitwidth: int,
                 castui: type[Operation] | None = None) -> tuple[llvm.FuncOp, list[llvm.GlobalOp]]:
    """The kernel's `llvm.func` and the shared-memory globals it uses (the kernel op is left as is)."""
    old = kernel.body.block
    body = Block(arg_types=[ptr_type(0) if isinstance(a.type, sched.TensorMapType) else ptr_type(1)
                            for a in old.args])
    k = KernelContext(kernel, body, index_bitwidth, castui)
    for arg, ptr in zip(old.args, body.args):
        ptr.name_hint = arg.name_hint
        if isinstance(arg.type, sched.TensorMapType):
            k.tensor_maps[arg] = ptr
            continue
        assert isinstance(arg.type, MemRefType)
        k.buffers[arg] = Buffer(ptr, arg.type)
    for op in list(old.ops):
        op.detach()
        body.add_op(op)
    region = Region(body)
    PatternRewriteWalker(kernel_patterns(k), apply_recursively=False).rewrite_region(region)
    if k.error is not None:
        raise k.error
    for op in reversed(k.dead_ops):
        op.detach()
        op.erase()

    fn_type = llvm.LLVMFunctionType([a.type for a in body.args], llvm.LLVMVoidType())
    attrs: dict[str, Attribute] = {
        "gpu.kernel": UnitAttr(),
        "nvvm.kernel": UnitAttr(),
        "nvvm.maxntid": DenseArrayBase.from_list(i32, list(k.block_dims)),
    }
    if kernel.cluster is not None:
        attrs["nvvm.cluster_dim"] = DenseArrayBase.from_list(i32, list(kernel.cluster.get_values()))
    for name, v in kernel.attributes.items():
        attrs.setdefault(name, v)
    fn = llvm.FuncOp(k.name, fn_type, linkage=llvm.LinkageAttr("external"), body=region, extra_attrs=attrs)
    fn.location = kernel.location
    if k.tensor_maps:
        # a tensor map is read in parameter space: a 128-byte byval parameter marked grid_constant
        tm_attrs = DictionaryAttr({"llvm.byval": llvm.LLVMArrayType(128, IntegerType(8)),
                                   "llvm.align": IntegerAttr(64, i64), "nvvm.grid_constant": UnitAttr()})
        fn.properties["arg_attrs"] = ArrayAttr([
            tm_attrs if isinstance(a.type, sched.TensorMapType) else DictionaryAttr({})
            for a in old.args])
    return fn, k.globals
