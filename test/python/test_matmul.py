"""The Hopper matmul without a GPU: heuristics, schedules, PTX that ptxas accepts for sm_90a,
the one wgmma.wait_group between the main loop and the epilogue, and scheduler errors."""

from __future__ import annotations

import re

import pytest

from fuser.lowering.conversion.fusion_to_sched import ScheduleError
from fuser.lowering.heuristics.matmul import matmul_params
from fuser.lowering.target.ptx import PtxasError, assemble_ptx, find_ptxas
from fuser.dialects.ir import parse_module
from fuser.passes.pipeline import build_pipeline, run_passes


def matmul_text(m, n, k, ta=False, tb=False, dt="bf16", out="f32", epilogue="", extra_args=""):
    sa = f"{k}x{m}" if ta else f"{m}x{k}"
    sb = f"{n}x{k}" if tb else f"{k}x{n}"
    flags = (" transpose_a" if ta else "") + (" transpose_b" if tb else "")
    t = f"tensor<{m}x{n}x{out}>"
    body = epilogue or f"  func.return %c : {t}"
    return f"""func.func @mm(%a: tensor<{sa}x{dt}>, %b: tensor<{sb}x{dt}>{extra_args}) -> {t} {{
  %c = fusion.matmul %a, %b{flags} : tensor<{sa}x{dt}>, tensor<{sb}x{dt}> -> {t}
{body}
}}"""


GATED = """func.func @mlp(%x: tensor<300x512xbf16>, %w1: tensor<512x384xbf16>, %w2: tensor<512x384xbf16>) -> tensor<300x384xbf16> {
  %g = fusion.matmul %x, %w1 : tensor<300x512xbf16>, tensor<512x384xbf16> -> tensor<300x384xf32>
  %u = fusion.matmul %x, %w2 : tensor<300x512xbf16>, tensor<512x384xbf16> -> tensor<300x384xf32>
  %s = fusion.silu %g : tensor<300x384xf32>
  %p = fusion.mul %s, %u : tensor<300x384xf32>
  %o = fusion.cast %p : tensor<300x384xf32> to tensor<300x384xbf16>
  func.return %o : tensor<300x384xbf16>
}"""


def lower(text, first="fusion-segment,convert-fusion-to-sched", ptx=True):
    """(sched-level IR after `first`, PTX or None)."""
    from fuser.lowering.target.ptx import module_to_ptx
    from fuser.dialects.ir import print_module
    mod = parse_module(text, "<test>")
    run_passes(build_pipeline(first), mod)
    sched_ir = print_module(mod)
    if not ptx:
        return sched_ir, None
    run_passes(build_pipeline("sched-flush-wgmma,sched-alias-smem,cse,convert-sched-to-nvvm,cse"), mod)
    return sched_ir, module_to_ptx(mod)


def test_epilogue_plan():
    """Reuse only where it buys stages (never with today's tiles: 128x128 has its 6 slots either
    way), never in a persistent kernel, forced only where allowed."""
    p = matmul_params(1000, 1000, 1000)
    assert (p.stages, p.smem_reuse) == (6, False)
    assert p.plan == "direct 6 stages, staged 6, staged+reuse 6: staged"
    p = matmul_params(1000, 1000, 1000, reuse=1)
    assert (p.stages, p.smem_reuse) == (6, True) and p.plan.endswith("staged+reuse (forced)")
    p = matmul_params(8192, 8192, 8192)  # persistent 128x256: 4 stages either way, and no reuse
    assert not p.smem_reuse and p.plan.endswith("staged (persistent: the producer loads the next tile into "
                                                "the slots during the epilogue)")
    assert not matmul_params(1000, 1000, 1000, persistent=1).smem_reuse
    assert not matmul_params(1000, 1000, 1000, store="direct").smem_reuse
    p = matmul_params(1000, 1000, 1000, stages=7)  # 7 forced stages fit only with the reuse
    assert p.smem_reuse and p.stages == 7
    with pytest.raises(ValueError, match="exceed"):
        matmul_params(1000, 1000, 1000, stages=7, reuse=0)
    with pytest.raises(ValueError, match="matmul_smem_reuse=1: persistent"):
        matmul_params(8192, 8192, 8192, reuse=1)
    with pytest.raises(ValueError, match=r"matmul_smem_reuse=1: it needs a staged epilogue \(TMA or rows stores\)"):
        matmul_params(1000, 1000, 1000, store="direct", reuse=1)
    with pytest.raises(ValueError, match="matmul_smem_reuse=1: persistent"):
        matmul_params(1000, 1000, 1000, pingpong=1, reuse=1)
    with pytest.raises(ValueError, match="must be -1"):
        matmul_params(1000, 1000, 1000, reuse=2)


