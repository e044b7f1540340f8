"""The one translation table from ATen ops to fusion ops.

`TABLE` maps an ATen op overload (`torch.ops.aten.add.Tensor`, ...) to a rule. A rule takes the
fx node and a `Ctx` (the FusionBuilder being filled and the fuser Tensors of the node's inputs)
and returns the fuser Tensor of the node's value, emitted through fuser's Python API. A rule
that cannot take the node (a dtype fuser has no math for, a symbolic shape, an argument it does
not know) raises `Unsupported`, and the node then runs in PyTorch.

Whether a node is supported is decided by the rule itself: `is_supported(node)` translates the
node alone into a scratch fusion whose inputs have the node's input types (from
`node.meta["val"]`) and checks that the result has the shape and dtype torch recorded. So "is
supported" is exactly "the table has an entry and it accepts this node", and the partitioner
never puts in a region a node that translation would then refuse.

Dtypes: fuser never promotes implicitly, so each rule follows torch: the node's result dtype
(`node.meta["val"].dtype`, torch's promotion already applied) decides the casts. Arithmetic on
f16/bf16 with a Python scalar (or mixed operand types) is computed in f32 and rounded once, as
torch computes half types ("opmath").
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx

import fuser.api as fa
import fuser.dialects.fusion as F

aten = torch.ops.aten
prims = torch.ops.prims


class Unsupported(Exception):
    """The table cannot translate this node: it runs in PyTorch."""


DTYPES: dict[torch.dtype, str] = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.bool: "i1", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
    torch.uint8: "u8", torch.float8_e4m3fn: "f8e4m3fn", torch.float8_e5m2: "f8e5m2",
}
TORCH_DTYPES = {v: k for k, v in DTYPES.items()}
MATH = ("f32", "f16", "bf16", "f64")  # element types fuser computes with (f16/bf16 in f32, f64 in f64)
HALF = ("f16", "bf16")


# ------------------------------------------------------------------ node metadata


def tensor_meta(v: Any, what: str) -> torch.Tensor:
    """A node value's example tensor, if fuser can hold it: static shape, a fuser dtype,
    strided. Empty tensors are taken: fusion-fold-empty gives their values (nothing, or a
    reduction's identity) and no kernel is launched for them."""
    if not isinstance(v, torch.Tensor):
        raise Unsupported(f"{what} is not a tensor ({type(v).__name__})")
    if v.layout != torch.strided:
        raise Unsupported(f"{what} has layout {v.layout}")
    if v.dtype not in DTYPES:
        raise Unsupported(f"{what} has dtype {v.dtype}, which fuser does not hold")
    if not all(isinstance(d, int) for d in v.shape):
        raise Unsupported(f"{what} has a symbolic shape {tuple(v.shape)}")
    if v.device.type not in ("cpu", "cuda"):
        raise Unsupported(f"{what} is on {v.device}")
    return v


def node_meta(node: fx.Node) -> torch.Tensor:
    return tensor_meta(node.meta.get("val"), f"%{node.name}")


def node_metas(node: fx.Node) -> list[torch.Tensor | None]:
    """The example tensors of a node with several results (None for a result torch left out)."""
    vals = node.meta.get("val")
    if not isinstance(vals, (tuple, list)):
        raise Unsupported(f"%{node.name} has one result, not several")
    return [None if v is None else tensor_meta(v, f"%{node.name}[{i}]") for i, v in enumerate(vals)]


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= max(d, 1)
    return tuple(reversed(out))


def dense_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int] | None:
    """The dim order in which a tensor is stored row-major (e.g. [0, 2, 1, 3] for a transpose of
    a contiguous tensor's dims 1 and 2), or None if it is not dense (overlapping, stride 0, gaps).
    Size-1 dims do not count; the identity means contiguous."""
    big = [d for d in range(len(shape)) if shape[d] > 1]  # size-1 dims stay where they are
    order = list(range(len(shape)))
    for place, d in zip(big, sorted(big, key=lambda d: -strides[d])):
        order[place] = d
    phys = tuple(shape[d] for d in order)
    want = _contiguous_strides(phys)
    if any(strides[d] != w for d, w in zip(order, want) if shape[d] > 1):
        return None
    return order


def permute(x: fa.Tensor, perm: list[int]) -> fa.Tensor:
    """fa.permute that folds into a permute x comes from (a permute of a permute is one, and
    the identity is x itself): transposes at a region's boundary then cost nothing."""
    owner = x.value.owner
    if isinstance(owner, F.PermuteOp):
        inner = list(owner.perm.get_values())
        perm = [inner[p] for p in perm]
        x = fa.Tensor(owner.operands[0], x.builder)
    if perm == list(range(x.ndim)):
        return x
    return fa.permute(x, perm)


def input_layout(m: torch.Tensor) -> tuple[tuple[int, ...], int]:
    """The layout a region declares for a strided (not dense) input like m: its strides, and
    its storage offset modulo a 16-byte line, so that the buffer the kernels read from starts
    16-byte aligned in the storage (CUDA allocations are) and m's own offset is inside it."""
    per_line = max(16 // m.element_size(), 1)
    return tuple(int(s) for s in m.stride()), int(m.storage_offset()) % per_line


def declare_input(fb: fa.FusionBuilder, m: torch.Tensor, name: str) -> tuple[fa.Tensor, list[int] | None]:
    """A fusion input for example tensor m, and the dim order in which the region takes it: a
    tensor stored in another dim order (a transposed weight saved for the backward, an attention
    output) is taken as its contiguous permute and permuted back in the fusion, not copied; one
    that is not dense (a slice with steps or gaps, an expanded view) is declared with its strides
    (`input_layout`) and read in place."""
    shape = tuple(m.shape)
    order = dense_order(shape, tuple(m.stride()))
    if order is None and math.prod(shape) > 0:
        strides, offset = input_layout(m)
        return fb.input(shape, DTYPES[m.dtype], name=name, strides=strides, offset=offset), None
    if order is None or order == list(range(len(shape))):
        return fb.input(shape, DTYPES[m.dtype], name=name), None
    x = fb.input(tuple(shape[d] for d in order), DTYPES[m.dtype], name=name)
    inverse = [order.index(d) for d in range(len(order))]
    return permute(x, inverse), order


@dataclass
class Ctx:
    """What a rule sees: the builder, the node, and the fuser Tensors of its input nodes."""
    fb: fa.FusionBuilder
    node: fx.Node
    env: dict[fx.Node, fa.Tensor] = field(default_factory=dict)

    @property
    def out(self) -> torch.Tensor:
        return node_meta(self.node)

    @property
    def outs(self) -> list[torch.Tensor | None]:
        return node_metas(self.node)

    @property
    def out_dtype(self) -> str:
        return DTYPES[self.out.dtype]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(self.out.shape)

    def arg(self, i: int, name: str | None = None, default: Any = None) -> Any:
        """Positional argument i (or keyword `name`), a fuser Tensor for a node."""
        args, kwargs = self.node.args, self.node.kwargs
        v = args[i] if i < len(args) else kwargs.get(name, default) if name else default
        return self.value(v)

    def value(self, v: Any) -> Any:
        if isinstance(v, fx.Node):
            if v not in self.env:
                raise Unsupported(f"%{v.name} has no fuser value")
            return self.env[v]
        return v

    def tensor(self, i: int, name: str | None = None) -> fa.Tensor:
        v = self.arg(i, name)
        if not isinstance(v, fa.Tensor):
            raise Unsupported(f"argument {i} of {self.node.target} is not a tensor")
        return v

    def kwarg_is(self, name: str, *allowed: Any) -> None:
        if name in self.node.kwargs and self.node.kwargs[name] not in allowed:
            raise Unsupported(f"{self.node.target}: {name}={self.node.kwargs[name]!r}")


# A rule gives the node's value: one Tensor, or a tuple (None where torch has no result) for
# ops with several results, which `operator.getitem` nodes then pick from.
Rule = Callable[[Ctx], "fa.Tensor | tuple[fa.Tensor | None, ...]"]
TABLE: dict[Any, Rule] = {}


def entry(*ops: Any) -> Callable[[Rule], Rule]:
    """Register a rule for one or more ATen overloads."""
    def register(rule: Rule) -> Rule:
        for op in ops:
            if op in TABLE:
                raise RuntimeError(f"{op} has two entries in the translation table")
            TABLE[op] = rule
        return rule
    return register


# ------------------------------------------------------------------ helpers


def _scalar(v: Any) -> float:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, numbers.Real):
        return float(v)
    raise Unsupported(f"expected a number, got {type(v).__name__}")


def _num_or_tensor(v: Any) -> fa.Tensor | float:
    return v if isinstance(v, fa.Tensor) else _scalar(v)


def _math_dtype(ctx: Ctx) -> str:
    dt = ctx.out_dtype
    if dt not in MATH:
        raise Unsupported(f"{ctx.node.target}: fuser computes on f32/f16/bf16/f64, not {dt}")
    return dt


