"""Python builder API: write a fusion as Python expressions instead of MLIR text.

    import fuser
    with fuser.FusionBuilder("bias_gelu") as fb:
        x = fb.input((1024, 4096), "bf16", name="x")
        b = fb.input((4096,), "bf16", name="b")
        y = fuser.gelu(fuser.cast(x, "f32") + fuser.cast(b, "f32"))
        fb.output(fuser.cast(y, "bf16"))
    print(fb.mlir())

(One file past 600 lines on purpose: it is the `fuser.*` namespace users read, builder, op
functions and `compile` together; issue 15 will revisit it with the front-door work.)

Every function appends fusion-dialect ops to the builder that owns its operands and checks each
op's verifier at once, so a mistake raises where it is made. Conveniences are spelled out as ops
in the IR: numpy-style broadcasting becomes `fusion.reshape` + `fusion.broadcast`, and a Python
number becomes a `fusion.full` of the other operand's shape and dtype.

Types promote as torch's do (`result_dtype`, `promote_types`), each conversion a `fusion.cast`
in the IR: operands of one category (bool i1 < integer < float) promote to the wider type (f16
with bf16 to f32, u8 with i8 to i16); an integer or bool meets a float as that float; Python
numbers are weak (an i8 tensor + 2 stays i8, an f16 tensor * 0.5 stays f16) unless of a higher
category than every tensor (an i32 tensor + 2.5 is f32, torch's default float; a bool tensor
+ 1 is i64). True division (`div`, `/`) and the float math functions (exp, sin, ...) of integers
and bools compute in f32, as torch's do; `div(..., rounding_mode="trunc" | "floor")` and `//`
of integers stay integers. Arithmetic of two bools is refused (use logical_and / logical_or, or
cast), as is an integer constant out of its tensor's range (a u8 tensor + 300).

f64 tensors are computed in f64 (math, reductions, scans and statistics, the erf family,
`lgamma` and both forms of `gelu` included): an f64 tensor with an f32
one promotes to f64, and an f32 tensor * 2.0 stays f32 (the Python float is weak), as torch's.

FP8 tensors ("f8e4m3fn", "f8e5m2": torch.float8_e4m3fn, float8_e5m2) are storage, as in torch:
`cast` to and from every type (torch's rounding: f8e4m3fn saturates at +-448, f8e5m2 overflows
to inf), shape ops, `where` and `full`; no arithmetic and no promotion (a TypeError: cast first).

`compile` turns a fusion into a `CompiledFusion`, callable on arrays (GPU), with the numpy
reference interpreter and every stage's IR at hand.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import math
import numbers
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (ArrayAttr, DictionaryAttr, FileLineColLoc, IntAttr, IntegerAttr, ModuleOp, StringAttr,
                                   TensorType, i64)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from fuser.dialects import fusion as F
from fuser.dialects.fusion.layout import ALIAS, OFFSET, STRIDE_ORDER, STRIDES, check_aliases, check_stride_order
from fuser.dialects.ir import decode_source, parse_module
from fuser.runtime import index_check
from fuser.runtime.reference import find_func, run_reference

# `compile`, `abs`, `pow`, `round`, `sum`, `any`, `all` and `slice` are left out of __all__ so that `from fuser import *`
# does not shadow the builtins; use them as `fuser.compile`, `fuser.sum`, ...
__all__ = [
    "FusionBuilder", "Tensor", "CompiledFusion", "strides_of",
    "exp", "log", "tanh", "sqrt", "rsqrt", "relu", "sigmoid", "silu", "gelu", "neg",
    "erf", "exp2", "log2", "log10", "log1p", "reciprocal", "floor", "ceil", "trunc", "sign",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "erfc", "erfinv",
    "erfcinv", "lgamma",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "clamp", "frac", "addcmul", "lerp",
    "threshold", "atan2", "nextafter", "fmod", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "bitwise_left_shift", "bitwise_right_shift", "logical_right_shift", "gcd",
    "logical_not", "logical_and", "logical_or", "logical_xor",
    "add", "sub", "mul", "div", "floor_divide", "maximum", "minimum", "where", "cast", "full",
    "promote_types", "result_dtype",
    "broadcast_to", "broadcast", "reshape", "permute", "select", "narrow", "pad", "cat", "split",
    "flip", "expand", "squeeze", "unsqueeze", "triu", "tril", "gather", "take_along_axis", "index_select",
    "embedding", "scatter", "scatter_add", "index_add", "embedding_backward", "amax", "amin", "prod", "argmax", "argmin", "welford",
    "var_mean", "cumsum", "cumprod", "cummax", "cummin", "sort", "argsort", "topk",
    "matmul", "segment_set",
    "iota", "arange", "uniform", "normal", "rand_like", "randn_like", "dropout", "dropout_backward",
]

Shape = Sequence[int]
Scalar = (numbers.Real,)


# ----------------------------------------------------------------------- builder


def _caller_location() -> FileLineColLoc:
    """file:line:col of the first frame outside the fuser package (the user's code)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "fuser":
        frame = frame.f_back
    if frame is None:
        return FileLineColLoc(StringAttr("<python>"), IntAttr(0), IntAttr(0))
    col = 1
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is not None:  # Python 3.11+: the column of the call on that line
        pos = next(itertools.islice(positions(), frame.f_lasti // 2, None), None)  # (skipped in C: long functions)
        if pos is not None and pos[2] is not None:
            col = pos[2] + 1
    return FileLineColLoc(StringAttr(frame.f_code.co_filename), IntAttr(frame.f_lineno), IntAttr(col))


class FusionBuilder:
    """Builds one `func.func` named `name` inside a module.

    Use as a context manager (the function is finished on a clean exit) or call `finish()`.
    """

    def __init__(self, name: str = "fusion"):
        self.name = name
        self._block = Block()
        self._outputs: list[Tensor] = []
        self._module: ModuleOp | None = None
        self._arg_layouts: list[tuple[tuple[int, ...], int] | None] = []  # per input: (strides, offset)
        self._out_orders: list[tuple[int, ...] | None] = []  # per output: its stride order
        self._out_aliases: list[int | None] = []  # per output: the input it is written into

    def __enter__(self) -> FusionBuilder:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and self._module is None:
            self.finish()

    # -- inputs, outputs, constants

    def input(self, shape: Shape, dtype: str = "f32", name: str | None = None,
              strides: Sequence[int] | None = None, offset: int = 0) -> Tensor:
        """A function argument; `name` (unique in the fusion) also names it at call time.

        `strides` (in elements, one per dim, 0 for an expanded dim) declares a strided input,
        read in place: a transposed, sliced (with steps, with gaps) or expanded array, as numpy
        or torch give it, is passed without a copy; element i is read `offset` + sum(i[d] *
        strides[d]) elements from the buffer's start, which is `offset` elements before the
        array's data pointer and must be 16-byte aligned (so `offset` is where the view starts in
        an aligned buffer: a torch view's `storage_offset()` modulo 16 bytes' worth of elements).
        The fusion is compiled for this layout: a call with other strides is an `ArgumentError`
        naming the argument and both layouts. (`fuser.strides_of(x)` reads an array's.)"""
        self._check_open()
        if name is not None and builtins.any(a.name_hint == name for a in self._block.args):
            raise ValueError(f"input name {name!r} is already taken in fusion '{self.name}'")
        dims = _shape_tuple(shape)
        t = F.tensor(dims, _dtype_attr(dtype))
        if strides is not None:
            strides = tuple(int(s) for s in strides)
            if len(strides) != len(dims) or builtins.any(s < 0 for s in strides) or int(offset) < 0:
                raise ValueError(f"input {name or len(self._block.args)}: strides {list(strides)} and offset {offset} "
                                 f"must be {len(dims)} non-negative integers and a non-negative integer")
        elif offset:
            raise ValueError(f"input {name or len(self._block.args)}: offset {offset} without strides")
        arg = self._block.insert_arg(t, len(self._block.args))
        if name is not None:
            arg.name_hint = name
        self._arg_layouts.append(None if strides is None else (strides, int(offset)))
        return Tensor(arg, self)

    def output(self, *tensors: Tensor, stride_order: Sequence[int] | None = None, alias: Tensor | None = None,
               alias_input: Tensor | None = None) -> None:
        """Return `tensors` from the fusion. `stride_order` (nvFuser's output option, in its
        convention) stores each with those strides: entry d is the rank of dim d's stride, 0 the
        innermost, so `[1, 0]` is a row-major matrix and `[0, 1]` a column-major one (torch's
        `dim_order()` lists the same dims outermost first: `[1, 0]`). The call returns a permuted
        view of a dense buffer, whose strides follow the order; the kernel writes that layout.

        `alias=inp` (or nvFuser's spelling, `alias_input=inp`; one tensor per call) makes the
        output in-place: it is written into input `inp`'s buffer (`fusion.alias` in the IR) and
        the call returns `inp`'s own array, updated (a torch tensor or DeviceArray through its
        pointer, no allocation; a numpy array or CPU tensor copied back into it), as does
        `.reference`. Every result is computed from the inputs as they were passed (a batch
        norm's running statistics, a KV-cache slot, an optimizer step): where a kernel would
        read the input after one wrote it, the compiler writes that output to a workspace and
        copies it in last (`fuser.staged_aliases` on the host function). `inp` must be a
        dense input (no `strides=`) of the output's shape and dtype, aliased by one output."""
        self._check_open()
        if not tensors:
            raise ValueError("output() needs at least one tensor")
        if alias is not None and alias_input is not None and alias is not alias_input:
            raise ValueError("output: give alias= or alias_input=, not both")
        alias = alias if alias is not None else alias_input
        target = None
        if alias is not None:
            self._own(alias, "output alias")
            if len(tensors) != 1:
                raise ValueError(f"output: alias= names the input of one output, got {len(tensors)} tensors")
            if not isinstance(alias.value, BlockArgument) or alias.value.owner is not self._block:
                raise ValueError("output: alias= must be an input of this fusion (fb.input(...)), not a computed tensor")
            target = alias.value.index
            if target in self._out_aliases:
                raise ValueError(f"output: input {target} already takes an in-place output")
            t = tensors[0]
            if t.shape != alias.shape or t.dtype != alias.dtype:
                raise ValueError(f"output: an in-place output has its input's shape and dtype: {t.dtype}{list(t.shape)} "
                                 f"into input {target} of {alias.dtype}{list(alias.shape)}")
            if stride_order is not None and list(stride_order) != list(range(t.ndim - 1, -1, -1)):
                raise ValueError("output: an in-place output is stored as its input is (row-major); no stride_order")
            if self._arg_layouts[target] is not None:
                raise ValueError(f"output: input {target} was declared with strides=; an in-place output needs a dense "
                                 f"input (a stride-0 or strided view cannot be written in place)")
        order = None if stride_order is None else tuple(int(d) for d in stride_order)
        for t in tensors:
            self._own(t, "output")
            if order is not None:
                check_stride_order(order, t.ndim, f"output of shape {t.shape}: stride_order")
            self._outputs.append(t)
            self._out_orders.append(None if target is not None else order)
            self._out_aliases.append(target)

    def full(self, value: float, shape: Shape, dtype: str = "f32") -> Tensor:
        """A tensor filled with `value` (`fusion.full`)."""
        return self._emit(F.FullOp(float(value), _shape_tuple(shape), _dtype_attr(dtype)))

    # -- result

    def finish(self) -> ModuleOp:
        """Close the function (adds func.return) and verify the module; idempotent."""
        if self._module is not None:
            return self._module
        if not self._outputs:
            raise ValueError(f"fusion '{self.name}' has no outputs: call output(...) before finishing")
        outs = [t.value for t in self._outputs]
        self._block.add_op(ReturnOp(*outs))
        func = FuncOp(self.name, ([a.type for a in self._block.args], [v.type for v in outs]), Region(self._block))
        if builtins.any(lay is not None for lay in self._arg_layouts):
            func.arg_attrs = ArrayAttr([DictionaryAttr({} if lay is None else _layout_attrs(*lay))
                                        for lay in self._arg_layouts])
        if builtins.any(o is not None for o in self._out_orders) or builtins.any(a is not None
                                                                              for a in self._out_aliases):
            func.res_attrs = ArrayAttr([DictionaryAttr(({} if o is None else {STRIDE_ORDER: F._i64_array(o)})
                                                       | ({} if a is None else {ALIAS: IntegerAttr(a, i64)}))
                                        for o, a in zip(self._out_orders, self._out_aliases)])
        module = ModuleOp([func])
        module.verify()
        check_aliases(func)
        self._module = module
        return module

    @property
    def module(self) -> ModuleOp:
        return self.finish()

    @property
    def func(self) -> FuncOp:
        return find_func(self.finish())

    def mlir(self) -> str:
        return str(self.finish())

    # -- internals

    def _check_open(self) -> None:
        if self._module is not None:
            raise RuntimeError(f"fusion '{self.name}' is finished; start a new FusionBuilder")

    def _own(self, t: Any, what: str) -> None:
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}: expected a fuser Tensor, got {type(t).__name__}")
        if t.builder is not self:
            raise ValueError(f"{what}: the tensor belongs to another FusionBuilder ('{t.builder.name}')")

    def _emit(self, op: Operation) -> Any:
        """Append `op`, verify it now (so errors point at the user's line), wrap its results.
        The op carries the caller's file:line, so the compiler's later diagnostics point there too."""
        self._check_open()
        op.location = _caller_location()
        self._block.add_op(op)
        try:
            op.verify()
        except VerifyException as e:  # the verifier's message, without xDSL's dump of the block
            self._block.erase_op(op, safe_erase=False)
            raise ValueError(str(e).strip().splitlines()[0]) from None
        except Exception:
            self._block.erase_op(op, safe_erase=False)
            raise
        results = [Tensor(r, self) for r in op.results]
        return results[0] if len(results) == 1 else tuple(results)


def _layout_attrs(strides: tuple[int, ...], offset: int) -> dict:
    attrs = {STRIDES: F._i64_array(strides)}
    if offset:
        attrs[OFFSET] = IntegerAttr(offset, i64)
    return attrs


def strides_of(x: Any) -> tuple[int, ...]:
    """The element strides of a numpy array, torch tensor or `__cuda_array_interface__` array
    (what `FusionBuilder.input(..., strides=)` declares)."""
    if hasattr(x, "stride") and callable(x.stride):  # torch
        return tuple(int(s) for s in x.stride())
    if isinstance(x, np.ndarray):
        return tuple(s // x.itemsize for s in x.strides)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        if cai.get("strides") is None:
            shape, acc, out = cai["shape"], 1, []
            for d in reversed(shape):
                out.append(acc)
                acc *= max(int(d), 1)
            return tuple(out[::-1])
        size = np.dtype(cai["typestr"]).itemsize
        return tuple(int(s) // size for s in cai["strides"])
    raise TypeError(f"strides_of: cannot read the strides of a {type(x).__name__}")


def _shape_tuple(shape: Shape | int) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    if isinstance(shape, (str, bytes)) or not builtins.all(isinstance(d, numbers.Integral) for d in shape):
        raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}")
    out = tuple(int(d) for d in shape)
    if builtins.any(d < 0 for d in out):
        raise ValueError(f"shape {out} has a negative extent")
    return out




def _dtype_attr(dtype: str):
    if dtype not in F.DTYPE_NAMES:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(F.DTYPE_NAMES)}")
    return F.DTYPE_NAMES[dtype]


# ------------------------------------------------------------------------ tensor


class Tensor:
    """A fusion SSA value under construction. Hashing and `==` are by identity: use
    `eq`/`ne` for elementwise comparison."""

    __slots__ = ("value", "builder")
    __array_ufunc__ = None  # numpy scalars on the left defer to our reflected operators

    def __init__(self, value: SSAValue, builder: FusionBuilder):
        self.value = value
        self.builder = builder

    @property
    def type(self) -> TensorType:
        return self.value.type  # type: ignore[return-value]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def dtype(self) -> str:
        return F.dtype_name(self.type.element_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_input(self) -> bool:
        """Whether this is an input of the fusion (a function argument), not a computed value."""
        return isinstance(self.value, BlockArgument)

    def __repr__(self) -> str:
        return f"Tensor({self.type}, builder='{self.builder.name}')"

    def __bool__(self) -> bool:
        raise TypeError("a fuser Tensor has no truth value; use where(...) for data-dependent choices")

    __add__ = lambda s, o: add(s, o)
    __radd__ = lambda s, o: add(o, s)
    __sub__ = lambda s, o: sub(s, o)
    __rsub__ = lambda s, o: sub(o, s)
    __mul__ = lambda s, o: mul(s, o)
    __rmul__ = lambda s, o: mul(o, s)
    __truediv__ = lambda s, o: div(s, o)
    __rtruediv__ = lambda s, o: div(o, s)
    __floordiv__ = lambda s, o: floor_divide(s, o)
    __rfloordiv__ = lambda s, o: floor_divide(o, s)
    __mod__ = lambda s, o: remainder(s, o)
    __rmod__ = lambda s, o: remainder(o, s)
    __and__ = lambda s, o: bitwise_and(s, o)
    __rand__ = lambda s, o: bitwise_and(o, s)
    __or__ = lambda s, o: bitwise_or(s, o)
    __ror__ = lambda s, o: bitwise_or(o, s)
    __xor__ = lambda s, o: bitwise_xor(s, o)
    __rxor__ = lambda s, o: bitwise_xor(o, s)
    __invert__ = lambda s: bitwise_not(s)
    __lshift__ = lambda s, o: bitwise_left_shift(s, o)
    __rlshift__ = lambda s, o: bitwise_left_shift(o, s)
    __rshift__ = lambda s, o: bitwise_right_shift(s, o)
    __rrshift__ = lambda s, o: bitwise_right_shift(o, s)
    __pow__ = lambda s, o: pow(s, o)
    __rpow__ = lambda s, o: pow(o, s)
    __matmul__ = lambda s, o: matmul(s, o)
    __neg__ = lambda s: neg(s)
    __abs__ = lambda s: abs(s)
    __lt__ = lambda s, o: _cmp("lt", s, o)
    __le__ = lambda s, o: _cmp("le", s, o)
    __gt__ = lambda s, o: _cmp("gt", s, o)
    __ge__ = lambda s, o: _cmp("ge", s, o)

    def eq(self, other: Tensor | float) -> Tensor:
        return _cmp("eq", self, other)

    def ne(self, other: Tensor | float) -> Tensor:
        return _cmp("ne", self, other)

    # method spellings of the common functions
    def cast(self, dtype: str) -> Tensor:
        return cast(self, dtype)

    def reshape(self, shape: Shape) -> Tensor:
        return reshape(self, shape)

    def permute(self, perm: Sequence[int]) -> Tensor:
        return permute(self, perm)

    def broadcast_to(self, shape: Shape) -> Tensor:
        return broadcast_to(self, shape)

    def sum(self, dims: int | Sequence[int], keepdim: bool = False, dtype: str | None = None) -> Tensor:
        return sum(self, dims, keepdim, dtype)


def _as_tensor(x: Any, what: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: expected a fuser Tensor, got {type(x).__name__}")
    return x


def _is_scalar(x: Any) -> bool:
    return isinstance(x, Scalar) and not isinstance(x, bool)


# ------------------------------------------------------------- broadcasting


def broadcast(x: Tensor, shape: Shape, new_dims: Sequence[int]) -> Tensor:
    """`fusion.broadcast`: `new_dims` are the result dims that are new; x's dims fill the rest."""
    x = _as_tensor(x, "broadcast")
    shape = _shape_tuple(shape)
    return x.builder._emit(F.BroadcastOp(x.value, shape, [_norm_dim(d, len(shape)) for d in new_dims]))


def broadcast_to(x: Tensor, shape: Shape) -> Tensor:
    """Numpy-style broadcast of x to `shape` (dims aligned on the right; size-1 dims expand)."""
    x = _as_tensor(x, "broadcast_to")
    shape = _shape_tuple(shape)
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    if lead < 0:
        raise ValueError(f"cannot broadcast {x.type} to the lower-rank shape {list(shape)}")
    new_dims = list(range(lead))
    kept: list[int] = []
    for i, d in enumerate(x.shape):
        target = shape[lead + i]
        if d == target:
            kept.append(d)
        elif d == 1:  # a size-1 dim that expands: drop it here, re-create it as a new dim
            new_dims.append(lead + i)
        else:
            raise ValueError(f"cannot broadcast {x.type} to shape {list(shape)}: dim {i} has extent {d}, target {target}")
    if len(kept) != x.ndim:
        x = reshape(x, kept)
    return broadcast(x, shape, new_dims) if new_dims else x


def _broadcast_shape(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        ext = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0}
        ext.discard(1)
        if len(ext) > 1:
            raise ValueError(f"{op}: shapes {', '.join(str(list(s)) for s in shapes)} do not broadcast together")
        out.append(ext.pop() if ext else 1)
    return tuple(out)


def _category(dtype: str) -> int:
    """torch's type categories, in promotion order: bool (i1) 0, integer 1, float 2."""
    return 0 if dtype == "i1" else 1 if dtype in F.INT_DTYPES else 2


_FLOAT_RANK = {"f16": 0, "bf16": 0, "f32": 1, "f64": 2}


def promote_types(a: str, b: str) -> str:
    """torch.promote_types for fuser's dtypes: the higher category wins (bool < integer <
    float); within one, the wider type (f16 with bf16: f32; u8 with i8: i16, since neither holds
    the other; u8 with a wider signed integer: that one)."""
    if a == b:
        return a
    if a in F.FP8_DTYPES or b in F.FP8_DTYPES:  # (torch: "Promotion for Float8 Types is not supported")
        raise TypeError(f"no type promotion for FP8 ({a} with {b}), as in torch: cast explicitly "
                        f"(fuser.cast(x, \"f32\") or \"bf16\")")
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        ra, rb = _FLOAT_RANK[a], _FLOAT_RANK[b]
        return "f32" if ra == rb == 0 else a if ra > rb else b
    if "u8" in (a, b):
        other = b if a == "u8" else a
        return "i16" if other == "i8" else other
    return a if int(a[1:]) > int(b[1:]) else b


def result_dtype(*xs: Any) -> str:
    """The dtype torch computes an elementwise op of `xs` (tensors and Python numbers) in:
    the tensors' promoted dtype (`promote_types`), unless a Python number is of a higher
    category than all of them: then that category's default, f32 for a float (torch's default
    dtype) and i64 for an int. Python numbers are otherwise "weak": an i8 tensor + 2 stays i8,
    an f16 tensor * 0.5 stays f16, an i32 tensor + 2.5 is f32, a bool tensor + 1 is i64."""
    dtypes = [x.dtype for x in xs if isinstance(x, Tensor)]
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote_types(out, d)
    scalars = [0 if isinstance(x, bool) else 1 if isinstance(x, numbers.Integral) else 2
               for x in xs if not isinstance(x, Tensor)]
    top = max(scalars, default=-1)
    if top > _category(out):
        out = {2: "f32", 1: "i64", 0: "i1"}[top]
    return out


def _operands(op: str, *xs: Any) -> tuple[FusionBuilder, list[Tensor]]:
    """Tensors of one builder, shape and dtype for an elementwise op: promote them to the dtype
    torch would compute in (`result_dtype`), broadcast tensors to the common shape and turn
    Python numbers into `fusion.full` of that dtype."""
    tensors = [x for x in xs if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{op}: at least one operand must be a fuser Tensor")
    for x in xs:
        if not isinstance(x, Tensor) and not _is_scalar(x) and not isinstance(x, bool):
            raise TypeError(f"{op}: operands must be fuser Tensors or Python numbers, got {type(x).__name__}")
    fb = tensors[0].builder
    for t in tensors[1:]:
        if t.builder is not fb:
            raise ValueError(f"{op}: operands belong to different FusionBuilders ('{fb.name}', '{t.builder.name}')")
    dtype = result_dtype(*xs)
    xs = tuple(cast(x, dtype) if isinstance(x, Tensor) else x for x in xs)
    shape = _broadcast_shape(op, *(t.shape for t in tensors))
    return fb, [broadcast_to(x, shape) if isinstance(x, Tensor) else fb.full(x, shape, dtype) for x in xs]


# ------------------------------------------------------------- pointwise ops


def _unary(cls: type[Operation], x: Tensor, what: str) -> Tensor:
    x = _as_tensor(x, what)
    if getattr(cls, "ELEMENTS", None) is F.FLOAT_TYPES and _category(x.dtype) < 2:
        x = cast(x, "f32")  # float math of an integer or bool: in f32, as torch promotes it
    return x.builder._emit(cls(x.value))


def exp(x: Tensor) -> Tensor:
    return _unary(F.ExpOp, x, "exp")


def log(x: Tensor) -> Tensor:
    return _unary(F.LogOp, x, "log")


def tanh(x: Tensor) -> Tensor:
    return _unary(F.TanhOp, x, "tanh")


def sqrt(x: Tensor) -> Tensor:
    return _unary(F.SqrtOp, x, "sqrt")


def rsqrt(x: Tensor) -> Tensor:
    return _unary(F.RsqrtOp, x, "rsqrt")


def relu(x: Tensor) -> Tensor:
    return _unary(F.ReluOp, x, "relu")


def sigmoid(x: Tensor) -> Tensor:
    return _unary(F.SigmoidOp, x, "sigmoid")


def silu(x: Tensor) -> Tensor:
    return _unary(F.SiluOp, x, "silu")


def abs(x: Tensor) -> Tensor:  # noqa: A001 - mirrors numpy/torch naming
    return _unary(F.AbsOp, x, "abs")


def neg(x: Tensor) -> Tensor:
    return _unary(F.NegOp, x, "neg")


def erf(x: Tensor) -> Tensor:
    return _unary(F.ErfOp, x, "erf")


def exp2(x: Tensor) -> Tensor:
    return _unary(F.Exp2Op, x, "exp2")


def log2(x: Tensor) -> Tensor:
    return _unary(F.Log2Op, x, "log2")


def log10(x: Tensor) -> Tensor:
    return _unary(F.Log10Op, x, "log10")


def log1p(x: Tensor) -> Tensor:
    """log(1 + x), accurate for small x."""
    return _unary(F.Log1pOp, x, "log1p")


def sin(x: Tensor) -> Tensor:
    """Sine (radians) (float tensors; computed in f64 and rounded once)."""
    return _unary(F.SinOp, x, "sin")


def cos(x: Tensor) -> Tensor:
    """Cosine (radians) (float tensors; computed in f64 and rounded once)."""
    return _unary(F.CosOp, x, "cos")


def tan(x: Tensor) -> Tensor:
    """Tangent (radians) (float tensors; computed in f64 and rounded once)."""
    return _unary(F.TanOp, x, "tan")


def asin(x: Tensor) -> Tensor:
    """Arcsine; NaN outside [-1, 1] (float tensors; computed in f64 and rounded once)."""
    return _unary(F.AsinOp, x, "asin")


def acos(x: Tensor) -> Tensor:
    """Arccosine; NaN outside [-1, 1] (float tensors; computed in f64 and rounded once)."""
    return _unary(F.AcosOp, x, "acos")


def atan(x: Tensor) -> Tensor:
    """Arctangent (float tensors; computed in f64 and rounded once)."""
    return _unary(F.AtanOp, x, "atan")


def sinh(x: Tensor) -> Tensor:
    """Hyperbolic sine (float tensors; computed in f64 and rounded once)."""
    return _unary(F.SinhOp, x, "sinh")


def cosh(x: Tensor) -> Tensor:
    """Hyperbolic cosine (float tensors; computed in f64 and rounded once)."""
    return _unary(F.CoshOp, x, "cosh")


def asinh(x: Tensor) -> Tensor:
    """Inverse hyperbolic sine (float tensors; computed in f64 and rounded once)."""
    return _unary(F.AsinhOp, x, "asinh")


def acosh(x: Tensor) -> Tensor:
    """Inverse hyperbolic cosine; NaN below 1 (float tensors; computed in f64 and rounded once)."""
    return _unary(F.AcoshOp, x, "acosh")


def atanh(x: Tensor) -> Tensor:
    """Inverse hyperbolic tangent; NaN outside [-1, 1] (float tensors; computed in f64 and rounded once)."""
    return _unary(F.AtanhOp, x, "atanh")


def erfc(x: Tensor) -> Tensor:
    """1 - erf(x), accurate where erf(x) is near 1 (float tensors; computed in f64 and rounded once)."""
    return _unary(F.ErfcOp, x, "erfc")


def erfinv(x: Tensor) -> Tensor:
    """The inverse error function: +-inf at +-1, NaN beyond (float tensors; computed in f64 and
    rounded once)."""
    return _unary(F.ErfinvOp, x, "erfinv")


def erfcinv(x: Tensor) -> Tensor:
    """The inverse of erfc: z with erfc(z) = x on (0, 2); +inf at 0, -inf at 2, NaN beyond
    (float tensors; computed in f64 and rounded once, accurate where 1 - x would round, e.g.
    x = 1e-30; torch has no erfcinv: torch.special.erfinv(1 - x) is the same function)."""
    return _unary(F.ErfcinvOp, x, "erfcinv")


def lgamma(x: Tensor) -> Tensor:
    """log|gamma(x)|, as torch.lgamma: +inf at 0, the negative integers and +-inf (float
    tensors; integers and bools in f32; computed in f64 and rounded once, f64 tensors in
    double-double arithmetic to within 2 ulp, an absolute 3e-17 near the negative zeros)."""
    return _unary(F.LgammaOp, x, "lgamma")


def expm1(x: Tensor) -> Tensor:
    """E^x - 1, accurate for small x (float tensors; computed in f64 and rounded once)."""
    return _unary(F.Expm1Op, x, "expm1")


def reciprocal(x: Tensor) -> Tensor:
    """1/x, correctly rounded."""
    return _unary(F.ReciprocalOp, x, "reciprocal")


def floor(x: Tensor) -> Tensor:
    return _unary(F.FloorOp, x, "floor")


def ceil(x: Tensor) -> Tensor:
    return _unary(F.CeilOp, x, "ceil")


def trunc(x: Tensor) -> Tensor:
    """x rounded towards zero."""
    return _unary(F.TruncOp, x, "trunc")


def round(x: Tensor) -> Tensor:  # noqa: A001 - mirrors numpy/torch naming
    """x rounded to the nearest integer, halves to even (torch.round, numpy.rint)."""
    return _unary(F.RoundOp, x, "round")


def sign(x: Tensor) -> Tensor:
    """1 for x > 0, -1 for x < 0, else 0 (NaN too, as torch.sign)."""
    return _unary(F.SignOp, x, "sign")


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU, erf form ("none") or tanh approximation ("tanh")."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = _as_tensor(x, "gelu")
    op = F.GeluOp(x.value)
    if approximate != "none":  # the default is left implicit in the IR
        op.attributes["approximate"] = StringAttr(approximate)
    return x.builder._emit(op)


def _binary(cls: type[Operation], a: Any, b: Any, what: str) -> Tensor:
    fb, (a, b) = _operands(what, a, b)
    return fb._emit(cls(a.value, b.value))


def add(a: Tensor | float, b: Tensor | float) -> Tensor:
    return _binary(F.AddOp, a, b, "add")


def sub(a: Tensor | float, b: Tensor | float) -> Tensor:
    return _binary(F.SubOp, a, b, "sub")


def mul(a: Tensor | float, b: Tensor | float) -> Tensor:
    return _binary(F.MulOp, a, b, "mul")


def div(a: Tensor | float, b: Tensor | float, rounding_mode: str | None = None) -> Tensor:
    """torch.div. True division by default: of integers and bools in f32, as torch promotes
    them. `rounding_mode="trunc"` rounds the quotient toward zero, `"floor"` toward -inf: of
    integers exactly (`fusion.trunc_div` / `fusion.floor_div`; a / 0 is -1 and MIN / -1 wraps to
    MIN, where torch's CPU raises and its GPU answer is unspecified), of floats trunc(a / b) or
    floor(a / b) of the rounded quotient (torch's floor mode corrects that quotient through fmod,
    so the two can differ where a / b rounds onto an integer)."""
    if rounding_mode not in (None, "trunc", "floor"):
        raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    fb, (a, b) = _operands("div", a, b)
    if _category(a.dtype) == 2:
        q = fb._emit(F.DivOp(a.value, b.value))
        return q if rounding_mode is None else trunc(q) if rounding_mode == "trunc" else floor(q)
    if rounding_mode is None:
        return fb._emit(F.DivOp(cast(a, "f32").value, cast(b, "f32").value))
    if a.dtype == "i1":  # torch: bools divide as i64
        a, b = cast(a, "i64"), cast(b, "i64")
    return fb._emit((F.TruncDivOp if rounding_mode == "trunc" else F.FloorDivOp)(a.value, b.value))


def floor_divide(a: Tensor | float, b: Tensor | float) -> Tensor:
    """torch.floor_divide (Python's //): div(a, b, rounding_mode="floor")."""
    return div(a, b, rounding_mode="floor")


def maximum(a: Tensor | float, b: Tensor | float) -> Tensor:
    """Elementwise max; NaN if either side is NaN."""
    return _binary(F.MaxOp, a, b, "maximum")


def minimum(a: Tensor | float, b: Tensor | float) -> Tensor:
    """Elementwise min; NaN if either side is NaN."""
    return _binary(F.MinOp, a, b, "minimum")


def clamp(x: Tensor, min: Tensor | float | None = None, max: Tensor | float | None = None) -> Tensor:  # noqa: A002
    """torch.clamp: max(x, min) then min(that, max), either bound optional (a tensor broadcasts);
    NaN stays NaN. (min > max gives max everywhere, as torch.)"""
    if min is None and max is None:
        raise ValueError("clamp: give min, max or both")
    y = _as_tensor(x, "clamp")
    if min is not None:
        y = maximum(y, min)
    if max is not None:
        y = minimum(y, max)
    return y


def frac(x: Tensor) -> Tensor:
    """x - trunc(x), with x's sign (exact for finite x; NaN for infinities, as torch.frac)."""
    x = _as_tensor(x, "frac")
    return sub(x, trunc(x))


def _opmath(what: str, fn: Callable[..., Tensor], *xs: Tensor | float) -> Tensor:
    """fn of xs computed in f32 when the tensors are bf16 or f16, rounded once to their type at
    the end, as torch computes its composite ops (its "opmath" type)."""
    tensors = [x for x in xs if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{what}: at least one operand must be a fuser Tensor")
    dtype = result_dtype(*xs)
    if dtype not in ("bf16", "f16"):
        return fn(*xs)
    return cast(fn(*(cast(x, "f32") if isinstance(x, Tensor) else x for x in xs)), dtype)


def addcmul(x: Tensor, t1: Tensor | float, t2: Tensor | float, value: float = 1.0) -> Tensor:
    """torch.addcmul: x + value * t1 * t2 (in f32 for bf16/f16 tensors, rounded once)."""
    return _opmath("addcmul", lambda a, b, c: add(a, mul(mul(b, c), value) if value != 1.0 else mul(b, c)),
                   x, t1, t2)


def lerp(start: Tensor | float, end: Tensor | float, weight: Tensor | float) -> Tensor:
    """torch.lerp: start + weight * (end - start) for |weight| < 0.5, else
    end - (end - start) * (1 - weight), so weight 1 gives end exactly (in f32 for bf16/f16)."""
    def fn(a, b, w):
        d = sub(b, a)
        if not isinstance(w, Tensor):  # the branch is known here
            return add(a, mul(w, d)) if -0.5 < w < 0.5 else sub(b, mul(d, 1.0 - w))
        return where(abs(w) < 0.5, add(a, mul(w, d)), sub(b, mul(d, sub(1.0, w))))
    dtypes = {x.dtype for x in (start, end, weight) if isinstance(x, Tensor)}
    if len(dtypes) > 1:  # torch.lerp does not promote either
        raise TypeError(f"lerp: operand dtypes differ ({' vs '.join(sorted(dtypes))}); cast them to one dtype")
    return _opmath("lerp", fn, start, end, weight)


def threshold(x: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    """torch.nn.functional.threshold: value where x <= threshold, else x (NaN stays NaN). The
    threshold and value are rounded to x's type first, as torch's CUDA kernel does (its CPU
    kernel compares a bf16 or f16 x with the unrounded threshold in f32: for bf16 and 0.1 the
    two differ where x is bf16(0.1) = 0.10009765625)."""
    x = _as_tensor(x, "threshold")
    return where(x <= threshold, value, x)


def pow(a: Tensor | float, b: Tensor | float) -> Tensor:  # noqa: A001
    return _binary(F.PowOp, a, b, "pow")


def fmod(a: Tensor | float, b: Tensor | float) -> Tensor:
    """torch.fmod: a - trunc(a / b) * b, exactly, with a's sign (NaN where b is 0; of integers
    C's %, -1 where b is 0)."""
    return _binary(F.FmodOp, a, b, "fmod")


def remainder(a: Tensor | float, b: Tensor | float) -> Tensor:
    """torch.remainder (Python's %): a - floor(a / b) * b, with b's sign (NaN where b is 0; of
    integers -1 where b is 0)."""
    return _binary(F.RemainderOp, a, b, "remainder")


def bitwise_and(a: Tensor | int, b: Tensor | int) -> Tensor:
    """a & b of integer tensors (promoted as torch's); of i1 masks, logical and. A float operand
    is refused, naming the op (torch refuses it too)."""
    return _binary(F.BitwiseAndOp, a, b, "bitwise_and")


def bitwise_or(a: Tensor | int, b: Tensor | int) -> Tensor:
    """a | b of integer tensors; of i1 masks, logical or."""
    return _binary(F.BitwiseOrOp, a, b, "bitwise_or")


def bitwise_xor(a: Tensor | int, b: Tensor | int) -> Tensor:
    """a ^ b of integer tensors; of i1 masks, logical xor."""
    return _binary(F.BitwiseXorOp, a, b, "bitwise_xor")


def bitwise_not(x: Tensor) -> Tensor:
    """~x of an integer tensor; of an i1 mask, logical not."""
    return _unary(F.BitwiseNotOp, x, "bitwise_not")


def bitwise_left_shift(a: Tensor | int, b: Tensor | int) -> Tensor:
    """a << b, wrapping; 0 where b < 0 or b >= the type's width (torch's definition)."""
    return _binary(F.ShiftLeftOp, a, b, "bitwise_left_shift")


def bitwise_right_shift(a: Tensor | int, b: Tensor | int) -> Tensor:
    """a >> b: arithmetic for signed types, logical for u8; where b < 0 or b >= the width, the
    sign (0 or -1), as torch defines it."""
    return _binary(F.ShiftRightOp, a, b, "bitwise_right_shift")


def logical_right_shift(a: Tensor | int, b: Tensor | int) -> Tensor:
    """a >> b with zeros shifted in, whatever the sign (nvFuser's logical_right_shift); 0 where
    b < 0 or b >= the width."""
    return _binary(F.LogicalShiftRightOp, a, b, "logical_right_shift")


def gcd(a: Tensor | int, b: Tensor | int) -> Tensor:
    """torch.gcd of integer tensors: non-negative, gcd(a, 0) = |a| (|MIN| wraps to MIN, as
    torch's)."""
    return _binary(F.GcdOp, a, b, "gcd")


def nextafter(a: Tensor | float, b: Tensor | float) -> Tensor:
    """The next value of the operands' float type after a toward b, as torch.nextafter (C's
    nextafter): b where a == b (so nextafter(0.0, -0.0) is -0.0), the least subnormal with b's
    sign from a zero, NaN where either is NaN. Every float type, f64 included; exact. Integer
    and bool operands are a TypeError, as in torch."""
    fb, (a, b) = _operands("nextafter", a, b)
    if _category(a.dtype) < 2:
        raise TypeError(f"nextafter: operands must be float tensors (torch.nextafter takes no integers), got {a.dtype}")
    return fb._emit(F.NextafterOp(a.value, b.value))


def atan2(y: Tensor | float, x: Tensor | float) -> Tensor:
    """The angle of the point (x, y) in [-pi, pi], as torch.atan2 (signed zeros and infinities
    as C's atan2; computed in f64 and rounded once; integers and bools in f32, as torch)."""
    fb, (y, x) = _operands("atan2", y, x)
    if _category(y.dtype) < 2:
        y, x = cast(y, "f32"), cast(x, "f32")
    return fb._emit(F.Atan2Op(y.value, x.value))


def _float_test(cls: type[Operation], x: Tensor, what: str) -> Tensor:
    x = _as_tensor(x, what)
    return x.builder._emit(cls(x.value))


def isnan(x: Tensor) -> Tensor:
    """An i1 tensor: where x is NaN."""
    return _float_test(F.IsNanOp, x, "isnan")


def isinf(x: Tensor) -> Tensor:
    """An i1 tensor: where x is +inf or -inf."""
    return _float_test(F.IsInfOp, x, "isinf")


def isfinite(x: Tensor) -> Tensor:
    """An i1 tensor: where x is neither NaN nor infinite."""
    return _float_test(F.IsFiniteOp, x, "isfinite")


def isposinf(x: Tensor) -> Tensor:
    return _float_test(F.IsPosInfOp, x, "isposinf")


def isneginf(x: Tensor) -> Tensor:
    return _float_test(F.IsNegInfOp, x, "isneginf")


def signbit(x: Tensor) -> Tensor:
    """An i1 tensor: where x's sign bit is set (-0.0 and negative NaNs included)."""
    return _float_test(F.SignbitOp, x, "signbit")


def logical_not(m: Tensor) -> Tensor:
    """not m, of an i1 tensor."""
    m = _as_tensor(m, "logical_not")
    if m.dtype != "i1":
        raise TypeError(f"logical_not: expected an i1 tensor, got {m.type}")
    return m.builder._emit(F.LogicalNotOp(m.value))


def _logical(cls: type[Operation], a: Tensor, b: Tensor, what: str) -> Tensor:
    for x in (a, b):
        if not isinstance(x, Tensor) or x.dtype != "i1":
            raise TypeError(f"{what}: both operands must be i1 tensors, got "
                            f"{x.type if isinstance(x, Tensor) else type(x).__name__}")
    fb, (a, b) = _operands(what, a, b)
    return fb._emit(cls(a.value, b.value))


def logical_and(a: Tensor, b: Tensor) -> Tensor:
    """a and b, of two i1 tensors (broadcast to a common shape)."""
    return _logical(F.LogicalAndOp, a, b, "logical_and")


def logical_or(a: Tensor, b: Tensor) -> Tensor:
    return _logical(F.LogicalOrOp, a, b, "logical_or")


def logical_xor(a: Tensor, b: Tensor) -> Tensor:
    return _logical(F.LogicalXorOp, a, b, "logical_xor")


def _cmp(pred: str, a: Any, b: Any) -> Tensor:
    fb, (a, b) = _operands(f"cmp {pred}", a, b)
    return fb._emit(F.CmpOp(pred, a.value, b.value))


def where(cond: Tensor, a: Tensor | float, b: Tensor | float) -> Tensor:
    """`cond ? a : b` with broadcasting; `cond` is an i1 tensor (e.g. from `x > 0`)."""
    cond = _as_tensor(cond, "where")
    if cond.dtype != "i1":
        raise TypeError(f"where: the condition must be an i1 tensor, got {cond.type}")
    fb, (a, b) = _operands("where", a, b)
    if cond.builder is not fb:
        raise ValueError("where: operands belong to different FusionBuilders")
    shape = _broadcast_shape("where", cond.shape, a.shape)
    cond, a, b = broadcast_to(cond, shape), broadcast_to(a, shape), broadcast_to(b, shape)
    return fb._emit(F.WhereOp(cond.value, a.value, b.value))


def cast(x: Tensor, dtype: str) -> Tensor:
    """Elementwise dtype conversion, as torch's `Tensor.to(dtype)`; a no-op (no IR) when x
    already has `dtype`. To the FP8 types "f8e4m3fn" and "f8e5m2" (torch.float8_e4m3fn,
    float8_e5m2) it rounds to nearest even through f32, f8e4m3fn saturating at +-448 (inf
    too), f8e5m2 overflowing to inf, NaN staying NaN: torch's rule; FP8 tensors take no
    arithmetic, only casts, shape ops, `where` and `full`."""
    x = _as_tensor(x, "cast")
    _dtype_attr(dtype)
    if x.dtype == dtype:
        return x
    return x.builder._emit(F.CastOp(x.value, dtype))


def full(value: float, shape: Shape, dtype: str = "f32", *, builder: FusionBuilder) -> Tensor:
    return builder.full(value, shape, dtype)


# ------------------------------------------------------ creation and random numbers


def iota(length: int | Shape, start: float = 0, step: float = 1, dtype: str = "i64", *,
         builder: FusionBuilder) -> Tensor:
    """nvFuser's iota: `start + i * step` for i = 0 .. length - 1 (`fusion.iota`; a shape gives
    the values by row-major linear index). Floats compute in f32 (f64 in f64), integers in i64
    wrapping to `dtype`."""
    return builder._emit(F.IotaOp(_shape_tuple(length), _dtype_attr(dtype), start, step))


def arange(start: float, end: float | None = None, step: float = 1, dtype: str | None = None, *,
           builder: FusionBuilder) -> Tensor:
    """torch.arange: `arange(end)` or `arange(start, end, step)`, ceil((end - start) / step)
    values; dtype i64 when every bound is an int, else f32 (torch's default)."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if dtype is None:
        dtype = "i64" if builtins.all(isinstance(v, numbers.Integral) for v in (start, end, step)) else "f32"
    length = max(0, math.ceil((end - start) / step))
    return iota(length, start, step, dtype, builder=builder)


def _rng_operand(x: Tensor | int, what: str, builder: FusionBuilder | None) -> Tensor:
    """A seed or offset: a 0-d i64 input (a runtime value: `fb.input((), "i64")`) or a Python int
    (a constant in the IR, at most 2^53)."""
    if isinstance(x, Tensor):
        if x.shape != () or x.dtype != "i64":
            raise TypeError(f"{what} must be a 0-d i64 tensor (fb.input((), 'i64')) or an int, got {x.type}")
        return x
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        if builder is None:
            raise TypeError(f"{what}: an int seed and offset need builder=")
        return builder.full(int(x), (), "i64")
    raise TypeError(f"{what} must be a 0-d i64 tensor or an int, got {type(x).__name__}")


def _random(cls, shape: Shape, seed: Tensor | int, offset: Tensor | int, p0: float, p1: float, dtype: str,
            builder: FusionBuilder | None) -> Tensor:
    fb = builder or next((t.builder for t in (seed, offset) if isinstance(t, Tensor)), None)
    seed, offset = _rng_operand(seed, "seed", fb), _rng_operand(offset, "offset", fb)
    if seed.builder is not offset.builder:
        raise ValueError("seed and offset belong to different FusionBuilders")
    return seed.builder._emit(cls(seed.value, offset.value, _shape_tuple(shape), _dtype_attr(dtype), p0, p1))


def uniform(shape: Shape, seed: Tensor | int, offset: Tensor | int, low: float = 0.0, high: float = 1.0,
            dtype: str = "f32", *, builder: FusionBuilder | None = None) -> Tensor:
    """Uniform random numbers in [low, high) (`fusion.uniform`, Philox 4x32-10): the same
    seed and offset give the same numbers in every schedule and in the reference; draw again with
    the next offset. f32, f16, bf16 or f64. Not torch's stream."""
    return _random(F.UniformOp, shape, seed, offset, low, high, dtype, builder)


def normal(shape: Shape, seed: Tensor | int, offset: Tensor | int, mean: float = 0.0, std: float = 1.0,
           dtype: str = "f32", *, builder: FusionBuilder | None = None) -> Tensor:
    """Normal random numbers (`fusion.normal`, Box-Muller on Philox 4x32-10); f32, f16, bf16."""
    return _random(F.NormalOp, shape, seed, offset, mean, std, dtype, builder)


def rand_like(x: Tensor, seed: Tensor | int, offset: Tensor | int, dtype: str | None = None) -> Tensor:
    """torch.rand_like: uniform [0, 1) numbers of x's shape and (float) dtype."""
    x = _as_tensor(x, "rand_like")
    return uniform(x.shape, seed, offset, 0.0, 1.0, dtype or x.dtype, builder=x.builder)


def randn_like(x: Tensor, seed: Tensor | int, offset: Tensor | int, dtype: str | None = None) -> Tensor:
    """torch.randn_like: standard normal numbers of x's shape and (float) dtype."""
    x = _as_tensor(x, "randn_like")
    return normal(x.shape, seed, offset, 0.0, 1.0, dtype or x.dtype, builder=x.builder)


def dropout(x: Tensor, p: float, seed: Tensor | int, offset: Tensor | int, train: bool = True
            ) -> tuple[Tensor, Tensor]:
    """torch.native_dropout: (x * mask / (1 - p), mask), the mask an i1 tensor (true: kept)
    drawn as uniform < 1 - p (an f32 uniform of x's shape; 1 - p rounded to f32, which the
    24-bit uniform numbers compare exactly). The product is computed in f32 (f64 for f64) and
    rounded once to x's dtype, as torch's kernel does. p = 1 drops
    everything; train=False keeps everything (x itself and an all-true mask)."""
    x = _as_tensor(x, "dropout")
    if _category(x.dtype) < 2:
        raise TypeError(f"dropout: expected a float tensor, got {x.type}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    fb = x.builder
    if not train or p == 0.0:
        _rng_operand(seed, "seed", fb), _rng_operand(offset, "offset", fb)
        return x, fb.full(1, x.shape, "i1")
    keep = float(np.float32(1.0 - p))
    mask = uniform(x.shape, seed, offset, 0.0, 1.0, "f32", builder=fb) < keep
    return dropout_backward(x, mask, p), mask


def dropout_backward(grad: Tensor, mask: Tensor, p: float) -> Tensor:
    """torch.native_dropout_backward: grad * mask / (1 - p), rounded once to grad's dtype (0
    everywhere for p = 1)."""
    grad, mask = _as_tensor(grad, "dropout_backward"), _as_tensor(mask, "dropout_backward")
    if mask.dtype != "i1":
        raise TypeError(f"dropout_backward: the mask must be an i1 tensor, got {mask.type}")
    if _category(grad.dtype) < 2:
        raise TypeError(f"dropout_backward: expected a float tensor, got {grad.type}")
    wide = "f64" if grad.dtype == "f64" else "f32"  # (the scale is not rounded to bf16 / f16 first)
    scaled = cast(grad, wide) * (1.0 / (1.0 - p) if p < 1.0 else 0.0)
    return cast(where(mask, scaled, 0.0), grad.dtype)


# ------------------------------------------------------------------ shape ops


def _norm_dim(d: int, rank: int) -> int:
    if not -rank <= d < rank:
        raise ValueError(f"dim {d} is out of range for rank {rank}")
    return d % rank


def _norm_dims(dims: int | Sequence[int], rank: int) -> list[int]:
    if isinstance(dims, numbers.Integral):
        dims = [dims]
    if not builtins.all(isinstance(d, numbers.Integral) for d in dims):
        raise TypeError(f"dims must be integers, got {list(dims)!r}")
    out = [_norm_dim(int(d), rank) for d in dims]
    if len(set(out)) != len(out):
        raise ValueError(f"dims {list(dims)} repeat a dimension")
    return out


def reshape(x: Tensor, shape: Shape) -> Tensor:
    """Row-major reshape; one extent may be -1 (inferred)."""
    x = _as_tensor(x, "reshape")
    shape = [int(d) for d in ([shape] if isinstance(shape, numbers.Integral) else shape)]
    count = 1
    for d in x.shape:
        count *= d
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: at most one -1 in {shape}")
    if -1 in shape:
        known = 1
        for d in shape:
            known *= d if d != -1 else 1
        if known == 0 or count % known:
            raise ValueError(f"reshape: cannot infer the -1 in {shape} for {x.type}")
        shape[shape.index(-1)] = count // known
    if tuple(shape) == x.shape:
        return x
    op = F.ReshapeOp.create(operands=[x.value], result_types=[F.tensor(_shape_tuple(shape), x.type.element_type)])
    return x.builder._emit(op)


def permute(x: Tensor, perm: Sequence[int]) -> Tensor:
    """Transpose: result dim i is x's dim perm[i]."""
    x = _as_tensor(x, "permute")
    perm = _norm_dims(perm, x.ndim)
    if len(perm) != x.ndim:
        raise ValueError(f"permute: {list(perm)} is not a permutation of rank {x.ndim}")
    shape = [x.shape[p] for p in perm]
    op = F.PermuteOp.create(operands=[x.value], result_types=[F.tensor(shape, x.type.element_type)],
                            properties={"perm": F._i64_array(perm)})
    return x.builder._emit(op)


def slice(x: Tensor, dim: int, start: int | None = None, stop: int | None = None, step: int = 1) -> Tensor:
    """`x` sliced along `dim` as Python slices a sequence: `start:stop:step`, negative and
    out-of-range bounds included (`fusion.slice`). A negative step reverses first
    (`flip`), as `x.flip(dim)[...]` would, keeping Python's meaning of the bounds."""
    x = _as_tensor(x, "slice")
    d = _norm_dim(dim, x.ndim)
    if not isinstance(step, numbers.Integral) or step == 0:
        raise ValueError(f"slice: step must be a nonzero integer, got {step!r}")
    lo, hi, k = builtins.slice(start, stop, step).indices(x.shape[d])
    if k < 0:  # element lo, lo+k, ... (> hi): flip, then the same elements counted from the end
        n = x.shape[d]
        x = flip(x, d)
        lo, hi, k = n - 1 - lo, n - 1 - hi, -k
    hi = builtins.max(lo, hi)
    if (lo, hi, k) == (0, x.shape[d], 1):
        return x
    start_, stop_, step_ = [0] * x.ndim, list(x.shape), [1] * x.ndim
    start_[d], stop_[d], step_[d] = lo, hi, k
    return x.builder._emit(F.SliceOp(x.value, start_, stop_, step_))


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """torch.narrow: `length` elements of `dim` from `start` (negative: from the end)."""
    x = _as_tensor(x, "narrow")
    n = x.shape[_norm_dim(dim, x.ndim)]
    if not -n <= start <= n or length < 0 or (start % n if n else 0) + length > n:
        raise ValueError(f"narrow: start {start} and length {length} do not fit dim {dim} of {x.type}")
    start = start + n if start < 0 else start
    return slice(x, dim, start, start + length)


def select(x: Tensor, dim: int, index: int) -> Tensor:
    """torch.select: the slice at `index` of `dim` (negative: from the end), that dim removed."""
    x = _as_tensor(x, "select")
    d = _norm_dim(dim, x.ndim)
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select: index {index} is out of range for dim {dim} of extent {n}")
    index %= n
    return squeeze(slice(x, d, index, index + 1), d)


def split(x: Tensor, sizes: int | Sequence[int], dim: int = 0) -> list[Tensor]:
    """torch.split: pieces of `sizes` elements along `dim` (an int: that many each, the last
    smaller); each piece is a slice."""
    x = _as_tensor(x, "split")
    d = _norm_dim(dim, x.ndim)
    n = x.shape[d]
    if isinstance(sizes, numbers.Integral):
        if sizes <= 0:
            raise ValueError(f"split: size {sizes} must be positive")
        sizes = [builtins.min(sizes, n - s) for s in range(0, n, sizes)] or [0]
    if builtins.sum(sizes) != n or builtins.any(k < 0 for k in sizes):
        raise ValueError(f"split: sizes {list(sizes)} do not add up to extent {n} of dim {dim}")
    starts = np.cumsum([0, *sizes])
    return [slice(x, d, int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]


def pad(x: Tensor, pads: Sequence[int], value: float = 0.0) -> Tensor:
    """torch.nn.functional.pad, constant mode: `pads` lists (before, after) pairs from the last
    dim backwards; a negative pad removes elements (`fusion.pad`). `value` in x's dtype."""
    x = _as_tensor(x, "pad")
    pads = [int(p) for p in pads]
    if len(pads) % 2 or len(pads) > 2 * x.ndim:
        raise ValueError(f"pad: {pads} must hold pairs for at most the {x.ndim} dims of {x.type}")
    low, high = [0] * x.ndim, [0] * x.ndim
    for i in range(len(pads) // 2):
        low[x.ndim - 1 - i], high[x.ndim - 1 - i] = pads[2 * i], pads[2 * i + 1]
    for d, (n, lo, hi) in enumerate(zip(x.shape, low, high)):
        if n + builtins.min(lo, 0) + builtins.min(hi, 0) < 0 or n + lo + hi < 0:
            raise ValueError(f"pad: pads ({lo}, {hi}) of dim {d} remove more than its {n} elements")
    if not builtins.any(low) and not builtins.any(high):
        return x
    fill = x.builder.full(value, (), x.dtype)
    return x.builder._emit(F.PadOp(x.value, fill.value, low, high))


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """torch.cat: `tensors` joined along `dim` (`fusion.cat`); they share every other extent and
    are promoted to one dtype as torch does."""
    tensors = [_as_tensor(t, "cat") for t in tensors]
    if not tensors:
        raise ValueError("cat: needs at least one tensor")
    fb = tensors[0].builder
    if builtins.any(t.builder is not fb for t in tensors):
        raise ValueError("cat: tensors belong to different FusionBuilders")
    d = _norm_dim(dim, tensors[0].ndim)
    for i, t in enumerate(tensors):
        if t.ndim != tensors[0].ndim or [n for k, n in enumerate(t.shape) if k != d] != \
                [n for k, n in enumerate(tensors[0].shape) if k != d]:
            raise ValueError(f"cat: tensor {i} has shape {list(t.shape)}; along every dim but {dim} it must match "
                             f"tensor 0's {list(tensors[0].shape)}")
    dtype = functools.reduce(promote_types, [t.dtype for t in tensors])
    tensors = [cast(t, dtype) for t in tensors]
    if len(tensors) == 1:
        return tensors[0]
    return fb._emit(F.CatOp([t.value for t in tensors], d))


def flip(x: Tensor, dims: int | Sequence[int]) -> Tensor:
    """torch.flip: the elements of `dims` in reverse order (`fusion.flip`)."""
    x = _as_tensor(x, "flip")
    dims = [d for d in _norm_dims(dims, x.ndim) if x.shape[d] > 1]
    return x.builder._emit(F.FlipOp(x.value, dims)) if dims else x


def squeeze(x: Tensor, dims: int | Sequence[int] | None = None) -> Tensor:
    """torch.squeeze: `dims` of extent 1 removed (None: every such dim; others in `dims` stay,
    as torch leaves them)."""
    x = _as_tensor(x, "squeeze")
    dims = range(x.ndim) if dims is None else _norm_dims(dims, x.ndim)
    drop = {d for d in dims if x.shape[d] == 1}
    return reshape(x, [n for d, n in enumerate(x.shape) if d not in drop])


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """torch.unsqueeze: a new dim of extent 1 at `dim` (-1: last)."""
    x = _as_tensor(x, "unsqueeze")
    d = _norm_dim(dim, x.ndim + 1)
    return reshape(x, [*x.shape[:d], 1, *x.shape[d:]])


def expand(x: Tensor, shape: Shape) -> Tensor:
    """torch.expand: x's extent-1 dims (and new leading dims) repeated to `shape`; -1 keeps a
    dim. No copy: the kernels read the one element."""
    x = _as_tensor(x, "expand")
    shape = list(shape)
    lead = len(shape) - x.ndim
    if lead < 0:
        raise ValueError(f"expand: {shape} has fewer dims than {x.type}")
    shape = [x.shape[i - lead] if n == -1 and i >= lead else int(n) for i, n in enumerate(shape)]
    for i, n in enumerate(x.shape):
        if n != 1 and n != shape[lead + i]:
            raise ValueError(f"expand: dim {i} of {x.type} has extent {n}, not 1 or {shape[lead + i]}")
    return broadcast_to(x, shape)


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """torch.triu: the elements on and above `diagonal` of the last two dims (col - row >=
    diagonal), zero elsewhere; an iota comparison inside the consumer's kernel."""
    return _triangle(x, diagonal, upper=True)


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """torch.tril: the elements on and below `diagonal` (col - row <= diagonal), zero elsewhere."""
    return _triangle(x, diagonal, upper=False)


def _triangle(x: Tensor, diagonal: int, upper: bool) -> Tensor:
    x = _as_tensor(x, "triu" if upper else "tril")
    if x.ndim < 2:
        raise ValueError(f"{'triu' if upper else 'tril'}: needs at least 2 dims, got {x.type}")
    fb, (r, c) = x.builder, x.shape[-2:]
    rows = broadcast(iota(r, builder=fb), (r, c), [1])
    cols = broadcast(iota(c, builder=fb), (r, c), [0])
    diff = cols - rows
    keep = broadcast_to(diff >= diagonal if upper else diff <= diagonal, x.shape)
    return where(keep, x, fb.full(0, x.shape, x.dtype))


def _index_tensor(index: Tensor, x: Tensor, what: str) -> Tensor:
    index = _as_tensor(index, what)
    if index.dtype not in ("i32", "i64"):
        raise TypeError(f"{what}: the index must be an i32 or i64 tensor, got {index.type}")
    if index.builder is not x.builder:
        raise ValueError(f"{what}: the input and the index belong to different FusionBuilders")
    return index


def take_along_axis(x: Tensor, index: Tensor, dim: int) -> Tensor:
    """nvFuser's take_along_axis (numpy's): `x` read along `dim` where `index` says, `index` of
    x's shape but along `dim` (`fusion.gather`). Indices below 0 count from the end; any still
    outside [0, extent) read the nearest end (torch raises; fuser's kernels cannot, so the result
    is defined instead)."""
    x = _as_tensor(x, "take_along_axis")
    index = _index_tensor(index, x, "take_along_axis")
    d = _norm_dim(dim, x.ndim)
    if index.ndim != x.ndim or builtins.any(a != b for k, (a, b) in enumerate(zip(x.shape, index.shape)) if k != d):
        raise ValueError(f"take_along_axis: the index {index.type} must match {x.type} in every dim but {dim}")
    return x.builder._emit(F.GatherOp(x.value, index.value, d))


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """torch.gather: as `take_along_axis`, and `index` may be smaller than `x` in the other dims
    (x's leading part there is read)."""
    x = _as_tensor(x, "gather")
    index = _index_tensor(index, x, "gather")
    d = _norm_dim(dim, x.ndim)
    if index.ndim != x.ndim or builtins.any(b > a for k, (a, b) in enumerate(zip(x.shape, index.shape)) if k != d):
        raise ValueError(f"gather: the index {index.type} must not be larger than {x.type} in a dim but {dim}")
    for k, n in enumerate(index.shape):
        if k != d and n < x.shape[k]:
            x = slice(x, k, 0, n)
    return take_along_axis(x, index, d)


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """torch.index_select: the slices of `dim` that 1-D `index` names, in its order
    (`fusion.index_select`; out-of-range indices as in `take_along_axis`)."""
    x = _as_tensor(x, "index_select")
    index = _index_tensor(index, x, "index_select")
    if index.ndim != 1:
        raise ValueError(f"index_select: the index must be 1-D, got {index.type}")
    return x.builder._emit(F.IndexSelectOp(x.value, index.value, _norm_dim(dim, x.ndim)))


def embedding(weight: Tensor, ids: Tensor) -> Tensor:
    """torch.nn.functional.embedding: the rows of 2-D `weight` that `ids` (any shape) name, of
    shape ids.shape + (embedding width,)."""
    weight = _as_tensor(weight, "embedding")
    ids = _index_tensor(ids, weight, "embedding")
    if weight.ndim != 2:
        raise ValueError(f"embedding: the weight must be 2-D, got {weight.type}")
    rows = index_select(weight, 0, reshape(ids, [-1]))
    return reshape(rows, [*ids.shape, weight.shape[1]])


def _scatter_op(x: Tensor, index: Tensor, src: Tensor, d: int, add: bool, deterministic: bool, what: str) -> Tensor:
    """fusion.scatter, or with `deterministic=False` (sums only) fusion.scatter_add_atomic."""
    if deterministic:
        return x.builder._emit(F.ScatterOp(x.value, index.value, src.value, d, add=add))
    if not add:
        raise ValueError(f"{what}: deterministic=False is an option of the sums only (scatter_add, index_add)")
    if x.dtype not in F.SCATTER_ATOMIC_TYPES:
        raise ValueError(f"{what}: deterministic=False (atomic adds) takes {', '.join(F.SCATTER_ATOMIC_TYPES)}, "
                         f"not {x.dtype}")
    return x.builder._emit(F.ScatterAddAtomicOp(x.value, index.value, src.value, d))


def scatter(x: Tensor, dim: int, index: Tensor, src: Tensor | float, reduce: str | None = None,
            deterministic: bool = True) -> Tensor:
    """torch.scatter (and, `reduce="add"`, torch.scatter_add): `x` with src's elements written
    (added) along `dim` where `index` says (`fusion.scatter`). `index` has x's rank and is no
    larger than x in the dims but `dim`; src (a tensor no smaller than `index`, whose leading part
    is read, or a number) is read at index's positions. Deterministic: where indices repeat,
    the last in index order wins, and sums run in index order (floats accumulated in f32 from
    x's value and rounded once; integers wrap). Indices below 0 count from the end; one still
    outside [0, extent) lands on the nearest end (torch raises; FUSER_CHECK_INDICES=1 reports it).
    `deterministic=False` (sums of f32, f64, i32 and i64 only): `fusion.scatter_add_atomic`, a
    copy of x and then one atomic add (red.global.add) per src element, in whatever order they
    land, so f32 sums may differ by rounding from run to run."""
    x = _as_tensor(x, "scatter")
    index = _index_tensor(index, x, "scatter")
    if reduce not in (None, "add", "sum"):
        raise ValueError(f"scatter: reduce={reduce!r} is not supported (None or 'add')")
    d = _norm_dim(dim, x.ndim)
    if index.ndim != x.ndim or builtins.any(b > a for k, (a, b) in enumerate(zip(x.shape, index.shape)) if k != d):
        raise ValueError(f"scatter: the index {index.type} must have {x.type}'s rank and be no larger in a dim but {dim}")
    if _is_scalar(src):
        src = x.builder.full(src, index.shape, x.dtype)
    src = _as_tensor(src, "scatter")
    if src.ndim != x.ndim or builtins.any(b < a for a, b in zip(index.shape, src.shape)):
        raise ValueError(f"scatter: src {src.type} must have the index {index.type}'s rank and be no smaller")
    for k, n in enumerate(index.shape):
        if n < src.shape[k]:
            src = slice(src, k, 0, n)
    src = cast(src, x.dtype)
    return _scatter_op(x, index, src, d, reduce is not None, deterministic, "scatter")


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor, deterministic: bool = True) -> Tensor:
    """torch.scatter_add: `scatter(x, dim, index, src, reduce="add")` (deterministic: each
    element's sum in index order, floats in f32; `deterministic=False`: atomic adds)."""
    return scatter(x, dim, index, src, reduce="add", deterministic=deterministic)


def index_add(x: Tensor, dim: int, index: Tensor, src: Tensor, alpha: float = 1, deterministic: bool = True) -> Tensor:
    """torch.index_add: `x` plus `alpha * src`'s slices along `dim` added to the slices that 1-D
    `index` names (src is x's shape but `len(index)` along `dim`): a `fusion.scatter ... add`
    whose index line is shared by every position of the other dims, so it is sorted once.
    Deterministic, as `scatter_add` (`deterministic=False`: atomic adds, as there); the
    embedding backward (`embedding_backward`)."""
    x = _as_tensor(x, "index_add")
    index = _index_tensor(index, x, "index_add")
    src = _as_tensor(src, "index_add")
    d = _norm_dim(dim, x.ndim)
    if index.ndim != 1:
        raise ValueError(f"index_add: the index must be 1-D, got {index.type}")
    want = tuple(index.shape[0] if k == d else n for k, n in enumerate(x.shape))
    if tuple(src.shape) != want:
        raise ValueError(f"index_add: src {src.type} must have shape {list(want)} (x's, with len(index) along {dim})")
    if x.dtype == "i1":
        raise ValueError("index_add: bool tensors cannot be added")
    src = cast(src, x.dtype)
    if alpha != 1:
        src = src * alpha
    line = reshape(index, tuple(index.shape[0] if k == d else 1 for k in range(x.ndim)))
    return _scatter_op(x, line, src, d, True, deterministic, "index_add")


def embedding_backward(grad: Tensor, ids: Tensor, num_weights: int, padding_idx: int | None = None,
                       deterministic: bool = True) -> Tensor:
    """torch's embedding_dense_backward: the [num_weights, D] gradient of an embedding's weight,
    the rows of `grad` (ids.shape + (D,)) summed into the rows their ids name (an `index_add`
    into zeros, in token order, f32 accumulation; `deterministic=False`: atomic adds, f32 and
    f64 only); the row `padding_idx` stays zero."""
    grad = _as_tensor(grad, "embedding_backward")
    ids = _index_tensor(ids, grad, "embedding_backward")
    if grad.ndim < 1 or tuple(grad.shape[:-1]) != tuple(ids.shape):
        raise ValueError(f"embedding_backward: grad {grad.type} must be ids' shape {list(ids.shape)} plus the width")
    width = grad.shape[-1]
    flat, rows = reshape(ids, [-1]), reshape(grad, [-1, width])
    out = index_add(grad.builder.full(0, (num_weights, width), grad.dtype), 0, flat, rows, deterministic=deterministic)
    if padding_idx is not None and padding_idx >= 0:
        pad_row = broadcast(iota(num_weights, builder=grad.builder), (num_weights, width), [1]).eq(padding_idx)
        out = where(pad_row, grad.builder.full(0, out.shape, out.dtype), out)
    return out


def segment_set(x: Tensor) -> Tensor:
    """Identity that forces a kernel boundary."""
    x = _as_tensor(x, "segment_set")
    return x.builder._emit(F.SegmentSetOp.create(operands=[x.value], result_types=[x.type]))


# ----------------------------------------------------------------- reductions


Dims = int | Sequence[int] | None


def _reduce(kind: str, x: Tensor, dims: Dims, keepdim: bool, dtype: str | None) -> Tensor:
    """`fusion.reduce kind` over `dims` (None: all). `dtype` as torch's: the result's type, the
    input cast to it first unless the reduction gives that type itself (f32 from bf16)."""
    x = _as_tensor(x, kind)
    dims = list(range(x.ndim)) if dims is None else _norm_dims(dims, x.ndim)
    if dtype is not None:
        want = _dtype_attr(dtype)
        if want not in F.reduce_result_types(kind, x.type.element_type):
            x = cast(x, dtype)
            if want not in F.reduce_result_types(kind, want):
                raise ValueError(f"{kind}: dtype {dtype} is not a result type of {kind} (a sum or product of "
                                 f"masks is an integer)")
    return x.builder._emit(F.ReduceOp(kind, x.value, dims, keepdim, dtype))


def sum(x: Tensor, dims: Dims = None, keepdim: bool = False, dtype: str | None = None) -> Tensor:  # noqa: A001
    """Sum over `dims` (None: all), as torch.sum: floats accumulated in f32, the result x's
    dtype; integers and bools (counted) in i64, wrapping, the result i64. `dtype` as torch's:
    x is cast to it first ("f32" from bf16/f16 only names the result)."""
    return _reduce("sum", x, dims, keepdim, dtype)


def prod(x: Tensor, dims: Dims = None, keepdim: bool = False, dtype: str | None = None) -> Tensor:
    """Product over `dims` (None: all), as torch.prod: floats in f32, integers and bools in
    i64 (wrapping, an i64 result); `dtype` as in `sum`."""
    return _reduce("prod", x, dims, keepdim, dtype)


def amax(x: Tensor, dims: Dims = None, keepdim: bool = False, dtype: str | None = None) -> Tensor:
    """Maximum over `dims` in x's dtype (NaN propagates; of bools: any)."""
    return _reduce("max", x, dims, keepdim, dtype)


def amin(x: Tensor, dims: Dims = None, keepdim: bool = False, dtype: str | None = None) -> Tensor:
    """Minimum over `dims` in x's dtype (NaN propagates; of bools: all)."""
    return _reduce("min", x, dims, keepdim, dtype)


def any(x: Tensor, dims: Dims = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether some element over `dims` is nonzero (NaN is), a bool tensor."""
    return _reduce("any", x, dims, keepdim, None)


def all(x: Tensor, dims: Dims = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether every element over `dims` is nonzero (NaN is), a bool tensor."""
    return _reduce("all", x, dims, keepdim, None)


def argmax(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The i64 index of the first maximum along `dim` (None: of the flattened tensor, as
    torch.argmax; with keepdim every dim stays as 1); NaN counts as the maximum."""
    return _reduce("argmax", x, dim, keepdim, None)


def argmin(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The i64 index of the first minimum along `dim` (None: flattened); NaN counts as the
    minimum."""
    return _reduce("argmin", x, dim, keepdim, None)


# ----------------------------------------------------------------- scans


def _scan(kind: str, what: str, x: Tensor, dim: int, dtype: str | None) -> Tensor:
    """`fusion.scan kind` along `dim`, which the op takes innermost only: another dim is swapped
    with the last by a permute before the scan and back after it. A 0-d tensor is scanned as one
    element (torch takes dim 0 or -1 of it). `dtype` as torch's: the result's type, the input
    cast to it first unless the scan gives that type itself (f32 from bf16)."""
    x = _as_tensor(x, what)
    if not isinstance(dim, numbers.Integral):
        raise TypeError(f"{what}: dim must be an integer, got {dim!r}")
    if x.ndim == 0:
        _norm_dim(int(dim), 1)
        return reshape(_scan(kind, what, reshape(x, [1]), 0, dtype), [])
    d = _norm_dim(int(dim), x.ndim)
    if dtype is not None:
        want = _dtype_attr(dtype)
        if want not in F.scan_result_types(kind, x.type.element_type):
            x = cast(x, dtype)
            if want not in F.scan_result_types(kind, want):
                raise ValueError(f"{what}: dtype {dtype} is not a result type of {what}")
    last = x.ndim - 1
    if d != last:
        perm = list(range(x.ndim))
        perm[d], perm[last] = last, d
        return permute(_scan(kind, what, permute(x, perm), last, dtype), perm)
    return x.builder._emit(F.ScanOp(kind, x.value, last, dtype))


def cumsum(x: Tensor, dim: int = -1, dtype: str | None = None) -> Tensor:
    """Inclusive running sum along `dim`, as torch.cumsum: floats summed in f32, the result x's
    dtype; integers and bools in i64, wrapping, the result i64. `dtype` as torch's (x is cast
    to it first; "f32" from bf16/f16 only names the result). A dim other than the last is
    scanned through a permute (one more kernel for each)."""
    return _scan("sum", "cumsum", x, dim, dtype)


def cumprod(x: Tensor, dim: int = -1, dtype: str | None = None) -> Tensor:
    """Inclusive running product along `dim`, as torch.cumprod: floats in f32, integers and
    bools in i64 (wrapping, an i64 result); `dtype` as in `cumsum`."""
    return _scan("prod", "cumprod", x, dim, dtype)


def cummax(x: Tensor, dim: int = -1) -> Tensor:
    """The values of torch.cummax along `dim` (not the indices), in x's dtype: a NaN, once
    seen, is the result from there on; of equal elements the later is taken (-0.0 after 0.0
    gives -0.0); of bools a running any."""
    return _scan("max", "cummax", x, dim, None)


def cummin(x: Tensor, dim: int = -1) -> Tensor:
    """The values of torch.cummin along `dim` (not the indices), as `cummax` (of bools a
    running all)."""
    return _scan("min", "cummin", x, dim, None)


# ----------------------------------------------------------------- sorting


def _sort(what: str, x: Tensor, dim: int, descending: bool, k: int | None) -> tuple[Tensor, Tensor]:
    """`fusion.sort` along `dim`, which the op takes innermost only: another dim is swapped with
    the last by a permute before the sort and back after it (each one more kernel). A 0-d tensor
    is sorted as one element (torch takes dim 0 or -1 of it)."""
    x = _as_tensor(x, what)
    if not isinstance(dim, numbers.Integral):
        raise TypeError(f"{what}: dim must be an integer, got {dim!r}")
    if k is not None and (not isinstance(k, numbers.Integral) or isinstance(k, bool)):
        raise TypeError(f"{what}: k must be an integer, got {k!r}")
    if x.ndim == 0:
        _norm_dim(int(dim), 1)
        v, i = _sort(what, reshape(x, [1]), 0, descending, k)
        return (v, i) if k == 0 else (reshape(v, []), reshape(i, []))
    d = _norm_dim(int(dim), x.ndim)
    n = x.shape[d]
    if k is not None and not 0 <= k <= n:
        raise ValueError(f"{what}: k {k} is out of range for dim {d} of extent {n} (0 <= k <= {n})")
    last = x.ndim - 1
    if d != last:
        perm = list(range(x.ndim))
        perm[d], perm[last] = last, d
        v, i = _sort(what, permute(x, perm), last, descending, k)
        return permute(v, perm), permute(i, perm)
    return x.builder._emit(F.SortOp(x.value, last, bool(descending), None if k is None else int(k)))


def sort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = True) -> tuple[Tensor, Tensor]:
    """(values, indices) of torch.sort(x, dim, descending, stable=True): each row along `dim`
    sorted, with the i64 position each value came from. Always stable (elements that compare
    equal keep their order, also when descending), so `stable=False` gives the same result, a
    valid one for torch's unstable sort. Floats in torch's order: NaN above everything (last
    ascending, first descending), -0.0 equal to 0.0 (each value keeps its sign). Every dtype;
    bools order False < True. A dim other than the last goes through permutes. The kernel keeps
    a row in shared memory: rows longer than its limit are refused, naming it (README)."""
    del stable  # always stable
    return _sort("sort", x, dim, descending, None)


def argsort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """torch.argsort(x, dim, descending, stable): the indices (i64) of `sort`."""
    del stable
    return _sort("argsort", x, dim, descending, None)[1]


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple[Tensor, Tensor]:
    """(values, indices) of torch.topk(x, k, dim, largest, sorted): the k largest (smallest)
    elements along `dim` and their i64 positions, in sorted order (which `sorted=False` allows
    too); of equal elements the earlier ones first, as torch's stable sort gives them; NaN counts
    as the largest. 0 <= k <= x.shape[dim]."""
    del sorted  # always sorted
    return _sort("topk", x, dim, largest, k)


def _float_statistics(x: Tensor, what: str) -> Tensor:
    x = _as_tensor(x, what)
    if not F.is_float(x.type.element_type):
        raise TypeError(f"{what}: {x.dtype} input; {what} takes floating-point tensors only, as torch's "
                        f"(cast it first: {what}(x.cast('f32'), ...))")
    return x


def welford(x: Tensor, dims: int | Sequence[int], keepdim: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """(avg, M2, N) over `dims`: avg and M2 in f32 (f64 for an f64 input), N in i64."""
    x = _float_statistics(x, "welford")
    return x.builder._emit(F.WelfordOp(x.value, _norm_dims(dims, x.ndim), keepdim))


def var_mean(x: Tensor, dims: int | Sequence[int], correction: int = 1, keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """(var, mean) over `dims` in f32 (f64 for an f64 input); var = M2 / (N - correction)."""
    x = _float_statistics(x, "var_mean")
    return x.builder._emit(F.VarMeanOp(x.value, _norm_dims(dims, x.ndim), int(correction), keepdim))


def matmul(a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False, dtype: str = "f32") -> Tensor:
    """C = A @ B with f32 accumulation. Operands are given as stored: with transpose_a, `a` is
    [K, M]; with transpose_b, `b` is [N, K]."""
    a, b = _as_tensor(a, "matmul"), _as_tensor(b, "matmul")
    if a.builder is not b.builder:
        raise ValueError("matmul: operands belong to different FusionBuilders")
    if a.dtype != b.dtype:
        raise TypeError(f"matmul: operand dtypes differ ({a.dtype} vs {b.dtype}); cast one side explicitly")
    _dtype_attr(dtype)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"matmul: operands must be 2-D, got {a.type} and {b.type}")
    return a.builder._emit(F.MatmulOp(a.value, b.value, transpose_a, transpose_b, dtype))


# -------------------------------------------------------------------- compile


def _as_module(fusion: FusionBuilder | ModuleOp | str | os.PathLike) -> ModuleOp:
    if isinstance(fusion, os.PathLike):
        return _read_mlir_file(os.fspath(fusion))
    if isinstance(fusion, FusionBuilder):
        return fusion.finish()
    if isinstance(fusion, ModuleOp):
        fusion.verify()
        return fusion
    if isinstance(fusion, str):
        if "\n" not in fusion and ("{" not in fusion or fusion.endswith(".mlir")):
            return _read_mlir_file(fusion)  # a path, not MLIR text
        return parse_module(fusion, "<string>")
    raise TypeError(f"compile: expected a FusionBuilder, an xDSL ModuleOp, MLIR text or a path to a .mlir file, "
                    f"got {type(fusion).__name__}")


def _read_mlir_file(path: str) -> ModuleOp:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise FileNotFoundError(f"compile: {path!r} is neither MLIR text nor a readable file ({e.strerror})") from None
    return parse_module(decode_source(data, path), path)


def _check_pipeline(pipeline: str | Sequence[ModulePass]) -> str | list[ModulePass]:
    if isinstance(pipeline, str):
        return pipeline
    if isinstance(pipeline, Sequence):
        passes = list(pipeline)
        bad = [p for p in passes if not isinstance(p, ModulePass)]
        if bad:
            raise TypeError(f"compile: pipeline entries must be xDSL ModulePass objects, got {type(bad[0]).__name__}")
        return passes
    raise TypeError(f"compile: pipeline must be a pipeline string or a list of ModulePass, got {type(pipeline).__name__}")


class CompiledFusion:
    """A compiled fusion: call it on arrays to run on the GPU.

    `.reference(*arrays)` runs the numpy interpreter on the fusion-level IR, `.ir(level)` gives
    the IR text of a stage ("fusion", "sched", "nvvm"), `.llvm_ir` and `.ptx` the final code.
    """

    def __init__(self, module: ModuleOp, result: Any):
        self.module = module  # fusion level, as given (compilation works on a clone)
        self.func = find_func(module)
        self.result = result
        self._executor = None
        self._index_checks = None  # FUSER_CHECK_INDICES: the fusion's indexed reads, found on the first call

    @property
    def name(self) -> str:
        return self.func.sym_name.data

    @property
    def program(self):
        return self.result.program

    @property
    def stages(self) -> dict[str, str]:
        return self.result.stages

    @property
    def llvm_ir(self) -> str:
        return self.result.llvm_ir

    @property
    def ptx(self) -> str:
        return self.result.ptx

    def ir(self, level: str = "fusion") -> str:
        stages = self.result.stages
        if level in stages:
            return stages[level]
        if level == "fusion":
            return str(self.module)
        hint = " (compiled with stages=False)" if level in ("sched", "nvvm") else ""
        raise KeyError(f"no IR stage {level!r}{hint}; available: {', '.join(stages)}")

    def __call__(self, *arrays: Any, **named: Any) -> Any:
        """Run on the GPU. Inputs go by position, or by name (the fusion's argument names)."""
        arrays = self._bind(arrays, named)
        self._check_indices(arrays)
        if self._executor is None:  # the first call loads the kernels
            from fuser.runtime.executor import Executor

            self._executor = Executor(self.result.program)
        return self._executor(*arrays)

    @property
    def executor(self) -> Any:
        """The runtime's Executor once a first call has loaded the kernels, else None."""
        return self._executor

    def _check_indices(self, arrays: tuple) -> None:
        """With FUSER_CHECK_INDICES=1, an IndexError for an index input outside its op's range
        (fuser.runtime.index_check); otherwise nothing."""
        if self._index_checks is None:  # (found once: a fusion without indexed reads reads no variable per call)
            self._index_checks = index_check.index_checks(self.func)
        if self._index_checks and index_check.enabled():
            index_check.check_indices(self._index_checks, arrays, self.name)

    def input_names(self) -> list[str]:
        """The fusion's argument names, in order (`arg<i>` for an unnamed one)."""
        return [a.name_hint or f"arg{i}" for i, a in enumerate(self.func.body.block.args)]

    def _bind(self, arrays: tuple, named: dict[str, Any]) -> tuple:
        """Positional and keyword inputs as one positional tuple, with Python's own errors."""
        if not named:
            return arrays
        names = self.input_names()
        if len(arrays) > len(names):
            raise TypeError(f"@{self.name} takes {len(names)} inputs ({', '.join(names)}), got {len(arrays)}")
        bound: dict[str, Any] = dict(zip(names, arrays))
        for k, v in named.items():
            if k not in names:
                raise TypeError(f"@{self.name} got an unexpected keyword argument '{k}'; its inputs are "
                                f"{', '.join(names)}")
            if k in bound:
                raise TypeError(f"@{self.name} got multiple values for input '{k}'")
            bound[k] = v
        missing = [n for n in names if n not in bound]
        if missing:
            raise TypeError(f"@{self.name} is missing input{'s' if len(missing) > 1 else ''} "
                            f"{', '.join(repr(m) for m in missing)}")
        return tuple(bound[n] for n in names)

    def reference(self, *arrays: Any, precision: str = "native", **named: Any) -> Any:
        """The numpy interpreter's answer, shaped like a GPU call's: one array, or a tuple."""
        arrays = self._bind(arrays, named)
        self._check_indices(arrays)
        outs = run_reference(self.func, arrays, precision)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self) -> str:
        return f"CompiledFusion(@{self.name})"


def compile(fusion: FusionBuilder | ModuleOp | str | os.PathLike, pipeline: str | Sequence[ModulePass] = "default",  # noqa: A001
            arch: str = "sm_90a", options: dict[str, Any] | None = None, stages: bool = True,
            wait: bool = True) -> CompiledFusion:
    """Compile a fusion (builder, module, MLIR text, or the path of a .mlir file as a str or
    pathlib.Path) through `pipeline` for `arch`.

    `pipeline` is "default", a pipeline string ("pass-a,pass-b{opt=1}") or a list of ModulePass.
    `options` are schedule options (`{"block": 128, "persistent": False}`, the names of
    `ScheduleOptions`) for the pipeline's planning passes, as if written in its text; an unknown
    name, a bad value or one the pipeline sets differently is a `PipelineError`.
    `ir("sched")` and `ir("nvvm")` are printed when first asked for (the pipeline runs again up
    to that level), so a compile prints no IR; `stages=False` gives the fusion level only.
    The caller's module is not modified.
    Processes that share the disk cache compile each fusion once: one compiles, the others wait
    for it and load its result; `wait=False` raises `fuser.runtime.cache.Busy` instead of waiting.
    """
    from fuser.driver import compile_fusion  # the compiler driver is heavy; load on use

    module = _as_module(fusion)
    result = compile_fusion(module.clone(), _check_pipeline(pipeline), arch, options, stages=stages, wait=wait)
    return CompiledFusion(module, result)

