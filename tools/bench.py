"""fuser-bench: fusions side by side with torch eager and torch.compile, on one GPU, in one run.

    fuser-bench                              # every workload at full size, table on stdout
    fuser-bench --quick                      # small shapes: a smoke run in seconds
    fuser-bench --filter 'row_sum|col_sum' --json bench-results/sums.json --png bench-results/sums.png
    fuser-bench --list                       # the registry (needs no GPU, no torch)
    fuser-bench --show-mlir --filter scale_f32   # the fusion IR a workload compiles

Method (see PERF.md): every row is checked for correctness against torch eager before it is
timed (a fast wrong kernel is a FAIL, not a number); times are medians after warm-up
(`triton.testing.do_bench` when triton imports, CUDA events otherwise); inputs that fit in L2
are rotated through enough copies to exceed it; inputs are random, never zeros; tensor-core
(TFLOP/s) rows are timed in two rounds in opposite peer orders, keeping each peer's faster
median, so that no peer alone runs on the boost clock of a cool GPU. Ratios are
peer time / fuser time, so > 1 means fuser is faster. "% ceil" is the fuser rate over the
measured device-to-device copy bandwidth (GB/s rows) or over the bf16 tensor-core peak
(TFLOP/s rows).

The registry is a list of small `Workload` records built by one function per family; a new
capability adds a family function (MLIR text + torch reference + bytes/FLOPs) and registers its
shapes. torch, triton and matplotlib are imported lazily, so `--list` and the tests run on a
machine that has none of them.

Families (`--list` shows every row; `--filter` matches names and families):

    copy              torch y.copy_(x): the bandwidth anchor (GB/s read + written)
    pointwise         x*2, gelu_tanh(x*y + b)
    row_sum, col_sum, sum_all       f32-accumulated sums over the last / first / only axis
    var_mean          (var, mean), correction 1, last axis, f32 out; PERF.md's three shapes
    var_mean_dim0     the same over the first axis at 32768x4096 (compare with col_sum)
    layer_norm        (x - mean) * rsqrt(var + 1e-5) * w + b, last axis; bytes read + written
    rms_norm          x * rsqrt(mean(x^2) + 1e-5) * w, last axis
    matmul            bf16 A[M,K] @ B[K,N] -> bf16, f32 accumulation; shapes are MxNxK (TFLOP/s),
                      PERF.md's large shapes and its four large-K ones (split-K)
    matmul_bias_relu, matmul_bias_gelu   the same with relu(c + bias) / gelu_tanh(c + bias)

Rows never abort the run: a fusion the compiler rejects as not supported (yet) is reported as
`unsupported` (its torch peers are still timed; it does not change the exit status), any other
compile or launch error as ERROR, a wrong result as FAIL (exit status 1 for FAIL or ERROR).
If a kernel fault loses the CUDA context, the rows after it are listed as not run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import itertools
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

Shape = tuple[int, ...]

GiB = 1 << 30
L2_BYTES = 60 * 10**6          # H200 L2 (H100: 50 MB); inputs below this are rotated
ROTATE_TARGET_BYTES = 200 * 10**6
DEFAULT_PEAK_TFLOPS = 989.0    # Hopper bf16 dense tensor-core peak (PERF.md)
ELEM_BYTES = {"f32": 4, "bf16": 2, "f16": 2}
NO_GPU_PREFIX = "fuser-bench needs an NVIDIA GPU: "


# ============================================================================ registry


@dataclass(frozen=True)
class Workload:
    """One benchmark row: a fusion, the torch function it must agree with, and what it moves.

    `inputs(shape, dtype)` gives the (shape, dtype) of each positional input; the harness fills
    them with torch.randn. `mlir(shape, dtype)` is the fusion-dialect text, or None for a
    torch-only anchor. `torch_fn(*inputs)` is the eager reference, also handed to torch.compile.
    """

    name: str
    family: str
    shape: Shape
    dtype: str
    quick_shape: Shape
    inputs: Callable[[Shape, str], list[tuple[Shape, str]]]
    torch_fn: Callable[..., Any]
    bytes_moved: Callable[[Shape, str], int]
    mlir: Callable[[Shape, str], str] | None = None
    flops: Callable[[Shape], int] | None = None
    rtol: float = 1e-5
    compile_peer: bool = True      # False: torch.compile is not a meaningful peer (the copy anchor)
    note: str = ""
    # Multipliers for the torch.randn inputs (one per input; None: all 1.0), e.g. 1/sqrt(K) for a
    # matmul operand so that outputs stay O(1).
    input_scales: Callable[[Shape], list[float]] | None = None

    def scales_for(self, shape: Shape) -> list[float]:
        n = len(self.inputs(shape, self.dtype))
        scales = [1.0] * n if self.input_scales is None else list(self.input_scales(shape))
        if len(scales) != n:
            raise ValueError(f"{self.name}: {len(scales)} input scales for {n} inputs")
        return scales

    def shape_for(self, quick: bool) -> Shape:
        return self.quick_shape if quick else self.shape

    def mlir_text(self, quick: bool = False) -> str | None:
        return None if self.mlir is None else self.mlir(self.shape_for(quick), self.dtype)

    @property
    def unit(self) -> str:
        return "TFLOP/s" if self.flops is not None else "GB/s"


WORKLOADS: list[Workload] = []


def register(w: Workload) -> Workload:
    if any(other.name == w.name for other in WORKLOADS):
        raise ValueError(f"workload {w.name!r} is registered twice")
    WORKLOADS.append(w)
    return w


def select(pattern: str | None, workloads: Sequence[Workload] | None = None) -> list[Workload]:
    """Workloads whose name or family matches the regex `pattern` (all when None)."""
    ws = list(WORKLOADS if workloads is None else workloads)
    if not pattern:
        return ws
    rx = re.compile(pattern)
    return [w for w in ws if rx.search(w.name) or rx.search(w.family)]


# -------------------------------------------------------------------- MLIR helpers


def ttype(shape: Shape, dtype: str) -> str:
    """`tensor<AxBxf32>`; a 0-d shape gives `tensor<f32>`."""
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def nbytes(shape: Shape, dtype: str) -> int:
    return math.prod(shape) * ELEM_BYTES[dtype]


def fmt_shape(shape: Shape) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _func(name: str, args: list[tuple[str, str]], results: list[str], body: list[str], ret: list[str]) -> str:
    sig = ", ".join(f"%{a}: {t}" for a, t in args)
    res = ", ".join(results)
    lines = [f"func.func @{name}({sig}) -> ({res}) {{"]
    lines += [f"  {line}" for line in body]
    lines.append(f"  func.return {', '.join('%' + r for r in ret)} : {res}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _torch_fn(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    return fn


# ---------------------------------------------------------------------- families


def copy_anchor(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """torch device-to-device copy `y.copy_(x)`: the bandwidth every GB/s row is measured against."""
    return Workload(
        name=f"copy_{dtype}", family="copy", shape=shape, dtype=dtype, quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d), (s, d)],
        torch_fn=_torch_fn("copy_", lambda x, y: y.copy_(x)),
        bytes_moved=lambda s, d: 2 * nbytes(s, d),
        compile_peer=False,
        note="anchor: torch y.copy_(x), bytes read + written",
    )


def scale(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """y = x * 2."""
    def mlir(s: Shape, d: str) -> str:
        t = ttype(s, d)
        return _func(f"scale_{d}", [("x", t)], [t], [
            f"%c = fusion.full 2.0 : {t}",
            f"%y = fusion.mul %x, %c : {t}",
        ], ["y"])

    return Workload(
        name=f"scale_{dtype}", family="pointwise", shape=shape, dtype=dtype, quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d)],
        torch_fn=_torch_fn("scale", lambda x: x * 2),
        bytes_moved=lambda s, d: 2 * nbytes(s, d),
        mlir=mlir, rtol=1e-5 if dtype == "f32" else 1e-2,
    )


def bias_gelu(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """gelu_tanh(x * y + b) with b broadcast along rows; bf16 computes in f32 and rounds once."""
    def mlir(s: Shape, d: str) -> str:
        r, c = s
        t, tb = ttype(s, d), ttype((c,), d)
        f, fb = ttype(s, "f32"), ttype((c,), "f32")
        body: list[str] = []
        x, y, b = "%x", "%y", "%b"
        if d != "f32":  # explicit casts: compute in f32 like Inductor, round the result once
            body += [f"%xf = fusion.cast %x : {t} to {f}",
                     f"%yf = fusion.cast %y : {t} to {f}",
                     f"%bf = fusion.cast %b : {tb} to {fb}"]
            x, y, b = "%xf", "%yf", "%bf"
        body += [f"%xy = fusion.mul {x}, {y} : {f}",
                 f"%bb = fusion.broadcast {b} dims [0] : {fb} to {f}",
                 f"%s = fusion.add %xy, %bb : {f}",
                 f'%g = fusion.gelu %s {{approximate = "tanh"}} : {f}']
        out = _round_out(body, "g", f, t, d)
        return _func(f"bias_gelu_{d}", [("x", t), ("y", t), ("b", tb)], [t], body, [out])

    def ref(x, y, b):
        import torch.nn.functional as F
        return F.gelu(x * y + b, approximate="tanh")

    return Workload(
        name=f"bias_gelu_{dtype}", family="pointwise", shape=shape, dtype=dtype, quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d), (s, d), ((s[1],), d)],
        torch_fn=_torch_fn("bias_gelu", ref),
        bytes_moved=lambda s, d: 3 * nbytes(s, d) + nbytes((s[1],), d),
        mlir=mlir, rtol=1e-5 if dtype == "f32" else 1e-2,
    )


def _sum_mlir(fname: str, dims: list[int]) -> Callable[[Shape, str], str]:
    """`fusion.reduce sum` over `dims`, accumulated in f32; a bf16 input gets a bf16 result (cast)."""
    def mlir(s: Shape, d: str) -> str:
        t = ttype(s, d)
        out_shape = tuple(e for i, e in enumerate(s) if i not in dims)
        r32, rd = ttype(out_shape, "f32"), ttype(out_shape, d)
        body = [f"%s = fusion.reduce sum %x dims [{', '.join(map(str, dims))}] : {t} to {r32}"]
        out = _round_out(body, "s", r32, rd, d)
        return _func(f"{fname}_{d}", [("x", t)], [rd], body, [out])
    return mlir


def _reduced(shape: Shape, dims: list[int]) -> Shape:
    return tuple(e for i, e in enumerate(shape) if i not in dims)


def reduction_sum(family: str, dims: list[int], shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """row_sum (dims [1]), col_sum (dims [0]) or sum_all (dims [0] of a 1-D tensor)."""
    refs = {
        "row_sum": lambda x: x.sum(dim=1),
        "col_sum": lambda x: x.sum(dim=0),
        "sum_all": lambda x: x.sum(),
    }
    suffix = "" if family == "sum_all" else "_" + fmt_shape(shape)
    return Workload(
        name=f"{family}_{dtype}{suffix}", family=family, shape=shape, dtype=dtype, quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d)],
        torch_fn=_torch_fn(family, refs[family]),
        bytes_moved=lambda s, d: nbytes(s, d) + nbytes(_reduced(s, dims), d),
        mlir=_sum_mlir(family, dims), rtol=1e-4 if dtype == "f32" else 1e-2,
    )


def _flit(v: float) -> str:
    """A float as an MLIR literal (MLIR wants a '.' in it: 1.0e-05, not 1e-05)."""
    text = repr(float(v))
    if "." not in text and "inf" not in text and "nan" not in text:
        text = text.replace("e", ".0e") if "e" in text else text + ".0"
    return text


def _round_out(body: list[str], value: str, f32_type: str, out_type: str, dtype: str) -> str:
    """The output's name: `value` for f32, else a `fusion.cast` of it to `dtype` appended to body
    (named %o): the fusion computes in f32 and rounds its result once, like Inductor."""
    if dtype == "f32":
        return value
    body.append(f"%o = fusion.cast %{value} : {f32_type} to {out_type}")
    return "o"


def _to_f32(body: list[str], name: str, shape: Shape, dtype: str) -> str:
    """`%<name>` as f32: itself for f32, else a `fusion.cast` appended to body (named %<name>_f)."""
    if dtype == "f32":
        return f"%{name}"
    body.append(f"%{name}_f = fusion.cast %{name} : {ttype(shape, dtype)} to {ttype(shape, 'f32')}")
    return f"%{name}_f"


NORM_RTOL = {"f32": 1e-4, "bf16": 1e-2, "f16": 1e-2}
MATMUL_RTOL = 2e-2   # norm-wise, against cuBLAS's bf16 output: a few bf16 ulps of the output scale


def var_mean(dim: int, shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """(var, mean) over one axis of a 2-D tensor, correction=1, both f32 (accumulated in f32).

    family `var_mean` reduces the last axis (dims [1]) on PERF.md's three shapes; family
    `var_mean_dim0` reduces the first axis (dims [0]) at 32768x4096, the same shape as the
    col_sum row, so the two can be compared (PERF.md has no torch anchor for it). Bytes moved:
    the input read plus the two small f32 outputs. Peer: torch.var_mean(x, dim, correction=1),
    outputs cast to f32 (a no-op for f32 inputs).
    """
    family = "var_mean" if dim == 1 else "var_mean_dim0"

    def mlir(s: Shape, d: str) -> str:
        r = ttype(_reduced(s, [dim]), "f32")
        return _func(f"{family}_{d}", [("x", ttype(s, d))], [r, r], [
            f"%v, %m = fusion.var_mean %x dims [{dim}] correction 1 : {ttype(s, d)} to {r}, {r}",
        ], ["v", "m"])

    def ref(x):
        import torch
        v, m = torch.var_mean(x, dim=dim, correction=1)
        return v.float(), m.float()

    return Workload(
        name=f"{family}_{dtype}_{fmt_shape(shape)}", family=family, shape=shape, dtype=dtype,
        quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d)],
        torch_fn=_torch_fn(family, ref),
        bytes_moved=lambda s, d: nbytes(s, d) + 2 * nbytes(_reduced(s, [dim]), "f32"),
        mlir=mlir, rtol=NORM_RTOL[dtype],
        note="read bytes (+ the f32 outputs)",
    )


LN_EPS = 1e-5


def layer_norm(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """y = (x - mean) * rsqrt(var + eps) * w + b over the last axis (var: correction 0, eps 1e-5).

    Inputs x[R,C], w[C], b[C] in one dtype; statistics and arithmetic in f32, y rounded once to
    the input dtype. Bytes: x read + y written (+ w and b). Peer: F.layer_norm(x, (C,), w, b).
    """
    def mlir(s: Shape, d: str) -> str:
        r, c = s
        t, f, r32 = ttype(s, d), ttype(s, "f32"), ttype((r,), "f32")
        c32 = ttype((c,), "f32")
        body = [f"%v, %m = fusion.var_mean %x dims [1] correction 0 : {t} to {r32}, {r32}"]
        x = _to_f32(body, "x", s, d)
        w = _to_f32(body, "w", (c,), d)
        b = _to_f32(body, "b", (c,), d)
        body += [
            f"%eps = fusion.full {_flit(LN_EPS)} : {r32}",
            f"%ve = fusion.add %v, %eps : {r32}",
            f"%rstd = fusion.rsqrt %ve : {r32}",
            f"%mb = fusion.broadcast %m dims [1] : {r32} to {f}",
            f"%rb = fusion.broadcast %rstd dims [1] : {r32} to {f}",
            f"%xc = fusion.sub {x}, %mb : {f}",
            f"%xn = fusion.mul %xc, %rb : {f}",
            f"%wb = fusion.broadcast {w} dims [0] : {c32} to {f}",
            f"%bb = fusion.broadcast {b} dims [0] : {c32} to {f}",
            f"%xw = fusion.mul %xn, %wb : {f}",
            f"%y = fusion.add %xw, %bb : {f}",
        ]
        out = _round_out(body, "y", f, t, d)
        return _func(f"layer_norm_{d}", [("x", t), ("w", ttype((c,), d)), ("b", ttype((c,), d))], [t], body, [out])

    def ref(x, w, b):
        import torch.nn.functional as F
        return F.layer_norm(x, (x.shape[-1],), w, b, eps=LN_EPS)

    return Workload(
        name=f"layer_norm_{dtype}_{fmt_shape(shape)}", family="layer_norm", shape=shape, dtype=dtype,
        quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d), ((s[1],), d), ((s[1],), d)],
        torch_fn=_torch_fn("layer_norm", ref),
        bytes_moved=lambda s, d: 2 * nbytes(s, d) + 2 * nbytes((s[1],), d),
        mlir=mlir, rtol=NORM_RTOL[dtype],
        note="bytes read + written",
    )


def rms_norm(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """y = x * rsqrt(mean(x^2, last axis) + eps) * w, eps 1e-5, in f32, y rounded to the input dtype.

    Peer: F.rms_norm when torch has it, else the same formula computed in f32 and cast back.
    Bytes: x read + y written (+ w).
    """
    def mlir(s: Shape, d: str) -> str:
        r, c = s
        t, f, r32 = ttype(s, d), ttype(s, "f32"), ttype((r,), "f32")
        body: list[str] = []
        x = _to_f32(body, "x", s, d)
        w = _to_f32(body, "w", (c,), d)
        body += [
            f"%sq = fusion.mul {x}, {x} : {f}",
            f"%ss = fusion.reduce sum %sq dims [1] : {f} to {r32}",
            f"%n = fusion.full {_flit(c)} : {r32}",
            f"%ms = fusion.div %ss, %n : {r32}",
            f"%eps = fusion.full {_flit(LN_EPS)} : {r32}",
            f"%mse = fusion.add %ms, %eps : {r32}",
            f"%rr = fusion.rsqrt %mse : {r32}",
            f"%rb = fusion.broadcast %rr dims [1] : {r32} to {f}",
            f"%xn = fusion.mul {x}, %rb : {f}",
            f"%wb = fusion.broadcast {w} dims [0] : {ttype((c,), 'f32')} to {f}",
            f"%y = fusion.mul %xn, %wb : {f}",
        ]
        out = _round_out(body, "y", f, t, d)
        return _func(f"rms_norm_{d}", [("x", t), ("w", ttype((c,), d))], [t], body, [out])

    def ref(x, w):
        import torch
        import torch.nn.functional as F
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (x.shape[-1],), w, eps=LN_EPS)
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + LN_EPS) * w.float()).to(x.dtype)

    return Workload(
        name=f"rms_norm_{dtype}_{fmt_shape(shape)}", family="rms_norm", shape=shape, dtype=dtype,
        quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d), ((s[1],), d)],
        torch_fn=_torch_fn("rms_norm", ref),
        bytes_moved=lambda s, d: 2 * nbytes(s, d) + nbytes((s[1],), d),
        mlir=mlir, rtol=NORM_RTOL[dtype],
        note="bytes read + written",
    )


MATMUL_EPILOGUES = ("none", "bias_relu", "bias_gelu")


def matmul(epilogue: str, shape: Shape, quick_shape: Shape, dtype: str = "bf16", note: str = "") -> Workload:
    """C[M,N] = A[M,K] @ B[K,N], bf16 operands, f32 accumulation, bf16 output; shape is (M, N, K).

    `epilogue` "bias_relu" / "bias_gelu" (tanh) adds bias[N] (broadcast along rows) and applies
    the activation to the f32 accumulator before the single rounding to bf16 (family
    `matmul_bias_relu` / `matmul_bias_gelu`). TFLOP/s rows: flops = 2*M*N*K (the epilogue is not
    counted), ceiling the bf16 tensor-core peak. A is scaled by 1/sqrt(K) so that C is O(1).
    Peers: eager `a @ b` (cuBLAS) plus a pointwise epilogue, and torch.compile of the same.
    """
    family = "matmul" if epilogue == "none" else f"matmul_{epilogue}"

    def mlir(s: Shape, d: str) -> str:
        m, n, k = s
        ta, tb, tc = ttype((m, k), d), ttype((k, n), d), ttype((m, n), d)
        args = [("a", ta), ("b", tb)]
        if epilogue == "none":
            return _func(f"{family}_{d}", args, [tc], [
                f"%c = fusion.matmul %a, %b : {ta}, {tb} -> {tc}",
            ], ["c"])
        f, n32 = ttype((m, n), "f32"), ttype((n,), "f32")
        args.append(("bias", ttype((n,), d)))
        body = [f"%c = fusion.matmul %a, %b : {ta}, {tb} -> {f}"]
        bias = _to_f32(body, "bias", (n,), d)
        body += [f"%bb = fusion.broadcast {bias} dims [0] : {n32} to {f}",
                 f"%s = fusion.add %c, %bb : {f}"]
        body.append(f"%act = fusion.relu %s : {f}" if epilogue == "bias_relu"
                    else f'%act = fusion.gelu %s {{approximate = "tanh"}} : {f}')
        body.append(f"%o = fusion.cast %act : {f} to {tc}")
        return _func(f"{family}_{d}", args, [tc], body, ["o"])

    def ref(a, b, *bias):
        import torch
        import torch.nn.functional as F
        c = a @ b
        if epilogue == "none":
            return c
        if epilogue == "bias_relu":
            return torch.relu(c + bias[0])
        return F.gelu(c + bias[0], approximate="tanh")

    def inputs(s: Shape, d: str) -> list[tuple[Shape, str]]:
        m, n, k = s
        ins = [((m, k), d), ((k, n), d)]
        return ins if epilogue == "none" else ins + [((n,), d)]

    def out_bytes(s: Shape, d: str) -> int:
        m, n, k = s
        return sum(nbytes(sh, dt) for sh, dt in inputs(s, d)) + nbytes((m, n), d)

    return Workload(
        name=f"{family}_{dtype}_{fmt_shape(shape)}", family=family, shape=shape, dtype=dtype,
        quick_shape=quick_shape, inputs=inputs,
        torch_fn=_torch_fn(family, ref),
        bytes_moved=out_bytes,
        mlir=mlir, flops=lambda s: 2 * s[0] * s[1] * s[2], rtol=MATMUL_RTOL,
        input_scales=lambda s: [1.0 / math.sqrt(s[2]), 1.0] + ([] if epilogue == "none" else [1.0]),
        note="shape is MxNxK; flops 2*M*N*K" + (f"; {note}" if note else ""),
    )


# ------------------------------------------------------------------ the workloads

# Full shapes follow PERF.md's anchors; quick shapes keep the aspect and stay small.
_BIG_1D = (GiB // 2,)                  # 2^29 elements: 2 GiB f32, 1 GiB bf16
_QUICK_1D = (1 << 22,)
REDUCTION_SHAPES = [((32768, 4096), (1024, 4096)),
                    ((8192, 16384), (256, 16384)),
                    ((262144, 1024), (8192, 1024))]
# var_mean / layer_norm: the same full shapes (PERF.md's anchors), smaller quick ones.
NORM_SHAPES = [((32768, 4096), (256, 4096)),
               ((8192, 16384), (64, 16384)),
               ((262144, 1024), (2048, 1024))]
# matmul shapes are (M, N, K), as PERF.md writes them.
MATMUL_SHAPES = [((8192, 8192, 8192), (512, 512, 512)),
                 ((4096, 4096, 4096), (256, 256, 256)),
                 ((2048, 2048, 8192), (256, 256, 1024)),
                 ((16384, 16384, 1024), (512, 512, 128))]
# PERF.md's large-K shapes: few output tiles, a long K (fusion-split-k splits them); the quick
# shapes keep few tiles and a K long enough to split.
MATMUL_LARGE_K_SHAPES = [((1024, 1024, 32768), (128, 128, 8192)),
                         ((512, 512, 65536), (128, 128, 16384)),
                         ((256, 4096, 16384), (64, 1024, 4096)),
                         ((128, 128, 131072), (64, 64, 32768))]


def _register_defaults() -> None:
    register(copy_anchor(_BIG_1D, "f32", _QUICK_1D))
    for dt in ("f32", "bf16"):
        register(scale(_BIG_1D, dt, _QUICK_1D))
    for dt in ("f32", "bf16"):
        register(bias_gelu((8192, 16384), dt, (1024, 4096)))
    for family, dims in (("row_sum", [1]), ("col_sum", [0])):
        for dt in ("f32", "bf16"):
            for full, quick in REDUCTION_SHAPES:
                register(reduction_sum(family, dims, full, dt, quick))
    for dt in ("f32", "bf16"):
        register(reduction_sum("sum_all", [0], _BIG_1D, dt, _QUICK_1D))
    for dt in ("f32", "bf16"):
        for full, quick in NORM_SHAPES:
            register(var_mean(1, full, dt, quick))
        register(var_mean(0, (32768, 4096), dt, (1024, 4096)))
    for dt in ("f32", "bf16"):
        for full, quick in NORM_SHAPES:
            register(layer_norm(full, dt, quick))
    for dt in ("f32", "bf16"):
        register(rms_norm((32768, 4096), dt, (256, 4096)))
    for full, quick in MATMUL_SHAPES:
        register(matmul("none", full, quick))
    for full, quick in MATMUL_LARGE_K_SHAPES:
        register(matmul("none", full, quick, note="large K: split-K"))
    register(matmul("bias_relu", (8192, 8192, 8192), (512, 512, 512)))
    register(matmul("bias_gelu", (4096, 4096, 4096), (256, 256, 256)))


_register_defaults()


# ============================================================================ results


@dataclass
class PeerResult:
    ms: float | None = None
    rate: float | None = None       # GB/s or TFLOP/s
    error: str | None = None        # why there is no number ("n/a" in the table)
    rel_err: float | None = None    # against eager, for the fuser and compile peers

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class RowResult:
    workload: Workload
    shape: Shape
    # ok | FAIL (wrong result) | ERROR (fuser could not compile/run) | unsupported (the compiler
    # says it cannot handle this fusion yet: the peers are still timed) | anchor
    status: str = "ok"
    fuser: PeerResult = field(default_factory=PeerResult)
    eager: PeerResult = field(default_factory=PeerResult)
    compile: PeerResult = field(default_factory=PeerResult)
    pct_ceiling: float | None = None
    compile_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return self.workload.bytes_moved(self.shape, self.workload.dtype)

    @property
    def flops(self) -> int | None:
        return None if self.workload.flops is None else self.workload.flops(self.shape)

    def ratio(self, peer: PeerResult) -> float | None:
        if self.fuser.ms is None or peer.ms is None:
            return None
        return peer.ms / self.fuser.ms

    def as_json(self) -> dict[str, Any]:
        w = self.workload
        return {
            "name": w.name, "family": w.family, "shape": list(self.shape), "dtype": w.dtype,
            "unit": w.unit, "bytes": self.bytes, "flops": self.flops, "rtol": w.rtol,
            "status": self.status,
            "fuser": self.fuser.as_json(), "eager": self.eager.as_json(), "compile": self.compile.as_json(),
            "fuser_over_eager": self.ratio(self.eager), "fuser_over_compile": self.ratio(self.compile),
            "pct_ceiling": self.pct_ceiling, "compile_seconds": self.compile_seconds,
        }


def rate_of(w: Workload, shape: Shape, ms: float) -> float:
    """GB/s (1e9 bytes) or TFLOP/s for one run of `ms` milliseconds."""
    if w.flops is not None:
        return w.flops(shape) / (ms * 1e-3) / 1e12
    return w.bytes_moved(shape, w.dtype) / (ms * 1e-3) / 1e9


# Compile errors that mean "fuser cannot do this yet" rather than "fuser broke": such a row is
# reported as `unsupported` (its peers are still timed) instead of ERROR.
_UNSUPPORTED_RX = re.compile(r"not supported|unsupported|not implemented|NotImplementedError|unknown pass")
BAD_STATUSES = ("FAIL", "ERROR")


def is_unsupported(message: str) -> bool:
    return bool(_UNSUPPORTED_RX.search(message or ""))


def _short(e: BaseException, limit: int = 1000) -> str:
    text = f"{type(e).__name__}: {e}".strip().replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ============================================================================ GPU side


class BenchUnavailable(Exception):
    """No GPU run is possible here; the message says why."""


def gpu_problem() -> str | None:
    """None when the benchmark can run here, else a plain reason (no GPU, no torch, ...)."""
    try:
        from fuser.runtime import driver
    except Exception as e:  # cuda-python missing or broken
        return f"the fuser CUDA runtime could not be imported ({_short(e)})"
    try:
        if hasattr(driver, "require_gpu"):
            driver.require_gpu()
        elif not driver.gpu_available():
            return "no NVIDIA GPU/driver found"
    except Exception as e:
        return str(e) or type(e).__name__
    try:
        import torch
    except Exception as e:
        return f"torch is not importable ({_short(e)}); install a CUDA build of torch to compare with it"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device (torch.cuda.is_available() is False)"
    return None


class Bench:
    """Runs workloads on the GPU: inputs, correctness, timing, peers."""

    def __init__(self, quick: bool = False, peers: Sequence[str] = ("eager", "compile"),
                 reps: int = 100, peak_tflops: float = DEFAULT_PEAK_TFLOPS, log: Callable[[str], None] | None = None):
        import torch

        self.torch = torch
        self.quick = quick
        self.peers = tuple(peers)
        self.reps = reps
        self.peak_tflops = peak_tflops
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.copy_gbps: float | None = None
        try:
            from triton.testing import do_bench
            self._do_bench = do_bench
            self.timer = "triton.testing.do_bench(warmup=25, rep=100, return_mode='median')"
        except Exception:
            self._do_bench = None
            self.timer = f"CUDA events, 10 warm-up calls, median of {max(50, reps)}"

    # ------------------------------------------------------------------ pieces

    def make_inputs(self, w: Workload, shape: Shape, seed: int) -> list[Any]:
        torch = self.torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        out = []
        for (s, d), k in zip(w.inputs(shape, w.dtype), w.scales_for(shape)):
            x = torch.randn(s, device="cuda", dtype=torch.float32, generator=g)
            if k != 1.0:
                x.mul_(k)
            out.append(x if d == "f32" else x.to({"bf16": torch.bfloat16, "f16": torch.float16}[d]))
        return out

    def input_sets(self, w: Workload, shape: Shape) -> list[list[Any]]:
        """One set, or enough to exceed ~200 MB when one set fits in L2."""
        per_set = sum(nbytes(s, d) for s, d in w.inputs(shape, w.dtype))
        n = 1 if per_set >= L2_BYTES else max(2, math.ceil(ROTATE_TARGET_BYTES / max(per_set, 1)))
        return [self.make_inputs(w, shape, seed=1234 + i) for i in range(n)]

    def time_ms(self, fn: Callable[..., Any], arg_sets: list[list[Any]]) -> float:
        """Median milliseconds of `fn(*args)`, cycling through `arg_sets`."""
        torch = self.torch
        cycle = itertools.cycle(arg_sets)

        def call() -> Any:
            return fn(*next(cycle))

        if self._do_bench is not None:
            return float(self._do_bench(call, warmup=25, rep=self.reps, return_mode="median"))
        for _ in range(10):
            call()
        torch.cuda.synchronize()
        n = max(50, self.reps)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        for s, e in zip(starts, ends):
            s.record()
            call()
            e.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))

    def rel_err(self, got: Any, ref: Any) -> float:
        """Largest relative-norm error over the outputs, computed in float64."""
        torch = self.torch
        gots = list(got) if isinstance(got, (tuple, list)) else [got]
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        if len(gots) != len(refs):
            raise ValueError(f"{len(gots)} outputs, torch gives {len(refs)}")
        worst = 0.0
        for i, (g, r) in enumerate(zip(gots, refs)):
            if not isinstance(g, torch.Tensor):
                g = torch.as_tensor(g)
            g = g.to(device=r.device)
            if tuple(g.shape) != tuple(r.shape):
                raise ValueError(f"output #{i} has shape {tuple(g.shape)}, torch gives {tuple(r.shape)}")
            if g.dtype != r.dtype:
                raise ValueError(f"output #{i} has dtype {g.dtype}, torch gives {r.dtype}")
            diff = (g.double() - r.double()).norm().item()
            scale = r.double().norm().item()
            err = diff / scale if scale > 0 else diff
            if not math.isfinite(err):
                return math.inf
            worst = max(worst, err)
        return worst

    # ------------------------------------------------------------------ one row

    def run(self, w: Workload) -> RowResult:
        torch = self.torch
        shape = w.shape_for(self.quick)
        row = RowResult(w, shape)
        sets: list[list[Any]] = []
        try:
            sets = self.input_sets(w, shape)
            with torch.no_grad():
                ref = w.torch_fn(*sets[0])
                torch.cuda.synchronize()
                timed = [(row.eager, w.torch_fn)]
                if w.mlir is None:
                    row.status = "anchor"
                else:
                    kernel = self._fuser(w, row, sets, ref)
                    if kernel is not None:
                        timed.insert(0, (row.fuser, kernel))
                if "compile" in self.peers and w.compile_peer:
                    compiled = self._compile_peer(w, row, sets, ref)
                    if compiled is not None:
                        timed.append((row.compile, compiled))
                elif w.compile_peer:
                    row.compile.error = "skipped (--no-compile)"
                else:
                    row.compile.error = "not a peer for this workload"
                self._time_peers(w, timed, sets, shape)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # inputs or the eager reference failed (out of memory, ...)
            if row.status not in BAD_STATUSES:
                row.status = "ERROR"
            row.fuser.error = row.fuser.error or "setup: " + _short(e)
        finally:
            del sets
            try:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            except Exception as e:  # a sticky fault (the caller sees it too): keep this row's story
                row.status = "ERROR"
                row.fuser.error = row.fuser.error or "CUDA: " + _short(e)
        self._ceiling(row)
        return row

    def _fuser(self, w: Workload, row: RowResult, sets: list[list[Any]], ref: Any) -> Callable[..., Any] | None:
        """The compiled fusion once its result has been checked (None: the row says why not)."""
        import fuser.api as api

        t0 = time.perf_counter()
        try:
            kernel = api.compile(w.mlir_text(self.quick))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # xDSL's ParseError and friends are not all Exceptions
            msg = _short(e)
            row.status = "unsupported" if is_unsupported(msg) else "ERROR"
            row.fuser.error = "compile: " + msg
            return None
        row.compile_seconds["fuser"] = time.perf_counter() - t0
        try:
            got = kernel(*sets[0])
            self.torch.cuda.synchronize()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            row.status, row.fuser.error = "ERROR", "run: " + _short(e)
            return None
        try:
            err = self.rel_err(got, ref)
        except ValueError as e:  # wrong shape, dtype or number of outputs
            row.status, row.fuser.error = "FAIL", str(e)
            return None
        del got  # free the output before timing
        row.fuser.rel_err = err
        if not err <= w.rtol:
            row.status, row.fuser.error = "FAIL", f"relative error {err:.3g} > {w.rtol:g}"
            return None
        return kernel

    def _compile_peer(self, w: Workload, row: RowResult, sets: list[list[Any]], ref: Any) -> Callable[..., Any] | None:
        """torch.compile's function once its result has been computed (None: the row says why not)."""
        torch = self.torch
        try:
            torch._dynamo.reset()  # no recompiles or automatic-dynamic shapes carried over from other rows
            compiled = torch.compile(w.torch_fn)
            t0 = time.perf_counter()
            got = compiled(*sets[0])
            torch.cuda.synchronize()
            row.compile_seconds["torch.compile"] = time.perf_counter() - t0
            row.compile.rel_err = self.rel_err(got, ref)
            del got
        except Exception as e:
            row.compile.error = _short(e)
            return None
        return compiled

    def _time_peers(self, w: Workload, timed: list[tuple[PeerResult, Callable[..., Any]]], sets: list[list[Any]],
                    shape: Shape) -> None:
        """Time each (result, function). Tensor-core rows run two rounds, the second in the
        opposite order, and keep each peer's faster median: the SM clock drops under sustained
        tensor-core load, so whichever peer ran first would otherwise get the boost clock."""
        rounds = 2 if w.unit == "TFLOP/s" else 1
        for r in range(rounds):
            for res, fn in (timed if r % 2 == 0 else timed[::-1]):
                if res.error:
                    continue
                try:
                    ms = self.time_ms(fn, sets)
                except Exception as e:
                    res.ms, res.rate, res.error = None, None, "timing: " + _short(e)
                    continue
                res.ms = ms if res.ms is None else min(res.ms, ms)
                res.rate = rate_of(w, shape, res.ms)

    def _ceiling(self, row: RowResult) -> None:
        w = row.workload
        if row.fuser.rate is None and row.status == "anchor":
            rate = row.eager.rate
        else:
            rate = row.fuser.rate
        if rate is None:
            return
        if w.unit == "TFLOP/s":
            row.pct_ceiling = 100.0 * rate / self.peak_tflops
        elif self.copy_gbps:
            row.pct_ceiling = 100.0 * rate / self.copy_gbps


