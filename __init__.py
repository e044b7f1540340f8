"""fuser: an MLIR-style, multi-dialect GPU fusion compiler.

The flow: fusion dialect -> fusion passes -> convert-fusion-to-sched -> sched
passes -> convert-sched-to-nvvm -> LLVM IR -> PTX -> runtime launch.

The Python API lives in `fuser.api` and is re-exported here: `fuser.FusionBuilder`,
`fuser.compile`, and the op functions (`fuser.exp`, `fuser.sum`, ...). `from fuser import *`
brings in all but the eight named like builtins (`compile`, `abs`, `pow`, `round`, `sum`, `any`, `all`, `slice`), which stay
`fuser.compile` and so on. The API (numpy, xDSL) loads on first use, so that the command-line
tools start fast.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    import fuser.api as api

    if name == "__all__":
        return ["__version__", *api.__all__]
    if name in ("compile", "abs", "pow", "round", "sum", "any", "all", "slice") or name in api.__all__:
        value = globals()[name] = getattr(api, name)  # once: later lookups are plain attributes
        return value
    raise AttributeError(f"module 'fuser' has no attribute '{name}'")
