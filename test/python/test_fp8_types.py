"""The FP8 element types of issue 34 (f8E4M3FN and f8E5M2, torch's float8_e4m3fn and
float8_e5m2) on the CPU: the reference interpreter's casts against torch's (this machine's CPU
build; torch's FP8 conversions are the same C++ on the CPU and on CUDA), every bit pattern
upward and a sweep downward (out of range, subnormals, ties, NaN, +-inf, -0); the kernels' cast
code run on the host with the cvt intrinsics replaced by a model of what the PTX ISA says they
do (so the selects around them are checked here; the GPU tests in test_fp8_types_gpu.py check
the real instructions); the verifier's refusals; the runtime's tables and the Python API.

torch's rule (dialects/fusion/fp8.py): to FP8 through f32, nearest even; f8E4M3FN saturates
at +-448 (inf too), f8E5M2 overflows to inf (|x| >= 61440); NaN is 0x7F with the sign bit.
"""

from __future__ import annotations

import ctypes
import re

import ml_dtypes
import numpy as np
import pytest

import fuser
from fuser.dialects import fusion as F
from fuser.dialects.ir import FuserDiagnostic
from fuser.runtime import arrays, plan
from fuser.runtime.reference import NUMPY_DTYPES, reference_from_text

torch = pytest.importorskip("torch")

FP8 = ["f8e4m3fn", "f8e5m2"]
OTHERS = ["f32", "f16", "bf16", "f64", "i1", "i8", "i16", "i32", "i64", "u8"]
TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
         "i1": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
         "u8": torch.uint8, "f8e4m3fn": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}
BITS = {"bf16": torch.int16, "f8e4m3fn": torch.uint8, "f8e5m2": torch.uint8}  # what numpy lacks, as bits


def _t(shape, dt):
    return "tensor<" + "".join(f"{d}x" for d in shape) + str(F.DTYPE_NAMES[dt]) + ">"


def _torch_of(x: np.ndarray, dt: str):
    if dt in BITS:
        return torch.from_numpy(x.view(np.int16 if dt == "bf16" else np.uint8)).view(TORCH[dt])
    return torch.from_numpy(x)


def _numpy_of(t, dt: str) -> np.ndarray:
    if dt in BITS:
        return t.view(BITS[dt]).numpy().view(NUMPY_DTYPES[dt])
    return t.numpy()


def _casts(src: str, dsts: list[str], n: int) -> str:
    body = "\n".join(f"  %c{i} = fusion.cast %x : {_t((n,), src)} to {_t((n,), d)}" for i, d in enumerate(dsts))
    types = ", ".join(_t((n,), d) for d in dsts)
    return (f"func.func @casts(%x: {_t((n,), src)}) -> ({types}) {{\n{body}\n"
            f"  func.return {', '.join(f'%c{i}' for i in range(len(dsts)))} : {types}\n}}")


def _same(got: np.ndarray, want: np.ndarray, dt: str, what: str) -> None:
    """Bit for bit, but NaN for NaN (torch's NaN payloads from FP8 are its own; the sign and
    NaN-ness are what a cast keeps)."""
    assert got.dtype == want.dtype, what
    if dt in ("f32", "f16", "bf16", "f64"):
        g, w = got.astype(np.float64), want.astype(np.float64)
        nan = np.isnan(w)
        np.testing.assert_array_equal(np.isnan(g), nan, err_msg=what)
        np.testing.assert_array_equal(got[~nan].view(np.uint8 if got.itemsize == 1 else f"u{got.itemsize}"),
                                      want[~nan].view(np.uint8 if got.itemsize == 1 else f"u{got.itemsize}"), err_msg=what)
    else:
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=what)


