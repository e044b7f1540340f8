"""The `sched` dialect: kernel IR with an explicit schedule.

A module at this level holds one `sched.kernel` per kernel and a host `func.func` that
allocates workspaces (`sched.workspace`) and launches kernels in order (`sched.launch`).

Inside a kernel:
- buffers are memrefs; the memory space is the memref's address space, as in NVPTX:
  none = global (kernel arguments, workspaces), 3 = shared (`sched.alloc`), 5 = registers
  (`sched.alloc`, a per-thread array that must be indexed with constants to stay in registers);
- parallel indices are explicit (`sched.thread_idx x`, `sched.block_idx x`, ...);
- `sched.for ... bind(P)` is a loop whose iterations are spread over the parallel index P
  (`thread.x`: the threads of a block; `block.x`: the blocks of the grid; `grid.x`: every thread
  of the grid, i.e. a grid-stride loop); serial loops are plain `scf.for`;
- `sched.load` / `sched.store` move a scalar or a short vector (contiguous along the last
  dimension) between a buffer and registers; compute is `arith` and `math`;
- `sched.barrier` and `sched.shfl_xor` synchronise and exchange between threads.

Hopper machinery (sm_90a):
- `!sched.tensor_map<memref<MxKxbf16>, box [r, c], swizzle 128>`: a TMA descriptor (CUtensorMap),
  made on the host by `sched.tensor_map %buf` and passed to the kernel by value (a
  `__grid_constant__` parameter);
- `sched.tma.load` / `sched.tma.store`: `cp.async.bulk.tensor` between global memory (through a
  tensor map; out-of-bounds boxes read as zero and are not written) and shared memory; loads
  complete on an mbarrier, stores form bulk async-groups (`sched.bulk.commit_group` /
  `sched.bulk.wait_group`);
- mbarriers live in shared `i64` buffers: `sched.mbarrier.init`, `.arrive`, `.arrive_expect_tx`,
  and `.wait` (spins on `try_wait.parity` with the phase's parity);
- wgmma: `sched.wgmma.desc` builds a shared-memory matrix descriptor; `sched.wgmma.fence`,
  `sched.wgmma.mma_async` (m64nNk16, bf16/f16 in, f32 accumulators held as `vector<N/2 x f32>`
  per thread), `sched.wgmma.commit_group`, `sched.wgmma.wait_group N` (which threads the
  accumulators it makes safe to read through itself, so nothing reads them before the wait);
- `sched.setmaxnreg inc|dec N`, `sched.fence.proxy_async`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    IntAttr,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

GLOBAL, SHARED, REGISTER = 0, 3, 5
_SPACE_NAMES = {GLOBAL: "global", SHARED: "shared", REGISTER: "register"}


def memory_space(t: MemRefType) -> int:
    """NVPTX address space of a memref type (0 when it has none: global memory)."""
    ms = t.memory_space
    if isinstance(ms, NoneAttr):
        return GLOBAL
    if isinstance(ms, IntegerAttr):
        return ms.value.data
    raise ValueError(f"unsupported memory space {ms} in {t}")


def memref(shape: Sequence[int], elem: Attribute, space: int = GLOBAL) -> MemRefType:
    ms = NoneAttr() if space == GLOBAL else IntegerAttr(space, i64)
    return MemRefType(elem, list(shape), memory_space=ms)


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _print_list(printer: Printer, vals: Sequence[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in vals) + "]")


def _parse_list(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


# ------------------------------------------------------------------- kernels


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """Terminates a `sched.kernel` body."""

    name = "sched.return"
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict"


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One GPU kernel with its launch geometry.

    ```
    sched.kernel @k(%x : memref<1024xf32>, %y : memref<1024xf32>) grid [4, 1, 1] block [256, 1, 1] smem 0 {
      ...
      sched.return
    }
    ```
    `smem` is the dynamic shared memory in bytes; `cluster` (optional) the thread-block cluster.
    """

    name = "sched.kernel"
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    grid = prop_def(DenseArrayBase)
    block = prop_def(DenseArrayBase)
    smem = prop_def(IntegerAttr)
    cluster = opt_prop_def(DenseArrayBase)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(self, name: str, arg_types: Sequence[Attribute], grid: Sequence[int], block: Sequence[int],
                 smem: int = 0, body: Region | None = None):
        if body is None:
            body = Region(Block(arg_types=arg_types))
        super().__init__(
            properties={"sym_name": StringAttr(name), "function_type": FunctionType.from_lists(list(arg_types), []),
                        "grid": _i64_array(grid), "block": _i64_array(block), "smem": IntegerAttr(smem, i64)},
            regions=[body])

    @property
    def grid_dims(self) -> tuple[int, int, int]:
        return tuple(self.grid.get_values())  # type: ignore[return-value]

    @property
    def block_dims(self) -> tuple[int, int, int]:
        return tuple(self.block.get_values())  # type: ignore[return-value]

    @property
    def threads_per_block(self) -> int:
        x, y, z = self.block_dims
        return x * y * z

    def verify_(self) -> None:
        for what, vals in (("grid", self.grid.get_values()), ("block", self.block.get_values())):
            if len(vals) != 3 or any(v < 1 for v in vals):
                raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: {what} must be 3 positive extents, got {list(vals)}")
        if self.threads_per_block > 1024:
            raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: block of {self.threads_per_block} threads exceeds 1024")
        if self.smem.value.data < 0:
            raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: smem must be >= 0")
        if self.cluster is not None:
            cl = list(self.cluster.get_values())
            if len(cl) != 3 or any(c < 1 for c in cl) or any(g % c for g, c in zip(self.grid_dims, cl)):
                raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: cluster {cl} must be 3 positive extents "
                                      f"that divide the grid {list(self.grid_dims)}")
        args = self.body.block.args
        if [a.type for a in args] != list(self.function_type.inputs.data):
            raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: block arguments do not match the function type")
        for i, a in enumerate(args):
            if isinstance(a.type, TensorMapType):
                continue
            if not isinstance(a.type, MemRefType) or memory_space(a.type) != GLOBAL:
                raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: argument #{i} must be a global memref, "
                                      f"got {a.type} (or a !sched.tensor_map)")
        if not isinstance(self.body.block.last_op, ReturnOp):
            raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: body must end with sched.return")

    def print(self, printer: Printer):
        printer.print_string(f" @{self.sym_name.data}(")
        printer.print_list(self.body.block.args, lambda a: (printer.print_ssa_value(a), printer.print_string(" : "),
                                                            printer.print_attribute(a.type)))
        printer.print_string(") grid ")
        _print_list(printer, self.grid.get_values())
        printer.print_string(" block ")
        _print_list(printer, self.block.get_values())
        printer.print_string(f" smem {self.smem.value.data}")
        if self.cluster is not None:
            printer.print_string(" cluster ")
            _print_list(printer, self.cluster.get_values())
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser):
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=True))
        parser.parse_keyword("grid")
        grid = _parse_list(parser)
        parser.parse_keyword("block")
        block = _parse_list(parser)
        parser.parse_keyword("smem")
        smem = parser.parse_integer()
        cluster = None
        if parser.parse_optional_keyword("cluster"):
            cluster = _parse_list(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(args)
        op = cls(name, [a.type for a in args], grid, block, smem, body)
        if cluster is not None:
            op.properties["cluster"] = _i64_array(cluster)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op


# ------------------------------------------------------------- host-side ops


@irdl_op_definition
class WorkspaceOp(IRDLOperation):
    """A temporary global buffer owned by the executor: `%ws = sched.workspace zero_init : memref<64xf32>`.

    `zero_init` asks the executor to clear it before the first launch that uses it.
    """

    name = "sched.workspace"
    zero_init = opt_prop_def(UnitAttr)
    result = result_def(MemRefType)
    assembly_format = "(`zero_init` $zero_init^)? attr-dict `:` type($result)"

    def __init__(self, t: MemRefType, zero_init: bool = False):
        super().__init__(result_types=[t], properties={"zero_init": UnitAttr()} if zero_init else {})


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Launch a kernel of this module: `sched.launch @k(%x, %y) : memref<..>, memref<..>`."""

    name = "sched.launch"
    kernel = prop_def(SymbolRefAttr)
    args = var_operand_def()
    assembly_format = "$kernel `(` $args `)` attr-dict `:` type($args)"

    def __init__(self, kernel: str, args: Sequence[SSAValue]):
        super().__init__(operands=[list(args)], properties={"kernel": SymbolRefAttr(kernel)})

    def verify_(self) -> None:
        for i, a in enumerate(self.args):
            if not isinstance(a.type, MemRefType | TensorMapType):
                raise VerifyException(f"'sched.launch' op operand #{i} must be a memref or a !sched.tensor_map, got {a.type}")


# ----------------------------------------------------------- parallel indices

_DIMS = ("x", "y", "z")


class _IndexOp(IRDLOperation):
    dim = prop_def(StringAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, dim: str = "x"):
        super().__init__(result_types=[IndexType()], properties={"dim": StringAttr(dim)})

    def verify_(self) -> None:
        if self.dim.data not in _DIMS:
            raise VerifyException(f"'{self.name}' op dimension must be x, y or z, got '{self.dim.data}'")

    @classmethod
    def parse(cls, parser: Parser):
        d = parser.parse_identifier()
        attrs = parser.parse_optional_attr_dict()
        op = cls(d)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(f" {self.dim.data}")
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class ThreadIdxOp(_IndexOp):
    name = "sched.thread_idx"


@irdl_op_definition
class BlockIdxOp(_IndexOp):
    name = "sched.block_idx"


@irdl_op_definition
class BlockDimOp(_IndexOp):
    name = "sched.block_dim"


@irdl_op_definition
class GridDimOp(_IndexOp):
    name = "sched.grid_dim"


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a `sched.for` body, passing the loop-carried values on."""

    name = "sched.yield"
    arguments = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp), Pure()))
    assembly_format = "attr-dict ($arguments^ `:` type($arguments))?"

    def __init__(self, *args: SSAValue):
        super().__init__(operands=[list(args)])


