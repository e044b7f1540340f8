"""Handlers for value computation: `arith`, `math` and `vector` ops, and the `llvm` dialect's
spellings of the same instructions (llvm.add, llvm.fneg, llvm.select, llvm.bitcast, ...).

- `index` is i64; `arith.index_cast(ui)` is a no-op, sext/zext or trunc by width.
- `arith.maximumf/minimumf` -> `llvm.maximum/minimum` (NaN-propagating, `max.NaN.f32`),
  `arith.maxnumf/minnumf` -> `llvm.maxnum/minnum`.
- Plain math ops are LLVM intrinsics overloaded on the operand type (vectors included); the
  transcendental ones call the f32 helpers of libm.py (f16/bf16 extended, vectors lane by lane)
  or, for f64, the f64 helpers of libm_f64.py and libm_erf_f64.py (math_f64.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import Float8E4M3FNType, Float8E5M2Type, VectorType
from xdsl.ir import Operation, SSAValue

from .common import TranslationError, int_prop, op_name, prop
from .libm import MATH_HELPERS, MATH_HELPERS2
from .math_f64 import MATH_F64, MATH_F64_2
from .llvm_types import constant_literal, element, llvm_type, mangle

if TYPE_CHECKING:
    from .function import FunctionTranslator

# -------------------------------------------------------------------------------------------
# Op name -> LLVM instruction or intrinsic
# -------------------------------------------------------------------------------------------

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
_LLVM_BINARY = {
    f"llvm.{c}": c
    for c in "add sub mul udiv sdiv urem srem and or xor shl lshr ashr fadd fsub fmul fdiv frem".split()
}
# Intrinsics overloaded on the result type (`llvm.smax.i32`, `llvm.sqrt.v4f32`).
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
_MATH_INTRINSICS = {
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
_CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_CMPF = [
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
]  # fmt: skip


def fast_math(op: Operation) -> str:
    """LLVM fast-math flags (with a trailing space) from an op's `fastmath` property."""
    attr = prop(op, "fastmath") or prop(op, "fastmathFlags")
    flags = getattr(attr, "data", None)
    if not flags:
        return ""
    names = sorted(getattr(f, "value", str(f)) for f in flags)
    if set(names) >= {"reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn"}:
        return "fast "
    return " ".join(names) + " "


# -------------------------------------------------------------------------------------------
# Handlers shared by a table of ops (bound to their instruction with functools.partial)
# -------------------------------------------------------------------------------------------


def _binary(inst: str, ft: FunctionTranslator, op: Operation) -> None:
    flags = fast_math(op) if inst.startswith("f") else ""
    a, b = op.operands
    ft.set_result(op, ft.e.inst(f"{inst} {flags}{ft.tv(a)}, {ft.v(b)}"))


def _overloaded_intrinsic(base: str, ft: FunctionTranslator, op: Operation) -> None:
    ty = llvm_type(op.results[0].type)
    fn = f"{base}.{mangle(ty)}"
    ft.set_result(op, ft.e.call(ty, fn, [(ty, ft.v(x)) for x in op.operands]))


def _cast(inst: str, ft: FunctionTranslator, op: Operation) -> None:
    src = op.operands[0]
    dst = llvm_type(op.results[0].type)
    ft.set_result(op, ft.e.inst(f"{inst} {ft.tv(src)} to {dst}"))


def _fp8_name(t) -> str | None:
    """"e4m3" / "e5m2" for an FP8 type (f8E4M3FN, f8E5M2), else None."""
    return {Float8E4M3FNType: "e4m3", Float8E5M2Type: "e5m2"}.get(type(t))