def test_params_heuristic():
    assert (matmul_params(8192, 8192, 8192).bm, matmul_params(8192, 8192, 8192).bn) == (128, 256)
    p = matmul_params(1000, 1000, 1000)
    # 128x128 takes 6 slots (7 fit without staging but measured slower), the staging its own bytes
    assert (p.bm, p.bn) == (128, 128) and p.stages == 6 and p.tma_store and not p.smem_reuse
    assert matmul_params(1000, 1000, 1000, store="direct").stages == 6
    assert not matmul_params(1000, 1000, 1000, store_blocker="rows of 2 bytes").tma_store
    with pytest.raises(ValueError, match="matmul_store=tma: rows of 2 bytes"):
        matmul_params(1000, 1000, 1000, store="tma", store_blocker="rows of 2 bytes")
    with pytest.raises(ValueError, match="must be auto, tma, rows or direct"):
        matmul_params(1000, 1000, 1000, store="smem")
    # unaligned rows: staged and stored a row at a time, with the staging's bytes budgeted; a type
    # the staging does not take, or split-K partials, go direct
    p = matmul_params(1000, 1001, 1000, store_blocker="rows of 2002 bytes", rows_blocker="")
    assert p.store == "rows" and p.staged and not p.tma_store and p.stages == 6 and "staged" in p.plan
    assert matmul_params(1000, 1001, 1000, store_blocker="not f32").store == "direct"
    assert matmul_params(1000, 1001, 1000, store_blocker="rows", rows_blocker="", splits=2).store == "direct"
    with pytest.raises(ValueError, match="matmul_store=rows: split-K partials take TMA or direct stores"):
        matmul_params(1000, 1001, 1000, store="rows", store_blocker="rows", rows_blocker="", splits=2)
    assert matmul_params(8192, 8192, 8192).stages == 4
    assert matmul_params(4096, 128, 4096).bn == 128
    assert (matmul_params(512, 512, 512, n_b=2).bm, matmul_params(512, 512, 512, n_b=2).stages) == (128, 4)
    assert matmul_params(64, 64, 64, tile=(256, 128), stages=3).stages == 3
    with pytest.raises(ValueError):
        matmul_params(64, 64, 64, tile=(64, 64))
    with pytest.raises(ValueError):
        matmul_params(64, 64, 64, tile=(128, 256), stages=6)


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("tile", ["128x128", "128x256", "256x128"])
def test_layouts_assemble(ta, tb, tile):
    if find_ptxas() is None:
        pytest.skip("no ptxas")
    sched_ir, ptx = lower(matmul_text(200, 264, 136, ta, tb),
                          f"fusion-segment,convert-fusion-to-sched{{tile=\"{tile}\"}}")
    assert "wgmma.mma_async.sync.aligned.m64n%sk16.f32.bf16.bf16" % tile.split("x")[1] in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 232" in ptx
    # one flush after the main loop
    assert len(re.findall(r"wgmma\.wait_group\.sync\.aligned\s+0;", ptx)) == 1
    assemble_ptx(ptx, "sm_90a")


