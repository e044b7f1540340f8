"""Serial split-K on the GPU (`fusion-split-k{strategy=serial}`): one kernel whose splits add
their f32 tiles into a workspace in split order behind per-tile turn counters, the last split
running the epilogue. Covers bf16/f16 inputs with f32/bf16/f16 outputs, S in {2, 3, 4, 8, 16,
128}, K not a multiple of S x 64, ragged M and N, bias+gelu and residual epilogues, persistent
and not, bit-identical repeated launches, and relaunches with nothing reset on the host. The
reference is torch in f32 on the same GPU. Skipped without a GPU.

`python test/python/test_serial_split_k_gpu.py --bench` times no split, two-kernel, serial at
several S, and auto against torch (cuBLAS) on PERF.md's large-K shapes.
"""

from __future__ import annotations

import math
import os
import sys

import pytest

pytestmark = pytest.mark.gpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuser import api  # noqa: E402
from test_matmul import lower, matmul_text  # noqa: E402
from test_split_k_gpu import LARGE_K, TOL, _operands, _pipeline, _rand, _rel, _torch, bias_gelu_text  # noqa: E402


def _serial(factor=None, sched="", strategy="serial") -> str:
    return _pipeline(f"factor={factor}" if factor else "", sched, strategy)


def _check_serial(k_, splits: int) -> None:
    """One launch, whose matmul kernel is the serial split into `splits`."""
    assert len(k_.program.launches) == 1, [s.kernel for s in k_.program.launches]
    ir = k_.ir("sched")
    assert f"split={splits} " in ir and "serial=1" in ir, ir[:2000]


def _torch_dt(torch, dt):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dt]


@pytest.mark.parametrize("dt,out", [("bf16", "f32"), ("bf16", "bf16"), ("bf16", "f16"), ("f16", "f32"),
                                    ("f16", "bf16"), ("f16", "f16")])
def test_dtypes(dt, out):
    torch = _torch()
    m, n, k = 256, 384, 20000
    a, b, ref = _operands(torch, m, n, k, dt=dt)
    k_ = api.compile(matmul_text(m, n, k, dt=dt, out=out), pipeline=_serial(4))
    _check_serial(k_, 4)
    got = k_(a, b)
    assert got.dtype == _torch_dt(torch, out)
    assert _rel(got, ref) < (5e-4 if out == "f32" else TOL[out])


@pytest.mark.parametrize("factor", [2, 3, 4, 8, 16, 128])
def test_split_counts(factor):
    """K = 9000 is 141 slices of 64, not a multiple of S x 64 for any S here: the last split is
    shorter (or, for 128, 13 splits of 1 slice and 115 of 1: chunking gives whole slices)."""
    torch = _torch()
    m, n, k = 192, 256, 9000 if factor < 128 else 8200
    a, b, ref = _operands(torch, m, n, k)
    k_ = api.compile(matmul_text(m, n, k), pipeline=_serial(factor))
    kc = 64 * math.ceil(math.ceil(k / 64) / factor)
    _check_serial(k_, math.ceil(k / kc))
    assert _rel(k_(a, b), ref) < 5e-4


@pytest.mark.parametrize("m,n", [(100, 200), (1, 8), (129, 132), (300, 516)])
def test_ragged(m, n):
    """Ragged M and N (B stored [N, K], so N need only be a multiple of 4, the workspace's)."""
    torch = _torch()
    k = 5000
    a, b, ref = _operands(torch, m, n, k, tb=True)
    k_ = api.compile(matmul_text(m, n, k, tb=True, out="bf16"), pipeline=_serial(3))
    _check_serial(k_, 3)
    assert _rel(k_(a, b), ref) < TOL["bf16"]


@pytest.mark.parametrize("ta,tb", [(False, True), (True, False), (True, True)])
def test_layouts(ta, tb):
    torch = _torch()
    m, n, k = 256, 256, 12288
    a, b, ref = _operands(torch, m, n, k, ta, tb)
    k_ = api.compile(matmul_text(m, n, k, ta, tb), pipeline=_serial(6))
    _check_serial(k_, 6)
    assert _rel(k_(a, b), ref) < 5e-4


def test_bias_gelu_epilogue():
    """bf16(gelu(A @ B + bias)) on 128x128x131072 split 128 ways: the last split's epilogue."""
    torch = _torch()
    m, n, k = 128, 128, 131072
    text = bias_gelu_text(m, n, k)
    a, b, ref = _operands(torch, m, n, k)
    bias = _rand(torch, (n,), "f32")
    k_ = api.compile(text, pipeline=_serial(128))
    _check_serial(k_, 128)
    want = torch.nn.functional.gelu(ref + bias, approximate="tanh")
    assert _rel(k_(a, b, bias), want) < TOL["bf16"] + 5e-3