def _compute_dtype(out: str, operands: list[Any]) -> str:
    """f32 for half results whose operands are not all tensors of the result type (torch's
    opmath), else the result type."""
    if out in HALF and any(not isinstance(x, fa.Tensor) or x.dtype != out for x in operands):
        return "f32"
    return out


def _cast_all(operands: list[Any], dt: str) -> list[Any]:
    return [fa.cast(x, dt) if isinstance(x, fa.Tensor) else _scalar(x) for x in operands]


def _pointwise(ctx: Ctx, fn: Callable[..., fa.Tensor], *operands: Any) -> fa.Tensor:
    """fn over operands cast to the compute type; the result cast to the node's dtype."""
    out = _math_dtype(ctx)
    ops = [_num_or_tensor(x) for x in operands]
    if not any(isinstance(x, fa.Tensor) for x in ops):
        raise Unsupported(f"{ctx.node.target}: no tensor operand")
    cd = _compute_dtype(out, ops)
    y = fn(*_cast_all(ops, cd))
    return fa.cast(fa.broadcast_to(y, ctx.out_shape), out)


# ------------------------------------------------------------------ pointwise math


def _binary_rule(fn: Callable[[Any, Any], fa.Tensor], has_alpha: bool = False) -> Rule:
    def rule(ctx: Ctx) -> fa.Tensor:
        a, b = ctx.arg(0, "self"), ctx.arg(1, "other")
        if has_alpha:
            alpha = ctx.node.kwargs.get("alpha", 1)
            if alpha != 1:
                alpha = _scalar(alpha)
                return _pointwise(ctx, lambda x, y: fn(x, fa.mul(y, alpha) if isinstance(y, fa.Tensor)
                                                       else y * alpha), a, b)
        return _pointwise(ctx, fn, a, b)
    return rule


entry(aten.add.Tensor, aten.add.Scalar)(_binary_rule(fa.add, has_alpha=True))
entry(aten.sub.Tensor, aten.sub.Scalar)(_binary_rule(fa.sub, has_alpha=True))
entry(aten.mul.Tensor, aten.mul.Scalar)(_binary_rule(fa.mul))
entry(aten.div.Tensor, aten.div.Scalar)(_binary_rule(fa.div))
entry(aten.maximum.default)(_binary_rule(fa.maximum))
entry(aten.minimum.default)(_binary_rule(fa.minimum))
entry(aten.atan2.default)(_binary_rule(fa.atan2))


@entry(aten.nextafter.default)
def _nextafter(ctx: Ctx) -> fa.Tensor:
    """On the grid of the node's dtype (f64 too), never computed in f32 for f16/bf16 as other
    math is: the neighbour of a bf16 value is a bf16 step."""
    out = ctx.out_dtype
    if out not in MATH:
        raise Unsupported(f"{ctx.node.target}: nextafter of {out}")
    a, b = (fa.cast(x, out) for x in (ctx.arg(0, "self"), ctx.arg(1, "other")))
    return fa.broadcast_to(fa.nextafter(a, b), ctx.out_shape)


INTS = ("i8", "i16", "i32", "i64", "u8")


def _int_scalar(ctx: Ctx, v: Any, dtype: str) -> int:
    """A Python number as an integer of `dtype` (refused when fractional or out of its range)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not float(v).is_integer():
        raise Unsupported(f"{ctx.node.target}: {v!r} with {dtype} tensors")
    info = torch.iinfo(TORCH_DTYPES[dtype])
    if not info.min <= int(v) <= info.max:
        raise Unsupported(f"{ctx.node.target}: {v!r} is outside {dtype}'s range")
    return int(v)


def _integer_pointwise(ctx: Ctx, fn: Callable[..., fa.Tensor], *operands: Any, masks: bool = False) -> fa.Tensor:
    """fn of integer operands (and, with `masks`, of i1 ones) in the node's dtype, which torch's
    promotion made their common type: tensors cast to it, Python numbers kept as they are (the
    API makes each a fusion.full of that type). Floats are refused (the ops below take none)."""
    out = ctx.out_dtype
    if out not in INTS and not (masks and out == "i1"):
        raise Unsupported(f"{ctx.node.target}: an integer op of {out}")
    ops = [x if isinstance(x, fa.Tensor) else x if isinstance(x, numbers.Integral) else _scalar(x) for x in operands]
    tensors = [x for x in ops if isinstance(x, fa.Tensor)]
    if not tensors:
        raise Unsupported(f"{ctx.node.target}: no tensor operand")
    if any(not isinstance(x, fa.Tensor) and not float(x).is_integer() for x in ops):
        raise Unsupported(f"{ctx.node.target}: a fractional scalar with integers")
    lo, hi = (0, 1) if out == "i1" else (int(torch.iinfo(TORCH_DTYPES[out]).min), int(torch.iinfo(TORCH_DTYPES[out]).max))
    if any(not isinstance(x, fa.Tensor) and not lo <= int(x) <= hi for x in ops):
        raise Unsupported(f"{ctx.node.target}: a scalar outside {out}'s range")
    y = fn(*(fa.cast(x, out) if isinstance(x, fa.Tensor) else int(x) for x in ops))
    return fa.cast(fa.broadcast_to(y, ctx.out_shape), out)


def _integer_or_float_rule(fn: Callable[[Any, Any], fa.Tensor]) -> Rule:
    """fn of floats (computed as `_pointwise` does) or of integers (in their type)."""
    def rule(ctx: Ctx) -> fa.Tensor:
        a, b = ctx.arg(0, "self"), ctx.arg(1, "other")
        if ctx.out_dtype in INTS:
            return _integer_pointwise(ctx, fn, a, b)
        return _pointwise(ctx, fn, a, b)
    return rule


entry(aten.fmod.Tensor, aten.fmod.Scalar)(_integer_or_float_rule(fa.fmod))
entry(aten.remainder.Tensor, aten.remainder.Scalar)(_integer_or_float_rule(fa.remainder))


@entry(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(ctx: Ctx) -> fa.Tensor:
    """div with rounding_mode: of integers fuser's trunc_div / floor_div (exact; a / 0 is -1 in
    fuser where torch raises on the CPU); trunc of floats is trunc(a / b), as torch computes it;
    floor of floats is left to PyTorch (torch corrects the quotient through fmod, which
    fuser.div's floor(a / b) does not)."""
    mode = ctx.node.kwargs.get("rounding_mode")
    a, b = ctx.arg(0, "self"), ctx.arg(1, "other")
    if mode is None:
        return _pointwise(ctx, fa.div, a, b)
    if ctx.out_dtype in INTS:
        return _integer_pointwise(ctx, lambda x, y: fa.div(x, y, rounding_mode=mode), a, b)
    if mode == "floor":
        raise Unsupported("div of floats with rounding_mode='floor'")
    return _pointwise(ctx, lambda x, y: fa.div(x, y, rounding_mode=mode), a, b)


@entry(aten.floor_divide.default, aten.floor_divide.Scalar)
def _floor_divide(ctx: Ctx) -> fa.Tensor:
    """a // b of integers (floats: left to PyTorch, as div's floor mode)."""
    return _integer_pointwise(ctx, fa.floor_divide, ctx.arg(0, "self"), ctx.arg(1, "other"))


def _integer_rule(fn: Callable[..., fa.Tensor], masks: bool = False, unary: bool = False) -> Rule:
    if unary:
        return lambda ctx: _integer_pointwise(ctx, fn, ctx.tensor(0), masks=masks)
    return lambda ctx: _integer_pointwise(ctx, fn, ctx.arg(0, "self"), ctx.arg(1, "other"), masks=masks)


# The bitwise ops (of masks too: there the logical ones), shifts (torch's __lshift__ and
# __rshift__ are its bitwise shifts, and stay in ATen graphs; __and__, __or__ and __xor__ become
# bitwise_and, _or and _xor while tracing) and gcd
for _ops, _fn, _masks in [
    ((aten.bitwise_and.Tensor, aten.bitwise_and.Scalar), fa.bitwise_and, True),
    ((aten.bitwise_or.Tensor, aten.bitwise_or.Scalar), fa.bitwise_or, True),
    ((aten.bitwise_xor.Tensor, aten.bitwise_xor.Scalar), fa.bitwise_xor, True),
    ((aten.bitwise_left_shift.Tensor, aten.bitwise_left_shift.Tensor_Scalar, aten.__lshift__.Tensor,
      aten.__lshift__.Scalar), fa.bitwise_left_shift, False),
    ((aten.bitwise_right_shift.Tensor, aten.bitwise_right_shift.Tensor_Scalar, aten.__rshift__.Tensor,
      aten.__rshift__.Scalar), fa.bitwise_right_shift, False),
    ((aten.gcd.default,), fa.gcd, False),
]:
    entry(*_ops)(_integer_rule(_fn, masks=_masks))
entry(aten.bitwise_not.default)(_integer_rule(fa.bitwise_not, masks=True, unary=True))


def _unary_rule(fn: Callable[[fa.Tensor], fa.Tensor]) -> Rule:
    return lambda ctx: _pointwise(ctx, fn, ctx.tensor(0))


for _op, _fn in [
    (aten.neg.default, fa.neg), (aten.abs.default, fa.abs), (aten.exp.default, fa.exp),
    (aten.log.default, fa.log), (aten.tanh.default, fa.tanh), (aten.sqrt.default, fa.sqrt),
    (aten.rsqrt.default, fa.rsqrt), (aten.relu.default, fa.relu), (aten.sigmoid.default, fa.sigmoid),
    (aten.silu.default, fa.silu), (aten.reciprocal.default, fa.reciprocal), (aten.erf.default, fa.erf),
    (aten.exp2.default, fa.exp2), (aten.log2.default, fa.log2), (aten.log10.default, fa.log10),
    (aten.log1p.default, fa.log1p), (aten.floor.default, fa.floor), (aten.ceil.default, fa.ceil),
    (aten.trunc.default, fa.trunc), (aten.round.default, fa.round), (aten.sign.default, fa.sign),
    (aten.sin.default, fa.sin), (aten.cos.default, fa.cos), (aten.tan.default, fa.tan), (aten.asin.default, fa.asin),
    (aten.acos.default, fa.acos), (aten.atan.default, fa.atan), (aten.sinh.default, fa.sinh),
    (aten.cosh.default, fa.cosh), (aten.asinh.default, fa.asinh), (aten.acosh.default, fa.acosh),
    (aten.atanh.default, fa.atanh), (aten.expm1.default, fa.expm1), (aten.erfc.default, fa.erfc),
    (aten.erfinv.default, fa.erfinv), (aten.lgamma.default, fa.lgamma),
]:
    entry(_op)(_unary_rule(_fn))


@entry(aten.gelu.default)
def _gelu(ctx: Ctx) -> fa.Tensor:
    approximate = ctx.node.kwargs.get("approximate", ctx.node.args[1] if len(ctx.node.args) > 1 else "none")
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"gelu approximate={approximate!r}")
    return _pointwise(ctx, lambda x: fa.gelu(x, approximate=approximate), ctx.tensor(0))


