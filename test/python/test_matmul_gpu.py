"""The Hopper matmul on the GPU: fused epilogues, every operand layout, ragged shapes, the gated
MLP, HGMMA in the SASS. Inputs are fresh random bf16/f16 torch tensors; the reference is torch in
f32 on the same GPU (a float64 numpy product of 8192^3 would take minutes). Skipped without a GPU.

`python test/python/test_matmul_gpu.py --bench` times fuser against torch (cuBLAS) instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

pytestmark = pytest.mark.gpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuser import api  # noqa: E402
from test_matmul import FP8_BIAS, GATED, matmul_text  # noqa: E402

from fuser.tools.sanitize import MATMUL_TWO_OUTPUTS  # noqa: E402

TOL = {"bf16": 1.6e-2, "f16": 4e-3, "f32": 3e-3}


def _torch():
    return pytest.importorskip("torch")


def _rand(torch, shape, dt, scale=1.0):
    td = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dt]
    return (torch.randn(shape, device="cuda") * scale).to(td)


def _rel(got, ref):
    got, ref = got.float(), ref.float()
    assert torch_isfinite(got), "output has NaN/Inf (unwritten or wrong)"
    return float((got - ref).norm() / ref.norm().clamp_min(1e-30))


def torch_isfinite(x):
    import torch
    return bool(torch.isfinite(x).all())


def _pipe(opts: str) -> str:
    """The compile pipeline with convert-fusion-to-sched's options `opts` (no translate/split passes)."""
    return f"canonicalize,fusion-segment,convert-fusion-to-sched{{{opts}}},sched-flush-wgmma,sched-alias-smem,cse,convert-sched-to-nvvm,cse"


def _operands(torch, m, n, k, ta, tb, dt):
    a = _rand(torch, (k, m) if ta else (m, k), dt)
    b = _rand(torch, (n, k) if tb else (k, n), dt)
    af = a.float().T if ta else a.float()
    bf = b.float().T if tb else b.float()
    return a, b, af @ bf


@pytest.mark.parametrize("m,n,k", [(128, 128, 64), (1000, 1000, 1000), (4096, 4096, 4096), (8192, 8192, 8192),
                                   (1, 512, 256), (256, 256, 16), (333, 136, 72)])
def test_shapes(m, n, k):
    torch = _torch()
    a, b, ref = _operands(torch, m, n, k, False, False, "bf16")
    out = api.compile(matmul_text(m, n, k))(a, b)
    assert _rel(out, ref) < 5e-3


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_layouts(ta, tb, dt):
    torch = _torch()
    a, b, ref = _operands(torch, 1000, 1000, 1000, ta, tb, dt)
    out = api.compile(matmul_text(1000, 1000, 1000, ta, tb, dt=dt))(a, b)
    assert _rel(out, ref) < 5e-3


@pytest.mark.parametrize("tile", ["128x128", "128x256", "256x128"])
def test_forced_tiles(tile):
    torch = _torch()
    a, b, ref = _operands(torch, 700, 900, 520, False, True, "bf16")
    out = api.compile(matmul_text(700, 900, 520, tb=True),
                      pipeline=_pipe(f'tile="{tile}" stages=3'))(a, b)
    assert _rel(out, ref) < 5e-3


