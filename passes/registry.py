"""Every pass fuser knows, by its pipeline name, and the dialects its IR may contain.

Passes are xDSL `ModulePass` dataclasses; their fields are their options
(`convert-fusion-to-sched{block=128}`). Imports are lazy so that `fuser-opt --help` stays fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loading xDSL is most of a tool's start-up: only the passes themselves need it
    from xdsl.passes import ModulePass

# pipeline name -> "module:Class"
_PASSES: dict[str, str] = {
    "fusion-layouts": "fuser.passes.layouts:FusionLayouts",
    "fusion-fold-empty": "fuser.passes.fold_empty:FoldEmpty",
    "fusion-sort-scatters": "fuser.passes.sort_scatters:SortScatters",
    "fusion-sink-reshapes": "fuser.passes.sink_reshapes:SinkReshapes",
    "fusion-approx-exp": "fuser.passes.approx_exp:ApproxExp",
    "fusion-translate-welford": "fuser.passes.translate_welford:TranslateWelford",
    "fusion-split-k": "fuser.passes.split_k:SplitK",
    "fusion-segment": "fuser.passes.segment:FusionSegment",
    "convert-fusion-to-sched": "fuser.lowering.conversion.fusion_to_sched:ConvertFusionToSched",
    "convert-sched-to-nvvm": "fuser.lowering.conversion.sched_to_nvvm:ConvertSchedToNVVM",
    "convert-nvvm-to-llvm": "fuser.lowering.conversion.nvvm_to_llvm:ConvertNVVMToLLVM",
    "sched-verify-buffers": "fuser.passes.verify_buffers:VerifyBuffers",
    "sched-alias-smem": "fuser.passes.alias_smem:AliasSmem",
    "sched-flush-wgmma": "fuser.passes.flush_wgmma:FlushWgmma",
    "sched-insert-bulk-syncs": "fuser.passes.insert_bulk_syncs:InsertBulkSyncs",
    "sched-dependent-launch": "fuser.passes.dependent_launch:DependentLaunch",
    "canonicalize": "xdsl.transforms.canonicalize:CanonicalizePass",
    "cse": "xdsl.transforms.common_subexpression_elimination:CommonSubexpressionElimination",
    "dce": "xdsl.transforms.dead_code_elimination:DeadCodeElimination",
}


def register_pass(name: str, target: str) -> None:
    """Make a pass available to pipelines (`target` is "module:Class")."""
    _PASSES[name] = target


def _loader(target: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        mod, cls = target.split(":")
        return getattr(importlib.import_module(mod), cls)
    return load


def pass_names() -> list[str]:
    """Every pass's pipeline name (nothing is imported)."""
    return list(_PASSES)


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {name: _loader(t) for name, t in _PASSES.items()}


def get_pass_class(name: str) -> type[ModulePass]:
    if name not in _PASSES:
        raise KeyError(name)
    return _loader(_PASSES[name])()
