"""fuser-sanitize: the sanitizer set. A fixed list of small fusions that between them take every
shared-memory and synchronization path the schedulers emit (the matmul epilogue staged in the
operand slots and in bytes of its own, stores straight from the registers, 2-CTA clusters, the persistent and ping-pong grids,
two-kernel split-K with its reduction, serial split-K's turns and bulk reductions, block reductions that share scratch, normalization rows kept in
shared memory, the column-reduction tree, the transpose tiles, a middle-dim reduction split over
blocks, the index maps' clamped reads, the sort networks, the scatters' searches), each compiled and run once by `fuser-run` under
`compute-sanitizer --tool T` for each tool T. It prints one line per case and tool: the
hazards the tool reported and whether the outputs matched the float64 reference.

    python3 -m fuser.tools.sanitize [--tools memcheck,racecheck,synccheck,initcheck] [--cases REGEX]

compute-sanitizer is the one on PATH, else /usr/local/cuda/bin/compute-sanitizer, unless
`--sanitizer PATH` names another. It starts the Python it is given with a clean view of the GPU;
this tool hands it `--python` (default /usr/bin/python3.12) and a PYTHONPATH that holds fuser,
the carried wheels and the site-packages of the Python running this tool (numpy, cuda.bindings).
Exit status 0 when every run reported no hazard and matched, 1 when one did not, 2 for a bad
option (a --cases pattern that matches no case included) or a missing compute-sanitizer or Python.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from fuser.passes.named import NAMED_PIPELINES

MATMUL_TWO_OUTPUTS = """func.func @mm(%a: tensor<{m}x{k}x{dt}>, %b: tensor<{k}x{n}x{dt}>) -> (tensor<{m}x{n}xf32>, tensor<{m}x{n}x{dt}>) {{
  %c = fusion.matmul %a, %b : tensor<{m}x{k}x{dt}>, tensor<{k}x{n}x{dt}> -> tensor<{m}x{n}xf32>
  %r = fusion.relu %c : tensor<{m}x{n}xf32>
  %o = fusion.cast %r : tensor<{m}x{n}xf32> to tensor<{m}x{n}x{dt}>
  func.return %c, %o : tensor<{m}x{n}xf32>, tensor<{m}x{n}x{dt}>
}}"""
"""A matmul with two outputs of different element types: the f32 product and relu of it in
{dt} (the matmul epilogue's staging seen as two types)."""

_FP8 = """func.func @mm(%a: tensor<300x640xf8E4M3FN>, %b: tensor<264x640xf8E4M3FN>) -> (tensor<300x264xf32>, tensor<300x264xbf16>) {
  %c = fusion.matmul %a, %b transpose_b : tensor<300x640xf8E4M3FN>, tensor<264x640xf8E4M3FN> -> tensor<300x264xf32>
  %r = fusion.relu %c : tensor<300x264xf32>
  %o = fusion.cast %r : tensor<300x264xf32> to tensor<300x264xbf16>
  func.return %c, %o : tensor<300x264xf32>, tensor<300x264xbf16>
}"""

# A row kernel's output returned and read by a matmul through a segment_set (a loss's logits
# gradient): the row kernel stores it once, into the output, which the matmul's TMA reads.
_ROWS_SET = """func.func @rows_set(%x: tensor<300x1000xf32>, %w: tensor<1000x264xbf16>) -> (tensor<300x1000xbf16>, tensor<300x264xbf16>) {
  %m = fusion.reduce max %x dims [1] : tensor<300x1000xf32> to tensor<300xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<300xf32> to tensor<300x1000xf32>
  %d = fusion.sub %x, %mb : tensor<300x1000xf32>
  %e = fusion.exp %d : tensor<300x1000xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<300x1000xf32> to tensor<300xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<300xf32> to tensor<300x1000xf32>
  %q = fusion.div %e, %sb : tensor<300x1000xf32>
  %p = fusion.cast %q : tensor<300x1000xf32> to tensor<300x1000xbf16>
  %c = fusion.segment_set %p : tensor<300x1000xbf16> to tensor<300x1000xbf16>
  %y = fusion.matmul %c, %w : tensor<300x1000xbf16>, tensor<1000x264xbf16> -> tensor<300x264xf32>
  %yb = fusion.cast %y : tensor<300x264xf32> to tensor<300x264xbf16>
  func.return %p, %yb : tensor<300x1000xbf16>, tensor<300x264xbf16>
}"""

# An LM head's shape of output: B stored [N, K] (K-major, as a Linear's weight), rows of 1001
# elements, which TMA cannot store; two outputs of different element types.
_ROWS_STORE = """func.func @mm(%a: tensor<300x512xf16>, %b: tensor<1001x512xf16>) -> (tensor<300x1001xf32>, tensor<300x1001xf16>) {
  %c = fusion.matmul %a, %b transpose_b : tensor<300x512xf16>, tensor<1001x512xf16> -> tensor<300x1001xf32>
  %r = fusion.relu %c : tensor<300x1001xf32>
  %o = fusion.cast %r : tensor<300x1001xf32> to tensor<300x1001xf16>
  func.return %c, %o : tensor<300x1001xf32>, tensor<300x1001xf16>
}"""

_SOFTMAX = """func.func @softmax(%x: tensor<64x4096xf32>) -> tensor<64x4096xf32> {
  %m = fusion.reduce max %x dims [1] : tensor<64x4096xf32> to tensor<64xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<64xf32> to tensor<64x4096xf32>
  %d = fusion.sub %x, %mb : tensor<64x4096xf32>
  %e = fusion.exp %d : tensor<64x4096xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<64x4096xf32> to tensor<64xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<64xf32> to tensor<64x4096xf32>
  %y = fusion.div %e, %sb : tensor<64x4096xf32>
  func.return %y : tensor<64x4096xf32>
}"""

_LONG_ROWS = """func.func @rows(%x: tensor<8x65536xf16>) -> tensor<8x65536xf16> {
  %var, %mean = fusion.var_mean %x dims [1] correction 0 : tensor<8x65536xf16> to tensor<8xf32>, tensor<8xf32>
  %mb = fusion.broadcast %mean dims [1] : tensor<8xf32> to tensor<8x65536xf32>
  %xf = fusion.cast %x : tensor<8x65536xf16> to tensor<8x65536xf32>
  %d = fusion.sub %xf, %mb : tensor<8x65536xf32>
  %y = fusion.cast %d : tensor<8x65536xf32> to tensor<8x65536xf16>
  func.return %y : tensor<8x65536xf16>
}"""

_LOG_SOFTMAX = """func.func @lsm(%x: tensor<2x3x50257xbf16>) -> tensor<6x50257xf32> {
  %xf = fusion.cast %x : tensor<2x3x50257xbf16> to tensor<2x3x50257xf32>
  %r = fusion.reshape %xf : tensor<2x3x50257xf32> to tensor<6x50257xf32>
  %m = fusion.reduce max %r dims [1] : tensor<6x50257xf32> to tensor<6xf32>
  %mb = fusion.broadcast %m dims [1] : tensor<6xf32> to tensor<6x50257xf32>
  %z = fusion.sub %r, %mb : tensor<6x50257xf32>
  %e = fusion.exp %z : tensor<6x50257xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<6x50257xf32> to tensor<6xf32>
  %l = fusion.log %s : tensor<6xf32>
  %lb = fusion.broadcast %l dims [1] : tensor<6xf32> to tensor<6x50257xf32>
  %y = fusion.sub %z, %lb : tensor<6x50257xf32>
  func.return %y : tensor<6x50257xf32>
}"""
"""A language model's log-softmax: odd-width rows (one-element accesses) read through a reshape,
copied into shared memory and looped over there."""

LABEL_ROWS = """func.func @label_rows(%x: tensor<{r}x{c}x{dt}>, %lse: tensor<{r}xf32>, %labels: tensor<{r}xi64>) -> tensor<{r}x{c}x{dt}> {{
  %iota = fusion.iota start 0 step 1 : tensor<{c}xi64>
  %ib = fusion.broadcast %iota dims [0] : tensor<{c}xi64> to tensor<{r}x{c}xi64>
  %lb = fusion.broadcast %labels dims [1] : tensor<{r}xi64> to tensor<{r}x{c}xi64>
  %hit = fusion.cmp eq, %ib, %lb : tensor<{r}x{c}xi64>
  %m1 = fusion.full -1.0 : tensor<{r}x{c}xf32>
  %z = fusion.full 0.0 : tensor<{r}x{c}xf32>
  %onehot = fusion.where %hit, %m1, %z : tensor<{r}x{c}xf32>
  %s = fusion.reduce sum %onehot dims [1] : tensor<{r}x{c}xf32> to tensor<{r}xf32>
  %sb = fusion.broadcast %s dims [1] : tensor<{r}xf32> to tensor<{r}x{c}xf32>
  %xf = fusion.cast %x : tensor<{r}x{c}x{dt}> to tensor<{r}x{c}xf32>
  %lseb = fusion.broadcast %lse dims [1] : tensor<{r}xf32> to tensor<{r}x{c}xf32>
  %d = fusion.sub %xf, %lseb : tensor<{r}x{c}xf32>
  %p = fusion.exp %d : tensor<{r}x{c}xf32>
  %ps = fusion.mul %p, %sb : tensor<{r}x{c}xf32>
  %g = fusion.sub %onehot, %ps : tensor<{r}x{c}xf32>
  %gd = fusion.cast %g : tensor<{r}x{c}xf32> to tensor<{r}x{c}x{dt}>
  func.return %gd : tensor<{r}x{c}x{dt}>
}}"""
"""A cross-entropy gradient whose row sum is of the one-hot labels alone: nothing cached, the
logits read once by the output loop after the sum (rows of 50257: looped; 32000: in registers).
Format with r, c (the rows and their length) and dt (the logits' type)."""

_COLUMNS = """func.func @cols(%x: tensor<4093x512xf32>) -> tensor<512xf32> {
  %s = fusion.reduce sum %x dims [0] : tensor<4093x512xf32> to tensor<512xf32>
  func.return %s : tensor<512xf32>
}"""

_TRANSPOSE = """func.func @t(%x: tensor<3x130x97xf32>, %y: tensor<3x97x130xf32>) -> tensor<3x97x130xf32> {
  %p = fusion.permute %x [0, 2, 1] : tensor<3x130x97xf32> to tensor<3x97x130xf32>
  %s = fusion.add %p, %y : tensor<3x97x130xf32>
  func.return %s : tensor<3x97x130xf32>
}"""

_TRANSPOSE_PAIRS = """func.func @tp(%x: tensor<130x200xbf16>) -> tensor<200x130xbf16> {
  %p = fusion.permute %x [1, 0] : tensor<130x200xbf16> to tensor<200x130xbf16>
  func.return %p : tensor<200x130xbf16>
}"""

_MIDDLE = """func.func @mid(%x: tensor<6x4000x40xf32>) -> tensor<6x40xf32> {
  %s = fusion.reduce sum %x dims [1] : tensor<6x4000x40xf32> to tensor<6x40xf32>
  func.return %s : tensor<6x40xf32>
}"""

_JOINT = """func.func @joint(%x: tensor<2051x333xbf16>) -> (tensor<2051xbf16>, tensor<333xf32>) {
  %r = fusion.reduce sum %x dims [1] {dtype = "f32"} : tensor<2051x333xbf16> to tensor<2051xf32>
  %c = fusion.reduce max %x dims [0] {dtype = "f32"} : tensor<2051x333xbf16> to tensor<333xf32>
  %rb = fusion.cast %r : tensor<2051xf32> to tensor<2051xbf16>
  func.return %rb, %c : tensor<2051xbf16>, tensor<333xf32>
}"""

_INT_REDUCTIONS = """func.func @ints(%x: tensor<37x5003xf32>, %n: tensor<4093x129xi16>, %b: tensor<37x5003xi1>) -> (tensor<37xi64>, tensor<129xi64>, tensor<37xi1>, tensor<129xi16>) {
  %a = fusion.reduce argmax %x dims [1] : tensor<37x5003xf32> to tensor<37xi64>
  %s = fusion.reduce sum %n dims [0] : tensor<4093x129xi16> to tensor<129xi64>
  %y = fusion.reduce any %b dims [1] : tensor<37x5003xi1> to tensor<37xi1>
  %m = fusion.reduce min %n dims [0] : tensor<4093x129xi16> to tensor<129xi16>
  func.return %a, %s, %y, %m : tensor<37xi64>, tensor<129xi64>, tensor<37xi1>, tensor<129xi16>
}"""
"""Integer reductions (issue 31): an argmax's (value, index) states and an i64 sum's partials
across warps (two 32-bit shuffles each) and through shared memory, row and column layouts."""

_DROPOUT = """func.func @dropout(%x: tensor<61x1031xf32>, %seed: tensor<i64>, %off: tensor<i64>) -> (tensor<61x1031xf32>, tensor<61xf32>) {
  %u = fusion.uniform %seed, %off low 0.0 high 1.0 : tensor<61x1031xf32>
  %p = fusion.full 0.8 : tensor<61x1031xf32>
  %keep = fusion.cmp lt, %u, %p : tensor<61x1031xf32>
  %z = fusion.full 0.0 : tensor<61x1031xf32>
  %xd = fusion.where %keep, %x, %z : tensor<61x1031xf32>
  %sc = fusion.full 1.25 : tensor<61x1031xf32>
  %y = fusion.mul %xd, %sc : tensor<61x1031xf32>
  %s = fusion.reduce sum %y dims [1] : tensor<61x1031xf32> to tensor<61xf32>
  func.return %y, %s : tensor<61x1031xf32>, tensor<61xf32>
}"""
"""Philox random numbers (issue 31) in a normalization-style row kernel: the seed and offset are
0-d device arguments."""

_MASKS = """func.func @masks(%x: tensor<130x97xf32>, %keep: tensor<130x97xi1>, %n: tensor<130x97xi64>) -> (tensor<97x130xi1>, tensor<130x97xf32>, tensor<97x130xf64>) {
  %z = fusion.full 0.0 : tensor<130x97xf32>
  %m = fusion.cmp gt, %x, %z : tensor<130x97xf32>
  %mt = fusion.permute %m [1, 0] : tensor<130x97xi1> to tensor<97x130xi1>
  %kf = fusion.cast %keep : tensor<130x97xi1> to tensor<130x97xf32>
  %nf = fusion.cast %n : tensor<130x97xi64> to tensor<130x97xf32>
  %y = fusion.mul %x, %kf : tensor<130x97xf32>
  %w = fusion.add %y, %nf : tensor<130x97xf32>
  %d = fusion.cast %w : tensor<130x97xf32> to tensor<130x97xf64>
  %dt = fusion.permute %d [1, 0] : tensor<130x97xf64> to tensor<97x130xf64>
  func.return %mt, %w, %dt : tensor<97x130xi1>, tensor<130x97xf32>, tensor<97x130xf64>
}"""
"""Booleans, i64 and f64 through every memory path: byte loads and stores of i1 (vectors too), a
transpose of i1 and of f64 through shared-memory tiles (one tile of each type)."""


_INDEX_MAPS = """func.func @index_maps(%x: tensor<37x128xbf16>, %y: tensor<37x62xbf16>) -> (tensor<37x192xbf16>, tensor<39x64xf32>) {
  %lo = fusion.slice %x start [0, 0] stop [37, 64] step [1, 1] : tensor<37x128xbf16> to tensor<37x64xbf16>
  %hi = fusion.slice %x start [0, 64] stop [37, 128] step [1, 1] : tensor<37x128xbf16> to tensor<37x64xbf16>
  %v = fusion.full -2.0 : tensor<bf16>
  %yp = fusion.pad %y, %v low [0, 1] high [0, 1] : tensor<37x62xbf16> to tensor<37x64xbf16>
  %c = fusion.cat %hi, %lo, %yp dim 1 : tensor<37x64xbf16>, tensor<37x64xbf16>, tensor<37x64xbf16> to tensor<37x192xbf16>
  %xf = fusion.cast %x : tensor<37x128xbf16> to tensor<37x128xf32>
  %s = fusion.slice %xf start [0, 1] stop [37, 128] step [1, 2] : tensor<37x128xf32> to tensor<37x64xf32>
  %f = fusion.flip %s dims [0, 1] : tensor<37x64xf32> to tensor<37x64xf32>
  %z = fusion.full 0.0 : tensor<f32>
  %p = fusion.pad %f, %z low [3, 0] high [-1, 0] : tensor<37x64xf32> to tensor<39x64xf32>
  func.return %c, %p : tensor<37x192xbf16>, tensor<39x64xf32>
}"""
"""The index maps (issue 32): a cat of two slices (lane groups of 8 bf16, clamped as one) and of a
pad of odd width (lanes mapped alone), and a strided slice, flipped, padded and cropped, at the
edges of odd row counts."""


_STRIDED = """func.func @strided(%x: tensor<37x130xf32> {fusion.strides = array<i64: 1, 41>, fusion.offset = 3 : i64}, %b: tensor<37x130xbf16> {fusion.strides = array<i64: 0, 1>}, %r: tensor<37x130xbf16> {fusion.strides = array<i64: 264, 2>, fusion.offset = 1 : i64}) -> (tensor<37x130xbf16> {fusion.stride_order = array<i64: 0, 1>}, tensor<130xf32>, tensor<37x130xf32>) {
  %bf = fusion.cast %b : tensor<37x130xbf16> to tensor<37x130xf32>
  %rf = fusion.cast %r : tensor<37x130xbf16> to tensor<37x130xf32>
  %s = fusion.add %x, %bf : tensor<37x130xf32>
  %y = fusion.mul %s, %rf : tensor<37x130xf32>
  %yb = fusion.cast %y : tensor<37x130xf32> to tensor<37x130xbf16>
  %c = fusion.reduce sum %x dims [0] : tensor<37x130xf32> to tensor<130xf32>
  func.return %yb, %c, %s : tensor<37x130xbf16>, tensor<130xf32>, tensor<37x130xf32>
}"""
"""Strided inputs read in place and an output in a stride order (issue 32): a transposed input
with gaps at an offset (lane by lane), an expanded row (one storage row for every row), a stepped
bf16 slice at an odd offset, a column sum of the transposed input, and a bf16 output written
column-major (a transpose)."""
_SORTS = """func.func @sorts(%x: tensor<37x1000xf32>, %y: tensor<5x5000xbf16>, %z: tensor<300x7xi8>) -> (tensor<37x1000xf32>, tensor<37x1000xi64>, tensor<5x8xbf16>, tensor<5x8xi64>, tensor<300x3xi64>) {
  %v, %i = fusion.sort %x dim 1 descending : tensor<37x1000xf32> to tensor<37x1000xf32>, tensor<37x1000xi64>
  %tv, %ti = fusion.sort %y dim 1 descending k 8 : tensor<5x5000xbf16> to tensor<5x8xbf16>, tensor<5x8xi64>
  %sv, %si = fusion.sort %z dim 1 k 3 : tensor<300x7xi8> to tensor<300x3xi8>, tensor<300x3xi64>
  func.return %v, %i, %tv, %ti, %si : tensor<37x1000xf32>, tensor<37x1000xi64>, tensor<5x8xbf16>, tensor<5x8xi64>, tensor<300x3xi64>
}"""
"""Sorts (issue 32): a bitonic network of 1024 slots over rows of 1000 in shared memory (the
slots past the row empty), topk's select walk and its network of 128 threads' candidates, and
short rows of 7, 8 to a block, in a network of 8 slots that a warp's threads beyond share."""

_SCATTERS = """func.func @scatters(%g: tensor<20001x40xbf16>, %ids: tensor<20001x1xi64>, %w: tensor<501x40xbf16>, %x: tensor<37x29xf32>, %i: tensor<37x3xi32>, %s: tensor<37x3xf32>, %j: tensor<33x29xi64>, %t: tensor<33x29xf32>) -> (tensor<501x40xbf16>, tensor<37x29xf32>, tensor<37x29xf32>, tensor<37x29xf32>) {
  %eb = fusion.scatter %w, %ids, %g dim 0 add : tensor<501x40xbf16>, tensor<20001x1xi64>, tensor<20001x40xbf16> to tensor<501x40xbf16>
  %oh = fusion.scatter %x, %i, %s dim 1 : tensor<37x29xf32>, tensor<37x3xi32>, tensor<37x3xf32> to tensor<37x29xf32>
  %cs = fusion.scatter %x, %j, %t dim 0 add : tensor<37x29xf32>, tensor<33x29xi64>, tensor<33x29xf32> to tensor<37x29xf32>
  %at = fusion.scatter_add_atomic %x, %j, %t dim 0 : tensor<37x29xf32>, tensor<33x29xi64>, tensor<33x29xf32> to tensor<37x29xf32>
  func.return %eb, %oh, %cs, %at : tensor<501x40xbf16>, tensor<37x29xf32>, tensor<37x29xf32>, tensor<37x29xf32>
}"""
"""Scatters (issue 32): an embedding backward of 20001 tokens (a sort in two chunks of 10001, the
last padded, then the sorted segment pass's binary searches and bf16 vector reads), a short
line read whole (3 positions a row), and a sorted line per column of 33 positions: every read
of the index, order and src at a searched or clamped position stays in bounds; and the same
column sums by atomic adds (a copy, then red.global.add per element, after it)."""


def _default_with_split_k(options: str) -> str:
    """The default pipeline with fusion-split-k{options}."""
    return NAMED_PIPELINES["default"].replace("fusion-split-k", f"fusion-split-k{{{options}}}", 1)


# name -> (fusion text, pipeline)
CASES: dict[str, tuple[str, str]] = {
    "matmul_reuse": (MATMUL_TWO_OUTPUTS.format(dt="f16", m=256, n=384, k=1024), "default{matmul_smem_reuse=1}"),
    "matmul_own_staging": (MATMUL_TWO_OUTPUTS.format(dt="f16", m=256, n=384, k=1024), "default{matmul_smem_reuse=0}"),
    "matmul_cluster_reuse": (MATMUL_TWO_OUTPUTS.format(dt="f16", m=512, n=256, k=512),
                             "default{matmul_cluster=2 matmul_persistent=0 matmul_smem_reuse=1}"),
    # the epilogue stored straight from the registers (no staging, no TMA store)
    "matmul_direct_store": (MATMUL_TWO_OUTPUTS.format(dt="f16", m=256, n=384, k=1024), "default{matmul_store=direct}"),
    # rows that TMA cannot store (1001 f16, 1001 f32): staged, then stored a row at a time by the
    # threads, ragged in both dims, several tiles per CTA
    "matmul_rows_store": (_ROWS_STORE, "default{matmul_persistent=1 sms=4}"),
    # FP8 operands (e4m3, K-major): 128-element K-slices in the same bytes, k32 wgmmas
    "matmul_fp8": (_FP8, "default{matmul_persistent=1 sms=4}"),
    "matmul_persistent": (MATMUL_TWO_OUTPUTS.format(dt="f16", m=520, n=264, k=256), "default{matmul_persistent=1 sms=4}"),
    "matmul_pingpong": (MATMUL_TWO_OUTPUTS.format(dt="f16", m=520, n=264, k=256), "default{matmul_pingpong=1 sms=3}"),
    "matmul_split_k": (MATMUL_TWO_OUTPUTS.format(dt="f16", m=128, n=128, k=16384), _default_with_split_k("strategy=two-kernel")),
    # serial split-K: turn counters, TMA stores and reduce-adds into the workspace, a ragged tile
    "matmul_serial_split_k": (MATMUL_TWO_OUTPUTS.format(dt="f16", m=200, n=256, k=4096),
                              _default_with_split_k("strategy=serial factor=4")),
    "softmax": (_SOFTMAX, "default"),
    "rows_in_smem": (_LONG_ROWS, "default"),
    "rows_through_reshape": (_LOG_SOFTMAX, "default"),
    "rows_set_into_matmul": (_ROWS_SET, "default"),
    "rows_outputs_only": (LABEL_ROWS.format(r=7, c=50257, dt="bf16"), "default"),
    "column_tree": (_COLUMNS, "default{split=1}"),
    "transpose": (_TRANSPOSE, "default"),
    "transpose_pairs": (_TRANSPOSE_PAIRS, "default"),
    "middle_dim_split": (_MIDDLE, "default"),
    "joint_reduction": (_JOINT, "default"),
    "masks_and_casts": (_MASKS, "default"),
    "int_reductions": (_INT_REDUCTIONS, "default"),
    "dropout": (_DROPOUT, "default"),
    "index_maps": (_INDEX_MAPS, "default"),
    "strided_layouts": (_STRIDED, "default"),
    "sorts": (_SORTS, "default"),
    "scatters": (_SCATTERS, "default"),
}

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


def _pythonpath() -> str:
    """fuser's parent, the carried wheels and this Python's site-packages (numpy, cuda.bindings)."""
    import site

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the fuser package
    parts = [os.path.dirname(here)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)
    parts += site.getsitepackages() + [site.getusersitepackages()]
    return os.pathsep.join(dict.fromkeys(p for p in parts if p))


CUDA_SANITIZER = "/usr/local/cuda/bin/compute-sanitizer"  # where the CUDA toolkit puts it


def run_case(name: str, tool: str, sanitizer: str, python: str, workdir: str) -> tuple[str, str, float]:
    """(hazards, outputs, seconds) of one case under one tool."""
    text, pipeline = CASES[name]
    path = os.path.join(workdir, f"{name}.mlir")
    with open(path, "w") as f:
        f.write(text)
    env = dict(os.environ, PYTHONPATH=_pythonpath(), FUSER_CACHE_DIR=os.path.join(workdir, "cache"))
    cmd = [sanitizer, "--tool", tool, "--error-exitcode", "9", python, "-m", "fuser.tools.fuser_run", path,
           "-p", pipeline, "--reps", "1"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    out = r.stdout + r.stderr
    m = re.search(r"ERROR SUMMARY: (\d+) error", out) or re.search(r"RACECHECK SUMMARY: (\d+) hazard", out)
    hazards = m.group(1) if m else "?"  # racecheck's summary counts its warnings too
    outputs = "MISMATCH" if "MISMATCH" in out else "ok" if " OK" in out else "no run"
    if hazards != "0" or outputs != "ok":
        sys.stderr.write(f"--- {name} / {tool} (exit {r.returncode})\n{out[-4000:]}\n")
    return hazards, outputs, dt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fuser-sanitize", description=__doc__.split("\n\n")[0])
    p.add_argument("--tools", default="memcheck,racecheck,synccheck", help=f"comma-separated, of {', '.join(TOOLS)}")
    p.add_argument("--cases", default="", metavar="REGEX", help="run the cases whose name matches")
    p.add_argument("--python", default="/usr/bin/python3.12", help="the Python compute-sanitizer starts")
    p.add_argument("--sanitizer", metavar="PATH",
                   help=f"the compute-sanitizer to run (default: the one on PATH, else {CUDA_SANITIZER})")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    args = p.parse_args(argv)
    try:
        names = [n for n in CASES if re.search(args.cases, n)]
    except re.error as e:
        p.error(f"--cases {args.cases!r} is not a regular expression: {e}")
    if not names:  # a typo should not pass as a clean run of nothing
        p.error(f"--cases {args.cases!r} matches no case; the cases are {', '.join(CASES)}")
    if args.list:
        for n in names:
            print(f"{n:22} {CASES[n][1]}")
        return 0
    tools = [t for t in args.tools.split(",") if t]
    bad = [t for t in tools if t not in TOOLS]
    if bad or not tools:
        p.error(f"unknown tool {bad[0]!r}; choose from {', '.join(TOOLS)}" if bad
                else f"--tools names no tool; choose from {', '.join(TOOLS)}")
    # Both are started by subprocess: find them first, so a missing one is one line, not a
    # FileNotFoundError per case (the sanitizer) or a "no run" per case (the Python).
    if args.sanitizer:
        sanitizer = shutil.which(args.sanitizer)
        where = f"--sanitizer {args.sanitizer}: no such executable"
    else:
        sanitizer = shutil.which("compute-sanitizer") or shutil.which(CUDA_SANITIZER)
        where = f"compute-sanitizer not found on PATH nor at {CUDA_SANITIZER}"
    if sanitizer is None:
        return _error(f"{where}; install the CUDA toolkit's compute-sanitizer or name it with --sanitizer PATH")
    python = shutil.which(args.python)
    if python is None:
        return _error(f"--python {args.python}: no such executable; name a Python that has numpy and "
                      "cuda.bindings with --python PATH")
    ok = True
    with tempfile.TemporaryDirectory() as work:
        print(f"{'case':22} {'tool':10} {'hazards':>8} {'outputs':>8} {'seconds':>8}", flush=True)
        for n in names:
            for t in tools:
                hz, outs, dt = run_case(n, t, sanitizer, python, work)
                ok &= hz == "0" and outs == "ok"
                print(f"{n:22} {t:10} {hz:>8} {outs:>8} {dt:8.1f}", flush=True)
    return 0 if ok else 1


def _error(message: str) -> int:
    print(f"fuser-sanitize: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