def _down_sweep(rng) -> np.ndarray:
    """f32 values for casts to FP8: random magnitudes over 2^-30 .. 2^20, both FP8 types' ends and
    the values around them (448, 464 = a tie, 479, 480, 57344, 61439, 61440, 65536), subnormal
    ties (2^-10, 3 * 2^-10, 2^-17), +-inf, NaN of both signs, +-0."""
    x = rng.standard_normal(20000) * np.exp2(rng.integers(-30, 21, 20000))
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 448, 449, 464, 465, 479, 480, 1e6, -464, -500, 57344,
               57345, 59392, 61439, 61440, 65536, -61440, 1e30, 2 ** -6, 2 ** -9, 2 ** -10, 3 * 2 ** -10,
               2 ** -14, 2 ** -16, 2 ** -17, 3 * 2 ** -17, -2 ** -17, 1.0625, 1.1875, 1.125 + 2 ** -20]
    x = np.concatenate([np.array(special), -np.array(special), x]).astype(np.float32)
    x[-10:] = np.frombuffer(np.array([0xFFC00001, 0x7F800001], np.uint32).tobytes() * 5, np.float32)  # NaN payloads
    return x


@pytest.mark.parametrize("dst", FP8)
@pytest.mark.parametrize("src", ["f32", "f16", "bf16", "f64"])
def test_float_to_fp8_matches_torch(src, dst):
    """Every float type to FP8, bit for bit as torch (f64 goes through f32 as torch's does: the
    f64 values here include ties of the FP8 grid one f64 ulp off, which one rounding would send
    the other way)."""
    x = _down_sweep(np.random.default_rng(FP8.index(dst) * 7 + len(src)))
    if src == "f64":
        ties = np.array([464.0, 1.0625, 1.1875, 2.0 ** -10, 61440.0, 1.125 + 2.0 ** -4])
        x = np.concatenate([x.astype(np.float64), np.nextafter(ties, np.inf), np.nextafter(ties, -np.inf)])
    else:
        x = x.astype(NUMPY_DTYPES[src])
    got = reference_from_text(_casts(src, [dst], x.size))(x)[0]
    want = _numpy_of(_torch_of(x, src).to(TORCH[dst]), dst)
    _same(got, want, dst, f"{src} -> {dst}")


@pytest.mark.parametrize("dst", FP8)
@pytest.mark.parametrize("src", ["i1", "i8", "i16", "i32", "i64", "u8"])
def test_integer_to_fp8_matches_torch(src, dst):
    """Integers and masks to FP8 (through f32, as torch): their whole range, f8E4M3FN saturating,
    f8E5M2 at inf past 61439."""
    rng = np.random.default_rng(len(src))
    if src == "i1":
        x = rng.integers(0, 2, 100).astype(np.bool_)
    else:
        info = np.iinfo(NUMPY_DTYPES[src])
        x = rng.integers(int(info.min), int(info.max), 5000, dtype=np.int64, endpoint=True)
        x[:12] = [info.min, info.max, 0, 1, -1, 448, 464, 480, 57344, 61439, 61440, 100000]
        x = x.astype(NUMPY_DTYPES[src])
    got = reference_from_text(_casts(src, [dst], x.size))(x)[0]
    want = _numpy_of(_torch_of(x, src).to(TORCH[dst]), dst)
    _same(got, want, dst, f"{src} -> {dst}")


