"""Shape `fusion` ops: broadcast, reshape, permute, the index maps slice, pad, cat, flip and
as_strided, the indexed reads gather and index_select, the indexed writes scatter (and
scatter_add / index_add), and segment_set (a forced kernel
boundary).

A shape op is an index computation: the kernel that reads its result reads its operand at the
mapped index (`lowering/emitters/evaluator.py`), so none of them is a copy of its own."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntAttr, TensorType, i1, i32, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.dialects.builtin import UnitAttr
from xdsl.irdl import (IRDLOperation, irdl_op_definition, operand_def, opt_operand_def, opt_prop_def, prop_def, result_def,
                        traits_def, var_operand_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .types import (
    NUMERIC_TYPES,
    _CONVERT_FORMAT,
    dtype_name as F_name,
    _check_dims_list,
    _check_tensor,
    _ConvertLike,
    _ConvertLikeExtra,
    _dims,
    _elem,
    _i64_array,
    _parse_int_list,
    _print_attrs,
    _print_int_list,
)

class _WithDims(_ConvertLikeExtra):
    """`fusion.X %x dims [..] : T1 to T2`: a one-tensor op whose extra is a list of dims."""

    dims = prop_def(DenseArrayBase)

    def _print_extra(self, printer: Printer) -> None:
        printer.print_string(" dims ")
        _print_int_list(printer, self.dims.get_values())

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        parser.parse_keyword("dims")
        return {"dims": _i64_array(_parse_int_list(parser))}


@irdl_op_definition
class BroadcastOp(_WithDims):
    """Insert new dimensions: `fusion.broadcast %b dims [0] : tensor<4xf32> to tensor<3x4xf32>`.

    `dims` lists the result dimensions that are new; the operand's dimensions map, in order,
    to the remaining result dimensions and must match their extents.
    """

    name = "fusion.broadcast"

    def __init__(self, input: SSAValue, shape: Sequence[int], dims: Sequence[int]):
        super().__init__(operands=[input], result_types=[TensorType(_elem(input), list(shape))],
                         properties={"dims": _i64_array(dims)})

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        r = _check_tensor(self, "result", self.result.type)
        new = list(self.dims.get_values())
        _check_dims_list(self, new, r.get_num_dims())
        if r.element_type != t.element_type:
            raise VerifyException(f"'fusion.broadcast' op result element type {r.element_type} differs from the operand's {t.element_type}")
        kept = [d for i, d in enumerate(_dims(r)) if i not in new]
        if tuple(kept) != _dims(t):
            raise VerifyException(
                f"'fusion.broadcast' op operand #0 ('input') has shape {list(_dims(t))}, but the result {r} with new dims "
                f"{new} keeps dimensions of extents {kept}")


@irdl_op_definition
class ReshapeOp(_ConvertLike):
    """Row-major reshape to a shape with the same number of elements."""

    name = "fusion.reshape"
    assembly_format = _CONVERT_FORMAT

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        r = _check_tensor(self, "result", self.result.type)
        if t.element_count() != r.element_count() or t.element_type != r.element_type:
            raise VerifyException(f"'fusion.reshape' op cannot reshape {t} to {r}: element counts or types differ")


@irdl_op_definition
class PermuteOp(_ConvertLikeExtra):
    """Transpose: result dim i is operand dim perm[i]."""

    name = "fusion.permute"
    perm = prop_def(DenseArrayBase)

    def _print_extra(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_int_list(printer, self.perm.get_values())

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        return {"perm": _i64_array(_parse_int_list(parser))}

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        r = _check_tensor(self, "result", self.result.type)
        perm = list(self.perm.get_values())
        if sorted(perm) != list(range(t.get_num_dims())):
            raise VerifyException(f"'fusion.permute' op permutation {perm} is not a permutation of rank {t.get_num_dims()}")
        if tuple(_dims(t)[p] for p in perm) != _dims(r) or r.element_type != t.element_type:
            raise VerifyException(f"'fusion.permute' op result {r} does not match {t} permuted by {perm}")


def _check_same_element(op, what: str, t: TensorType, r: TensorType) -> None:
    if r.element_type != t.element_type:
        raise VerifyException(f"'{op.name}' op result element type {r.element_type} differs from {what}'s {t.element_type}")


def _check_per_dim(op, name: str, values: Sequence[int], rank: int) -> None:
    if len(values) != rank:
        raise VerifyException(f"'{op.name}' op {name} {list(values)} has {len(values)} entries; the operand has rank {rank}")


@irdl_op_definition
class SliceOp(_ConvertLikeExtra):
    """Every `step`-th element from `start` up to (not including) `stop`, per dim:
    `fusion.slice %x start [0, 2] stop [4, 9] step [1, 3] : tensor<4x10xf32> to tensor<4x3xf32>`.

    Bounds are normalized (0 <= start <= stop <= extent; the Python API takes negative and
    out-of-range bounds as Python slicing does) and steps are positive (`fusion.flip` reverses);
    result extent d is ceil((stop - start) / step), and result element i reads start + i * step.
    """

    name = "fusion.slice"
    start = prop_def(DenseArrayBase)
    stop = prop_def(DenseArrayBase)
    step = prop_def(DenseArrayBase)

    def __init__(self, input: SSAValue, start: Sequence[int], stop: Sequence[int], step: Sequence[int]):
        shape = [-(-(e - s) // k) if k > 0 else 0 for s, e, k in zip(start, stop, step)]
        super().__init__(operands=[input], result_types=[TensorType(_elem(input), shape)],
                         properties={"start": _i64_array(start), "stop": _i64_array(stop), "step": _i64_array(step)})

    def _print_extra(self, printer: Printer) -> None:
        for name in ("start", "stop", "step"):
            printer.print_string(f" {name} ")
            _print_int_list(printer, getattr(self, name).get_values())

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        props = {}
        for name in ("start", "stop", "step"):
            parser.parse_keyword(name)
            props[name] = _i64_array(_parse_int_list(parser))
        return props

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        r = _check_tensor(self, "result", self.result.type)
        _check_same_element(self, "the operand", t, r)
        start, stop, step = (list(getattr(self, n).get_values()) for n in ("start", "stop", "step"))
        for name, values in (("start", start), ("stop", stop), ("step", step)):
            _check_per_dim(self, name, values, t.get_num_dims())
        expected = []
        for d, (s, e, k, n) in enumerate(zip(start, stop, step, _dims(t))):
            if k <= 0:
                raise VerifyException(f"'fusion.slice' op step {k} of dim {d} is not positive; reverse a dim with "
                                      "fusion.flip, then slice it")
            if not 0 <= s <= e <= n:
                raise VerifyException(f"'fusion.slice' op dim {d}: start {s} and stop {e} must satisfy "
                                      f"0 <= start <= stop <= {n} (the operand's extent)")
            expected.append(-(-(e - s) // k))
        if list(_dims(r)) != expected:
            raise VerifyException(f"'fusion.slice' op result {r} should have shape {expected}")


def strided_span(shape: Sequence[int], strides: Sequence[int], offset: int) -> int:
    """Elements of storage a view of `shape` with element `strides` at `offset` reaches: one past
    its last element (0 for an empty view)."""
    if 0 in shape:
        return 0
    return offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1


@irdl_op_definition
class AsStridedOp(_ConvertLikeExtra):
    """A strided view of a 1-D storage tensor, as torch's `as_strided`: result element i reads
    storage element `offset + sum(i[d] * strides[d])`:
    `fusion.as_strided %s strides [1, 4] offset 0 : tensor<32xf32> to tensor<4x8xf32>` (a
    transpose of a 8x4 row-major storage). Strides are in elements and may be 0 (an expanded
    dim: its elements overlap) or leave gaps; every element the view reaches must lie inside the
    storage. `fusion-layouts` makes one for each function argument that declares a layout
    (`fusion.strides`), so kernels read such inputs in place."""

    name = "fusion.as_strided"
    strides = prop_def(DenseArrayBase)
    offset = prop_def(IntAttr)

    def __init__(self, input: SSAValue, shape: Sequence[int], strides: Sequence[int], offset: int = 0):
        super().__init__(operands=[input], result_types=[TensorType(_elem(input), list(shape))],
                         properties={"strides": _i64_array(strides), "offset": IntAttr(offset)})

    def _print_extra(self, printer: Printer) -> None:
        printer.print_string(" strides ")
        _print_int_list(printer, self.strides.get_values())
        printer.print_string(f" offset {self.offset.data}")

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        parser.parse_keyword("strides")
        strides = _i64_array(_parse_int_list(parser))
        parser.parse_keyword("offset")
        return {"strides": strides, "offset": IntAttr(parser.parse_integer())}

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        r = _check_tensor(self, "result", self.result.type)
        _check_same_element(self, "the operand", t, r)
        if t.get_num_dims() != 1:
            raise VerifyException(f"'fusion.as_strided' op operand #0 ('input') {t} must be a 1-D storage tensor")
        strides, offset = list(self.strides.get_values()), self.offset.data
        if len(strides) != r.get_num_dims():
            raise VerifyException(f"'fusion.as_strided' op strides {strides} has {len(strides)} entries; the result "
                                  f"{r} has rank {r.get_num_dims()}")
        if any(s < 0 for s in strides) or offset < 0:
            raise VerifyException(f"'fusion.as_strided' op strides {strides} and offset {offset} must not be negative")
        span, n = strided_span(_dims(r), strides, offset), _dims(t)[0]
        if span > n:
            raise VerifyException(f"'fusion.as_strided' op the view {r} with strides {strides} at offset {offset} "
                                  f"reaches storage element {span - 1}, past operand #0 ('input') {t}")


@irdl_op_definition
class PadOp(IRDLOperation):
    """Widen each dim by `low` elements before and `high` after, filled with the 0-d operand
    `value`; a negative pad removes that many elements instead:
    `fusion.pad %x, %zero low [1, 0] high [0, -2] : tensor<4x5xf32> to tensor<5x3xf32>`
    (`%zero : tensor<f32>`, of the operand's element type)."""

    name = "fusion.pad"
    input = operand_def(TensorType)
    value = operand_def(TensorType)
    result = result_def(TensorType)
    low = prop_def(DenseArrayBase)
    high = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, value: SSAValue, low: Sequence[int], high: Sequence[int]):
        shape = [n + lo + hi for n, lo, hi in zip(_dims(input.type), low, high)]
        super().__init__(operands=[input, value], result_types=[TensorType(_elem(input), shape)],
                         properties={"low": _i64_array(low), "high": _i64_array(high)})

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        r = _check_tensor(self, "result", self.result.type)
        _check_same_element(self, "the operand", t, r)
        if self.value.type != TensorType(t.element_type, []):
            raise VerifyException(f"'fusion.pad' op operand #1 ('value') has type {self.value.type}, "
                                  f"expected {TensorType(t.element_type, [])}")
        low, high = list(self.low.get_values()), list(self.high.get_values())
        _check_per_dim(self, "low", low, t.get_num_dims())
        _check_per_dim(self, "high", high, t.get_num_dims())
        expected = [n + lo + hi for n, lo, hi in zip(_dims(t), low, high)]
        for d, (n, lo, hi) in enumerate(zip(_dims(t), low, high)):
            if -lo > n or -hi > n or n + lo + hi < 0:
                raise VerifyException(f"'fusion.pad' op dim {d}: pads {lo} and {hi} remove more than its {n} elements")
        if list(_dims(r)) != expected:
            raise VerifyException(f"'fusion.pad' op result {r} should have shape {expected}")

    # Custom syntax: `value`'s 0-d type is the operand's element type, so only the two shapes are spelled.
    @classmethod
    def parse(cls, parser: Parser):
        x = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        v = parser.parse_unresolved_operand()
        parser.parse_keyword("low")
        low = _parse_int_list(parser)
        parser.parse_keyword("high")
        high = _parse_int_list(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        xt = parser.parse_type()
        parser.parse_keyword("to")
        t = parser.parse_type()
        vt = TensorType(xt.element_type, []) if isinstance(xt, TensorType) else xt
        op = cls.create(operands=[parser.resolve_operand(x, xt), parser.resolve_operand(v, vt)], result_types=[t],
                        properties={"low": _i64_array(low), "high": _i64_array(high)})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(" low ")
        _print_int_list(printer, self.low.get_values())
        printer.print_string(" high ")
        _print_int_list(printer, self.high.get_values())
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" to ")
        printer.print_attribute(self.result.type)


