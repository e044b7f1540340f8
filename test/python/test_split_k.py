"""Split-K without a GPU: fusion-split-k keeps the function's meaning, its heuristic, the split
matmul's schedule and PTX, and the one reduction kernel that sums the partials with the epilogue.

- Meaning: the reference interpreter runs the function before and after the pass (float64, so
  casts do not round and only the summation order differs).
- Schedule: a small interpreter runs the index arithmetic of the generated sched.kernel for the
  producer thread and for consumer threads of every CTA, and checks what the GPU would do: the
  circular buffer's slot/phase counter runs on without a gap across work items (also when the
  last split is shorter), every (tile, K-slice) of every split is loaded exactly once, and split
  z stores only into rows z*M .. z*M + M-1 of the partials.
- PTX: ptxas accepts the split kernels (auto, ragged, persistent, ping-pong, clusters).

The decisions' text is pinned by test/lit/fusion-split-k; GPU runs are test_split_k_gpu.py.
"""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerAttr, StringAttr

from fuser.dialects import sched
from fuser.lowering.heuristics.reduction import outer_reduction_params
from fuser.lowering.heuristics.matmul import matmul_params
from fuser.lowering.target.ptx import assemble_ptx, find_ptxas
from fuser.dialects.ir import parse_module, print_module
from fuser.passes.pipeline import build_pipeline, run_passes
from fuser.lowering.heuristics.split_k import auto_decision, chunking
from fuser.runtime.reference import reference_from_text
from fuser.passes.named import NAMED_PIPELINES

NAMED_DEFAULT = NAMED_PIPELINES["default"]

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def matmul_fn(m, n, k, ta=False, tb=False, dt="bf16", out="f32", epilogue=False):
    """@mm(a, b[, bias]): a matmul, optionally + bias, gelu(tanh) and a cast to bf16."""
    sa = f"{k}x{m}" if ta else f"{m}x{k}"
    sb = f"{n}x{k}" if tb else f"{k}x{n}"
    flags = (" transpose_a" if ta else "") + (" transpose_b" if tb else "")
    t = f"tensor<{m}x{n}x{out}>"
    if not epilogue:
        return f"""func.func @mm(%a: tensor<{sa}x{dt}>, %b: tensor<{sb}x{dt}>) -> {t} {{
  %c = fusion.matmul %a, %b{flags} : tensor<{sa}x{dt}>, tensor<{sb}x{dt}> -> {t}
  func.return %c : {t}
}}"""
    f = f"tensor<{m}x{n}xf32>"
    return f"""func.func @mm(%a: tensor<{sa}x{dt}>, %b: tensor<{sb}x{dt}>, %bias: tensor<{n}xf32>) -> tensor<{m}x{n}xbf16> {{
  %c = fusion.matmul %a, %b{flags} : tensor<{sa}x{dt}>, tensor<{sb}x{dt}> -> {f}
  %bb = fusion.broadcast %bias dims [0] : tensor<{n}xf32> to {f}
  %d = fusion.add %c, %bb : {f}
  %g = fusion.gelu %d {{approximate = "tanh"}} : {f}
  %o = fusion.cast %g : {f} to tensor<{m}x{n}xbf16>
  func.return %o : tensor<{m}x{n}xbf16>
}}"""


def after(text: str, pipeline: str) -> str:
    mod = parse_module(text, "<test>")
    run_passes(build_pipeline(pipeline), mod)
    return print_module(mod)


