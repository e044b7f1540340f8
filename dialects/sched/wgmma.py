"""Warpgroup-level Hopper ops (sm_90a): wgmma, and the warp-specialisation controls used with it.

- `sched.wgmma.desc` builds a shared-memory matrix descriptor; `sched.wgmma.fence`,
  `sched.wgmma.mma_async` (m64nNk16, bf16/f16 in, f32 accumulators held as `vector<N/2 x f32>`
  per thread), `sched.wgmma.commit_group`, `sched.wgmma.wait_group N` (which threads the
  accumulators it makes safe to read through itself, so nothing reads them before the wait);
- `sched.setmaxnreg inc|dec N` moves registers between warpgroups (producer / consumers);
- `sched.named_barrier sync|arrive ID, COUNT` synchronises a subset of the block's warps (e.g.
  two consumer warpgroups taking turns).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    Float32Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    UnitAttr,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from fuser.dialects.sched._base import (
    _check_smem,
    _GroupCountOp,
    _NoOperandOp,
    _parse_indexed,
    _print_indexed,
)

# -------------------------------------------------------------------- wgmma

# The operand types fuser's wgmmas take, each with its k (the K extent of one instruction: one
# 32-byte row of a 128-byte swizzle row's quarter, 16 two-byte or 32 one-byte elements).
WGMMA_K = {"bf16": 16, "f16": 16, "e4m3": 32, "e5m2": 32}
WGMMA_TYPES = tuple(WGMMA_K)


@irdl_op_definition
class WgmmaDescOp(IRDLOperation):
    """A wgmma shared-memory matrix descriptor (64-bit) for the tile starting at a buffer position.

    `%d = sched.wgmma.desc %smem[%s, %c0, %k] swizzle 128 lbo 16 sbo 1024 : memref<4x128x64xbf16, 3>`
    `lbo`/`sbo` are the leading/stride dimension byte offsets of the PTX descriptor (multiples of
    16); the buffer must be 1024-byte aligned for the 128-byte swizzle (the position need not be).
    """

    name = "sched.wgmma.desc"
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    swizzle = prop_def(IntegerAttr)
    lbo = prop_def(IntegerAttr)
    sbo = prop_def(IntegerAttr)
    result = result_def(IntegerType)
    traits = traits_def(Pure())

    def __init__(self, buffer, indices, swizzle: int, lbo: int, sbo: int):
        super().__init__(operands=[buffer, list(indices)], result_types=[i64],
                         properties={"swizzle": IntegerAttr(swizzle, i64), "lbo": IntegerAttr(lbo, i64),
                                     "sbo": IntegerAttr(sbo, i64)})

    def verify_(self) -> None:
        _check_smem(self, "operand #0 ('buffer')", self.buffer, self.indices)
        if self.swizzle.value.data not in (0, 32, 64, 128):
            raise VerifyException(f"'sched.wgmma.desc' op swizzle must be 0, 32, 64 or 128, got {self.swizzle.value.data}")
        for what in ("lbo", "sbo"):
            v = getattr(self, what).value.data
            if v < 0 or v % 16 or v >= 16 << 14:
                raise VerifyException(f"'sched.wgmma.desc' op {what} {v} must be a multiple of 16 below 2^18")
        if self.result.type != i64:
            raise VerifyException("'sched.wgmma.desc' op result must be i64")

    # Custom syntax: swizzle, lbo and sbo are bare integers (the declarative format would print
    # the properties, of any integer type, as `N : i64`).
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_indexed(printer, self.buffer, self.indices)
        printer.print_string(f" swizzle {self.swizzle.value.data} lbo {self.lbo.value.data} sbo {self.sbo.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)

    @classmethod
    def parse(cls, parser: Parser):
        buf, idx = _parse_indexed(parser)
        vals = {}
        for k in ("swizzle", "lbo", "sbo"):
            parser.parse_keyword(k)
            vals[k] = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(parser.resolve_operand(buf, t), [parser.resolve_operand(i, IndexType()) for i in idx],
                 vals["swizzle"], vals["lbo"], vals["sbo"])
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class WgmmaFenceOp(_NoOperandOp):
    """`wgmma.fence`: order earlier register accesses (of accumulators and A) before wgmma."""

    name = "sched.wgmma.fence"


@irdl_op_definition
class WgmmaCommitGroupOp(_NoOperandOp):
    """Close the warpgroup's current wgmma-group (the mma_async ops issued since the last commit)."""

    name = "sched.wgmma.commit_group"


