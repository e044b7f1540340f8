"""The fuser-bench registry: one small `Workload` record per row, built by one function per family.

Each fusion is written with the Python builder API (`fuser.FusionBuilder` and the op functions
of `fuser.api`), next to the torch function it must agree with (the eager peer, also handed to
torch.compile) and the bytes / FLOPs one run moves. A new capability adds a family function and
registers its shapes in `_register_defaults`.

Nothing here imports torch at module level: the torch references import it when called, so
`--list`, `--show-mlir` and the tests run on a machine without torch.

SSA names in the built IR are set by hand (`_named`) so that `--show-mlir` reads like the IR a
person would write (`%x`, `%s`, `%o`, ...) rather than `%0`, `%1`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from fuser import api as fapi
from fuser.api import FusionBuilder, Tensor

Shape = tuple[int, ...]

GiB = 1 << 30
ELEM_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "i64": 8, "i1": 1}
NORM_RTOL = {"f32": 1e-4, "bf16": 1e-2, "f16": 1e-2}
MATMUL_RTOL = 2e-2   # norm-wise, against cuBLAS's bf16 output: a few bf16 ulps of the output scale
LN_EPS = 1e-5
MATMUL_EPILOGUES = ("none", "bias_relu", "bias_gelu")


# ============================================================================ registry


@dataclass(frozen=True)
class Workload:
    """One benchmark row: a fusion, the torch function it must agree with, and what it moves.

    `inputs(shape, dtype)` gives the (shape, dtype) of each positional input; the harness fills
    them with torch.randn. `build(shape, dtype)` returns a finished `fuser.FusionBuilder` holding
    the fusion, or is None for a torch-only anchor. `torch_fn(*inputs)` is the eager reference,
    also handed to torch.compile.
    """

    name: str
    family: str
    shape: Shape
    dtype: str
    quick_shape: Shape
    inputs: Callable[[Shape, str], list[tuple[Shape, str]]]
    torch_fn: Callable[..., Any]
    bytes_moved: Callable[[Shape, str], int]
    build: Callable[[Shape, str], FusionBuilder] | None = None
    flops: Callable[[Shape], int] | None = None
    rtol: float = 1e-5
    compile_peer: bool = True      # False: torch.compile is not a meaningful peer (the copy anchor)
    note: str = ""
    # Multipliers for the torch.randn inputs (one per input; None: all 1.0), e.g. 1/sqrt(K) for a
    # matmul operand so that outputs stay O(1).
    input_scales: Callable[[Shape], list[float]] | None = None
    # Options for this row's fusion-split-k ("strategy=serial"), added to the run's pipeline:
    # the large-K rows compare the split-K strategies side by side.
    split_k: str = ""
    # check(fuser's outputs, inputs) -> relative error, for rows whose outputs torch cannot
    # reproduce (random numbers: torch's own dropout mask differs); None: against torch_fn's.
    check: Callable[[Any, list[Any]], float] | None = None
    # Exclusive upper bounds of the integer inputs (one per input; None: the default draw), for
    # index inputs such as labels: drawn in [0, bound).
    int_bounds: Callable[[Shape], list[int | None]] | None = None
    # A hand-written library's version of the same computation, where one is installed: (its name,
    # a factory taking torch and returning the function; an ImportError says it is missing).
    library: tuple[str, Callable[[Any], Callable[..., Any]]] | None = None

    def scales_for(self, shape: Shape) -> list[float]:
        n = len(self.inputs(shape, self.dtype))
        scales = [1.0] * n if self.input_scales is None else list(self.input_scales(shape))
        if len(scales) != n:
            raise ValueError(f"{self.name}: {len(scales)} input scales for {n} inputs")
        return scales

    def shape_for(self, quick: bool) -> Shape:
        return self.quick_shape if quick else self.shape

    @property
    def has_fusion(self) -> bool:
        return self.build is not None

    def fusion(self, quick: bool = False) -> FusionBuilder | None:
        """A freshly built fusion at the full (or quick) shape; None for a torch-only anchor."""
        return None if self.build is None else self.build(self.shape_for(quick), self.dtype)

    def mlir(self, shape: Shape, dtype: str) -> str | None:
        """The fusion-dialect text of the fusion at `shape` / `dtype` (None for an anchor)."""
        return None if self.build is None else self.build(shape, dtype).mlir()

    def mlir_text(self, quick: bool = False) -> str | None:
        return self.mlir(self.shape_for(quick), self.dtype)

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


# ---------------------------------------------------------------------- helpers


def ttype(shape: Shape, dtype: str) -> str:
    """`tensor<AxBxf32>`; a 0-d shape gives `tensor<f32>`."""
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def nbytes(shape: Shape, dtype: str) -> int:
    return math.prod(shape) * ELEM_BYTES[dtype]


def fmt_shape(shape: Shape) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _reduced(shape: Shape, dims: list[int]) -> Shape:
    return tuple(e for i, e in enumerate(shape) if i not in dims)


def _torch_fn(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    return fn


def _named(t: Tensor, name: str) -> Tensor:
    """`t` with SSA name `%name` in the printed IR."""
    t.value.name_hint = name
    return t


def _to_f32(t: Tensor, name: str) -> Tensor:
    """`t` as f32: itself for f32, else a `fusion.cast` of it named `%name`."""
    return t if t.dtype == "f32" else _named(fapi.cast(t, "f32"), name)


def _round_out(t: Tensor, dtype: str) -> Tensor:
    """The f32 result `t` rounded once to `dtype` (a `fusion.cast` named %o; itself for f32),
    like Inductor: the fusion computes in f32 and rounds its output once."""
    return t if dtype == "f32" else _named(fapi.cast(t, dtype), "o")


def _finish(fb: FusionBuilder, *outs: Tensor) -> FusionBuilder:
    fb.output(*outs)
    fb.finish()
    return fb


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
    def build(s: Shape, d: str) -> FusionBuilder:
        fb = FusionBuilder(f"scale_{d}")
        x = fb.input(s, d, name="x")
        c = _named(fb.full(2.0, s, d), "c")
        return _finish(fb, _named(x * c, "y"))

    return Workload(
        name=f"scale_{dtype}", family="pointwise", shape=shape, dtype=dtype, quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d)],
        torch_fn=_torch_fn("scale", lambda x: x * 2),
        bytes_moved=lambda s, d: 2 * nbytes(s, d),
        build=build, rtol=1e-5 if dtype == "f32" else 1e-2,
    )


def bias_gelu(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """gelu_tanh(x * y + b) with b broadcast along rows; bf16 computes in f32 and rounds once."""
    def build(s: Shape, d: str) -> FusionBuilder:
        c = s[1]
        fb = FusionBuilder(f"bias_gelu_{d}")
        x = fb.input(s, d, name="x")
        y = fb.input(s, d, name="y")
        b = fb.input((c,), d, name="b")
        # explicit casts: compute in f32 like Inductor, round the result once
        x, y, b = _to_f32(x, "xf"), _to_f32(y, "yf"), _to_f32(b, "bf")
        xy = _named(x * y, "xy")
        bb = _named(fapi.broadcast(b, s, [0]), "bb")
        g = _named(fapi.gelu(_named(xy + bb, "s"), approximate="tanh"), "g")
        return _finish(fb, _round_out(g, d))

    def ref(x, y, b):
        import torch.nn.functional as F
        return F.gelu(x * y + b, approximate="tanh")

    return Workload(
        name=f"bias_gelu_{dtype}", family="pointwise", shape=shape, dtype=dtype, quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d), (s, d), ((s[1],), d)],
        torch_fn=_torch_fn("bias_gelu", ref),
        bytes_moved=lambda s, d: 3 * nbytes(s, d) + nbytes((s[1],), d),
        build=build, rtol=1e-5 if dtype == "f32" else 1e-2,
    )


def reduction_sum(family: str, dims: list[int], shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """row_sum (dims [1]), col_sum (dims [0]), sum_all (dims [0] of a 1-D tensor) or mid_sum
    (dims [1] of a 3-D tensor: neither leading nor trailing).

    `fusion.reduce sum` over `dims`, accumulated in f32; a bf16 input gets a bf16 result (cast).
    """
    refs = {
        "row_sum": lambda x: x.sum(dim=1),
        "col_sum": lambda x: x.sum(dim=0),
        "sum_all": lambda x: x.sum(),
        "mid_sum": lambda x: x.sum(dim=1),   # the middle dim of a 3-D tensor
    }

    def build(s: Shape, d: str) -> FusionBuilder:
        fb = FusionBuilder(f"{family}_{d}")
        x = fb.input(s, d, name="x")
        total = _named(fapi.sum(x, dims, dtype="f32"), "s")
        return _finish(fb, _round_out(total, d))

    suffix = "" if family == "sum_all" else "_" + fmt_shape(shape)
    return Workload(
        name=f"{family}_{dtype}{suffix}", family=family, shape=shape, dtype=dtype, quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d)],
        torch_fn=_torch_fn(family, refs[family]),
        bytes_moved=lambda s, d: nbytes(s, d) + nbytes(_reduced(s, dims), d),
        build=build, rtol=1e-4 if dtype == "f32" else 1e-2,
    )


def row_and_column_sums(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """Row and column sums of one matrix (torch: `x.sum(1), x.sum(0)`): fusion-segment's joint
    reduction, which reads x once where a kernel per sum reads it twice. GB/s counts x once."""
    def build(s: Shape, d: str) -> FusionBuilder:
        fb = FusionBuilder(f"row_and_column_sums_{d}")
        x = fb.input(s, d, name="x")
        rows = _named(fapi.sum(x, [1], dtype="f32"), "r")
        cols = _named(fapi.sum(x, [0], dtype="f32"), "c")
        return _finish(fb, *(t if d == "f32" else fapi.cast(t, d) for t in (rows, cols)))

    return Workload(
        name=f"row_and_column_sums_{dtype}_{fmt_shape(shape)}", family="row_and_column_sums", shape=shape, dtype=dtype,
        quick_shape=quick_shape, inputs=lambda s, d: [(s, d)],
        torch_fn=_torch_fn("row_and_column_sums", lambda x: (x.sum(dim=1), x.sum(dim=0))),
        bytes_moved=lambda s, d: nbytes(s, d) + nbytes((s[0],), d) + nbytes((s[1],), d),
        build=build, rtol=1e-4 if dtype == "f32" else 1e-2,
    )


def transpose(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """y = x^T, materialized (torch: `x.t().contiguous()`): the transpose scheduler's row."""
    def build(s: Shape, d: str) -> FusionBuilder:
        fb = FusionBuilder(f"transpose_{d}")
        x = fb.input(s, d, name="x")
        return _finish(fb, _named(fapi.permute(x, [1, 0]), "y"))

    return Workload(
        name=f"transpose_{dtype}", family="transpose", shape=shape, dtype=dtype, quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d)],
        torch_fn=_torch_fn("transpose", lambda x: x.t().contiguous()),
        bytes_moved=lambda s, d: 2 * nbytes(s, d),
        build=build, rtol=1e-5 if dtype == "f32" else 1e-2,
    )