@pytest.mark.parametrize("src", FP8)
def test_every_fp8_bit_pattern_upward_matches_torch(src):
    """All 256 bit patterns of an FP8 type cast to every other type (the other FP8 type too):
    floats exactly (NaN as NaN), masks `!= 0`, integers as torch where torch's CPU cast is
    defined (inside the integer's range; u8 through i64 everywhere finite), and beyond it the
    GPU's rule (test_integer_types): through i32 saturating, i8/i16 wrapping."""
    x = np.arange(256, dtype=np.uint8).view(NUMPY_DTYPES[src])
    dsts = OTHERS + [d for d in FP8 if d != src]
    got = reference_from_text(_casts(src, dsts, 256))(x)
    values = x.astype(np.float64)
    for d, g in zip(dsts, got):
        want = _numpy_of(_torch_of(x, src).to(TORCH[d]), d)
        if d in ("i8", "i16", "i32", "i64", "u8"):
            info = np.iinfo(NUMPY_DTYPES[d])
            inside = np.isfinite(values) & (values > (info.min - 1.0 if d != "u8" else -2.0 ** 63)) & (values < info.max + 1.0)
            np.testing.assert_array_equal(g[inside], want[inside], err_msg=f"{src} -> {d}")
            assert g.dtype == want.dtype
            nan = np.isnan(values)
            assert (g[nan] == 0).all() if d != "u8" else True, f"{src} -> {d}: NaN gives 0"
            if d == "i32":  # beyond: saturated (e5m2's 57344 and inf)
                big = np.isfinite(values) | np.isinf(values)
                np.testing.assert_array_equal(g[big], np.clip(np.trunc(values[big]), -2 ** 31, 2 ** 31 - 1).astype(np.int64))
        else:
            _same(g, want, d, f"{src} -> {d}")


def test_fp8_to_fp8_and_full_and_where_match_torch():
    """f8e4m3fn <-> f8e5m2 through f32 (e5m2's 57344 and inf saturate to 448 in e4m3fn), a
    `full` rounded by torch's rule, a `where` of FP8 values, a permute and a pad of them."""
    n = 256
    text = f"""func.func @f(%x: {_t((n,), "f8e5m2")}, %m: {_t((n,), "i1")}) -> ({_t((n,), "f8e4m3fn")}, {_t((n,), "f8e4m3fn")}, {_t((n + 3,), "f8e5m2")}) {{
  %a = fusion.cast %x : {_t((n,), "f8e5m2")} to {_t((n,), "f8e4m3fn")}
  %c = fusion.full 470.0 : {_t((n,), "f8e4m3fn")}
  %w = fusion.where %m, %a, %c : {_t((n,), "f8e4m3fn")}
  %z = fusion.full -0.0 : {_t((), "f8e5m2")}
  %p = fusion.pad %x, %z low [1] high [2] : {_t((n,), "f8e5m2")} to {_t((n + 3,), "f8e5m2")}
  func.return %a, %w, %p : {_t((n,), "f8e4m3fn")}, {_t((n,), "f8e4m3fn")}, {_t((n + 3,), "f8e5m2")}
}}"""
    x = np.arange(256, dtype=np.uint8).view(NUMPY_DTYPES["f8e5m2"])
    m = np.random.default_rng(1).random(n) < 0.5
    a, w, p = reference_from_text(text)(x, m)
    tx = _torch_of(x, "f8e5m2")
    ta = tx.to(torch.float8_e4m3fn)
    _same(a, _numpy_of(ta, "f8e4m3fn"), "f8e4m3fn", "e5m2 -> e4m3fn")
    # (a full is the value cast by torch's rule; torch.full itself refuses 470 for 256 elements,
    # "cannot be converted ... without overflow", and saturates it for one)
    c = torch.tensor([470.0]).to(torch.float8_e4m3fn).expand(n)
    tw = torch.where(torch.from_numpy(m), ta, c)
    _same(w, _numpy_of(tw, "f8e4m3fn"), "f8e4m3fn", "where")
    assert (w.view(np.uint8)[~m] == 0x7E).all()  # 470 saturates to 448
    tp = torch.nn.functional.pad(tx, (1, 2), value=-0.0)
    _same(p, _numpy_of(tp, "f8e5m2"), "f8e5m2", "pad")


