"""Translate the kernels of an nvvm-level module (docs/ir-levels.md) into LLVM IR for NVPTX.

Each `gpu.module` becomes one LLVM module (triple `nvptx64-nvidia-cuda`) holding its
`llvm.mlir.global`s and `llvm.func`s. Kernels (`nvvm.kernel`) get LLVM 22's `ptx_kernel` calling
convention, and launch bounds become function attributes (`"nvvm.maxntid"="256,1,1"`; LLVM 22
reads these instead of `!nvvm.annotations`).

Why LLVM IR *text* rather than `llvmlite.ir` objects: llvmlite 0.50's IR builder has no bfloat
type, no `ptx_kernel` calling convention and only clumsy support for string function
attributes; the textual IR covers all of them, is what LLVM documents, and is parsed and verified
by `llvmlite.binding.parse_assembly` (lowering/ptx.py), so mistakes still surface early.

Lowering choices:
- `index` is i64; `scf.for` becomes a header/body/exit loop with phi nodes (signed compare unless
  `unsignedCmp`), `scf.if` becomes branches and a merge block with phis.
- LLVM's NVPTX backend has no libm, so transcendental `math` ops are expanded here, in f32, into
  helper functions `@__fuser_<fn>f` (internal, alwaysinline) built from NVVM intrinsics and fma;
  f16/bf16 operands are extended to f32 and the result truncated; vectors are done lane by lane.
  f64 transcendentals are not supported (TranslationError).
  * exp(x): 2^(x*log2 e) with ex2.approx.ftz, plus an fma-computed correction for the rounding of
    x*log2 e (so the error does not grow with |x|): about 1 ulp given a correctly rounded ex2,
    and ex2.approx adds at most 2^-22 relative error: overall about 2-3 ulp (< 4e-7 relative).
    Results below 2^-126 flush to zero (ftz).
  * exp2/log2/rsqrt: ex2.approx.ftz / lg2.approx / rsqrt.approx (about 2 ulp).
  * log(x) = lg2.approx(x) * ln 2: relative error about 2 ulp except near x = 1 where lg2.approx's
    absolute error (about 2^-22) dominates; log1p uses the classic u = 1 + x correction.
  * tanh(x): |x| < 0.55: x + x^3 * P(x^2) (degree-4 fit); else sign(x) * (1 - 2 / (exp(2|x|) + 1)).
  * erf(x): |x| < 1: x * P(x^2) (degree-5 fit); else sign(x) * (1 - exp(R(min(|x|, 4) - 2.5)))
    with R a degree-8 fit of log(erfc); erfc(4) is below half an ulp of 1.
  The polynomial coefficients below were fitted with numpy (least squares on Chebyshev nodes) and
  are checked by test/python/test_nvvm_translation.py, which evaluates the same sequences in
  numpy float32: max relative error about 1.2e-7 (exp), 1.9e-7 (tanh), 1.7e-7 (erf).
- `arith.maximumf/minimumf` -> `llvm.maximum/minimum` (NaN-propagating, `max.NaN.f32`),
  `arith.maxnumf/minnumf` -> `llvm.maxnum/minnum`.

Public API: `translate_gpu_module`, `gpu_modules_to_llvm_ir`, `module_to_llvm_ir`,
`TranslationError`.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    VectorType,
)
from xdsl.dialects.llvm import (
    LLVMArrayType,
    LLVMFunctionType,
    LLVMPointerType,
    LLVMStructType,
    LLVMVoidType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

TRIPLE = "nvptx64-nvidia-cuda"

# -------------------------------------------------------------------------------------------
# Polynomial coefficients (float32 values, lowest degree first). See the module docstring.
# -------------------------------------------------------------------------------------------

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
EXP_CLAMP = (-104.0, 89.0)  # exp(-104) flushes to 0 (ftz), exp(89) overflows to inf

TANH_SMALL = 0.55
# tanh(x) = x + x^3 * P(x^2) for |x| < TANH_SMALL
TANH_POLY = (
    -0.33333316445350647,
    0.13332580029964447,
    -0.053851865231990814,
    0.02107025310397148,
    -0.006272607482969761,
)

ERF_SMALL = 1.0
# erf(x) = x * P(x^2) for |x| < ERF_SMALL
ERF_SMALL_POLY = (
    1.1283791065216064,
    -0.37612318992614746,
    0.11280130594968796,
    -0.02670994959771633,
    0.004916023463010788,
    -0.0005625396152026951,
)
ERF_CLAMP = 4.0
ERF_CENTER = 2.5
# log(erfc(t)) = R(t - ERF_CENTER) for ERF_SMALL <= t <= ERF_CLAMP
ERF_LARGE_POLY = (
    -7.806815147399902,
    -5.352680683135986,
    -0.9438936114311218,
    -0.01085851714015007,
    0.0021651603747159243,
    -0.0004201445553917438,
    7.739442662568763e-05,
    -1.3309389942151029e-05,
    1.6140616025950294e-06,
)


class TranslationError(Exception):
    """An op, type or attribute the nvvm-level -> LLVM IR translation does not handle."""


# -------------------------------------------------------------------------------------------
# Types and constants
# -------------------------------------------------------------------------------------------

_FLOAT_TYPES: dict[type, str] = {
    Float16Type: "half",
    BFloat16Type: "bfloat",
    Float32Type: "float",
    Float64Type: "double",
}


def llvm_type(t: Attribute) -> str:
    """The LLVM IR spelling of an MLIR type (`index` is i64)."""
    if isinstance(t, IndexType):
        return "i64"
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    if type(t) in _FLOAT_TYPES:
        return _FLOAT_TYPES[type(t)]
    if isinstance(t, VectorType):
        shape = t.get_shape()
        if len(shape) != 1 or any(t.get_scalable_dims()):
            raise TranslationError(f"only fixed 1-D vectors are supported, got {t}")
        return f"<{shape[0]} x {llvm_type(t.get_element_type())}>"
    if isinstance(t, LLVMPointerType):
        space = t.addr_space.data if hasattr(t.addr_space, "data") else 0
        return "ptr" if space == 0 else f"ptr addrspace({space})"
    if isinstance(t, LLVMArrayType):
        return f"[{t.size.data} x {llvm_type(t.type)}]"
    if isinstance(t, LLVMStructType):
        return "{ " + ", ".join(llvm_type(e) for e in t.types.data) + " }"
    if isinstance(t, LLVMVoidType):
        return "void"
    raise TranslationError(f"cannot translate type {t}")


def _mangle(ty: str) -> str:
    """Intrinsic name suffix of an LLVM type: float -> f32, <4 x half> -> v4f16."""
    if ty.startswith("<"):
        n, _, elt = ty[1:-1].partition(" x ")
        return f"v{n}{_mangle(elt)}"
    return {"half": "f16", "bfloat": "bf16", "float": "f32", "double": "f64"}.get(ty, ty)


def _element(ty: str) -> tuple[str, int | None]:
    """(element type, lane count or None for scalars)."""
    if ty.startswith("<"):
        n, _, elt = ty[1:-1].partition(" x ")
        return elt, int(n)
    return ty, None


def float_literal(value: float, ty: str) -> str:
    """An exact LLVM IR literal for a float of type `ty` (hex, so no rounding surprises)."""
    if ty == "double":
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if ty == "float":
        # LLVM spells float constants as the double holding the same value.
        (f,) = struct.unpack("<f", struct.pack("<f", value)) if math.isfinite(value) else (value,)
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", f))[0]
    if ty == "half":
        return "0xH%04X" % struct.unpack("<H", struct.pack("<e", value))[0]
    if ty == "bfloat":
        (bits,) = struct.unpack("<I", struct.pack("<f", value))
        if math.isnan(value):
            return "0xR7FC0"
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        return "0xR%04X" % bits
    raise TranslationError(f"not a float type: {ty}")


def _int_literal(value: int, ty: str) -> str:
    width = int(ty[1:])
    if width == 1:
        return "true" if value & 1 else "false"
    value &= (1 << width) - 1
    if value >= 1 << (width - 1):  # print as signed
        value -= 1 << width
    return str(value)


def _scalar_literal(value: int | float, ty: str) -> str:
    return _int_literal(int(value), ty) if ty.startswith("i") else float_literal(float(value), ty)


def constant_literal(attr: Attribute, t: Attribute) -> str:
    """The LLVM IR literal of a constant attribute (`arith.constant`, `llvm.mlir.constant`)."""
    ty = llvm_type(t)
    if isinstance(attr, IntegerAttr):
        return _int_literal(attr.value.data, ty)
    if isinstance(attr, FloatAttr):
        return float_literal(attr.value.data, ty)
    if isinstance(attr, DenseIntOrFPElementsAttr):
        elt, n = _element(ty)
        values = list(attr.get_values())
        if n is None:
            if len(values) != 1:
                raise TranslationError(f"dense constant {attr} does not fit {ty}")
            return _scalar_literal(values[0], elt)
        if len(values) == 1:
            values = values * n
        if all(v == 0 for v in values) and not any(
            isinstance(v, float) and math.copysign(1, v) < 0 for v in values
        ):
            return "zeroinitializer"
        return "<" + ", ".join(f"{elt} {_scalar_literal(v, elt)}" for v in values) + ">"
    raise TranslationError(f"cannot translate constant {attr} of type {t}")


def _name(op: Operation) -> str:
    """The op's name, also for ops parsed in generic form without a registered definition."""
    op_name = getattr(op, "op_name", None)
    return op_name.data if isinstance(op_name, StringAttr) else op.name


