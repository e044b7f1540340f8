"""TMA ops (sm_90): bulk tensor copies between global and shared memory.

- `sched.tensor_map %buf` (host side) encodes a `!sched.tensor_map` descriptor for a buffer;
- `sched.tma.load` copies one box global -> shared and completes on an mbarrier (optionally
  multicast to several CTAs of a cluster); `sched.tma.store` copies one box shared -> global;
  `sched.tma.reduce add|min|max` combines one box from shared memory into global memory;
- stores and reductions form bulk async-groups: `sched.bulk.commit_group` closes one,
  `sched.bulk.wait_group N` waits until at most N are pending;
- `sched.fence.proxy_async` orders ordinary shared-memory accesses with async-proxy ones;
  `sched.fence.proxy_async global` does the same for global memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, StringAttr, UnitAttr, i64
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from fuser.dialects.sched._base import (
    _check_mbarrier,
    _check_smem,
    _GroupCountOp,
    _NoOperandOp,
    _parse_indexed,
    _print_indexed,
)
from fuser.dialects.sched.cluster import _check_multicast
from fuser.dialects.sched.types import TensorMapType


@irdl_op_definition
class TensorMapOp(IRDLOperation):
    """Host side: encode a TMA descriptor for a buffer (the runtime calls cuTensorMapEncodeTiled).

    `%tm = sched.tensor_map %a : !sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>`
    """

    name = "sched.tensor_map"
    source = operand_def(MemRefType)
    result = result_def(TensorMapType)

    def __init__(self, source: SSAValue, box: Sequence[int], swizzle: int = 128):
        super().__init__(operands=[source], result_types=[TensorMapType(source.type, box, swizzle)])

    def verify_(self) -> None:
        if self.result.type.tensor != self.source.type:
            raise VerifyException(f"'sched.tensor_map' op operand #0 has type {self.source.type}, but the result "
                                  f"describes {self.result.type.tensor}")

    # Custom syntax: the operand's type is not spelled; it is the memref the result type describes.
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if not isinstance(t, TensorMapType):
            parser.raise_error(f"'sched.tensor_map' expects a !sched.tensor_map result type, got {t}")
        op = cls.create(operands=[parser.resolve_operand(src, t.tensor)], result_types=[t])
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """Bulk tensor copy global -> shared of one box, completing on an mbarrier.

    `sched.tma.load %tm[%row, %col], %smem[%s, %c0, %c0], %bars[%s] : !sched.tensor_map<...>, memref<4x128x64xbf16, 3>, memref<4xi64, 3>`
    Coordinates are element indices of the box's first element, in the tensor's dimension order;
    the box lands contiguously (swizzled as the map says) at the shared-memory position.
    """

    name = "sched.tma.load"
    VERIFY_READS_CONTEXT: ClassVar[bool] = True  # the enclosing kernel (dialects/ir.py)
    tensor_map = operand_def(TensorMapType)
    coords = var_operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    barriers = operand_def(MemRefType)
    index = operand_def(IndexType)
    multicast = opt_prop_def(IntegerAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, tensor_map, coords, dst, dst_indices, barriers, index, multicast: int | None = None):
        super().__init__(operands=[tensor_map, list(coords), dst, list(dst_indices), barriers, index],
                         properties={} if multicast is None else {"multicast": IntegerAttr(multicast, i64)})

    def verify_(self) -> None:
        tm = self.tensor_map.type
        if len(self.coords) != len(tm.box_dims):
            raise VerifyException(f"'sched.tma.load' op has {len(self.coords)} coordinates for the rank-{len(tm.box_dims)} tensor map")
        t = _check_smem(self, "destination (operand 'dst')", self.dst, self.dst_indices)
        if t.element_type != tm.tensor.element_type:
            raise VerifyException(f"'sched.tma.load' op destination element type {t.element_type} differs from the tensor map's "
                                  f"{tm.tensor.element_type}")
        _check_mbarrier(self, self.barriers)
        if self.multicast is not None:
            _check_multicast(self, self.multicast.value.data)

    # Custom syntax: the `multicast` mask is a bare integer (the declarative format would print the
    # property, of any integer type, as `N : i64`).
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_indexed(printer, self.tensor_map, self.coords)
        printer.print_string(", ")
        _print_indexed(printer, self.dst, self.dst_indices)
        printer.print_string(", ")
        _print_indexed(printer, self.barriers, [self.index])
        if self.multicast is not None:
            printer.print_string(f" multicast {self.multicast.value.data}")
        printer.print_op_attributes(self.attributes, reserved_attr_names=("operandSegmentSizes",))
        printer.print_string(" : ")
        printer.print_list([self.tensor_map.type, self.dst.type, self.barriers.type], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        tm, coords = _parse_indexed(parser)
        parser.parse_punctuation(",")
        dst, didx = _parse_indexed(parser)
        parser.parse_punctuation(",")
        bars, bidx = _parse_indexed(parser)
        mask = parser.parse_integer() if parser.parse_optional_keyword("multicast") is not None else None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tmt = parser.parse_type()
        parser.parse_punctuation(",")
        dt = parser.parse_type()
        parser.parse_punctuation(",")
        bt = parser.parse_type()
        ix = IndexType()
        if len(bidx) != 1:
            parser.raise_error("'sched.tma.load' expects one barrier index")
        op = cls(parser.resolve_operand(tm, tmt), [parser.resolve_operand(c, ix) for c in coords],
                 parser.resolve_operand(dst, dt), [parser.resolve_operand(c, ix) for c in didx],
                 parser.resolve_operand(bars, bt), parser.resolve_operand(bidx[0], ix), mask)
        op.attributes.update(attrs)
        return op


class _BoxFromSmemOp(IRDLOperation):
    """A box of shared memory (`src[src_indices]`) to global through a tensor map (`coords`):
    the operands TMA stores and reductions share."""

    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    tensor_map = operand_def(TensorMapType)
    coords = var_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)


@irdl_op_definition
class TmaStoreOp(_BoxFromSmemOp):
    """Bulk tensor copy shared -> global of one box; out-of-bounds elements are not written.

    `sched.tma.store %smem[%c0, %c0], %tm[%row, %col] : memref<128x64xbf16, 3>, !sched.tensor_map<...>`
    The copy joins the thread's current bulk async-group (`sched.bulk.commit_group`). Shared
    memory written by ordinary stores needs `sched.fence.proxy_async` (and a barrier) first.
    """

    name = "sched.tma.store"
    assembly_format = ("$src `[` $src_indices `]` `,` $tensor_map `[` $coords `]` attr-dict "
                       "`:` type($src) `,` type($tensor_map)")

    def __init__(self, src, src_indices, tensor_map, coords):
        super().__init__(operands=[src, list(src_indices), tensor_map, list(coords)])

    def verify_(self) -> None:
        _check_box_from_smem(self)


REDUCE_KINDS = ("add", "min", "max")
"""The combining operations of `sched.tma.reduce` (PTX `cp.reduce.async.bulk.tensor`'s `.redOp`)."""


@irdl_op_definition
class TmaReduceOp(_BoxFromSmemOp):
    """Bulk tensor reduction shared -> global of one box: each element of the box in global
    memory becomes `old <kind> new`, atomically per element; out-of-bounds elements are skipped.

    `sched.tma.reduce add %smem[%c0, %c0], %tm[%row, %col] : memref<128x64xf32, 3>, !sched.tensor_map<...>`
    Like `sched.tma.store` it joins the thread's current bulk async-group and needs
    `sched.fence.proxy_async` after ordinary writes of its source.
    """

    name = "sched.tma.reduce"
    kind = prop_def(StringAttr)

    def __init__(self, src, src_indices, tensor_map, coords, kind: str = "add"):
        super().__init__(operands=[src, list(src_indices), tensor_map, list(coords)],
                         properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        if self.kind.data not in REDUCE_KINDS:
            raise VerifyException(f"'sched.tma.reduce' op kind '{self.kind.data}' must be one of "
                                  f"{', '.join(REDUCE_KINDS)}")
        _check_box_from_smem(self)

    # Custom syntax: the kind is a bare keyword before the operands.
    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        _print_indexed(printer, self.src, self.src_indices)
        printer.print_string(", ")
        _print_indexed(printer, self.tensor_map, self.coords)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list([self.src.type, self.tensor_map.type], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        kind = parser.parse_identifier()
        src, sidx = _parse_indexed(parser)
        parser.parse_punctuation(",")
        tm, coords = _parse_indexed(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        st = parser.parse_type()
        parser.parse_punctuation(",")
        tmt = parser.parse_type()
        ix = IndexType()
        op = cls(parser.resolve_operand(src, st), [parser.resolve_operand(c, ix) for c in sidx],
                 parser.resolve_operand(tm, tmt), [parser.resolve_operand(c, ix) for c in coords], kind)
        op.attributes.update(attrs)
        return op


def _check_box_from_smem(op: TmaStoreOp | TmaReduceOp) -> None:
    """A box copied out of shared memory: one coordinate per tensor-map dimension, a shared
    source indexed in full, holding the map's element type."""
    tm = op.tensor_map.type
    if len(op.coords) != len(tm.box_dims):
        raise VerifyException(f"'{op.name}' op has {len(op.coords)} coordinates for the rank-{len(tm.box_dims)} "
                              "tensor map")
    t = _check_smem(op, "source (operand 'src')", op.src, op.src_indices)
    if t.element_type != tm.tensor.element_type:
        raise VerifyException(f"'{op.name}' op source element type {t.element_type} differs from the tensor map's "
                              f"{tm.tensor.element_type}")


@irdl_op_definition
class BulkCommitGroupOp(_NoOperandOp):
    """Close the thread's current bulk async-group (TMA stores and reductions issued since the last commit)."""

    name = "sched.bulk.commit_group"


@irdl_op_definition
class BulkWaitGroupOp(_GroupCountOp):
    """`sched.bulk.wait_group 0` (add `read` to wait only until the sources may be overwritten)."""

    name = "sched.bulk.wait_group"
    read = opt_prop_def(UnitAttr)

    # Custom syntax: the count is a bare integer (the declarative format would print the property,
    # of any integer type, as `N : i64`).
    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.pending.value.data}" + (" read" if self.read is not None else ""))
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        n = parser.parse_integer()
        read = parser.parse_optional_keyword("read") is not None
        op = cls(n, read)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def __init__(self, pending: int = 0, read: bool = False):
        props = {"pending": IntegerAttr(pending, i64)}
        if read:
            props["read"] = UnitAttr()
        super().__init__(properties=props)

    def verify_(self) -> None:
        self._check_pending()


FENCE_SPACES = ("shared", "global")
"""The state spaces `sched.fence.proxy_async` can order (shared::cta, the default, or global)."""


@irdl_op_definition
class FenceProxyAsyncOp(IRDLOperation):
    """A bidirectional fence between this thread's ordinary (generic-proxy) accesses and its
    async-proxy ones (TMA copies and reductions, wgmma operand reads), in one state space.

    `sched.fence.proxy_async` is `fence.proxy.async.shared::cta` (e.g. smem written by stores,
    then read by a TMA store); `sched.fence.proxy_async global` is `fence.proxy.async.global`
    (e.g. TMA reductions into global memory, then a release that publishes them). The default
    space is spelled by the absence of the `space` property, so the shared form prints as before.
    """

    name = "sched.fence.proxy_async"
    space = opt_prop_def(StringAttr)

    def __init__(self, space: str = "shared"):
        super().__init__(properties={} if space == "shared" else {"space": StringAttr(space)})

    @property
    def fenced_space(self) -> str:
        """"shared" or "global"."""
        return "shared" if self.space is None else self.space.data

    def verify_(self) -> None:
        if self.fenced_space not in FENCE_SPACES:
            raise VerifyException(f"'sched.fence.proxy_async' op space '{self.fenced_space}' must be one of "
                                  f"{', '.join(FENCE_SPACES)}")

    # Custom syntax: an optional bare keyword for the space (none for shared).
    def print(self, printer: Printer) -> None:
        if self.space is not None:
            printer.print_string(f" {self.space.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        # keywords only: a bare identifier here may be the next op's name
        space = "global" if parser.parse_optional_keyword("global") is not None else "shared"
        if space == "shared":
            parser.parse_optional_keyword("shared")
        op = cls(space)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