@entry(aten.pow.Tensor_Scalar)
def _pow(ctx: Ctx) -> fa.Tensor:
    e = _scalar(ctx.arg(1, "exponent"))
    special = {1.0: lambda x: x, 2.0: lambda x: x * x, 0.5: fa.sqrt, -0.5: fa.rsqrt, -1.0: lambda x: fa.div(1.0, x)}
    if e in special:
        return _pointwise(ctx, special[e], ctx.tensor(0))
    return _pointwise(ctx, lambda x: fa.pow(x, e), ctx.tensor(0))


@entry(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default,
       aten.clamp.Tensor, aten.clamp_min.Tensor, aten.clamp_max.Tensor)
def _clamp(ctx: Ctx) -> fa.Tensor:
    """fuser.clamp; scalar bounds are constants, tensor bounds operands broadcast against x."""
    packet = ctx.node.target.overloadpacket
    if packet is aten.clamp:
        lo, hi = ctx.arg(1, "min"), ctx.arg(2, "max")
    elif packet is aten.clamp_min:
        lo, hi = ctx.arg(1, "min"), None
    else:
        lo, hi = None, ctx.arg(1, "max")
    if lo is None and hi is None:
        raise Unsupported("clamp without bounds")
    tensors = [b for b in (lo, hi) if isinstance(b, fa.Tensor)]

    def f(x: fa.Tensor, *given: fa.Tensor) -> fa.Tensor:
        rest = iter(given)  # the tensor bounds, as _pointwise cast them

        def bound(b: Any) -> Any:
            return next(rest) if isinstance(b, fa.Tensor) else None if b is None else _scalar(b)
        return fa.clamp(x, bound(lo), bound(hi))
    return _pointwise(ctx, f, ctx.tensor(0), *tensors)


# ------------------------------------------------------------------ comparisons, where


def _promote(*vs: Any) -> str:
    """torch's result type of the operands (tensors from their meta, numbers as scalars)."""
    probes = []
    for v in vs:
        if isinstance(v, fx.Node):
            m = node_meta(v)
            probes.append(torch.empty((1,) if m.dim() else (), dtype=m.dtype))
        else:
            probes.append(v)
    if len(probes) == 1:
        return DTYPES[probes[0].dtype]
    dt = torch.result_type(*probes[:2])
    if dt not in DTYPES:
        raise Unsupported(f"operands promote to {dt}")
    return DTYPES[dt]


def _cmp(pred: str, a: fa.Tensor, b: fa.Tensor | float) -> fa.Tensor:
    """`fusion.cmp` through the API's public spellings (a is a tensor)."""
    if pred in ("eq", "ne"):
        return getattr(a, pred)(b)
    return {"lt": a.__lt__, "le": a.__le__, "gt": a.__gt__, "ge": a.__ge__}[pred](b)


