"""Accuracy of the math expansions LLVM IR translation emits (lowering/target/llvmir/libm.py).

Evaluated in numpy float32 with the emitted coefficients, ex2 modelled as correctly rounded;
and on the host CPU by JIT-compiling the emitted helpers with ex2 -> llvm.exp2:
  exp  max relative error 1.2e-7 on [-87, 88]
  tanh max relative error 1.9e-7 (|x| >= 1e-4); 3e-13 absolute below
  erf  max relative error 1.7e-7 (|x| >= 1e-4); 9e-12 absolute below
On the GPU, ex2.approx.ftz adds up to ~2^-22 relative error (about 2 ulp).
"""

from __future__ import annotations

import ctypes
import math
import re

import numpy as np
import pytest
from test_nvvm_translation import MATH_ALL, parse

from fuser.lowering.target import llvmir
from fuser.lowering.target.llvmir import module_to_llvm_ir
from fuser.runtime.reference import erfinv as reference_erfinv

# ----------------------------------------------------------------------------------------------
# Accuracy of the math expansions: a numpy float32 model of the emitted sequences
# ----------------------------------------------------------------------------------------------

f32 = np.float32


@pytest.fixture(autouse=True)
def _quiet_numpy():
    with np.errstate(all="ignore"):  # inf/NaN lanes of the unselected branch
        yield


def _fma(a, b, c):
    # a*b is exact in float64 (24+24 bits); one more rounding of the sum, then to float32.
    return f32(np.float64(a) * np.float64(b) + np.float64(c))


