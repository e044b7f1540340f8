"""f64 computed in f64 (issue 31): the dialect takes f64 wherever a float is accepted (save
matmul, which refuses it by name), the reference interpreter
computes it in float64, the Python API promotes as torch does, and the kernels compute it in f64
registers: the PTX of f64 math, reductions and scans has f64 instructions, 64-bit shuffles as
two 32-bit halves, and no round trip through f32."""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import fuser
from fuser import api
from fuser.dialects import fusion as F
from fuser.dialects.ir import FuserDiagnostic, parse_module
from fuser.runtime.reference import reference_from_text

SHAPE = (37, 129)
INVALID = (VerifyException, FuserDiagnostic)


def _t(dt: str, shape=SHAPE) -> str:
    return "tensor<" + "x".join(map(str, shape)) + f"x{dt}>"


def _verify(text: str) -> None:
    parse_module(text).verify()


# --------------------------------------------------------------------------------- verifiers


UNARY_F64 = ["neg", "abs", "exp", "log", "tanh", "sqrt", "rsqrt", "relu", "sigmoid", "silu", "exp2", "log2", "log10",
             "log1p", "reciprocal", "floor", "ceil", "trunc", "round", "sign", "sin", "cos", "tan", "asin", "acos",
             "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "erf", "erfc", "erfinv", "erfcinv",
             "lgamma"]
BINARY_F64 = ["add", "sub", "mul", "div", "max", "min", "pow", "atan2", "fmod", "remainder", "nextafter"]


@pytest.mark.parametrize("op", UNARY_F64)
def test_unary_math_takes_f64(op):
    _verify(f"func.func @f(%x: {_t('f64')}) -> {_t('f64')} {{\n  %r = fusion.{op} %x : {_t('f64')}\n"
            f"  func.return %r : {_t('f64')}\n}}")


@pytest.mark.parametrize("op", BINARY_F64)
def test_binary_math_takes_f64(op):
    _verify(f"func.func @f(%x: {_t('f64')}, %y: {_t('f64')}) -> {_t('f64')} {{\n"
            f"  %r = fusion.{op} %x, %y : {_t('f64')}\n  func.return %r : {_t('f64')}\n}}")


def test_gelu_takes_f64_in_both_forms():
    body = "func.func @f(%x: {t}) -> {t} {{\n  %r = fusion.gelu %x {attrs}: {t}\n  func.return %r : {t}\n}}"
    _verify(body.format(t=_t("f64"), attrs='{approximate = "tanh"} '))
    _verify(body.format(t=_t("f64"), attrs=""))


def test_matmul_refuses_f64_with_a_clear_message():
    a, b, c = _t("f64", (64, 32)), _t("f64", (32, 16)), _t("f64", (64, 16))
    with pytest.raises(INVALID, match=r"'fusion\.matmul' op operand #0 \('a'\) is f64: .*f64 matmul is not supported"):
        _verify(f"func.func @f(%a: {a}, %b: {b}) -> {c} {{\n  %r = fusion.matmul %a, %b : {a}, {b} -> {c}\n"
                f"  func.return %r : {c}\n}}")


def test_reductions_and_statistics_of_f64_are_f64():
    x, r = _t("f64"), _t("f64", (37,))
    _verify(f"""func.func @f(%x: {x}) -> ({r}, {r}, {r}, {r}, {r}, {_t('i64', (37,))}, {x}) {{
  %s = fusion.reduce sum %x dims [1] : {x} to {r}
  %p = fusion.reduce prod %x dims [1] : {x} to {r}
  %v, %m = fusion.var_mean %x dims [1] correction 1 : {x} to {r}, {r}
  %a, %q, %n = fusion.welford %x dims [1] : {x} to {r}, {r}, {_t('i64', (37,))}
  %c = fusion.scan sum %x dim 1 : {x} to {x}
  func.return %s, %p, %v, %m, %q, %n, %c : {r}, {r}, {r}, {r}, {r}, {_t('i64', (37,))}, {x}
}}""")
    r32 = _t("f32", (37,))
    with pytest.raises(INVALID, match=r"'fusion\.var_mean' op result 'var' must have element type f64, got f32"):
        _verify(f"func.func @f(%x: {x}) -> {r32} {{\n  %v, %m = fusion.var_mean %x dims [1] correction 1 : "
                f"{x} to {r32}, {r32}\n  func.return %v : {r32}\n}}")
    with pytest.raises(INVALID, match=r"sum of f64 has result element type f32, expected f64"):
        _verify(f"func.func @f(%x: {x}) -> {r32} {{\n  %s = fusion.reduce sum %x dims [1] : {x} to {r32}\n"
                f"  func.return %s : {r32}\n}}")


# ----------------------------------------------------------------------------------- the API


