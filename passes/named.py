"""The named pipelines (pure data: the command-line tools read them without loading the compiler)."""

from __future__ import annotations

NAMED_PIPELINES: dict[str, str] = {
    # fusion IR -> sched IR -> nvvm/llvm IR; -t llvm / -t ptx continue from there.
    "default": "canonicalize,fusion-layouts,fusion-fold-empty,fusion-sort-scatters,fusion-sink-reshapes,fusion-approx-exp,fusion-split-k,fusion-segment,convert-fusion-to-sched,sched-verify-buffers,sched-flush-wgmma,sched-insert-bulk-syncs,sched-alias-smem,sched-dependent-launch,cse,convert-sched-to-nvvm",
    "to-sched": "canonicalize,fusion-layouts,fusion-fold-empty,fusion-sort-scatters,fusion-sink-reshapes,fusion-approx-exp,fusion-split-k,fusion-segment,convert-fusion-to-sched,sched-verify-buffers,sched-flush-wgmma,sched-insert-bulk-syncs,sched-alias-smem,sched-dependent-launch,cse",
}