def _horner(coeffs, x):
    acc = f32(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = _fma(acc, x, f32(c))
    return acc


def _ex2(t):  # ex2.approx.ftz modelled as correctly rounded, subnormal results flushed
    r = f32(np.exp2(np.float64(t)))
    return np.where(np.abs(r) < f32(2.0**-126), f32(0), r)


def model_exp(x):
    lo, hi = llvmir.EXP_CLAMP
    x = np.minimum(np.maximum(f32(x), f32(lo)), f32(hi))
    l2e = f32(llvmir.LOG2E)
    t = f32(x * l2e)
    err = _fma(x, l2e, -t)
    err = _fma(x, f32(llvmir.LOG2E - float(l2e)), err)
    p = _ex2(t)
    r = _fma(p, f32(err * f32(llvmir.LN2)), p)
    return np.where(p == np.inf, p, r)


def model_tanh(x):
    x = f32(x)
    ax = np.abs(x)
    s = f32(x * x)
    small = _fma(f32(x * s), _horner(llvmir.TANH_POLY, s), x)
    e = model_exp(f32(ax * f32(2)))
    big = np.copysign(f32(f32(1) - f32(f32(2) / f32(e + f32(1)))), x)
    return np.where(ax < f32(llvmir.TANH_SMALL), small, big)


def model_erf(x):
    x = f32(x)
    ax = np.abs(x)
    small = f32(x * _horner(llvmir.ERF_SMALL_POLY, f32(x * x)))
    t = np.minimum(ax, f32(llvmir.ERF_CLAMP))
    r = _horner(llvmir.ERF_LARGE_POLY, f32(t - f32(llvmir.ERF_CENTER)))
    big = np.copysign(f32(f32(1) - model_exp(r)), x)
    return np.where(ax < f32(llvmir.ERF_SMALL), small, big)


def _grid(lo, hi, n=400_001):
    x = np.linspace(lo, hi, n).astype(f32)
    return np.concatenate([x, -x])


def _errors(got, ref, x, near_zero=1e-4):
    away = np.abs(x) >= near_zero
    rel = np.abs(got[away].astype(np.float64) - ref[away]) / np.abs(ref[away])
    absolute = np.abs(got[~away].astype(np.float64) - ref[~away])
    return rel.max(), (absolute.max() if absolute.size else 0.0)


def test_exp_model_accuracy():
    x = np.linspace(-87, 88, 1_000_001).astype(f32)
    ref = np.exp(x.astype(np.float64))
    rel = np.max(np.abs(model_exp(x) - ref) / ref)
    assert rel < 2.5e-7, rel  # ~2 ulp; plus ex2.approx's own error on the GPU
    assert model_exp(f32(100)) == np.inf and model_exp(f32(-200)) == 0
    assert np.isnan(model_exp(f32(np.nan)))


def test_tanh_model_accuracy():
    x = np.concatenate([_grid(0, 1), _grid(1, 12), _grid(0, 1e-3, 10_001)])
    ref = np.tanh(x.astype(np.float64))
    rel, absolute = _errors(model_tanh(x), ref, x)
    assert rel < 2e-6 and absolute < 1e-12, (rel, absolute)
    assert model_tanh(f32(np.inf)) == 1 and model_tanh(f32(-np.inf)) == -1
    assert np.isnan(model_tanh(f32(np.nan)))


def test_erf_model_accuracy():
    erf = np.vectorize(math.erf)
    x = np.concatenate([_grid(0, 1, 200_001), _grid(1, 6, 200_001), _grid(0, 1e-3, 10_001)])
    ref = erf(x.astype(np.float64))
    rel, absolute = _errors(model_erf(x), ref, x)
    assert rel < 2e-6 and absolute < 1e-10, (rel, absolute)
    assert model_erf(f32(np.inf)) == 1 and model_erf(f32(-np.inf)) == -1
    assert np.isnan(model_erf(f32(np.nan)))


# ----------------------------------------------------------------------------------------------
# The emitted helpers themselves, JIT-compiled for the host CPU (NVVM ex2/lg2 -> llvm.exp2/log2)
# ----------------------------------------------------------------------------------------------


def _host_helpers() -> dict[str, ctypes.CFUNCTYPE]:
    import llvmlite.binding as lb

    lb.initialize_native_target()
    lb.initialize_native_asmprinter()
    ir = module_to_llvm_ir(parse(MATH_ALL))
    ir = ir.replace('target triple = "nvptx64-nvidia-cuda"', "")
    ir = ir.replace("ptx_kernel ", "")
    ir = ir.replace("@llvm.nvvm.ex2.approx.ftz.f(", "@llvm.exp2.f32(")
    ir = ir.replace("@llvm.nvvm.lg2.approx.f(", "@llvm.log2.f32(")
    ir = ir.replace("declare float @llvm.nvvm.rsqrt.approx.f(float)", "")
    ir = re.sub(r"define internal float @__fuser_rsqrtf.*?\n}\n", "", ir, flags=re.S)
    ir = re.sub(r"define void @math_all.*?\n}\n", "", ir, flags=re.S)
    ir = re.sub(r"^declare .*@llvm\.nvvm\..*$", "", ir, flags=re.M)
    ir = ir.replace("define internal float", "define float")
    # exp2/log2 may be declared twice after the renaming
    seen, lines = set(), []
    for line in ir.splitlines():
        if line.startswith("declare"):
            if line in seen:
                continue
            seen.add(line)
        lines.append(line)
    mod = lb.parse_assembly("\n".join(lines))
    mod.verify()
    tm = lb.Target.from_default_triple().create_target_machine()
    engine = lb.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    proto = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)
    _host_helpers.engine = engine  # keep alive
    return {n: proto(engine.get_function_address(f"__fuser_{n}f")) for n in ("exp", "tanh", "erf")}


def test_emitted_helpers_match_model_on_host():
    helpers = _host_helpers()
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.uniform(-6, 6, 3000), rng.uniform(-1e-3, 1e-3, 200), [0.0, 0.55, -1.0, 4.0]])
    xs = xs.astype(f32)
    for name, model in (("exp", model_exp), ("tanh", model_tanh), ("erf", model_erf)):
        got = np.array([helpers[name](float(x)) for x in xs], dtype=f32)
        want = model(xs)
        # the host's exp2 may differ from the model's rounding by an ulp
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=1e-30, err_msg=name)


