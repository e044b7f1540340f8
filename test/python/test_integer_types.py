"""The integer element types of issue 31 (i8, i16, i32 and u8 beside i1 and i64) on the CPU: the
reference interpreter's casts against torch's (the CPU build here; where torch on the CPU and
on CUDA differ, out-of-range float -> signed integer, fuser follows the GPU's cvt and says so),
the runtime's dtype tables and the Python API. The GPU runs are in test_types_gpu.py."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import fuser
from fuser.dialects import fusion as F
from fuser.runtime import arrays, plan
from fuser.runtime.reference import NUMPY_DTYPES, reference_from_text

torch = pytest.importorskip("torch")

INTS = ["i8", "i16", "i32", "i64", "u8"]
TYPES = ["f32", "f16", "bf16", "f64", "i1", *INTS]
TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
         "i1": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
         "u8": torch.uint8, "f8e4m3fn": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}


def _t(shape, dt):
    return "tensor<" + "x".join(map(str, shape)) + "x" + str(F.DTYPE_NAMES[dt]) + ">"


def _inputs(src: str, n: int, rng) -> np.ndarray:
    """Values every cast of `src` is defined for in C++ (so torch's CPU cast is torch's): the
    integers' whole range; floats inside i8's range (ties, signed zeros) and, as u8 takes
    them by torch's own rule, negative ones."""
    if src == "i1":
        return rng.integers(0, 2, n).astype(np.bool_)
    if src in INTS:
        info = np.iinfo(NUMPY_DTYPES[src])
        x = rng.integers(int(info.min), int(info.max), n, dtype=np.int64, endpoint=True)
        x[:3] = [info.min, info.max, 0]
        return x.astype(NUMPY_DTYPES[src])
    x = rng.uniform(-128, 127, n)
    x[:6] = [0.0, -0.0, 0.5, -2.5, 126.5, -127.75]
    return x.astype(np.float32).astype(NUMPY_DTYPES[src])


def _torch_of(x: np.ndarray, dt: str):
    if dt == "bf16":
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(x)


def _numpy_of(t, dt: str) -> np.ndarray:
    if dt == "bf16":
        return t.view(torch.int16).numpy().view(NUMPY_DTYPES["bf16"])
    return t.numpy()


@pytest.mark.parametrize("src", TYPES)
def test_every_cast_of_the_reference_matches_torch(src):
    """The reference casts `src` to every type as torch's Tensor.to does, bit for bit."""
    n = 3001
    x = _inputs(src, n, np.random.default_rng(len(src) * 31 + TYPES.index(src)))
    outs = [d for d in TYPES if d != src]
    body = "\n".join(f"  %c{i} = fusion.cast %x : {_t((n,), src)} to {_t((n,), d)}" for i, d in enumerate(outs))
    text = (f"func.func @casts(%x: {_t((n,), src)}) -> ({', '.join(_t((n,), d) for d in outs)}) {{\n{body}\n"
            f"  func.return {', '.join(f'%c{i}' for i in range(len(outs)))} : {', '.join(_t((n,), d) for d in outs)}\n}}")
    got = reference_from_text(text)(x)
    for d, g in zip(outs, got):
        want = _numpy_of(_torch_of(x, src).to(TORCH[d]), d)
        assert g.dtype == want.dtype, (src, d)
        np.testing.assert_array_equal(g.view(np.uint8), want.view(np.uint8), err_msg=f"{src} -> {d}")