# ============================================================================ output


COLUMNS = ["workload", "shape", "dtype", "unit", "fuser", "eager", "compile",
           "fuser/eager", "fuser/compile", "% ceil"]


def _num(v: float | None, unit: str) -> str:
    if v is None:
        return "n/a"
    return f"{v:.1f}" if unit == "TFLOP/s" else f"{v:.0f}"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def table_rows(rows: Sequence[RowResult]) -> list[list[str]]:
    out = []
    for r in rows:
        w = r.workload
        if r.status in BAD_STATUSES or r.status == "unsupported":
            fuser = r.status
        elif r.status == "anchor":
            fuser = "-"
        else:
            fuser = _num(r.fuser.rate, w.unit)
        compile_cell = _num(r.compile.rate, w.unit) if w.compile_peer else "-"
        out.append([w.name, fmt_shape(r.shape), w.dtype, w.unit, fuser,
                    _num(r.eager.rate, w.unit), compile_cell,
                    _ratio(r.ratio(r.eager)), _ratio(r.ratio(r.compile)),
                    "-" if r.pct_ceiling is None else f"{r.pct_ceiling:.0f}%"])
    return out


def format_table(rows: Sequence[RowResult], markdown: bool = False) -> str:
    cells = table_rows(rows)
    if markdown:
        lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(" --- " for _ in COLUMNS) + "|"]
        lines += ["| " + " | ".join(c) + " |" for c in cells]
        return "\n".join(lines)
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(COLUMNS)]
    left = {0, 1, 2, 3}

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(wd) if i in left else v.rjust(wd) for i, (v, wd) in enumerate(zip(values, widths))).rstrip()

    return "\n".join([line(COLUMNS), line(["-" * wd for wd in widths])] + [line(c) for c in cells])


