"""Issue 28: any function name compiles (its kernels get PTX-safe names the runtime finds), hex
float literals of fusion.full are bit patterns as in MLIR, launch options past CUDA's limits are
refused by name, and a body-less func.func is a located error."""

from __future__ import annotations

import math
import re
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from fuser import api as fuser
from fuser.dialects.ir import FuserDiagnostic, parse_module
from fuser.dialects.sched.core import PTX_IDENTIFIER, kernel_symbol
from fuser.lowering.target.ptx import assemble_ptx, find_ptxas
from fuser.lowering.heuristics.options import ScheduleOptions, ScheduleOptionsError
from fuser.runtime.reference import run_reference

FUSER_OPT = [sys.executable, "-m", "fuser.tools.fuser_opt"]
ODD_NAMES = ["k-1", "名前", "a b", "k.x", "1k", "a$b", "%x", "_"]


def _entries(ptx: str) -> set[str]:
    return set(re.findall(r"\.entry\s+(\S+?)\(", ptx))


def _fusion(name: str) -> fuser.FusionBuilder:
    with fuser.FusionBuilder(name) as fb:
        x = fb.input((64, 96), "f32", name="x")
        fb.output(fuser.exp(x))
        fb.output(fuser.sum(x, 1))
    return fb


@pytest.mark.parametrize("name", ODD_NAMES)
def test_any_function_name_compiles_and_its_kernels_are_ptx_entries(name):
    k = fuser.compile(_fusion(name))
    kernels = {s.kernel for s in k.program.launches}
    assert kernels and kernels <= _entries(k.ptx)
    assert all(PTX_IDENTIFIER.fullmatch(n) for n in kernels)
    assert k.program.name == name  # the host function keeps the user's name
    if find_ptxas() is not None:
        assert assemble_ptx(k.ptx, "sm_90a")[:4] == b"\x7fELF"


@pytest.mark.parametrize("name", ["k-1", "名前", "a b", "k.x"])
def test_fuser_opt_compiles_any_function_name_to_ptx(tmp_path, name):
    src = tmp_path / "n.mlir"
    src.write_text(f'func.func @"{name}"(%x: tensor<4xf32>) -> tensor<4xf32> {{\n'
                   f'  %y = fusion.exp %x : tensor<4xf32>\n  func.return %y : tensor<4xf32>\n}}\n', encoding="utf-8")
    r = subprocess.run(FUSER_OPT + [str(src), "-p", "default", "-t", "ptx"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert _entries(r.stdout) == {kernel_symbol(name) + "_k0"}
    # The nvvm-level text, printed with its locations, reads back (the gpu.module's name is ASCII too) and
    # gives the same PTX, line info included.
    nvvm = subprocess.run(FUSER_OPT + [str(src), "-p", "default", "--mlir-print-debuginfo"], capture_output=True,
                          text=True, timeout=120)
    again = subprocess.run(FUSER_OPT + ["-", "-t", "ptx"], input=nvvm.stdout, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert again.stdout == r.stdout


def test_kernel_symbol_keeps_plain_names_and_is_injective():
    for plain in ["bias_gelu", "f", "_x1", "F00"]:
        assert kernel_symbol(plain) == plain
    names = ODD_NAMES + ["bias_gelu", "k$2d$1", "k_2d_1", "k-1 ", "k--1", "1", "$31$", "a_24_b", "a$24$b"]
    mangled = [kernel_symbol(n) for n in names]
    assert len(set(mangled)) == len(names)
    assert all(PTX_IDENTIFIER.fullmatch(m + "_k0") for m in mangled)


# ------------------------------------------------------------- hex float literals


def _full_values(text: str) -> list[np.ndarray]:
    m = parse_module(text)
    fn = next(iter(m.body.block.ops))
    return run_reference(fn, [])


def test_hex_literals_are_bit_patterns_in_the_reference_interpreter():
    f32, bf16, f16 = _full_values("""
func.func @h() -> (tensor<2xf32>, tensor<2xbf16>, tensor<2xf16>) {
  %i = fusion.full 0x7F800000 : tensor<2xf32>
  %n = fusion.full 0x7FC0 : tensor<2xbf16>
  %h = fusion.full 0xFC00 : tensor<2xf16>
  func.return %i, %n, %h : tensor<2xf32>, tensor<2xbf16>, tensor<2xf16>
}""")
    assert f32.dtype == np.float32 and np.all(np.isposinf(f32))
    assert bf16.dtype == ml_dtypes.bfloat16 and np.all(np.isnan(bf16.astype(np.float32)))
    assert np.all(np.isneginf(f16))
    (nan,) = _full_values("""
func.func @n() -> tensor<2xf32> {
  %n = fusion.full 0x7FC00000 : tensor<2xf32>
  func.return %n : tensor<2xf32>
}""")
    assert np.all(np.isnan(nan))
    (one,) = _full_values("""
func.func @o() -> tensor<2xf32> {
  %n = fusion.full 0x3F800000 : tensor<2xf32>
  func.return %n : tensor<2xf32>
}""")
    assert one.tolist() == [1.0, 1.0]


def test_hex_nan_payload_round_trips():
    text = """func.func @p() -> (tensor<2xf32>, tensor<2xf32>) {
  %a = fusion.full 0x7FC00001 : tensor<2xf32>
  %b = fusion.full 0xFFC00000 : tensor<2xf32>
  func.return %a, %b : tensor<2xf32>, tensor<2xf32>
}"""
    printed = str(parse_module(text))
    assert "fusion.full 0x7FC00001 : tensor<2xf32>" in printed
    assert "fusion.full 0xFFC00000 : tensor<2xf32>" in printed
    assert str(parse_module(printed)) == printed
    full = next(o for o in parse_module(text).walk() if o.name == "fusion.full")
    bits = int.from_bytes(struct.pack("<d", full.value.value.data), "little")
    assert math.isnan(full.value.value.data) and bits == 0x7FF8000020000000  # the payload, widened


def test_hex_literal_wider_than_its_type_is_a_located_error():
    with pytest.raises(FuserDiagnostic, match=r":3:20: error: hexadecimal float literal 0x7F800000 does not fit "
                                              r"the 16 bits of bf16"):
        parse_module("""
func.func @w() -> tensor<2xbf16> {
  %n = fusion.full 0x7F800000 : tensor<2xbf16>
  func.return %n : tensor<2xbf16>
}""")


# ------------------------------------------------------------- launch limits


@pytest.mark.parametrize("opts, msg", [({"split": 70000}, "split must be at most 65535"),
                                       ({"block": 2048}, "block must be at most 1024")])
def test_launch_options_past_cuda_limits_are_refused_by_name(opts, msg):
    with pytest.raises(ScheduleOptionsError, match=msg):
        ScheduleOptions(**opts)
    ScheduleOptions(split=65535, block=1024)


# ------------------------------------------------------------- declarations


def test_a_declaration_is_a_located_error(tmp_path):
    src = tmp_path / "decl.mlir"
    src.write_text("// a declaration\nfunc.func @f(%a: tensor<4xf32>) -> tensor<4xf32>\n")
    r = subprocess.run(FUSER_OPT + [str(src), "-p", "default"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"{src}:2:1: error: function @f has no body; fuser compiles function definitions"
    with pytest.raises(FuserDiagnostic, match="function @f has no body"):
        fuser.compile(src.read_text() + "\n")