def _inputs(fn, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for a in fn.func_op.body.block.args:
        shape = tuple(a.type.get_shape())
        dt = {"bf16": NP["bf16"], "f16": NP["f16"], "f32": NP["f32"]}[str(a.type.element_type)]
        out.append(rng.standard_normal(shape).astype(np.float32).astype(dt))
    return out


# ------------------------------------------------------------------ the rewrite keeps the meaning


@pytest.mark.parametrize("text,pipeline,splits", [
    # auto: one tile, K = 8192 (128 slices): min(132, 128 / 8) = 16 splits of 512
    (matmul_fn(100, 120, 8192), "fusion-split-k", 16),
    # forced factors; K = 1000 is not a multiple of k_chunk: the last partial is shorter
    (matmul_fn(100, 200, 1000), "fusion-split-k{factor=3}", 3),
    (matmul_fn(64, 40, 1000, out="bf16"), "fusion-split-k{factor=4}", 4),
    (matmul_fn(8, 16, 640, out="f16", dt="f16"), "fusion-split-k{factor=6}", 5),
    # every layout, with the bias + gelu + bf16 epilogue reading the sum
    (matmul_fn(96, 80, 2000, epilogue=True), "fusion-split-k{factor=5}", 5),
    (matmul_fn(96, 80, 2000, ta=True, epilogue=True), "fusion-split-k{factor=5}", 5),
    (matmul_fn(96, 80, 2000, tb=True, epilogue=True), "fusion-split-k{factor=5}", 5),
    (matmul_fn(96, 80, 2000, ta=True, tb=True, epilogue=True), "fusion-split-k{factor=5}", 5),
])
def test_rewrite_matches_reference(text, pipeline, splits):
    before = reference_from_text(text)
    rewritten = after(text, pipeline)
    assert f"-> tensor<{splits}x" in rewritten and "fusion.reduce sum" in rewritten
    got_fn = reference_from_text(rewritten)
    ins = _inputs(before)
    want = before(*ins, precision="f64")
    got = got_fn(*ins, precision="f64")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)
    # in native precision the outputs keep their dtypes and agree to the f32 accumulation
    for g, w in zip(got_fn(*ins), before(*ins)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=2e-2, atol=2e-2)


def test_reference_partials():
    """fusion.matmul k_chunk computes each chunk's product (the last one shorter)."""
    text = """func.func @p(%a: tensor<3x200xf32>, %b: tensor<5x200xf32>) -> tensor<4x3x5xf32> {
  %p = fusion.matmul %a, %b transpose_b k_chunk 64 : tensor<3x200xf32>, tensor<5x200xf32> -> tensor<4x3x5xf32>
  func.return %p : tensor<4x3x5xf32>
}"""
    f = reference_from_text(text)
    a, b = _inputs(f)
    (p,) = f(a, b, precision="f64")
    a64, b64 = a.astype(np.float64), b.astype(np.float64).T
    for s, lo in enumerate(range(0, 200, 64)):
        np.testing.assert_allclose(p[s], a64[:, lo:lo + 64] @ b64[lo:lo + 64], rtol=1e-12)


def test_idempotent():
    once = after(matmul_fn(128, 128, 131072), "fusion-split-k")
    assert once.count("fuser.split_k") == 1
    assert after(once, "fusion-split-k") == once


# ------------------------------------------------------------------ the heuristic


@pytest.mark.parametrize("m,n,k,splits,kc", [
    (1024, 1024, 32768, 4, 8192),      # 64 tiles of 128x128; split: 32 of 128x256 x 4
    (512, 512, 65536, 8, 8192),        # 16 tiles x 8 (128x256 would need 16 splits of 4096)
    (256, 4096, 16384, 2, 8192),       # 64 tiles x 2 (128x256 would need 4 splits of 4096)
    (100, 200, 10000, 18, 576),        # 2 tiles; 157 slices / 8 = 19 asked, 9-slice chunks
    (128, 128, 131072, 64, 2048),      # 1 tile: 132 asked (16-slice chunks make 128), halved by the model
    (128, 128, 65536, 64, 1024),       # 1 tile: 128 splits of 8 slices halved to 64 of 16
    (256, 256, 131072, 16, 8192),      # 4 tiles: 33 splits halved to 16
    (8192, 8192, 8192, 1, None),       # 2048 tiles
    (2048, 2048, 8192, 1, None),       # 128 tiles of 128x256 fill the machine
    (128, 128, 2048, 1, None),         # short K
])
def test_auto_decision(m, n, k, splits, kc):
    d = auto_decision(m, n, k)
    assert (d.splits, d.k_chunk) == (splits, kc), d.reason
    if splits > 1:  # one wave: never more work items than SMs; the reason names the scheduler's tile
        p = matmul_params(m, n, kc, splits=splits)
        tiles = math.ceil(m / p.bm) * math.ceil(n / p.bn)
        assert tiles * splits <= 132 and not p.persistent
        assert f"{tiles} tile{'s' if tiles > 1 else ''} of {p.bm}x{p.bn} on 132 SMs" in d.reason
        assert kc % 64 == 0 and kc >= 8 * 64 and math.ceil(k / kc) == splits


