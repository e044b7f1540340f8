"""The Python builder API (fuser.api) and compile()'s plumbing."""

import importlib.util
import sys
import types
import zlib

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from fuser import api as fuser
from fuser.dialects.ir import parse_module
from fuser.runtime.reference import run_reference

BF16 = ml_dtypes.bfloat16


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def op_names(fb):
    return [op.name for op in fb.func.body.block.ops]


def roundtrip(fb):
    """Printed text parses back, verifies and prints identically."""
    text = fb.mlir()
    again = parse_module(text)
    assert str(again) == text
    return again


def test_bias_gelu_example(rng):
    with fuser.FusionBuilder("bias_gelu") as fb:
        x = fb.input((64, 96), "bf16", name="x")
        b = fb.input((96,), "bf16", name="b")
        y = fuser.gelu(fuser.cast(x, "f32") + fuser.cast(b, "f32"))
        fb.output(fuser.cast(y, "bf16"))
    assert isinstance(fb.module, ModuleOp)
    fb.module.verify()
    assert fb.func.sym_name.data == "bias_gelu"
    assert op_names(fb) == ["fusion.cast", "fusion.cast", "fusion.broadcast", "fusion.add", "fusion.gelu",
                            "fusion.cast", "func.return"]
    text = fb.mlir()
    assert "func.func @bias_gelu(%x: tensor<64x96xbf16>, %b: tensor<96xbf16>) -> tensor<64x96xbf16>" in text
    assert "fusion.broadcast %1 dims [0] : tensor<96xf32> to tensor<64x96xf32>" in text
    roundtrip(fb)

    xv = rng.standard_normal((64, 96)).astype(BF16)
    bv = rng.standard_normal(96).astype(BF16)
    (out,) = run_reference(fb.func, [xv, bv], "f64")
    s = xv.astype(np.float64) + bv.astype(np.float64)
    want = 0.5 * s * (1 + np.vectorize(__import__("math").erf)(s / np.sqrt(2)))
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_finish_without_context_manager():
    fb = fuser.FusionBuilder("f")
    x = fb.input((4,), "f32")
    fb.output(fuser.exp(x), x)
    m = fb.finish()
    assert fb.finish() is m and fb.module is m
    assert "-> (tensor<4xf32>, tensor<4xf32>)" in fb.mlir()
    with pytest.raises(RuntimeError, match="finished"):
        fb.input((4,), "f32")
    with pytest.raises(RuntimeError, match="finished"):
        fuser.exp(x)


def test_no_outputs():
    fb = fuser.FusionBuilder("empty")
    fb.input((4,), "f32")
    with pytest.raises(ValueError, match="no outputs"):
        fb.finish()


def test_exception_in_with_block_does_not_finish():
    with pytest.raises(ZeroDivisionError):
        with fuser.FusionBuilder("f") as fb:
            fb.input((4,), "f32")
            1 / 0
    assert fb._module is None


@pytest.mark.parametrize("sa,sb,out", [
    ((4, 5), (5,), (4, 5)),
    ((4, 1, 5), (3, 1), (4, 3, 5)),
    ((1,), (2, 3), (2, 3)),
    ((6, 1), (1, 7), (6, 7)),
    ((2, 3), (2, 3), (2, 3)),
])
def test_broadcasting_sugar(sa, sb, out, rng):
    with fuser.FusionBuilder("bc") as fb:
        a = fb.input(sa, "f32", name="a")
        b = fb.input(sb, "f32", name="b")
        c = a * b
        assert c.shape == out and c.dtype == "f32"
        fb.output(c)
    roundtrip(fb)
    names = op_names(fb)
    if sa == sb:
        assert names == ["fusion.mul", "func.return"]
    else:
        assert "fusion.broadcast" in names
    av = rng.standard_normal(sa).astype(np.float32)
    bv = rng.standard_normal(sb).astype(np.float32)
    (cv,) = run_reference(fb.func, [av, bv])
    np.testing.assert_array_equal(cv, av * bv)


def test_broadcast_to_drops_size1_dims_with_reshape():
    with fuser.FusionBuilder("bt") as fb:
        x = fb.input((3, 1), "f16")
        y = fuser.broadcast_to(x, (2, 3, 4))
        fb.output(y)
    text = fb.mlir()
    assert ": tensor<3x1xf16> to tensor<3xf16>" in text  # the reshape dropping the size-1 dim
    assert "dims [0, 2] : tensor<3xf16> to tensor<2x3x4xf16>" in text
    xv = np.arange(3, dtype=np.float16).reshape(3, 1)
    (yv,) = run_reference(fb.func, [xv])
    np.testing.assert_array_equal(yv, np.broadcast_to(xv, (2, 3, 4)))