def var_mean(dim: int, shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """(var, mean) over one axis of a 2-D tensor, correction=1, both f32 (accumulated in f32).

    family `var_mean` reduces the last axis (dims [1]) on PERF.md's three shapes; family
    `var_mean_dim0` reduces the first axis (dims [0]) at 32768x4096, the same shape as the
    col_sum row, so the two can be compared (PERF.md has no torch anchor for it). Bytes moved:
    the input read plus the two small f32 outputs. Peer: torch.var_mean(x, dim, correction=1),
    outputs cast to f32 (a no-op for f32 inputs).
    """
    family = "var_mean" if dim == 1 else "var_mean_dim0"

    def build(s: Shape, d: str) -> FusionBuilder:
        fb = FusionBuilder(f"{family}_{d}")
        x = fb.input(s, d, name="x")
        v, m = fapi.var_mean(x, [dim], correction=1)
        return _finish(fb, _named(v, "v"), _named(m, "m"))

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
        build=build, rtol=NORM_RTOL[dtype],
        note="read bytes (+ the f32 outputs)",
    )


def layer_norm(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """y = (x - mean) * rsqrt(var + eps) * w + b over the last axis (var: correction 0, eps 1e-5).

    Inputs x[R,C], w[C], b[C] in one dtype; statistics and arithmetic in f32, y rounded once to
    the input dtype. Bytes: x read + y written (+ w and b). Peer: F.layer_norm(x, (C,), w, b).
    """
    def build(s: Shape, d: str) -> FusionBuilder:
        r, c = s
        fb = FusionBuilder(f"layer_norm_{d}")
        x = fb.input(s, d, name="x")
        w = fb.input((c,), d, name="w")
        b = fb.input((c,), d, name="b")
        v, m = fapi.var_mean(x, [1], correction=0)
        v, m = _named(v, "v"), _named(m, "m")
        x, w, b = _to_f32(x, "x_f"), _to_f32(w, "w_f"), _to_f32(b, "b_f")
        eps = _named(fb.full(LN_EPS, (r,), "f32"), "eps")
        rstd = _named(fapi.rsqrt(_named(v + eps, "ve")), "rstd")
        mb = _named(fapi.broadcast(m, s, [1]), "mb")
        rb = _named(fapi.broadcast(rstd, s, [1]), "rb")
        xn = _named(_named(x - mb, "xc") * rb, "xn")
        wb = _named(fapi.broadcast(w, s, [0]), "wb")
        bb = _named(fapi.broadcast(b, s, [0]), "bb")
        y = _named(_named(xn * wb, "xw") + bb, "y")
        return _finish(fb, _round_out(y, d))

    def ref(x, w, b):
        import torch.nn.functional as F
        return F.layer_norm(x, (x.shape[-1],), w, b, eps=LN_EPS)

    return Workload(
        name=f"layer_norm_{dtype}_{fmt_shape(shape)}", family="layer_norm", shape=shape, dtype=dtype,
        quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d), ((s[1],), d), ((s[1],), d)],
        torch_fn=_torch_fn("layer_norm", ref),
        bytes_moved=lambda s, d: 2 * nbytes(s, d) + 2 * nbytes((s[1],), d),
        build=build, rtol=NORM_RTOL[dtype],
        note="bytes read + written",
    )