def test_float_to_integer_out_of_range():
    """Beyond the range: i32 and i64 saturate (NaN -> 0), as the GPU's cvt.rzi does; i8 and i16
    wrap that i32, as torch's CUDA casts give (checked on an H100; test_types_gpu checks it on
    the GPU); torch on the CPU gives other values there (C++ leaves them undefined). u8 goes
    through i64 and wraps, torch's own rule on every device, so that part matches the CPU build
    here too."""
    x = np.array([300.7, -300.7, 1e10, -1e10, np.nan, -1.5, 255.9, -129.5, 70000.5, np.inf], np.float32)
    text = f"""func.func @f(%x: {_t((10,), "f32")}) -> ({", ".join(_t((10,), d) for d in INTS)}) {{
  {chr(10).join(f"  %{d} = fusion.cast %x : {_t((10,), 'f32')} to {_t((10,), d)}" for d in INTS)}
  func.return {", ".join("%" + d for d in INTS)} : {", ".join(_t((10,), d) for d in INTS)}
}}"""
    i8, i16, i32, i64, u8 = reference_from_text(text)(x)
    assert i8.tolist() == [44, -44, -1, 0, 0, -1, -1, 127, 112, -1]  # (torch on an H100: the same)
    assert i16.tolist() == [300, -300, -1, 0, 0, -1, 255, -129, 4464, -1]
    assert i32.tolist() == [300, -300, 2 ** 31 - 1, -2 ** 31, 0, -1, 255, -129, 70000, 2 ** 31 - 1]
    assert i64.tolist() == [300, -300, 10 ** 10, -10 ** 10, 0, -1, 255, -129, 70000, 2 ** 63 - 1]
    assert u8.tolist() == [44, 212, 10 ** 10 % 256, (-10 ** 10) % 256, 0, 255, 255, 127, 70000 % 256, 255]
    finite = np.isfinite(x) & (np.abs(x) < 2 ** 62)
    assert u8[finite].tolist() == torch.from_numpy(x[finite]).to(torch.uint8).tolist()


def test_runtime_tables_know_every_type():
    """Every dtype of the dialect has a numpy dtype in the runtime and the reference, a size, a
    torch dtype, a __cuda_array_interface__ typestr and a DLPack code; and a host memref of it
    reads back as its name (u8 from ui8)."""
    from xdsl.dialects.builtin import MemRefType
    for name, t in F.DTYPE_NAMES.items():
        dt = arrays.numpy_dtype(name)
        assert dt == NUMPY_DTYPES[name] and dt.itemsize == plan.DTYPES[name]
        assert arrays.torch_dtype(name) is TORCH[name]
        if name not in F.FP8_DTYPES:  # (the two FP8 types share "|V1", read back as neither: test_fp8_types)
            assert arrays._CAI_DTYPE[arrays._CAI_TYPESTR[name]] == name
        assert plan._memref_spec(MemRefType(t, [3, 4]), "x") == ((3, 4), name)
    codes = {v: k for k, v in arrays._DL_DTYPE.items()}
    assert {name: codes[name] for name in INTS} == {"i8": (0, 8), "i16": (0, 16), "i32": (0, 32), "i64": (0, 64),
                                                     "u8": (1, 8)}


@pytest.mark.parametrize("dt", INTS)
def test_api_inputs_outputs_and_casts_of_every_integer_type(dt):
    """Through fuser.FusionBuilder: an integer input cast to f32 and back, a transposed copy and
    an i1 of it, run by the reference and compiled to PTX (no GPU needed)."""
    with fuser.FusionBuilder(f"ints_{dt}") as fb:
        x = fb.input((5, 7), dt, name="x")
        f = fuser.cast(x, "f32")
        fb.output(fuser.cast(f, dt), fuser.permute(x, [1, 0]), fuser.cast(x, "i1"), f)
    assert f"tensor<5x7x{F.DTYPE_NAMES[dt]}>" in fb.mlir()
    k = fuser.compile(fb)
    assert ".entry" in k.ptx
    info = np.iinfo(NUMPY_DTYPES[dt])
    xs = np.random.default_rng(3).integers(int(info.min), int(info.max), (5, 7), endpoint=True).astype(NUMPY_DTYPES[dt])
    same, tr, nz, fl = k.reference(xs)
    exact_in_f32 = np.abs(xs.astype(np.float64)) <= 2 ** 24
    np.testing.assert_array_equal(same[exact_in_f32], xs[exact_in_f32])
    np.testing.assert_array_equal(tr, xs.T)
    np.testing.assert_array_equal(nz, xs != 0)
    np.testing.assert_array_equal(fl, torch.from_numpy(xs).float().numpy())
    assert same.dtype == tr.dtype == NUMPY_DTYPES[dt]


# ----------------------------------------------------------------------------------------------
# The kernels' integer arithmetic, JIT-compiled for the host: each op's arith ops (what the
# evaluator emits inside a kernel) translated by fuser's own LLVM IR translation, then run over
# every pair of i8 and u8 values and random pairs of the wider types, against the reference.
# ----------------------------------------------------------------------------------------------

