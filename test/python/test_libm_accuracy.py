"""Accuracy of the math expansions LLVM IR translation emits (lowering/target/llvmir/libm.py).

Evaluated in numpy float32 with the emitted coefficients, ex2 modelled as correctly rounded;
and on the host CPU by JIT-compiling the emitted helpers with ex2 -> llvm.exp2:
  exp  max relative error 1.2e-7 on [-87, 88]
  tanh max relative error 1.9e-7 (|x| >= 1e-4); 3e-13 absolute below
  erf  max relative error 1.7e-7 (|x| >= 1e-4); 9e-12 absolute below
  gelu (erf form; the sequence lowering/emitters/evaluator.py emits in upstream math/arith ops)
       max relative error 4.6e-7 on [-13, 13], where 1 + erf would lose all of it for x << 0
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
from fuser.lowering.emitters import evaluator
from fuser.lowering.target.llvmir import module_to_llvm_ir
from fuser.runtime.reference import erfcinv as reference_erfcinv
from fuser.runtime.reference import erfinv as reference_erfinv
from fuser.runtime.reference import lgamma as reference_lgamma

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


def model_gelu(x):
    """The sequence evaluator._gelu_erf emits (f32, and f16/bf16 computed in f32)."""
    x = f32(x)
    ax = np.minimum(np.abs(x), f32(evaluator.GELU_CLAMP))  # (NaN stays NaN, as arith.minimumf)
    t = f32(f32(1) / _fma(ax, f32(0.5 / math.sqrt(2.0)), f32(1)))
    xx = f32(ax * ax)
    xx_lo = _fma(ax, ax, -xx)
    p = _horner(evaluator.GELU_ERFC_POLY, f32(t - f32(evaluator.GELU_T_CENTER)))
    gauss = model_exp(f32(xx * f32(-0.5)))
    half_erfc = f32(f32(t * f32(0.5)) * f32(gauss * model_exp(_fma(xx_lo, f32(-0.5), p))))
    return f32(x * np.where(x < 0, half_erfc, f32(f32(1) - half_erfc)))


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


def test_gelu_model_accuracy():
    """x/2 erfc(-x / sqrt 2) in f32 keeps its relative accuracy for x << 0, down to results near
    f32's smallest normal number (x = -13 gives -1.5e-38), where 1 + erf(x / sqrt 2) has none."""
    erfc = np.vectorize(math.erfc, otypes=[np.float64])
    x = np.concatenate([_grid(0, 1, 200_001), _grid(1, 13, 400_001), _grid(0, 1e-3, 10_001)])
    xd = x.astype(np.float64)
    ref = 0.5 * xd * erfc(-xd / math.sqrt(2.0))
    rel, absolute = _errors(model_gelu(x), ref, x)
    assert rel < 6e-7 and absolute < 1e-10, (rel, absolute)
    assert model_gelu(f32(np.inf)) == np.inf and model_gelu(f32(-20)) == 0
    assert np.isnan(model_gelu(f32(-np.inf))) and np.isnan(model_gelu(f32(np.nan)))  # torch: NaN for -inf


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
    # (1 - x rounds for x below 2^-29: the reference solves erfc(z) = x itself there; x of 1e-45 is
    # the tail, x near 2 its mirror)
    "erfcinv": (np.vectorize(reference_erfcinv, otypes=[np.float64]),
                [(0, 2), (0, 1e-3), (0.49, 0.51), (1.999, 2), (0.9999, 1.0001), (1e-9, 1e-7)]),
    # (away from lgamma's zeros, where Python's math.lgamma is off by 1e-10 relative: the mpmath
    # test below covers them)
    "lgamma": (np.vectorize(reference_lgamma, otypes=[np.float64]), [(0, 0.9), (2.5, 12), (1, 1e30)]),
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


def _helper(name: str):
    if not hasattr(_f64_helpers, "cache"):
        _f64_helpers.cache = _f64_helpers()
    return _f64_helpers.cache[name]