def test_gated_mlp_one_wait():
    """silu(x @ W1) * (x @ W2): both wgmmas in one main loop, one wait before the epilogue."""
    sched_ir, ptx = lower(GATED)
    assert sched_ir.count("sched.kernel") == 1
    assert sched_ir.count("sched.wgmma.mma_async") == 8  # 4 k-steps x 2 operands B
    # the main loop ends with `wait_group 1` (slot release); after it, exactly one wait_group
    body = ptx[ptx.index(".entry"):]
    waits = [m.start() for m in re.finditer(r"wgmma\.wait_group\.sync\.aligned", body)]
    last_mma = body.rindex("wgmma.mma_async")
    after_loop = [w for w in waits if w > last_mma]
    assert len(after_loop) == 2  # wait_group 1 in the loop, then the single flush
    assert re.search(r"wgmma\.wait_group\.sync\.aligned\s+0;", body[after_loop[1]:after_loop[1] + 60])
    if find_ptxas() is not None:
        assemble_ptx(ptx, "sm_90a")


def test_result_and_epilogue_outputs():
    text = matmul_text(256, 256, 64, out="f32", extra_args=", %bias: tensor<256xf32>", epilogue="""\
  %bb = fusion.broadcast %bias dims [0] : tensor<256xf32> to tensor<256x256xf32>
  %d = fusion.add %c, %bb : tensor<256x256xf32>
  %r = fusion.relu %d : tensor<256x256xf32>
  %h = fusion.cast %r : tensor<256x256xf32> to tensor<256x256xf16>
  func.return %c, %h : tensor<256x256xf32>, tensor<256x256xf16>""").replace(
        "-> tensor<256x256xf32> {", "-> (tensor<256x256xf32>, tensor<256x256xf16>) {", 1)
    sched_ir, _ = lower(text, ptx=False)
    assert sched_ir.count("sched.kernel") == 1  # matmul + epilogue in one kernel
    assert "vector<2xf16>" in sched_ir and "vector<2xf32>" in sched_ir


@pytest.mark.parametrize("text,msg", [
    (matmul_text(64, 64, 64, dt="f32"), "operands are f32; the Hopper matmul takes bf16, f16, f8E4M3FN or f8E5M2"),
    (matmul_text(64, 64, 60), "TMA needs a multiple of 16 bytes"),
])
def test_errors(text, msg):
    with pytest.raises(Exception) as err:
        lower(text, ptx=False)
    assert msg in str(err.value)


def test_bad_tile_option():
    with pytest.raises(Exception) as err:
        lower(matmul_text(64, 64, 64), 'fusion-segment,convert-fusion-to-sched{tile="64x64"}', ptx=False)
    assert "tile 64x64 is not one of" in str(err.value)


def test_params_persistent():
    p = matmul_params(8192, 8192, 8192)
    assert p.persistent and p.grid == 132  # 2048 tiles: a persistent grid of one CTA per SM
    p = matmul_params(2048, 2048, 8192)
    assert not p.persistent and p.grid == 128  # one wave: one CTA per tile
    assert matmul_params(16384, 16384, 1024, persistent=0).grid == 8192
    p = matmul_params(256, 256, 64, persistent=1)
    assert p.persistent and p.grid == 4  # 2x2 tiles of 128x128: never more CTAs than tiles
    assert matmul_params(8192, 8192, 8192, sms=100).grid == 100


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("persistent", [0, 1])
def test_layout_descriptors(ta, tb, persistent):
    """The wgmma transpose flags follow the operand layouts on both grids (an N-major B, the
    default [K, N] layout, is `trans_b`; an M-major A, stored [K, M], is `trans_a`)."""
    sched_ir, _ = lower(matmul_text(200, 264, 136, ta, tb),
                        f"fusion-segment,convert-fusion-to-sched{{matmul_persistent={persistent} sms=2}}", ptx=False)
    mmas = [ln for ln in sched_ir.splitlines() if "sched.wgmma.mma_async" in ln]
    assert mmas and all(("trans_b" in ln) == (not tb) and ("trans_a" in ln) == ta for ln in mmas)
    assert f"persistent={persistent}" in sched_ir