def _float_cast(inst: str, ft: FunctionTranslator, op: Operation) -> None:
    """`arith.extf` / `arith.truncf` / `arith.bitcast`; FP8 (kept as i8 bits: LLVM has no FP8
    type) is converted with the cvt instructions of sm_89+ (PTX ISA 7.8), through the NVPTX
    intrinsics `llvm.nvvm.ff.to.{e4m3,e5m2}x2.rn` (`cvt.rn.satfinite.{e4m3,e5m2}x2.f32`) and
    `llvm.nvvm.{e4m3,e5m2}x2.to.f16x2.rn` (`cvt.rn.f16x2.{e4m3,e5m2}x2`, exact)."""
    src, dst = op.operands[0].type, op.results[0].type
    if inst == "bitcast" and llvm_type(src) == llvm_type(dst):  # i8 <-> FP8: the same bits
        ft.set_result(op, ft.v(op.operands[0]))
    elif inst == "fpext" and _fp8_name(src):
        ft.set_result(op, _fp8_to_float(ft, ft.v(op.operands[0]), _fp8_name(src), llvm_type(dst)))
    elif inst == "fptrunc" and _fp8_name(dst):
        x = ft.v(op.operands[0])
        if llvm_type(src) != "float":  # (f64: through f32, as torch converts a double)
            x = ft.e.inst(f"fptrunc {llvm_type(src)} {x} to float")
        ft.set_result(op, _float_to_fp8(ft, x, _fp8_name(dst)))
    else:
        _cast(inst, ft, op)


def _fp8_to_float(ft: FunctionTranslator, bits: str, fmt: str, dst: str) -> str:
    """FP8 bits (i8) to `dst` (half, float or double): the pair conversion to f16x2 on the low
    byte, lane 0 (the low half) extended; exact, NaN stays NaN."""
    e = ft.e
    pair = e.inst(f"zext i8 {bits} to i16")
    h2 = e.call("<2 x half>", f"llvm.nvvm.{fmt}x2.to.f16x2.rn", [("i16", pair)])
    h = e.inst(f"extractelement <2 x half> {h2}, i32 0")
    return h if dst == "half" else e.inst(f"fpext half {h} to {dst}")


def _float_to_fp8(ft: FunctionTranslator, x: str, fmt: str) -> str:
    """f32 `x` to FP8 bits (i8) by torch's rule (dialects/fusion/fp8.py): round to nearest even
    with `cvt.rn.satfinite` (x in both lanes, the low byte kept), then selects for what
    satfinite does otherwise: NaN is 0x7F with x's sign bit; f8E4M3FN saturates, |x| > 448
    (inf too) giving +-448 (0x7E); f8E5M2 does not: |x| >= 61440, which rounds past 57344,
    is +-inf (0x7C)."""
    e = ft.e
    pair = e.call("i16", f"llvm.nvvm.ff.to.{fmt}x2.rn", [("float", x), ("float", x)])
    r = e.inst(f"trunc i16 {pair} to i8")
    neg = e.inst(f"icmp slt i32 {e.inst(f'bitcast float {x} to i32')}, 0")
    sign = e.inst(f"select i1 {neg}, i8 -128, i8 0")
    mag = e.call("float", "llvm.fabs.f32", [("float", x)])
    limit, big = (448.0, 0x7E) if fmt == "e4m3" else (61440.0, 0x7C)
    over = e.inst(f"fcmp {'ogt' if fmt == 'e4m3' else 'oge'} float {mag}, {e.f(limit)}")
    r = e.inst(f"select i1 {over}, i8 {e.inst(f'or i8 {sign}, {big}')}, i8 {r}")
    nan = e.inst(f"fcmp uno float {x}, 0.0")
    return e.inst(f"select i1 {nan}, i8 {e.inst(f'or i8 {sign}, 127')}, i8 {r}")


def _index_cast(ext: str, ft: FunctionTranslator, op: Operation) -> None:
    """index <-> integer: nothing between equal widths, else `ext` (sext/zext) or trunc."""
    src, dst = llvm_type(op.operands[0].type), llvm_type(op.results[0].type)
    sw, dw = int(element(src)[0][1:]), int(element(dst)[0][1:])
    if sw == dw:
        ft.set_result(op, ft.v(op.operands[0]))
    else:
        _cast(ext if dw > sw else "trunc", ft, op)


# -------------------------------------------------------------------------------------------
# One-op handlers
# -------------------------------------------------------------------------------------------


def _constant(ft: FunctionTranslator, op: Operation) -> None:
    ft.set_result(op, constant_literal(prop(op, "value"), op.results[0].type))