# ----------------------------------------------------------------------------------------------
# The f64-computed helpers (trigonometric, hyperbolic, expm1), JIT-compiled for the host: they use
# only LLVM's own intrinsics, so the host runs exactly what the GPU runs (up to fma contraction,
# which these sequences do not depend on). Rounded once from f64, each is correctly rounded on
# every sample here: at most half an f32 ulp from numpy's float64 answer (plus its own error).
# ----------------------------------------------------------------------------------------------

F64_HELPERS = {
    "sin": (np.sin, [(-10, 10), (-3e7, 3e7), (2.8e14, 2.9e14), (-1e20, 1e20), (-3.4e38, 3.4e38)]),
    "cos": (np.cos, [(-10, 10), (-3e7, 3e7), (-1e15, 1e15), (-3.4e38, 3.4e38)]),
    "tan": (np.tan, [(-10, 10), (-1e4, 1e4), (-1e30, 1e30)]),
    "asin": (np.arcsin, [(-1, 1)]),
    "acos": (np.arccos, [(-1, 1)]),
    "atan": (np.arctan, [(-5, 5), (-1e6, 1e6)]),
    "sinh": (np.sinh, [(-1, 1), (-89, 89)]),
    "cosh": (np.cosh, [(-89, 89)]),
    "asinh": (np.arcsinh, [(-5, 5), (-1e30, 1e30)]),
    "acosh": (np.arccosh, [(1, 3), (1, 1e30)]),
    "atanh": (np.arctanh, [(-1, 1)]),
    "expm1": (np.expm1, [(-1, 1), (-80, 88)]),
    "erfc": (np.vectorize(math.erfc, otypes=[np.float64]), [(-3, 3), (1.9, 2.1), (-11, 11)]),
    "erfinv": (np.vectorize(reference_erfinv, otypes=[np.float64]), [(-1, 1), (0.99, 1), (-1, -0.9999), (0.45, 0.55)]),
}


def _f64_helpers() -> dict[str, ctypes.CFUNCTYPE]:
    import llvmlite.binding as lb

    from fuser.lowering.target.llvmir.emitter import Emitter
    from fuser.lowering.target.llvmir.libm import MATH_HELPERS

    class Declarations:  # the one thing the helpers ask of their module
        def __init__(self):
            self.lines = {}

        def declare(self, fn, ret, args):
            self.lines[fn] = f"declare {ret} @{fn}({', '.join(args)})"

    decls, bodies = Declarations(), []
    for name in F64_HELPERS:
        e = Emitter(decls, name)
        e.start_block("entry")
        e.emit(f"ret float {MATH_HELPERS['math.' + name](e, '%x')}")
        bodies.append(f"define float @h_{name}(float %x) {{\n" + "\n".join(e.lines) + "\n}")
    lb.initialize_native_target()
    lb.initialize_native_asmprinter()
    mod = lb.parse_assembly("\n".join(decls.lines.values()) + "\n" + "\n".join(bodies))
    mod.verify()
    assert "nvvm" not in str(mod), "the f64 helpers use LLVM's intrinsics only"
    engine = lb.create_mcjit_compiler(mod, lb.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    _f64_helpers.engine = engine  # keep alive
    proto = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)
    return {n: np.vectorize(proto(engine.get_function_address(f"h_{n}")), otypes=[f32]) for n in F64_HELPERS}