def test_explicit_broadcast_and_errors():
    with fuser.FusionBuilder("b") as fb:
        x = fb.input((5,), "f32")
        y = fuser.broadcast(x, (5, 2), [-1])
        assert y.shape == (5, 2)
        with pytest.raises(ValueError, match="do not broadcast"):
            x + fb.input((4,), "f32")
        with pytest.raises(ValueError, match="cannot broadcast"):
            fuser.broadcast_to(y, (5,))
        with pytest.raises(ValueError, match="'fusion.broadcast' op"):  # the verifier's message
            fuser.broadcast(x, (4, 2), [1])  # the verifier's own message comes through
        fb.output(y)
    # The rejected op did not stay in the function.
    assert op_names(fb) == ["fusion.broadcast", "func.return"]


def test_scalar_sugar(rng):
    with fuser.FusionBuilder("scal") as fb:
        x = fb.input((3, 4), "bf16", name="x")
        y = (2.0 * x + 1) / 4 - 0.5
        z = 1.0 - x
        w = x ** 2
        v = np.float32(3.0) * x  # numpy scalars on the left work too
        fb.output(y, z, w, -v)
    roundtrip(fb)
    text = fb.mlir()
    assert "fusion.full 2.0 : tensor<3x4xbf16>" in text
    assert "fusion.full 4.0 : tensor<3x4xbf16>" in text
    assert "fusion.neg" in text and "fusion.pow" in text
    xv = rng.standard_normal((3, 4)).astype(BF16)
    y, z, w, nv = run_reference(fb.func, [xv], "f64")
    x64 = xv.astype(np.float64)
    np.testing.assert_allclose(y, (2 * x64 + 1) / 4 - 0.5, rtol=1e-12)
    np.testing.assert_allclose(z, 1 - x64, rtol=1e-12)
    np.testing.assert_allclose(w, x64**2, rtol=1e-12)
    np.testing.assert_allclose(nv, -3 * x64, rtol=1e-12)


def test_dtypes_promote_as_torch_with_a_cast_in_the_ir():
    """Mixed dtypes promote as torch's (issue 31): bf16 + f32 is f32 through a fusion.cast of
    the bf16 side; a matmul does not promote (its operand types pick the kernel)."""
    with fuser.FusionBuilder("promote") as fb:
        x = fb.input((4,), "bf16")
        y = fb.input((4,), "f32")
        s = x + y
        assert s.dtype == "f32" and fuser.maximum(x, y).dtype == "f32"
        with pytest.raises(TypeError, match="dtypes differ"):
            fuser.matmul(fuser.reshape(x, (2, 2)), fuser.reshape(y, (2, 2)))
        fb.output(s)
    assert op_names(fb)[:3] == ["fusion.cast", "fusion.add", "fusion.cast"]


def test_comparisons_and_where(rng):
    with fuser.FusionBuilder("cmp") as fb:
        a = fb.input((8,), "f32", name="a")
        b = fb.input((8,), "f32", name="b")
        masks = [a < b, a <= b, a > b, a >= b, a.eq(b), a.ne(b), a > 0.0]
        assert all(m.dtype == "i1" for m in masks)
        fb.output(*masks, fuser.where(a > b, a, 0.0))
    text = fb.mlir()
    for pred in ("lt", "le", "gt", "ge", "eq", "ne"):
        assert f"fusion.cmp {pred}, " in text
    roundtrip(fb)
    av = rng.integers(-2, 3, 8).astype(np.float32)
    bv = rng.integers(-2, 3, 8).astype(np.float32)
    outs = run_reference(fb.func, [av, bv])
    for got, want in zip(outs, [av < bv, av <= bv, av > bv, av >= bv, av == bv, av != bv, av > 0,
                               np.where(av > bv, av, 0)]):
        np.testing.assert_array_equal(got, want)


def test_tensor_identity_semantics():
    with fuser.FusionBuilder("ids") as fb:
        a = fb.input((2,), "f32")
        b = fb.input((2,), "f32")
        assert a == a and a != b  # identity, not elementwise
        assert len({a, b, a}) == 2
        with pytest.raises(TypeError, match="truth value"):
            bool(a < b)
        fb.output(a)


def test_where_needs_a_mask():
    with fuser.FusionBuilder("w") as fb:
        a = fb.input((2,), "f32")
        with pytest.raises(TypeError, match="i1"):
            fuser.where(a, a, a)
        fb.output(a)


def test_unary_functions(rng):
    fns = [fuser.exp, fuser.log, fuser.tanh, fuser.sqrt, fuser.rsqrt, fuser.relu, fuser.sigmoid, fuser.silu,
           fuser.abs, fuser.neg, fuser.gelu, lambda t: fuser.gelu(t, approximate="tanh"), abs]
    with fuser.FusionBuilder("un") as fb:
        x = fb.input((3, 5), "f16")
        fb.output(*[f(x) for f in fns])
    roundtrip(fb)
    text = fb.mlir()
    assert text.count('{approximate = "tanh"}') == 1
    assert text.count("fusion.abs") == 2
    xv = (np.abs(rng.standard_normal((3, 5))) + 0.1).astype(np.float16)
    outs = run_reference(fb.func, [xv])
    x32 = xv.astype(np.float32)
    np.testing.assert_allclose(outs[0].astype(np.float32), np.exp(x32), rtol=2e-3)
    np.testing.assert_allclose(outs[4].astype(np.float32), 1 / np.sqrt(x32), rtol=2e-3)
    with pytest.raises(ValueError, match="approximate"):
        fuser.gelu(x, approximate="fast")