def _negf(ft: FunctionTranslator, op: Operation) -> None:
    ft.set_result(op, ft.e.inst(f"fneg {fast_math(op)}{ft.tv(op.operands[0])}"))


def _cmpi(ft: FunctionTranslator, op: Operation) -> None:
    pred = _CMPI[int_prop(op, "predicate")]
    a, b = op.operands
    ft.set_result(op, ft.e.inst(f"icmp {pred} {ft.tv(a)}, {ft.v(b)}"))


def _cmpf(ft: FunctionTranslator, op: Operation) -> None:
    pred = _CMPF[int_prop(op, "predicate")]
    a, b = op.operands
    ft.set_result(op, ft.e.inst(f"fcmp {fast_math(op)}{pred} {ft.tv(a)}, {ft.v(b)}"))


def _select(ft: FunctionTranslator, op: Operation) -> None:
    c, a, b = op.operands
    ft.set_result(op, ft.e.inst(f"select {ft.tv(c)}, {ft.tv(a)}, {ft.tv(b)}"))


def _absi(ft: FunctionTranslator, op: Operation) -> None:
    ty = llvm_type(op.results[0].type)
    args = [(ty, ft.v(op.operands[0])), ("i1", "false")]
    ft.set_result(op, ft.e.call(ty, f"llvm.abs.{mangle(ty)}", args))


def _math_helper(ft: FunctionTranslator, op: Operation) -> None:
    """Apply an f32 helper (libm.py) to scalars or vectors of f16/bf16/f32 (its operands'), or
    an f64 helper (libm_f64.py) to f64 ones."""
    e = ft.e
    ty = llvm_type(op.results[0].type)
    elt, lanes = element(ty)
    if elt == "double":
        name = op_name(op)
        if name not in MATH_F64 and name not in MATH_F64_2:
            raise TranslationError(f"'{name}' has no f64 lowering (f64 math: {', '.join(sorted([*MATH_F64, *MATH_F64_2]))})")
        fn = ft.module.helper_f64(name)
        xs = [ft.v(o) for o in op.operands]
        if lanes is None:
            ft.set_result(op, e.call("double", fn, [("double", x) for x in xs], intrinsic=False))
            return
        r = "undef"
        for i in range(lanes):
            args = [("double", e.inst(f"extractelement {ty} {x}, i32 {i}")) for x in xs]
            r = e.inst(f"insertelement {ty} {r}, double {e.call('double', fn, args, intrinsic=False)}, i32 {i}")
        ft.set_result(op, r)
        return
    if elt not in ("half", "bfloat", "float"):
        raise TranslationError(f"'{op_name(op)}' is only supported on f16, bf16, f32 and f64, not {elt}")
    fn = ft.module.helper(op_name(op))
    wide = "float" if lanes is None else f"<{lanes} x float>"
    xs = [ft.v(o) for o in op.operands]
    if elt != "float":
        xs = [e.inst(f"fpext {ty} {x} to {wide}") for x in xs]
    if lanes is None:
        r = e.call("float", fn, [("float", x) for x in xs], intrinsic=False)
    else:  # lane by lane
        r = "undef"
        for i in range(lanes):
            args = [("float", e.inst(f"extractelement {wide} {x}, i32 {i}")) for x in xs]
            ri = e.call("float", fn, args, intrinsic=False)
            r = e.inst(f"insertelement {wide} {r}, float {ri}, i32 {i}")
    if elt != "float":
        r = e.inst(f"fptrunc {wide} {r} to {ty}")
    ft.set_result(op, r)


def _remf(ft: FunctionTranslator, op: Operation) -> None:
    """arith.remf (C's fmod): fuser's exact helpers for f16/bf16/f32 and f64 (NVPTX's `frem` is
    a - b * trunc(a / b), inexact for large quotients)."""
    _math_helper(ft, op)


