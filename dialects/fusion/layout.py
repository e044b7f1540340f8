"""Memory layouts at a fusion function's boundary (issue 32): the attributes that declare them
and their one reading, for the pass that applies them (passes/layouts.py), the conversion that
hands them to the host function, the runtime that checks arrays against them, and the
reference interpreter.

- An argument with `fusion.strides = array<i64: ...>` (element strides, 0 allowed: an expanded
  dim) and optionally `fusion.offset = K : i64` is a strided view the caller passes in place:
  element i is at storage element K + sum(i[d] * strides[d]) from the buffer's start.
  `fusion-layouts` turns the argument into its 1-D storage (`tensor<N x T>`, N the elements the
  view reaches) read through a `fusion.as_strided`, and records the view's shape as
  `fusion.view`.
- A result with `fusion.stride_order = array<i64: ...>` is stored with those strides, in
  nvFuser's convention: entry d is the rank of dim d's stride, 0 the innermost (smallest) and
  rank - 1 the outermost, so row-major is `[rank-1, ..., 1, 0]` (`[1, 0]` for a matrix) and
  `[0, 1]` is a column-major matrix. Internally a layout is its dim order, the dims from
  outermost to innermost (torch's `Tensor.dim_order()`; `dim_order` converts).
  `fusion-layouts` returns the dense permute in that dim order instead and records the logical
  shape as `fusion.view`; the runtime hands back the permuted view of it (torch: `.permute`,
  numpy: `np.transpose`), whose strides are those of the order.
- A result with `fusion.alias = I : i64` is an in-place output (issue 32; nvFuser's
  `add_output(out, alias_input=inp)`): its value is written into argument I's buffer, and the
  call returns that argument's array itself, updated. The pair must have one type and argument
  I must be dense row-major (no `fusion.strides`: a stride-0 or overlapping view would have
  several elements share one address); the result takes no `fusion.stride_order`, and no two
  results alias one argument. `check_aliases` is the check (the module verifier runs it on every
  fusion function); `sched-verify-buffers` proves that no kernel reads an aliased element after
  one is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, DictionaryAttr, IntegerAttr, TensorType
from xdsl.dialects.func import FuncOp

from .shape import strided_span

STRIDES = "fusion.strides"
OFFSET = "fusion.offset"
VIEW = "fusion.view"
STRIDE_ORDER = "fusion.stride_order"
ALIAS = "fusion.alias"

__all__ = ["STRIDES", "OFFSET", "VIEW", "STRIDE_ORDER", "ALIAS", "output_alias", "output_aliases", "check_aliases",
           "overlapping", "InputLayout", "LayoutError", "input_layout",
           "output_order", "output_view", "arg_attrs", "res_attrs", "inverse", "order_strides", "strided_span",
           "dim_order", "check_stride_order"]


class LayoutError(ValueError):
    """A layout attribute that does not describe a valid layout of its value."""


@dataclass(frozen=True)
class InputLayout:
    shape: tuple[int, ...]     # the view's (logical) shape
    strides: tuple[int, ...]   # element strides
    offset: int                # elements from the buffer's start to element 0

    @property
    def span(self) -> int:
        return strided_span(self.shape, self.strides, self.offset)

    def __str__(self) -> str:
        return f"shape {list(self.shape)} strides {list(self.strides)} offset {self.offset}"


def _entries(attrs, i: int) -> dict:
    if isinstance(attrs, ArrayAttr) and i < len(attrs.data) and isinstance(attrs.data[i], DictionaryAttr):
        return dict(attrs.data[i].data)
    return {}


def arg_attrs(fn: FuncOp, i: int) -> dict:
    return _entries(fn.arg_attrs, i)


def res_attrs(fn: FuncOp, i: int) -> dict:
    return _entries(fn.res_attrs, i)


def _ints(attr, what: str) -> tuple[int, ...]:
    if not isinstance(attr, DenseArrayBase):
        raise LayoutError(f"{what} must be an array<i64: ...>, got {attr}")
    return tuple(int(v) for v in attr.get_values())


def _label(fn: FuncOp, i: int) -> str:
    a = fn.body.block.args[i] if i < len(fn.body.block.args) else None
    name = a.name_hint if a is not None and a.name_hint else f"arg{i}"
    return f"@{fn.sym_name.data} argument {i} ('%{name}')"


def input_layout(fn: FuncOp, i: int) -> InputLayout | None:
    """Argument i's declared layout, checked (None: a dense row-major argument). Before
    `fusion-layouts` the shape is the argument's type; after, its `fusion.view`."""
    attrs = arg_attrs(fn, i)
    if STRIDES not in attrs:
        if OFFSET in attrs or VIEW in attrs:
            raise LayoutError(f"{_label(fn, i)}: {OFFSET} or {VIEW} without {STRIDES}")
        return None
    label = _label(fn, i)
    strides = _ints(attrs[STRIDES], f"{label}: {STRIDES}")
    off = attrs.get(OFFSET)
    if off is not None and not isinstance(off, IntegerAttr):
        raise LayoutError(f"{label}: {OFFSET} must be an integer, got {off}")
    offset = 0 if off is None else int(off.value.data)
    t = fn.body.block.args[i].type
    if not isinstance(t, TensorType):
        raise LayoutError(f"{label}: a layout needs a tensor argument, not {t}")
    shape = _ints(attrs[VIEW], f"{label}: {VIEW}") if VIEW in attrs else tuple(t.get_shape())
    if len(strides) != len(shape):
        raise LayoutError(f"{label}: {STRIDES} {list(strides)} has {len(strides)} entries for the "
                          f"{len(shape)}-D view of shape {list(shape)}")
    if any(s < 0 for s in strides) or offset < 0:
        raise LayoutError(f"{label}: {STRIDES} {list(strides)} and {OFFSET} {offset} must not be negative")
    layout = InputLayout(shape, strides, offset)
    if VIEW in attrs and tuple(t.get_shape()) != (layout.span,):
        raise LayoutError(f"{label}: its storage {t} should be tensor<{layout.span}x{t.element_type}> for the view "
                          f"{layout}")
    return layout