PARALLEL_BINDINGS = ("thread.x", "thread.y", "block.x", "block.y", "grid.x")


@irdl_op_definition
class ForOp(IRDLOperation):
    """A loop whose iterations are spread over a parallel index.

    `sched.for bind(thread.x) %i = %lb to %ub step %s iter_args(...) -> (...) { ... }`: the thread
    with index t runs iterations lb + t*step, lb + (t+P)*step, ... where P is the extent of the
    binding (block size for thread.x, grid size for block.x, all threads of the grid for grid.x).
    `iter_args` then accumulate per thread. Its terminator is `sched.yield`.
    """

    name = "sched.for"
    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    step = operand_def(IndexType)
    iter_args = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")
    bind = prop_def(StringAttr)
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(self, lb, ub, step, iter_args, body, bind: str = "thread.x"):
        if isinstance(body, Block):
            body = [body]
        super().__init__(operands=[lb, ub, step, iter_args], result_types=[[SSAValue.get(a).type for a in iter_args]],
                         regions=[body], properties={"bind": StringAttr(bind)})

    def verify_(self) -> None:
        block_args = self.body.block.args
        if len(block_args) != 1 + len(self.iter_args) or block_args[0].type != IndexType() or \
                [a.type for a in block_args[1:]] != [a.type for a in self.iter_args]:
            raise VerifyException("'sched.for' op body arguments must be the index and the loop-carried values")
        y = self.body.block.last_op
        if not isinstance(y, YieldOp) or [a.type for a in y.arguments] != [a.type for a in self.iter_args]:
            raise VerifyException("'sched.for' op body must end with sched.yield of the loop-carried value types")
        if self.bind.data not in PARALLEL_BINDINGS:
            raise VerifyException(f"'sched.for' op bind({self.bind.data}) is not one of {', '.join(PARALLEL_BINDINGS)}")

    def print(self, printer: Printer):
        printer.print_string(f" bind({self.bind.data})")
        scf.ForOp.print(self, printer)

    @classmethod
    def parse(cls, parser: Parser):
        parser.parse_keyword("bind")
        parser.parse_punctuation("(")
        bind = parser.parse_identifier()
        parser.parse_punctuation(")")
        op = scf.ForOp.parse.__func__(cls, parser)  # the loop itself reads like scf.for
        op.properties["bind"] = StringAttr(bind)
        return op