def rms_norm(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """y = x * rsqrt(mean(x^2, last axis) + eps) * w, eps 1e-5, in f32, y rounded to the input dtype.

    Peer: F.rms_norm when torch has it, else the same formula computed in f32 and cast back.
    Bytes: x read + y written (+ w).
    """
    def build(s: Shape, d: str) -> FusionBuilder:
        r, c = s
        fb = FusionBuilder(f"rms_norm_{d}")
        x = fb.input(s, d, name="x")
        w = fb.input((c,), d, name="w")
        x, w = _to_f32(x, "x_f"), _to_f32(w, "w_f")
        ss = _named(fapi.sum(_named(x * x, "sq"), [1]), "ss")
        n = _named(fb.full(c, (r,), "f32"), "n")
        ms = _named(ss / n, "ms")
        eps = _named(fb.full(LN_EPS, (r,), "f32"), "eps")
        rr = _named(fapi.rsqrt(_named(ms + eps, "mse")), "rr")
        rb = _named(fapi.broadcast(rr, s, [1]), "rb")
        xn = _named(x * rb, "xn")
        wb = _named(fapi.broadcast(w, s, [0]), "wb")
        return _finish(fb, _round_out(_named(xn * wb, "y"), d))

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
        build=build, rtol=NORM_RTOL[dtype],
        note="bytes read + written",
    )


