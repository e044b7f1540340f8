"""fuser: an MLIR-style, multi-dialect GPU fusion compiler.

The flow: fusion dialect -> fusion passes -> convert-fusion-to-sched -> sched
passes -> convert-sched-to-nvvm -> LLVM IR -> PTX -> runtime launch.

The Python API lives in `fuser.api` and is re-exported here: `fuser.FusionBuilder`,
`fuser.compile`, and the op functions (`fuser.exp`, `fuser.sum`, ...). `from fuser import *`
brings in all but the four named like builtins (`compile`, `abs`, `pow`, `sum`), which stay
`fuser.compile` and so on.
"""

__version__ = "0.1.0"

from fuser.api import *  # noqa: E402,F401,F403
from fuser.api import __all__ as _api_all  # noqa: E402
from fuser.api import abs, compile, pow, sum  # noqa: E402,F401,A004 (attributes, not in __all__)

__all__ = ["__version__", *_api_all]