@pytest.mark.parametrize("name", list(F64_HELPERS))
def test_f64_helpers_are_correctly_rounded_on_host(name):
    fn = _f64_helpers.cache.get(name) if hasattr(_f64_helpers, "cache") else None
    if fn is None:
        _f64_helpers.cache = _f64_helpers()
        fn = _f64_helpers.cache[name]
    ref, ranges = F64_HELPERS[name]
    rng = np.random.default_rng(7)
    for lo, hi in ranges:
        xs = rng.uniform(lo, hi, 4000)
        if lo < 0 < hi:  # tiny arguments of both signs, down to subnormals
            xs = np.concatenate([xs, rng.uniform(-1, 1, 500) * 10.0 ** rng.uniform(-44, 0, 500)])
        xs = xs.astype(f32)
        want = ref(xs.astype(np.float64))
        keep = np.isfinite(want) & (np.abs(want) < 3.4e38)
        got = fn(xs[keep]).astype(np.float64)
        ulp = np.maximum(np.spacing(np.abs(want[keep]).astype(f32)).astype(np.float64), 2.0 ** -149)
        err = np.abs(got - want[keep]) / ulp
        worst = int(np.argmax(err))
        assert err[worst] <= 0.5 + 1e-3, f"{name}({xs[keep][worst]!r}) = {got[worst]!r}, want {want[keep][worst]!r}"
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 100.0, 3e38], dtype=f32)
    got, want = fn(specials), ref(specials.astype(np.float64)).astype(f32)
    for x, g, w in zip(specials, got, want):
        assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (name, x, g, w)


def _two_operand_helper(op: str):
    """The f32 helper of a two-operand op (MATH_HELPERS2), JIT-compiled for the host, vectorized."""
    import llvmlite.binding as lb

    from fuser.lowering.target.llvmir.emitter import Emitter
    from fuser.lowering.target.llvmir.libm import MATH_HELPERS2

    class Declarations:
        def __init__(self):
            self.lines = {}

        def declare(self, fn, ret, args):
            self.lines[fn] = f"declare {ret} @{fn}({', '.join(args)})"

    decls = Declarations()
    e = Emitter(decls, "h")
    e.start_block("entry")
    e.emit(f"ret float {MATH_HELPERS2[op](e, '%a', '%b')}")
    lb.initialize_native_target()
    lb.initialize_native_asmprinter()
    mod = lb.parse_assembly("\n".join(decls.lines.values()) + "\ndefine float @h(float %a, float %b) {\n"
                            + "\n".join(e.lines) + "\n}")
    mod.verify()
    engine = lb.create_mcjit_compiler(mod, lb.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    _two_operand_helper.engines = getattr(_two_operand_helper, "engines", []) + [engine]  # keep alive
    proto = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_float)
    return np.vectorize(proto(engine.get_function_address("h")), otypes=[f32])


def test_atan2_is_correctly_rounded_with_c_special_cases_on_host():
    """atan2, the two-operand f64 helper: correctly rounded on random points of every scale, and
    C's (numpy's, torch's) answer for every pair of signed zeros, infinities, NaN and +-1."""
    h = _two_operand_helper("math.atan2")
    rng = np.random.default_rng(3)
    y, x = ((rng.standard_normal(8000) * 10.0 ** rng.uniform(-30, 30, 8000)).astype(f32) for _ in range(2))
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    ulp = np.maximum(np.spacing(np.abs(want).astype(f32)).astype(np.float64), 2.0 ** -149)
    assert np.max(np.abs(h(y, x).astype(np.float64) - want) / ulp) <= 0.5 + 1e-3
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], dtype=f32)
    for a in special:
        for b in special:
            g, w = h(a, b), f32(np.arctan2(np.float64(a), np.float64(b)))
            assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (a, b, g, w)


def test_fmod_is_exact_on_host():
    """arith.remf's helper (fusion.fmod, and remainder's core) is C's fmod exactly, for operands
    of every scale (quotients up to 2^250, subnormals) and the special values: the modular
    arithmetic on 24-bit mantissas has no rounding."""
    h = _two_operand_helper("arith.remf")
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(6000) * 10.0 ** rng.uniform(-44, 38, 6000)).astype(f32)
    b = (rng.standard_normal(6000) * 10.0 ** rng.uniform(-44, 38, 6000)).astype(f32)
    a[:3], b[:3] = [1e30, 7.0, -5.5], [3.0, -2.0, 2.0]
    got, want = h(a, b), np.fmod(a, b)  # numpy's float32 fmod is C's: exact
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(a[~same][:5], b[~same][:5], got[~same][:5], want[~same][:5]))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -1.5, 1e-45], dtype=f32)
    for x in special:
        for y in special:
            g, w = h(x, y), np.fmod(x, y)
            assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (x, y, g, w)
