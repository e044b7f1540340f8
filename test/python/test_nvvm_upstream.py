"""fuser's nvvm dialect against upstream MLIR (the MLIR that jaxlib carries).

Every nvvm op printed by xDSL (custom and generic form) must parse and verify under upstream
MLIR, and upstream's own printing must parse back in xDSL to the same ops. jaxlib's
`register_dialects` registers the nvvm, llvm, gpu, arith, math, scf, ... dialects.
"""

from __future__ import annotations

import functools
import io
import re
import sys
from pathlib import Path

import pytest
from xdsl.dialects import builtin, llvm
from xdsl.dialects.builtin import Float32Type, IntegerAttr, i32
from xdsl.ir import Block, Region
from xdsl.printer import Printer

from fuser.dialects import nvvm

jax_ir = pytest.importorskip("jaxlib.mlir.ir", reason="jaxlib (upstream MLIR) is not installed")

sys.path.insert(0, str(Path(__file__).parent))
import test_nvvm_translation as kernels  # noqa: E402  (the hand-written nvvm-level kernels)




def _print(op, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(op)
    return out.getvalue()


def _all_nvvm_ops_module() -> builtin.ModuleOp:
    """A module with one llvm.func using every nvvm op, built with the Python constructors."""
    ftype = llvm.LLVMFunctionType([], llvm.LLVMVoidType())
    block = Block()
    ops = []
    regs = [cls() for cls in nvvm.SPECIAL_REGISTER_OPS.values()]
    ops += regs
    tid = regs[0].res
    c64 = llvm.ConstantOp(IntegerAttr(64, i32), i32)
    mask = llvm.ConstantOp(IntegerAttr(-1, i32), i32)
    clamp = llvm.ConstantOp(IntegerAttr(31, i32), i32)
    one = llvm.ConstantOp(builtin.FloatAttr(1.0, Float32Type()), Float32Type())
    ops += [c64, mask, clamp, one]
    ops += [nvvm.BarrierOp(), nvvm.BarrierOp(tid), nvvm.BarrierOp(tid, c64)]
    ops += [nvvm.BarrierArriveOp(tid, c64), nvvm.BarrierArriveOp(None, c64)]
    ops += [nvvm.FenceProxyOp("async.shared", "cta"), nvvm.FenceProxyOp("async.shared", "cluster"),
            nvvm.FenceProxyOp("async.global"), nvvm.FenceProxyOp("async")]
    for kind in nvvm.ShflKind:
        ops.append(nvvm.ShflOp(kind, mask, one, tid, clamp))
        ops.append(nvvm.ShflOp(kind, mask, tid, tid, clamp))
        ops.append(nvvm.ShflOp(kind, mask, one, tid, clamp, return_value_and_is_valid=True))
    ops.append(llvm.ReturnOp.build(operands=[[]]))
    block.add_ops(ops)
    func = llvm.FuncOp("all_nvvm", ftype, body=Region(block))
    func.attributes["nvvm.kernel"] = builtin.UnitAttr()
    module = builtin.ModuleOp([func])
    module.verify()
    return module


@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
def test_every_nvvm_op_parses_upstream(upstream, generic):
    text = _print(_all_nvvm_ops_module(), generic)
    up = upstream(text)
    printed = str(up)
    # upstream prints the same custom syntax we do
    assert "nvvm.read.ptx.sreg.nctaid.z : i32" in printed
    assert "nvvm.read.ptx.sreg.warpsize : i32" in printed
    assert "nvvm.barrier id = " in printed and "number_of_threads = " in printed
    assert "nvvm.shfl.sync bfly" in printed
    assert "{return_value_and_is_valid} : f32 -> !llvm.struct<(f32, i1)>" in printed


def test_custom_form_matches_upstream_text(upstream):
    """Our custom form of each nvvm op is character-for-character upstream's."""
    ours = _print(_all_nvvm_ops_module())
    theirs = str(upstream(ours))

    def nvvm_lines(text):
        return [
            line.split("=", 1)[-1].strip() if line.strip().startswith("%") else line.strip()
            for line in text.splitlines()
            if "nvvm." in line and "nvvm.kernel" not in line
        ]

    def strip_names(lines):  # SSA names differ (%0 vs %1...): compare the shapes of the ops
        import re

        return [re.sub(r"%[\w]+", "%_", line) for line in lines]

    assert strip_names(nvvm_lines(ours)) == strip_names(nvvm_lines(theirs))


def test_upstream_output_parses_in_xdsl(upstream):
    """Upstream's printing of our ops parses back in xDSL to the same ops."""
    theirs = str(upstream(_print(_all_nvvm_ops_module())))
    module = kernels.parse(theirs)
    names = [op.name for op in module.walk() if op.name.startswith("nvvm.")]
    assert names.count("nvvm.shfl.sync") == 12
    assert names.count("nvvm.barrier") == 3
    assert len([n for n in names if n.startswith("nvvm.read.ptx.sreg.")]) == 14


def test_nvvm_barrier0_is_gone_upstream(upstream):
    with pytest.raises(Exception, match="nvvm.barrier0"):
        upstream("llvm.func @k() {\n  nvvm.barrier0\n  llvm.return\n}")


@pytest.mark.parametrize(
    "name",
    ["COPY4", "WARP_SUM", "BLOCK_REDUCE", "BF16_EXP", "IF_RESULTS", "MATH_ALL", "NVVM_ALL", "VECTOR_OPS"],
)
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
def test_nvvm_level_kernels_parse_upstream(upstream, name, generic):
    """The whole nvvm-level test kernels, as xDSL prints them, are valid upstream MLIR."""
    module = kernels.parse(getattr(kernels, name))
    upstream(_print(module, generic))


def _hopper_nvvm_module() -> builtin.ModuleOp:
    """One llvm.func using the Hopper nvvm ops fuser emits."""
    ptr3 = llvm.LLVMPointerType(builtin.IntAttr(3))
    ftype = llvm.LLVMFunctionType([ptr3], llvm.LLVMVoidType())
    block = Block(arg_types=[ptr3])
    count = llvm.ConstantOp(IntegerAttr(1, i32), i32)
    block.add_ops([
        count, nvvm.MBarrierInitOp(block.args[0], count), nvvm.MBarrierArriveOp(block.args[0]),
        nvvm.MBarrierArriveExpectTxOp(block.args[0], count),
        nvvm.SetMaxRegisterOp("increase", 232), nvvm.SetMaxRegisterOp("decrease", 40),
        nvvm.WgmmaFenceAlignedOp(), nvvm.WgmmaGroupSyncAlignedOp(), nvvm.WgmmaWaitGroupSyncOp(0),
        nvvm.CpAsyncBulkCommitGroupOp(), nvvm.CpAsyncBulkWaitGroupOp(1, read=True), nvvm.CpAsyncBulkWaitGroupOp(0),
        llvm.ReturnOp.build(operands=[[]]),
    ])
    module = builtin.ModuleOp([llvm.FuncOp("hopper_ops", ftype, body=Region(block))])
    module.verify()
    return module


def test_hopper_nvvm_ops_generic_form_parses_upstream(upstream):
    """The generic form too: properties as upstream spells them (`#nvvm<action increase>`,
    `read` a property, the TMA ops' operand groups and mode)."""
    theirs = str(upstream(_print(_hopper_nvvm_module(), generic=True)))
    assert "nvvm.setmaxregister increase 232" in theirs and "nvvm.cp.async.bulk.wait_group 1 {read}" in theirs


def test_hopper_nvvm_ops_are_upstream_text(upstream):
    """The Hopper ops print as upstream prints them, verify there, and upstream's printing parses
    back in xDSL to the same ops."""
    ours = _print(_hopper_nvvm_module())
    theirs = str(upstream(ours))
    for text in ("nvvm.mbarrier.init %", "nvvm.mbarrier.arrive %", "nvvm.mbarrier.arrive.expect_tx %",
                 "nvvm.setmaxregister increase 232",
                 "nvvm.setmaxregister decrease 40", "nvvm.cp.async.bulk.commit.group",
                 "nvvm.cp.async.bulk.wait_group 1 {read}", "nvvm.cp.async.bulk.wait_group 0"):
        assert text in ours and text in theirs, text
    back = [op.name for op in kernels.parse(theirs).walk() if op.name.startswith("nvvm.")]
    assert back.count("nvvm.cp.async.bulk.wait_group") == 2 and back.count("nvvm.setmaxregister") == 2


@pytest.mark.parametrize("bad,message", [
    (lambda: nvvm.SetMaxRegisterOp("more", 232), "increase or decrease"),
    (lambda: nvvm.SetMaxRegisterOp("increase", 233), "multiple of 8 in 24..256"),
    (lambda: nvvm.CpAsyncBulkWaitGroupOp(-1), "must be >= 0"),
])
def test_hopper_nvvm_op_verifiers(bad, message):
    from xdsl.utils.exceptions import VerifyException

    with pytest.raises(VerifyException, match=message):
        bad().verify()


def _lowered_cases() -> dict[str, tuple[str, str]]:
    from fuser.tools.sanitize import CASES

    root = Path(__file__).parent.parent.parent
    cases = dict(CASES)
    for f in sorted((root / "examples").glob("*.mlir")):
        if f.name != "bad.mlir":
            cases[f.name] = (f.read_text(), "default")
    return cases


@functools.cache
def _nvvm(text: str, pipeline: str) -> str:
    """The fusion lowered through `pipeline` to the nvvm level, printed (the passes only: no
    LLVM, and no second run of them for a compile result's printed stage)."""
    from fuser.dialects.ir import parse_module, print_module
    from fuser.passes.pipeline import build_pipeline, run_passes

    m = parse_module(text)
    run_passes(build_pipeline(pipeline), m, verify_each=False)
    return print_module(m)


def test_lowered_modules_verify_upstream(upstream):
    """Every example and sanitizer case, lowered to the nvvm level, parses and verifies in
    upstream MLIR as a whole: kernels and host function (TMA descriptors included)."""
    for name, (text, pipeline) in _lowered_cases().items():
        upstream(_nvvm(text, pipeline))


# fuser's own math ops (dialects/math_ext.py: erfinv, erfcinv, lgamma, and gelu's erf form of f64)
# have no upstream op to parse as; a fuzz seed whose fusion draws one gives way to the next seed
_FUSER_OWN_MATH = re.compile(r"fusion\.(erfinv|erfcinv|lgamma) |fusion\.gelu %[\w.]+ : tensor<[\dx]*xf64>")


def _variant_cases() -> dict[str, tuple[str, str]]:
    """Lowerings the examples and the sanitizer set do not take: every operand layout, the wide
    tiles, ping-pong with two B operands, a persistent cluster grid, split-K's 3-D partials with
    a ragged K, a persistent serial split, 3-D reductions, fuzzer-drawn fusions."""
    from test_matmul import GATED, matmul_text

    from fuser.tools.fuzz import fuzz_case, pipeline_for
    cases = {f"layout ta={ta} tb={tb}": (matmul_text(256, 384, 512, ta, tb), "default")
             for ta in (False, True) for tb in (False, True)}
    cases["tile 128x256"] = (matmul_text(1024, 2048, 512), 'default{tile="128x256"}')
    cases["tile 256x128"] = (matmul_text(2048, 1024, 512), 'default{tile="256x128"}')
    cases["gated ping-pong"] = (GATED, "default{matmul_pingpong=1 sms=4}")
    cases["cluster persistent"] = (matmul_text(512, 256, 512), "default{matmul_cluster=2 matmul_persistent=1 sms=4}")
    cases["split-K ragged"] = (matmul_text(100, 200, 10000), pipeline_for("fusion-split-k{strategy=two-kernel factor=3}"))
    cases["serial persistent"] = (matmul_text(256, 256, 4096), pipeline_for("fusion-split-k{strategy=serial factor=4}")
                                  .replace("convert-fusion-to-sched", "convert-fusion-to-sched{matmul_persistent=1 sms=8}", 1))
    for seed in (2, 11, 20, 100, 205):  # 3-D cases and a matmul case of the fuzzer
        while _FUSER_OWN_MATH.search(fuzz_case(seed).text):  # (the next seed that draws none)
            seed += 1
        cases[f"fuzz {seed}"] = (fuzz_case(seed).text, "default")
    return cases


def test_lowering_variants_verify_upstream(upstream):
    """More of what the test suite lowers, each a whole module under upstream MLIR."""
    for name, (text, pipeline) in _variant_cases().items():
        kern = _nvvm(text, pipeline)
        assert "gpu.module" in kern, name
        upstream(kern)


def test_matmul_kernels_verify_upstream(upstream):
    """Every matmul variant (plain, own and reused staging, cluster, persistent, ping-pong,
    split-K, serial split-K, the example) has its Hopper instructions as upstream nvvm ops, not
    inline PTX; what inline asm remains is counted."""
    cases = {n: c for n, c in _lowered_cases().items() if "matmul" in n}
    assert len(cases) == 12  # (11 sanitizer cases, one of them a row kernel feeding a matmul, and the example)
    for name, (text, pipeline) in cases.items():
        kern = _nvvm(text, pipeline)
        assert "nvgpu.tma.create.descriptor" in kern and "sched." not in kern, name
        asm = [ln for ln in kern.splitlines() if "llvm.inline_asm" in ln]
        for ptx in ("setmaxnreg", "cp.async.bulk.commit_group", "cp.async.bulk.wait_group", "mbarrier.init",
                    "mbarrier.arrive.shared.b64", "mbarrier.arrive.expect_tx", "wgmma.fence.sync", "wgmma.commit_group.sync",
                    "wgmma.wait_group.sync", "wgmma.mma_async", "fence.proxy", ".global.shared::cta",
                    "shared::cluster.global", "barrier.cluster", "fence.mbarrier_init", "mapa",
                    "cp.reduce.async.bulk", "mbarrier.try_wait"):  # (an empty asm tying the accumulators is commented "wgmma.wait_group")
            assert not [ln for ln in asm if ptx in ln], (name, ptx)
        assert "nvvm.setmaxregister" in kern and "nvvm.mbarrier.init" in kern, name
        assert kern.count("nvvm.wgmma.mma_async") >= 2, name  # (two consumer row halves or two B operands)
        assert "nvvm.cp.async.bulk.tensor.shared.cluster.global" in kern, name
        if "cluster" in name:
            assert "multicast_mask = " in kern and "nvvm.cluster.arrive" in kern and "nvvm.mapa" in kern, name
        assert "nvvm.mbarrier.try_wait.parity" in kern, name
        # What is left as inline asm has no upstream op (docs/ir-levels.md): the grid semaphores'
        # acquire spin and release (serial split-K), and the empty asm that ties the accumulators
        # to a wgmma.wait_group. Counted: nothing else may appear.
        left = [ln for ln in asm if not any(x in ln for x in (
            "// wgmma.wait_group: accumulators ready", "st.release.gpu.global.b32", "ld.acquire.gpu.global.b32"))]
        assert left == [], (name, left[:2])
        serial = "serial" in name
        assert (sum("st.release.gpu" in ln for ln in asm) > 0) == serial, name  # (only serial split-K has semaphores)


@pytest.mark.parametrize("lit_file", ["wgmma-mma-async.mlir", "tma-load.mlir", "cluster.mlir", "nvgpu-descriptor.mlir",
                                      "nvvm-to-llvm.mlir", "griddepcontrol.mlir"])
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
def test_new_hopper_ops_parse_upstream(upstream, lit_file, generic):
    """The lit inputs of the ops added for issue 12 (wgmma.mma_async, the TMA load with its
    address-space cast, the cluster ops, mapa, try_wait, the nvgpu descriptor) and griddepcontrol, as xDSL prints
    them in either form, parse and verify in upstream MLIR."""
    from fuser.dialects.ir import parse_module

    text = (Path(__file__).parents[1] / "lit" / "nvvm" / lit_file).read_text()
    upstream(_print(parse_module(text, lit_file), generic))