def test_residual_epilogue():
    """bf16(A @ B + R) with a bf16 residual R, ragged M."""
    torch = _torch()
    m, n, k = 200, 256, 16384
    t = f"tensor<{m}x{n}xf32>"
    text = matmul_text(m, n, k, extra_args=f", %r: tensor<{m}x{n}xbf16>", epilogue=f"""\
  %re = fusion.cast %r : tensor<{m}x{n}xbf16> to {t}
  %d = fusion.add %c, %re : {t}
  %o = fusion.cast %d : {t} to tensor<{m}x{n}xbf16>
  func.return %o : tensor<{m}x{n}xbf16>""").replace(f"-> {t} {{", f"-> tensor<{m}x{n}xbf16> {{", 1)
    a, b, ref = _operands(torch, m, n, k)
    r = _rand(torch, (m, n), "bf16")
    k_ = api.compile(text, pipeline=_serial(8))
    _check_serial(k_, 8)
    assert _rel(k_(a, b, r), ref + r.float()) < TOL["bf16"]


@pytest.mark.parametrize("opts", ["matmul_persistent=1 sms=5", "matmul_persistent=1", "matmul_persistent=0",
                                  'tile="128x256"', 'tile="256x128" matmul_persistent=1 sms=3'])
def test_grids(opts):
    """A persistent grid with more work items than CTAs (each CTA walks splits of several tiles,
    the circular buffer running on across splits of different lengths), one CTA per item, and
    the wide tiles (two m64 blocks per consumer warpgroup with 256x128)."""
    torch = _torch()
    m, n, k = 328, 264, 3000  # 47 slices: 16, 16, 15
    a, b, ref = _operands(torch, m, n, k)
    k_ = api.compile(matmul_text(m, n, k), pipeline=_serial(3, opts))
    _check_serial(k_, 3)
    assert _rel(k_(a, b), ref) < 5e-4


def test_bit_identical_relaunches():
    """20 launches on the same inputs give the same bits (the additions run in split order), and
    a relaunch on new inputs is right with nothing reset on the host (the counters are back to 0)."""
    torch = _torch()
    m, n, k = 256, 512, 65536
    k_ = api.compile(matmul_text(m, n, k), pipeline=_serial(16))
    _check_serial(k_, 16)
    a, b, ref = _operands(torch, m, n, k)
    first = k_(a, b)
    assert _rel(first, ref) < 5e-4
    for _ in range(19):
        assert torch.equal(k_(a, b), first)
    for _ in range(3):
        a, b, ref = _operands(torch, m, n, k)
        assert _rel(k_(a, b), ref) < 5e-4


@pytest.mark.parametrize("m,n,k", LARGE_K)
def test_large_k_auto(m, n, k):
    """The default pipeline (strategy=auto) on PERF.md's large-K shapes: right, whatever it picks."""
    torch = _torch()
    a, b, ref = _operands(torch, m, n, k)
    k_ = api.compile(matmul_text(m, n, k, out="bf16"))
    assert _rel(k_(a, b), ref) < TOL["bf16"]


# ------------------------------------------------------------------------- timing


def bench(shapes=LARGE_K, factors=(2, 4, 8, 16, 32)) -> None:
    """`--bench`: per large-K shape, no split, two-kernel (its heuristic), serial at several S,
    and auto, against torch (cuBLAS): microseconds and the ratio cuBLAS time / fuser time."""
    import torch
    from triton.testing import do_bench

    print(f"{'shape':>18} {'variant':>16} {'us':>8} {'TF/s':>7} {'x cuBLAS':>9} {'relerr':>8}  decision")
    for m, n, k in shapes:
        a, b, ref = _operands(torch, m, n, k)
        t_t = do_bench(lambda: a @ b, warmup=50, rep=300, return_mode="median")
        fl = 2 * m * n * k
        variants = [("unsplit", _pipeline("factor=1")), ("two-kernel", _pipeline())]
        variants += [(f"serial S={f}", _serial(f)) for f in factors if f <= math.ceil(k / 64)]
        variants += [("auto", _pipeline(strategy="auto"))]
        for label, pipe in variants:
            k_ = api.compile(matmul_text(m, n, k, out="bf16"), pipeline=pipe)
            err = _rel(k_(a, b), ref)
            t_f = do_bench(lambda: k_(a, b), warmup=50, rep=300, return_mode="median")
            ir = lower(matmul_text(m, n, k, out="bf16"), "fusion-split-k", ptx=False)[0] if label == "auto" else ""
            note = ir.split('fuser.split_k = "', 1)[1].split('"', 1)[0] if "fuser.split_k" in ir else ""
            print(f"{m}x{n}x{k:>7} {label:>16} {t_f * 1e3:8.1f} {fl / t_f / 1e9:7.1f} {t_t / t_f:9.3f} {err:8.1e}  {note}",
                  flush=True)
        print(f"{m}x{n}x{k:>7} {'cuBLAS':>16} {t_t * 1e3:8.1f} {fl / t_t / 1e9:7.1f}", flush=True)


if __name__ == "__main__" and "--bench" in sys.argv:
    bench()