_NP = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_INT_BINARY_OPS = [F.AddOp, F.SubOp, F.MulOp, F.MaxOp, F.MinOp, F.PowOp, F.TruncDivOp, F.FloorDivOp, F.FmodOp,
                   F.RemainderOp, F.BitwiseAndOp, F.BitwiseOrOp, F.BitwiseXorOp, F.ShiftLeftOp, F.ShiftRightOp,
                   F.LogicalShiftRightOp, F.GcdOp]


def _logical_right_shift(x, y):
    """torch has no logical right shift of signed integers: the shift of x's bits read unsigned."""
    width = x.element_size() * 8
    xs, ys = x.numpy(), y.numpy().astype(np.int64)
    bits = xs.view(xs.dtype.str.replace("i", "u"))
    inside = (ys >= 0) & (ys < width)
    out = np.where(inside, bits >> np.where(inside, ys, 0).astype(bits.dtype), 0).astype(bits.dtype)
    return torch.from_numpy(out.view(xs.dtype))


def _host_function(emit, width: int, unsigned: bool, operands: int):
    """`emit(builder, *scalars)`'s arith ops as a host function, looped over arrays:
    run(a, b, out, n) sets out[i] = f(a[i], b[i]) (one operand: a only)."""
    import llvmlite.binding as lb
    from xdsl.dialects import builtin, llvm
    from xdsl.dialects.builtin import IntegerType
    from xdsl.ir import Block, Region

    from fuser.lowering.emitters.kernel_builder import KernelBuilder
    from fuser.lowering.target.llvmir import module_to_llvm_ir

    t = IntegerType(width)
    blk = Block(arg_types=[t] * operands)
    kb = KernelBuilder(blk)
    kb.emit(llvm.ReturnOp(emit(kb, *blk.args)))
    fn = llvm.FuncOp("f", llvm.LLVMFunctionType([t] * operands, t), body=Region(blk),
                     linkage=llvm.LinkageAttr("external"))
    ir = module_to_llvm_ir(builtin.ModuleOp([fn])).replace('target triple = "nvptx64-nvidia-cuda"', "")
    ty = f"i{width}"
    args = ", ".join(f"{ty} %x{k}" for k in range(operands))
    loads = "\n".join(f"  %p{k} = getelementptr {ty}, ptr %in{k}, i64 %i\n  %x{k} = load {ty}, ptr %p{k}"
                      for k in range(operands))
    ir += f"""
define void @run(ptr %in0, ptr %in1, ptr %out, i64 %n) {{
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
{loads}
  %r = call {ty} @f({args})
  %q = getelementptr {ty}, ptr %out, i64 %i
  store {ty} %r, ptr %q
  %next = add i64 %i, 1
  %more = icmp ult i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"""
    lb.initialize_native_target()
    lb.initialize_native_asmprinter()
    mod = lb.parse_assembly(ir)
    mod.verify()
    engine = lb.create_mcjit_compiler(mod, lb.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    run = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        engine.get_function_address("run"))
    dt = np.uint8 if unsigned else _NP[width]

    def call(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        a = np.ascontiguousarray(a, dt)
        b = a if b is None else np.ascontiguousarray(b, dt)
        out = np.empty_like(a)
        run(a.ctypes.data, b.ctypes.data, out.ctypes.data, a.size)
        return out
    call.engine = engine  # keep it alive
    return call


def _pairs(dt: str, rng) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of values for the 8-bit types; else random ones of the whole range, small
    divisors and exponents, zeros, -1 and the type's ends."""
    npdt = NUMPY_DTYPES[dt]
    info = np.iinfo(npdt)
    if info.bits == 8:
        v = np.arange(int(info.min), int(info.max) + 1)
        a, b = np.meshgrid(v, v)
        return a.ravel().astype(npdt), b.ravel().astype(npdt)
    n = 200_000
    a = rng.integers(int(info.min), int(info.max), n, endpoint=True)
    b = rng.integers(int(info.min), int(info.max), n, endpoint=True)
    b[: n // 2] = rng.integers(-70, 70, n // 2)
    special = [0, 1, -1, int(info.min), int(info.max)]
    a[:25], b[:25] = np.repeat(special, 5), np.tile(special, 5)
    b[25:2025], a[2025:4025] = info.min, info.min  # MIN against random values (gcd's |MIN| wraps)
    return a.astype(npdt), b.astype(npdt)


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("opcls", _INT_BINARY_OPS, ids=lambda c: c.name.removeprefix("fusion."))
def test_integer_binary_lowering_matches_the_reference_on_host(opcls, dt):
    """The kernel's ops for `opcls` on `dt`, run on the host, equal the reference interpreter
    bit for bit over every pair (8-bit types) or 200000 pairs, division by 0 and MIN / -1
    included; and the reference equals torch's CPU ops where both are defined (no division by 0,
    no MIN / -1; torch's pow of a negative exponent raises on the CPU)."""
    from xdsl.dialects.builtin import TensorType
    from xdsl.ir import Block

    from fuser.lowering.emitters.evaluator import emit_int_binary
    from fuser.runtime.reference import _BINARY, _INT_BINARY

    et = F.DTYPE_NAMES[dt]
    holder = Block(arg_types=[TensorType(et, [1])] * 2)
    op = opcls(holder.args[0], holder.args[1])
    unsigned = dt == "u8"
    width = et.width.data
    f = _host_function(lambda kb, x, y: emit_int_binary(kb, op, x, y, unsigned), width, unsigned, 2)
    a, b = _pairs(dt, np.random.default_rng(width))
    if opcls is F.PowOp and dt not in ("i8", "u8"):
        b = (b % 70).astype(b.dtype) - (b.dtype.type(3) if not unsigned else 0)  # exponents -3 .. 66
    got = f(a, b).astype(NUMPY_DTYPES[dt]) if unsigned else f(a, b)
    with np.errstate(all="ignore"):
        ref = (_INT_BINARY.get(op.name) or _BINARY[op.name])(a, b)
    np.testing.assert_array_equal(got.view(np.uint8), np.asarray(ref, NUMPY_DTYPES[dt]).view(np.uint8))
    info = np.iinfo(NUMPY_DTYPES[dt])
    ok = (b != 0) & ~((a == info.min) & (b == -1)) if not unsigned else b != 0
    if opcls is F.PowOp:
        ok = b >= 0
    elif opcls not in (F.TruncDivOp, F.FloorDivOp, F.FmodOp, F.RemainderOp):
        ok = np.ones(a.shape, bool)
    ta, tb = torch.from_numpy(a[ok]), torch.from_numpy(b[ok])
    want = {F.AddOp: torch.add, F.SubOp: torch.sub, F.MulOp: torch.mul, F.MaxOp: torch.maximum,
            F.MinOp: torch.minimum, F.PowOp: torch.pow, F.FmodOp: torch.fmod, F.RemainderOp: torch.remainder,
            F.TruncDivOp: lambda x, y: torch.div(x, y, rounding_mode="trunc"),
            F.FloorDivOp: lambda x, y: torch.div(x, y, rounding_mode="floor"), F.BitwiseAndOp: torch.bitwise_and,
            F.BitwiseOrOp: torch.bitwise_or, F.BitwiseXorOp: torch.bitwise_xor, F.ShiftLeftOp: torch.bitwise_left_shift,
            F.ShiftRightOp: torch.bitwise_right_shift, F.LogicalShiftRightOp: _logical_right_shift,
            F.GcdOp: torch.gcd}[opcls](ta, tb)
    np.testing.assert_array_equal(got[ok], want.numpy())


@pytest.mark.parametrize("dt", INTS)
def test_integer_unary_lowering_on_host(dt):
    """neg and abs wrap as torch's (|-128| is -128 in i8; u8 is its own abs; -1 is 255 in u8);
    bitwise_not flips every bit."""
    from xdsl.dialects.builtin import TensorType
    from xdsl.ir import Block

    from fuser.lowering.emitters.evaluator import emit_int_unary

    et = F.DTYPE_NAMES[dt]
    holder = Block(arg_types=[TensorType(et, [1])])
    a, _ = _pairs(dt, np.random.default_rng(5))
    for opcls, fn in ((F.NegOp, torch.neg), (F.AbsOp, torch.abs), (F.BitwiseNotOp, torch.bitwise_not)):
        op = opcls(holder.args[0])
        f = _host_function(lambda kb, x: emit_int_unary(kb, op, x), et.width.data, dt == "u8", 1)
        got = f(a).astype(NUMPY_DTYPES[dt])
        np.testing.assert_array_equal(got, fn(torch.from_numpy(a)).numpy(), err_msg=f"{opcls.name} {dt}")


# ----------------------------------------------------------------------------------------------
# The Python API: integer ops and torch's type promotion, run by the reference against torch
# ----------------------------------------------------------------------------------------------

PROMOTIONS = [  # (lhs, rhs: a dtype or a Python number, result dtype), each torch's own
    ("i8", "u8", "i16"), ("u8", "i32", "i32"), ("i16", "i64", "i64"), ("i8", "i8", "i8"),
    ("f16", "bf16", "f32"), ("bf16", "f32", "f32"), ("i32", "f16", "f16"), ("i1", "i8", "i8"),
    ("i1", "f32", "f32"), ("i8", 2, "i8"), ("u8", 3, "u8"), ("i32", 2.5, "f32"), ("f16", 0.5, "f16"),
    ("i1", 1, "i64"), ("i1", 1.5, "f32"), ("i64", True, "i64"),
]


@pytest.mark.parametrize("lhs,rhs,want", PROMOTIONS, ids=lambda v: str(v))
def test_promotion_matches_torch(lhs, rhs, want):
    """fuser.result_dtype, fuser's promotion, equals torch.result_type (checked here too)."""
    ta = torch.zeros(2, dtype=TORCH[lhs])
    tb = torch.zeros(2, dtype=TORCH[rhs]) if isinstance(rhs, str) else rhs
    assert torch.result_type(ta, tb) == TORCH[want]
    with fuser.FusionBuilder("p") as fb:
        a = fb.input((2,), lhs)
        b = fb.input((2,), rhs) if isinstance(rhs, str) else rhs
        assert fuser.api.result_dtype(a, b) == want
        if want != "i1":
            assert fuser.maximum(a, b).dtype == want
        fb.output(a)


def _run_api(build, inputs: dict[str, np.ndarray]):
    """A fusion built by `build(fb, **tensors)` on inputs of these arrays, compiled to PTX and
    run by the reference; its outputs."""
    with fuser.FusionBuilder("api_ints") as fb:
        ts = {n: fb.input(x.shape, {v: k for k, v in NUMPY_DTYPES.items()}[x.dtype], name=n)
              for n, x in inputs.items()}
        fb.output(*build(**ts))
    k = fuser.compile(fb)
    assert ".entry" in k.ptx
    out = k.reference(*inputs.values())
    return out if isinstance(out, (list, tuple)) else [out]


@pytest.mark.parametrize("dt", INTS)
def test_integer_arithmetic_through_the_api_matches_torch(dt):
    """+ - * max min neg abs, //, %, fmod, pow, true division (to f32), comparisons and where of
    integer tensors (odd shapes, whole ranges, zero divisors avoided, as torch's CPU raises),
    with Python numbers, against torch on the CPU, exactly."""
    rng = np.random.default_rng(11)
    info = np.iinfo(NUMPY_DTYPES[dt])
    a = rng.integers(int(info.min), int(info.max), (7, 33), endpoint=True).astype(NUMPY_DTYPES[dt])
    b = rng.integers(int(info.min), int(info.max), (33,), endpoint=True).astype(NUMPY_DTYPES[dt])
    b[b == 0] = 3
    if info.min < 0:
        b[b == -1] = 5  # (torch's CPU traps on MIN // -1)
    e = rng.integers(0, 12, (7, 33)).astype(NUMPY_DTYPES[dt])

    def build(a, b, e):
        return (a + b, a - b, a * b, fuser.maximum(a, b), fuser.minimum(a, b), -a, fuser.abs(a), a // b, a % b,
                fuser.fmod(a, b), a ** e, a / b, a < b, fuser.where(a > b, a, b), a + 3, a * 2, a + 2.5,
                fuser.div(a, b, rounding_mode="trunc"), fuser.exp(fuser.cast(e, dt)))
    got = _run_api(build, {"a": a, "b": b, "e": e})
    ta, tb, te = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(e)
    want = (ta + tb, ta - tb, ta * tb, torch.maximum(ta, tb), torch.minimum(ta, tb), -ta, torch.abs(ta),
            ta // tb, ta % tb, torch.fmod(ta, tb), ta ** te, ta / tb, ta < tb, torch.where(ta > tb, ta, tb), ta + 3,
            ta * 2, ta + 2.5, torch.div(ta, tb, rounding_mode="trunc"), torch.exp(te))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == _numpy_of(w, "f32").dtype, (i, g.dtype, w.dtype)
        if w.is_floating_point():
            np.testing.assert_allclose(g, w.numpy(), rtol=2e-7 if i != 18 else 1e-6, err_msg=str(i))
        else:
            np.testing.assert_array_equal(g, w.numpy(), err_msg=str(i))


def test_integer_division_by_zero_is_defined():
    """torch raises on the CPU and leaves the GPU's integer division to answer; fuser defines
    a // 0 = a % 0 = fmod(a, 0) = -1 (all bits set: what torch gives on an H100 for these types),
    and MIN // -1 = MIN (wrapped)."""
    a = np.array([7, -7, 0, -128, -128, 5], np.int8)
    b = np.array([0, 0, 0, -1, 0, -1], np.int8)
    q, r, m, t = _run_api(lambda a, b: (a // b, a % b, fuser.fmod(a, b), fuser.div(a, b, rounding_mode="trunc")),
                          {"a": a, "b": b})
    assert q.tolist() == [-1, -1, -1, -128, -1, -5]
    assert t.tolist() == [-1, -1, -1, -128, -1, -5]
    assert r.tolist() == [-1, -1, -1, 0, -1, 0] and m.tolist() == [-1, -1, -1, 0, -1, 0]
    u = np.array([7, 0, 255], np.uint8)
    uq, ur = _run_api(lambda u: (u // 0, u % 0), {"u": u})
    assert uq.tolist() == [255, 255, 255] and ur.tolist() == [255, 255, 255]


def test_integer_pow_of_negative_exponents_as_torch_cuda():
    """torch's CPU raises for an integer to a negative integer power; its CUDA kernel (and fuser)
    give 1 for 1, +-1 for -1 (odd: -1), else 0."""
    a = np.array([1, -1, -1, 2, -3, 0], np.int32)
    e = np.array([-5, -2, -3, -1, -2, -1], np.int32)
    (p,) = _run_api(lambda a, e: (a ** e,), {"a": a, "e": e})
    assert p.tolist() == [1, 1, -1, 0, 0, 0]


def test_a_float_tensor_to_an_integer_op_is_a_located_error():
    """Hostile input: fusion.floor_div of f32 operands is refused by the verifier, naming the
    op and the operand, at the line that wrote it."""
    from fuser.dialects.ir import FuserDiagnostic
    from fuser.driver import compile_fusion

    text = """func.func @bad(%x: tensor<4xf32>) -> tensor<4xf32> {
  %q = fusion.floor_div %x, %x : tensor<4xf32>
  func.return %q : tensor<4xf32>
}"""
    with pytest.raises(FuserDiagnostic, match=r":2:\d+: error: 'fusion.floor_div' op operand #0 \('lhs'\) has element "
                                              r"type f32, expected one of i8, i16, i32, i64, u8"):
        compile_fusion(text)


@pytest.mark.parametrize("opcls,fn", [(F.BitwiseAndOp, np.logical_and), (F.BitwiseOrOp, np.logical_or),
                                      (F.BitwiseXorOp, np.logical_xor), (F.BitwiseNotOp, np.logical_not)],
                         ids=lambda v: getattr(v, "name", ""))
def test_bitwise_ops_of_masks_are_the_logical_ones_on_host(opcls, fn):
    """On i1 the bitwise ops are logical and, or, xor and not (kernel ops on the host and the
    reference alike)."""
    from xdsl.dialects.builtin import TensorType, i1
    from xdsl.ir import Block

    from fuser.lowering.emitters.evaluator import emit_int_binary, emit_int_unary
    from fuser.runtime.reference import _BINARY, _UNARY

    holder = Block(arg_types=[TensorType(i1, [1])] * 2)
    a, b = np.array([0, 0, 1, 1], np.int8), np.array([0, 1, 0, 1], np.int8)
    if opcls is F.BitwiseNotOp:
        op = opcls(holder.args[0])
        f = _host_function(lambda kb, x: _trunc_to_i1(kb, emit_int_unary(kb, op, _i1_of(kb, x))), 8, False, 1)
        got, want, ref = f(a), fn(a.astype(bool)), _UNARY[op.name](a.astype(bool))
    else:
        op = opcls(holder.args[0], holder.args[1])
        f = _host_function(lambda kb, x, y: _trunc_to_i1(kb, emit_int_binary(kb, op, _i1_of(kb, x), _i1_of(kb, y),
                                                                             False)), 8, False, 2)
        got, want, ref = f(a, b), fn(a.astype(bool), b.astype(bool)), _BINARY[op.name](a.astype(bool), b.astype(bool))
    np.testing.assert_array_equal(got.astype(bool), want)
    np.testing.assert_array_equal(ref, want)


def _i1_of(kb, x):
    from xdsl.dialects import arith
    return kb.v(arith.CmpiOp(x, kb.const(0, x.type), "ne"))


def _trunc_to_i1(kb, m):
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IntegerType
    return kb.v(arith.ExtUIOp(m, IntegerType(8)))


@pytest.mark.parametrize("dt", INTS)
def test_bitwise_shift_and_gcd_through_the_api_match_torch(dt):
    """& | ^ ~ << >> and gcd of integer tensors and masks, shift amounts past the width and
    negative ones included (torch defines them: 0, or the sign), against torch on the CPU."""
    rng = np.random.default_rng(21)
    info = np.iinfo(NUMPY_DTYPES[dt])
    a = rng.integers(int(info.min), int(info.max), (5, 41), endpoint=True).astype(NUMPY_DTYPES[dt])
    b = rng.integers(int(info.min), int(info.max), (41,), endpoint=True).astype(NUMPY_DTYPES[dt])
    s = rng.integers(0 if dt == "u8" else -2, info.bits + 3, (5, 41)).astype(NUMPY_DTYPES[dt])
    m = rng.random((5, 41)) < 0.5

    def build(a, b, s, m):
        return (a & b, a | b, a ^ b, ~a, a << s, a >> s, fuser.gcd(a, b), a & 6, m & (a > 0), ~m, m ^ m, m | (a < b))
    got = _run_api(build, {"a": a, "b": b, "s": s, "m": m})
    ta, tb, ts, tm = (torch.from_numpy(x) for x in (a, b, s, m))
    want = (ta & tb, ta | tb, ta ^ tb, ~ta, ta << ts, ta >> ts, torch.gcd(ta, tb), ta & 6, tm & (ta > 0), ~tm,
            tm ^ tm, tm | (ta < tb))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.numpy().dtype, i
        np.testing.assert_array_equal(g, w.numpy(), err_msg=str(i))


def test_a_float_tensor_to_a_bitwise_op_is_a_located_error():
    """Hostile input: bitwise ops of floats are refused by the verifier, op and operand named,
    both in the IR and through the API."""
    from fuser.dialects.ir import FuserDiagnostic
    from fuser.driver import compile_fusion

    text = """func.func @bad(%x: tensor<4xf32>) -> tensor<4xf32> {
  %q = fusion.bitwise_and %x, %x : tensor<4xf32>
  func.return %q : tensor<4xf32>
}"""
    with pytest.raises(FuserDiagnostic, match=r":2:\d+: error: 'fusion.bitwise_and' op operand #0 \('lhs'\) has "
                                              r"element type f32, expected one of i8, i16, i32, i64, u8, i1"):
        compile_fusion(text)
    with fuser.FusionBuilder("bad") as fb:
        x = fb.input((4,), "f32")
        with pytest.raises(ValueError, match=r"'fusion.bitwise_left_shift' op operand #0 \('lhs'\) has element type f32"):
            x << 2
        with pytest.raises(ValueError, match=r"'fusion.bitwise_not' op operand #0 \('input'\) has element type f32"):
            ~x
        fb.output(x)


def test_a_matmul_epilogue_stores_narrow_integers():
    """A matmul's epilogue that casts its product to u8, i8 and i16 compiles to PTX (the
    epilogue's stores took a u8 buffer's i8 values for floats to narrow: fuzz seed 5197)."""
    from fuser.driver import compile_fusion

    text = """func.func @mm(%a: tensor<128x64xbf16>, %b: tensor<64x128xbf16>) -> (tensor<128x128xui8>, tensor<128x128xi8>, tensor<128x128xi16>) {
  %c = fusion.matmul %a, %b : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
  %u = fusion.cast %c : tensor<128x128xf32> to tensor<128x128xui8>
  %i = fusion.cast %c : tensor<128x128xf32> to tensor<128x128xi8>
  %s = fusion.cast %c : tensor<128x128xf32> to tensor<128x128xi16>
  func.return %u, %i, %s : tensor<128x128xui8>, tensor<128x128xi8>, tensor<128x128xi16>
}"""
    compiled = compile_fusion(text)
    assert "wgmma" in compiled.ptx and "st.global.v2.b8" in compiled.ptx
