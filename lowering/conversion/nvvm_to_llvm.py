"""The pass `convert-nvvm-to-llvm`: the nvvm ops that LLVM has no intrinsic for become the
inline PTX they stand for (`llvm.inline_asm`), as upstream MLIR's pass of the same name does.

After `convert-sched-to-nvvm` a kernel is typed nvvm: every Hopper instruction that upstream has
an op for is that op. This pass is the one place that spells those ops as PTX text; what is
left (barriers, shuffles, special registers, wgmma groups, mbarrier init/arrive) translates to
LLVM NVVM intrinsics. The LLVM IR translation runs it on any gpu.module that still needs it, so
a pipeline may stop at the nvvm level; `fuser-opt -p convert-nvvm-to-llvm` shows its output.

The PTX text is the text the kernels carried as inline asm before these ops existed, so the
PTX of every kernel is the same instructions either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, i32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from fuser.dialects import nvvm
from fuser.dialects.llvm_ext import AddrSpaceCastOp

# nvvm ops this pass rewrites (the translation refuses them: it expects this pass first)
LOWERED_OPS: tuple[type[Operation], ...] = (
    nvvm.WgmmaMmaAsyncOp, nvvm.MBarrierArriveExpectTxOp, nvvm.CpAsyncBulkCommitGroupOp,
    nvvm.CpAsyncBulkWaitGroupOp, nvvm.SetMaxRegisterOp, nvvm.FenceProxyOp,
    nvvm.CpAsyncBulkTensorSharedCtaToGlobalOp, nvvm.CpAsyncBulkTensorReduceOp,
    nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp, nvvm.MapaOp,
    nvvm.MBarrierTryWaitParityOp,
)


def _asm(rewriter: PatternRewriter, op: Operation, text: str, constraints: str = "~{memory}",
         operands: list[SSAValue] = (), result: Attribute | None = None) -> None:
    """Replace `op` by one `llvm.inline_asm` with side effects."""
    asm = llvm.InlineAsmOp(text, constraints, list(operands), [result] if result is not None else [],
                           has_side_effects=True)
    rewriter.replace(op, asm)


def _shared_u32(rewriter: PatternRewriter, ptr: SSAValue) -> SSAValue:
    """The 32-bit shared-window address of a `!llvm.ptr<3>` (what PTX's `[...]` operands take)."""
    cast = llvm.PtrToIntOp(ptr, i32)
    rewriter.insert(cast)
    return cast.results[0]


class LowerWgmmaMmaAsync(RewritePattern):
    """`wgmma.mma_async.sync.aligned.m64nNkK.f32.T.T {d...}, descA, descB, p, sA, sB, tA, tB`: the
    accumulators go in and out through the asm's tied operands, one register each."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.WgmmaMmaAsyncOp, rewriter: PatternRewriter) -> None:
        struct = op.inouts.type
        elems = list(struct.types.data)
        n_acc = len(elems)
        accs = []
        for i, t in enumerate(elems):
            x = llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [i]), op.inouts, t)
            rewriter.insert(x)
            accs.append(x.results[0])
        shape = op.shape
        ta, tb, td = op.typeA.data.value, op.typeB.data.value, op.typeD.data.value
        scale_d = 1 if op.scaleD.data == nvvm.WgmmaScaleOut.ONE else 0
        scale_a = 1 if op.scaleA.data == nvvm.WgmmaScaleIn.ONE else -1
        scale_b = 1 if op.scaleB.data == nvvm.WgmmaScaleIn.ONE else -1
        regs = ", ".join(f"${i}" for i in range(n_acc))
        # (the transpose immediates exist for the 16-bit types only: the others are K-major)
        trans = f", {int(op.trans_a)}, {int(op.trans_b)}" if ta in ("f16", "bf16") else ""
        text = ("{\n.reg .pred p;\n"
                f"setp.ne.b32 p, {scale_d}, 0;\n"
                f"wgmma.mma_async.sync.aligned.m{shape.m.data}n{shape.n.data}k{shape.k.data}.{td}.{ta}.{tb} "
                f"{{{regs}}}, ${n_acc}, ${n_acc + 1}, p, {scale_a}, {scale_b}{trans};\n}}")
        reg = "f" if td == "f32" else "r"
        constraints = ",".join([f"={reg}"] * n_acc + ["l", "l"] + [str(i) for i in range(n_acc)])
        _asm(rewriter, op, text, constraints, [op.descriptorA, op.descriptorB, *accs], struct)


class LowerArriveExpectTx(RewritePattern):
    """`mbarrier.arrive.expect_tx.shared::cta.b64 _, [addr], bytes` (the `_` sink: no state)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.MBarrierArriveExpectTxOp, rewriter: PatternRewriter) -> None:
        a32 = _shared_u32(rewriter, op.addr)
        _asm(rewriter, op, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}",
             [a32, op.txcount])


class LowerBulkCommit(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.CpAsyncBulkCommitGroupOp, rewriter: PatternRewriter) -> None:
        _asm(rewriter, op, "cp.async.bulk.commit_group;")


class LowerBulkWait(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.CpAsyncBulkWaitGroupOp, rewriter: PatternRewriter) -> None:
        read = ".read" if op.read is not None else ""
        _asm(rewriter, op, f"cp.async.bulk.wait_group{read} {op.group.value.data};")


class LowerSetMaxRegister(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.SetMaxRegisterOp, rewriter: PatternRewriter) -> None:
        action = {"increase": "inc", "decrease": "dec"}[op.action.data.value]
        _asm(rewriter, op, f"setmaxnreg.{action}.sync.aligned.u32 {op.regCount.value.data};")


