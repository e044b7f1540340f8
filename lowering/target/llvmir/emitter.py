"""`Emitter`: the instruction buffer of one LLVM function body, with value and label naming.

Function bodies (function.py) and the math helpers (libm.py) both write through an Emitter; calls
to intrinsics declare them in the enclosing module as a side effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .llvm_types import float_literal

if TYPE_CHECKING:
    from .module import ModuleTranslator


class Emitter:
    """Appends instructions to one LLVM function body and names values."""

    def __init__(self, module: ModuleTranslator, func_name: str):
        self.module = module
        self.func_name = func_name
        self.lines: list[str] = []
        self.block = "entry"
        self._n = 0
        self.dbg = ""  # the `!DILocation` instructions get (the op being translated), or none

    def fresh(self, hint: str = "v") -> str:
        self._n += 1
        return f"%{hint}{self._n}"

    def label(self, hint: str) -> str:
        self._n += 1
        return f"{hint}{self._n}"

    def emit(self, text: str) -> None:
        self.lines.append("  " + text + (f", !dbg {self.dbg}" if self.dbg else ""))

    def inst(self, text: str, hint: str = "v") -> str:
        """Emit `%name = text`, return %name."""
        name = self.fresh(hint)
        self.emit(f"{name} = {text}")
        return name

    def start_block(self, label: str) -> None:
        self.lines.append(f"{label}:")
        self.block = label

    def call(self, ret: str, fn: str, args: Sequence[tuple[str, str]], intrinsic: bool = True) -> str:
        if intrinsic:
            self.module.declare(fn, ret, [t for t, _ in args])
        text = f"call {ret} @{fn}(" + ", ".join(f"{t} {v}" for t, v in args) + ")"
        if ret == "void":
            self.emit(text)
            return ""
        return self.inst(text)

    # Small helpers used by the math expansions: f32 scalars, or f64 with ty="double".
    def f(self, value: float, ty: str = "float") -> str:
        return float_literal(value, ty)

    def fma(self, a: str, b: str, c: str, ty: str = "float") -> str:
        return self.call(ty, f"llvm.fma.{'f64' if ty == 'double' else 'f32'}", [(ty, a), (ty, b), (ty, c)])

    def fbin(self, op: str, a: str, b: str, ty: str = "float") -> str:
        return self.inst(f"{op} {ty} {a}, {b}")

    def horner(self, coeffs: Sequence[float], x: str, ty: str = "float") -> str:
        acc = self.f(coeffs[-1], ty)
        for c in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.f(c, ty), ty)
        return acc

    # The f64 spellings (the trigonometric and hyperbolic helpers compute in double).
    def d(self, value: float) -> str:
        return self.f(value, "double")

    def dfma(self, a: str, b: str, c: str) -> str:
        return self.fma(a, b, c, "double")

    def dbin(self, op: str, a: str, b: str) -> str:
        return self.fbin(op, a, b, "double")

    def dhorner(self, coeffs: Sequence[float], x: str) -> str:
        return self.horner(coeffs, x, "double")

    def dcall(self, fn: str, *args: str) -> str:
        """An f64 intrinsic `llvm.<fn>.f64` of double arguments."""
        return self.call("double", f"llvm.{fn}.f64", [("double", a) for a in args])

    def select(self, cond: str, ty: str, a: str, b: str) -> str:
        return self.inst(f"select i1 {cond}, {ty} {a}, {ty} {b}")

    def dcmp(self, pred: str, a: str, b: str) -> str:
        return self.inst(f"fcmp {pred} double {a}, {b}")