def _parse_operands_dim(cls, parser: Parser, arity: int | None = None, arities: tuple[int, ...] = (),
                        arity_note: str = "", flags: tuple[str, ...] = ()):
    """`%a, %b, ... dim D [flags] {attrs} : Ta, Tb, ... to T` (cat, gather, index_select,
    scatter); `arity`: the operand count the op takes (None: one or more), or `arities` the counts
    (`arity_note` says when each); `flags`: unit keywords after the dim, made unit properties."""
    start = parser.pos
    names = [parser.parse_unresolved_operand()]
    while parser.parse_optional_punctuation(",") is not None:
        names.append(parser.parse_unresolved_operand())
    allowed = arities or ((arity,) if arity is not None else ())
    if allowed and len(names) not in allowed:
        parser.raise_error(f"'{cls.name}' takes {allowed[0]} operands{arity_note}, got {len(names)}", start, parser.pos)
    parser.parse_keyword("dim")
    props: dict[str, Attribute] = {"dim": IntAttr(parser.parse_integer())}
    for flag in flags:
        if parser.parse_optional_keyword(flag) is not None:
            props[flag] = UnitAttr()
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    types = [parser.parse_type()]
    while parser.parse_optional_punctuation(",") is not None:
        types.append(parser.parse_type())
    parser.parse_keyword("to")
    t = parser.parse_type()
    if len(types) != len(names):
        parser.raise_error(f"'{cls.name}' has {len(names)} operands but {len(types)} operand types")
    op = cls.create(operands=[parser.resolve_operand(n, ty) for n, ty in zip(names, types)], result_types=[t],
                    properties=props)
    op.attributes.update(attrs)
    return op


