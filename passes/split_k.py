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

- `factor=auto` (default): ask the split-K heuristic (lowering/heuristics/split_k.py) and,
  through it, the matmul scheduler's heuristic (`matmul_params`, which changes
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
- `strategy=serial` keeps one kernel: `fusion.matmul ... k_chunk KC serial` keeps the product's
  type and its epilogue; the splits of a tile take turns through a semaphore in global memory and
  reduce into an f32 workspace tile with TMA bulk reductions, the last running the epilogue
  (lowering/emitters/matmul.py). `strategy=auto` lets the cost model of lowering/heuristics/split_k.py
  pick no split, two-kernel or serial.

k_chunk is always a multiple of 64 (the scheduler's K-slice: a split never shares a TMA box with
its neighbour), so S is recomputed from it: S = ceil(K / k_chunk) may be below the factor asked.

The decision is recorded as `fuser.split_k` on the matmul: "split 128 ways, k_chunk=1024 (1 tile
of 128x128 on 132 SMs, K=131072)" on the new op, "kept (...)" with the reason on a kept one.
Matmuls that already carry k_chunk are left alone.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from fuser.dialects import fusion as F
from fuser.lowering.common import ScheduleError
from fuser.lowering.analysis.planner import plan_fusion, share_a
from fuser.lowering.heuristics.options import ScheduleOptions, SchedulingPass
from fuser.lowering.heuristics.split_k import (ForcedSplitError, SplitDecision, auto_decision, forced_decision,
                                               serial_blocker)

STRATEGIES = ("auto", "two-kernel", "serial")


class SplitKError(ValueError):
    """A bad option, or a forced split the matmul cannot take; `op` locates the matmul."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


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
    strategy: str = "auto"
    """two-kernel: partials to a workspace, a reduction kernel sums them; serial: the splits add
    into one workspace tile in turn and the last runs the epilogue; auto: the cost model picks."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forced = _parse_factor(self.factor)
        if self.strategy not in STRATEGIES:
            raise SplitKError(f"fusion-split-k: strategy must be one of {', '.join(STRATEGIES)}, got '{self.strategy}'")
        opts = self.schedule_options()
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            # One walk in program order, no revisits (the new matmuls carry k_chunk anyway).
            walker = PatternRewriteWalker(SplitKPattern(fn, forced, self.strategy, opts), apply_recursively=False)
            walker.rewrite_region(fn.body)


@dataclass
class SplitKPattern(RewritePattern):
    """A fusion.matmul of `fn` with no k_chunk -> the split-K form where `decide` says so; a
    kept matmul is tagged with the reason."""

    fn: func.FuncOp
    forced: int | None
    strategy: str
    opts: ScheduleOptions
    _paired: dict[Operation, str] | None = field(default=None, init=False)

    def paired(self) -> dict[Operation, str]:
        """The horizontally fused matmuls of `fn`, asked once, before its first split."""
        if self._paired is None:
            self._paired = _horizontally_fused(self.fn, self.opts)
        return self._paired

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: F.MatmulOp, rewriter: PatternRewriter, /) -> None:
        if op.k_chunk is not None:
            return
        seg = op.parent_op()
        if isinstance(seg, F.SegmentOp) and seg.scheduler is not None:
            # A segment that names its scheduler is one kernel by the user's choice.
            op.attributes["fuser.split_k"] = StringAttr(f"kept (inside a fusion.segment named '{seg.scheduler_name}')")
            rewriter.notify_op_modified(op)
            return
        d = decide(op, self.forced, self.strategy, self.paired() if self.forced is None else {}, self.opts.sms)
        if d.splits > 1 and d.strategy == "serial":
            split_serial(op, d.k_chunk, d.reason, rewriter)
        elif d.splits > 1:
            split(op, d.k_chunk, d.reason, rewriter)
        else:
            op.attributes["fuser.split_k"] = StringAttr(d.reason)
            rewriter.notify_op_modified(op)


