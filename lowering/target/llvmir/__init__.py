"""Translate the kernels of an nvvm-level module (docs/ir-levels.md) into LLVM IR for NVPTX.

Each `gpu.module` becomes one LLVM module (triple `nvptx64-nvidia-cuda`) holding its
`llvm.mlir.global`s and `llvm.func`s; lowering/target/ptx.py turns that into PTX.

Why LLVM IR *text* rather than `llvmlite.ir` objects: llvmlite 0.50's IR builder has no bfloat
type, no `ptx_kernel` calling convention and only clumsy support for string function
attributes; the textual IR covers all of them, is what LLVM documents, and is parsed and verified
by `llvmlite.binding.parse_assembly` (lowering/target/ptx.py), so mistakes still surface early.

The package, from the top down:
- module.py: one LLVM module per gpu.module (globals, kernels with `ptx_kernel` and launch-bound
  attributes, declarations, metadata) and the entry points below.
- function.py: one function body; names SSA values, walks regions, dispatches ops by name to the
  handlers of ops_arith.py (arith, math, vector), ops_scf.py (scf.for / scf.if as basic blocks),
  ops_llvm.py (memory, aggregates, calls, inline asm, llvm.intr.*) and ops_nvvm.py.
- libm.py: exp, log, tanh, erf, ... expanded in f32 (NVPTX has no libm), with accuracy notes.
- emitter.py: the instruction buffer both function bodies and math helpers write through.
- llvm_types.py: LLVM spellings of types and constants; common.py: TranslationError, op access.

Public API: `translate_gpu_module`, `gpu_modules_to_llvm_ir`, `module_to_llvm_ir`,
`find_gpu_modules`, `TranslationError`, `TRIPLE`, `llvm_type`, `float_literal`,
`constant_literal`; the math helpers' constants (`LOG2E`, `TANH_POLY`, ...) for tests that
model them.
"""

from __future__ import annotations

from .common import TranslationError
from .libm import (
    ERF_CENTER,
    ERF_CLAMP,
    ERF_LARGE_POLY,
    ERF_SMALL,
    ERF_SMALL_POLY,
    EXP_CLAMP,
    LN2,
    LOG2E,
    TANH_POLY,
    TANH_SMALL,
)
from .llvm_types import constant_literal, float_literal, llvm_type
from .module import (
    TRIPLE,
    find_gpu_modules,
    gpu_modules_to_llvm_ir,
    module_to_llvm_ir,
    translate_gpu_module,
)

__all__ = [
    "TranslationError",
    "translate_gpu_module",
    "gpu_modules_to_llvm_ir",
    "module_to_llvm_ir",
    "find_gpu_modules",
    "llvm_type",
    "float_literal",
    "constant_literal",
    "TRIPLE",
    "LOG2E",
    "LN2",
    "EXP_CLAMP",
    "TANH_SMALL",
    "TANH_POLY",
    "ERF_SMALL",
    "ERF_SMALL_POLY",
    "ERF_CLAMP",
    "ERF_CENTER",
    "ERF_LARGE_POLY",
]