def log_softmax(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """A language model's loss input: log_softmax over the vocabulary of logits x[B,T,V] read
    as B*T rows (a reshape), in f32, y[B*T,V] f32, as torch.compile hands fuser GPT-2's
    cross-entropy (V = 50257: odd, so no 16-byte vectors). Bytes: x read + y written.
    Peer: torch.log_softmax(x.float().view(-1, V), -1).
    """
    def build(s: Shape, d: str) -> FusionBuilder:
        b, t, v = s
        fb = FusionBuilder(f"log_softmax_{d}")
        x = fb.input(s, d, name="x")
        rows = _named(fapi.reshape(_to_f32(x, "x_f"), (b * t, v)), "rows")
        m = _named(fapi.reshape(fapi.amax(rows, [1], keepdim=True), (b * t,)), "m")
        z = _named(rows - fapi.broadcast(m, (b * t, v), [1]), "z")
        lse = fapi.log(fapi.sum(fapi.exp(z), [1], keepdim=True))
        lse = _named(fapi.reshape(lse, (b * t,)), "lse")
        return _finish(fb, _named(z - fapi.broadcast(lse, (b * t, v), [1]), "y"))

    def ref(x):
        import torch
        return torch.log_softmax(x.float().reshape(-1, x.shape[-1]), -1)

    return Workload(
        name=f"log_softmax_{dtype}_{fmt_shape(shape)}", family="log_softmax", shape=shape, dtype=dtype,
        quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d)],
        torch_fn=_torch_fn("log_softmax", ref),
        bytes_moved=lambda s, d: nbytes(s, d) + nbytes(s, "f32"),
        build=build, rtol=NORM_RTOL["f32"],
        note="bytes read + written; rows read through a reshape",
    )


def cross_entropy_fwd_bwd(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """A language model's loss and its gradient in one step: mean cross-entropy of logits x[N,V]
    against labels y[N] and dloss/dx (softmax(x) - onehot(y)) / N in x's dtype, what a training
    step needs of the loss (issue 32). One persistent row kernel keeps each row on chip: its
    max, sum of exponentials, the logit at the label, and the gradient row, then the mean.
    Bytes: x read once + the gradient written once (the floor). Peers: F.cross_entropy and
    autograd.grad (eager, torch.compile) and Liger-Kernel's fused cross-entropy where installed
    (it writes the gradient during the forward, into the logits' storage).
    """
    def build(s: Shape, d: str) -> FusionBuilder:
        n, v = s
        fb = FusionBuilder(f"cross_entropy_fwd_bwd_{d}")
        x = fb.input(s, d, name="x")
        y = fb.input((n,), "i64", name="y")
        xf = _to_f32(x, "xf")
        m = _named(fapi.amax(xf, [1], keepdim=True), "m")
        z = _named(xf - m, "z")
        e = _named(fapi.exp(z), "e")
        total = _named(fapi.sum(e, [1], keepdim=True), "total")
        label = fapi.unsqueeze(y, 1)
        picked = fapi.take_along_axis(z, label, 1)
        loss = _named(fapi.sum(fapi.squeeze(fapi.log(total) - picked, 1), [0]) * (1.0 / n), "loss")
        hit = fapi.broadcast_to(fapi.reshape(fapi.iota(v, builder=fb), (1, v)), s).eq(fapi.broadcast_to(label, s))
        grad = (e / total - fapi.cast(hit, "f32")) * (1.0 / n)
        return _finish(fb, loss, _named(fapi.cast(grad, d), "dx"))

    def ref(x, y):
        import torch
        with torch.enable_grad():
            xx = x.detach().requires_grad_()
            loss = torch.nn.functional.cross_entropy(xx.float(), y)
            (g,) = torch.autograd.grad(loss, xx)
        return loss.detach(), g

    def liger(torch):
        from liger_kernel.transformers import LigerCrossEntropyLoss
        ce = LigerCrossEntropyLoss()

        def fn(x, y):
            with torch.enable_grad():
                xx = x.detach().requires_grad_()
                loss = ce(xx, y)
                (g,) = torch.autograd.grad(loss, xx)
            return loss.detach().float(), g
        return fn

    return Workload(
        name=f"cross_entropy_fwd_bwd_{dtype}_{fmt_shape(shape)}", family="cross_entropy", shape=shape, dtype=dtype,
        quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d), ((s[0],), "i64")],
        torch_fn=_torch_fn("cross_entropy_fwd_bwd", ref),
        bytes_moved=lambda s, d: 2 * nbytes(s, d),
        build=build, rtol=NORM_RTOL[dtype],
        int_bounds=lambda s: [None, s[1]],
        library=("liger", liger),
        note="logits read once + gradient written once; labels in [0, V)",
    )