# ----------------------------------------------------------------------------------------------
# The kernels' casts on the host: the LLVM IR fuser emits for an FP8 cast, with the NVPTX
# intrinsics swapped for host functions that do what the PTX ISA says the instructions do:
# cvt.rn.satfinite.{e4m3,e5m2}x2.f32 d, a, b rounds a (upper byte) and b (lower byte) to
# nearest even, a result beyond the largest finite value (inf included) becoming it, with its
# sign; NaN a NaN (0x7F here, any sign: the kernel's select sets the sign). The selects around
# it must make torch's rule of that. (The way back, cvt.rn.f16x2.{e4m3,e5m2}x2 then cvt.f32.f16,
# is exact, with no select to check: its host form would need the soft-float f16 helpers, so
# the GPU tests check it.)
# ----------------------------------------------------------------------------------------------

_MAXF = {"e4m3": 448.0, "e5m2": 57344.0}
_ML = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


def _satfinite(fmt: str, v: float) -> int:
    if v != v:
        return 0x7F
    top = _MAXF[fmt]
    r = float(np.array([min(max(v, -2 * top), 2 * top)], np.float32).astype(_ML[fmt]).astype(np.float32)[0])
    if not abs(r) <= top:  # (ml_dtypes' overflow: NaN for e4m3fn, inf for e5m2)
        r = np.copysign(top, v)
    return int(np.array([r], np.float32).astype(_ML[fmt]).view(np.uint8)[0])


_DOWN = ctypes.CFUNCTYPE(ctypes.c_uint16, ctypes.c_float, ctypes.c_float)


def _model(fmt: str):
    def down(a, b):
        return _satfinite(fmt, a) << 8 | _satfinite(fmt, b)
    return _DOWN(down)


def _host_cast_to_fp8(dst_elem):
    """fuser's code for one scalar f32 -> FP8 cast (evaluator.emit_cast, translated to LLVM IR
    as in a kernel), JIT-compiled for the host: f(x) -> the FP8 bits (uint8)."""
    src_elem = F.DTYPE_NAMES["f32"]
    import llvmlite.binding as lb
    from xdsl.dialects import builtin, llvm
    from xdsl.ir import Block, Region

    from fuser.lowering.emitters.evaluator import compute_type, emit_cast
    from fuser.lowering.emitters.kernel_builder import KernelBuilder
    from fuser.lowering.target.llvmir import module_to_llvm_ir

    st, dt = compute_type(src_elem), compute_type(dst_elem)
    blk = Block(arg_types=[st])
    kb = KernelBuilder(blk)
    kb.emit(llvm.ReturnOp(emit_cast(kb, blk.args[0], dst_elem, src_elem)))
    fn = llvm.FuncOp("f", llvm.LLVMFunctionType([st], dt), body=Region(blk), linkage=llvm.LinkageAttr("external"))
    ir = module_to_llvm_ir(builtin.ModuleOp([fn])).replace('target triple = "nvptx64-nvidia-cuda"', "")
    ir = re.sub(r"target datalayout = \"[^\"]*\"", "", ir)
    intrinsics = set(re.findall(r"@llvm\.nvvm\.([\w.]+)\(", ir))
    assert intrinsics == {"ff.to." + F.dtype_name(dst_elem)[2:6] + "x2.rn"}, intrinsics
    # the intrinsic becomes a call of the model
    ir = re.sub(r"declare [^\n]*@llvm\.nvvm\.[^\n]*\n", "", ir)
    ir = re.sub(r"call i16 @llvm\.nvvm\.ff\.to\.(e4m3|e5m2)x2\.rn\(", r"call i16 @model_down_\1(", ir)
    ir += "\ndeclare i16 @model_down_e4m3(float, float)\ndeclare i16 @model_down_e5m2(float, float)\n"
    lb.initialize_native_target()
    lb.initialize_native_asmprinter()
    keep = [_model("e4m3"), _model("e5m2")]
    for fmt, fn in zip(("e4m3", "e5m2"), keep):
        lb.add_symbol(f"model_down_{fmt}", ctypes.cast(fn, ctypes.c_void_p).value)
    mod = lb.parse_assembly(ir)
    mod.verify()
    engine = lb.create_mcjit_compiler(mod, lb.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    f = ctypes.CFUNCTYPE(ctypes.c_uint8, ctypes.c_float)(engine.get_function_address("f"))
    f.keep = (engine, keep)
    return f


@pytest.mark.parametrize("dst", FP8)
def test_the_kernel_cast_to_fp8_on_host_matches_torch(dst):
    """f32 -> FP8 as the kernel computes it (the satfinite cvt modelled, the selects fuser adds
    real), over the sweep: torch's bits, NaN signs included."""
    f = _host_cast_to_fp8(F.DTYPE_NAMES[dst])
    x = _down_sweep(np.random.default_rng(5))[:4000]
    got = np.array([f(float(v)) for v in x], np.uint8)
    want = torch.from_numpy(x).to(TORCH[dst]).view(torch.uint8).numpy()
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:8]]


# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", FP8)
def test_arithmetic_on_fp8_is_refused_with_what_to_do(dt):
    """No arithmetic on FP8 (torch: "not implemented for 'Float8_e4m3fn'"): the verifier names
    the op and says to cast first; cmp and reductions too. The API refuses promotion."""
    for line in (f"%r = fusion.add %x, %x : {_t((4,), dt)}", f"%r = fusion.cmp eq, %x, %x : {_t((4,), dt)}",
                 f"%r = fusion.reduce sum %x dims [0] : {_t((4,), dt)} to {_t((), dt)}"):
        rt = re.search(r": (tensor<[^>]*>)(?: to (tensor<[^>]*>))?$", line)
        r = rt.group(2) or (_t((4,), "i1") if "cmp" in line else rt.group(1))
        text = f"func.func @f(%x: {_t((4,), dt)}) -> {r} {{\n  {line}\n  func.return %r : {r}\n}}"
        with pytest.raises(FuserDiagnostic, match=r"FP8 tensors are storage only, with no arithmetic, as in torch; "
                                                  r"cast to f32 or bf16 first"):
            fuser.compile(text)
    fb = fuser.FusionBuilder("p")
    x, y = fb.input((4,), dt, name="x"), fb.input((4,), "f32", name="y")
    with pytest.raises(TypeError, match="no type promotion for FP8"):
        x + y
    with pytest.raises(ValueError, match="'fusion.exp' op operand #0 .* FP8 tensors are storage only"):
        fuser.exp(x)


def test_runtime_tables_know_fp8():
    """numpy (ml_dtypes), torch, DLPack (kDLFloat8_e4m3fn = 10, kDLFloat8_e5m2 = 12) and the
    plan's sizes; a host memref of an FP8 type reads back as its name; "|V1", which both share
    through __cuda_array_interface__, names neither."""
    from xdsl.dialects.builtin import MemRefType
    codes = {v: k for k, v in arrays._DL_DTYPE.items()}
    for name in FP8:
        assert arrays.numpy_dtype(name) == NUMPY_DTYPES[name] == np.dtype(getattr(ml_dtypes, "float8_" + name[2:]))
        assert plan.DTYPES[name] == 1 and arrays.torch_dtype(name) is TORCH[name]
        assert plan._memref_spec(MemRefType(F.DTYPE_NAMES[name], [3, 4]), "x") == ((3, 4), name)
        assert arrays._CAI_TYPESTR[name] == "|V1" and "|V1" not in arrays._CAI_DTYPE
    assert (codes["f8e4m3fn"], codes["f8e5m2"]) == ((10, 8), (12, 8))