def test_shape_functions(rng):
    with fuser.FusionBuilder("shapes") as fb:
        x = fb.input((2, 3, 4), "f32")
        r = fuser.reshape(x, (6, -1))
        p = fuser.permute(x, (2, 0, 1))
        s = fuser.segment_set(p)
        assert r.shape == (6, 4) and p.shape == (4, 2, 3) and s.shape == (4, 2, 3)
        assert fuser.reshape(x, (2, 3, 4)) is x and fuser.cast(x, "f32") is x  # no-ops emit nothing
        with pytest.raises(ValueError):
            fuser.reshape(x, (5, -1))
        with pytest.raises(ValueError):
            fuser.permute(x, (0, 1))
        fb.output(r, s)
    roundtrip(fb)
    xv = rng.standard_normal((2, 3, 4)).astype(np.float32)
    r, s = run_reference(fb.func, [xv])
    np.testing.assert_array_equal(r, xv.reshape(6, 4))
    np.testing.assert_array_equal(s, xv.transpose(2, 0, 1))


def test_reductions(rng):
    with fuser.FusionBuilder("red") as fb:
        x = fb.input((4, 6, 5), "bf16", name="x")
        s = fuser.sum(x, -1, dtype="f32")
        mx = fuser.amax(x, (0, 2), keepdim=True)
        mn = x.cast("f32").sum([1])
        mi = fuser.amin(x, 1)
        avg, m2, n = fuser.welford(x, [1, 2])
        var, mean = fuser.var_mean(x, 1, correction=0, keepdim=True)
        assert s.shape == (4, 6) and s.dtype == "f32"
        assert mx.shape == (1, 6, 1) and mx.dtype == "bf16"
        assert (avg.shape, m2.dtype, n.dtype) == ((4,), "f32", "i64")
        assert var.shape == (4, 1, 5) and mean.dtype == "f32"
        with pytest.raises(ValueError):
            fuser.sum(x, 3)
        with pytest.raises(ValueError):
            fuser.sum(x, [0, -3])
        fb.output(s, mx, mn, mi, avg, m2, n, var, mean)
    roundtrip(fb)
    text = fb.mlir()
    assert "fusion.var_mean %x dims [1] correction 0 keepdim" in text
    xv = rng.standard_normal((4, 6, 5)).astype(BF16)
    x64 = xv.astype(np.float64)
    got = run_reference(fb.func, [xv], "f64")
    wants = [x64.sum(2), x64.max((0, 2), keepdims=True), x64.sum(1), x64.min(1), x64.mean((1, 2)),
             ((x64 - x64.mean((1, 2), keepdims=True)) ** 2).sum((1, 2)), np.full(4, 30),
             x64.var(1, keepdims=True), x64.mean(1, keepdims=True)]
    for g, w in zip(got, wants):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_matmul(rng):
    with fuser.FusionBuilder("mm") as fb:
        a = fb.input((32, 16), "bf16", name="a")
        b = fb.input((24, 16), "bf16", name="b")
        c = fuser.matmul(a, b, transpose_b=True)
        d = fuser.matmul(a, a, transpose_a=True, dtype="bf16")
        e = fuser.cast(a, "f32") @ fuser.cast(fuser.permute(b, (1, 0)), "f32")
        assert c.shape == (32, 24) and c.dtype == "f32"
        assert d.shape == (16, 16) and d.dtype == "bf16"
        with pytest.raises(ValueError, match="contraction extents differ"):
            fuser.matmul(a, b)
        fb.output(c, d, e)
    roundtrip(fb)
    text = fb.mlir()
    assert "fusion.matmul %a, %b transpose_b : tensor<32x16xbf16>, tensor<24x16xbf16> -> tensor<32x24xf32>" in text
    av = rng.standard_normal((32, 16)).astype(BF16)
    bv = rng.standard_normal((24, 16)).astype(BF16)
    c, d, e = run_reference(fb.func, [av, bv], "f64")
    a64, b64 = av.astype(np.float64), bv.astype(np.float64)
    np.testing.assert_allclose(c, a64 @ b64.T, rtol=1e-12)
    np.testing.assert_allclose(d, a64.T @ a64, rtol=1e-12)
    np.testing.assert_allclose(e, a64 @ b64.T, rtol=1e-12)


def test_builders_do_not_mix():
    fb1, fb2 = fuser.FusionBuilder("one"), fuser.FusionBuilder("two")
    x, y = fb1.input((2,), "f32"), fb2.input((2,), "f32")
    with pytest.raises(ValueError, match="different FusionBuilders"):
        x + y
    with pytest.raises(ValueError, match="another FusionBuilder"):
        fb1.output(y)