def _ulps_from(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in ulps of the float32 nearest `want` (float64), subnormal ulps below 2^-126."""
    ulp = np.maximum(np.spacing(np.abs(want).astype(f32)).astype(np.float64), 2.0 ** -149)
    return np.abs(got.astype(np.float64) - want) / ulp


def _consecutive(center: float, n: int) -> np.ndarray:
    """2n + 1 consecutive float32 values around `center`."""
    c = f32(center)
    bits = np.array([c], dtype=f32).view(np.int32)[0]
    steps = np.arange(-n, n + 1, dtype=np.int64)
    if c < 0:  # (negative floats: the bits step the other way; all the same values either way)
        steps = -steps
    return (np.int64(bits) + steps).astype(np.int32).view(f32)


def test_lgamma_is_correctly_rounded_on_host_against_mpmath():
    """lgamma's f64 helper, rounded once, against mpmath at 100 bits: within half an f32 ulp (plus
    1e-3) everywhere sampled, as the sweep of the commit measured it: (0, 3), the zeros at 1 and 2
    (400 consecutive floats around each), [2.5, 12], tiny x down to subnormals, large x up to
    past the overflow point (lgamma(4.085e36) is the largest finite f32 result), negative
    non-integers in (-10, 0) and to -8e6, and 400 consecutive floats around each of the twelve
    zeros of lgamma in (-8, -2), where the reflection cancels. The poles (0, -0, the negative
    integers, every x <= -2^23) and +-inf give +inf, as torch.lgamma; NaN gives NaN."""
    mpmath = pytest.importorskip("mpmath")
    fn = _helper("lgamma")
    rng = np.random.default_rng(11)
    xs = np.concatenate([rng.uniform(0, 3, 1500), _consecutive(1.0, 200), _consecutive(2.0, 200),
                         rng.uniform(2.5, 12, 800), 10.0 ** rng.uniform(-45, -1, 400),
                         10.0 ** rng.uniform(1, 36.61, 800), rng.uniform(4.07e36, 4.1e36, 100),
                         -rng.uniform(0, 10, 1500), -(10.0 ** rng.uniform(1, 6.9, 400))]).astype(f32)
    with mpmath.workdps(30):
        zeros = [float(mpmath.findroot(lambda t: mpmath.loggamma(t).real, (lo, hi), solver="anderson"))
                 for n in range(2, 8) for lo, hi in ((-n - 0.999999, -n - 0.5), (-n - 0.5, -n - 0.000001))]
    xs = np.concatenate([xs] + [_consecutive(z, 200) for z in zeros])
    xs = xs[(xs > 0) | (xs != np.round(xs))]  # (the poles are checked below)
    with mpmath.workprec(100):
        want = np.array([float(mpmath.log(abs(mpmath.gamma(mpmath.mpf(float(x)))))) if abs(x) < 1e4 else
                         float(mpmath.loggamma(mpmath.mpf(float(x))).real if x > 0 else
                               mpmath.log(abs(mpmath.gamma(mpmath.mpf(float(x)))))) for x in xs])
    got = fn(xs)
    overflow = np.abs(want) >= 3.4028235677973366e38 * (1 + 2.0 ** -25)  # rounds to inf in f32
    assert np.all(got[overflow] == np.inf) and np.any(overflow)
    err = _ulps_from(got[~overflow], want[~overflow])
    worst = int(np.argmax(err))
    assert err[worst] <= 0.5 + 1e-3, f"lgamma({xs[~overflow][worst]!r}) = {got[~overflow][worst]!r}, want {want[~overflow][worst]!r}"
    poles = np.array([0.0, -0.0, -1.0, -2.0, -3.0, -10.0, -2.0 ** 23, -2.0 ** 23 - 2, -1e30, np.inf, -np.inf], dtype=f32)
    assert np.all(fn(poles) == np.inf)
    assert np.isnan(fn(np.array([np.nan], dtype=f32)))[0]
    assert np.all(fn(np.array([1.0, 2.0], dtype=f32)) == 0.0)


def test_erfcinv_reference_matches_mpmath():
    """The reference erfcinv (the oracle of the erfcinv tests) agrees with mpmath's erfinv(1 - y)
    at 220 bits (1 - y exact there) to a few float64 ulps, down to y = 1e-45 and up to 2 - 1e-7."""
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(13)
    ys = np.concatenate([rng.uniform(0, 2, 100), 10.0 ** rng.uniform(-45, -1, 100), 2 - 10.0 ** rng.uniform(-7, -1, 50)])
    ys = ys.astype(f32).astype(np.float64)
    with mpmath.workprec(220):
        want = np.array([float(mpmath.erfinv(1 - mpmath.mpf(y))) for y in ys])
    got = np.vectorize(reference_erfcinv, otypes=[np.float64])(ys)
    assert np.max(np.abs(got - want) / np.spacing(np.abs(want))) <= 4


def test_erfcinv_specials_on_host():
    """erfcinv: 0 and -0 give +inf, 2 gives -inf, 1 gives 0, below 0 or above 2 and NaN a NaN;
    erfcinv(2 - y) = -erfcinv(y) bit for bit (2 - y is exact for y in [1, 2])."""
    fn = _helper("erfcinv")
    got = fn(np.array([0.0, -0.0, 2.0, 1.0, -1e-45, 2.0000002, np.nan, np.inf, -np.inf], dtype=f32))
    assert got[0] == np.inf and got[1] == np.inf and got[2] == -np.inf and got[3] == 0.0
    assert np.isnan(got[4:]).all()
    y = np.random.default_rng(17).uniform(1, 2, 2000).astype(f32)
    assert np.array_equal(fn(y), -fn((2 - y).astype(f32)))