def decide(op: F.MatmulOp, forced: int | None, strategy: str, paired: dict[Operation, str], sms: int) -> SplitDecision:
    """How to split `op`: `forced` ways (None: the heuristic's choice) with `strategy` (auto:
    the cost model's choice); `paired` maps the horizontally fused matmuls, which are kept, to
    their partners' names."""
    m, n, k = op.mnk()
    if F.is_fp8(F._elem(op.a)):  # (128-element K-slices, which the split-K cost model does not know yet)
        if forced is not None:
            raise SplitKError(f"fusion-split-k: factor={forced}: FP8 matmuls are not split yet", op)
        return SplitDecision(1, None, "kept (FP8 operands: split-K is not built for them yet)")
    blocker = serial_blocker(n)
    if strategy == "serial" and blocker:
        raise SplitKError(f"fusion-split-k: strategy=serial: {blocker}; use strategy=two-kernel or auto", op)
    if forced is not None:
        try:
            return forced_decision(m, n, k, forced, "two-kernel" if strategy == "auto" else strategy)
        except ForcedSplitError as e:
            raise SplitKError(f"fusion-split-k: {e}; this 'fusion.matmul' has K={k}", op) from e
    if op in paired:
        return SplitDecision(1, None, f"kept (fused horizontally with the matmul {paired[op]} that shares "
                                      "operand A: both accumulate in one main loop)")
    eb = 4 if F.dtype_name(F._elem(op.a)) == "f32" else 2
    if blocker and strategy == "auto":
        d = auto_decision(m, n, k, eb, sms, ("two-kernel",))
        return d if d.splits == 1 else dataclasses.replace(d, reason=f"{d.reason[:-1]}; not serial: {blocker})")
    strategies = ("two-kernel", "serial") if strategy == "auto" else (strategy,)
    return auto_decision(m, n, k, eb, sms, strategies)


def _horizontally_fused(fn: func.FuncOp, opts: ScheduleOptions) -> dict[Operation, str]:
    """Matmuls the planner would fuse horizontally (gated-MLP pairs), each mapped to its
    partner's name. Asks the planner (which changes nothing) only where two matmuls share A:
    no other pair is fused."""
    mms = [o for o in fn.walk() if isinstance(o, F.MatmulOp)]
    if not any(share_a(a, b) for i, a in enumerate(mms) for b in mms[i + 1:]):
        return {}
    try:
        plan = plan_fusion(fn, dataclasses.replace(opts, persistent=False))
    except ScheduleError:  # the scheduler will report it; nothing is paired
        return {}
    out: dict[Operation, str] = {}
    for t in plan.tasks:
        group = [t.op] + t.siblings
        if t.kind != "matmul" or len(group) < 2:
            continue
        for x in group:
            out[x] = ", ".join(f"%{y.result.name_hint}" if y.result.name_hint else "(unnamed)"
                               for y in group if y is not x)
    return out


def split_serial(op: F.MatmulOp, k_chunk: int, note: str, rewriter: PatternRewriter) -> F.MatmulOp:
    """Replace `op` by the same matmul with `k_chunk KC serial`: the splits reduce into one tile
    inside the matmul kernel, so the result, its type and its epilogue stay as they were."""
    new = F.MatmulOp(op.a, op.b, op.transpose_a is not None, op.transpose_b is not None,
                     F.dtype_name(F._elem(op.result)), k_chunk=k_chunk, serial=True)
    new.attributes.update({k: v for k, v in op.attributes.items() if k != "fuser.split_k"})
    new.attributes["fuser.split_k"] = StringAttr(note)
    new.location = op.location
    if op.result.name_hint:
        new.result.name_hint = op.result.name_hint
    rewriter.replace(op, new)
    return new


def split(op: F.MatmulOp, k_chunk: int, note: str, rewriter: PatternRewriter) -> F.MatmulOp:
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
    # Not rewriter.replace: it would give the matmul's name to every unnamed new result (the
    # partial sum too); only `out` takes it.
    rewriter.insert(ops, InsertPoint.before(op))
    rewriter.replace_all_uses_with(op.result, out)
    rewriter.erase(op)
    return new