def test_bad_dtype_and_operands():
    fb = fuser.FusionBuilder("x")
    with pytest.raises(ValueError, match="unknown dtype"):
        fb.input((2,), "float32")
    x = fb.input((2,), "f32")
    with pytest.raises(TypeError, match="Tensors or Python numbers"):
        x + "1"
    with pytest.raises(TypeError, match="fuser Tensor"):
        fuser.exp(np.ones(2))


def test_layernorm_with_small_epsilon_verifies():
    # 1e-5 prints as the Python repr '1e-05'; see test_full_small_constant_roundtrip for the text form.
    with fuser.FusionBuilder("layernorm") as fb:
        x = fb.input((8, 32), "f32", name="x")
        w = fb.input((32,), "f32", name="w")
        var, mean = fuser.var_mean(x, 1, correction=0, keepdim=True)
        y = (x - mean) * fuser.rsqrt(var + 1e-5) * w
        fb.output(y)
    fb.module.verify()
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((8, 32)).astype(np.float32)
    wv = rng.standard_normal(32).astype(np.float32)
    (y,) = run_reference(fb.func, [xv, wv])
    m, v = xv.mean(1, keepdims=True), xv.var(1, keepdims=True)
    np.testing.assert_allclose(y, (xv - m) / np.sqrt(v + 1e-5) * wv, rtol=1e-4, atol=1e-5)


def test_full_small_constant_roundtrip():
    with fuser.FusionBuilder("eps") as fb:
        x = fb.input((4,), "f32")
        fb.output(x + 1e-5, fuser.maximum(x, float("-inf")))
    roundtrip(fb)


# ----------------------------------------------------------------------------- compile

HAVE_COMPILE = importlib.util.find_spec("fuser.driver") is not None


class _FakeResult:
    def __init__(self, module, pipeline, arch, options):
        self.module, self.pipeline, self.arch, self.options = module, pipeline, arch, options
        self.program = object()
        self.stages = {"fusion": "FUSION", "sched": "SCHED", "nvvm": "NVVM"}
        self.llvm_ir = "; llvm"
        self.ptx = ".target sm_90a"


@pytest.fixture
def fake_compile(monkeypatch):
    """A stand-in for fuser.driver so compile()'s plumbing is tested on its own."""
    calls = []
    mod = types.ModuleType("fuser.driver")

    def compile_fusion(module, pipeline, arch, options, stages=True, wait=True):
        calls.append(_FakeResult(module, pipeline, arch, options))
        return calls[-1]

    mod.compile_fusion = compile_fusion
    monkeypatch.setitem(sys.modules, "fuser.driver", mod)
    return calls


def _small_fusion():
    fb = fuser.FusionBuilder("small")
    x = fb.input((4,), "f32", name="x")
    fb.output(fuser.relu(x) * 2.0)
    return fb


class _NopPass(ModulePass):
    name = "nop"

    def apply(self, ctx, op):
        pass


def test_compile_plumbing(fake_compile):
    fb = _small_fusion()
    cf = fuser.compile(fb, pipeline="fusion-segment,convert-fusion-to-sched{tile=64}", options={"k": 1})
    (res,) = fake_compile
    assert res.pipeline == "fusion-segment,convert-fusion-to-sched{tile=64}"
    assert (res.arch, res.options) == ("sm_90a", {"k": 1})
    assert res.module is not fb.module and str(res.module) == str(fb.module)  # compiled a clone
    assert cf.ir("sched") == "SCHED" and cf.ir() == "FUSION" and cf.ptx == ".target sm_90a" and cf.llvm_ir == "; llvm"
    with pytest.raises(KeyError, match="available"):
        cf.ir("ptx-ish")
    xv = np.array([-1, 0.5, 2, -3], np.float32)
    np.testing.assert_array_equal(cf.reference(xv), [0, 1, 4, 0])
    assert cf.name == "small"


def test_compile_inputs_and_pipeline_forms(fake_compile):
    fb = _small_fusion()
    fuser.compile(fb.mlir())
    fuser.compile(fb.module, pipeline=[_NopPass()])
    fuser.compile(fb, pipeline=(_NopPass(),), arch="sm_100a")
    assert fake_compile[0].pipeline == "default"
    assert isinstance(fake_compile[1].pipeline, list) and isinstance(fake_compile[1].pipeline[0], _NopPass)
    assert fake_compile[2].arch == "sm_100a"
    with pytest.raises(TypeError, match="ModulePass"):
        fuser.compile(fb, pipeline=["nop"])
    with pytest.raises(TypeError, match="pipeline"):
        fuser.compile(fb, pipeline=3)
    with pytest.raises(TypeError, match="FusionBuilder"):
        fuser.compile(42)