# ------------------------------------------------------------ memory and sync


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A kernel-local buffer: `%s = sched.alloc : memref<256xf32, 3>` (shared) or `memref<8xf32, 5>` (registers).

    `offset` (bytes into the kernel's dynamic shared memory) is assigned by sched-alias-smem; a
    shared buffer without one gets its own static allocation.
    """

    name = "sched.alloc"
    offset = opt_prop_def(IntegerAttr)
    result = result_def(MemRefType)
    assembly_format = "(`offset` $offset^)? attr-dict `:` type($result)"

    def __init__(self, t: MemRefType):
        super().__init__(result_types=[t])

    def verify_(self) -> None:
        if memory_space(self.result.type) not in (SHARED, REGISTER):
            raise VerifyException(f"'sched.alloc' op result {self.result.type} must be in shared (3) or register (5) space")


def _check_access(op: IRDLOperation, buf: SSAValue, indices: Sequence[SSAValue], value_type: Attribute) -> None:
    t = buf.type
    assert isinstance(t, MemRefType)
    if len(indices) != t.get_num_dims():
        raise VerifyException(f"'{op.name}' op has {len(indices)} indices for the rank-{t.get_num_dims()} buffer {t}")
    elem = t.element_type
    if isinstance(value_type, VectorType):
        if value_type.element_type != elem or value_type.get_num_dims() != 1:
            raise VerifyException(f"'{op.name}' op vector type {value_type} must be 1-D of the buffer's element type {elem}")
        n = value_type.get_shape()[0]
        last = t.get_shape()[-1] if t.get_num_dims() else 1
        if last % n:
            raise VerifyException(f"'{op.name}' op vector of {n} does not divide the last extent {last} of {t}")
    elif value_type != elem:
        raise VerifyException(f"'{op.name}' op value type {value_type} differs from the buffer's element type {elem}")


@irdl_op_definition
class LoadOp(IRDLOperation):
    """`%v = sched.load %buf[%i, %j] : memref<8x64xf32> -> vector<4xf32>` (or a scalar).

    A vector reads contiguous elements along the last dimension, starting at the index, which
    must be a multiple of the vector length (the access is then naturally aligned).
    """

    name = "sched.load"
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def()
    assembly_format = "$buffer `[` $indices `]` attr-dict `:` type($buffer) `->` type($result)"

    def __init__(self, buffer: SSAValue, indices: Sequence[SSAValue], result_type: Attribute):
        super().__init__(operands=[buffer, list(indices)], result_types=[result_type])

    def verify_(self) -> None:
        _check_access(self, self.buffer, self.indices, self.result.type)


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`sched.store %v, %buf[%i] : vector<4xf32>, memref<1024xf32>`."""

    name = "sched.store"
    value = operand_def()
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    assembly_format = "$value `,` $buffer `[` $indices `]` attr-dict `:` type($value) `,` type($buffer)"

    def __init__(self, value: SSAValue, buffer: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, buffer, list(indices)])

    def verify_(self) -> None:
        _check_access(self, self.buffer, self.indices, self.value.type)


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """All threads of the block meet here; shared-memory writes before are visible after."""

    name = "sched.barrier"
    assembly_format = "attr-dict"