def _clip(text: str | None, limit: int = 200) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def notes(rows: Sequence[RowResult]) -> list[str]:
    """One line per FAIL/ERROR and per unavailable peer, for the text before the table."""
    out = []
    for r in rows:
        if r.status in BAD_STATUSES or r.status == "unsupported":
            out.append(f"{r.workload.name}: fuser {r.status}: {_clip(r.fuser.error)}")
        for peer_name, peer in (("eager", r.eager), ("torch.compile", r.compile)):
            if peer.error and not peer.error.startswith(("skipped", "not a peer")):
                out.append(f"{r.workload.name}: {peer_name} n/a: {_clip(peer.error)}")
        if r.compile.rel_err is not None and r.compile.rel_err > r.workload.rtol:
            out.append(f"{r.workload.name}: torch.compile differs from eager by {r.compile.rel_err:.3g} "
                       f"(> {r.workload.rtol:g}); timed anyway")
    return out


def environment(torch: Any = None, timer: str = "") -> dict[str, Any]:
    env: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(), "host": platform.node(), "timer": timer,
    }
    versions: dict[str, str | None] = {}
    for mod in ("fuser", "torch", "triton", "xdsl", "llvmlite", "cuda-python", "cuda-bindings", "numpy"):
        try:
            from importlib.metadata import version
            versions[mod] = version(mod)
        except Exception:
            versions[mod] = None
    if versions["fuser"] is None:  # run from a checkout that is not pip-installed
        try:
            import fuser
            versions["fuser"] = getattr(fuser, "__version__", None)
        except Exception:
            pass
    env["versions"] = versions
    try:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["fuser_git"] = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True,
                                          text=True, timeout=5).stdout.strip() or None
    except Exception:
        env["fuser_git"] = None
    if torch is not None:
        props = torch.cuda.get_device_properties(0)
        env["device"] = {"name": torch.cuda.get_device_name(0), "sms": props.multi_processor_count,
                         "memory_gib": round(props.total_memory / GiB, 1),
                         "capability": f"{props.major}.{props.minor}", "torch_cuda": torch.version.cuda}
    return env