@pytest.mark.skipif(not HAVE_COMPILE, reason="fuser.driver is not there yet")
@pytest.mark.parametrize("pipeline", ["default", "list"])
def test_compile_for_real(pipeline):
    fb = _small_fusion()
    if pipeline == "list":
        from fuser.passes.pipeline import build_pipeline

        pipeline = build_pipeline("default")
    cf = fuser.compile(fb, pipeline=pipeline)
    assert "fusion.relu" in cf.ir("fusion")
    assert "sm_90a" in cf.ptx
    assert isinstance(cf.llvm_ir, str) and cf.llvm_ir


@pytest.mark.skipif(not HAVE_COMPILE, reason="fuser.driver is not there yet")
def test_compile_without_stages(tmp_path, monkeypatch):
    """stages=False gives the fusion level only; with or without, one cache entry serves both,
    and the compile prints no level's IR: each is made when first asked for, and is the text the
    pipeline leaves at that level."""
    from fuser import driver
    from fuser.dialects.ir import parse_module, print_module
    from fuser.passes.pipeline import build_pipeline, run_passes
    from fuser.runtime import cache

    monkeypatch.setattr(cache, "_default", cache.KernelCache(tmp_path, disk=True, max_bytes=0))  # empty, ours
    fb = fuser.FusionBuilder("stages")
    x = fb.input((4,), "f32", name="x")
    fb.output(fuser.exp(x) + 3.0)
    text = fb.mlir()
    printed = []
    def spy(*a, **k):
        printed.append(print_module(*a, **k))
        return printed[-1]

    monkeypatch.setattr(driver, "print_module", spy)
    lean = fuser.compile(text, stages=False)
    assert set(lean.stages) == {"fusion"} and "sm_90a" in lean.ptx and lean.program.launches
    with pytest.raises(KeyError, match="no IR stage 'sched' \\(compiled with stages=False\\)"):
        lean.ir("sched")
    full = fuser.compile(text)
    assert full.result.cached and full.ptx == lean.ptx  # the same entry
    assert set(full.stages) == {"fusion", "sched", "nvvm"}
    assert not any("sched.kernel" in t or "gpu.module" in t for t in printed)  # the compiles printed no level
    printed.clear()
    want = {}
    run_passes(build_pipeline("default"), parse_module(text, "<fusion>"), verify_each=False,
               after=lambda p, m: want.setdefault({"convert-fusion-to-sched": "sched",
                                                   "convert-sched-to-nvvm": "nvvm"}.get(p.name, "_"), print_module(m)))
    assert "sched.kernel" in full.ir("sched") and full.ir("sched") == want["sched"]
    assert full.ir("nvvm") == want["nvvm"] and "gpu.module" in full.ir("nvvm") and full.ir().strip() == text.strip()
    assert len(printed) == 2  # the two levels, once
    again = fuser.compile(text, stages=False)
    assert again.result.cached and "sched" not in again.stages


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_COMPILE, reason="fuser.driver is not there yet")
def test_compile_and_run_on_gpu(rng):
    with fuser.FusionBuilder("bias_gelu") as fb:
        x = fb.input((129, 200), "bf16", name="x")
        b = fb.input((200,), "bf16", name="b")
        fb.output(fuser.cast(fuser.gelu(fuser.cast(x, "f32") + fuser.cast(b, "f32")), "bf16"))
    cf = fuser.compile(fb)
    xv = rng.standard_normal((129, 200)).astype(BF16)
    bv = rng.standard_normal(200).astype(BF16)
    got = np.asarray(cf(xv, bv)).astype(np.float32)
    want = cf.reference(xv, bv).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("verify_each", [True, False])
def test_a_pass_that_breaks_the_ir_is_caught_either_way(verify_each):
    """The compile driver verifies once at the end (FUSER_VERIFY_EACH=1: after every pass);
    either way IR a pass broke is an error, never a kernel."""
    from dataclasses import dataclass

    from xdsl.dialects.builtin import TensorType, f16

    from fuser.dialects.ir import FuserDiagnostic, parse_module
    from fuser.passes.pipeline import run_passes

    @dataclass(frozen=True)
    class BreakTypes(ModulePass):
        name = "break-types"

        def apply(self, ctx, op):
            add = next(o for o in op.walk() if o.name == "fusion.add")
            add.results[0]._type = TensorType(f16, [4])  # operands stay f32: invalid

    m = parse_module("""
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = fusion.add %x, %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}""")
    with pytest.raises(FuserDiagnostic, match="fusion.add"):
        run_passes([BreakTypes()], m, verify_each=verify_each)