def rotary(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """Rotary position embeddings on q[B,S,H,D] and k[B,S,Hkv,D] as a model's projections leave
    them (shape = (B, H, Hkv, S, D); attention reads them as [B,H,S,D] views), with the angles'
    cos and sin given once per position as c, s [S,D/2] (a model's are those halves repeated):
    x * cat(c, c) + rotate_half(x) * cat(s, s), where rotate_half is cat(-x2, x1) over the
    halves of D. The splits and cats are index computations in the kernel (issue 32). Bytes:
    q, k, c and s read, the rotated q and k written. Peers: eager, torch.compile and Liger-Kernel's
    rope (given the same storage as the [B,H,S,D] views it expects)."""
    def split(s: Shape) -> tuple[Shape, Shape, Shape]:
        b, h, hkv, t, d = s
        return (b, t, h, d), (b, t, hkv, d), (t, d // 2)

    def build(s: Shape, d: str) -> FusionBuilder:
        qs, ks, cs = split(s)
        fb = FusionBuilder(f"rotary_{d}")
        q, k = fb.input(qs, d, name="q"), fb.input(ks, d, name="k")
        c, sn = fb.input(cs, d, name="c"), fb.input(cs, d, name="s")
        t, half = cs
        cos = fapi.reshape(fapi.cat([c, c], -1), (t, 1, 2 * half))
        sin = fapi.reshape(fapi.cat([sn, sn], -1), (t, 1, 2 * half))

        def rotate(x: Tensor) -> Tensor:
            a, b = fapi.split(x, half, -1)
            turned = fapi.cat([-b, a], -1)
            return fapi.cast(x * fapi.broadcast_to(cos, x.shape) + turned * fapi.broadcast_to(sin, x.shape), d)
        return _finish(fb, _named(rotate(q), "q_out"), _named(rotate(k), "k_out"))

    def ref(q, k, c, s):
        import torch
        cos, sin = torch.cat([c, c], -1)[:, None], torch.cat([s, s], -1)[:, None]

        def rotate(x):
            a, b = x.chunk(2, -1)
            return x * cos + torch.cat([-b, a], -1) * sin
        return rotate(q), rotate(k)

    def liger(torch):
        from liger_kernel.ops.rope import LigerRopeFunction

        def fn(q, k, c, s):
            qo, ko = LigerRopeFunction.apply(q.transpose(1, 2), k.transpose(1, 2), c[None], s[None], None, 1, q.shape[-1])
            return qo.transpose(1, 2), ko.transpose(1, 2)
        return fn

    return Workload(
        name=f"rotary_{dtype}_{fmt_shape(shape)}", family="rotary", shape=shape, dtype=dtype, quick_shape=quick_shape,
        inputs=lambda s, d: [(x, d) for x in (*split(s), split(s)[2])],
        torch_fn=_torch_fn("rotary", ref),
        bytes_moved=lambda s, d: 2 * (nbytes(split(s)[0], d) + nbytes(split(s)[1], d)) + 2 * nbytes(split(s)[2], d),
        build=build, rtol=NORM_RTOL[dtype],
        library=("liger", liger),
        note="q, k, c, s read; q and k written",
    )


def embedding_fwd_bwd(shape: Shape, dtype: str, quick_shape: Shape) -> Workload:
    """An embedding's forward and its weight gradient in one step (issue 32): rows = w[ids] and
    dw = the rows of dy summed into the rows their ids name (torch's embedding_dense_backward),
    shape = (N tokens, V rows, D width). fuser: the lookup is an index_select kernel; the
    gradient is deterministic, with no atomics: a stable sort of the ids, then each row of dw
    binary-searches its tokens and sums their rows of dy in token order in f32. Bytes: the rows
    read and written, dy read, dw written, the ids read twice. Peers: eager (F.embedding and
    aten.embedding_dense_backward: atomics on the GPU), torch.compile, and Liger-Kernel's
    embedding where installed."""
    def build(s: Shape, d: str) -> FusionBuilder:
        n, v, width = s
        fb = FusionBuilder(f"embedding_fwd_bwd_{d}")
        w = fb.input((v, width), d, name="w")
        ids = fb.input((n,), "i64", name="ids")
        dy = fb.input((n, width), d, name="dy")
        rows = _named(fapi.embedding(w, ids), "rows")
        return _finish(fb, rows, _named(fapi.embedding_backward(dy, ids, v), "dw"))

    def ref(w, ids, dy):
        import torch
        return torch.nn.functional.embedding(ids, w), torch.ops.aten.embedding_dense_backward(dy, ids, w.shape[0], -1,
                                                                                              False)

    def liger(torch):
        from liger_kernel.ops.experimental.embedding import LigerEmbeddingFunction

        def fn(w, ids, dy):
            with torch.enable_grad():
                ww = w.detach().requires_grad_()
                rows = LigerEmbeddingFunction.apply(ww, ids)
                (g,) = torch.autograd.grad(rows, ww, dy)
            return rows.detach(), g
        return fn

    def moved(s: Shape, d: str) -> int:
        n, v, width = s
        return 3 * nbytes((n, width), d) + nbytes((v, width), d) + 2 * nbytes((n,), "i64")

    return Workload(
        name=f"embedding_fwd_bwd_{dtype}_{fmt_shape(shape)}", family="embedding", shape=shape, dtype=dtype,
        quick_shape=quick_shape,
        inputs=lambda s, d: [((s[1], s[2]), d), ((s[0],), "i64"), ((s[0], s[2]), d)],
        torch_fn=_torch_fn("embedding_fwd_bwd", ref),
        bytes_moved=moved,
        build=build, rtol=NORM_RTOL[dtype],
        int_bounds=lambda s: [None, s[1], None],
        library=("liger", liger),
        note="shape is NxVxD; rows and dy read and written once, dw written, ids read twice",
    )


def matmul(epilogue: str, shape: Shape, quick_shape: Shape, dtype: str = "bf16", note: str = "",
           split_k: tuple[str, str] = ("", "")) -> Workload:
    """C[M,N] = A[M,K] @ B[K,N], bf16 operands, f32 accumulation, bf16 output; shape is (M, N, K).

    `epilogue` "bias_relu" / "bias_gelu" (tanh) adds bias[N] (broadcast along rows) and applies
    the activation to the f32 accumulator before the single rounding to bf16 (family
    `matmul_bias_relu` / `matmul_bias_gelu`). TFLOP/s rows: flops = 2*M*N*K (the epilogue is not
    counted), ceiling the bf16 tensor-core peak. A is scaled by 1/sqrt(K) so that C is O(1).
    Peers: eager `a @ b` (cuBLAS) plus a pointwise epilogue, and torch.compile of the same.
    `split_k` = (name suffix, fusion-split-k options): a variant row, e.g. ("serial",
    "strategy=serial").
    """
    if epilogue not in MATMUL_EPILOGUES:
        raise ValueError(f"matmul epilogue {epilogue!r} is not one of {', '.join(MATMUL_EPILOGUES)}")
    family = "matmul" if epilogue == "none" else f"matmul_{epilogue}"

    def build(s: Shape, d: str) -> FusionBuilder:
        m, n, k = s
        fb = FusionBuilder(f"{family}_{d}")
        a = fb.input((m, k), d, name="a")
        b = fb.input((k, n), d, name="b")
        if epilogue == "none":
            return _finish(fb, _named(fapi.matmul(a, b, dtype=d), "c"))
        bias = fb.input((n,), d, name="bias")
        c = _named(fapi.matmul(a, b, dtype="f32"), "c")
        bias = _to_f32(bias, "bias_f")
        bb = _named(fapi.broadcast(bias, (m, n), [0]), "bb")
        acc = _named(c + bb, "s")
        act = fapi.relu(acc) if epilogue == "bias_relu" else fapi.gelu(acc, approximate="tanh")
        return _finish(fb, _round_out(_named(act, "act"), d))

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
        name=f"{family}_{dtype}_{fmt_shape(shape)}" + (f"_{split_k[0]}" if split_k[0] else ""), family=family,
        shape=shape, dtype=dtype, split_k=split_k[1],
        quick_shape=quick_shape, inputs=inputs,
        torch_fn=_torch_fn(family, ref),
        bytes_moved=out_bytes,
        build=build, flops=lambda s: 2 * s[0] * s[1] * s[2], rtol=MATMUL_RTOL,
        input_scales=lambda s: [1.0 / math.sqrt(s[2]), 1.0] + ([] if epilogue == "none" else [1.0]),
        note="shape is MxNxK; flops 2*M*N*K" + (f"; {note}" if note else ""),
    )


# ------------------------------------------------------------------ the workloads

# Full shapes follow PERF.md's anchors; quick shapes keep the aspect and stay small.
_BIG_1D = (GiB // 2,)                  # 2^29 elements: 2 GiB f32, 1 GiB bf16
_QUICK_1D = (1 << 22,)
DROPOUT_P = 0.1


def torch_dtype(torch: Any, d: str) -> Any:
    return {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "i64": torch.int64,
            "i1": torch.bool}[d]


def _rel_err(got: Sequence[Any], want: Sequence[Any]) -> float:
    worst = 0.0
    for g, w in zip(got, want):
        g, w = g.double(), w.double()
        worst = max(worst, ((g - w).norm() / max(w.norm(), 1e-30)).item())
    return worst


def _ln_forward(torch: Any, h: Any, res: Any, w: Any, b: Any) -> tuple:
    s = h + res
    y, mean, rstd = torch.native_layer_norm(s, (s.shape[-1],), w, b, LN_EPS)
    return s, y, mean.squeeze(-1), rstd.squeeze(-1)


def dropout_residual_layer_norm(dtype: str, shape: Shape, quick_shape: Shape) -> Workload:
    """A transformer block's tail: s = dropout(x, p) + residual, y = layer_norm(s) * w + b; outputs
    s, y, the i1 dropout mask and the row statistics (mean, rstd) for the backward. One fusion;
    the mask is fuser's Philox stream (seed and offset are runtime inputs), so the check
    recomputes torch's result from fuser's mask. Peer: torch.native_dropout + add +
    native_layer_norm."""
    def build(s: Shape, d: str) -> FusionBuilder:
        r, c = s
        fb = FusionBuilder(f"dropout_residual_layer_norm_{d}")
        x, res = fb.input(s, d, name="x"), fb.input(s, d, name="res")
        w, b = fb.input((c,), d, name="w"), fb.input((c,), d, name="b")
        seed, off = fb.input((), "i64", name="seed"), fb.input((), "i64", name="offset")
        h, m = fapi.dropout(x, DROPOUT_P, seed, off)
        sm = _named(h + res, "s")
        v, mean = fapi.var_mean(_to_f32(sm, "s_f"), [1], correction=0)
        rstd = _named(fapi.rsqrt(v + LN_EPS), "rstd")
        xn = (_to_f32(sm, "s_f2") - fapi.broadcast(mean, s, [1])) * fapi.broadcast(rstd, s, [1])
        y = xn * fapi.broadcast(_to_f32(w, "w_f"), s, [0]) + fapi.broadcast(_to_f32(b, "b_f"), s, [0])
        return _finish(fb, sm, _round_out(y, d), _named(m, "mask"), _named(mean, "mean"), rstd)

    def ref(x, res, w, b, seed, off):
        import torch
        h, m = torch.native_dropout(x, DROPOUT_P, True)
        s, y, mean, rstd = _ln_forward(torch, h, res, w, b)
        return s, y, m, mean, rstd

    def check(got, ins) -> float:
        import torch
        x, res, w, b = ins[:4]
        m = got[2]
        if abs(m.float().mean().item() - (1 - DROPOUT_P)) > 0.01:
            return math.inf
        h = (x.float() * m * (1 / (1 - DROPOUT_P))).to(x.dtype)
        want = _ln_forward(torch, h, res, w, b)
        return _rel_err([got[0], got[1], got[3], got[4]], want)

    return Workload(
        name=f"dropout_residual_layer_norm_{dtype}_{fmt_shape(shape)}", family="dropout", shape=shape, dtype=dtype,
        quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d), (s, d), ((s[1],), d), ((s[1],), d), ((), "i64"), ((), "i64")],
        torch_fn=_torch_fn("dropout_residual_layer_norm", ref),
        bytes_moved=lambda s, d: 4 * nbytes(s, d) + nbytes(s, "i1") + 2 * nbytes((s[1],), d) + 8 * s[0],
        build=build, rtol=NORM_RTOL[dtype], check=check,
        note="x, res read; s, y, mask, mean, rstd written",
    )


