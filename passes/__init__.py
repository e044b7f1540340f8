"""fuser.passes: the rewrite passes, the pipeline syntax and the pass registry.

Every pass class is importable from here, loaded on first use (so that importing the pipeline
machinery stays fast):

    from fuser.passes import ConvertFusionToSched, AliasSmem
    fuser.compile(fb, pipeline=[ConvertFusionToSched(block=256), AliasSmem(), ...])

`fuser.passes.pipeline.build_pipeline("default")` gives a named pipeline's pass objects.
"""

from __future__ import annotations

import importlib

from fuser.passes.registry import _PASSES

# class name -> "module:Class", for fuser's own passes (xDSL's generic ones are xDSL's to export)
_CLASSES = {t.split(":")[1]: t for t in _PASSES.values() if t.startswith("fuser.")}

__all__ = sorted(_CLASSES)


def __getattr__(name: str):
    target = _CLASSES.get(name)
    if target is None:
        raise AttributeError(f"module 'fuser.passes' has no attribute '{name}'")
    mod, cls = target.split(":")
    return getattr(importlib.import_module(mod), cls)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