@irdl_op_definition
class ShflXorOp(IRDLOperation):
    """Butterfly exchange within a warp: each lane gets `value` from lane (lane ^ offset).

    `%r = sched.shfl_xor %v, 16 : f32` (all 32 lanes take part).
    """

    name = "sched.shfl_xor"
    value = operand_def()
    offset = prop_def(IntegerAttr)
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, value: SSAValue, offset: int):
        super().__init__(operands=[value], result_types=[value.type], properties={"offset": IntegerAttr(offset, i64)})

    def verify_(self) -> None:
        off = self.offset.value.data
        if off not in (1, 2, 4, 8, 16):
            raise VerifyException(f"'sched.shfl_xor' op offset {off} must be 1, 2, 4, 8 or 16")
        if not (isinstance(self.value.type, IntegerType) and self.value.type.width.data == 32) and str(self.value.type) != "f32":
            raise VerifyException(f"'sched.shfl_xor' op value must be f32 or i32, got {self.value.type}")

    @classmethod
    def parse(cls, parser: Parser):
        v = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        off = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(parser.resolve_operand(v, t), off)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.value)
        printer.print_string(f", {self.offset.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)


# ------------------------------------------------------------------ Hopper: TMA


_TMA_ELEMS = {"bf16": 2, "f16": 2, "f32": 4}


def _elem_name(t: Attribute) -> str | None:
    if isinstance(t, BFloat16Type):
        return "bf16"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, Float32Type):
        return "f32"
    return None