@pytest.mark.parametrize("opts", ["matmul_persistent=1 sms=4", 'matmul_persistent=1 sms=3 tile="128x128" stages=2',
                                  'matmul_persistent=1 sms=5 tile="256x128"', "matmul_persistent=0 sms=4"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_persistent(opts, ta, tb):
    """A persistent grid much smaller than the tile count: every CTA walks several tiles, the
    circular buffer's phases run on across tiles, the last CTA gets fewer tiles (ragged too)."""
    _check_ragged(opts, ta, tb)


def _check_ragged(opts, ta, tb):
    """696x904x520: ragged against every tile (TMA needs rows of 16-byte multiples)."""
    torch = _torch()
    m, n, k = 696, 904, 520
    a, b, ref = _operands(torch, m, n, k, ta, tb, "bf16")
    out = api.compile(matmul_text(m, n, k, ta, tb),
                      pipeline=_pipe(opts))(a, b)
    assert _rel(out, ref) < 5e-3


def _check_gated_600(torch, opts: str) -> None:
    """The gated MLP silu(x @ W1) * (x @ W2) with 600 rows, compiled with `opts`."""
    x, w1, w2 = _rand(torch, (600, 512), "bf16"), _rand(torch, (512, 384), "bf16", 0.05), _rand(torch, (512, 384), "bf16", 0.05)
    got = api.compile(GATED.replace("300x", "600x"), pipeline=_pipe(opts))(x, w1, w2)
    g, u = x.float() @ w1.float(), x.float() @ w2.float()
    assert _rel(got, torch.nn.functional.silu(g) * u) < 2e-2


def test_persistent_gated_mlp_and_gelu():
    torch = _torch()
    _check_gated_600(torch, "matmul_persistent=1 sms=2")
    text, a, b, bias, ref = _bias_gelu_case(torch)
    got = api.compile(text, pipeline=_pipe("matmul_persistent=1 sms=7"))(a, b, bias)
    assert _rel(got, torch.nn.functional.gelu(ref + bias)) < TOL["bf16"] + 5e-3


@pytest.mark.parametrize("opts", ["matmul_pingpong=1 sms=4", 'matmul_pingpong=1 sms=3 tile="64x256" stages=2',
                                  'matmul_pingpong=1 sms=1 tile="128x128"', "matmul_pingpong=1 sms=500"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_pingpong(opts, ta, tb):
    """Ping-pong consumers: the warpgroups alternate whole tiles of a persistent grid, odd and
    even tile counts per CTA, one CTA walking every tile (sms=1), one tile per CTA (sms=500:
    warpgroup 1 has none), ragged against every tile."""
    _check_ragged(opts, ta, tb)


def test_pingpong_gated_mlp_and_gelu():
    torch = _torch()
    _check_gated_600(torch, "matmul_pingpong=1 sms=3")
    text, a, b, bias, ref = _bias_gelu_case(torch)
    for tile in ("128x128", "64x256"):
        got = api.compile(text, pipeline=_pipe(f'matmul_pingpong=1 sms=7 tile="{tile}"'))(a, b, bias)
        assert _rel(got, torch.nn.functional.gelu(ref + bias)) < TOL["bf16"] + 5e-3


def _bias_gelu_case(torch, m=1000, n=1000, k=200):
    """matmul + bias + gelu with a bf16 result, its operands and the f32 matmul reference."""
    t = f"tensor<{m}x{n}xf32>"
    text = matmul_text(m, n, k, extra_args=f", %bias: tensor<{n}xf32>", epilogue=f"""\
  %bb = fusion.broadcast %bias dims [0] : tensor<{n}xf32> to {t}
  %d = fusion.add %c, %bb : {t}
  %r = fusion.gelu %d : {t}
  %o = fusion.cast %r : {t} to tensor<{m}x{n}xbf16>
  func.return %o : tensor<{m}x{n}xbf16>""").replace(f"-> {t} {{", f"-> tensor<{m}x{n}xbf16> {{", 1)
    a, b, ref = _operands(torch, m, n, k, False, False, "bf16")
    return text, a, b, _rand(torch, (n,), "f32"), ref


@pytest.mark.parametrize("m,n,k,opts", [(1000, 1000, 1000, ""), (333, 136, 72, ""), (4096, 4096, 4096, ""),
                                        (696, 904, 520, "matmul_persistent=1 sms=5"),
                                        (333, 904, 520, 'matmul_persistent=0 tile="128x256"'),
                                        (700, 904, 520, 'matmul_persistent=1 sms=7 tile="256x128" stages=3')])
def test_cluster_shapes(m, n, k, opts):
    """2-CTA clusters along M with B multicast: ragged shapes (333 rows: an odd tile-row count,
    so a padding row of CTAs that only multicast), persistent and one-CTA-per-tile grids."""
    torch = _torch()
    a, b, ref = _operands(torch, m, n, k, False, False, "bf16")
    out = api.compile(matmul_text(m, n, k), pipeline=_pipe(f"matmul_cluster=2 {opts}"))(a, b)
    assert _rel(out, ref) < 5e-3


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_cluster_layouts(ta, tb):
    torch = _torch()
    a, b, ref = _operands(torch, 1000, 1000, 1000, ta, tb, "bf16")
    out = api.compile(matmul_text(1000, 1000, 1000, ta, tb), pipeline=_pipe('matmul_cluster=2 tile="128x256" sms=3'))(a, b)
    assert _rel(out, ref) < 5e-3


def test_cluster_bias_gelu():
    torch = _torch()
    text, a, b, bias, ref = _bias_gelu_case(torch)
    got = api.compile(text, pipeline=_pipe("matmul_cluster=2 sms=6"))(a, b, bias)
    assert _rel(got, torch.nn.functional.gelu(ref + bias)) < TOL["bf16"] + 5e-3


EPILOGUES = {
    "bias": ("%bb = fusion.broadcast %bias dims [0] : tensor<{n}xf32> to {t}\n  %r = fusion.add %c, %bb : {t}",
             lambda c, bias, res: c + bias),
    "relu": ("%r = fusion.relu %c : {t}", lambda c, bias, res: torch_mod().relu(c)),
    "gelu": ("%r = fusion.gelu %c : {t}", lambda c, bias, res: torch_mod().nn.functional.gelu(c)),
    "silu": ("%r = fusion.silu %c : {t}", lambda c, bias, res: torch_mod().nn.functional.silu(c)),
    "residual": ("%r = fusion.add %c, %res : {t}", lambda c, bias, res: c + res),
    "scale": ("%s = fusion.full 0.125 : {t}\n  %r = fusion.mul %c, %s : {t}", lambda c, bias, res: c * 0.125),
}


def torch_mod():
    import torch
    return torch


@pytest.mark.parametrize("out", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("epi", sorted(EPILOGUES))
def test_epilogues(epi, out):
    torch = _torch()
    m, n, k = 777, 1000, 520
    t = f"tensor<{m}x{n}xf32>"
    to = f"tensor<{m}x{n}x{out}>"
    body, fn = EPILOGUES[epi]
    body = body.format(n=n, t=t)
    cast = f"  %o = fusion.cast %r : {t} to {to}\n" if out != "f32" else ""
    ret = "%o" if out != "f32" else "%r"
    text = matmul_text(m, n, k, extra_args=f", %bias: tensor<{n}xf32>, %res: {t}", epilogue=f"  {body}\n{cast}  func.return {ret} : {to}")
    text = text.replace(f"-> tensor<{m}x{n}xf32> {{", f"-> {to} {{", 1)
    a, b, ref = _operands(torch, m, n, k, False, False, "bf16")
    bias, res = _rand(torch, (n,), "f32"), _rand(torch, (m, n), "f32")
    got = api.compile(text)(a, b, bias, res)
    want = fn(ref, bias, res)
    assert _rel(got, want) < TOL[out] + 5e-3


NARROWED = """
func.func @narrowed(%a: tensor<{m}x{k}xbf16>, %b: tensor<{k}x{n}xbf16>, %bias: tensor<{n}xbf16>, %x: tensor<{m}x{n}xbf16>) -> (tensor<{m}x{n}xbf16>, tensor<{m}xf32>) {{
  %c = fusion.matmul %a, %b : tensor<{m}x{k}xbf16>, tensor<{k}x{n}xbf16> -> tensor<{m}x{n}xf32>
  %bf = fusion.cast %bias : tensor<{n}xbf16> to tensor<{n}xf32>
  %bb = fusion.broadcast %bf dims [0] : tensor<{n}xf32> to tensor<{m}x{n}xf32>
  %d = fusion.add %c, %bb : tensor<{m}x{n}xf32>
  %h = fusion.cast %d : tensor<{m}x{n}xf32> to tensor<{m}x{n}xbf16>
  %r = fusion.add %h, %x : tensor<{m}x{n}xbf16>
  %hf = fusion.cast %h : tensor<{m}x{n}xbf16> to tensor<{m}x{n}xf32>
  %s = fusion.reduce sum %hf dims [1] : tensor<{m}x{n}xf32> to tensor<{m}xf32>
  func.return %r, %s : tensor<{m}x{n}xbf16>, tensor<{m}xf32>
}}
"""


@pytest.mark.parametrize("m,n,k", [(777, 1000, 520), (8192, 768, 768)])
def test_narrowed_product_read_by_two_kernels(m, n, k):
    """torch's addmm read by two kernels: the matmul's epilogue stores bf16(product + bias) and
    both readers read that (the planner's narrowed product), matching torch's rounding."""
    torch = _torch()
    a, b, ref = _operands(torch, m, n, k, False, False, "bf16")
    bias, x = _rand(torch, (n,), "bf16"), _rand(torch, (m, n), "bf16")
    k_ = api.compile(NARROWED.format(m=m, n=n, k=k))
    r, s = k_(a, b, bias, x)
    h = torch.addmm(bias, a, b)  # cuBLAS: bf16 out, f32 accumulation
    assert _rel(r, h + x) < TOL["bf16"]
    assert _rel(s, h.float().sum(1)) < 5e-3


TWO_OUTPUTS = MATMUL_TWO_OUTPUTS.replace("{dt}", "bf16")


@pytest.mark.parametrize("store", ["tma", "rows", "direct"])
@pytest.mark.parametrize("m,n,k,opts", [(696, 904, 520, "sms=5"), (333, 136, 72, ""), (1000, 1000, 200, "matmul_pingpong=1 sms=3"),
                                        (1000, 1000, 1000, "matmul_cluster=2 sms=6"),
                                        (1000, 1000, 1000, "matmul_smem_reuse=1 matmul_persistent=0")])
def test_store_paths(store, m, n, k, opts):
    """The three epilogue stores (TMA through shared memory, rows through shared memory by the
    threads, st.global from registers) with two outputs of different element types (f32 boxes
    are 32 wide, bf16 64), ragged tiles, several tiles per CTA (the staging buffers alternate
    across tiles), ping-pong, clusters and the staging in the operand slots."""
    if store == "direct" and "smem_reuse" in opts:
        pytest.skip("the reuse is of the staging")
    torch = _torch()
    a, b, ref = _operands(torch, m, n, k, False, False, "bf16")
    pipe = _pipe(f"matmul_store={store} {opts}")
    c, o = api.compile(TWO_OUTPUTS.format(m=m, n=n, k=k), pipeline=pipe)(a, b)
    assert _rel(c, ref) < 5e-3
    assert _rel(o, torch.relu(ref)) < TOL["bf16"]


@pytest.mark.parametrize("reuse", [1, 0])
@pytest.mark.parametrize("m,n,k,opts", [(1000, 1000, 1000, ""), (1536, 1280, 4096, ""), (333, 136, 72, ""),
                                        (696, 904, 520, "matmul_persistent=0 tile=\"128x256\""),
                                        (1000, 1000, 1000, "matmul_cluster=2 matmul_persistent=0"),
                                        (200, 264, 1000, "matmul_persistent=0 sms=5")])
def test_smem_reuse(reuse, m, n, k, opts):
    """The epilogue staging in the operand slots' bytes (sched.release + sched-alias-smem's
    barrier of the consumers) and in bytes of its own give the same results: two outputs of
    different element types, ragged tiles, the wide tile, 2-CTA clusters (the peer multicasts
    into this CTA's slots), many K-slices."""
    torch = _torch()
    a, b, ref = _operands(torch, m, n, k, False, False, "bf16")
    pipe = _pipe(f"matmul_smem_reuse={reuse} {opts}")
    f = api.compile(TWO_OUTPUTS.format(m=m, n=n, k=k), pipeline=pipe)
    assert (" smem_reuse=1" in f.ir("sched")) == bool(reuse)
    c, o = f(a, b)
    assert _rel(c, ref) < 5e-3
    assert _rel(o, torch.relu(ref)) < TOL["bf16"]


@pytest.mark.parametrize("m,n,k,opts", [(300, 100, 64, ""), (517, 1001, 200, "sms=7"), (130, 50257, 64, ""),
                                        (333, 33, 72, "matmul_pingpong=1 sms=3"), (1000, 999, 96, "matmul_cluster=2 sms=6")])
@pytest.mark.parametrize("store", ["auto", "direct"])
def test_unaligned_rows(m, n, k, opts, store):
    """Rows that are not a multiple of 16 bytes (100 bf16: 200 bytes; a 50257-word LM head) cannot
    be TMA-stored: the heuristic stages them and the threads store rows (`store=rows`), or
    st.global from the registers when forced; both match, the ragged edges included."""
    torch = _torch()
    a, b, ref = _operands(torch, m, n, k, False, True, "bf16")
    f = api.compile(matmul_text(m, n, k, tb=True, out="bf16"), pipeline=_pipe(f"matmul_store={store} {opts}"))
    assert f" store={'rows' if store == 'auto' else store}" in f.ir("sched")
    assert _rel(f(a, b), ref) < 5e-3


def test_gated_mlp():
    torch = _torch()
    x, w1, w2 = _rand(torch, (300, 512), "bf16"), _rand(torch, (512, 384), "bf16", 0.05), _rand(torch, (512, 384), "bf16", 0.05)
    got = api.compile(GATED)(x, w1, w2)
    g, u = x.float() @ w1.float(), x.float() @ w2.float()
    assert _rel(got, torch.nn.functional.silu(g) * u) < 2e-2


def test_sass_has_hgmma():
    from fuser.lowering.target.ptx import assemble_ptx, find_ptxas
    tool = shutil.which("cuobjdump") or shutil.which("nvdisasm")
    if tool is None or find_ptxas() is None:
        pytest.skip("no cuobjdump/nvdisasm or ptxas")
    from fuser.driver import compile_fusion
    ptx = compile_fusion(matmul_text(512, 512, 512)).ptx
    cubin = assemble_ptx(ptx, "sm_90a")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        open(path, "wb").write(cubin)
        cmd = [tool, "-sass", path] if tool.endswith("cuobjdump") else [tool, path]
        sass = subprocess.run(cmd, capture_output=True, text=True).stdout
    assert "HGMMA" in sass, sass[:2000]
    assert "UTMALDG" in sass


# ------------------------------------------------------------------------- timing


def bench() -> None:
    """`--bench [VARIANTS]`: the four large shapes and the two fused epilogues of fuser-bench, each
    compiled with the heuristic and with every comma-separated variant (a tile like 128x128, or
    convert-fusion-to-sched options like `matmul_persistent=0`), timed against torch eager."""
    import torch
    import torch.nn.functional as tF
    from triton.testing import do_bench

    from fuser.tools.bench import matmul as workload
    variants = [""] + (sys.argv[sys.argv.index("--bench") + 1].split(",")
                       if len(sys.argv) > sys.argv.index("--bench") + 1 else [])
    rows = []
    cases = [("none", (8192, 8192, 8192)), ("none", (4096, 4096, 4096)), ("none", (2048, 2048, 8192)),
             ("none", (16384, 16384, 1024)), ("bias_relu", (8192, 8192, 8192)), ("bias_gelu", (4096, 4096, 4096))]
    for epi, (m, n, k) in cases:
        text = workload(epi, (m, n, k), (m, n, k)).mlir((m, n, k), "bf16")
        a = _rand(torch, (m, k), "bf16", 1 / k ** 0.5)
        b = _rand(torch, (k, n), "bf16")
        args = [a, b] + ([] if epi == "none" else [_rand(torch, (n,), "bf16")])

        def eager(a, b, *bias):
            c = a @ b
            if epi == "none":
                return c
            return torch.relu(c + bias[0]) if epi == "bias_relu" else tF.gelu(c + bias[0], approximate="tanh")
        ref = eager(*[x.float() for x in args])
        t_t = do_bench(lambda: eager(*args), warmup=50, rep=300, return_mode="median")
        fl = 2 * m * n * k
        for v in variants:
            opt = "" if not v else (f"{{{v}}}" if "=" in v else f'{{tile="{v}"}}')
            pipe = f"canonicalize,fusion-segment,convert-fusion-to-sched{opt},sched-flush-wgmma,sched-alias-smem,cse,convert-sched-to-nvvm,cse"
            k_ = api.compile(text, pipeline=pipe)
            err = _rel(k_(*args), ref)
            t_f = do_bench(lambda: k_(*args), warmup=50, rep=300, return_mode="median")
            rows.append((f"{epi} {m}x{n}x{k}", v or "auto", fl / t_f / 1e9, fl / t_t / 1e9, t_t / t_f, err))
    print(f"{'workload':>24} {'variant':>20} {'fuser TF/s':>11} {'eager TF/s':>11} {'ratio':>6} {'relerr':>8}")
    for r in rows:
        print(f"{r[0]:>24} {r[1]:>20} {r[2]:11.1f} {r[3]:11.1f} {r[4]:6.3f} {r[5]:8.1e}")


if __name__ == "__main__" and "--bench" in sys.argv:
    bench()


@pytest.mark.parametrize("b, s, h, f", [(4, 96, 256, 512), (3, 50, 128, 384)])
def test_linear_layers_on_3d_activations(b, s, h, f):
    """A transformer MLP written on [batch, seq, hidden] tensors: reshapes to 2-D around each
    matmul, bias, GELU and the residual add in 3-D. fusion-sink-reshapes brings the elementwise
    ops into the matmuls' epilogues (the second matmul's operand is written by the first's
    epilogue through its segment_set): two kernels, against the PyTorch ops in f32."""
    torch = _torch()
    fb = api.FusionBuilder("mlp3d")
    with fb:
        x = fb.input((b * s, h), "bf16")  # (a reshape of an input in front of a matmul is a copy kernel)
        w1, b1 = fb.input((h, f), "bf16"), fb.input((f,), "bf16")
        w2, b2 = fb.input((f, h), "bf16"), fb.input((h,), "bf16")
        y = api.matmul(x, w1)
        y = api.cast(api.add(y, api.broadcast(api.cast(b1, "f32"), (b * s, f), [0])), "bf16")
        g = api.gelu(api.reshape(y, (b, s, f)), approximate="tanh")
        z = api.matmul(api.segment_set(api.reshape(g, (b * s, f))), w2)
        z = api.cast(api.add(z, api.broadcast(api.cast(b2, "f32"), (b * s, h), [0])), "bf16")
        out = api.add(api.reshape(z, (b, s, h)), api.reshape(x, (b, s, h)))
        # returned as 2-D (as the PyTorch backend does): an output that is a reshape of an
        # epilogue value would take a kernel of its own
        fb.output(api.reshape(out, (b * s, h)), api.reshape(g, (b * s, f)))
    k = api.compile(fb)
    assert k.ir("sched").count("sched.kernel @") == 2, k.ir("sched")
    ins = [_rand(torch, (b * s, h), "bf16"), _rand(torch, (h, f), "bf16", 0.1), _rand(torch, (f,), "bf16"),
           _rand(torch, (f, h), "bf16", 0.1), _rand(torch, (h,), "bf16")]
    got_out, got_g = k(*ins)
    xf, w1f, b1f, w2f, b2f = (t.float() for t in ins)
    yf = (xf @ w1f + b1f).bfloat16().float()
    gf = torch.nn.functional.gelu(yf, approximate="tanh").reshape(b, s, f)
    zf = (gf.bfloat16().float().reshape(b * s, f) @ w2f + b2f).bfloat16().float()
    assert _rel(got_g, gf.reshape(b * s, f)) < TOL["bf16"]
    assert _rel(got_out, zf + xf) < TOL["bf16"]


@pytest.mark.parametrize("dt", ["f8E4M3FN", "f8E5M2"])
@pytest.mark.parametrize("m,n,k,opts", [(200, 136, 384, ""), (300, 200, 640, "sms=5"), (1024, 1024, 4096, ""),
                                        (517, 1001, 256, "matmul_persistent=1 sms=7"), (256, 384, 1024, "matmul_cluster=2")])
def test_fp8_matmul(dt, m, n, k, opts):
    """FP8 operands (A [M, K], B stored [N, K]) with a bias epilogue and a bf16 output, against the
    float64 product of the same FP8 values: ragged tiles, a persistent grid, unaligned output rows
    (the rows store) and 2-CTA clusters."""
    torch = _torch()
    td = {"f8E4M3FN": torch.float8_e4m3fn, "f8E5M2": torch.float8_e5m2}[dt]
    a = torch.randn(m, k, device="cuda").to(td)
    b = torch.randn(n, k, device="cuda").to(td)
    bias = torch.randn(n, device="cuda")
    f = api.compile(FP8_BIAS.format(m=m, n=n, k=k, dt=dt), pipeline=_pipe(opts))
    got = f(a, b, bias)
    ref = a.double() @ b.double().t() + bias.double()
    assert _rel(got, ref) < TOL["bf16"]
