"""The one MLIR context fuser parses, verifies and rewrites in: every dialect its IR may hold,
from the fusion level down to llvm/nvvm."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, llvm, math, scf, vector

from fuser.dialects.fusion import Fusion
from fuser.dialects.arith_ext import ARITH_EXT_OPS
from fuser.dialects.gpu_ext import GPU_EXT_OPS
from fuser.dialects.llvm_ext import LLVM_EXT_OPS
from fuser.dialects.math_ext import MATH_EXT_OPS
from fuser.dialects.memref_ext import memref_dialect
from fuser.dialects.nvgpu import NVGPU
from fuser.dialects.nvvm import NVVM
from fuser.dialects.sched import Sched


def all_dialects():
    """The dialects fuser-opt and the compiler register."""
    return [builtin.Builtin, func.Func, arith.Arith, math.Math, scf.Scf, memref_dialect(), vector.Vector,
            gpu.GPU, llvm.LLVM, Fusion, Sched, NVGPU, NVVM]


_PROTOTYPE: Context | None = None


def make_context() -> Context:
    """A context of its own (a caller may load more into it) with every dialect loaded: a copy
    of one built once, since loading ~400 ops took ~1 ms of every parse and pass pipeline."""
    global _PROTOTYPE
    if _PROTOTYPE is None:
        ctx = Context()
        for d in all_dialects():
            ctx.load_dialect(d)
        for op in ARITH_EXT_OPS + GPU_EXT_OPS + LLVM_EXT_OPS + MATH_EXT_OPS:  # upstream ops xDSL's own dialects lack
            if ctx.get_optional_op(op.name) is None:
                ctx.load_op(op)
        _PROTOTYPE = ctx
    return _PROTOTYPE.clone()