@pytest.mark.parametrize("text", [matmul_text(696, 904, 520, out="bf16"), GATED.replace("300x", "600x")])
def test_persistent_one_wait_per_tile(text):
    """Forced persistent grid: the tile loop holds the K loop, exactly one wait_group 0 (per
    tile, inside the tile loop) after the last mma, and ptxas accepts it with no spills."""
    sched_ir, ptx = lower(text, "fusion-segment,convert-fusion-to-sched{matmul_persistent=1 sms=3}")
    assert "persistent=1 grid=3" in sched_ir and "grid [3, 1, 1]" in sched_ir
    body = ptx[ptx.index(".entry"):]
    zero = [m.start() for m in re.finditer(r"wgmma\.wait_group\.sync\.aligned\s+0;", body)]
    assert len(zero) == 1 and zero[0] > body.rindex("wgmma.mma_async")
    if find_ptxas() is not None:
        assemble_ptx(ptx, "sm_90a")


def test_params_pingpong():
    p = matmul_params(8192, 8192, 8192)
    assert not p.pingpong  # the heuristic keeps the cooperative kernel (measured faster)
    p = matmul_params(8192, 8192, 8192, pingpong=1)
    assert p.pingpong and p.persistent and (p.bm, p.bn) == (128, 128) and p.grid == 132
    assert matmul_params(696, 904, 520, tile=(64, 256), pingpong=1, store="direct").stages == 5
    assert matmul_params(696, 904, 520, tile=(64, 256), pingpong=1).stages == 4  # 32 KB of TMA-store staging
    assert (matmul_params(512, 512, 512, n_b=2, pingpong=1).bm, matmul_params(512, 512, 512, n_b=2, pingpong=1).bn) == (64, 128)
    with pytest.raises(ValueError):
        matmul_params(512, 512, 512, tile=(128, 256), pingpong=1)  # 256 accumulators a thread
    with pytest.raises(ValueError):
        matmul_params(512, 512, 512, n_b=2, tile=(128, 128), pingpong=1)