def check_stride_order(stride_order: Sequence[int], rank: int, what: str) -> None:
    """A stride order must rank each of the `rank` dims once (0 = innermost); `what` names it."""
    if sorted(stride_order) != list(range(rank)):
        raise LayoutError(f"{what} {list(stride_order)} is not a permutation of its {rank} dims "
                          f"(entry d ranks dim d's stride, 0 the innermost: row-major is "
                          f"{list(range(rank - 1, -1, -1))})")


def dim_order(stride_order: Sequence[int]) -> tuple[int, ...]:
    """The dims from outermost to innermost of a (checked) stride order: [0, 1] -> (1, 0)."""
    return tuple(sorted(range(len(stride_order)), key=lambda d: -stride_order[d]))


def output_order(fn: FuncOp, j: int) -> tuple[int, ...] | None:
    """Result j's dim order (outermost first) from its `fusion.stride_order`, which is checked
    to rank its dims (None: row-major)."""
    attrs = res_attrs(fn, j)
    if STRIDE_ORDER not in attrs:
        return None
    what = f"@{fn.sym_name.data} result {j}"
    stride_order = _ints(attrs[STRIDE_ORDER], f"{what}: {STRIDE_ORDER}")
    check_stride_order(stride_order, len(output_view(fn, j)), f"{what}: {STRIDE_ORDER}")
    return dim_order(stride_order)


def output_view(fn: FuncOp, j: int) -> tuple[int, ...]:
    """Result j's logical shape: its `fusion.view` after `fusion-layouts`, else its type's."""
    attrs = res_attrs(fn, j)
    if VIEW in attrs:
        return _ints(attrs[VIEW], f"@{fn.sym_name.data} result {j}: {VIEW}")
    return tuple(fn.function_type.outputs.data[j].get_shape())


