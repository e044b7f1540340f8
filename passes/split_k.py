"""fusion-split-k: split the K axis of a matmul (rfactor) where its output tiles leave SMs idle.

A matmul with few output tiles and a long K (128x128x131072 is one 128x128 tile) runs on a
handful of CTAs while the other SMs wait. Splitting K into S chunks gives tiles x S work items:

    %c = fusion.matmul %a, %b : ... -> tensor<MxNxbf16>
  becomes
    %p = fusion.matmul %a, %b k_chunk KC : ... -> tensor<SxMxNxf32>   (S = ceil(K / KC) partials)
    %s = fusion.reduce sum %p dims [0] : tensor<SxMxNxf32> to tensor<MxNxf32>
    %c = fusion.cast %s : tensor<MxNxf32> to tensor<MxNxbf16>       (only for an f16/bf16 result)

and every use of %c reads the new value. This is the *two-kernel* strategy: the matmul kernel
writes the f32 partials to a workspace, and the column-reduction kernel sums them and runs the
epilogue (bias, activation, cast) on the sums. The partials cost S*M*N*4 bytes written and read
once; the heuristic keeps that small by never making more work items than SMs.

- `factor=auto` (default): ask the matmul scheduler's heuristic (`matmul_params`, which changes
  nothing) for the tile, count the output tiles, and split only when they fill at most half of
  the `sms` SMs and K is long (at least 64 K-slices of 64): S = min(sms // tiles, K-slices / 8),
  so every split keeps at least 8 K-slices to amortize its pipeline fill. The tiles counted
  there are those of the widest tile (128x256, else 256x128) whose tiles x S still make a ~full
  wave with splits of at least `SPLIT_WIDE_MIN_K` (8192), else 128x128: the wide tile's main
  loop is faster, but it needs twice the splits, so twice the partials (measured trade-off in
  docs/matmul-notes.md); the scheduler's `matmul_params(..., splits=S)` picks the same tile. A matmul that the scheduler
  fuses horizontally with another one sharing A (the gated MLP) is kept: its two accumulators
  already share one main loop, and splitting would give that up.
- `factor=N` (N > 1) splits every matmul about N ways, whatever the heuristic says (an error if
  K has fewer than N slices of 64); `factor=1` splits nothing.
- `sms`: the SMs to fill (132 on H100 and H200).
- `strategy=two-kernel` is the only strategy built; `serial` (partials reduced in the matmul
  kernel through a grid semaphore) is not, and is refused with an error.

k_chunk is always a multiple of 64 (the scheduler's K-slice: a split never shares a TMA box with
its neighbour), so S is recomputed from it: S = ceil(K / k_chunk) may be below the factor asked.

The decision is recorded as `fuser.split_k` on the matmul: "split 128 ways, k_chunk=1024 (1 tile
of 128x128 on 132 SMs, K=131072)" on the new op, "kept (...)" with the reason on a kept one.
Matmuls that already carry k_chunk are left alone.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue

from fuser.dialects import fusion as F
from fuser.lowering.schedulers.options import ScheduleOptions, SchedulingPass

BK = 64                     # the matmul scheduler's K-slice (lowering/matmul.py)
MIN_SLICES_PER_SPLIT = 8    # each split streams at least this many K-slices through its pipeline
MIN_K_SLICES = 64           # below this (K < 4096) the second kernel costs about what the split saves
STRATEGIES = ("two-kernel",)


class SplitKError(ValueError):
    """A bad option, or a forced split the matmul cannot take; `op` locates the matmul."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


@dataclass(frozen=True)
class SplitDecision:
    splits: int               # S; 1 = kept
    k_chunk: int | None       # K elements per split (a multiple of 64); None when kept
    reason: str               # what goes into fuser.split_k


def chunking(k: int, target: int) -> tuple[int, int]:
    """(k_chunk, S) for about `target` splits of K: whole 64-element slices per split."""
    slices = math.ceil(k / BK)
    per = math.ceil(slices / max(1, target))
    kc = per * BK
    return kc, math.ceil(k / kc)