def test_chunking():
    assert chunking(1000, 4) == (256, 4)
    assert chunking(640, 6) == (128, 5)       # 10 slices: 2 a split, 5 splits
    assert chunking(131072, 132) == (1024, 128)
    assert chunking(64, 3) == (64, 1)


def test_params_split_items():
    # the tile rule counts work items: 32 tiles of 128x256 x 4 splits make a wave, 32 alone do not
    assert (matmul_params(1024, 1024, 8192, splits=4).bn, matmul_params(1024, 1024, 32768).bn) == (256, 128)
    p = matmul_params(128, 128, 1024, splits=128)
    assert (p.bm, p.bn, p.grid, p.persistent) == (128, 128, 128, False)
    p = matmul_params(128, 128, 1024, splits=200)
    assert (p.grid, p.persistent) == (132, True)  # more work items than SMs: persistent
    assert matmul_params(128, 128, 1024, store="direct", splits=2).stages == 6  # 128x128 takes at most 6 slots
    assert matmul_params(128, 128, 256, splits=4).stages == 4  # no more slots than one split's slices
    assert matmul_params(333, 136, 256, cluster=2, persistent=0, splits=3).grid == 24  # 4 x 2 tiles, 3 splits


# ------------------------------------------------------------------ the schedule, simulated

_INT_OPS = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
    "arith.divui": lambda a, b: a // b, "arith.remui": lambda a, b: a % b, "arith.minui": min,
    "arith.maxui": max, "arith.andi": lambda a, b: a and b, "arith.xori": lambda a, b: a ^ b,
}
_CMP = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 6: lambda a, b: a < b, 7: lambda a, b: a <= b,
        8: lambda a, b: a > b, 9: lambda a, b: a >= b}


class _Thread:
    """Runs one thread of a sched.kernel as far as its index arithmetic goes: integers and
    branches are evaluated, everything else yields None; barrier waits, TMA loads and stores
    are recorded."""

    def __init__(self, bid: int, tid: int):
        self.env: dict = {}
        self.bid, self.tid = bid, tid
        self.events: list = []

    def v(self, x):
        return self.env.get(x)

    def run(self, block) -> None:
        for op in block.ops:
            self.step(op)

    def step(self, op) -> None:
        name = op.name
        if name == "arith.constant":
            val = op.value
            self.env[op.result] = val.value.data if isinstance(val, IntegerAttr) else None
        elif name in _INT_OPS:
            a, b = self.v(op.lhs), self.v(op.rhs)
            self.env[op.result] = None if a is None or b is None else _INT_OPS[name](a, b)
        elif name == "arith.cmpi":
            a, b = self.v(op.lhs), self.v(op.rhs)
            self.env[op.result] = None if a is None or b is None else _CMP[op.predicate.value.data](a, b)
        elif isinstance(op, sched.ThreadIdxOp):
            self.env[op.result] = self.tid
        elif isinstance(op, sched.BlockIdxOp):
            self.env[op.result] = self.bid
        elif name == "scf.if":
            c = self.v(op.cond)
            assert c is not None, "a branch on a value the simulation does not know"
            region = op.true_region if c else op.false_region
            if region.blocks:
                self.run(region.blocks[0])
        elif name == "scf.for":
            lb, ub, st = self.v(op.lb), self.v(op.ub), self.v(op.step)
            body = op.body.blocks[0]
            for i in range(lb, ub, st):
                self.env[body.args[0]] = i
                self.run(body)
        elif isinstance(op, sched.MBarrierWaitOp):
            self.events.append(("wait", op.operands[0], self.v(op.operands[1]), self.v(op.operands[2])))
        elif isinstance(op, sched.TmaLoadOp):
            self.events.append(("tma", op.operands[0], [self.v(x) for x in op.operands[1:3]]))
        elif isinstance(op, sched.StoreOp):
            self.events.append(("store", op.buffer, [self.v(i) for i in op.indices]))
        else:
            for r in op.results:
                self.env[r] = None