@irdl_attr_definition
class TensorMapType(ParametrizedAttribute, TypeAttribute):
    """A TMA descriptor (CUtensorMap, 128 bytes) for a global buffer, tiled by `box`.

    `!sched.tensor_map<memref<1000x1000xbf16>, box [128, 64], swizzle 128>`: `box` is in the
    buffer's dimension order (outermost first); `swizzle` is 0, 32, 64 or 128 (bytes). With a
    swizzle, the box's innermost extent spans at most that many bytes.
    """

    name = "sched.tensor_map"

    tensor: MemRefType
    box: ArrayAttr[IntAttr]
    swizzle: IntAttr

    def __init__(self, tensor: MemRefType, box: Sequence[int], swizzle: int = 128):
        super().__init__(tensor, ArrayAttr([IntAttr(b) for b in box]), IntAttr(swizzle))

    @property
    def box_dims(self) -> list[int]:
        return [b.data for b in self.box.data]

    @property
    def box_bytes(self) -> int:
        n = _TMA_ELEMS.get(_elem_name(self.tensor.element_type) or "", 0)
        for b in self.box_dims:
            n *= b
        return n

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.tensor)
        printer.print_string(", box ")
        _print_list(printer, self.box_dims)
        printer.print_string(f", swizzle {self.swizzle.data}>")

    @classmethod
    def parse_parameters(cls, parser) -> tuple:
        parser.parse_punctuation("<")
        t = parser.parse_type()
        parser.parse_punctuation(",")
        parser.parse_keyword("box")
        box = _parse_list(parser)
        parser.parse_punctuation(",")
        parser.parse_keyword("swizzle")
        sw = parser.parse_integer()
        parser.parse_punctuation(">")
        return (t, ArrayAttr([IntAttr(b) for b in box]), IntAttr(sw))

    def verify(self) -> None:
        t = self.tensor
        if not isinstance(t, MemRefType) or memory_space(t) != GLOBAL:
            raise VerifyException(f"!sched.tensor_map: tensor must be a global memref, got {t}")
        en = _elem_name(t.element_type)
        if en is None:
            raise VerifyException(f"!sched.tensor_map: element type {t.element_type} is not bf16, f16 or f32")
        box, shape = self.box_dims, list(t.get_shape())
        if len(box) != len(shape) or not 1 <= len(box) <= 5:
            raise VerifyException(f"!sched.tensor_map: box {box} must have one extent per dimension of {t} (1 to 5)")
        if any(not 1 <= b <= 256 for b in box):
            raise VerifyException(f"!sched.tensor_map: box extents must be 1..256, got {box}")
        eb = _TMA_ELEMS[en]
        if (box[-1] * eb) % 16:
            raise VerifyException(f"!sched.tensor_map: the box's inner extent {box[-1]} x {eb} bytes is not a multiple of 16 bytes")
        sw = self.swizzle.data
        if sw not in (0, 32, 64, 128):
            raise VerifyException(f"!sched.tensor_map: swizzle must be 0, 32, 64 or 128, got {sw}")
        if sw and box[-1] * eb > sw:
            raise VerifyException(f"!sched.tensor_map: the box's inner extent spans {box[-1] * eb} bytes, more than the {sw}-byte swizzle")
        if len(shape) > 1 and (shape[-1] * eb) % 16:
            raise VerifyException(f"!sched.tensor_map: rows of {t} are {shape[-1] * eb} bytes apart; TMA needs a multiple of 16 "
                                  f"(the inner extent must be a multiple of {16 // eb} elements)")


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


def _check_smem(op: IRDLOperation, what: str, buf: SSAValue, indices: Sequence[SSAValue]) -> MemRefType:
    t = buf.type
    if not isinstance(t, MemRefType) or memory_space(t) != SHARED:
        raise VerifyException(f"'{op.name}' op {what} must be a shared-memory (space 3) memref, got {t}")
    if len(indices) != t.get_num_dims():
        raise VerifyException(f"'{op.name}' op {what} has {len(indices)} indices for the rank-{t.get_num_dims()} buffer {t}")
    return t


def _check_mbarrier(op: IRDLOperation, buf: SSAValue, index: SSAValue | None = None) -> None:
    t = buf.type
    if not isinstance(t, MemRefType) or memory_space(t) != SHARED or t.element_type != i64 or t.get_num_dims() != 1:
        raise VerifyException(f"'{op.name}' op barrier operand must be a 1-D shared-memory i64 buffer "
                              f"(memref<Nxi64, 3>), got {t}")