def test_api_round_trip_and_torch_cpu_tensors():
    """fuser.cast to and from FP8 through the builder, compiled to PTX (the cvt instructions in
    it), and run by the reference on torch's FP8 tensors, taken to numpy and back as the PyTorch
    backend does (ml_dtypes' types: torch's .numpy() has none)."""
    from fuser.torch.partition import _from_numpy, _to_numpy
    with fuser.FusionBuilder("fp8_rt") as fb:
        x = fb.input((5, 7), "bf16", name="x")
        q = fb.input((7,), "f8e5m2", name="q")
        a = fuser.cast(x, "f8e4m3fn")
        fb.output(fuser.cast(a, "bf16"), fuser.permute(a, [1, 0]), fuser.cast(q, "f32"))
    assert "tensor<5x7xf8E4M3FN>" in fb.mlir() and "tensor<7xf8E5M2>" in fb.mlir()
    k = fuser.compile(fb)
    assert "cvt.rn.satfinite.e4m3x2.f32" in k.ptx and "cvt.rn.f16x2.e4m3x2" in k.ptx and "cvt.rn.f16x2.e5m2x2" in k.ptx
    xs = (torch.randn(5, 7) * 200).to(torch.bfloat16)
    qs = torch.arange(0, 256, 37, dtype=torch.uint8)[:7].view(torch.float8_e5m2)
    y, p, f = k.reference(_to_numpy(xs), _to_numpy(qs))
    assert p.dtype == NUMPY_DTYPES["f8e4m3fn"] and _to_numpy(qs).dtype == NUMPY_DTYPES["f8e5m2"]
    y, p, f = _from_numpy(y, torch.bfloat16), _from_numpy(p, torch.float8_e4m3fn), torch.from_numpy(f)
    ref = xs.to(torch.float8_e4m3fn)
    assert torch.equal(y.view(torch.int16), ref.to(torch.bfloat16).view(torch.int16))
    assert torch.equal(p.view(torch.uint8), ref.t().contiguous().view(torch.uint8))
    assert torch.equal(f, qs.float())


def test_fp8_cvt_needs_sm_90():
    """The FP8 cvt forms need sm_89+: an sm_80 compile is refused naming the instruction."""
    text = f"""func.func @f(%x: {_t((64,), "f32")}) -> {_t((64,), "f8e4m3fn")} {{
  %r = fusion.cast %x : {_t((64,), "f32")} to {_t((64,), "f8e4m3fn")}
  func.return %r : {_t((64,), "f8e4m3fn")}
}}"""
    with pytest.raises(ValueError, match=r"needs sm_90: it uses cvt with .e4m3x2/.e5m2x2 \(FP8 conversions\)"):
        fuser.compile(text, arch="sm_80")
    assert ".target sm_90" in fuser.compile(text, arch="sm_90").ptx


@pytest.mark.parametrize("dt", FP8)
def test_the_reference_moves_and_selects_fp8_bits_unchanged(dt):
    """where, permute and cat of all 256 bit patterns keep every byte, NaN payloads included
    (f8E5M2 has six NaNs; ml_dtypes' float8_e5m2 is a numpy kind "f" type, which the reference
    must not widen and round back as it does real floats), as the kernels move them."""
    x = np.arange(256, dtype=np.uint8).view(NUMPY_DTYPES[dt]).reshape(16, 16)
    y = x[::-1].copy()
    m = np.random.default_rng(2).random((16, 16)) < 0.5
    ty = _t((16, 16), dt)
    text = f"""func.func @f(%x: {ty}, %y: {ty}, %m: {_t((16, 16), "i1")}) -> ({ty}, {ty}, {_t((32, 16), dt)}) {{
  %w = fusion.where %m, %x, %y : {ty}
  %p = fusion.permute %x [1, 0] : {ty} to {ty}
  %c = fusion.cat %x, %y dim 0 : {ty}, {ty} to {_t((32, 16), dt)}
  func.return %w, %p, %c : {ty}, {ty}, {_t((32, 16), dt)}
}}"""
    w, p, c = reference_from_text(text)(x, y, m)
    u = lambda a: a.view(np.uint8)  # noqa: E731
    np.testing.assert_array_equal(u(w), np.where(m, u(x), u(y)))
    np.testing.assert_array_equal(u(p), u(x).T)
    np.testing.assert_array_equal(u(c), np.concatenate([u(x), u(y)]))