def _prop(op: Operation, name: str) -> Attribute | None:
    """A property or attribute of `op` (generic, unregistered ops keep them either way)."""
    if name in op.properties:
        return op.properties[name]
    return op.attributes.get(name)


def _int_prop(op: Operation, name: str) -> int | None:
    attr = _prop(op, name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _escape(s: str) -> str:
    """Escape a string for an LLVM IR string literal."""
    return "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "\\%02X" % ord(c) for c in s)


# -------------------------------------------------------------------------------------------
# Instruction emission
# -------------------------------------------------------------------------------------------


class _Emitter:
    """Appends instructions to one LLVM function body and names values."""

    def __init__(self, module: _ModuleTranslator, func_name: str):
        self.module = module
        self.func_name = func_name
        self.lines: list[str] = []
        self.block = "entry"
        self._n = 0

    def fresh(self, hint: str = "v") -> str:
        self._n += 1
        return f"%{hint}{self._n}"

    def label(self, hint: str) -> str:
        self._n += 1
        return f"{hint}{self._n}"

    def emit(self, text: str) -> None:
        self.lines.append("  " + text)

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

    # Small helpers used by the math expansions (f32 scalars).
    def f(self, value: float) -> str:
        return float_literal(value, "float")

    def fma(self, a: str, b: str, c: str) -> str:
        return self.call("float", "llvm.fma.f32", [("float", a), ("float", b), ("float", c)])

    def fbin(self, op: str, a: str, b: str) -> str:
        return self.inst(f"{op} float {a}, {b}")

    def horner(self, coeffs: Sequence[float], x: str) -> str:
        acc = self.f(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.f(c))
        return acc


# -------------------------------------------------------------------------------------------
# Math helpers: each defines `float @__fuser_<name>f(float %x)` into the module once.
# -------------------------------------------------------------------------------------------


def _helper_exp(e: _Emitter, x: str) -> str:
    lo, hi = EXP_CLAMP
    x = e.call("float", "llvm.maximum.f32", [("float", x), ("float", e.f(lo))])
    x = e.call("float", "llvm.minimum.f32", [("float", x), ("float", e.f(hi))])
    t = e.fbin("fmul", x, e.f(LOG2E))
    # err = x*log2e - t, exactly (fma), plus the part of log2e that float cannot hold.
    err = e.fma(x, e.f(LOG2E), e.inst(f"fneg float {t}"))
    err = e.fma(x, e.f(LOG2E - float(struct.unpack("<f", struct.pack("<f", LOG2E))[0])), err)
    p = e.call("float", "llvm.nvvm.ex2.approx.ftz.f", [("float", t)])
    # 2^(t + err) = 2^t * (1 + err*ln2); keep inf as inf (inf * small + inf could be NaN).
    r = e.fma(p, e.fbin("fmul", err, e.f(LN2)), p)
    is_inf = e.inst(f"fcmp oeq float {p}, {e.f(math.inf)}")
    return e.inst(f"select i1 {is_inf}, float {p}, float {r}")


def _helper_exp2(e: _Emitter, x: str) -> str:
    return e.call("float", "llvm.nvvm.ex2.approx.ftz.f", [("float", x)])


def _helper_log2(e: _Emitter, x: str) -> str:
    return e.call("float", "llvm.nvvm.lg2.approx.f", [("float", x)])


def _helper_log(e: _Emitter, x: str) -> str:
    return e.fbin("fmul", _helper_log2(e, x), e.f(LN2))


def _helper_log10(e: _Emitter, x: str) -> str:
    return e.fbin("fmul", _helper_log2(e, x), e.f(math.log10(2.0)))


def _helper_log1p(e: _Emitter, x: str) -> str:
    # log1p(x) = log(u) * x / (u - 1) with u = 1 + x (exact correction of u's rounding).
    u = e.fbin("fadd", x, e.f(1.0))
    um1 = e.fbin("fsub", u, e.f(1.0))
    scaled = e.fbin("fdiv", e.fbin("fmul", _helper_log(e, u), x), um1)
    is_one = e.inst(f"fcmp oeq float {um1}, {e.f(0.0)}")
    is_inf = e.inst(f"fcmp oeq float {u}, {e.f(math.inf)}")
    r = e.inst(f"select i1 {is_one}, float {x}, float {scaled}")
    return e.inst(f"select i1 {is_inf}, float {u}, float {r}")


def _helper_rsqrt(e: _Emitter, x: str) -> str:
    return e.call("float", "llvm.nvvm.rsqrt.approx.f", [("float", x)])


def _helper_tanh(e: _Emitter, x: str) -> str:
    ax = e.call("float", "llvm.fabs.f32", [("float", x)])
    # small |x|: x + x^3 * P(x^2)
    s = e.fbin("fmul", x, x)
    small = e.fma(e.fbin("fmul", x, s), e.horner(TANH_POLY, s), x)
    # large |x|: 1 - 2 / (exp(2|x|) + 1), with the sign of x
    ex = _helper_exp(e, e.fbin("fmul", ax, e.f(2.0)))
    big = e.fbin("fsub", e.f(1.0), e.fbin("fdiv", e.f(2.0), e.fbin("fadd", ex, e.f(1.0))))
    big = e.call("float", "llvm.copysign.f32", [("float", big), ("float", x)])
    is_small = e.inst(f"fcmp olt float {ax}, {e.f(TANH_SMALL)}")  # false for NaN -> big -> NaN
    return e.inst(f"select i1 {is_small}, float {small}, float {big}")


def _helper_erf(e: _Emitter, x: str) -> str:
    ax = e.call("float", "llvm.fabs.f32", [("float", x)])
    small = e.fbin("fmul", x, e.horner(ERF_SMALL_POLY, e.fbin("fmul", x, x)))
    t = e.call("float", "llvm.minimum.f32", [("float", ax), ("float", e.f(ERF_CLAMP))])
    r = e.horner(ERF_LARGE_POLY, e.fbin("fsub", t, e.f(ERF_CENTER)))
    big = e.fbin("fsub", e.f(1.0), _helper_exp(e, r))
    big = e.call("float", "llvm.copysign.f32", [("float", big), ("float", x)])
    is_small = e.inst(f"fcmp olt float {ax}, {e.f(ERF_SMALL)}")
    return e.inst(f"select i1 {is_small}, float {small}, float {big}")


_MATH_HELPERS: dict[str, Callable[[_Emitter, str], str]] = {
    "math.exp": _helper_exp,
    "math.exp2": _helper_exp2,
    "math.log": _helper_log,
    "math.log2": _helper_log2,
    "math.log10": _helper_log10,
    "math.log1p": _helper_log1p,
    "math.rsqrt": _helper_rsqrt,
    "math.tanh": _helper_tanh,
    "math.erf": _helper_erf,
}

# math ops that are plain LLVM intrinsics (overloaded on the operand type, vectors included).
_MATH_INTRINSICS: dict[str, str] = {
    "math.sqrt": "llvm.sqrt",
    "math.absf": "llvm.fabs",
    "math.fma": "llvm.fma",
    "math.floor": "llvm.floor",
    "math.ceil": "llvm.ceil",
    "math.round": "llvm.round",
    "math.roundeven": "llvm.roundeven",
    "math.trunc": "llvm.trunc",
    "math.copysign": "llvm.copysign",
}

_INT_BINARY = {
    "arith.addi": "add",
    "arith.subi": "sub",
    "arith.muli": "mul",
    "arith.divsi": "sdiv",
    "arith.divui": "udiv",
    "arith.remsi": "srem",
    "arith.remui": "urem",
    "arith.andi": "and",
    "arith.ori": "or",
    "arith.xori": "xor",
    "arith.shli": "shl",
    "arith.shrsi": "ashr",
    "arith.shrui": "lshr",
}
_FLOAT_BINARY = {
    "arith.addf": "fadd",
    "arith.subf": "fsub",
    "arith.mulf": "fmul",
    "arith.divf": "fdiv",
    "arith.remf": "frem",
}
_BINARY_INTRINSICS = {
    "arith.maxsi": "llvm.smax",
    "arith.minsi": "llvm.smin",
    "arith.maxui": "llvm.umax",
    "arith.minui": "llvm.umin",
    "arith.maximumf": "llvm.maximum",
    "arith.minimumf": "llvm.minimum",
    "arith.maxnumf": "llvm.maxnum",
    "arith.minnumf": "llvm.minnum",
}
_ARITH_CASTS = {
    "arith.extf": "fpext",
    "arith.truncf": "fptrunc",
    "arith.extsi": "sext",
    "arith.extui": "zext",
    "arith.trunci": "trunc",
    "arith.sitofp": "sitofp",
    "arith.uitofp": "uitofp",
    "arith.fptosi": "fptosi",
    "arith.fptoui": "fptoui",
    "arith.bitcast": "bitcast",
    "vector.bitcast": "bitcast",
}
_LLVM_CASTS = {
    f"llvm.{c}": c
    for c in (
        "bitcast addrspacecast ptrtoint inttoptr sext zext trunc fpext fptrunc "
        "sitofp uitofp fptosi fptoui"
    ).split()
}
_LLVM_BINARY = {
    f"llvm.{c}": c
    for c in "add sub mul udiv sdiv urem srem and or xor shl lshr ashr fadd fsub fmul fdiv frem".split()
}
_CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_CMPF = [
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
]  # fmt: skip
_SHFL_KINDS = ("bfly", "up", "down", "idx")


def _fast_math(op: Operation) -> str:
    """LLVM fast-math flags (with a trailing space) from an op's `fastmath` property."""
    attr = _prop(op, "fastmath") or _prop(op, "fastmathFlags")
    flags = getattr(attr, "data", None)
    if not flags:
        return ""
    names = sorted(getattr(f, "value", str(f)) for f in flags)
    if set(names) >= {"reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn"}:
        return "fast "
    return " ".join(names) + " "


# -------------------------------------------------------------------------------------------
# Function translation
# -------------------------------------------------------------------------------------------


class _FunctionTranslator:
    def __init__(self, module: _ModuleTranslator, func: Operation, name: str):
        self.module = module
        self.func = func
        self.name = name
        self.e = _Emitter(module, name)
        self.values: dict[SSAValue, str] = {}

    # --- values -------------------------------------------------------------------------
    def v(self, value: SSAValue) -> str:
        try:
            return self.values[value]
        except KeyError:
            raise TranslationError(f"value {value} used before definition (in @{self.name})")

    def tv(self, value: SSAValue) -> str:
        return f"{llvm_type(value.type)} {self.v(value)}"

    def error(self, op: Operation, why: str = "") -> TranslationError:
        where = f"in @{self.name}"
        loc = getattr(op, "location", None)
        if hasattr(loc, "filename") and hasattr(loc, "line"):
            where += f" at {loc.filename.data}:{loc.line.data}:{loc.column.data}"
        return TranslationError(f"cannot translate '{_name(op)}' ({where})" + (f": {why}" if why else ""))

    # --- regions ------------------------------------------------------------------------
    def emit_block(self, block: Block) -> list[SSAValue]:
        """Emit the ops of `block`; return the operands of its `scf.yield` (if any)."""
        for op in block.ops:
            if _name(op) == "scf.yield":
                return list(op.operands)
            self.emit_op(op)
        return []

    def emit_region(self, region: Region) -> list[SSAValue]:
        if len(region.blocks) != 1:
            raise TranslationError(f"only single-block regions are supported (in @{self.name})")
        return self.emit_block(region.blocks.first)

    def translate(self) -> list[str]:
        body = self.func.regions[0]
        if len(body.blocks) != 1:
            raise TranslationError(
                f"llvm.func @{self.name}: only single-block bodies are supported "
                "(use scf.for / scf.if for control flow)"
            )
        block = body.blocks.first
        for i, arg in enumerate(block.args):
            self.values[arg] = f"%arg{i}"
        self.e.start_block("entry")
        self.emit_block(block)
        return self.e.lines

    # --- ops ----------------------------------------------------------------------------
    def set_result(self, op: Operation, value: str) -> None:
        self.values[op.results[0]] = value

    def emit_op(self, op: Operation) -> None:
        name = _name(op)
        e = self.e
        try:
            handler = self._HANDLERS.get(name)
            if handler is not None:
                handler(self, op)
            elif name in _INT_BINARY or name in _FLOAT_BINARY or name in _LLVM_BINARY:
                inst = _INT_BINARY.get(name) or _LLVM_BINARY.get(name)
                flags = ""
                if inst is None:
                    inst, flags = _FLOAT_BINARY[name], _fast_math(op)
                elif inst.startswith("f"):
                    flags = _fast_math(op)
                a, b = op.operands
                self.set_result(op, e.inst(f"{inst} {flags}{self.tv(a)}, {self.v(b)}"))
            elif name in _BINARY_INTRINSICS:
                ty = llvm_type(op.results[0].type)
                fn = f"{_BINARY_INTRINSICS[name]}.{_mangle(ty)}"
                self.set_result(op, e.call(ty, fn, [(ty, self.v(x)) for x in op.operands]))
            elif name in _ARITH_CASTS or name in _LLVM_CASTS:
                inst = _ARITH_CASTS.get(name) or _LLVM_CASTS[name]
                self._cast(op, inst)
            elif name in ("arith.index_cast", "arith.index_castui"):
                src, dst = llvm_type(op.operands[0].type), llvm_type(op.results[0].type)
                sw, dw = int(_element(src)[0][1:]), int(_element(dst)[0][1:])
                if sw == dw:
                    self.set_result(op, self.v(op.operands[0]))
                else:
                    ext = "sext" if name == "arith.index_cast" else "zext"
                    self._cast(op, ext if dw > sw else "trunc")
            elif name in _MATH_INTRINSICS:
                ty = llvm_type(op.results[0].type)
                fn = f"{_MATH_INTRINSICS[name]}.{_mangle(ty)}"
                self.set_result(op, e.call(ty, fn, [(ty, self.v(x)) for x in op.operands]))
            elif name in _MATH_HELPERS:
                self._math_helper(op)
            elif name.startswith("nvvm.read.ptx.sreg."):
                fn = "llvm.nvvm.read.ptx.sreg." + name.removeprefix("nvvm.read.ptx.sreg.")
                self.set_result(op, e.call("i32", fn, []))
            elif name.startswith("llvm.intr."):
                self._llvm_intrinsic(op)
            else:
                raise self.error(op)
        except TranslationError as err:
            if f"(in @{self.name}" in str(err):
                raise
            raise self.error(op, str(err)) from err
        except (AttributeError, KeyError, IndexError, ValueError, TypeError) as err:
            raise self.error(op, f"malformed op ({type(err).__name__}: {err})") from err

    def _cast(self, op: Operation, inst: str) -> None:
        src = op.operands[0]
        dst = llvm_type(op.results[0].type)
        self.set_result(op, self.e.inst(f"{inst} {self.tv(src)} to {dst}"))

    def _llvm_intrinsic(self, op: Operation) -> None:
        ty = llvm_type(op.results[0].type) if op.results else "void"
        base = "llvm." + _name(op).removeprefix("llvm.intr.")
        fn = f"{base}.{_mangle(ty)}"
        value = self.e.call(ty, fn, [(llvm_type(x.type), self.v(x)) for x in op.operands])
        if op.results:
            self.set_result(op, value)

    # arith / math
    def _constant(self, op: Operation) -> None:
        self.set_result(op, constant_literal(_prop(op, "value"), op.results[0].type))

    def _negf(self, op: Operation) -> None:
        self.set_result(op, self.e.inst(f"fneg {_fast_math(op)}{self.tv(op.operands[0])}"))

    def _cmpi(self, op: Operation) -> None:
        pred = _CMPI[_int_prop(op, "predicate")]
        a, b = op.operands
        self.set_result(op, self.e.inst(f"icmp {pred} {self.tv(a)}, {self.v(b)}"))

    def _cmpf(self, op: Operation) -> None:
        pred = _CMPF[_int_prop(op, "predicate")]
        a, b = op.operands
        self.set_result(op, self.e.inst(f"fcmp {_fast_math(op)}{pred} {self.tv(a)}, {self.v(b)}"))

    def _select(self, op: Operation) -> None:
        c, a, b = op.operands
        self.set_result(op, self.e.inst(f"select {self.tv(c)}, {self.tv(a)}, {self.tv(b)}"))

    def _absi(self, op: Operation) -> None:
        ty = llvm_type(op.results[0].type)
        args = [(ty, self.v(op.operands[0])), ("i1", "false")]
        self.set_result(op, self.e.call(ty, f"llvm.abs.{_mangle(ty)}", args))

    def _math_helper(self, op: Operation) -> None:
        """Apply an f32 helper to a scalar or vector of f16/bf16/f32."""
        e = self.e
        ty = llvm_type(op.results[0].type)
        elt, lanes = _element(ty)
        if elt not in ("half", "bfloat", "float"):
            raise TranslationError(f"'{_name(op)}' is only supported on f16, bf16 and f32, not {elt}")
        fn = self.module.helper(_name(op))
        x = self.v(op.operands[0])
        wide = "float" if lanes is None else f"<{lanes} x float>"
        if elt != "float":
            x = e.inst(f"fpext {ty} {x} to {wide}")
        if lanes is None:
            r = e.call("float", fn, [("float", x)], intrinsic=False)
        else:  # lane by lane
            r = "undef"
            for i in range(lanes):
                xi = e.inst(f"extractelement {wide} {x}, i32 {i}")
                ri = e.call("float", fn, [("float", xi)], intrinsic=False)
                r = e.inst(f"insertelement {wide} {r}, float {ri}, i32 {i}")
        if elt != "float":
            r = e.inst(f"fptrunc {wide} {r} to {ty}")
        self.set_result(op, r)

    # scf
    def _for(self, op: Operation) -> None:
        e = self.e
        lb, ub, step, *inits = op.operands
        body = op.regions[0].blocks.first
        iv, *iter_args = body.args
        ity = llvm_type(iv.type)
        pre = e.block
        header, body_label, exit_label = e.label("for.header"), e.label("for.body"), e.label("for.exit")
        e.emit(f"br label %{header}")
        e.start_block(header)
        phi_at = len(e.lines)
        iv_name = e.fresh("iv")
        self.values[iv] = iv_name
        arg_names = []
        for arg in iter_args:
            self.values[arg] = e.fresh("acc")
            arg_names.append(self.values[arg])
        pred = "ult" if _prop(op, "unsignedCmp") is not None else "slt"
        cond = e.inst(f"icmp {pred} {ity} {iv_name}, {self.v(ub)}")
        e.emit(f"br i1 {cond}, label %{body_label}, label %{exit_label}")
        e.start_block(body_label)
        yielded = self.emit_block(body)
        nxt = e.inst(f"add {ity} {iv_name}, {self.v(step)}")
        latch = e.block
        e.emit(f"br label %{header}")
        phis = [f"  {iv_name} = phi {ity} [ {self.v(lb)}, %{pre} ], [ {nxt}, %{latch} ]"]
        for arg, name, init, y in zip(iter_args, arg_names, inits, yielded, strict=True):
            t = llvm_type(arg.type)
            phis.append(f"  {name} = phi {t} [ {self.v(init)}, %{pre} ], [ {self.v(y)}, %{latch} ]")
        e.lines[phi_at:phi_at] = phis
        e.start_block(exit_label)
        for res, name in zip(op.results, arg_names, strict=True):
            self.values[res] = name

    def _if(self, op: Operation) -> None:
        e = self.e
        (cond,) = op.operands
        then_region, else_region = op.regions
        has_else = bool(else_region.blocks) and (
            bool(op.results) or any(_name(o) != "scf.yield" for o in else_region.blocks.first.ops)
        )
        then_label, merge = e.label("if.then"), e.label("if.end")
        else_label = e.label("if.else") if has_else else merge
        e.emit(f"br i1 {self.v(cond)}, label %{then_label}, label %{else_label}")
        incoming: list[tuple[list[SSAValue], str]] = []
        e.start_block(then_label)
        then_vals = self.emit_region(then_region)
        incoming.append(([self.v(x) for x in then_vals], e.block))
        e.emit(f"br label %{merge}")
        if has_else:
            e.start_block(else_label)
            else_vals = self.emit_region(else_region)
            incoming.append(([self.v(x) for x in else_vals], e.block))
            e.emit(f"br label %{merge}")
        e.start_block(merge)
        for i, res in enumerate(op.results):
            t = llvm_type(res.type)
            edges = ", ".join(f"[ {vals[i]}, %{blk} ]" for vals, blk in incoming)
            self.values[res] = e.inst(f"phi {t} {edges}")

    # llvm
    def _gep(self, op: Operation) -> None:
        ptr, *dynamic = op.operands
        raw = _prop(op, "rawConstantIndices")
        raw_indices = list(raw.iter_values()) if isinstance(raw, DenseArrayBase) else []
        dyn = iter(dynamic)
        indices = []
        for idx in raw_indices:
            if idx == -2147483648:  # GEP_USE_SSA_VAL: take the next SSA index
                indices.append(self.tv(next(dyn)))
            else:
                indices.append(f"i32 {idx}")
        inbounds = "inbounds " if _prop(op, "inbounds") is not None else ""
        elem = llvm_type(_prop(op, "elem_type"))
        text = f"getelementptr {inbounds}{elem}, {self.tv(ptr)}, " + ", ".join(indices)
        self.set_result(op, self.e.inst(text, "p"))

    def _mem_suffix(self, op: Operation) -> str:
        align = _int_prop(op, "alignment")
        text = f", align {align}" if align else ""
        if _prop(op, "nontemporal") is not None:
            text += ", !nontemporal " + self.module.metadata("!{i32 1}")
        if _prop(op, "invariant") is not None:
            text += ", !invariant.load " + self.module.metadata("!{}")
        return text

    def _check_ordering(self, op: Operation) -> None:
        if _int_prop(op, "ordering"):
            raise TranslationError("atomic loads/stores are not supported")

    def _load(self, op: Operation) -> None:
        self._check_ordering(op)
        volatile = "volatile " if _prop(op, "volatile_") is not None else ""
        ty = llvm_type(op.results[0].type)
        ptr = self.tv(op.operands[0])
        self.set_result(op, self.e.inst(f"load {volatile}{ty}, {ptr}{self._mem_suffix(op)}"))

    def _store(self, op: Operation) -> None:
        self._check_ordering(op)
        volatile = "volatile " if _prop(op, "volatile_") is not None else ""
        value, ptr = op.operands
        self.e.emit(f"store {volatile}{self.tv(value)}, {self.tv(ptr)}{self._mem_suffix(op)}")

    def _alloca(self, op: Operation) -> None:
        elem = llvm_type(_prop(op, "elem_type"))
        align = _int_prop(op, "alignment")
        text = f"alloca {elem}, {self.tv(op.operands[0])}" + (f", align {align}" if align else "")
        res_type = op.results[0].type
        space = getattr(getattr(res_type, "addr_space", None), "data", 0)
        if space:
            text += f", addrspace({space})"
        self.set_result(op, self.e.inst(text, "p"))

    def _addressof(self, op: Operation) -> None:
        ref = _prop(op, "global_name")
        if not isinstance(ref, SymbolRefAttr):
            raise TranslationError("missing global_name")
        self.set_result(op, "@" + ref.root_reference.data)

    def _undef(self, op: Operation) -> None:
        self.set_result(op, "undef")

    def _poison(self, op: Operation) -> None:
        self.set_result(op, "poison")

    def _zero(self, op: Operation) -> None:
        t = op.results[0].type
        self.set_result(op, "null" if isinstance(t, LLVMPointerType) else "zeroinitializer")

    def _extractelement(self, op: Operation) -> None:
        vec, pos = op.operands
        self.set_result(op, self.e.inst(f"extractelement {self.tv(vec)}, {self.tv(pos)}"))

    def _insertelement(self, op: Operation) -> None:
        if hasattr(op, "vector") and hasattr(op, "value"):
            vec, value, pos = op.vector, op.value, op.index
        else:  # generic form, upstream operand order
            vec, value, pos = op.operands
        self.set_result(
            op, self.e.inst(f"insertelement {self.tv(vec)}, {self.tv(value)}, {self.tv(pos)}")
        )

    def _vector_broadcast(self, op: Operation) -> None:
        (src,) = op.operands
        ty = llvm_type(op.results[0].type)
        if isinstance(src.type, VectorType):
            raise TranslationError("only scalar -> vector broadcasts are supported")
        elt, lanes = _element(ty)
        one = self.e.inst(f"insertelement <1 x {elt}> undef, {self.tv(src)}, i32 0")
        mask = f"<{lanes} x i32> zeroinitializer"
        self.set_result(op, self.e.inst(f"shufflevector <1 x {elt}> {one}, <1 x {elt}> undef, {mask}"))

    def _vector_position(self, op: Operation, dynamic: Sequence[SSAValue]) -> str:
        static = list(_prop(op, "static_position").iter_values())
        if len(static) != 1:
            raise TranslationError("only 1-D vectors with one position are supported")
        if static[0] == -9223372036854775808:  # ShapedType::kDynamic: the SSA position
            return self.tv(dynamic[0])
        return f"i32 {static[0]}"

    def _vector_extract(self, op: Operation) -> None:
        vec, *dynamic = op.operands
        if isinstance(op.results[0].type, VectorType):
            raise TranslationError("only extracting scalars is supported")
        pos = self._vector_position(op, dynamic)
        self.set_result(op, self.e.inst(f"extractelement {self.tv(vec)}, {pos}"))

    def _vector_insert(self, op: Operation) -> None:
        src, dest, *dynamic = op.operands
        if isinstance(src.type, VectorType):
            raise TranslationError("only inserting scalars is supported")
        pos = self._vector_position(op, dynamic)
        self.set_result(op, self.e.inst(f"insertelement {self.tv(dest)}, {self.tv(src)}, {pos}"))

    def _extractvalue(self, op: Operation) -> None:
        pos = ", ".join(str(i) for i in _prop(op, "position").iter_values())
        self.set_result(op, self.e.inst(f"extractvalue {self.tv(op.operands[0])}, {pos}"))

    def _insertvalue(self, op: Operation) -> None:
        container, value = op.operands
        pos = ", ".join(str(i) for i in _prop(op, "position").iter_values())
        self.set_result(
            op, self.e.inst(f"insertvalue {self.tv(container)}, {self.tv(value)}, {pos}")
        )

    def _inline_asm(self, op: Operation) -> None:
        asm, constraints = _prop(op, "asm_string"), _prop(op, "constraints")
        if not isinstance(asm, StringAttr) or not isinstance(constraints, StringAttr):
            raise TranslationError("missing asm_string / constraints")
        ret = llvm_type(op.results[0].type) if op.results else "void"
        flags = ""
        if _prop(op, "has_side_effects") is not None:
            flags += "sideeffect "
        if _prop(op, "is_align_stack") is not None:
            flags += "alignstack "
        if _int_prop(op, "asm_dialect") == 1:
            flags += "inteldialect "
        args = ", ".join(self.tv(x) for x in op.operands)
        text = f'call {ret} asm {flags}"{_escape(asm.data)}", "{_escape(constraints.data)}"({args})'
        if op.results:
            self.set_result(op, self.e.inst(text))
        else:
            self.e.emit(text)

    def _call(self, op: Operation) -> None:
        callee = _prop(op, "callee")
        if not isinstance(callee, SymbolRefAttr):
            raise TranslationError("indirect calls are not supported")
        ret = llvm_type(op.results[0].type) if op.results else "void"
        args = [(llvm_type(x.type), self.v(x)) for x in op.operands]
        value = self.e.call(ret, callee.root_reference.data, args, intrinsic=False)
        if op.results:
            self.set_result(op, value)

    def _return(self, op: Operation) -> None:
        self.e.emit(f"ret {self.tv(op.operands[0])}" if op.operands else "ret void")

    # nvvm
    def _barrier(self, op: Operation) -> None:
        segments = _prop(op, "operandSegmentSizes")
        sizes = list(segments.iter_values()) if isinstance(segments, DenseArrayBase) else [0, 0]
        operands = list(op.operands)
        bar_id = self.v(operands[0]) if sizes[0] else "0"
        if sizes[1]:
            count = self.v(operands[sizes[0]])
            self.e.call(
                "void",
                "llvm.nvvm.barrier.cta.sync.aligned.count",
                [("i32", bar_id), ("i32", count)],
            )
        else:
            self.e.call("void", "llvm.nvvm.barrier.cta.sync.aligned.all", [("i32", bar_id)])

    def _shfl(self, op: Operation) -> None:
        kind_attr = _prop(op, "kind")
        kind = getattr(getattr(kind_attr, "data", None), "value", None)
        if kind not in _SHFL_KINDS:
            raise TranslationError(f"unknown shuffle kind {kind_attr}")
        mask, val, offset, clamp = op.operands
        vty = llvm_type(val.type)
        if vty not in ("i32", "float"):
            raise TranslationError(f"shuffle of {vty} (only i32 and f32)")
        suffix = "f32" if vty == "float" else "i32"
        ret = vty
        if _prop(op, "return_value_and_is_valid") is not None:
            suffix += "p"
            ret = f"{{ {vty}, i1 }}"
        args = [("i32", self.v(mask)), (vty, self.v(val)), ("i32", self.v(offset)), ("i32", self.v(clamp))]
        self.set_result(op, self.e.call(ret, f"llvm.nvvm.shfl.sync.{kind}.{suffix}", args))

    # Hopper: wgmma groups and mbarriers (the rest arrives as llvm.inline_asm)
    def _wgmma_fence(self, op: Operation) -> None:
        self.e.call("void", "llvm.nvvm.wgmma.fence.sync.aligned", [])

    def _wgmma_commit(self, op: Operation) -> None:
        self.e.call("void", "llvm.nvvm.wgmma.commit_group.sync.aligned", [])

    def _wgmma_wait(self, op: Operation) -> None:
        n = _int_prop(op, "group")
        if n is None:
            raise TranslationError("missing 'group'")
        self.e.call("void", "llvm.nvvm.wgmma.wait_group.sync.aligned", [("i64", str(n))])

    def _mbarrier_init(self, op: Operation) -> None:
        addr, count = op.operands
        self.e.call("void", "llvm.nvvm.mbarrier.init.shared", [(llvm_type(addr.type), self.v(addr)), ("i32", self.v(count))])

    def _mbarrier_arrive(self, op: Operation) -> None:
        (addr,) = op.operands
        self.set_result(op, self.e.call("i64", "llvm.nvvm.mbarrier.arrive.shared", [(llvm_type(addr.type), self.v(addr))]))

    _HANDLERS: dict[str, Callable[[_FunctionTranslator, Operation], None]] = {
        "nvvm.wgmma.fence.aligned": _wgmma_fence,
        "nvvm.wgmma.commit.group.sync.aligned": _wgmma_commit,
        "nvvm.wgmma.wait.group.sync.aligned": _wgmma_wait,
        "nvvm.mbarrier.init.shared": _mbarrier_init,
        "nvvm.mbarrier.arrive.shared": _mbarrier_arrive,
        "arith.constant": _constant,
        "llvm.mlir.constant": _constant,
        "arith.negf": _negf,
        "llvm.fneg": _negf,
        "arith.cmpi": _cmpi,
        "arith.cmpf": _cmpf,
        "arith.select": _select,
        "llvm.select": _select,
        "math.absi": _absi,
        "scf.for": _for,
        "scf.if": _if,
        "llvm.getelementptr": _gep,
        "llvm.load": _load,
        "llvm.store": _store,
        "llvm.alloca": _alloca,
        "llvm.mlir.addressof": _addressof,
        "llvm.mlir.undef": _undef,
        "llvm.mlir.poison": _poison,
        "llvm.mlir.zero": _zero,
        "llvm.extractelement": _extractelement,
        "llvm.insertelement": _insertelement,
        "llvm.extractvalue": _extractvalue,
        "llvm.insertvalue": _insertvalue,
        "llvm.inline_asm": _inline_asm,
        "llvm.call": _call,
        "llvm.return": _return,
        "vector.broadcast": _vector_broadcast,
        "vector.extract": _vector_extract,
        "vector.insert": _vector_insert,
        "nvvm.barrier": _barrier,
        "nvvm.shfl.sync": _shfl,
    }


# -------------------------------------------------------------------------------------------
# Module translation
# -------------------------------------------------------------------------------------------

# Kernel attributes (upstream MLIR name -> the string function attribute LLVM 22's NVPTX backend
# reads; e.g. "nvvm.cluster_dim"="2,1,1" gives .explicitcluster / .reqnctapercluster 2, 1, 1).
_LAUNCH_BOUNDS = {
    "nvvm.maxntid": "nvvm.maxntid",
    "nvvm.reqntid": "nvvm.reqntid",
    "nvvm.minctasm": "nvvm.minctasm",
    "nvvm.maxnreg": "nvvm.maxnreg",
    "nvvm.cluster_dim": "nvvm.cluster_dim",
    "nvvm.cluster_max_blocks": "nvvm.maxclusterrank",
}


class _ModuleTranslator:
    def __init__(self, name: str):
        self.name = name
        self.globals: list[str] = []
        self.functions: list[str] = []
        self.declarations: dict[str, str] = {}
        self.helpers: dict[str, str] = {}
        self.attribute_groups: list[str] = []
        self.metadata_nodes: dict[str, str] = {}

    def declare(self, fn: str, ret: str, arg_types: Sequence[str]) -> None:
        self.declarations.setdefault(fn, f"declare {ret} @{fn}({', '.join(arg_types)})")

    def metadata(self, node: str) -> str:
        if node not in self.metadata_nodes:
            self.metadata_nodes[node] = f"!{len(self.metadata_nodes)}"
        return self.metadata_nodes[node]

    def helper(self, op_name: str) -> str:
        """Define (once) the f32 helper for a math op; return its name."""
        fn = f"__fuser_{op_name.removeprefix('math.')}f"
        if fn not in self.helpers:
            e = _Emitter(self, fn)
            e.start_block("entry")
            e.emit(f"ret float {_MATH_HELPERS[op_name](e, '%x')}")
            body = "\n".join(e.lines)
            self.helpers[fn] = (
                f"define internal float @{fn}(float %x) #{self.attr_group('alwaysinline')} {{\n"
                f"{body}\n}}"
            )
        return fn

    def attr_group(self, text: str) -> int:
        if text not in self.attribute_groups:
            self.attribute_groups.append(text)
        return self.attribute_groups.index(text)

    def add_global(self, op: Operation) -> None:
        name = _prop(op, "sym_name").data
        ty = llvm_type(_prop(op, "global_type"))
        linkage_attr = _prop(op, "linkage")
        linkage = linkage_attr.linkage.data if linkage_attr is not None else "external"
        space = _int_prop(op, "addr_space") or 0
        value = _prop(op, "value")
        kind = "constant" if _prop(op, "constant") is not None else "global"
        parts = [f"@{name} ="]
        if linkage != "external" or value is None:
            parts.append(linkage)
        if space:
            parts.append(f"addrspace({space})")
        parts.append(f"{kind} {ty}")
        if value is not None and space == 3:
            raise TranslationError(f"shared-memory global @{name} cannot have an initializer")
        if value is not None:
            parts.append(constant_literal(value, _prop(op, "global_type")))
        elif linkage != "external":
            parts.append("undef")  # shared memory has no initializer
        text = " ".join(parts)
        align = _int_prop(op, "alignment")
        if align:
            text += f", align {align}"
        self.globals.append(text)

    def add_function(self, op: Operation) -> None:
        name = _prop(op, "sym_name").data
        ftype = _prop(op, "function_type")
        if not isinstance(ftype, LLVMFunctionType):
            raise TranslationError(f"llvm.func @{name}: missing function_type")
        ret = llvm_type(ftype.output)
        cconv = _prop(op, "CConv")
        cconv_name = getattr(cconv, "cconv_name", "ccc")
        kernel = "nvvm.kernel" in op.attributes or cconv_name == "ptx_kernel"
        arg_attrs = _prop(op, "arg_attrs")
        params = []
        for i, t in enumerate(ftype.inputs.data):
            text = llvm_type(t)
            if isinstance(arg_attrs, ArrayAttr) and i < len(arg_attrs.data):
                text += _param_attrs(arg_attrs.data[i])
            params.append(text)
        linkage_attr = _prop(op, "linkage")
        linkage = linkage_attr.linkage.data if linkage_attr is not None else "external"
        if not op.regions[0].blocks:
            self.declare(name, ret, [llvm_type(t) for t in ftype.inputs.data])
            return
        fn_attrs = []
        for key, llvm_key in _LAUNCH_BOUNDS.items():
            attr = op.attributes.get(key)
            if attr is None:
                continue
            if isinstance(attr, DenseArrayBase):
                values = ",".join(str(v) for v in attr.iter_values())
            elif isinstance(attr, IntegerAttr):
                values = str(attr.value.data)
            else:
                raise TranslationError(f"llvm.func @{name}: cannot translate {key} = {attr}")
            fn_attrs.append(f'"{llvm_key}"="{values}"')
        head = "define "
        if linkage != "external":
            head += f"{linkage} "
        if kernel:
            head += "ptx_kernel "
        elif cconv_name != "ccc":
            head += f"{cconv_name} "
        head += f"{ret} @{name}(" + ", ".join(f"{p} %arg{i}" for i, p in enumerate(params)) + ")"
        if fn_attrs:
            head += f" #{self.attr_group(' '.join(fn_attrs))}"
        lines = _FunctionTranslator(self, op, name).translate()
        self.functions.append(head + " {\n" + "\n".join(lines) + "\n}")

    def text(self) -> str:
        parts = [f"; ModuleID = '{self.name}'", f'target triple = "{TRIPLE}"', ""]
        if self.globals:
            parts += self.globals + [""]
        for chunk in (self.functions, list(self.helpers.values())):
            for f in chunk:
                parts += [f, ""]
        parts += sorted(self.declarations.values())
        if self.attribute_groups:
            parts.append("")
            parts += [f"attributes #{i} = {{ {a} }}" for i, a in enumerate(self.attribute_groups)]
        if self.metadata_nodes:
            parts.append("")
            parts += [f"{n} = {node}" for node, n in self.metadata_nodes.items()]
        return "\n".join(parts) + "\n"


def _param_attrs(attrs: Attribute) -> str:
    """LLVM parameter attributes from an `arg_attrs` entry (`llvm.noalias`, `llvm.align = 16`)."""
    if not isinstance(attrs, DictionaryAttr):
        return ""
    out = []
    for key, value in attrs.data.items():
        if key == "nvvm.grid_constant":
            out.append('"nvvm.grid_constant"')  # LLVM 22 NVPTX: param attribute
            continue
        if key == "llvm.byval":
            out.append(f"byval({llvm_type(value)})")
            continue
        if not key.startswith("llvm."):
            continue
        name = key.removeprefix("llvm.")
        if isinstance(value, UnitAttr):
            out.append(name)
        elif isinstance(value, IntegerAttr):
            out.append(f"{name}({value.value.data})" if name != "align" else f"align {value.value.data}")
    return "".join(" " + a for a in out)


def translate_gpu_module(gpu_module: Operation) -> str:
    """LLVM IR text for one `gpu.module` (or any op whose single-block region holds
    `llvm.func` / `llvm.mlir.global` ops)."""
    name = _prop(gpu_module, "sym_name")
    name_text = name.data if isinstance(name, StringAttr) else _name(gpu_module)
    if len(gpu_module.regions) != 1 or len(gpu_module.regions[0].blocks) != 1:
        raise TranslationError(f"'{_name(gpu_module)}' @{name_text} must have one single-block region")
    t = _ModuleTranslator(name_text)
    for op in gpu_module.regions[0].blocks.first.ops:
        if _name(op) == "llvm.mlir.global":
            t.add_global(op)
    for op in gpu_module.regions[0].blocks.first.ops:
        if _name(op) == "llvm.func":
            t.add_function(op)
        elif _name(op) not in ("llvm.mlir.global", "gpu.module_end"):
            raise TranslationError(f"cannot translate '{_name(op)}' (in gpu.module @{name_text})")
    return t.text()


def find_gpu_modules(module: Operation) -> list[Operation]:
    """The `gpu.module` ops directly inside `module` (a builtin.module)."""
    if _name(module) == "gpu.module":
        return [module]
    if not module.regions:
        return []
    return [op for op in module.regions[0].blocks.first.ops if _name(op) == "gpu.module"]


def gpu_modules_to_llvm_ir(module: ModuleOp | Operation) -> dict[str, str]:
    """{gpu.module name: LLVM IR text} for every gpu.module in `module`. A module holding
    `llvm.func`s directly (no gpu.module) is translated as one unit named after itself."""
    gpu_modules = find_gpu_modules(module)
    if not gpu_modules:
        has_funcs = module.regions and any(
            _name(op) == "llvm.func" for op in module.regions[0].blocks.first.ops
        )
        if not has_funcs:
            raise TranslationError("no gpu.module (and no llvm.func) to translate")
        ops = list(module.regions[0].blocks.first.ops)
        unsupported = [_name(op) for op in ops if _name(op) not in ("llvm.func", "llvm.mlir.global")]
        if unsupported:
            raise TranslationError(f"cannot translate '{unsupported[0]}' (in the top-level module)")
        return {"module": translate_gpu_module(module)}
    out = {}
    for g in gpu_modules:
        out[_prop(g, "sym_name").data] = translate_gpu_module(g)
    return out


def module_to_llvm_ir(module: ModuleOp | Operation) -> str:
    """LLVM IR text of every gpu.module in `module`, one after another (each starts with its own
    `; ModuleID = '<name>'` line; with several gpu.modules the text is for reading, not parsing)."""
    return "\n".join(gpu_modules_to_llvm_ir(module).values())


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
]