@pytest.mark.parametrize("setting, after_passes", [("sched", 0), ("end", 1), ("each", None)])
def test_fuser_verify_says_what_a_compile_verifies(monkeypatch, tmp_path, setting, after_passes):
    """FUSER_VERIFY: the whole IR once after the last pass ("end", the suite's setting), after
    every pass ("each"), or not ("sched", the default: only the sched level's loads and stores,
    and LLVM's verifier on the IR it is given); anything else is refused by name."""
    import fuser.dialects.ir as ir
    from fuser.dialects.ir import FuserDiagnostic

    calls = []
    real = ir.verify_module
    monkeypatch.setattr(ir, "verify_module", lambda m: (calls.append(m), real(m)))
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FUSER_VERIFY_EACH", raising=False)
    monkeypatch.setenv("FUSER_VERIFY", setting)
    n = 64 + len(setting)  # (a fusion of its own per setting: no cache hit)
    text = f"func.func @f(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{\n  %y = fusion.neg %x : tensor<{n}xf32>\n" \
           f"  func.return %y : tensor<{n}xf32>\n}}"
    fuser.compile(text, stages=False)
    from fuser.lowering.target.ptx import passes_for_arch
    from fuser.passes.pipeline import build_pipeline
    passes = len(passes_for_arch(build_pipeline("default"), "sm_90a"))
    assert len(calls) - 1 == (passes if after_passes is None else after_passes)  # (1: the parse's own)
    monkeypatch.setenv("FUSER_VERIFY", "sometimes")
    with pytest.raises(FuserDiagnostic, match="FUSER_VERIFY='sometimes': expected one of sched, end, each"):
        fuser.compile(text.replace("neg", "abs"), stages=False)


def test_the_driver_verifies_the_sched_level(monkeypatch, tmp_path):
    """Besides the whole IR at the end, fuser.compile verifies the schedulers' loads and stores
    at the sched level: a kernel storing f32 values into a bf16 buffer (what a persistent row
    of a view once did) is a compile error naming the op. Past the NVVM conversion, whose
    pointers are opaque, nothing catches it (without the check this compiles)."""
    from dataclasses import dataclass

    from xdsl.dialects.builtin import f32

    from fuser.dialects import sched
    from fuser.dialects.ir import FuserDiagnostic
    from fuser.passes.pipeline import build_pipeline

    @dataclass(frozen=True)
    class StoreWideValues(ModulePass):
        name = "store-wide-values"

        def apply(self, ctx, op):
            from xdsl.dialects import arith
            for st in [o for o in op.walk() if isinstance(o, sched.StoreOp)]:
                wide = arith.ExtFOp(st.value, f32)  # valid; the bf16 store of its f32 result is not
                st.parent_block().insert_op_before(wide, st)
                st.operands = [wide.result, *st.operands[1:]]

    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FUSER_VERIFY_EACH", raising=False)
    passes = build_pipeline("to-sched{vector=1}") + [StoreWideValues()] + build_pipeline("convert-sched-to-nvvm")
    text = """func.func @f(%x: tensor<64xbf16>) -> tensor<64xbf16> {
  %y = fusion.neg %x : tensor<64xbf16>
  func.return %y : tensor<64xbf16>
}"""
    with pytest.raises(FuserDiagnostic, match="'sched.store' op value type f32 differs from the buffer's element type bf16"):
        fuser.compile(text, pipeline=passes)


def test_named_pipeline_takes_schedule_options():
    """`default{opts}`: the options go to the planning passes of the named pipeline."""
    from fuser.lowering.heuristics.options import SchedulingPass
    from fuser.passes.pipeline import PipelineError, build_pipeline, expand

    assert "convert-fusion-to-sched{matmul_smem_reuse=0 sms=4}" in expand("to-sched{matmul_smem_reuse=0 sms=4}")
    planners = [p for p in build_pipeline("default{matmul_smem_reuse=0}") if isinstance(p, SchedulingPass)]
    assert len(planners) == 3 and all(p.matmul_smem_reuse == 0 for p in planners)  # split-k, segment, conversion
    with pytest.raises(PipelineError, match="bogus"):
        build_pipeline("default{bogus=1}")


def test_inputs_by_name():
    """Inputs by position or by the fusion's argument names, with Python's own kind of errors."""
    with fuser.FusionBuilder("named") as fb:
        x = fb.input((4,), "f32", name="x")
        b = fb.input((4,), "f32", name="b")
        fb.output(x - b)
    cf = fuser.compile(fb)
    assert cf.input_names() == ["x", "b"]
    xv, bv = np.arange(4, dtype=np.float32), np.ones(4, dtype=np.float32)
    np.testing.assert_array_equal(cf.reference(b=bv, x=xv), xv - bv)
    np.testing.assert_array_equal(cf.reference(xv, b=bv), xv - bv)
    with pytest.raises(TypeError, match="unexpected keyword argument 'q'; its inputs are x, b"):
        cf.reference(xv, q=bv)
    with pytest.raises(TypeError, match="multiple values for input 'x'"):
        cf.reference(xv, x=xv)
    with pytest.raises(TypeError, match="missing input 'b'"):
        cf.reference(x=xv)
    with pytest.raises(TypeError, match="missing input 'b'"):
        cf(x=xv)  # checked before any GPU is needed


def test_star_import_does_not_shadow_builtins():
    import builtins

    ns: dict = {}
    exec("from fuser import *", ns)  # noqa: S102
    assert not [n for n in ns if n != "__builtins__" and hasattr(builtins, n)]
    import fuser as package
    import fuser.api as api

    assert package.compile is api.compile and package.sum is api.sum