class LowerFenceProxy(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.FenceProxyOp, rewriter: PatternRewriter) -> None:
        space = f"::{op.space.data.value}" if op.space is not None else ""
        _asm(rewriter, op, f"fence.proxy.{op.kind.data.value}{space};")


class LowerTmaFromShared(RewritePattern):
    """A TMA store or reduction: `[tmap, {coords}], [smem]`, the coordinates innermost first."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (nvvm.CpAsyncBulkTensorSharedCtaToGlobalOp, nvvm.CpAsyncBulkTensorReduceOp)):
            return
        coords = list(op.coordinates)
        rank = len(coords)
        if isinstance(op, nvvm.CpAsyncBulkTensorReduceOp):
            instruction = (f"cp.reduce.async.bulk.tensor.{rank}d.global.shared::cta.{op.redKind.data.value}"
                           ".tile.bulk_group")
        else:
            instruction = f"cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group"
        a32 = _shared_u32(rewriter, op.srcMem)
        cs = ", ".join(f"${i + 1}" for i in range(rank))
        constraints = ",".join(["l"] + ["r"] * rank + ["r", "~{memory}"])
        _asm(rewriter, op, f"{instruction} [$0, {{{cs}}}], [${rank + 1}];", constraints,
             [op.tmaDescriptor, *coords, a32])


class LowerTmaLoad(RewritePattern):
    """`cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes[.multicast
    ::cluster] [dst], [tmap, {coords}], [mbar][, mask]`. A destination cast from this CTA's shared
    memory (address space 3) takes that 32-bit address, which PTX accepts as the executing CTA's
    shared::cluster address; the cast is dropped when nothing else reads it. A constant mask is
    written into the text (`mov.b16`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp, rewriter: PatternRewriter) -> None:
        cast = op.dstMem.owner
        local = isinstance(cast, AddrSpaceCastOp) and cast.arg.type.addr_space.data == 3
        dst = _shared_u32(rewriter, cast.arg if local else op.dstMem)
        coords = list(op.coordinates)
        rank = len(coords)
        cs = ", ".join(f"${i + 2}" for i in range(rank))
        operands = [dst, op.tmaDescriptor, *coords, _shared_u32(rewriter, op.mbar)]
        constraints = ["r", "l"] + ["r"] * rank + ["r"]
        copy = f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        if op.multicastMask is None:
            text = f"{copy} [$0], [$1, {{{cs}}}], [${rank + 2}];"
        else:
            mask = op.multicastMask.owner
            if isinstance(mask, (arith.ConstantOp, llvm.ConstantOp)) and isinstance(mask.value, IntegerAttr):
                value = f"{mask.value.value.data}"
            else:
                operands.append(op.multicastMask)
                constraints.append("h")
                value = f"${rank + 3}"
            text = (f"{{\n.reg .b16 mask;\nmov.b16 mask, {value};\n{copy}.multicast::cluster "
                    f"[$0], [$1, {{{cs}}}], [${rank + 2}], mask;\n}}")
        _asm(rewriter, op, text, ",".join(constraints + ["~{memory}"]), operands)
        if local and not cast.results[0].uses:
            rewriter.erase(cast)


class LowerRemoteArrive(RewritePattern):
    """An arrive on another CTA's mbarrier, `nvvm.mbarrier.arrive (nvvm.mapa %bar, %cta) :
    !llvm.ptr<7>`: `mapa.shared::cluster.u32` and `mbarrier.arrive.shared::cluster.b64` in one
    asm, on the 32-bit addresses (LLVM's own mapa would hand back a shared::cluster pointer that
    this translation does not carry)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.MBarrierArriveOp, rewriter: PatternRewriter) -> None:
        mapa = op.addr.owner
        if op.addr.type.addr_space.data != 7 or not isinstance(mapa, nvvm.MapaOp):
            return
        local = _shared_u32(rewriter, mapa.a)
        _asm(rewriter, op, "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, $0, $1;\n"
                           "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}", "r,r,~{memory}", [local, mapa.b])
        if not mapa.res.uses:
            rewriter.erase(mapa)


class LowerTryWaitParity(RewritePattern):
    """A loop of `mbarrier.try_wait.parity.shared::cta.b64` with the suspend-time hint, until the
    phase has completed (the label made unique per asm by `${:uid}`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.MBarrierTryWaitParityOp, rewriter: PatternRewriter) -> None:
        addr = _shared_u32(rewriter, op.addr)
        _asm(rewriter, op, "{\n.reg .pred p;\nLAB_WAIT_${:uid}:\n"
                           "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1, $2;\n"
                           "@!p bra LAB_WAIT_${:uid};\n}", "r,r,r,~{memory}", [addr, op.phase, op.ticks])


def patterns() -> list[RewritePattern]:
    return [LowerWgmmaMmaAsync(), LowerArriveExpectTx(), LowerBulkCommit(), LowerBulkWait(),
            LowerSetMaxRegister(), LowerFenceProxy(), LowerTmaFromShared(), LowerTmaLoad(), LowerRemoteArrive(),
            LowerTryWaitParity()]


def needs_lowering(op: Operation) -> bool:
    """Whether `op` (a module) holds an nvvm op that this pass rewrites."""
    return any(isinstance(o, LOWERED_OPS) for o in op.walk())


def lower_nvvm_to_llvm(op: Operation) -> None:
    """Rewrite, in place, every nvvm op under `op` that LLVM has no intrinsic for."""
    walker = PatternRewriteWalker(GreedyRewritePatternApplier(patterns()), apply_recursively=False)
    for region in op.regions:
        walker.rewrite_region(region)


@dataclass(frozen=True)
class ConvertNVVMToLLVM(ModulePass):
    """nvvm ops without an LLVM intrinsic -> `llvm.inline_asm` (their PTX text)."""

    name = "convert-nvvm-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_nvvm_to_llvm(op)