def test_api_promotes_as_torch():
    with fuser.FusionBuilder("p") as fb:
        d = fb.input((4, 8), "f64")
        s = fb.input((4, 8), "f32")
        h = fb.input((4, 8), "bf16")
        i = fb.input((4, 8), "i32")
        assert (d + s).dtype == "f64"       # f64 op f32 -> f64
        assert (s * 2.0).dtype == "f32"     # a Python float is weak
        assert (d * 2.0).dtype == "f64"
        assert (h + d).dtype == "f64"
        assert (i + d).dtype == "f64"
        assert api.exp(d).dtype == "f64" and api.sin(d).dtype == "f64"
        assert api.sum(d, 1).dtype == "f64"
        var, mean = api.var_mean(d, 1)
        assert var.dtype == "f64" and mean.dtype == "f64"
        assert api.normal((4, 8), 1, 2, 0.0, 1.0, "f64", builder=fb).dtype == "f64"
        fb.output(d + s)


# ------------------------------------------------------------------------- reference interpreter


def test_reference_computes_f64_in_float64():
    """Every f64 op of a chain, in native precision, is numpy's float64 answer: nothing through
    float32 (an f32 detour would be off by ~1e-8 relative)."""
    x, r = _t("f64"), _t("f64", (37,))
    text = f"""func.func @f(%x: {x}, %y: {x}) -> ({x}, {r}, {r}, {x}) {{
  %a = fusion.exp %x : {x}
  %b = fusion.mul %a, %y : {x}
  %c = fusion.sin %b : {x}
  %d = fusion.add %c, %x : {x}
  %e = fusion.pow %y, %x : {x}
  %f = fusion.div %d, %e : {x}
  %s = fusion.reduce sum %f dims [1] : {x} to {r}
  %v, %m = fusion.var_mean %f dims [1] correction 1 : {x} to {r}, {r}
  %c2 = fusion.scan prod %y dim 1 : {x} to {x}
  func.return %f, %s, %v, %c2 : {x}, {r}, {r}, {x}
}}"""
    rng = np.random.default_rng(1)
    xv = rng.standard_normal(SHAPE)
    yv = rng.uniform(0.5, 1.5, SHAPE)
    f, s, v, c = reference_from_text(text)(xv, yv)
    want = (np.sin(np.exp(xv) * yv) + xv) / yv ** xv
    assert f.dtype == np.float64 and s.dtype == np.float64
    np.testing.assert_allclose(f, want, rtol=1e-15, atol=0)
    np.testing.assert_allclose(s, want.sum(axis=1), rtol=1e-13)
    np.testing.assert_allclose(v, want.var(axis=1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(c, np.cumprod(yv, axis=1), rtol=1e-13)


def test_reference_normal_f64_is_box_muller_of_53_bit_uniforms():
    text = f"""func.func @f(%s: tensor<i64>, %o: tensor<i64>) -> {_t('f64', (1001,))} {{
  %r = fusion.normal %s, %o mean 1.0 std 2.0 : {_t('f64', (1001,))}
  func.return %r : {_t('f64', (1001,))}
}}"""
    z = np.asarray(reference_from_text(text)(np.array(7), np.array(3))[0])
    assert z.dtype == np.float64
    assert abs(z.mean() - 1.0) < 0.2 and abs(z.std() - 2.0) < 0.2
    assert len(np.unique(z)) == z.size  # 53-bit uniforms: no repeats


# ----------------------------------------------------------------------------------- the PTX


def _ptx(text: str) -> str:
    return fuser.compile(text).ptx


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))


def test_f64_pointwise_ptx_computes_in_f64():
    x = _t("f64")
    ptx = _ptx(f"""func.func @f(%x: {x}, %y: {x}) -> {x} {{
  %a = fusion.exp %x : {x}
  %b = fusion.div %a, %y : {x}
  %c = fusion.sqrt %b : {x}
  %d = fusion.max %c, %x : {x}
  %e = fusion.sin %d : {x}
  func.return %e : {x}
}}""")
    assert "fma.rn.f64" in ptx and "div.rn.f64" in ptx and "sqrt.rn.f64" in ptx
    assert "ld.global" in ptx and re.search(r"ld\.global(\.nc)?(\.v2)?\.f64|ld\.global(\.nc)?(\.v2)?\.u64|ld\.global(\.nc)?(\.v2)?\.b64", ptx)
    assert not re.search(r"cvt\.rn\.f32\.f64|cvt\.f64\.f32", ptx), "f64 math went through f32"
    assert "ex2.approx" not in ptx and "lg2.approx" not in ptx