def _print_operands_dim(op, printer: Printer) -> None:
    printer.print_string(" ")
    printer.print_list(op.operands, printer.print_operand)
    printer.print_string(f" dim {op.dim.data}")
    _print_attrs(printer, op, [])
    printer.print_string(" : ")
    printer.print_list([x.type for x in op.operands], printer.print_attribute)
    printer.print_string(" to ")
    printer.print_attribute(op.result.type)


@irdl_op_definition
class CatOp(IRDLOperation):
    """Concatenation along `dim`: `fusion.cat %a, %b dim 1 : tensor<2x3xf32>, tensor<2x4xf32> to
    tensor<2x7xf32>`; the operands agree on every other extent and on the element type."""

    name = "fusion.cat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntAttr)
    traits = traits_def(Pure())

    def __init__(self, inputs: Sequence[SSAValue], dim: int):
        shape = list(_dims(inputs[0].type))
        shape[dim] = sum(_dims(x.type)[dim] for x in inputs)
        super().__init__(operands=[list(inputs)], result_types=[TensorType(_elem(inputs[0]), shape)],
                         properties={"dim": IntAttr(dim)})

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("'fusion.cat' op needs at least one operand")
        r = _check_tensor(self, "result", self.result.type)
        dim, rank = self.dim.data, r.get_num_dims()
        if not 0 <= dim < rank:
            raise VerifyException(f"'fusion.cat' op dim {dim} is out of range for rank {rank}")
        for i, x in enumerate(self.inputs):
            t = _check_tensor(self, f"operand #{i}", x.type)
            _check_same_element(self, f"operand #{i}", t, r)
            others = [n for d, n in enumerate(_dims(t)) if d != dim]
            if t.get_num_dims() != rank or others != [n for d, n in enumerate(_dims(r)) if d != dim]:
                raise VerifyException(f"'fusion.cat' op operand #{i} has shape {list(_dims(t))}; along dims other than "
                                      f"{dim} it must match the result {r}")
        total = sum(_dims(x.type)[dim] for x in self.inputs)
        if _dims(r)[dim] != total:
            raise VerifyException(f"'fusion.cat' op result extent {_dims(r)[dim]} of dim {dim} is not the operands' sum {total}")

    @classmethod
    def parse(cls, parser: Parser):
        return _parse_operands_dim(cls, parser)

    def print(self, printer: Printer):
        _print_operands_dim(self, printer)