def write_json(path: str, rows: Sequence[RowResult], env: dict[str, Any], args: dict[str, Any],
               copy_gbps: float | None) -> None:
    doc = {"env": env, "args": args, "copy_gbps": copy_gbps, "rows": [r.as_json() for r in rows]}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def draw_png(path: str, rows: Sequence[RowResult], title: str, copy_gbps: float | None) -> str | None:
    """Grouped bars (fuser, eager, torch.compile) per workload, one panel per unit.

    Returns None on success, else why no chart was drawn.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        return f"matplotlib is not importable ({_short(e)}); pip install matplotlib to get --png"
    units = [u for u in ("GB/s", "TFLOP/s") if any(r.workload.unit == u for r in rows)]
    if not units:
        return "no rows to draw"
    fig, axes = plt.subplots(len(units), 1, squeeze=False,
                             figsize=(max(8.0, 0.75 * len(rows) + 2), 4.8 * len(units)))
    series = [("fuser", "fuser", "#2a7ab9"), ("eager", "torch eager", "#999999"), ("compile", "torch.compile", "#e0892b")]
    width = 0.27
    for ax, unit in zip(axes[:, 0], units):
        sel = [r for r in rows if r.workload.unit == unit]
        xs = range(len(sel))
        for k, (attr, label, color) in enumerate(series):
            vals = [getattr(r, attr).rate or 0.0 for r in sel]
            ax.bar([x + (k - 1) * width for x in xs], vals, width, label=label, color=color)
        for x, r in zip(xs, sel):
            if r.status in BAD_STATUSES or r.status == "unsupported":
                ax.text(x - width, 0, r.status, rotation=90, ha="center", va="bottom", fontsize=7, color="red")
        if unit == "GB/s" and copy_gbps:
            ax.axhline(copy_gbps, color="black", linestyle="--", linewidth=0.8, label=f"copy {copy_gbps:.0f} GB/s")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r.workload.name if r.workload.name.endswith(fmt_shape(r.shape))
                            else f"{r.workload.name}\n{fmt_shape(r.shape)}" for r in sel], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel(unit)
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].set_title(title, fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


# ============================================================================ CLI


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fuser-bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--filter", metavar="REGEX", help="run workloads whose name or family matches REGEX")
    p.add_argument("--quick", action="store_true", help="small shapes, for a smoke run")
    p.add_argument("--list", action="store_true", help="list the workloads and exit (no GPU needed)")
    p.add_argument("--show-mlir", action="store_true", help="print each selected workload's fusion IR and exit")
    p.add_argument("--json", metavar="PATH", help="write every number, the device and versions as JSON")
    p.add_argument("--png", metavar="PATH", help="draw a grouped bar chart (needs matplotlib)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer (it compiles for minutes)")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")
    p.add_argument("--rep-ms", type=int, default=100, help="do_bench rep budget in ms (default 100)")
    p.add_argument("--peak-tflops", type=float, default=DEFAULT_PEAK_TFLOPS,
                   help="ceiling for TFLOP/s rows (default: Hopper bf16 dense, 989)")
    return p.parse_args(argv)


def list_workloads(ws: Sequence[Workload]) -> str:
    head = ["workload", "family", "dtype", "shape", "quick shape", "MB moved", "fuser"]
    cells = [[w.name, w.family, w.dtype, fmt_shape(w.shape), fmt_shape(w.quick_shape),
              f"{w.bytes_moved(w.shape, w.dtype) / 1e6:.0f}", "yes" if w.mlir else "anchor"] for w in ws]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(head)]
    return "\n".join("  ".join(v.ljust(wd) for v, wd in zip(r, widths)).rstrip() for r in [head] + cells)


def cuda_context_problem(torch: Any) -> str | None:
    """None while the CUDA context still works; else why not (a kernel fault is sticky)."""
    try:
        torch.cuda.synchronize()
        return None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:
        return _short(e, 300)


def run_all(bench: Any, todo: Sequence[Workload], anchor: Workload | None = None) -> list[RowResult]:
    """Run every workload, never aborting: an unexpected harness error becomes that row's ERROR,
    and once the CUDA context is lost (a kernel fault is sticky) the remaining rows are reported
    as not run, with the row that lost it, instead of all failing the same way."""
    rows: list[RowResult] = []
    lost: str | None = None
    quick = getattr(bench, "quick", False)
    for i, w in enumerate(todo, 1):
        shape = w.shape_for(quick)
        if lost is not None:
            rows.append(RowResult(w, shape, status="ERROR", fuser=PeerResult(error=f"not run: {lost}")))
            continue
        bench.log(f"[{i}/{len(todo)}] {w.name} {fmt_shape(shape)} ...")
        t0 = time.perf_counter()
        try:
            row = bench.run(w)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            row = RowResult(w, shape, status="ERROR", fuser=PeerResult(error="harness: " + _short(e)))
        if w is anchor:
            bench.copy_gbps = row.eager.rate
            bench._ceiling(row)
        rows.append(row)
        bench.log(f"      {row.status}, {time.perf_counter() - t0:.1f} s")
        problem = cuda_context_problem(bench.torch)
        if problem is not None:
            lost = (f"the CUDA context was lost during {w.name} ({problem}); "
                    f"rerun the rest with --filter")
            bench.log(f"      {lost}")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        selected = select(args.filter)
    except re.error as e:
        print(f"fuser-bench: bad --filter regex: {e}", file=sys.stderr)
        return 2
    if args.list:
        print(list_workloads(selected))
        return 0
    if args.show_mlir:
        for w in selected:
            text = w.mlir_text(args.quick)
            print(f"// {w.name} ({fmt_shape(w.shape_for(args.quick))}, {w.dtype})")
            print(text if text is not None else "// torch-only anchor: no fusion\n")
        return 0
    if not selected:
        print(f"fuser-bench: no workload matches --filter {args.filter!r} (see --list)", file=sys.stderr)
        return 2

    problem = gpu_problem()
    if problem is not None:
        print(NO_GPU_PREFIX + problem, file=sys.stderr)
        return 2

    peers = ("eager",) if args.no_compile else ("eager", "compile")
    bench = Bench(quick=args.quick, peers=peers, reps=args.rep_ms, peak_tflops=args.peak_tflops)
    torch = bench.torch

    # The copy anchor runs first, always: every GB/s row is reported as a fraction of it.
    anchor = next(w for w in WORKLOADS if w.family == "copy")
    todo = [anchor] + [w for w in selected if w is not anchor]
    rows = run_all(bench, todo, anchor)

    env = environment(torch, bench.timer)
    run_args = {"quick": args.quick, "filter": args.filter, "peers": list(peers), "rep_ms": args.rep_ms,
                "peak_tflops": args.peak_tflops, "l2_rotate_below_bytes": L2_BYTES,
                "torch.compile": "torch.compile(fn) default mode, torch._dynamo.reset() per workload"}
    if args.json:
        write_json(args.json, rows, env, run_args, bench.copy_gbps)
        bench.log(f"wrote {args.json}")
    if args.png:
        title = f"fuser vs torch on {env['device']['name']} ({env['date'][:10]}{', quick' if args.quick else ''})"
        why_not = draw_png(args.png, rows, title, bench.copy_gbps)
        bench.log(f"wrote {args.png}" if why_not is None else f"no chart: {why_not}")

    dev = env["device"]
    copy = f"{bench.copy_gbps:.0f} GB/s" if bench.copy_gbps else "n/a"
    print(f"# {dev['name']} ({dev['sms']} SMs), torch {env['versions']['torch']}, "
          f"triton {env['versions']['triton']}, {env['date']}")
    print(f"# timer: {bench.timer}; copy anchor {copy}; ratios = peer time / fuser time (> 1: fuser faster); "
          f"% ceil = fuser over copy bandwidth (GB/s) or {args.peak_tflops:g} TFLOP/s")
    for line in notes(rows):
        print(f"# {line}")
    print(format_table(rows, markdown=args.markdown))
    sys.stdout.flush()
    return 1 if any(r.status in BAD_STATUSES for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
