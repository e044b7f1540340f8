"""fuser: an MLIR-style, multi-dialect GPU fusion compiler.

The flow: fusion dialect -> fusion passes -> convert-fusion-to-sched -> sched
passes -> convert-sched-to-nvvm -> LLVM IR -> PTX -> runtime launch.

The Python API lives in `fuser.api` and is re-exported here: `fuser.FusionBuilder`,
`fuser.compile`, and the op functions (`fuser.exp`, `fuser.sum`, ...; some shadow builtins
such as `sum`, `abs`, `pow` and `compile`, as numpy's do).
"""

__version__ = "0.1.0"

from fuser.api import *  # noqa: E402,F401,F403
from fuser.api import __all__ as _api_all  # noqa: E402

__all__ = ["__version__", *_api_all]