@irdl_op_definition
class FlipOp(_WithDims):
    """Reverse the order of elements along `dims`: `fusion.flip %x dims [1] : tensor<4x5xf32> to
    tensor<4x5xf32>`."""

    name = "fusion.flip"

    def __init__(self, input: SSAValue, dims: Sequence[int]):
        super().__init__(operands=[input], result_types=[input.type], properties={"dims": _i64_array(dims)})

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        _check_dims_list(self, list(self.dims.get_values()), t.get_num_dims())
        if self.result.type != t:
            raise VerifyException(f"'fusion.flip' op result type {self.result.type} must equal the operand's {t}")


INDEX_TYPES = (i32, i64)
"""Element types of the index tensors of fusion.gather and fusion.index_select."""


def _check_index(op, what: str, t: TensorType) -> None:
    if t.element_type not in INDEX_TYPES:
        raise VerifyException(f"'{op.name}' op {what} has element type {t.element_type}, expected i32 or i64")


class _IndexedBase(IRDLOperation):
    """`fusion.X %x, %index dim D : T, I to R`: reads `x` at positions along `dim` that `index`
    holds. An index below 0 counts from the end (as torch); one still outside [0, extent) reads
    the nearest end (clamped: a defined result where torch raises)."""

    input = operand_def(TensorType)
    index = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntAttr)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, index: SSAValue, dim: int):
        super().__init__(operands=[input, index], result_types=[TensorType(_elem(input), self._shape(input, index, dim))],
                         properties={"dim": IntAttr(dim)})

    @staticmethod
    def _shape(input: SSAValue, index: SSAValue, dim: int) -> list[int]:
        raise NotImplementedError

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type)
        i = _check_tensor(self, "operand #1 ('index')", self.index.type)
        r = _check_tensor(self, "result", self.result.type)
        _check_same_element(self, "the input", t, r)
        _check_index(self, "operand #1 ('index')", i)
        if not 0 <= self.dim.data < t.get_num_dims():
            raise VerifyException(f"'{self.name}' op dim {self.dim.data} is out of range for rank {t.get_num_dims()}")
        self._verify_shapes(t, i)
        want = self._shape(self.input, self.index, self.dim.data)
        if list(_dims(r)) != want:
            raise VerifyException(f"'{self.name}' op result {r} should have shape {want}")

    def _verify_shapes(self, t: TensorType, i: TensorType) -> None:
        pass

    @classmethod
    def parse(cls, parser: Parser):
        return _parse_operands_dim(cls, parser, arity=2)

    def print(self, printer: Printer):
        _print_operands_dim(self, printer)