def inverse(order: Sequence[int]) -> list[int]:
    return [list(order).index(d) for d in range(len(order))]


def order_strides(shape: Sequence[int], stride_order: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a dense tensor of `shape` stored in `stride_order` (0 = innermost)."""
    strides = [0] * len(shape)
    acc = 1
    for d in reversed(dim_order(stride_order)):
        strides[d] = acc
        acc *= max(int(shape[d]), 1)
    return tuple(strides)


def overlapping(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Two elements of the view share an address: a stride-0 dim of extent > 1, or strides
    that interleave (dims sorted by stride, each must step past the whole of the ones inside it)."""
    dims = sorted((int(s), int(n)) for s, n in zip(strides, shape) if int(n) > 1)
    reach = 1
    for s, n in dims:
        if s < reach:
            return True
        reach = s * n
    return False


def output_alias(fn: FuncOp, j: int) -> int | None:
    """The argument result j is written into (`fusion.alias`), or None (unchecked: see check_aliases)."""
    a = res_attrs(fn, j).get(ALIAS)
    return int(a.value.data) if isinstance(a, IntegerAttr) else None


def output_aliases(fn: FuncOp) -> dict[int, int]:
    """{result: argument} of every aliased result of `fn`."""
    n = len(fn.function_type.outputs.data)
    return {j: i for j in range(n) if (i := output_alias(fn, j)) is not None}


def check_aliases(fn: FuncOp) -> None:
    """Raise LayoutError naming the function, the result and the argument when a
    `fusion.alias` declaration is not one the compiler can honour."""
    outs = fn.function_type.outputs.data
    ins = fn.function_type.inputs.data
    taken: dict[int, int] = {}
    for j in range(len(outs)):
        attrs = res_attrs(fn, j)
        if ALIAS not in attrs:
            continue
        a = attrs[ALIAS]
        what = f"'func.func' op @{fn.sym_name.data} result #{j}"
        if not isinstance(a, IntegerAttr):
            raise LayoutError(f"{what}: {ALIAS} must be an integer (the argument it is written into), got {a}")
        i = int(a.value.data)
        if not 0 <= i < len(ins):
            raise LayoutError(f"{what}: {ALIAS} = {i} names no argument (the function has {len(ins)})")
        arg = _label(fn, i).split(" ", 1)[1]
        if i in taken:
            raise LayoutError(f"{what} and result #{taken[i]} both alias {arg}: an input can take one in-place "
                              f"output")
        taken[i] = j
        arg_a = arg_attrs(fn, i)
        if STRIDES in arg_a:
            shape = _ints(arg_a[VIEW], f"{arg}: {VIEW}") if VIEW in arg_a else tuple(ins[i].get_shape())
            strides = _ints(arg_a[STRIDES], f"{arg}: {STRIDES}")
            if len(strides) == len(shape) and overlapping(shape, strides):
                raise LayoutError(f"{what} aliases {arg}, a stride-0 or overlapping view ({STRIDES} "
                                  f"{list(strides)} of shape {list(shape)}): several of its elements share one "
                                  f"address, so it cannot be written in place")
            raise LayoutError(f"{what} aliases {arg}, whose layout ({STRIDES} {list(strides)}) differs from the "
                              f"dense row-major result: an aliased input must be dense")
        if STRIDE_ORDER in attrs or VIEW in attrs:
            raise LayoutError(f"{what} aliases {arg} but declares {STRIDE_ORDER}: an in-place output is stored "
                              f"row-major, as its input is; drop the stride order")
        if outs[j] != ins[i]:
            raise LayoutError(f"{what} has type {outs[j]}, but the argument it aliases, {arg}, has type {ins[i]}: "
                              f"an in-place output has its input's shape and element type")