class _BarrierAccess(IRDLOperation):
    """Base of the mbarrier ops: `%bars[%i]` names barrier i of a shared i64 buffer.

    The assembly is `%bars[%i][, TAIL] attr-dict : type(%bars)`; a subclass names its TAIL with
    `INT_PROP` (an integer property, checked against `INT_MIN` .. 2^20-1) or `TAIL_OPERAND`
    (one more index operand, spelled after `TAIL_KEYWORD` if one is set), and its constructor
    takes (barriers, index[, tail]).
    """

    barriers = operand_def(MemRefType)
    index = operand_def(IndexType)

    INT_PROP: ClassVar[str | None] = None
    INT_MIN: ClassVar[int] = 0
    TAIL_OPERAND: ClassVar[str | None] = None
    TAIL_KEYWORD: ClassVar[str | None] = None

    def verify_(self) -> None:
        _check_mbarrier(self, self.barriers)
        if self.INT_PROP is not None:
            v = getattr(self, self.INT_PROP).value.data
            if not self.INT_MIN <= v < 2**20:
                raise VerifyException(f"'{self.name}' op {self.INT_PROP} {v} must be in {self.INT_MIN} .. 2^20-1")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.barriers)
        printer.print_string("[")
        printer.print_operand(self.index)
        printer.print_string("]")
        if self.INT_PROP is not None:
            printer.print_string(f", {getattr(self, self.INT_PROP).value.data}")
        elif self.TAIL_OPERAND is not None:
            printer.print_string(", " + (f"{self.TAIL_KEYWORD} " if self.TAIL_KEYWORD else ""))
            printer.print_operand(getattr(self, self.TAIL_OPERAND))
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.barriers.type)

    @classmethod
    def parse(cls, parser: Parser):
        bars = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        idx = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        tail = []
        if cls.INT_PROP is not None:
            parser.parse_punctuation(",")
            tail = [parser.parse_integer()]
        elif cls.TAIL_OPERAND is not None:
            parser.parse_punctuation(",")
            if cls.TAIL_KEYWORD:
                parser.parse_keyword(cls.TAIL_KEYWORD)
            tail = [parser.parse_unresolved_operand()]
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        bt = parser.parse_type()
        if cls.TAIL_OPERAND is not None:
            tail = [parser.resolve_operand(tail[0], IndexType())]
        op = cls(parser.resolve_operand(bars, bt), parser.resolve_operand(idx, IndexType()), *tail)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class MBarrierInitOp(_BarrierAccess):
    """`sched.mbarrier.init %bars[%i], 1 : memref<4xi64, 3>`: expect `count` arrivals per phase."""

    name = "sched.mbarrier.init"
    count = prop_def(IntegerAttr)
    INT_PROP: ClassVar[str | None] = "count"
    INT_MIN: ClassVar[int] = 1

    def __init__(self, barriers: SSAValue, index: SSAValue, count: int):
        super().__init__(operands=[barriers, index], properties={"count": IntegerAttr(count, i64)})


@irdl_op_definition
class MBarrierArriveOp(_BarrierAccess):
    """`sched.mbarrier.arrive %bars[%i] : memref<4xi64, 3>`: one arrival on barrier i."""

    name = "sched.mbarrier.arrive"

    def __init__(self, barriers: SSAValue, index: SSAValue):
        super().__init__(operands=[barriers, index])


@irdl_op_definition
class MBarrierArriveExpectTxOp(_BarrierAccess):
    """`sched.mbarrier.arrive_expect_tx %bars[%i], 32768 : memref<4xi64, 3>`: arrive, and make the
    current phase also wait for `bytes` of asynchronous (TMA) transactions."""

    name = "sched.mbarrier.arrive_expect_tx"
    bytes = prop_def(IntegerAttr)
    INT_PROP: ClassVar[str | None] = "bytes"

    def __init__(self, barriers: SSAValue, index: SSAValue, nbytes: int):
        super().__init__(operands=[barriers, index], properties={"bytes": IntegerAttr(nbytes, i64)})


@irdl_op_definition
class MBarrierWaitOp(_BarrierAccess):
    """`sched.mbarrier.wait %bars[%i], %phase : memref<4xi64, 3>`: spin until the phase with the
    parity of `%phase` (an index; only bit 0 matters) of barrier i has completed."""

    name = "sched.mbarrier.wait"
    barriers = operand_def(MemRefType)
    index = operand_def(IndexType)
    phase = operand_def(IndexType)
    TAIL_OPERAND: ClassVar[str | None] = "phase"

    def __init__(self, barriers: SSAValue, index: SSAValue, phase: SSAValue):
        super().__init__(operands=[barriers, index, phase])


def _parse_indexed(parser: Parser):
    v = parser.parse_unresolved_operand()
    idx = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
    return v, idx


def _print_indexed(printer: Printer, v: SSAValue, idx: Sequence[SSAValue]) -> None:
    printer.print_operand(v)
    printer.print_string("[")
    printer.print_list(idx, printer.print_operand)
    printer.print_string("]")


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """Bulk tensor copy global -> shared of one box, completing on an mbarrier.

    `sched.tma.load %tm[%row, %col], %smem[%s, %c0, %c0], %bars[%s] : !sched.tensor_map<...>, memref<4x128x64xbf16, 3>, memref<4xi64, 3>`
    Coordinates are element indices of the box's first element, in the tensor's dimension order;
    the box lands contiguously (swizzled as the map says) at the shared-memory position.
    """

    name = "sched.tma.load"
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