def _check_acc(op: IRDLOperation, what: str, t: Attribute, n: int | None = None) -> None:
    ok = isinstance(t, VectorType) and t.get_num_dims() == 1 and isinstance(t.element_type, Float32Type)
    if ok and n is not None:
        ok = t.get_shape()[0] == n // 2
    if not ok:
        want = f"vector<{n // 2}xf32>" if n is not None else "a 1-D f32 vector"
        raise VerifyException(f"'{op.name}' op {what} must be {want}, got {t}")


@irdl_op_definition
class WgmmaMmaAsyncOp(IRDLOperation):
    """Issue `D = A * B + D` for one m64nNkK step on the warpgroup's tensor cores (asynchronous).

    `%d1 = sched.wgmma.mma_async m64n128k16 bf16 %da, %db, %d0 trans_b : vector<64xf32>`
    A (64xK) and B (KxN) are read from shared memory through descriptors (`sched.wgmma.desc`);
    `trans_a`/`trans_b` select M-/N-major operands (K-major otherwise). K is 16 for bf16 and
    f16, 32 for the FP8 types e4m3 and e5m2 (`m64n128k32 e4m3`), whose operands the instruction
    reads K-major only. The result must not be read until a `sched.wgmma.wait_group` has passed
    it (see the sched-flush-wgmma pass).
    """

    name = "sched.wgmma.mma_async"
    desc_a = operand_def(IntegerType)
    desc_b = operand_def(IntegerType)
    acc = operand_def(VectorType)
    n = prop_def(IntegerAttr)
    ab_type = prop_def(StringAttr)
    trans_a = opt_prop_def(UnitAttr)
    trans_b = opt_prop_def(UnitAttr)
    result = result_def(VectorType)

    def __init__(self, desc_a, desc_b, acc, n: int, ab_type: str = "bf16", trans_a: bool = False, trans_b: bool = False):
        props: dict[str, Attribute] = {"n": IntegerAttr(n, i64), "ab_type": StringAttr(ab_type)}
        if trans_a:
            props["trans_a"] = UnitAttr()
        if trans_b:
            props["trans_b"] = UnitAttr()
        super().__init__(operands=[desc_a, desc_b, acc], result_types=[SSAValue.get(acc).type], properties=props)

    def verify_(self) -> None:
        n = self.n.value.data
        if not 8 <= n <= 256 or n % 8:
            raise VerifyException(f"'sched.wgmma.mma_async' op N = {n} must be a multiple of 8 in 8..256")
        if self.ab_type.data not in WGMMA_TYPES:
            raise VerifyException(f"'sched.wgmma.mma_async' op operand type {self.ab_type.data} must be one of "
                                  f"{', '.join(WGMMA_TYPES)}")
        if self.k != 16 and (self.trans_a is not None or self.trans_b is not None):
            raise VerifyException(f"'sched.wgmma.mma_async' op {self.ab_type.data} operands are read K-major only: "
                                  "trans_a and trans_b are for bf16 and f16")
        for what, v in (("operand #0 ('desc_a')", self.desc_a), ("operand #1 ('desc_b')", self.desc_b)):
            if v.type != i64:
                raise VerifyException(f"'sched.wgmma.mma_async' op {what} must be an i64 descriptor, got {v.type}")
        _check_acc(self, "operand #2 ('acc')", self.acc.type, n)
        if self.result.type != self.acc.type:
            raise VerifyException("'sched.wgmma.mma_async' op result type must equal the accumulator's")

    @property
    def k(self) -> int:
        """The K extent of the instruction, which the operand type fixes."""
        return WGMMA_K.get(self.ab_type.data, 16)

    # Custom syntax: the shape `m64nNkK` spells the property N inside one identifier (K follows
    # from the operand type, and is checked against it).
    def print(self, printer: Printer) -> None:
        printer.print_string(f" m64n{self.n.value.data}k{self.k} {self.ab_type.data} ")
        printer.print_list([self.desc_a, self.desc_b, self.acc], printer.print_operand)
        if self.trans_a is not None:
            printer.print_string(" trans_a")
        if self.trans_b is not None:
            printer.print_string(" trans_b")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.acc.type)

    @classmethod
    def parse(cls, parser: Parser):
        shape = parser.parse_identifier()
        m = re.fullmatch(r"m64n(\d+)k(\d+)", shape)
        if m is None:
            parser.raise_error(f"'sched.wgmma.mma_async' expects a shape m64nNkK, got '{shape}'")
        ab = parser.parse_identifier()
        if ab in WGMMA_K and int(m.group(2)) != WGMMA_K[ab]:
            parser.raise_error(f"'sched.wgmma.mma_async' shape {shape}: a {ab} wgmma has k = {WGMMA_K[ab]}")
        ops = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        if len(ops) != 3:
            parser.raise_error("'sched.wgmma.mma_async' expects 3 operands (desc_a, desc_b, acc)")
        ta = parser.parse_optional_keyword("trans_a") is not None
        tb = parser.parse_optional_keyword("trans_b") is not None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(parser.resolve_operand(ops[0], i64), parser.resolve_operand(ops[1], i64),
                 parser.resolve_operand(ops[2], t), int(m.group(1)), ab, ta, tb)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class WgmmaWaitGroupOp(_GroupCountOp):
    """Wait until at most `pending` wgmma-groups of the warpgroup are in flight.

    `%r:2 = sched.wgmma.wait_group 0, %d, %e : vector<64xf32>, vector<64xf32>`: the accumulators
    passed through are the ones safe to read afterwards; their uses read the results.
    """

    name = "sched.wgmma.wait_group"
    values = var_operand_def()
    outs = var_result_def()

    def __init__(self, pending: int, values: Sequence[SSAValue] = ()):
        super().__init__(operands=[list(values)], result_types=[[SSAValue.get(v).type for v in values]],
                         properties={"pending": IntegerAttr(pending, i64)})

    def verify_(self) -> None:
        self._check_pending()
        for i, v in enumerate(self.values):
            _check_acc(self, f"operand #{i}", v.type)
        if [r.type for r in self.outs] != [v.type for v in self.values]:
            raise VerifyException("'sched.wgmma.wait_group' op result types must equal the operand types")

    # Custom syntax: a bare integer count, and results whose types are the operands' (unspelled).
    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.pending.value.data}")
        for v in self.values:
            printer.print_string(", ")
            printer.print_operand(v)
        printer.print_op_attributes(self.attributes)
        if self.values:
            printer.print_string(" : ")
            printer.print_list([v.type for v in self.values], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        n = parser.parse_integer()
        ops = []
        while parser.parse_optional_punctuation(",") is not None:
            ops.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        types = []
        if ops:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        op = cls(n, parser.resolve_operands(ops, types, parser.pos) if ops else [])
        op.attributes.update(attrs)
        return op


# --------------------------------------------------------- warp specialisation


@irdl_op_definition
class SetMaxNRegOp(IRDLOperation):
    """`sched.setmaxnreg inc 232` / `dec 40`: warpgroup-wide register reallocation (sm_90a)."""

    name = "sched.setmaxnreg"
    action = prop_def(StringAttr)
    count = prop_def(IntegerAttr)

    def __init__(self, action: str, count: int):
        super().__init__(properties={"action": StringAttr(action), "count": IntegerAttr(count, i64)})

    def verify_(self) -> None:
        if self.action.data not in ("inc", "dec"):
            raise VerifyException(f"'sched.setmaxnreg' op action must be inc or dec, got '{self.action.data}'")
        n = self.count.value.data
        if not 24 <= n <= 256 or n % 8:
            raise VerifyException(f"'sched.setmaxnreg' op register count {n} must be a multiple of 8 in 24..256")

    # Custom syntax: the action is a bare identifier and the count a bare integer.
    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.action.data} {self.count.value.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        action = parser.parse_identifier()
        n = parser.parse_integer()
        op = cls(action, n)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


@irdl_op_definition
class NamedBarrierOp(IRDLOperation):
    """`sched.named_barrier sync 1, 256` / `arrive 1, 256`: hardware barrier `id` (1..15; 0 is
    `sched.barrier`) for `count` threads (a multiple of 32). `sync` waits until `count` threads
    have reached it (with `sync` or `arrive`); `arrive` counts this warp and goes on."""

    name = "sched.named_barrier"
    action = prop_def(StringAttr)
    id = prop_def(IntegerAttr)
    count = prop_def(IntegerAttr)

    def __init__(self, action: str, id: int, count: int):
        super().__init__(properties={"action": StringAttr(action), "id": IntegerAttr(id, i64),
                                     "count": IntegerAttr(count, i64)})

    def verify_(self) -> None:
        if self.action.data not in ("sync", "arrive"):
            raise VerifyException(f"'sched.named_barrier' op action must be sync or arrive, got '{self.action.data}'")
        if not 1 <= self.id.value.data <= 15:
            raise VerifyException(f"'sched.named_barrier' op id {self.id.value.data} must be in 1..15")
        c = self.count.value.data
        if c <= 0 or c % 32 or c > 1024:
            raise VerifyException(f"'sched.named_barrier' op thread count {c} must be a positive multiple of 32 up to 1024")

    # Custom syntax: the action is a bare identifier, id and count bare integers.
    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.action.data} {self.id.value.data}, {self.count.value.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        action = parser.parse_identifier()
        i = parser.parse_integer()
        parser.parse_punctuation(",")
        n = parser.parse_integer()
        op = cls(action, i, n)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