def _ptxas_info(ptx):
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        open(f"{d}/k.ptx", "w").write(ptx)
        r = subprocess.run([find_ptxas(), "-arch=sm_90a", "-O3", "-v", f"{d}/k.ptx", "-o", f"{d}/k.cubin"],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stderr + r.stdout


@pytest.mark.parametrize("text,opts", [
    (matmul_text(696, 904, 520, out="bf16"), "matmul_pingpong=1 sms=3"),
    (matmul_text(696, 904, 520, True, True, out="bf16"), 'matmul_pingpong=1 sms=3 tile="64x256"'),
    (GATED.replace("300x", "600x"), "matmul_pingpong=1 sms=2"),
])
def test_pingpong_assembles(text, opts):
    """Ping-pong: the turn barriers are in the PTX, exactly one wait_group 0 (after the last mma),
    and ptxas takes it with no spills (setmaxnreg: producer 40, consumers 232)."""
    sched_ir, ptx = lower(text, f"fusion-segment,convert-fusion-to-sched{{{opts}}}")
    assert "pingpong=1" in sched_ir
    body = ptx[ptx.index(".entry"):]
    zero = [m.start() for m in re.finditer(r"wgmma\.wait_group\.sync\.aligned\s+0;", body)]
    assert len(zero) == 1 and zero[0] > body.rindex("wgmma.mma_async")
    for turn in (r"bar\.sync\s+1, 256;", r"bar\.sync\s+2, 256;", r"bar\.arrive\s+1, 256;"):
        assert re.search(turn, body), turn
    assert "setmaxnreg.dec.sync.aligned.u32 40" in body and "setmaxnreg.inc.sync.aligned.u32 232" in body
    if find_ptxas() is not None:
        info = _ptxas_info(ptx)
        assert "0 bytes spill stores, 0 bytes spill loads" in info, info


# Every layout with every tile, and the persistent grid alternating so that each tile and each
# layout meets both grids: every pair of settings, in half the 24 full combinations' time.
CLUSTER_CASES = [(ta, tb, tile, (ta + tb + k) % 2) for k, tile in enumerate(["128x128", "128x256", "256x128"])
                 for ta in (False, True) for tb in (False, True)]


@pytest.mark.parametrize("ta,tb,tile,persistent", CLUSTER_CASES)
def test_cluster_assembles(ta, tb, tile, persistent):
    """2-CTA clusters with B multicast (matmul_cluster=2): ptxas accepts the kernel for every
    layout and tile; 328 rows are 3 tile rows at 128 (one padding row) and 2 at 256."""
    if find_ptxas() is None:
        pytest.skip("no ptxas")
    sched_ir, ptx = lower(matmul_text(328, 264, 136, ta, tb),
                          f'fusion-segment,convert-fusion-to-sched{{tile="{tile}" matmul_cluster=2 matmul_persistent={persistent} sms=5}}')
    assert "cluster=2" in sched_ir and "cluster [2, 1, 1]" in sched_ir
    assert ".reqnctapercluster 2, 1, 1" in ptx
    assert "bytes.multicast::cluster" in ptx and "mapa.shared::cluster.u32" in ptx
    assert "mbarrier.arrive.shared::cluster.b64 _, [remote];" in ptx
    assert ptx.count("barrier.cluster.arrive;") == 2 and "fence.mbarrier_init.release.cluster;" in ptx
    assemble_ptx(ptx, "sm_90a")


def test_cluster_params():
    from fuser.lowering.heuristics.matmul import cluster_choice
    assert matmul_params(8192, 8192, 8192).cluster == 1  # heuristic: off
    p = matmul_params(8192, 8192, 8192, cluster=2)
    assert (p.cluster, p.grid, p.persistent) == (2, 132, True)
    p = matmul_params(696, 904, 520, sms=5, tile=(128, 256), persistent=1, cluster=2)
    assert p.grid == 4  # even
    p = matmul_params(333, 136, 72, cluster=2, persistent=0)
    assert p.grid == 8 and (p.bm, p.bn) == (128, 128)  # 3 tile rows padded to 4, 2 columns
    assert cluster_choice(1, 1, 1, 128, 128, 1) == 1
    with pytest.raises(ValueError):
        matmul_params(64, 64, 64, cluster=4)


FP8_BIAS = """func.func @mm8(%a: tensor<{m}x{k}x{dt}>, %b: tensor<{n}x{k}x{dt}>, %bias: tensor<{n}xf32>) -> tensor<{m}x{n}xbf16> {{
  %c = fusion.matmul %a, %b transpose_b : tensor<{m}x{k}x{dt}>, tensor<{n}x{k}x{dt}> -> tensor<{m}x{n}xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<{n}xf32> to tensor<{m}x{n}xf32>
  %s = fusion.add %c, %bb : tensor<{m}x{n}xf32>
  %o = fusion.cast %s : tensor<{m}x{n}xf32> to tensor<{m}x{n}xbf16>
  func.return %o : tensor<{m}x{n}xbf16>
}}"""


@pytest.mark.parametrize("dt,wg", [("f8E4M3FN", "e4m3"), ("f8E5M2", "e5m2")])
def test_fp8_matmul_lowers_and_assembles(dt, wg):
    """An FP8 matmul (A [M, K], B stored [N, K]) with a bias epilogue: the reference interpreter
    multiplies the FP8 values exactly (in float64), and the Hopper kernel keeps the bf16 byte
    geometry (128-element K-slices in 128-byte TMA boxes, k32 wgmmas), down to PTX that ptxas
    assembles."""
    import ml_dtypes
    import numpy as np

    from fuser import api
    from fuser.lowering.target.ptx import assemble_ptx, find_ptxas

    m, n, k = 200, 136, 384
    text = FP8_BIAS.format(m=m, n=n, k=k, dt=dt)
    np_t = {"f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}[dt]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np_t)
    b = rng.standard_normal((n, k)).astype(np_t)
    bias = rng.standard_normal(n).astype(np.float32)
    got = api.compile(text).reference(a, b, bias)
    want = (a.astype(np.float64) @ b.astype(np.float64).T + bias).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(np.asarray(got).astype(np.float64), want.astype(np.float64))
    sched_ir, ptx = lower(text)
    assert f"k32 {wg} " in sched_ir and "k16" not in sched_ir
    assert f"memref<{m}x{k}x{dt}>, box [128, 128], swizzle 128>" in sched_ir
    assert f"k32.f32.{wg}.{wg} " in ptx and ", p, 1, 1;" in ptx
    if find_ptxas() is not None:
        assert assemble_ptx(ptx, "sm_90a")[:4] == b"\x7fELF"