def dropout_residual_layer_norm_backward(dtype: str, shape: Shape, quick_shape: Shape) -> Workload:
    """The backward of `dropout_residual_layer_norm` to its inputs: ds = layer_norm's input
    gradient of dy (from s, mean, rstd, w: two row sums), the residual's gradient ds and x's
    ds * mask / (1 - p) (the mask the forward wrote). dw and db are left out (column sums: the
    peer computes the same formula in eager ops and torch.compile)."""
    def build(s: Shape, d: str) -> FusionBuilder:
        r, c = s
        fb = FusionBuilder(f"dropout_residual_layer_norm_backward_{d}")
        dy, sm = fb.input(s, d, name="dy"), fb.input(s, d, name="s")
        w = fb.input((c,), d, name="w")
        mean, rstd = fb.input((r,), "f32", name="mean"), fb.input((r,), "f32", name="rstd")
        m = fb.input(s, "i1", name="mask")
        xhat = (_to_f32(sm, "s_f") - fapi.broadcast(mean, s, [1])) * fapi.broadcast(rstd, s, [1])
        wdy = _to_f32(dy, "dy_f") * fapi.broadcast(_to_f32(w, "w_f"), s, [0])
        c1 = fapi.sum(xhat * wdy, [1]) * (1.0 / c)
        c2 = fapi.sum(wdy, [1]) * (1.0 / c)
        ds = (wdy - xhat * fapi.broadcast(c1, s, [1]) - fapi.broadcast(c2, s, [1])) * fapi.broadcast(rstd, s, [1])
        return _finish(fb, _round_out(ds, d), _named(fapi.cast(fapi.dropout_backward(ds, m, DROPOUT_P), d), "dx"))

    def ref(dy, s, w, mean, rstd, m):
        c = s.shape[-1]
        xhat = (s.float() - mean[:, None]) * rstd[:, None]
        wdy = dy.float() * w.float()
        c1 = (xhat * wdy).sum(-1, keepdim=True) / c
        c2 = wdy.sum(-1, keepdim=True) / c
        ds = (wdy - xhat * c1 - c2) * rstd[:, None]
        return ds.to(dy.dtype), (ds * m * (1 / (1 - DROPOUT_P))).to(dy.dtype)

    return Workload(
        name=f"dropout_residual_layer_norm_backward_{dtype}_{fmt_shape(shape)}", family="dropout", shape=shape,
        dtype=dtype, quick_shape=quick_shape,
        inputs=lambda s, d: [(s, d), (s, d), ((s[1],), d), ((s[0],), "f32"), ((s[0],), "f32"), (s, "i1")],
        torch_fn=_torch_fn("dropout_residual_layer_norm_backward", ref),
        bytes_moved=lambda s, d: 4 * nbytes(s, d) + nbytes(s, "i1") + nbytes((s[1],), d) + 8 * s[0],
        build=build, rtol=NORM_RTOL[dtype], note="dy, s, mask read; ds, dx written",
    )


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