def auto_decision(m: int, n: int, k: int, elem_bytes: int = 2, sms: int = 132) -> SplitDecision:
    """The heuristic: split when the output tiles leave more than half of the SMs idle and K is long."""
    from fuser.lowering.schedulers.matmul import SPLIT_WIDE_MIN_K, matmul_params

    p = matmul_params(m, n, k, elem_bytes, sms)
    tiles = math.ceil(m / p.bm) * math.ceil(n / p.bn)
    what = f"{tiles} tile{'s' if tiles != 1 else ''} of {p.bm}x{p.bn}"
    if tiles >= sms:
        return SplitDecision(1, None, f"kept ({what} fill {sms} SMs)")
    if 2 * tiles > sms:
        return SplitDecision(1, None, f"kept ({what} fill more than half of {sms} SMs)")
    slices = math.ceil(k / BK)
    if slices < MIN_K_SLICES:
        return SplitDecision(1, None, f"kept (K={k} is {slices} slices of {BK}, fewer than {MIN_K_SLICES}: "
                                      f"the reduction kernel would cost about what splitting saves)")
    # Splits restore the parallelism the wide tiles lacked: take the first tile of the
    # scheduler's order (128x256, 256x128, 128x128) whose tiles x splits make a ~full wave.
    # (the wide tiles only where each split keeps SPLIT_WIDE_MIN_K of K, as the scheduler's rule)
    cands = [(128, 256)] * (n >= 256) + [(256, 128)] * (m >= 256) + [(128, 128)]
    for bm, bn in cands:
        t = math.ceil(m / bm) * math.ceil(n / bn)
        target = min(sms // t, slices // MIN_SLICES_PER_SPLIT)
        wide_ok = (bm, bn) == (128, 128) or target >= 1 and chunking(k, target)[0] >= SPLIT_WIDE_MIN_K
        if target >= 2 and t * target >= 0.9 * sms and wide_ok:
            break
    kc, s = chunking(k, target)
    if s < 2:
        return SplitDecision(1, None, f"kept ({what}, K={k}: too few K-slices to split)")
    q = matmul_params(m, n, kc, elem_bytes, sms, splits=s)  # the tile the scheduler will use
    t = math.ceil(m / q.bm) * math.ceil(n / q.bn)
    return SplitDecision(s, kc, f"split {s} ways, k_chunk={kc} ({t} tile{'s' if t != 1 else ''} of "
                                f"{q.bm}x{q.bn} on {sms} SMs, K={k})")


def forced_decision(op: F.MatmulOp, factor: int) -> SplitDecision:
    m, n, k = op.mnk()
    if factor == 1:
        return SplitDecision(1, None, "kept (factor=1)")
    slices = math.ceil(k / BK)
    if slices < factor:
        raise SplitKError(f"fusion-split-k: factor={factor} needs K of at least {(factor - 1) * BK + 1} "
                          f"({factor} slices of {BK}); this 'fusion.matmul' has K={k}", op)
    kc, s = chunking(k, factor)
    note = "" if s == factor else f"; {s} chunks of whole {BK}-element slices cover K"
    return SplitDecision(s, kc, f"split {s} ways, k_chunk={kc} (factor={factor}{note}, K={k})")


def _parse_factor(factor: str | int) -> int | None:
    """None for auto, else the forced factor (>= 1)."""
    if isinstance(factor, str) and factor.strip() == "auto":
        return None
    try:
        n = int(factor)
    except (TypeError, ValueError):
        n = 0
    if isinstance(factor, bool) or n < 1:
        raise SplitKError(f"fusion-split-k: factor must be 'auto' or a positive integer, got '{factor}'")
    return n


@dataclass(frozen=True)
class SplitK(SchedulingPass):
    """Split the K axis of matmuls whose output tiles leave SMs idle: S f32 partial products,
    then a sum over them (and the cast back to the result type). Takes the schedule options
    too (pipeline-wide; `sms` is the SMs to fill)."""

    name = "fusion-split-k"

    factor: str | int = "auto"
    """auto: split where the output tiles fill at most half of the SMs and K is long; N: split about N ways."""
    strategy: str = "two-kernel"
    """two-kernel: partials to a workspace, a reduction kernel sums them (the only one built)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forced = _parse_factor(self.factor)
        if self.strategy not in STRATEGIES:
            raise SplitKError(f"fusion-split-k: strategy must be one of {', '.join(STRATEGIES)} "
                              f"(the in-kernel serial reduction is not built), got '{self.strategy}'")
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            mms = [o for o in fn.walk() if isinstance(o, F.MatmulOp) and o.k_chunk is None]
            if not mms:
                continue
            paired = _horizontally_fused(fn, self.schedule_options()) if forced is None else {}
            for mm in mms:
                if forced is not None:
                    d = forced_decision(mm, forced)
                elif mm in paired:
                    d = SplitDecision(1, None, f"kept (fused horizontally with the matmul {paired[mm]} that shares "
                                               "operand A: both accumulate in one main loop)")
                else:
                    m, n, k = mm.mnk()
                    eb = 4 if F.dtype_name(F._elem(mm.a)) == "f32" else 2
                    d = auto_decision(m, n, k, eb, self.sms)
                if d.splits > 1:
                    split(mm, d.k_chunk, d.reason)
                else:
                    mm.attributes["fuser.split_k"] = StringAttr(d.reason)


def _horizontally_fused(fn: func.FuncOp, opts: ScheduleOptions) -> dict[Operation, str]:
    """Matmuls the planner would fuse horizontally (gated-MLP pairs), each mapped to its
    partner's name. Asks convert-fusion-to-sched's planner, which changes nothing."""
    from fuser.lowering.fusion_to_sched import ScheduleError, plan_fusion

    try:
        plan = plan_fusion(fn, dataclasses.replace(opts, persistent=False))
    except ScheduleError:  # the scheduler will report it; nothing is paired
        return {}
    out: dict[Operation, str] = {}
    for t in plan.tasks:
        group = [t.op] + list(getattr(t, "siblings", []))
        if t.kind != "matmul" or len(group) < 2:
            continue
        for x in group:
            out[x] = ", ".join(f"%{y.result.name_hint}" if y.result.name_hint else "(unnamed)"
                               for y in group if y is not x)
    return out


def split(op: F.MatmulOp, k_chunk: int, note: str) -> F.MatmulOp:
    """Replace `op` by the split-K matmul, the sum over its partials and the cast back; returns
    the new matmul (tagged with `note`)."""
    et = F._elem(op.result)
    new = F.MatmulOp(op.a, op.b, op.transpose_a is not None, op.transpose_b is not None, "f32", k_chunk=k_chunk)
    new.attributes.update({k: v for k, v in op.attributes.items() if k != "fuser.split_k"})
    new.attributes["fuser.split_k"] = StringAttr(note)
    ops: list[Operation] = [new, F.ReduceOp("sum", new.result, [0], dtype="f32")]
    out: SSAValue = ops[-1].results[0]
    if F.dtype_name(et) != "f32":
        ops.append(F.CastOp(out, et))
        out = ops[-1].results[0]
        # A matmul reads its operands from memory (TMA); the result used to be written there.
        # The cast is recomputed wherever it is read, so make it a buffer again for such users.
        if any(isinstance(u.operation, F.MatmulOp) for u in op.result.uses):
            ops.append(F.SegmentSetOp.create(operands=[out], result_types=[out.type]))
            out = ops[-1].results[0]
    if op.result.name_hint:
        out.name_hint = op.result.name_hint
        new.result.name_hint = f"{op.result.name_hint}_partials"
    for o in ops:  # diagnostics about the new ops point at the matmul they replace
        o.location = op.location
    block = op.parent_block()
    block.insert_ops_before(ops, op)
    op.result.replace_all_uses_with(out)
    block.erase_op(op)
    return new
