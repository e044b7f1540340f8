"""Split-K matmuls on the GPU: PERF.md's four large-K shapes, a ragged one, every operand layout,
a fused bias + gelu epilogue, forced factors and grids. Inputs are fresh random bf16 torch
tensors (A scaled by 1/sqrt(K) so outputs stay O(1)); the reference is torch in f32 on the same
GPU. Each test also checks that the split happened: two launches, the matmul's grid covering
tiles x splits. Skipped without a GPU.

`python test/python/test_split_k_gpu.py --bench` times the split kernels against the unsplit
ones (`fusion-split-k{factor=1}`) and torch (cuBLAS).
"""

from __future__ import annotations

import math
import os
import sys

import pytest

pytestmark = pytest.mark.gpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuser import api  # noqa: E402
from fuser.lowering.heuristics.split_k import auto_decision  # noqa: E402
from test_matmul import matmul_text  # noqa: E402

TOL = {"bf16": 1.6e-2, "f16": 4e-3, "f32": 3e-3}
LARGE_K = [(1024, 1024, 32768), (512, 512, 65536), (256, 4096, 16384), (128, 128, 131072)]


def _torch():
    return pytest.importorskip("torch")


def _rand(torch, shape, dt="bf16", scale=1.0):
    td = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dt]
    return (torch.randn(shape, device="cuda") * scale).to(td)


def _rel(got, ref):
    import torch
    got, ref = got.float(), ref.float()
    assert bool(torch.isfinite(got).all()), "output has NaN/Inf (unwritten or wrong)"
    return float((got - ref).norm() / ref.norm().clamp_min(1e-30))


def _operands(torch, m, n, k, ta=False, tb=False, dt="bf16"):
    a = _rand(torch, (k, m) if ta else (m, k), dt, 1 / math.sqrt(k))
    b = _rand(torch, (n, k) if tb else (k, n), dt)
    af = a.float().T if ta else a.float()
    bf = b.float().T if tb else b.float()
    return a, b, af @ bf


def _pipeline(split: str = "", sched: str = "", strategy: str = "two-kernel") -> str:
    """The default pipeline with fusion-split-k{strategy=..., split} and convert-fusion-to-sched{sched}."""
    split = " ".join(x for x in (f"strategy={strategy}", split) if x)
    sched = f"convert-fusion-to-sched{{{sched}}}" if sched else "convert-fusion-to-sched"
    return (f"canonicalize,fusion-split-k{{{split}}},fusion-segment,{sched},sched-flush-wgmma,sched-insert-bulk-syncs,"
            "sched-alias-smem,cse,convert-sched-to-nvvm,cse")


def bias_gelu_text(m: int, n: int, k: int) -> str:
    """bf16(gelu_tanh(A @ B + bias)), bias f32 [N]."""
    t = f"tensor<{m}x{n}xf32>"
    return matmul_text(m, n, k, extra_args=f", %bias: tensor<{n}xf32>", epilogue=f"""\
  %bb = fusion.broadcast %bias dims [0] : tensor<{n}xf32> to {t}
  %d = fusion.add %c, %bb : {t}
  %r = fusion.gelu %d {{approximate = "tanh"}} : {t}
  %o = fusion.cast %r : {t} to tensor<{m}x{n}xbf16>
  func.return %o : tensor<{m}x{n}xbf16>""").replace(f"-> {t} {{", f"-> tensor<{m}x{n}xbf16> {{", 1)


def _check_split(k_, splits: int | None = None) -> None:
    """Two launches: the split matmul, then the sum (+ epilogue); with `splits`, the matmul's
    kernel carries split=<splits>."""
    launches = k_.program.launches
    assert len(launches) == 2, [s.kernel for s in launches]
    if splits is not None:
        assert f"split={splits} " in k_.ir("sched")


@pytest.mark.parametrize("m,n,k", LARGE_K)
def test_large_k_auto(m, n, k):
    """The heuristic splits each of PERF.md's large-K shapes (one wave of tiles x splits)."""
    torch = _torch()
    d = auto_decision(m, n, k)
    assert d.splits > 1, d.reason
    a, b, ref = _operands(torch, m, n, k)
    k_ = api.compile(matmul_text(m, n, k, out="bf16"), pipeline=_pipeline())
    _check_split(k_, d.splits)
    assert k_.program.launches[0].grid[0] <= 132
    assert _rel(k_(a, b), ref) < TOL["bf16"]


@pytest.mark.parametrize("m,n,k", [(128, 128, 131072), (100, 200, 10000)])
def test_f32_result(m, n, k):
    """An f32 result is the sum itself (no cast): the tightest check of the partials."""
    torch = _torch()
    a, b, ref = _operands(torch, m, n, k)
    k_ = api.compile(matmul_text(m, n, k), pipeline=_pipeline())
    _check_split(k_)
    assert _rel(k_(a, b), ref) < 5e-4


