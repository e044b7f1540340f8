"""fuser: an MLIR-style, multi-dialect GPU fusion compiler.

The flow: fusion dialect -> fusion passes -> convert-fusion-to-sched -> sched
passes -> convert-sched-to-nvvm -> LLVM IR -> PTX -> runtime launch.
"""

__version__ = "0.1.0"