def _mului_extended(ft: FunctionTranslator, op: Operation) -> None:
    """arith.mului_extended of i32 (Philox's rounds, lowering/emitters/random.py): the low word a `mul`,
    the high one NVVM's mulhi (`mul.hi.u32`; ptxas pairs the two into one wide multiply). A
    64-bit product of zero-extended words instead let LLVM keep the rounds' words in 64-bit
    registers and multiply them with `mul.lo.s64`."""
    a, b = op.operands
    if llvm_type(a.type) != "i32":
        raise ft.error(op, "only i32 scalars are supported")
    ft.values[op.results[0]] = ft.e.inst(f"mul i32 {ft.v(a)}, {ft.v(b)}")
    ft.values[op.results[1]] = ft.e.call("i32", "llvm.nvvm.mulhi.ui", [("i32", ft.v(a)), ("i32", ft.v(b))])


# vector (1-D vectors of scalars only)


def _vector_broadcast(ft: FunctionTranslator, op: Operation) -> None:
    (src,) = op.operands
    ty = llvm_type(op.results[0].type)
    if isinstance(src.type, VectorType):
        raise TranslationError("only scalar -> vector broadcasts are supported")
    elt, lanes = element(ty)
    one = ft.e.inst(f"insertelement <1 x {elt}> undef, {ft.tv(src)}, i32 0")
    mask = f"<{lanes} x i32> zeroinitializer"
    ft.set_result(op, ft.e.inst(f"shufflevector <1 x {elt}> {one}, <1 x {elt}> undef, {mask}"))


def _vector_position(ft: FunctionTranslator, op: Operation, dynamic: Sequence[SSAValue]) -> str:
    static = list(prop(op, "static_position").iter_values())
    if len(static) != 1:
        raise TranslationError("only 1-D vectors with one position are supported")
    if static[0] == -9223372036854775808:  # ShapedType::kDynamic: the SSA position
        return ft.tv(dynamic[0])
    return f"i32 {static[0]}"


def _vector_extract(ft: FunctionTranslator, op: Operation) -> None:
    vec, *dynamic = op.operands
    if isinstance(op.results[0].type, VectorType):
        raise TranslationError("only extracting scalars is supported")
    pos = _vector_position(ft, op, dynamic)
    ft.set_result(op, ft.e.inst(f"extractelement {ft.tv(vec)}, {pos}"))


def _vector_insert(ft: FunctionTranslator, op: Operation) -> None:
    src, dest, *dynamic = op.operands
    if isinstance(src.type, VectorType):
        raise TranslationError("only inserting scalars is supported")
    pos = _vector_position(ft, op, dynamic)
    ft.set_result(op, ft.e.inst(f"insertelement {ft.tv(dest)}, {ft.tv(src)}, {pos}"))


HANDLERS: dict[str, Callable[[FunctionTranslator, Operation], None]] = {
    **{name: partial(_binary, inst) for name, inst in _INT_BINARY.items()},
    **{name: partial(_binary, inst) for name, inst in _FLOAT_BINARY.items()},
    **{name: partial(_binary, inst) for name, inst in _LLVM_BINARY.items()},
    **{name: partial(_overloaded_intrinsic, fn) for name, fn in _BINARY_INTRINSICS.items()},
    **{name: partial(_overloaded_intrinsic, fn) for name, fn in _MATH_INTRINSICS.items()},
    **{name: partial(_float_cast if inst in ("fpext", "fptrunc", "bitcast") else _cast, inst)
       for name, inst in _ARITH_CASTS.items()},
    **{name: partial(_cast, inst) for name, inst in _LLVM_CASTS.items()},
    **{name: _math_helper for name in [*MATH_HELPERS, *MATH_HELPERS2, *MATH_F64, *MATH_F64_2]},
    "arith.remf": _remf,
    "arith.mului_extended": _mului_extended,
    "arith.index_cast": partial(_index_cast, "sext"),
    "arith.index_castui": partial(_index_cast, "zext"),
    "arith.constant": _constant,
    "llvm.mlir.constant": _constant,
    "arith.negf": _negf,
    "llvm.fneg": _negf,
    "arith.cmpi": _cmpi,
    "llvm.icmp": _cmpi,  # the same predicate numbering
    "arith.cmpf": _cmpf,
    "arith.select": _select,
    "llvm.select": _select,
    "math.absi": _absi,
    "vector.broadcast": _vector_broadcast,
    "vector.extract": _vector_extract,
    "vector.insert": _vector_insert,
}