@irdl_op_definition
class GatherOp(_IndexedBase):
    """take_along_axis: `result[..., k, ...] = input[..., index[..., k, ...], ...]` along `dim`;
    `index` has the input's rank and extents but along `dim` (any extent there):
    `fusion.gather %x, %i dim 1 : tensor<4x10xf32>, tensor<4x1xi64> to tensor<4x1xf32>`."""

    name = "fusion.gather"

    @staticmethod
    def _shape(input: SSAValue, index: SSAValue, dim: int) -> list[int]:
        return list(_dims(index.type))

    def _verify_shapes(self, t: TensorType, i: TensorType) -> None:
        d = self.dim.data
        if i.get_num_dims() != t.get_num_dims() or any(a != b for k, (a, b) in enumerate(zip(_dims(t), _dims(i))) if k != d):
            raise VerifyException(f"'fusion.gather' op operand #1 ('index') {i} must match the input {t} in every dim but {d}")


@irdl_op_definition
class IndexSelectOp(_IndexedBase):
    """torch.index_select: `result[..., k, ...] = input[..., index[k], ...]` along `dim`, `index`
    1-D: `fusion.index_select %w, %ids dim 0 : tensor<50257x768xbf16>, tensor<8192xi64> to
    tensor<8192x768xbf16>` (an embedding lookup)."""

    name = "fusion.index_select"

    @staticmethod
    def _shape(input: SSAValue, index: SSAValue, dim: int) -> list[int]:
        shape = list(_dims(input.type))
        shape[dim] = _dims(index.type)[0] if _dims(index.type) else 0
        return shape

    def _verify_shapes(self, t: TensorType, i: TensorType) -> None:
        if i.get_num_dims() != 1:
            raise VerifyException(f"'fusion.index_select' op operand #1 ('index') {i} must be 1-D")