def test_pass_classes_from_fuser_passes():
    from fuser.lowering.conversion.fusion_to_sched import ConvertFusionToSched
    from fuser.passes import AliasSmem, ConvertFusionToSched as C

    assert C is ConvertFusionToSched and AliasSmem.name == "sched-alias-smem"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        import fuser.passes
        fuser.passes.Nope  # noqa: B018


def test_compile_errors_point_at_the_users_line():
    """An op built in Python carries the caller's file:line:col, so a scheduler's refusal at
    compile time names the user's line, not <unknown>."""
    import inspect

    with fuser.FusionBuilder("f32_matmul") as fb:
        a = fb.input((64, 32), "f32", name="a")
        b = fb.input((32, 16), "f32", name="b")
        line = inspect.currentframe().f_lineno + 1
        c = fuser.matmul(a, b)
        fb.output(c)
    with pytest.raises(Exception, match=rf"test_api.py:{line}:\d+: error: .*'fusion.matmul' operands are f32"):
        fuser.compile(fb)


def test_inputs_of_every_element_type_build_compile_and_run_in_the_reference():
    """i1, i64 and f64 inputs were refused by FusionBuilder.input; a mask and an integer count
    reach float arithmetic through casts (dropout backward, a bool added to a float)."""
    from fuser.runtime.reference import reference_from_text

    fb = fuser.FusionBuilder("typed")
    g, keep, n, d = (fb.input((7, 33), dt) for dt in ("bf16", "i1", "i64", "f64"))
    y = g.cast("f32") * keep.cast("f32") * 1.25 + n.cast("f32")
    fb.output(y.cast("bf16"), n.cast("i1"), d.cast("i64"))
    fuser.compile(fb)  # to PTX; no GPU needed
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal((7, 33)).astype(ml_dtypes.bfloat16), rng.random((7, 33)) < 0.5,
           rng.integers(-3, 3, (7, 33)), rng.standard_normal((7, 33)) * 10]
    out, nz, di = reference_from_text(fb.mlir())(*ins)
    want = (ins[0].astype(np.float32) * ins[1] * np.float32(1.25) + ins[2].astype(np.float32))
    np.testing.assert_array_equal(out, want.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(nz, ins[2] != 0)
    np.testing.assert_array_equal(di, np.trunc(ins[3]).astype(np.int64))


def test_compile_options_are_schedule_options(tmp_path, monkeypatch):
    """`options` reach the planning passes as if written in the pipeline: the kernel changes,
    and so does the cache key; unknown names, bad values and conflicts are refused."""
    from fuser.passes.pipeline import PipelineError
    from fuser.runtime import cache

    monkeypatch.setattr(cache, "_default", cache.KernelCache(tmp_path, disk=False))
    text = """
func.func @twice(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %y = fusion.add %x, %x : tensor<4096xf32>
  func.return %y : tensor<4096xf32>
}"""
    plain = fuser.compile(text)
    given = fuser.compile(text, options={"block": 128})
    written = fuser.compile(text, pipeline="default{block=128}")
    assert "block [256, 1, 1]" in plain.ir("sched")
    assert "block [128, 1, 1]" in given.ir("sched") and not given.result.cached
    assert written.result.cached and written.ir("sched") == given.ir("sched")  # the same compile
    with pytest.raises(PipelineError, match="unknown schedule option.*'blok'.*known: sms, block"):
        fuser.compile(text, options={"blok": 128})
    with pytest.raises(PipelineError, match="block must be at most 1024"):
        fuser.compile(text, options={"block": 4096})
    with pytest.raises(PipelineError, match="'block' is 256 in the pipeline .* but 128 in options"):
        fuser.compile(text, pipeline="default{block=256}", options={"block": 128})
    with pytest.raises(PipelineError, match="no planning pass"):
        fuser.compile(text, pipeline="canonicalize", options={"block": 128})


def test_ptx_line_info_names_the_file_compiled(tmp_path, monkeypatch):
    """The PTX's `.file` names the .mlir it was compiled from: the same fusion from another
    file is another cache entry, not the first file's PTX."""
    from fuser.runtime import cache

    monkeypatch.setattr(cache, "_default", cache.KernelCache(tmp_path / "cache", disk=False))
    text = """func.func @twice(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %y = fusion.add %x, %x : tensor<4096xf32>
  func.return %y : tensor<4096xf32>
}"""
    first, second = tmp_path / "first.mlir", tmp_path / "second.mlir"
    first.write_text(text)
    second.write_text(text)
    a, b = fuser.compile(first), fuser.compile(second)
    assert 'first.mlir"' in a.ptx and 'second.mlir"' in b.ptx and not b.result.cached
    assert fuser.compile(first).result.cached


def test_clamp_and_frac_match_torch():
    """fuser.clamp (tensor or scalar bounds, either optional) and fuser.frac are built from
    max/min and sub/trunc, with torch's answers on NaN, infinities, halves and crossed bounds."""
    torch = pytest.importorskip("torch")
    import numpy as np

    with fuser.FusionBuilder("clamp_frac") as fb:
        x = fb.input((8,), "f32", name="x")
        lo = fb.input((8,), "f32", name="lo")
        fb.output(fuser.clamp(x, lo, 1.0), fuser.clamp(x, max=0.5), fuser.clamp(x, min=-0.5), fuser.frac(x))
    xs = np.array([np.nan, -np.inf, np.inf, -2.5, -0.25, 0.75, 3.5, 1.0], np.float32)
    los = np.full(8, -1.0, np.float32)
    los[3] = 2.0  # min > max: max wins, as torch
    t, tl = torch.from_numpy(xs), torch.from_numpy(los)
    want = [torch.clamp(t, tl, torch.tensor(1.0)), torch.clamp(t, max=0.5), torch.clamp(t, min=-0.5), torch.frac(t)]
    for g, w in zip(fuser.compile(fb).reference(xs, los), want):
        np.testing.assert_array_equal(g, w.numpy())
    with pytest.raises(ValueError, match="clamp: give min, max or both"):
        with fuser.FusionBuilder("bad") as fb2:
            fuser.clamp(fb2.input((4,), "f32"))


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_addcmul_lerp_threshold_match_torch(dtype):
    """The composites of issue 31's list: addcmul and lerp computed in f32 for bf16 and rounded
    once (torch's opmath), lerp's two formulas by |weight| (tensor and scalar weights), threshold
    keeping NaN and comparing in the input's type (as torch's CUDA kernel); within one ulp of
    the output type (torch's CPU and CUDA kernels differ by as much: the products are fused into
    an fma on the GPU)."""
    torch = pytest.importorskip("torch")
    import numpy as np

    from fuser.runtime.arrays import numpy_dtype
    rng = np.random.default_rng(4)
    a, b, c, w = (rng.standard_normal(16).astype(numpy_dtype(dtype)) for _ in range(4))
    a[0], a[3], w[1], w[2] = np.nan, 0.1, 1.0, 0.5  # (a[3]: bf16(0.1) lies above 0.1, f32(0.1) on it)
    with fuser.FusionBuilder("composites") as fb:
        ta, tb, tc, tw = (fb.input((16,), dtype, name=n) for n in "abcw")
        fb.output(fuser.addcmul(ta, tb, tc, value=0.5), fuser.addcmul(ta, tb, 3.0), fuser.lerp(ta, tb, tw),
                  fuser.lerp(ta, tb, 0.75), fuser.lerp(ta, tb, 0.25), fuser.threshold(ta, 0.1, -2.0))
    got = fuser.compile(fb).reference(a, b, c, w)
    t = {n: torch.from_numpy(v.astype(np.float32)).to(torch.bfloat16 if dtype == "bf16" else torch.float32)
         for n, v in zip("abcw", (a, b, c, w))}
    want = [torch.addcmul(t["a"], t["b"], t["c"], value=0.5), torch.addcmul(t["a"], t["b"], torch.tensor(3.0)),
            torch.lerp(t["a"], t["b"], t["w"]), torch.lerp(t["a"], t["b"], 0.75), torch.lerp(t["a"], t["b"], 0.25),
            # torch's CUDA kernel: the threshold rounded to a's type (its CPU kernel compares in f32)
            torch.where(t["a"] <= torch.tensor(0.1, dtype=t["a"].dtype), -2.0, t["a"])]
    ulp = 2.0 ** -8 if dtype == "bf16" else 2.0 ** -23  # torch rounds (or fuses) the products otherwise
    for i, (g, w_) in enumerate(zip(got, want)):
        # (atol: an ulp of the terms, which are O(10) here, where their sum cancels)
        np.testing.assert_allclose(np.asarray(g).astype(np.float32), w_.float().numpy(), rtol=ulp, atol=16 * ulp,
                                   err_msg=str(i))
    with pytest.raises(TypeError, match="operand dtypes differ"):
        with fuser.FusionBuilder("bad") as fb2:
            fuser.lerp(fb2.input((4,), "bf16"), fb2.input((4,), "f32"), 0.5)


def test_each_context_is_its_own():
    """make_context() copies one context built once: an op a caller loads into its copy (as a
    test loads arith.index_castui, which changes how convert-sched-to-nvvm lowers) is not in the
    next one."""
    from xdsl.irdl import IRDLOperation, irdl_op_definition

    from fuser.dialects.context import make_context

    @irdl_op_definition
    class ExtraOp(IRDLOperation):
        name = "test_only.extra"

    mine = make_context()
    assert mine.get_optional_op("test_only.extra") is None and mine.get_optional_op("fusion.exp") is not None
    mine.load_op(ExtraOp)
    assert mine.get_optional_op("test_only.extra") is ExtraOp
    assert make_context().get_optional_op("test_only.extra") is None