SPLIT_K_VARIANTS = (("unsplit", "factor=1"), ("two_kernel", "strategy=two-kernel"), ("serial", "strategy=serial"),
                    ("", ""))


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
        register(reduction_sum("mid_sum", [1], (256, 1024, 512), dt, (16, 256, 128)))
    for dt in ("f32", "bf16"):
        register(row_and_column_sums((32768, 4096), dt, (1024, 512)))
    for dt in ("f32", "bf16"):
        register(transpose((8192, 8192), dt, (1024, 1024)))
    for dt in ("f32", "bf16"):
        for full, quick in NORM_SHAPES:
            register(var_mean(1, full, dt, quick))
        register(var_mean(0, (32768, 4096), dt, (1024, 4096)))
    for dt in ("f32", "bf16"):
        for full, quick in NORM_SHAPES:
            register(layer_norm(full, dt, quick))
    for dt in ("f32", "bf16"):
        register(rms_norm((32768, 4096), dt, (256, 4096)))
    register(log_softmax((8, 1024, 50257), "bf16", (2, 64, 50257)))
    register(cross_entropy_fwd_bwd((8192, 50257), "bf16", (256, 50257)))  # GPT-2's vocabulary
    register(cross_entropy_fwd_bwd((8192, 32000), "bf16", (256, 32000)))  # Llama's
    register(rotary((4, 16, 4, 2048, 128), "bf16", (1, 4, 2, 64, 128)))  # the Llama-style decoder's q and k
    register(embedding_fwd_bwd((8192, 50257, 768), "bf16", (300, 1000, 64)))  # GPT-2's token embedding
    for dt in ("f32", "bf16"):
        register(dropout_residual_layer_norm(dt, (32768, 4096), (256, 4096)))
        register(dropout_residual_layer_norm_backward(dt, (32768, 4096), (256, 4096)))
    for full, quick in MATMUL_SHAPES:
        register(matmul("none", full, quick))
    for full, quick in MATMUL_LARGE_K_SHAPES:  # each split-K strategy, then auto's choice
        for variant in SPLIT_K_VARIANTS:
            register(matmul("none", full, quick, note=f"large K: split-K {variant[0] or 'auto'}", split_k=variant))
    register(matmul("bias_relu", (8192, 8192, 8192), (512, 512, 512)))
    register(matmul("bias_gelu", (4096, 4096, 4096), (256, 256, 256)))


_register_defaults()