def _verify_scatter(self) -> None:
    """fusion.scatter's (and fusion.scatter_add_atomic's) checks, naming the op and the operand."""
    name = f"'{self.name}' op"
    t = _check_tensor(self, "operand #0 ('input')", self.input.type)
    i = _check_tensor(self, "operand #1 ('index')", self.index.type)
    s = _check_tensor(self, "operand #2 ('src')", self.src.type)
    r = _check_tensor(self, "result", self.result.type)
    _check_index(self, "operand #1 ('index')", i)
    if r != t:
        raise VerifyException(f"{name} result type {r} must equal operand #0 ('input')'s {t}")
    if s.element_type != t.element_type:
        raise VerifyException(f"{name} operand #2 ('src') has element type {s.element_type}, expected "
                              f"{t.element_type} (the input's)")
    if self.is_add and t.element_type == i1:
        raise VerifyException(f"{name} 'add' takes no masks: operand #0 ('input') is {t}")
    if self.is_add:  # (FP8 is storage only: the FP8 message)
        _check_tensor(self, "operand #0 ('input')", t, NUMERIC_TYPES)
    rank, d = t.get_num_dims(), self.dim.data
    if not 0 <= d < rank:
        raise VerifyException(f"{name} dim {d} is out of range for rank {rank}")
    if s.get_num_dims() != rank:
        raise VerifyException(f"{name} operand #2 ('src') {s} must have the input's rank {rank}")
    for k, (a, b) in enumerate(zip(_dims(t), _dims(s))):
        if k != d and b > a:
            raise VerifyException(f"{name} operand #2 ('src') {s} is larger than the input {t} along dim {k}")
    others = [n for k, n in enumerate(_dims(s)) if k != d]
    n = _dims(s)[d]
    if not self.is_sorted:
        if i.get_num_dims() != rank or _dims(i)[d] != n:
            raise VerifyException(f"{name} operand #1 ('index') {i} must have src's rank and its extent {n} "
                                  f"along dim {d}")
        lines = [m for k, m in enumerate(_dims(i)) if k != d]
    else:
        o = _check_tensor(self, "operand #3 ('order')", self.order.type)
        if o.element_type != i64 or _dims(o) != _dims(i):
            raise VerifyException(f"{name} operand #3 ('order') {o} must be i64 of the sorted index's shape "
                                  f"{list(_dims(i))}")
        if i.get_num_dims() != rank + 1:
            raise VerifyException(f"{name} operand #1 ('index') {i} of the sorted form must have rank {rank + 1} "
                                  f"(the index lines, then chunks and their length)")
        kc, c = _dims(i)[-2], _dims(i)[-1]
        if kc * c < n or (n and kc * c - n >= c) or (n == 0 and kc * c):
            raise VerifyException(f"{name} operand #1 ('index') {i}: {kc} chunks of {c} do not cover the "
                                  f"{n} index positions along dim {d} in as few chunks")
        lines = list(_dims(i))[:-2]
    for k, (m, want) in enumerate(zip(lines, others)):
        if m not in (want, 1):
            raise VerifyException(f"{name} operand #1 ('index') {i} has extent {m} along its index line's dim "
                                  f"{k}: expected src's {want} or 1 (shared)")


SCATTER_CHUNK = 16384
"""The most index positions one row of a sorted scatter's sort holds (fusion.sort's row limit for
4- and 8-byte elements); a longer index line is sorted as several chunks, applied in order."""


@irdl_op_definition
class ScatterOp(IRDLOperation):
    """torch.scatter / scatter_add along `dim`, deterministic:
    `fusion.scatter %x, %i, %s dim 0 [add] : tensor<VxDxf32>, tensor<TxDxi64>, tensor<TxDxf32> to tensor<VxDxf32>`.

    The result is `input` with, for every position q of `src` (in order along `dim`, the
    later index positions after the earlier ones), the element at q's coordinates but
    `index[q]` along `dim` replaced by `src[q]` (no `add`: the last in index order wins where
    indices repeat) or increased by it (`add`: the sum of `input` and every `src[q]` that lands
    there, in index order; floats accumulated in f32, f64 in f64, integers in their own type,
    wrapping). `index` (i32 or i64) has src's rank and its extent along `dim`; along every other
    dim its extent is src's or 1 (one index line shared by all positions there: index_add's 1-D
    index). `src` is no larger than `input` in the dims other than `dim`; elements of `input`
    past src's extents are kept. An index below 0 counts from the end; one still outside
    [0, extent) lands on the nearest end (the gathers' defined result; FUSER_CHECK_INDICES=1
    reports such an index input). Masks (i1) take no `add`.

    The sorted form, made by `fusion-sort-scatters`, has a fourth operand: `index` is then each
    index line's positions, normalized into [0, extent), cut into K chunks of C and each chunk
    sorted ascending (chunks padded with the extent, which no position equals), and `order` (i64)
    where each sorted position stood in its chunk: both of shape index's extents but `dim`, then
    [K, C] (the stable sort's values and indices). A kernel then finds the index positions that
    land on an element by binary search in each chunk instead of reading the whole line, and
    reads them in index order; the result is the same.
    """

    name = "fusion.scatter"
    input = operand_def(TensorType)
    index = operand_def(TensorType)
    src = operand_def(TensorType)
    order = opt_operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntAttr)
    add = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, index: SSAValue, src: SSAValue, dim: int, add: bool = False,
                 order: SSAValue | None = None):
        props = {"dim": IntAttr(dim)}
        if add:
            props["add"] = UnitAttr()
        super().__init__(operands=[input, index, src, [order] if order is not None else []],
                         result_types=[input.type], properties=props)

    @property
    def is_add(self) -> bool:
        return self.add is not None

    @property
    def is_sorted(self) -> bool:
        return self.order is not None

    def line_shape(self) -> list[int]:
        """The index lines' extents (index's, or in the sorted form its leading dims), without `dim`."""
        if self.is_sorted:
            return list(_dims(self.index.type))[:-2]
        return [n for d, n in enumerate(_dims(self.index.type)) if d != self.dim.data]

    def verify_(self) -> None:
        _verify_scatter(self)

    @classmethod
    def parse(cls, parser: Parser):
        return _parse_operands_dim(cls, parser, arities=(3, 4), arity_note=" (4 when sorted)", flags=("add",))

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(f" dim {self.dim.data}")
        if self.is_add:
            printer.print_string(" add")
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_list([x.type for x in self.operands], printer.print_attribute)
        printer.print_string(" to ")
        printer.print_attribute(self.result.type)