def _kernel(text: str, opts: str):
    mod = parse_module(text, "<test>")
    run_passes(build_pipeline(f"fusion-segment,convert-fusion-to-sched{{{opts}}}"), mod)
    k = next(o for o in mod.walk() if isinstance(o, sched.KernelOp) and "fuser.matmul" in o.attributes)
    info = dict(kv.split("=") for kv in k.attributes["fuser.matmul"].data.split())
    return k, {key: int(val) if val.isdigit() else val for key, val in info.items()}


def _barriers(k):
    i64_allocs = [o.result for o in k.walk() if isinstance(o, sched.AllocOp)
                  and str(o.result.type.element_type) == "i64"]
    return i64_allocs[0], i64_allocs[1]  # full, empty


def _items(pid: int, grid: int, n_items: int, persistent: bool) -> list[int]:
    return list(range(pid, n_items, grid)) if persistent else [pid]


SPLIT_CASES = [
    # (m, n, k, k_chunk, options): ragged M/N, a last split shorter than the others
    (200, 264, 1000, 384, 'sms=5 tile="128x128"'),             # 6 tiles x 3 splits, persistent grid of 5
    (200, 264, 1000, 384, "matmul_persistent=0"),              # one CTA per work item
    (200, 264, 1000, 256, "sms=4"),                            # 4 splits, the last one ragged in K
    (200, 264, 1000, 384, "matmul_pingpong=1 sms=4"),          # ping-pong consumers
    (328, 264, 1000, 384, "matmul_cluster=2 matmul_persistent=1 sms=4"),  # 2-CTA clusters (padding row)
    (200, 264, 1000, 1024, "sms=5"),                           # k_chunk >= K: S = 1, the plain kernel
]