def _cmp_rule(pred: str) -> Rule:
    def rule(ctx: Ctx) -> fa.Tensor:
        raw_a, raw_b = ctx.node.args[0], ctx.node.args[1]
        cd = _promote(raw_a, raw_b)
        if cd in INTS:  # (a label against ignore_index: nll_loss's decomposition)
            a, b = (x if isinstance(x, fa.Tensor) else _int_scalar(ctx, x, cd) for x in (ctx.arg(0), ctx.arg(1)))
            a, b = (fa.cast(x, cd) if isinstance(x, fa.Tensor) else x for x in (a, b))
            if not isinstance(a, fa.Tensor):
                a, b, pred_ = b, a, {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(pred, pred)
            else:
                pred_ = pred
            return fa.broadcast_to(_cmp(pred_, a, b), ctx.out_shape)
        if cd not in MATH:
            raise Unsupported(f"comparison in {cd}")
        a, b = _num_or_tensor(ctx.arg(0)), _num_or_tensor(ctx.arg(1))
        if not any(isinstance(x, fa.Tensor) for x in (a, b)):
            raise Unsupported("comparison without a tensor")
        cd = _compute_dtype(cd, [a, b])
        a, b = _cast_all([a, b], cd)
        if not isinstance(a, fa.Tensor):  # scalar OP tensor: flip to tensor OP' scalar
            flipped = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(pred, pred)
            a, b, p = b, a, flipped
        else:
            p = pred
        return fa.broadcast_to(_cmp(p, a, b), ctx.out_shape)
    return rule


for _pred in ("eq", "ne", "lt", "le", "gt", "ge"):
    entry(getattr(aten, _pred).Tensor, getattr(aten, _pred).Scalar)(_cmp_rule(_pred))


def _float_test_rule(fn: Callable[[fa.Tensor], fa.Tensor]) -> Rule:
    def rule(ctx: Ctx) -> fa.Tensor:
        x = ctx.tensor(0)
        if x.dtype not in MATH:  # an integer or bool tensor: the answer is a constant, torch's to give
            raise Unsupported(f"{ctx.node.target} of a {x.dtype} tensor")
        return fa.broadcast_to(fn(x), ctx.out_shape)
    return rule


# (aten.isfinite has no entry: torch decomposes it while tracing, into a product of two masks.)
for _op, _fn in [(aten.isnan.default, fa.isnan), (aten.isinf.default, fa.isinf), (aten.isposinf.default, fa.isposinf),
                 (aten.isneginf.default, fa.isneginf), (aten.signbit.default, fa.signbit)]:
    entry(_op)(_float_test_rule(_fn))


def _mask(ctx: Ctx, i: int) -> fa.Tensor:
    m = ctx.tensor(i)
    if m.dtype != "i1":  # (torch would take truthiness or integer bits: not fused yet)
        raise Unsupported(f"{ctx.node.target} of a {m.dtype} tensor (fused for bool tensors)")
    return m


@entry(aten.logical_not.default)  # (bitwise_not of a mask: the bitwise entries' logical case)
def _logical_not(ctx: Ctx) -> fa.Tensor:
    return fa.broadcast_to(fa.logical_not(_mask(ctx, 0)), ctx.out_shape)


for _ops, _fn in [((aten.logical_and.default,), fa.logical_and),
                  ((aten.logical_or.default,), fa.logical_or),
                  ((aten.logical_xor.default,), fa.logical_xor)]:
    entry(*_ops)(lambda ctx, fn=_fn: fa.broadcast_to(fn(_mask(ctx, 0), _mask(ctx, 1)), ctx.out_shape))


@entry(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(ctx: Ctx) -> fa.Tensor:
    """Float results as other math; integer results (a label made safe: nll_loss's
    decomposition) select integers of the result type, with integral scalars only."""
    cond = ctx.tensor(0)
    if cond.dtype != "i1":
        raise Unsupported("where with a non-bool condition")
    if ctx.out_dtype in INTS:
        out = ctx.out_dtype
        a, b = (fa.cast(x, out) if isinstance(x, fa.Tensor) else _int_scalar(ctx, x, out)
                for x in (ctx.arg(1), ctx.arg(2)))
    else:
        out = _math_dtype(ctx)
        a, b = _num_or_tensor(ctx.arg(1)), _num_or_tensor(ctx.arg(2))
        a, b = _cast_all([a, b], out)
    if not isinstance(a, fa.Tensor) and not isinstance(b, fa.Tensor):
        a = ctx.fb.full(a, cond.shape, out)
    return fa.broadcast_to(fa.where(cond, a, b), ctx.out_shape)


@entry(aten._to_copy.default, prims.convert_element_type.default)
def _to_copy(ctx: Ctx) -> fa.Tensor:
    x = ctx.tensor(0)
    src = node_meta(ctx.node.args[0])
    if ctx.out.device != src.device:
        raise Unsupported("_to_copy across devices")
    ctx.kwarg_is("layout", None, torch.strided)
    return fa.cast(x, ctx.out_dtype)


# ------------------------------------------------------------------ reductions


def _dims(ctx: Ctx, x: fa.Tensor, i: int) -> list[int]:
    d = ctx.arg(i, "dim")
    if d is None or d == [] or d == ():
        return list(range(x.ndim))
    if isinstance(d, int):
        d = [d]
    return [int(v) % x.ndim for v in d]


def _reduce_rule(kind: str, mean: bool = False, all_dims: bool = False) -> Rule:
    """sum, mean, prod, amax, amin. Floats accumulate in f32; integer and bool tensors as torch
    (issue 31): sums and products in i64, max and min in their type, the result cast to the
    node's dtype; a dtype= other than a float's accumulation type casts the input first, as
    torch."""
    def rule(ctx: Ctx) -> fa.Tensor:
        x = ctx.tensor(0)
        out = ctx.out_dtype
        if x.ndim == 0 or (x.dtype not in MATH and (mean or x.dtype not in INTS + ("i1",))):
            raise Unsupported(f"{kind} of {x.dtype} rank {x.ndim}")
        if out not in MATH + INTS + ("i1",):
            raise Unsupported(f"{ctx.node.target}: result dtype {out}")
        given = ctx.node.kwargs.get("dtype")
        if given is not None and (not (x.dtype in MATH and DTYPES[given] in MATH)
                                  or ("f64" in (x.dtype, DTYPES[given]) and x.dtype != DTYPES[given])):
            x = fa.cast(x, DTYPES[given])   # dtype= casts the input first, as torch (f32/f16/bf16: below)
        if kind == "prod" and not all_dims:
            dims = [int(ctx.arg(1, "dim")) % x.ndim]
        else:
            dims = list(range(x.ndim)) if all_dims else _dims(ctx, x, 1)
        keepdim = False if all_dims else bool(ctx.arg(2, "keepdim", False))
        if kind in ("sum", "prod"):
            acc = "f32" if x.dtype in HALF else None
            y = (fa.sum if kind == "sum" else fa.prod)(x, dims, keepdim, dtype=acc)
            if mean:
                n = math.prod(x.shape[d] for d in dims)
                y = fa.div(y, float(n))
        else:
            y = (fa.amax if kind == "max" else fa.amin)(x, dims, keepdim)
        return fa.cast(y, out)
    return rule


entry(aten.sum.dim_IntList)(_reduce_rule("sum"))
entry(aten.sum.default)(_reduce_rule("sum", all_dims=True))
entry(aten.mean.dim)(_reduce_rule("sum", mean=True))
entry(aten.mean.default)(_reduce_rule("sum", mean=True, all_dims=True))
entry(aten.prod.dim_int)(_reduce_rule("prod"))
entry(aten.prod.default)(_reduce_rule("prod", all_dims=True))
entry(aten.amax.default)(_reduce_rule("max"))
entry(aten.amin.default)(_reduce_rule("min"))


def _logical_reduce_rule(kind: str) -> Rule:
    """any / all (.default, .dim, .dims) of any type: the nonzero test (NaN is nonzero); bool,
    or uint8 for a uint8 input, as torch."""
    def rule(ctx: Ctx) -> fa.Tensor:
        x = ctx.tensor(0)
        if x.ndim == 0 or x.dtype not in MATH + INTS + ("i1",):
            raise Unsupported(f"{kind} of {x.dtype} rank {x.ndim}")
        y = (fa.any if kind == "any" else fa.all)(x, _dims(ctx, x, 1), bool(ctx.arg(2, "keepdim", False)))
        return fa.cast(y, ctx.out_dtype)
    return rule


entry(aten.any.default, aten.any.dim, aten.any.dims)(_logical_reduce_rule("any"))
entry(aten.all.default, aten.all.dim, aten.all.dims)(_logical_reduce_rule("all"))


@entry(aten.cumsum.default, aten.cumprod.default)
def _scan(ctx: Ctx) -> fa.Tensor:
    """Running sums and products along `dim` (fusion.scan, the dim moved last by a permute where
    it is not): floats in f32, integer and bool tensors in i64, as torch; a dtype= casts the
    input first (a float's accumulation type only names the result)."""
    x = ctx.tensor(0)
    if x.ndim == 0 or x.dtype not in MATH + INTS + ("i1",):
        raise Unsupported(f"{ctx.node.target} of {x.dtype} rank {x.ndim}")
    out = ctx.out_dtype
    if out not in MATH + INTS + ("i1",):
        raise Unsupported(f"{ctx.node.target}: result dtype {out}")
    given = ctx.node.kwargs.get("dtype")
    if given is not None and not (x.dtype in MATH and DTYPES[given] in MATH):
        x = fa.cast(x, DTYPES[given])
    fn = fa.cumsum if ctx.node.target is aten.cumsum.default else fa.cumprod
    return fa.cast(fn(x, int(ctx.arg(1, "dim")) % x.ndim), out)


@entry(aten.sort.default, aten.sort.stable, aten.topk.default)
def _sort(ctx: Ctx) -> tuple[fa.Tensor, fa.Tensor]:
    """(values, indices) of a sort along `dim` (fusion.sort, the dim moved last by a permute
    where it is not): always stable, which is a valid result of torch's unstable sort too, in
    torch's order (NaN largest, -0.0 equal to 0.0); topk's first k in sorted order, which
    sorted=False allows too (aten.argsort decomposes into aten.sort)."""
    x = ctx.tensor(0)
    if x.dtype not in MATH + ("f64",) + INTS + ("i1",):
        raise Unsupported(f"{ctx.node.target} of {x.dtype}")
    if ctx.node.target is aten.topk.default:
        k, dim = ctx.arg(1, "k"), ctx.arg(2, "dim", -1)
        return fa.topk(x, int(k), int(dim), bool(ctx.arg(3, "largest", True)))
    if ctx.node.target is aten.sort.stable:  # (self, *, stable, dim=-1, descending=False)
        dim, descending = ctx.node.kwargs.get("dim", -1), ctx.node.kwargs.get("descending", False)
    else:
        dim, descending = ctx.arg(1, "dim", -1), ctx.arg(2, "descending", False)
    return fa.sort(x, int(dim), bool(descending))


@entry(aten.argmax.default, aten.argmin.default)
def _argmax(ctx: Ctx) -> fa.Tensor:
    """The first extreme's i64 index along `dim` (None: of the flattened tensor; with keepdim
    every dim kept as 1); NaN counts as the extreme, as torch's."""
    x = ctx.tensor(0)
    if x.ndim == 0 or x.dtype not in MATH + INTS + ("i1",):
        raise Unsupported(f"{ctx.node.target} of {x.dtype} rank {x.ndim}")
    d = ctx.arg(1, "dim")
    fn = fa.argmax if ctx.node.target is aten.argmax.default else fa.argmin
    return fn(x, None if d is None else int(d) % x.ndim, bool(ctx.arg(2, "keepdim", False)))


@entry(aten.var_mean.correction, aten.var.correction)
def _var_mean(ctx: Ctx) -> Any:
    x = ctx.tensor(0)
    if x.dtype not in MATH or x.ndim == 0:
        raise Unsupported(f"{ctx.node.target} of {x.dtype} rank {x.ndim}")
    dims = _dims(ctx, x, 1)
    correction = ctx.node.kwargs.get("correction", 1)
    if correction is None:
        correction = 1
    if not float(correction).is_integer():
        raise Unsupported(f"{ctx.node.target}: correction={correction}")
    keepdim = bool(ctx.node.kwargs.get("keepdim", False))
    var, mean = fa.var_mean(x, dims, correction=int(correction), keepdim=keepdim)
    if ctx.node.target is aten.var.correction:
        return fa.cast(var, _math_dtype(ctx))
    vm, mm = ctx.outs
    return fa.cast(var, DTYPES[vm.dtype]), fa.cast(mean, DTYPES[mm.dtype])


# ------------------------------------------------------------------ normalization


def _norm_dims_of(x: fa.Tensor, normalized_shape: Any) -> list[int]:
    k = len(normalized_shape)
    if k == 0 or k > x.ndim or tuple(x.shape[x.ndim - k:]) != tuple(normalized_shape):
        raise Unsupported(f"layer norm over {list(normalized_shape)} of {x.type}")
    return list(range(x.ndim - k, x.ndim))


def _wide(dtype: str) -> str:
    """The type a composite formula computes in: f64 for f64, else f32 (torch's opmath)."""
    return "f64" if dtype == "f64" else "f32"


def _opt_wide(v: Any, wide: str) -> fa.Tensor | None:
    return None if v is None else fa.cast(v, wide)


@entry(aten.native_layer_norm.default)
def _native_layer_norm(ctx: Ctx) -> tuple:
    """(out, mean, rstd): mean and rstd keep the normalized dims as size 1, as torch's do."""
    x = ctx.tensor(0)
    dims = _norm_dims_of(x, ctx.arg(1, "normalized_shape"))
    wide = _wide(x.dtype)
    w, b = _opt_wide(ctx.arg(2, "weight"), wide), _opt_wide(ctx.arg(3, "bias"), wide)
    eps = _scalar(ctx.arg(4, "eps"))
    outs = ctx.outs
    if x.dtype not in MATH or any(m is None or DTYPES[m.dtype] not in MATH for m in outs):
        raise Unsupported(f"native_layer_norm of {x.dtype}")
    xf = fa.cast(x, wide)
    var, mean = fa.var_mean(xf, dims, correction=0, keepdim=True)
    rstd = fa.rsqrt(var + eps)
    y = (xf - mean) * rstd
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return tuple(fa.cast(v, DTYPES[m.dtype]) for v, m in zip((y, mean, rstd), outs))


@entry(aten.native_layer_norm_backward.default)
def _native_layer_norm_backward(ctx: Ctx) -> tuple:
    """(grad_input, grad_weight, grad_bias), each only if output_mask asks for it:
    x_hat = (x - mean) * rstd, g = grad_out * weight,
    grad_input = rstd * (g - mean(g) - x_hat * mean(g * x_hat)) over the normalized dims,
    grad_weight = sum(grad_out * x_hat), grad_bias = sum(grad_out) over the others."""
    go, x = ctx.tensor(0), ctx.tensor(1)
    dims = _norm_dims_of(x, ctx.arg(2, "normalized_shape"))
    mean, rstd = ctx.tensor(3), ctx.tensor(4)
    wide = _wide(x.dtype)
    w = _opt_wide(ctx.arg(5, "weight"), wide)
    mask = list(ctx.arg(7, "output_mask"))
    outs = ctx.outs
    if any(t.dtype not in MATH for t in (go, x, mean, rstd)):
        raise Unsupported("native_layer_norm_backward outside f32/f16/bf16/f64")
    gof, xf = fa.cast(go, wide), fa.cast(x, wide)
    x_hat = (xf - fa.cast(mean, wide)) * fa.cast(rstd, wide)
    outer = list(range(x.ndim - len(dims)))
    res: list[fa.Tensor | None] = [None, None, None]
    if mask[0]:
        g = gof * w if w is not None else gof
        n = float(math.prod(x.shape[d] for d in dims))
        g_mean = fa.sum(g, dims, keepdim=True) / n
        gx_mean = fa.sum(g * x_hat, dims, keepdim=True) / n
        res[0] = fa.cast(fa.cast(rstd, wide) * (g - g_mean - x_hat * gx_mean), DTYPES[outs[0].dtype])
    if mask[1] and outs[1] is not None:
        res[1] = fa.cast(fa.sum(gof * x_hat, outer), DTYPES[outs[1].dtype])
    if mask[2] and outs[2] is not None:
        res[2] = fa.cast(fa.sum(gof, outer), DTYPES[outs[2].dtype])
    return tuple(res)


# ------------------------------------------------------------------ matmuls

def _as_permutation(node: fx.Node) -> list[int] | None:
    """A 2-D transpose-like view (t, permute, transpose) as its permutation, else None."""
    v = node.meta.get("val")
    if node.op != "call_function" or not isinstance(v, torch.Tensor) or v.dim() != 2:
        return None
    if node.target is aten.t.default:
        return [1, 0]
    if node.target is aten.permute.default:
        return [int(d) % 2 for d in node.args[1]]
    if node.target is aten.transpose.int:
        return [1, 0] if int(node.args[1]) % 2 != int(node.args[2]) % 2 else [0, 1]
    return None


def _matmul_operand(ctx: Ctx, i: int) -> tuple[fa.Tensor, bool]:
    """Operand i of a matmul node as (tensor as stored, transposed): a transpose (the rules' and
    declare_input's permutes fold into one) is read by the matmul through its layout flag
    instead of copied. A value computed in the region is materialized (TMA reads operands from
    memory)."""
    t = ctx.arg(i)
    if not isinstance(t, fa.Tensor) or t.ndim != 2:
        raise Unsupported(f"{ctx.node.target}: operand {i} is not a 2-D tensor")
    owner = t.value.owner
    transposed = isinstance(owner, F.PermuteOp) and list(owner.perm.get_values()) == [1, 0]
    if transposed:
        t = fa.Tensor(owner.operands[0], t.builder)
    if not t.is_input:  # (once: both matmuls of a backward read one materialized operand)
        stored = next((u.operation.result for u in t.value.uses if isinstance(u.operation, F.SegmentSetOp)), None)
        t = fa.Tensor(stored, t.builder) if stored is not None else fa.segment_set(t)
    return t, transposed


def _matmul(ctx: Ctx, a_index: int) -> fa.Tensor:
    """A @ B (f32 accumulation) for the Hopper matmul: bf16/f16 operands whose rows as stored
    are 16-byte aligned (TMA); anything else runs in PyTorch."""
    (a, ta), (b, tb) = _matmul_operand(ctx, a_index), _matmul_operand(ctx, a_index + 1)
    out = ctx.out_dtype
    if a.dtype not in HALF or b.dtype != a.dtype or out != a.dtype:
        raise Unsupported(f"{ctx.node.target} of {a.dtype} x {b.dtype} -> {out}: the Hopper matmul takes bf16 or f16")
    for what, t in (("A", a), ("B", b)):
        if t.shape[1] % 8:
            raise Unsupported(f"{ctx.node.target}: {what} {t.type} as stored has rows of {t.shape[1] * 2} bytes; "
                              "TMA needs a multiple of 16")
    return fa.matmul(a, b, transpose_a=ta, transpose_b=tb, dtype="f32")


@entry(aten.mm.default)
def _mm(ctx: Ctx) -> fa.Tensor:
    return fa.cast(_matmul(ctx, 0), ctx.out_dtype)


@entry(aten.addmm.default)
def _addmm(ctx: Ctx) -> fa.Tensor:
    """beta * bias + alpha * (A @ B), the bias added in f32 in the matmul's epilogue."""
    beta, alpha = _scalar(ctx.node.kwargs.get("beta", 1)), _scalar(ctx.node.kwargs.get("alpha", 1))
    bias = ctx.tensor(0)
    c = _matmul(ctx, 1)
    if alpha != 1.0:
        c = c * alpha
    bf = fa.cast(bias, "f32")
    if beta != 1.0:
        bf = bf * beta
    return fa.cast(c + bf if beta != 0.0 else c, ctx.out_dtype)


FP8 = ("f8e4m3fn", "f8e5m2")


@entry(aten._scaled_mm.default)
def _scaled_mm(ctx: Ctx) -> fa.Tensor:
    """torch._scaled_mm: (A * scale_a) @ (B * scale_b) [+ bias], A [M, K] and B given as the
    transpose of a [N, K] tensor (cuBLASLt's layout, and FP8 wgmma's), f32 accumulation, the
    scales (per tensor: 0-d or one element; per row of A [M, 1] and per column of B [1, N]) and
    the bias applied in f32 in the matmul's epilogue. An FP8 output (`scale_result`, an FP8
    `out_dtype`) and other layouts run in PyTorch."""
    (a, ta), (b, tb) = _matmul_operand(ctx, 0), _matmul_operand(ctx, 1)
    out = ctx.out_dtype
    if a.dtype not in FP8 or b.dtype != a.dtype:
        raise Unsupported(f"{ctx.node.target} of {a.dtype} x {b.dtype}: fuser's FP8 matmul takes two operands of one "
                          "FP8 type")
    if ta or not tb:
        raise Unsupported(f"{ctx.node.target}: FP8 wgmmas read A as [M, K] and B as the transpose of [N, K]")
    if out in FP8 or ctx.arg(5, "scale_result") is not None:
        raise Unsupported(f"{ctx.node.target}: an FP8 output (scale_result) is not fused yet")
    if a.shape[1] % 16:
        raise Unsupported(f"{ctx.node.target}: K={a.shape[1]} FP8 elements are rows of {a.shape[1]} bytes; TMA needs "
                          "a multiple of 16")
    m, n = a.shape[0], b.shape[0]
    c = fa.matmul(a, b, transpose_b=True, dtype="f32")
    for i, name, per in ((2, "scale_a", (m, 1)), (3, "scale_b", (1, n))):
        scale = ctx.tensor(i, name)
        if math.prod(scale.shape) != 1 and tuple(scale.shape) != per:
            raise Unsupported(f"{ctx.node.target}: {name} of shape {tuple(scale.shape)} (per tensor or {per} only)")
        c = c * fa.broadcast_to(fa.cast(scale, "f32"), (m, n))
    bias = ctx.arg(4, "bias")
    if bias is not None:
        c = c + fa.broadcast_to(fa.cast(bias, "f32"), (m, n))
    return fa.cast(c, out)


# ------------------------------------------------------------------ shape ops


def _to_out_shape(ctx: Ctx) -> fa.Tensor:
    """view / reshape / unsqueeze / squeeze: a row-major reshape to the recorded shape (region
    values are logical tensors; the region's inputs are made contiguous at its boundary)."""
    return fa.reshape(ctx.tensor(0), ctx.out_shape)


entry(aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.unsqueeze.default,
      aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims)(_to_out_shape)


@entry(aten.permute.default)
def _permute(ctx: Ctx) -> fa.Tensor:
    x = ctx.tensor(0)
    return permute(x, [int(d) % max(x.ndim, 1) for d in ctx.arg(1, "dims")])


@entry(aten.t.default)
def _t(ctx: Ctx) -> fa.Tensor:
    x = ctx.tensor(0)
    return permute(x, [1, 0]) if x.ndim == 2 else x


@entry(aten.transpose.int)
def _transpose(ctx: Ctx) -> fa.Tensor:
    x = ctx.tensor(0)
    if x.ndim < 2:
        return x
    d0, d1 = int(ctx.arg(1)) % x.ndim, int(ctx.arg(2)) % x.ndim
    perm = list(range(x.ndim))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return permute(x, perm)


@entry(aten.expand.default)
def _expand(ctx: Ctx) -> fa.Tensor:
    return fa.broadcast_to(ctx.tensor(0), ctx.out_shape)


def _int_or_none(v: Any) -> int | None:
    if v is None or isinstance(v, numbers.Integral):
        return None if v is None else int(v)
    raise Unsupported(f"a symbolic bound {v!r}")


@entry(aten.slice.Tensor)
def _slice(ctx: Ctx) -> fa.Tensor:
    """A view in torch, an index computation in the fusion (`fusion.slice`); torch's end may be
    past the extent (2^63 - 1 for `x[a:]`), as Python slicing allows."""
    return fa.slice(ctx.tensor(0), int(ctx.arg(1, "dim", 0)), _int_or_none(ctx.arg(2, "start")),
                    _int_or_none(ctx.arg(3, "end")), int(ctx.arg(4, "step", 1)))


@entry(aten.select.int)
def _select(ctx: Ctx) -> fa.Tensor:
    return fa.select(ctx.tensor(0), int(ctx.arg(1, "dim")), int(ctx.arg(2, "index")))


@entry(aten.narrow.default)
def _narrow(ctx: Ctx) -> fa.Tensor:
    return fa.narrow(ctx.tensor(0), int(ctx.arg(1, "dim")), int(ctx.arg(2, "start")), int(ctx.arg(3, "length")))


@entry(aten.split.Tensor, aten.split_with_sizes.default)
def _split(ctx: Ctx) -> tuple:
    return tuple(fa.split(ctx.tensor(0), ctx.arg(1), int(ctx.arg(2, "dim", 0))))


@entry(aten.cat.default)
def _cat(ctx: Ctx) -> fa.Tensor:
    """`fusion.cat` of the operands cast to the result's dtype (torch promotes them)."""
    parts = [ctx.value(t) for t in ctx.arg(0, "tensors")]
    if not parts or not all(isinstance(t, fa.Tensor) for t in parts):
        raise Unsupported("cat of a value that is not a tensor of the region")
    return fa.cat([fa.cast(t, ctx.out_dtype) for t in parts], int(ctx.arg(1, "dim", 0)))


@entry(aten.constant_pad_nd.default)
def _constant_pad_nd(ctx: Ctx) -> fa.Tensor:
    x = ctx.tensor(0)
    value = _scalar(ctx.arg(2, "value", 0))
    if F.is_integer(fa._dtype_attr(x.dtype)) and value != int(value):
        raise Unsupported(f"constant_pad_nd of {x.dtype} with the value {value}")
    return fa.pad(x, [int(p) for p in ctx.arg(1, "pad")], value)


@entry(aten.flip.default)
def _flip(ctx: Ctx) -> fa.Tensor:
    return fa.flip(ctx.tensor(0), [int(d) for d in ctx.arg(1, "dims")])


@entry(aten.triu.default, aten.tril.default)
def _triangle(ctx: Ctx) -> fa.Tensor:
    fn = fa.triu if ctx.node.target is aten.triu.default else fa.tril
    return fn(ctx.tensor(0), int(ctx.arg(1, "diagonal", 0)))


def _index_arg(ctx: Ctx, i: int, name: str) -> fa.Tensor:
    t = ctx.tensor(i, name)
    if t.dtype not in ("i32", "i64"):
        raise Unsupported(f"{ctx.node.target}: an index of {t.dtype}")
    return t


@entry(aten.gather.default)
def _gather(ctx: Ctx) -> fa.Tensor:
    """torch.gather (out-of-range indices, which torch raises on, read the nearest end)."""
    if ctx.arg(3, "sparse_grad", False):
        raise Unsupported("gather with sparse_grad")
    return fa.gather(ctx.tensor(0), int(ctx.arg(1, "dim")), _index_arg(ctx, 2, "index"))


@entry(aten.index_select.default)
def _index_select(ctx: Ctx) -> fa.Tensor:
    return fa.index_select(ctx.tensor(0), int(ctx.arg(1, "dim")), _index_arg(ctx, 2, "index"))


@entry(aten.embedding.default)
def _embedding(ctx: Ctx) -> fa.Tensor:
    """The forward lookup (padding_idx only shapes the backward, which stays in PyTorch)."""
    if ctx.arg(4, "sparse", False):
        raise Unsupported("a sparse embedding")
    return fa.embedding(ctx.tensor(0), _index_arg(ctx, 1, "indices"))


@entry(aten.scatter.value)
def _scatter_value(ctx: Ctx) -> fa.Tensor:
    """`self` with `value` written where `index` points along `dim`. For an index of extent 1
    along `dim` and self's extents elsewhere (the one-hot of nll_loss's backward): a select of
    `iota(dim) == index`, no scatter (an index outside [0, extent) writes nothing; torch raises);
    any other index: `fusion.scatter` (`_scatter`)."""
    x, index = ctx.tensor(0), _index_arg(ctx, 2, "index")
    dim = int(ctx.arg(1, "dim")) % max(x.ndim, 1)
    if ctx.node.kwargs.get("reduce") is not None:
        raise Unsupported("scatter with reduce=")
    want = tuple(1 if d == dim else n for d, n in enumerate(x.shape))
    if x.ndim == 0 or tuple(index.shape) != want:  # the general case: fusion.scatter of the value
        return _scatter(ctx, x, dim, index, ctx.arg(3, "value"), None)
    positions = fa.iota(x.shape[dim], dtype=index.dtype, builder=ctx.fb)
    positions = fa.reshape(positions, tuple(x.shape[dim] if d == dim else 1 for d in range(x.ndim)))
    hit = fa.broadcast_to(positions, x.shape).eq(fa.broadcast_to(index, x.shape))
    value = ctx.arg(3, "value")
    if x.dtype in INTS:
        return fa.where(hit, _int_scalar(ctx, value, x.dtype), x)
    if x.dtype not in MATH:
        raise Unsupported(f"scatter into {x.dtype}")
    return fa.where(hit, _scalar(value), x)


def _scatter(ctx: Ctx, x: fa.Tensor, dim: int, index: fa.Tensor, src: Any, reduce: str | None) -> fa.Tensor:
    """fusion.scatter (fa.scatter): deterministic, the last in index order wins among repeats
    (torch leaves that one unspecified), sums in index order in f32 (issue 32). An index outside
    [-extent, extent) lands on the nearest end (torch raises)."""
    if x.dtype not in MATH + INTS + ("i1",) or (reduce is not None and x.dtype == "i1"):
        raise Unsupported(f"{ctx.node.target} of {x.dtype}")
    if not isinstance(src, fa.Tensor):
        src = _int_scalar(ctx, src, x.dtype) if x.dtype in INTS else bool(src) if x.dtype == "i1" else _scalar(src)
    return fa.scatter(x, dim, index, src, reduce=reduce)


@entry(aten.scatter.src)
def _scatter_src(ctx: Ctx) -> fa.Tensor:
    """torch.scatter(self, dim, index, src) (no reduce=)."""
    if ctx.node.kwargs.get("reduce") is not None:
        raise Unsupported("scatter with reduce=")
    x = ctx.tensor(0)
    return _scatter(ctx, x, int(ctx.arg(1, "dim")) % max(x.ndim, 1), _index_arg(ctx, 2, "index"), ctx.tensor(3, "src"),
                    None)


@entry(aten.scatter_add.default)
def _scatter_add(ctx: Ctx) -> fa.Tensor:
    """torch.scatter_add: sums in index order (deterministic), floats accumulated in f32."""
    x = ctx.tensor(0)
    return _scatter(ctx, x, int(ctx.arg(1, "dim")) % max(x.ndim, 1), _index_arg(ctx, 2, "index"), ctx.tensor(3, "src"),
                    "add")


@entry(aten.index_add.default)
def _index_add(ctx: Ctx) -> fa.Tensor:
    """torch.index_add (alpha too): one shared, sorted index line (fa.index_add)."""
    x, src = ctx.tensor(0), ctx.tensor(3, "source")
    if x.dtype not in MATH + INTS:
        raise Unsupported(f"index_add of {x.dtype}")
    alpha = ctx.arg(4, "alpha", 1)
    alpha = _int_scalar(ctx, alpha, x.dtype) if x.dtype in INTS else _scalar(alpha)
    return fa.index_add(x, int(ctx.arg(1, "dim")) % max(x.ndim, 1), _index_arg(ctx, 2, "index"), src, alpha=alpha)


@entry(aten.embedding_dense_backward.default)
def _embedding_dense_backward(ctx: Ctx) -> fa.Tensor:
    """The embedding's weight gradient: grad_output's rows summed into the rows their ids name,
    in token order (deterministic; f32 accumulation), the padding row zero (fa.embedding_backward)."""
    if ctx.arg(4, "scale_grad_by_freq", False):
        raise Unsupported("embedding backward with scale_grad_by_freq")
    g = ctx.tensor(0, "grad_output")
    if g.dtype not in MATH:
        raise Unsupported(f"embedding backward of {g.dtype}")
    padding_idx = int(ctx.arg(3, "padding_idx", -1))
    return fa.embedding_backward(g, _index_arg(ctx, 1, "indices"), int(ctx.arg(2, "num_weights")),
                                 padding_idx=padding_idx if padding_idx >= 0 else None)


@entry(aten.slice_backward.default)
def _slice_backward(ctx: Ctx) -> fa.Tensor:
    """The gradient of a unit-step slice: the slice's gradient padded with zeros back to the
    input's extent along `dim` (`fusion.pad`); other steps stay in PyTorch."""
    g = ctx.tensor(0, "grad_output")
    sizes = [int(n) for n in ctx.arg(1, "input_sizes")]
    dim, step = int(ctx.arg(2, "dim")) % len(sizes), int(ctx.arg(5, "step"))
    if step != 1:
        raise Unsupported(f"slice_backward with step {step}")
    start, end = (_int_or_none(v) for v in (ctx.arg(3, "start"), ctx.arg(4, "end")))
    start, end, _ = slice(start, end).indices(sizes[dim])
    if g.shape[dim] != max(0, end - start):
        raise Unsupported("slice_backward of a gradient whose extent is not the slice's")
    pads = [0] * (2 * len(sizes))  # torch's order: the last dim's (before, after) first
    pads[2 * (len(sizes) - 1 - dim)] = start
    pads[2 * (len(sizes) - 1 - dim) + 1] = sizes[dim] - start - g.shape[dim]
    return fa.pad(g, pads, 0.0)


@entry(aten.slice_scatter.default)
def _slice_scatter(ctx: Ctx) -> fa.Tensor:
    """`x` with its unit-step slice along `dim` replaced by `src` (a KV-cache slot update,
    `cache[:, p:p+n] = new`): the cat of the parts of `x` around the slot and `src`, an index
    computation in the consumer's kernel; other steps stay in PyTorch."""
    x, src = ctx.tensor(0), ctx.tensor(1, "src")
    dim = int(ctx.arg(2, "dim", 0)) % max(x.ndim, 1)
    if int(ctx.arg(5, "step", 1)) != 1:
        raise Unsupported(f"slice_scatter with step {ctx.arg(5, 'step', 1)}")
    start, end, _ = slice(_int_or_none(ctx.arg(3, "start")), _int_or_none(ctx.arg(4, "end"))).indices(x.shape[dim])
    end = max(start, end)
    if src.shape[dim] != end - start:
        raise Unsupported("slice_scatter of a source whose extent is not the slice's")
    parts = [fa.slice(x, dim, 0, start), fa.cast(src, x.dtype), fa.slice(x, dim, end, x.shape[dim])]
    parts = [t for t in parts if t.shape[dim]]
    return fa.cat(parts, dim) if len(parts) > 1 else parts[0]


@entry(aten.copy.default)
def _copy(ctx: Ctx) -> fa.Tensor:
    """The functional copy (what `x[...] = y` becomes before a scatter): `src` cast to the
    destination's dtype and broadcast to its shape."""
    dst, src = ctx.tensor(0), ctx.tensor(1, "src")
    y = fa.cast(src, dst.dtype)
    return y if y.shape == dst.shape else fa.broadcast_to(y, dst.shape)


@entry(aten.clone.default, aten.detach.default, aten.alias.default)
def _identity(ctx: Ctx) -> fa.Tensor:
    return ctx.tensor(0)


# ------------------------------------------------------------------ factories


@entry(aten.full.default)
def _full(ctx: Ctx) -> fa.Tensor:
    ctx.kwarg_is("layout", None, torch.strided)
    return ctx.fb.full(_scalar(ctx.arg(1, "fill_value")), ctx.out_shape, _math_dtype(ctx))


@entry(aten.scalar_tensor.default)
def _scalar_tensor(ctx: Ctx) -> fa.Tensor:
    ctx.kwarg_is("layout", None, torch.strided)
    if ctx.out_dtype in INTS:
        return ctx.fb.full(_int_scalar(ctx, ctx.arg(0, "s"), ctx.out_dtype), (), ctx.out_dtype)
    return ctx.fb.full(_scalar(ctx.arg(0, "s")), (), _math_dtype(ctx))


@entry(aten.zeros_like.default, aten.full_like.default)
def _full_like(ctx: Ctx) -> fa.Tensor:
    """A constant of the node's shape and dtype (zeros_like: 0), for float and integer results."""
    ctx.kwarg_is("layout", None, torch.strided)
    ctx.kwarg_is("memory_format", None, torch.preserve_format, torch.contiguous_format)
    value = 0 if ctx.node.target is aten.zeros_like.default else ctx.arg(1, "fill_value")
    if ctx.out_dtype in INTS:
        return ctx.fb.full(_int_scalar(ctx, value, ctx.out_dtype), ctx.out_shape, ctx.out_dtype)
    return ctx.fb.full(_scalar(value), ctx.out_shape, _math_dtype(ctx))


# ------------------------------------------------------------------ random numbers
# torch's generator state cannot be reproduced, so each random op of a region draws from fuser's
# own stream (Philox 4x32-10, fusion.uniform / fusion.normal) with a seed that is an input of the
# fusion: FusionRegion draws it from torch's generator on every call (torch.randint on the
# region's device), so torch.manual_seed makes a run repeatable and each call gets new numbers;
# the numbers are not torch's. The inputs are declared here, after the region's tensor inputs,
# and counted on the builder (`rng_seeds`).
RANDOM_TYPES = ("f32", "f16", "bf16", "f64")


def _rng_seed(ctx: Ctx) -> tuple[fa.Tensor, int]:
    """A new seed input of the fusion (an i64 scalar), and offset 0."""
    n = getattr(ctx.fb, "rng_seeds", 0)
    ctx.fb.rng_seeds = n + 1
    return ctx.fb.input((), "i64", name=f"rng_seed{n}"), 0


def _random_like(kind: str) -> Rule:
    def rule(ctx: Ctx) -> fa.Tensor:
        ctx.kwarg_is("layout", None, torch.strided)
        ctx.kwarg_is("memory_format", None, torch.preserve_format, torch.contiguous_format)
        dt = ctx.out_dtype
        if dt not in (RANDOM_TYPES if kind == "uniform" else MATH):
            raise Unsupported(f"{ctx.node.target} of {dt}")
        seed, offset = _rng_seed(ctx)
        draw = fa.uniform if kind == "uniform" else fa.normal
        return draw(ctx.out_shape, seed, offset, 0.0, 1.0, dt, builder=ctx.fb)
    return rule


entry(aten.rand_like.default)(_random_like("uniform"))
entry(aten.randn_like.default)(_random_like("normal"))


@entry(aten.native_dropout.default)
def _native_dropout(ctx: Ctx) -> tuple:
    """(x * mask / (1 - p), mask) with mask = uniform < 1 - p, in training; torch's own
    native_dropout(train=False) gives (x, ones)."""
    x, p, train = ctx.tensor(0), _scalar(ctx.arg(1, "p")), ctx.arg(2, "train")
    if x.dtype not in RANDOM_TYPES:
        raise Unsupported(f"native_dropout of {x.dtype}")
    if train is False:
        return x, ctx.fb.full(1, x.shape, "i1")
    seed, offset = _rng_seed(ctx)
    return fa.dropout(x, p, seed, offset)


@entry(aten.native_dropout_backward.default)
def _native_dropout_backward(ctx: Ctx) -> fa.Tensor:
    """grad * mask * scale (scale = 1 / (1 - p)), in f32 and rounded once, as torch's kernel."""
    g, m, scale = ctx.tensor(0), ctx.tensor(1), _scalar(ctx.arg(2, "scale"))
    if g.dtype not in RANDOM_TYPES or m.dtype != "i1":
        raise Unsupported(f"native_dropout_backward of {g.dtype} with a {m.dtype} mask")
    wide = "f64" if g.dtype == "f64" else "f32"
    return fa.cast(fa.where(m, fa.cast(g, wide) * scale, 0.0), g.dtype)


# ------------------------------------------------------------------ backward ops


def _f32(ctx: Ctx, *xs: Any) -> list[Any]:
    """Operands for a composite formula: f32 tensors (torch computes these in opmath), f64 ones
    for an f64 node."""
    wide = _wide(_math_dtype(ctx))
    return [fa.cast(x, wide) if isinstance(x, fa.Tensor) else _scalar(x) for x in xs]


def _finish(ctx: Ctx, y: fa.Tensor) -> fa.Tensor:
    return fa.cast(fa.broadcast_to(y, ctx.out_shape), ctx.out_dtype)


@entry(aten.threshold_backward.default)
def _threshold_backward(ctx: Ctx) -> fa.Tensor:
    grad, x = ctx.tensor(0), ctx.tensor(1)
    th = _scalar(ctx.arg(2, "threshold"))
    # x compared in its own type, the threshold rounded to it, as torch's CUDA kernel does
    return _finish(ctx, fa.where(_cmp("le", x, th), 0.0, grad))


@entry(aten.sigmoid_backward.default)
def _sigmoid_backward(ctx: Ctx) -> fa.Tensor:
    g, y = _f32(ctx, ctx.tensor(0), ctx.tensor(1))
    return _finish(ctx, g * (1.0 - y) * y)


@entry(aten.tanh_backward.default)
def _tanh_backward(ctx: Ctx) -> fa.Tensor:
    g, y = _f32(ctx, ctx.tensor(0), ctx.tensor(1))
    return _finish(ctx, g * (1.0 - y * y))


@entry(aten.silu_backward.default)
def _silu_backward(ctx: Ctx) -> fa.Tensor:
    g, x = _f32(ctx, ctx.tensor(0), ctx.tensor(1))
    s = fa.sigmoid(x)
    return _finish(ctx, g * s * (1.0 + x * (1.0 - s)))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@entry(aten.gelu_backward.default)
def _gelu_backward(ctx: Ctx) -> fa.Tensor:
    approximate = ctx.node.kwargs.get("approximate", ctx.node.args[2] if len(ctx.node.args) > 2 else "none")
    g, x = _f32(ctx, ctx.tensor(0), ctx.tensor(1))
    if approximate == "tanh":  # torch's formula (GeluBackwardKernel)
        kappa = 0.044715
        x_sq = x * x
        inner = _SQRT_2_OVER_PI * (x + kappa * x_sq * x)
        t = fa.tanh(inner)
        left_d = 0.5 * (1.0 + t)
        right_d = 0.5 * x * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 3.0 * kappa * x_sq)
        return _finish(ctx, g * (left_d + right_d))
    if approximate != "none":
        raise Unsupported(f"gelu_backward approximate={approximate!r}")
    # d/dx x*Phi(x) = Phi(x) + x*phi(x). The dialect has no erf; Phi(x) = gelu(x)/x (1/2 at 0).
    cdf = fa.where(_cmp("eq", x, 0.0), 0.5, fa.gelu(x) / x)
    pdf = fa.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return _finish(ctx, g * (cdf + x * pdf))


# ------------------------------------------------------------------ entry points


def _check_result(node: fx.Node, y: Any, meta: Any) -> None:
    if not isinstance(y, fa.Tensor):
        raise Unsupported(f"{node.target}: the rule gave {type(y).__name__}")
    if y.shape != tuple(meta.shape) or y.dtype != DTYPES[meta.dtype]:
        raise Unsupported(f"{node.target}: translated to {y.type}, torch has {tuple(meta.shape)} {meta.dtype}")


def translate_node(node: fx.Node, fb: fa.FusionBuilder, env: dict[fx.Node, Any]) -> Any:
    """Emit `node` into `fb`; raise Unsupported if the table has no entry or the entry refuses.
    The result (a Tensor, or a tuple of them for an op with several results) is checked
    against the shapes and dtypes torch recorded for the node."""
    if node.op != "call_function":
        raise Unsupported(f"%{node.name} is a {node.op}")
    if node.target is operator.getitem:  # one result of a several-result node of the region
        src, i = node.args
        if not isinstance(env.get(src), tuple) or not isinstance(i, int) or env[src][i] is None:
            raise Unsupported(f"%{node.name} picks from %{getattr(src, 'name', src)}, which has no fuser results")
        return env[src][i]
    rule = TABLE.get(node.target)
    if rule is None:
        raise Unsupported(f"no entry for {node.target}")
    several = isinstance(node.meta.get("val"), (tuple, list))
    metas = node_metas(node) if several else [node_meta(node)]
    try:
        y = rule(Ctx(fb, node, env))
    except Unsupported:
        raise
    except (TypeError, ValueError, KeyError, IndexError) as e:  # fuser's API refused what the rule built
        raise Unsupported(f"{node.target}: {e}") from e
    ys = list(y) if several and isinstance(y, tuple) else [y]
    if len(ys) != len(metas):
        raise Unsupported(f"{node.target}: the rule gave {len(ys)} results, torch has {len(metas)}")
    for v, m in zip(ys, metas):
        if m is None:
            if v is not None:
                raise Unsupported(f"{node.target}: the rule gave a result torch does not have")
            continue
        _check_result(node, v, m)
    return tuple(ys) if several else ys[0]


def op_name(target: Any) -> str:
    """A node target as people read it: aten.addmm.default, getitem."""
    return "getitem" if target is operator.getitem else str(target)


def is_supported(node: fx.Node) -> bool:
    """Whether the table has an entry for `node` that accepts it (translated alone into a
    scratch fusion whose inputs have the types of the node's inputs)."""
    return why_unsupported(node) is None


def why_unsupported(node: fx.Node) -> str | None:
    """None if the node translates, else the reason it runs in PyTorch."""
    if node.op == "call_function" and node.target is operator.getitem:
        src = node.args[0]
        if not isinstance(src, fx.Node) or not isinstance(src.meta.get("val"), (tuple, list)):
            return f"%{node.name} picks from a value that is not a tuple of tensors"
        return why_unsupported(src)
    if node.op != "call_function" or node.target not in TABLE:
        return f"no entry for {node.target}"
    key = _probe_key(node)
    if key in _TRANSLATES:
        return None
    why = _probe(node)
    if why is None:
        _TRANSLATES.add(key)
    return why


# What the probe of a node depends on (its op, arguments, result and its inputs' example values,
# a transposed input's source as well), for the nodes that translate: a model's layers repeat the
# same nodes, each of which took a scratch fusion of its own to probe (~1 ms; GPT-2's joint graph
# has ~1900 of them). The reasons a node does not translate name it, so they are not shared.
_TRANSLATES: set[str] = set()


def _probe_key(node: fx.Node) -> str:
    first: dict[fx.Node, int] = {}  # (an input read twice stays one input)

    def sig(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return (tuple(v.shape), v.dtype, tuple(v.stride()), v.device.type)
        if isinstance(v, (tuple, list)):
            return tuple(sig(x) for x in v)
        return v

    def arg(a: Any) -> Any:
        if not isinstance(a, fx.Node):
            return a
        src = a.args[0] if a.op == "call_function" and a.args else None
        perm = _as_permutation(a) if isinstance(src, fx.Node) else None
        return ("node", first.setdefault(a, len(first)), sig(a.meta.get("val")),
                None if perm is None else (tuple(perm), arg(src)))  # (as probe_input reads it)
    args = fx.node.map_aggregate((node.args, node.kwargs), arg)
    return repr((node.target, args, sig(node.meta.get("val"))))


def _probe(node: fx.Node) -> str | None:
    """Translate `node` alone into a scratch fusion whose inputs have the types of its inputs:
    None, or why it does not translate."""
    fb = fa.FusionBuilder("probe")
    env: dict[fx.Node, fa.Tensor] = {}

    def probe_input(inp: fx.Node) -> None:
        # A transpose feeding the node is probed with its source, as the region will hold it
        # (a matmul reads a transposed operand in place).
        if inp in env:
            return
        src = inp.args[0] if inp.op == "call_function" and inp.args else None
        if isinstance(src, fx.Node) and _as_permutation(inp) is not None:
            try:
                probe_input(src)
                env[inp] = translate_node(inp, fb, env)
                return
            except Unsupported:
                pass
        env[inp] = declare_input(fb, node_meta(inp), f"in{len(env)}")[0]

    try:
        for inp in node.all_input_nodes:
            probe_input(inp)
        translate_node(node, fb, env)
    except Unsupported as e:
        return str(e)
    return None