SCATTER_ATOMIC_TYPES = ("f32", "f64", "i32", "i64")
"""Element types of fusion.scatter_add_atomic: what PTX's red.global.add adds one at a time."""


@irdl_op_definition
class ScatterAddAtomicOp(IRDLOperation):
    """scatter_add by atomic adds, the option where order may vary (deterministic=False in the
    API): `fusion.scatter_add_atomic %x, %i, %s dim 0 : T, I, S to T`, operands as an unsorted
    `fusion.scatter ... add` (an index line may be shared along the other dims; indices
    normalized as there). Its kernels copy `input` to the result, then add every src element
    to its target with `red.global.add`: f32 sums come out in whatever order the adds land, so
    two runs may differ by rounding (integers wrap and are exact). f32, f64, i32 and i64. A
    kernel boundary: its result is written to memory and read back."""

    name = "fusion.scatter_add_atomic"
    input = operand_def(TensorType)
    index = operand_def(TensorType)
    src = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntAttr)

    def __init__(self, input: SSAValue, index: SSAValue, src: SSAValue, dim: int):
        super().__init__(operands=[input, index, src], result_types=[input.type], properties={"dim": IntAttr(dim)})

    @property
    def is_add(self) -> bool:
        return True

    @property
    def is_sorted(self) -> bool:
        return False

    def line_shape(self) -> list[int]:
        return [n for d, n in enumerate(_dims(self.index.type)) if d != self.dim.data]

    def verify_(self) -> None:
        t = _check_tensor(self, "operand #0 ('input')", self.input.type, NUMERIC_TYPES)
        if F_name(t.element_type) not in SCATTER_ATOMIC_TYPES:
            raise VerifyException(f"'fusion.scatter_add_atomic' op operand #0 ('input') is {t}: atomic adds take "
                                  f"{', '.join(SCATTER_ATOMIC_TYPES)} (fusion.scatter ... add takes every type)")
        _verify_scatter(self)

    @classmethod
    def parse(cls, parser: Parser):
        return _parse_operands_dim(cls, parser, arity=3)

    def print(self, printer: Printer):
        _print_operands_dim(self, printer)


@irdl_op_definition
class SegmentSetOp(_ConvertLike):
    """Identity that forces a kernel boundary: its operand is written to memory."""

    name = "fusion.segment_set"
    assembly_format = _CONVERT_FORMAT

    def verify_(self) -> None:
        if self.result.type != self.input.type:
            raise VerifyException(f"'fusion.segment_set' op result type {self.result.type} must equal operand type {self.input.type}")


INDEXED_OPS = (GatherOp, IndexSelectOp, ScatterOp)
"""Shape ops that read (or, scatter, write) their input where an index tensor says along `dim`."""
INDEX_MAP_OPS = (SliceOp, PadOp, CatOp, FlipOp, AsStridedOp) + INDEXED_OPS
"""Shape ops whose result element reads an operand element at another index (or a pad value)."""
SHAPE_OPS = (BroadcastOp, ReshapeOp, PermuteOp) + INDEX_MAP_OPS