@irdl_op_definition
class TmaStoreOp(IRDLOperation):
    """Bulk tensor copy shared -> global of one box; out-of-bounds elements are not written.

    `sched.tma.store %smem[%c0, %c0], %tm[%row, %col] : memref<128x64xbf16, 3>, !sched.tensor_map<...>`
    The copy joins the thread's current bulk async-group (`sched.bulk.commit_group`). Shared
    memory written by ordinary stores needs `sched.fence.proxy_async` (and a barrier) first.
    """

    name = "sched.tma.store"
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    tensor_map = operand_def(TensorMapType)
    coords = var_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, src, src_indices, tensor_map, coords):
        super().__init__(operands=[src, list(src_indices), tensor_map, list(coords)])

    def verify_(self) -> None:
        tm = self.tensor_map.type
        if len(self.coords) != len(tm.box_dims):
            raise VerifyException(f"'sched.tma.store' op has {len(self.coords)} coordinates for the rank-{len(tm.box_dims)} tensor map")
        t = _check_smem(self, "source (operand 'src')", self.src, self.src_indices)
        if t.element_type != tm.tensor.element_type:
            raise VerifyException(f"'sched.tma.store' op source element type {t.element_type} differs from the tensor map's "
                                  f"{tm.tensor.element_type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_indexed(printer, self.src, self.src_indices)
        printer.print_string(", ")
        _print_indexed(printer, self.tensor_map, self.coords)
        printer.print_op_attributes(self.attributes, reserved_attr_names=("operandSegmentSizes",))
        printer.print_string(" : ")
        printer.print_list([self.src.type, self.tensor_map.type], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
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
                 parser.resolve_operand(tm, tmt), [parser.resolve_operand(c, ix) for c in coords])
        op.attributes.update(attrs)
        return op


class _NoOperandOp(IRDLOperation):
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


class _GroupCountOp(IRDLOperation):
    """Base of the `wait_group N` ops."""

    pending = prop_def(IntegerAttr)

    def _check_pending(self) -> None:
        n = self.pending.value.data
        if not 0 <= n <= 7:
            raise VerifyException(f"'{self.name}' op pending count {n} must be in 0..7")


@irdl_op_definition
class BulkCommitGroupOp(_NoOperandOp):
    """Close the thread's current bulk async-group (TMA stores issued since the last commit)."""

    name = "sched.bulk.commit_group"


@irdl_op_definition
class BulkWaitGroupOp(_GroupCountOp):
    """`sched.bulk.wait_group 0` (add `read` to wait only until the sources may be overwritten)."""

    name = "sched.bulk.wait_group"
    read = opt_prop_def(UnitAttr)

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


@irdl_op_definition
class FenceProxyAsyncOp(_NoOperandOp):
    """`fence.proxy.async.shared::cta`: order this thread's ordinary shared-memory accesses
    before later async-proxy accesses (TMA stores, wgmma operand reads)."""

    name = "sched.fence.proxy_async"


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


# ---------------------------------------------------------------- Hopper: wgmma

WGMMA_TYPES = ("bf16", "f16")


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
    """Issue `D = A * B + D` for one m64nNk16 step on the warpgroup's tensor cores (asynchronous).

    `%d1 = sched.wgmma.mma_async m64n128k16 bf16 %da, %db, %d0 trans_b : vector<64xf32>`
    A (64x16) and B (16xN) are read from shared memory through descriptors (`sched.wgmma.desc`);
    `trans_a`/`trans_b` select M-/N-major operands (K-major otherwise). The result must not be
    read until a `sched.wgmma.wait_group` has passed it (see the sched-flush-wgmma pass).
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
            raise VerifyException(f"'sched.wgmma.mma_async' op operand type {self.ab_type.data} must be bf16 or f16")
        for what, v in (("operand #0 ('desc_a')", self.desc_a), ("operand #1 ('desc_b')", self.desc_b)):
            if v.type != i64:
                raise VerifyException(f"'sched.wgmma.mma_async' op {what} must be an i64 descriptor, got {v.type}")
        _check_acc(self, "operand #2 ('acc')", self.acc.type, n)
        if self.result.type != self.acc.type:
            raise VerifyException("'sched.wgmma.mma_async' op result type must equal the accumulator's")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" m64n{self.n.value.data}k16 {self.ab_type.data} ")
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
        import re
        m = re.fullmatch(r"m64n(\d+)k16", shape)
        if m is None:
            parser.raise_error(f"'sched.wgmma.mma_async' expects a shape m64nNk16, got '{shape}'")
        ab = parser.parse_identifier()
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


# ---------------------------------------------------------------- Hopper: thread-block clusters


def _cluster_size(op: IRDLOperation) -> int | None:
    """CTAs in the cluster of the enclosing sched.kernel (1 without one), None outside a kernel."""
    p = op.parent_op()
    while p is not None and not isinstance(p, KernelOp):
        p = p.parent_op()
    if p is None:
        return None
    return math.prod(p.cluster.get_values()) if p.cluster is not None else 1


def _need_cluster(op: IRDLOperation) -> int | None:
    n = _cluster_size(op)
    if n is not None and n < 2:
        raise VerifyException(f"'{op.name}' op needs a sched.kernel launched with a cluster of 2 or more CTAs "
                              f"(`cluster [2, 1, 1]`)")
    return n


def _check_multicast(op: IRDLOperation, mask: int) -> None:
    if not 1 <= mask <= 0xFFFF:
        raise VerifyException(f"'{op.name}' op multicast mask {mask} must be in 1 .. 0xFFFF (one bit per CTA rank)")
    n = _need_cluster(op)
    if n is not None and mask >> n:
        raise VerifyException(f"'{op.name}' op multicast mask {mask} names CTA rank {mask.bit_length() - 1}, "
                              f"but the kernel's cluster has {n} CTAs")


@irdl_op_definition
class ClusterBarrierOp(_NoOperandOp):
    """`sched.cluster.barrier`: every thread of every CTA of the cluster arrives (release) and
    waits (acquire), as `barrier.cluster.arrive.release` + `barrier.cluster.wait.acquire`. Use it
    after mbarrier init (peers arrive on or multicast into this CTA's barriers) and before exit
    (no CTA may leave while a peer can still reach its shared memory)."""

    name = "sched.cluster.barrier"

    def verify_(self) -> None:
        _need_cluster(self)


@irdl_op_definition
class FenceMBarrierInitOp(_NoOperandOp):
    """`fence.mbarrier_init.release.cluster`: make this thread's mbarrier inits visible to the
    other CTAs of the cluster (before the cluster barrier that publishes them)."""

    name = "sched.fence.mbarrier_init"


@irdl_op_definition
class MBarrierArriveClusterOp(_BarrierAccess):
    """`sched.mbarrier.arrive_cluster %bars[%i], cta %r : memref<4xi64, 3>`: one arrival on barrier
    i of the CTA of rank %r in the cluster: the same shared-memory offset in that CTA (`mapa`),
    which may be this CTA itself. Default semantics (release, CTA scope), as CUTLASS's cluster
    barrier arrive: an explicit `.release.cluster` made the 2-CTA matmul 33% slower on an H100."""

    name = "sched.mbarrier.arrive_cluster"
    barriers = operand_def(MemRefType)
    index = operand_def(IndexType)
    cta = operand_def(IndexType)
    TAIL_OPERAND: ClassVar[str | None] = "cta"
    TAIL_KEYWORD: ClassVar[str | None] = "cta"

    def __init__(self, barriers: SSAValue, index: SSAValue, cta: SSAValue):
        super().__init__(operands=[barriers, index, cta])

    def verify_(self) -> None:
        super().verify_()
        n = _need_cluster(self)
        c = self.cta.owner.value.value.data if isinstance(self.cta.owner, arith.ConstantOp) else None
        if n is not None and c is not None and not 0 <= c < n:
            raise VerifyException(f"'{self.name}' op CTA rank {c} is outside the kernel's cluster of {n} CTAs")


CLUSTER_OPS = [ClusterBarrierOp, FenceMBarrierInitOp, MBarrierArriveClusterOp]

HOPPER_OPS = [TensorMapOp, MBarrierInitOp, MBarrierArriveOp, MBarrierArriveExpectTxOp, MBarrierWaitOp, TmaLoadOp,
              TmaStoreOp, BulkCommitGroupOp, BulkWaitGroupOp, FenceProxyAsyncOp, SetMaxNRegOp, NamedBarrierOp, WgmmaDescOp,
              WgmmaFenceOp, WgmmaCommitGroupOp, WgmmaMmaAsyncOp, WgmmaWaitGroupOp]


Sched = Dialect(
    "sched",
    [KernelOp, ReturnOp, WorkspaceOp, LaunchOp, ThreadIdxOp, BlockIdxOp, BlockDimOp, GridDimOp, ForOp, YieldOp,
     AllocOp, LoadOp, StoreOp, BarrierOp, ShflXorOp, *HOPPER_OPS, *CLUSTER_OPS],
    [TensorMapType],
)