def test_f64_erf_family_and_gelu_ptx_compute_in_f64():
    """erf, erfc, erfinv, erfcinv and gelu's erf form: f64 helpers (libm_erf_f64.py), no f32."""
    x = _t("f64", (5, 33))
    ptx = _ptx(f"""func.func @f(%x: {x}) -> ({x}, {x}, {x}, {x}, {x}) {{
  %a = fusion.erf %x : {x}
  %b = fusion.erfc %x : {x}
  %c = fusion.gelu %x : {x}
  %t = fusion.tanh %x : {x}
  %d = fusion.erfinv %t : {x}
  %e = fusion.erfcinv %b : {x}
  func.return %a, %b, %c, %d, %e : {x}, {x}, {x}, {x}, {x}
}}""")
    assert "fma.rn.f64" in ptx and "__fuser_erfcx_table" in ptx  # erfcx's coefficient table
    assert not re.search(r"cvt\.rn\.f32\.f64|cvt\.f64\.f32", ptx), "f64 erf went through f32"
    assert "ex2.approx" not in ptx and "lg2.approx" not in ptx


def test_f64_lgamma_ptx_computes_in_f64():
    """lgamma: its f64 helper (libm_lgamma_f64.py) on the doubles, no f32 anywhere, no approximate
    exp2/log2 (its logs are libm_f64's double-double log)."""
    x = _t("f64", (5, 33))
    ptx = _ptx(f"func.func @f(%x: {x}) -> {x} {{\n  %a = fusion.lgamma %x : {x}\n  func.return %a : {x}\n}}")
    assert "fma.rn.f64" in ptx and "div.rn.f64" in ptx and "cvt.rni.f64.f64" in ptx  # (rint: sin(pi x)'s reduction)
    assert not re.search(r"cvt\.rn\.f32\.f64|cvt\.f64\.f32", ptx), "f64 lgamma went through f32"
    assert "ex2.approx" not in ptx and "lg2.approx" not in ptx


def test_f64_reduction_ptx_shuffles_64_bit_halves():
    x, r = _t("f64", (37, 4099)), _t("f64", (37,))
    ptx = _ptx(f"""func.func @f(%x: {x}) -> ({r}, {r}, {r}) {{
  %s = fusion.reduce sum %x dims [1] : {x} to {r}
  %v, %m = fusion.var_mean %x dims [1] correction 1 : {x} to {r}, {r}
  func.return %s, %v, %m : {r}, {r}, {r}
}}""")
    # each 64-bit state word goes as its low and high 32-bit halves: two b32 shuffles, then put together
    assert "shfl.sync.bfly.b32" in ptx and ptx.count("shfl.sync.bfly.b32") % 2 == 0
    assert re.search(r"mov\.b64\s+\{_, %r\d+\}, %rd\d+", ptx) and re.search(r"shl\.b64\s+%rd\d+, %rd\d+, 32;", ptx)
    assert "add.rn.f64" in ptx or "add.f64" in ptx
    assert not re.search(r"cvt\.rn\.f32\.f64|cvt\.f64\.f32", ptx)


def test_f64_scan_and_fmod_ptx():
    x = _t("f64")
    ptx = _ptx(f"""func.func @f(%x: {x}, %y: {x}) -> ({x}, {x}) {{
  %c = fusion.scan sum %x dim 1 : {x} to {x}
  %m = fusion.fmod %x, %y : {x}
  func.return %c, %m : {x}, {x}
}}""")
    assert "rem.u64" in ptx  # fmod's exact remainder of mantissas, not a - b * trunc(a / b)
    assert not re.search(r"cvt\.rn\.f32\.f64|cvt\.f64\.f32", ptx)


def test_f64_huge_trig_argument_table_is_in_the_module():
    x = _t("f64")
    ptx = _ptx(f"func.func @f(%x: {x}) -> {x} {{\n  %r = fusion.cos %x : {x}\n  func.return %r : {x}\n}}")
    assert "__fuser_two_over_pi_chunks" in ptx


def test_f64_normal_compiles():
    t = _t("f64", (1001,))
    ptx = _ptx(f"""func.func @f(%s: tensor<i64>, %o: tensor<i64>) -> {t} {{
  %r = fusion.normal %s, %o mean 0.0 std 1.0 : {t}
  func.return %r : {t}
}}""")
    assert "sqrt.rn.f64" in ptx and not re.search(r"cvt\.rn\.f32\.f64", ptx)


def test_reduce_identity_of_f64_max_is_minus_infinity_in_f64():
    x, r = _t("f64"), _t("f64", (37,))
    ir = fuser.compile(f"func.func @f(%x: {x}) -> {r} {{\n  %s = fusion.reduce max %x dims [1] : {x} to {r}\n"
                       f"  func.return %s : {r}\n}}").ir("sched")
    assert re.search(r"arith\.constant 0xfff0000000000000 : f64", ir, re.I), ir[:2000]
    assert re.search(r"sched\.shfl_xor %\d+, 16 : f64", ir)