def test_ragged():
    """100x200x10000: ragged against the tile in M and N; K = 157 slices of 64, the last one
    partial, and the last split shorter than the others."""
    torch = _torch()
    m, n, k = 100, 200, 10000
    d = auto_decision(m, n, k)
    assert d.splits > 1 and k % d.k_chunk, d.reason
    a, b, ref = _operands(torch, m, n, k)
    k_ = api.compile(matmul_text(m, n, k, out="bf16"), pipeline=_pipeline())
    _check_split(k_, d.splits)
    assert _rel(k_(a, b), ref) < TOL["bf16"]


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_layouts(ta, tb, dt):
    torch = _torch()
    m, n, k = 256, 384, 20000
    a, b, ref = _operands(torch, m, n, k, ta, tb, dt)
    k_ = api.compile(matmul_text(m, n, k, ta, tb, dt=dt), pipeline=_pipeline("factor=6"))
    _check_split(k_, 6)
    assert _rel(k_(a, b), ref) < 5e-4


def test_bias_gelu_epilogue():
    """bf16(gelu(A @ B + bias)): the sum of the partials and the epilogue in one kernel."""
    torch = _torch()
    m, n, k = 128, 128, 131072
    text = bias_gelu_text(m, n, k)
    a, b, ref = _operands(torch, m, n, k)
    bias = _rand(torch, (n,), "f32")
    k_ = api.compile(text, pipeline=_pipeline())
    _check_split(k_, auto_decision(m, n, k).splits)
    want = torch.nn.functional.gelu(ref + bias, approximate="tanh")
    assert _rel(k_(a, b, bias), want) < TOL["bf16"] + 5e-3


@pytest.mark.parametrize("factor,splits", [(2, 2), (7, 7), (12, 10), (40, 40)])
def test_forced_factor(factor, splits):
    """Forced factors on a shape auto keeps (K = 2560, 40 slices): 12 asked gives 10 splits of 4
    slices (whole slices a split), 40 gives one slice each."""
    torch = _torch()
    m, n, k = 384, 264, 2560
    a, b, ref = _operands(torch, m, n, k)
    k_ = api.compile(matmul_text(m, n, k, out="bf16"), pipeline=_pipeline(f"factor={factor}"))
    _check_split(k_, splits)
    assert _rel(k_(a, b), ref) < TOL["bf16"]


@pytest.mark.parametrize("opts", ["matmul_persistent=1 sms=5", "matmul_persistent=0", 'tile="128x256" sms=7',
                                  "matmul_pingpong=1 sms=4", "matmul_cluster=2 matmul_persistent=1 sms=4",
                                  "matmul_cluster=2 matmul_persistent=0"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_forced_grids(opts, ta, tb):
    """More work items than CTAs (each CTA walks several, the circular buffer runs on across
    splits of different lengths), one CTA per item, ping-pong, 2-CTA clusters (328 rows: a
    padding tile row)."""
    torch = _torch()
    m, n, k = 328, 264, 1000  # K = 16 slices; factor 3 -> 6, 6, 4 slices
    a, b, ref = _operands(torch, m, n, k, ta, tb)
    k_ = api.compile(matmul_text(m, n, k, ta, tb),
                     pipeline=_pipeline("factor=3", opts))
    _check_split(k_, 3)
    assert _rel(k_(a, b), ref) < 5e-4


def test_repeat_calls_fresh_partials():
    """The partials workspace is fully rewritten on every call: new inputs, new answer."""
    torch = _torch()
    m, n, k = 128, 128, 131072
    k_ = api.compile(matmul_text(m, n, k), pipeline=_pipeline())
    for _ in range(3):
        a, b, ref = _operands(torch, m, n, k)
        assert _rel(k_(a, b), ref) < 5e-4


# ------------------------------------------------------------------------- timing


def bench() -> None:
    """`--bench`: the four large-K shapes, split (auto: the wide tile where the splits fill a
    wave), split with 128x128 tiles, and unsplit (factor=1), against torch (cuBLAS)."""
    import torch
    from triton.testing import do_bench

    rows = []
    for m, n, k in LARGE_K:
        a, b, ref = _operands(torch, m, n, k)
        t_t = do_bench(lambda: a @ b, warmup=50, rep=300, return_mode="median")
        fl = 2 * m * n * k
        tiles = math.ceil(m / 128) * math.ceil(n / 128)
        s128 = min(132 // tiles, math.ceil(k / 64) // 8)
        variants = (("split auto", _pipeline()),
                    ("split 128x128", _pipeline(f"factor={s128}", 'tile="128x128"')),
                    ("unsplit", _pipeline("factor=1")))
        for label, pipe in variants:
            k_ = api.compile(matmul_text(m, n, k, out="bf16"), pipeline=pipe)
            err = _rel(k_(a, b), ref)
            t_f = do_bench(lambda: k_(a, b), warmup=50, rep=300, return_mode="median")
            rows.append((f"{m}x{n}x{k}", label, t_f * 1e3, fl / t_f / 1e9, fl / t_t / 1e9, t_t / t_f, err))
    print(f"{'shape':>18} {'variant':>13} {'fuser us':>9} {'fuser TF/s':>11} {'cuBLAS TF/s':>12} {'ratio':>6} {'relerr':>8}")
    for r in rows:
        print(f"{r[0]:>18} {r[1]:>13} {r[2]:9.1f} {r[3]:11.1f} {r[4]:12.1f} {r[5]:6.3f} {r[6]:8.1e}")


if __name__ == "__main__" and "--bench" in sys.argv:
    bench()