@pytest.mark.parametrize("m,n,k,kc,opts", SPLIT_CASES)
def test_schedule_simulated(m, n, k, kc, opts):
    s_split = math.ceil(k / kc)
    text = f"""func.func @mm(%a: tensor<{m}x{k}xbf16>, %b: tensor<{k}x{n}xbf16>) -> tensor<{m}x{n}xf32> {{
  %p = fusion.matmul %a, %b k_chunk {kc} : tensor<{m}x{k}xbf16>, tensor<{k}x{n}xbf16> -> tensor<{s_split}x{m}x{n}xf32>
  %s = fusion.reduce sum %p dims [0] : tensor<{s_split}x{m}x{n}xf32> to tensor<{m}x{n}xf32>
  func.return %s : tensor<{m}x{n}xf32>
}}"""
    # direct stores: the simulation follows each thread's stores into the [S*M, N] view (the TMA
    # stores' 3-D coordinates are checked by the lit test and on the GPU)
    k_op, info = _kernel(text, opts + " matmul_store=direct")
    assert info.get("split", 1) == s_split and info.get("k_chunk", kc) == kc
    stages, grid, n_tiles = info["stages"], info["grid"], info["tiles"]
    persistent, pingpong, cluster = info["persistent"] == 1, "pingpong" in info, "cluster" in info
    n_items = n_tiles * s_split
    ktiles, kcs = math.ceil(k / 64), kc // 64
    slices = lambda w: min(kcs, ktiles - (w // n_tiles) * kcs)  # noqa: E731
    full, empty = _barriers(k_op)
    body = k_op.body.blocks[0]
    view = next(o.result for o in k_op.walk() if o.name == "memref.collapse_shape")
    assert list(view.type.get_shape()) == [s_split * m, n]
    loaded: list[tuple] = []
    writes: dict[tuple, int] = {}
    for pid in range(grid):
        items = _items(pid, grid, n_items, persistent)
        total = sum(slices(w) for w in items)
        # the producer: one wait on `empty` per K-slice, slot g % stages at phase g // stages + 1, g = 0, 1, ...
        prod = _Thread(pid, 0)
        prod.run(body)
        waits = [(e[2], e[3]) for e in prod.events if e[0] == "wait" and e[1] is empty]
        assert waits == [(g % stages, g // stages + 1) for g in range(total)], f"CTA {pid}: producer ring"
        a_loads = [e[2] for e in prod.events if e[0] == "tma" and e[1] is body.args[0]]
        b_loads = [e[2] for e in prod.events if e[0] == "tma" and e[1] is body.args[1]]
        per = len(b_loads) // max(1, len(a_loads))
        bm, bn = (int(x) for x in info["tile"].split("x"))
        for j, (m0, k0) in enumerate(a_loads):
            # in a cluster, CTA rank r loads (and multicasts) the B columns from n0 + r * bn/2
            n0 = min(c[1] for c in b_loads[j * per:(j + 1) * per]) - (pid % 2 * bn // 2 if cluster else 0)
            assert b_loads[j * per][0] == k0
            loaded.append((m0, n0, k0))
        # consumers: each waits on `full` for its slices; cooperative warpgroups see every slice
        seen = []
        # the same threads of each warpgroup: lane 0 of warp 0 holds rows 0 and 8 of its
        # 64-row slab (of a ragged tile's: the first rows past M), lane 31 of warp 3 rows 55 and 63
        for tid in (128, 256, 128 + 127, 256 + 127):
            c = _Thread(pid, tid)
            c.run(body)
            cw = [e[2] + stages * e[3] for e in c.events if e[0] == "wait" and e[1] is full]
            if not pingpong:
                assert cw == list(range(total)), f"CTA {pid} thread {tid}: consumer ring"
            elif tid in (128, 256):
                seen += cw
            for e in c.events:
                if e[0] == "store" and e[1] is view:
                    writes[tuple(e[2])] = writes.get(tuple(e[2]), 0) + 1
        if pingpong:  # the two warpgroups split the CTA's slices between them
            assert sorted(seen) == list(range(total)), f"CTA {pid}: ping-pong rings"
    # every (tile, K-slice) of every split loaded exactly once (a cluster's padding row loads
    # real rows it never stores: its m0 is clamped to the last tile row)
    bm, bn = (int(x) for x in info["tile"].split("x"))
    want = sorted((m0, n0, k0) for m0 in range(0, m, bm) for n0 in range(0, n, bn) for k0 in range(0, ktiles * 64, 64))
    got = sorted(loaded)
    if cluster:
        got = sorted(set(got))
    assert got == want
    # one writer per element; split z writes its own rows z*M .. z*M + M-1 only, and the same
    # positions in each
    assert writes and max(writes.values()) == 1
    stored: dict[int, set] = {}
    for row, col in writes:
        stored.setdefault(row // m, set()).add((row % m, col))
    assert sorted(stored) == list(range(s_split))
    assert all(stored[z] == stored[0] for z in stored)


# ------------------------------------------------------------------ the kernels and the PTX


def test_auto_schedule_two_kernels():
    """128x128x131072 + bias + gelu + bf16: the split matmul on 64 CTAs, then one reduction
    kernel that sums the 64 partials and runs the epilogue, storing only the bf16 output."""
    text = matmul_fn(128, 128, 131072, epilogue=True)
    ir = after(text, "to-sched")
    kernels = re.findall(r"sched\.kernel @(\w+)\((.*?)\) grid \[(\d+), 1, 1\] block \[(\d+), (\d+), 1\]", ir)
    assert len(kernels) == 2
    assert kernels[0][2:4] == ("64", "384")
    assert 'fuser.matmul = "tile=128x128 stages=6 persistent=0 grid=64 tiles=1 split=64 k_chunk=2048 store=tma"' in ir
    args1 = kernels[1][1]
    assert "memref<64x128x128xf32>" in args1 and "memref<128x128xbf16>" in args1
    assert "memref<128x128xf32>" not in args1  # the f32 sum is not stored
    assert ir.count("sched.workspace") == 1


def test_sum_epilogue_not_stored():
    """A column sum read only by the pointwise epilogue of its own kernel is not written."""
    text = """func.func @f(%p: tensor<4x256x512xf32>, %bias: tensor<512xf32>) -> tensor<256x512xbf16> {
  %s = fusion.reduce sum %p dims [0] : tensor<4x256x512xf32> to tensor<256x512xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<512xf32> to tensor<256x512xf32>
  %y = fusion.add %s, %bb : tensor<256x512xf32>
  %c = fusion.cast %y : tensor<256x512xf32> to tensor<256x512xbf16>
  func.return %c : tensor<256x512xbf16>
}"""
    ir = after(text, "fusion-segment,convert-fusion-to-sched")
    assert ir.count("sched.kernel") == 1 and "memref<256x512xf32>" not in ir
    # ... but it is when another kernel reads it, or it is an output
    both = text.replace("-> tensor<256x512xbf16> {", "-> (tensor<256x512xbf16>, tensor<256x512xf32>) {").replace(
        "func.return %c : tensor<256x512xbf16>", "func.return %c, %s : tensor<256x512xbf16>, tensor<256x512xf32>")
    assert "memref<256x512xf32>" in after(both, "fusion-segment,convert-fusion-to-sched")
    other = """func.func @f(%p: tensor<4x256x512xf32>, %bias: tensor<512xf32>) -> (tensor<256x512xbf16>, tensor<256xf32>) {
  %s = fusion.reduce sum %p dims [0] : tensor<4x256x512xf32> to tensor<256x512xf32>
  %bb = fusion.broadcast %bias dims [0] : tensor<512xf32> to tensor<256x512xf32>
  %y = fusion.add %s, %bb : tensor<256x512xf32>
  %c = fusion.cast %y : tensor<256x512xf32> to tensor<256x512xbf16>
  %t = fusion.reduce sum %s dims [1] : tensor<256x512xf32> to tensor<256xf32>
  func.return %c, %t : tensor<256x512xbf16>, tensor<256xf32>
}"""
    assert "sched.workspace : memref<256x512xf32>" in after(other, "fusion-segment,convert-fusion-to-sched")


def test_outer_reduction_params_few_rows():
    assert outer_reduction_params(2, 262144, 132) == (128, 2, 1)   # split-K sums of 2 partials
    assert outer_reduction_params(128, 4096, 132) == (16, 16, 1)   # 128 partials of one tile
    assert outer_reduction_params(8, 65536, 132) == (32, 8, 1)
    assert outer_reduction_params(32768, 1024, 132) == (32, 8, 17)  # tall: row chunks, as before


def _assemble(ptx: str) -> None:
    """ptxas takes it, and no kernel spills (the producer warpgroup has 40 registers)."""
    import subprocess
    import tempfile
    if find_ptxas() is None:
        return
    assemble_ptx(ptx, "sm_90a")
    with tempfile.TemporaryDirectory() as d:
        open(f"{d}/k.ptx", "w").write(ptx)
        r = subprocess.run([find_ptxas(), "-arch=sm_90a", "-O3", "-v", f"{d}/k.ptx", "-o", f"{d}/k.cubin"],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    spills = [ln for ln in (r.stderr + r.stdout).splitlines() if "spill" in ln]
    assert spills and all("0 bytes spill stores, 0 bytes spill loads" in ln for ln in spills), spills


@pytest.mark.parametrize("text,pipeline", [
    (matmul_fn(128, 128, 131072, epilogue=True), "default"),
    (matmul_fn(100, 200, 10000, tb=True, out="bf16"), "default"),
    (matmul_fn(200, 264, 1000), "canonicalize,fusion-split-k{factor=3},fusion-segment,convert-fusion-to-sched{sms=5},sched-flush-wgmma,sched-alias-smem,cse,"
                                "convert-sched-to-nvvm,cse"),
    (matmul_fn(200, 264, 1000, tb=True), "canonicalize,fusion-split-k{factor=3},fusion-segment,"
                                         "convert-fusion-to-sched{matmul_pingpong=1 sms=4},sched-flush-wgmma,sched-alias-smem,cse,convert-sched-to-nvvm,cse"),
    (matmul_fn(328, 264, 1000), "canonicalize,fusion-split-k{factor=3},fusion-segment,"
                                "convert-fusion-to-sched{matmul_cluster=2 matmul_persistent=1 sms=4},sched-flush-wgmma,sched-alias-smem,cse,convert-sched-to-nvvm,cse"),
])
def test_split_ptx_assembles(text, pipeline):
    from fuser.lowering.target.ptx import module_to_ptx
    mod = parse_module(text, "<test>")
    run_passes(build_pipeline(pipeline), mod)
    ptx = module_to_ptx(mod)
    assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor" in ptx
    # the matmul kernel stores f32 partials; the reduction kernel reads them
    assert ptx.count(".entry") >= 2
    _assemble(ptx)


def test_kernel_attribute_and_view():
    ir = after(matmul_fn(100, 200, 10000), "to-sched")
    # TMA stores address the [S, M, N] partials in 3-D; no [S*M, N] view
    assert "split=" in ir and "box [1, 64, 32]" in ir and "memref.collapse_shape" not in ir
    m = re.search(r'fuser\.matmul = "([^"]*)"', ir)
    info = dict(kv.split("=") for kv in m.group(1).split())
    assert int(info["grid"]) == int(info["tiles"]) * int(info["split"]) <= 132


def test_scheduler_rejects_unaligned_chunk():
    text = """func.func @f(%a: tensor<128x1000xbf16>, %b: tensor<1000x128xbf16>) -> tensor<10x128x128xf32> {
  %p = fusion.matmul %a, %b k_chunk 100 : tensor<128x1000xbf16>, tensor<1000x128xbf16> -> tensor<10x128x128xf32>
  func.return %p : tensor<10x128x128xf32>
}"""
    with pytest.raises(Exception) as err:
        after(text, "fusion-segment,convert-fusion-to-sched")
    assert "k_chunk must be a multiple of 64" in str(err.value)


def test_pipelines_run_split_k_before_segment():
    """fusion-segment takes the Welford decisions (planning each fusion once), after split-K."""
    from fuser.passes.pipeline import NAMED_PIPELINES
    for name in ("default", "to-sched"):
        assert "fusion-split-k,fusion-segment,convert-fusion-to-sched" in NAMED_PIPELINES[name]
        assert "fusion-translate-welford" not in NAMED_PIPELINES[name]


def test_partials_read_by_pointwise_output():
    """A pointwise output computed from the partials is its own kernel (the split matmul kernel
    stores the partials and nothing else)."""
    text = """func.func @f(%a: tensor<128x4096xbf16>, %b: tensor<4096x128xbf16>) -> (tensor<4x128x128xf32>, tensor<128x128xf32>) {
  %p = fusion.matmul %a, %b k_chunk 1024 : tensor<128x4096xbf16>, tensor<4096x128xbf16> -> tensor<4x128x128xf32>
  %two = fusion.full 2.0 : tensor<4x128x128xf32>
  %q = fusion.mul %p, %two : tensor<4x128x128xf32>
  %s = fusion.reduce sum %p dims [0] : tensor<4x128x128xf32> to tensor<128x128xf32>
  func.return %q, %s : tensor<4x128x128xf32>, tensor<128x128xf32>
}"""
    ir = after(text, "fusion-segment,convert-fusion-to-sched")
    assert ir.count("sched.kernel") == 3 and ir.count("sched.workspace : memref<4x128x128xf32>") == 1


# ------------------------------------------------------------------ the serial strategy


@pytest.mark.parametrize("text,opts", [
    (matmul_fn(100, 120, 8192), "strategy=serial"),
    (matmul_fn(96, 80, 2000, ta=True, epilogue=True), "strategy=serial factor=5"),
    (matmul_fn(8, 16, 640, out="f16", dt="f16"), "strategy=serial factor=6"),
])
def test_serial_rewrite_matches_reference(text, opts):
    """The serial form keeps the result (and its type and uses): the reference interpreter gives
    the same product before and after."""
    before = reference_from_text(text)
    rewritten = after(text, f"fusion-split-k{{{opts}}}")
    assert " serial " in rewritten and "fusion.reduce" not in rewritten
    ins = _inputs(before)
    for g, w in zip(reference_from_text(rewritten)(*ins, precision="f64"), before(*ins, precision="f64")):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("m,n,k,strategy,splits", [
    (1024, 1024, 32768, "two-kernel", 4),
    (512, 512, 65536, "two-kernel", 8),
    (256, 4096, 16384, "serial", 2),      # one turn costs less than the sum kernel (measured 1.04x vs 1.01x)
    (128, 128, 131072, "two-kernel", 64),   # half a wave of splits: 6% faster than 128 (H100, with PDL)
])
def test_auto_strategy(m, n, k, strategy, splits):
    """strategy=auto picks what measured fastest on the H100 (docs/matmul-notes.md)."""
    d = auto_decision(m, n, k, strategies=("two-kernel", "serial"))
    assert (d.strategy, d.splits) == (strategy, splits), d.reason
    assert "model: serial" in d.reason and "two-kernel" in d.reason


def test_serial_program():
    """One launch; the host owns an f32 [M, N] workspace and a kept-zero i32 counter per tile and
    consumer warpgroup; the PTX has the turns and the TMA reductions, and ptxas takes it."""
    from fuser import api
    k_ = api.compile(matmul_fn(200, 256, 4096, epilogue=True),
                     pipeline=NAMED_DEFAULT.replace("fusion-split-k", "fusion-split-k{strategy=serial factor=4}", 1))
    prog = k_.program
    assert len(prog.launches) == 1
    ws = sorted((w.dtype, w.shape, w.zero_init, w.kept_zero) for w in prog.workspaces)
    assert ws == [("f32", (200, 256), False, False), ("i32", (8,), False, True)]  # 4 tiles x 2 warpgroups
    ptx = prog.ptx
    for needle in ("ld.acquire.gpu.global.b32", "st.release.gpu.global.b32", "fence.proxy.async.global",
                   "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group"):
        assert needle in ptx, needle
    _assemble(ptx)


def test_serial_refusals():
    with pytest.raises(Exception, match="strategy=serial: N=130"):
        after(matmul_fn(128, 130, 8192, tb=True), "fusion-split-k{strategy=serial}")
    with pytest.raises(Exception, match="matmul_cluster=2: not built for serial split-K"):
        after(matmul_fn(128, 128, 8192), "fusion-split-k{strategy=serial},fusion-segment,convert-fusion-to-sched{matmul_cluster=2}")


def test_with_split_k():
    from fuser.passes.pipeline import with_split_k
    assert with_split_k("default", "") == "default"
    p = with_split_k("default{sms=66}", "strategy=serial")
    assert "fusion-split-k{strategy=serial}" in p and "convert-fusion-to-sched{sms=66}" in p
    assert with_split_k("canonicalize,fusion-split-k{factor=2}", "strategy=serial") == \
        "canonicalize,fusion-split-k{strategy=serial factor=2}"
    with pytest.raises(ValueError, match="no fusion-split-k"):
        with_split_k("canonicalize", "strategy=serial")
