"""Core ops of the sched dialect: kernels and their launch, parallel indices and loops, buffers,
loads and stores, and block-level synchronisation.

- host side: `sched.workspace` (a temporary global buffer) and `sched.launch` (run a kernel);
- `sched.kernel` with its launch geometry, terminated by `sched.return`;
- parallel indices (`sched.thread_idx x`, `sched.block_idx x`, ...) and `sched.for ... bind(P)`,
  a loop spread over a parallel index, terminated by `sched.yield`;
- `sched.alloc` (shared or register buffers), `sched.load` / `sched.store` (a scalar or a short
  vector along the last dimension);
- `sched.barrier` and `sched.shfl_xor`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
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

from fuser.dialects.sched._base import _i64_array, _parse_list, _print_list
from fuser.dialects.sched.types import value_type as scalar_value_type
from fuser.dialects.sched.types import GLOBAL, REGISTER, SHARED, TensorMapType, memory_space

# ------------------------------------------------------------------- kernels

# A PTX identifier, as the kernel's entry name must be (PTX ISA "Identifiers"; LLVM's NVPTX
# backend aborts the process on anything else).
PTX_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_$]*|[_$][A-Za-z0-9_$]+")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# CUDA's launch limits (CUDA C++ Programming Guide, "Technical Specifications"): grid and block
# extents per axis, and the cluster size a launch may use without the non-portable attribute.
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_CLUSTER = 8


def kernel_symbol(name: str) -> str:
    """`name` (any MLIR symbol name) as a PTX identifier: a plain C identifier is kept, in any
    other name each character outside [A-Za-z0-9_] (and a leading digit) becomes `$<hex code>$`,
    so `k-1` -> `k$2d$1`. Injective: kept names have no `$`, escaped ones decode uniquely."""
    if _PLAIN.fullmatch(name):
        return name
    return "".join(c if (c.isascii() and (c.isalnum() or c == "_")) and not (i == 0 and c.isdigit())
                   else f"${ord(c):x}$" for i, c in enumerate(name))


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
        if not PTX_IDENTIFIER.fullmatch(self.sym_name.data):
            raise VerifyException(f"'sched.kernel' op @\"{self.sym_name.data}\": a kernel name must be a PTX identifier "
                                  f"(letters, digits, '_', '$'; not starting with a digit)")
        for what, vals in (("grid", self.grid.get_values()), ("block", self.block.get_values())):
            if len(vals) != 3 or any(v < 1 for v in vals):
                raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: {what} must be 3 positive extents, got {list(vals)}")
        # CUDA's launch limits: a geometry past them fails at cuLaunchKernel, so refuse it here.
        for what, vals, limits in (("grid", self.grid_dims, MAX_GRID), ("block", self.block_dims, MAX_BLOCK)):
            for ax, v, lim in zip(_DIMS, vals, limits):
                if v > lim:
                    raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: {what}.{ax} of {v} exceeds "
                                          f"{lim}, CUDA's limit for {what}.{ax}")
        if self.threads_per_block > 1024:
            raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: block of {self.threads_per_block} threads exceeds 1024")
        if self.smem.value.data < 0:
            raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: smem must be >= 0")
        if self.cluster is not None:
            cl = list(self.cluster.get_values())
            if len(cl) != 3 or any(c < 1 for c in cl) or any(g % c for g, c in zip(self.grid_dims, cl)):
                raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: cluster {cl} must be 3 positive extents "
                                      f"that divide the grid {list(self.grid_dims)}")
            if len(cl) == 3 and cl[0] * cl[1] * cl[2] > MAX_CLUSTER:
                raise VerifyException(f"'sched.kernel' op @{self.sym_name.data}: cluster {cl} of {cl[0] * cl[1] * cl[2]} "
                                      f"CTAs exceeds {MAX_CLUSTER}, CUDA's portable cluster size")
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

    # Custom syntax: the signature names the body's block arguments, which the declarative
    # format cannot spell.
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

    `zero_init` asks the executor to clear it before every call's first launch that uses it.

    `kept_zero` (`%sem = sched.workspace kept_zero : memref<16xi32>`) asks the executor to clear
    it once, when it allocates it, and never again. In exchange every kernel that uses it must
    leave it all zero when the call's launches end (e.g. per-tile semaphores that the last CTA
    of each tile resets), so the next call finds it zero without a memset. A kernel that breaks
    this contract corrupts the next call, not its own.

    The two are mutually exclusive; without either the buffer's contents are undefined.
    """

    name = "sched.workspace"
    zero_init = opt_prop_def(UnitAttr)
    kept_zero = opt_prop_def(UnitAttr)
    result = result_def(MemRefType)
    assembly_format = "(`zero_init` $zero_init^)? (`kept_zero` $kept_zero^)? attr-dict `:` type($result)"

    def __init__(self, t: MemRefType, zero_init: bool = False, kept_zero: bool = False):
        props: dict[str, Attribute] = {}
        if zero_init:
            props["zero_init"] = UnitAttr()
        if kept_zero:
            props["kept_zero"] = UnitAttr()
        super().__init__(result_types=[t], properties=props)

    def verify_(self) -> None:
        if self.zero_init is not None and self.kept_zero is not None:
            raise VerifyException("'sched.workspace' op 'zero_init' and 'kept_zero' are mutually exclusive: "
                                  "a kept_zero workspace is zeroed once, at allocation")


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

    # Custom syntax: the dimension is a bare identifier (`x`), where the declarative format
    # would print the string property quoted.
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

    # Custom syntax: `bind(P)` followed by the loop as scf.for prints it.
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
    elem = scalar_value_type(t.element_type)  # (a ui8 buffer holds signless i8 values)
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


class _ElementWrite(IRDLOperation):
    """`value` written into `buffer[indices]`: the operands, format and access check that
    sched.store and sched.atomic_add share."""

    value = operand_def()
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    assembly_format = "$value `,` $buffer `[` $indices `]` attr-dict `:` type($value) `,` type($buffer)"

    def __init__(self, value: SSAValue, buffer: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, buffer, list(indices)])

    def verify_(self) -> None:
        _check_access(self, self.buffer, self.indices, self.value.type)


@irdl_op_definition
class StoreOp(_ElementWrite):
    """`sched.store %v, %buf[%i] : vector<4xf32>, memref<1024xf32>`."""

    name = "sched.store"


ATOMIC_ADD_TYPES = ("f32", "f64", "i32", "i64")
"""Element types `sched.atomic_add` takes: those PTX's red.global.add adds one at a time."""


@irdl_op_definition
class AtomicAddOp(_ElementWrite):
    """`sched.atomic_add %v, %buf[%i] : f32, memref<1024xf32>`: buf[i] += v as one atomic
    reduction in global memory (PTX `red.global.add`: no result, relaxed, GPU scope). Adds of
    one element from several threads all land, in an order nothing fixes (float sums may then
    differ by rounding from run to run). f32, f64, i32 and i64 (wrapping) scalars."""

    name = "sched.atomic_add"

    def verify_(self) -> None:
        super().verify_()
        if str(self.value.type) not in ATOMIC_ADD_TYPES:
            raise VerifyException(f"'sched.atomic_add' op value type {self.value.type} is not one of "
                                  f"{', '.join(ATOMIC_ADD_TYPES)}")
        if memory_space(self.buffer.type) != GLOBAL:
            raise VerifyException(f"'sched.atomic_add' op buffer {self.buffer.type} is not in global memory")


MEMORY_ACCESS_OPS = (LoadOp, StoreOp, AtomicAddOp)
"""The element accesses of a buffer, whose types the NVVM conversion no longer checks (its
pointers are opaque): the compile driver verifies them at the sched level."""


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """All threads of the block meet here; shared-memory writes before are visible after."""

    name = "sched.barrier"
    assembly_format = "attr-dict"


@irdl_op_definition
class ReleaseOp(IRDLOperation):
    """`sched.release %a, %b threads 256 : memref<...>, memref<...>`: the scheduler's promise to
    sched-alias-smem that these shared buffers are dead from here on. Every thread that touched
    them reaches this op (`threads` of them, a multiple of 32) after its last access, and the
    asynchronous copies into them have completed, as those threads observed (an mbarrier wait);
    pending wgmma reads of them count until their `wait_group 0`. The pass may then give their
    bytes to buffers used after this op in its block, behind a barrier of those threads. It
    emits nothing itself.
    """

    name = "sched.release"
    buffers = var_operand_def(MemRefType)
    threads = prop_def(IntegerAttr)

    def __init__(self, buffers: Sequence[SSAValue], threads: int):
        super().__init__(operands=[list(buffers)], properties={"threads": IntegerAttr(threads, i64)})

    def verify_(self) -> None:
        n = self.threads.value.data
        if n <= 0 or n % 32 or n > 1024:
            raise VerifyException(f"'sched.release' op thread count {n} must be a positive multiple of 32 up to 1024")
        if not self.buffers:
            raise VerifyException("'sched.release' op needs at least one buffer")
        for i, b in enumerate(self.buffers):
            if memory_space(b.type) != SHARED:
                raise VerifyException(f"'sched.release' op operand #{i} must be a shared buffer (memory space 3), "
                                      f"got {b.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.buffers, printer.print_operand)
        printer.print_string(f" threads {self.threads.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list((b.type for b in self.buffers), printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> ReleaseOp:
        names = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        parser.parse_keyword("threads")
        threads = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != len(names):
            parser.raise_error(f"'sched.release' has {len(names)} buffers but {len(types)} types")
        op = cls([parser.resolve_operand(n, t) for n, t in zip(names, types)], threads)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class ShflXorOp(IRDLOperation):
    """Butterfly exchange within a warp: each lane gets `value` from lane (lane ^ offset).

    `%r = sched.shfl_xor %v, 16 : f32` (all 32 lanes take part; an i64 or f64 moves as two 32-bit halves).
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
        if not (isinstance(self.value.type, IntegerType) and self.value.type.width.data in (32, 64)) \
                and str(self.value.type) not in ("f32", "f64"):
            raise VerifyException(f"'sched.shfl_xor' op value must be f32, f64, i32 or i64, got {self.value.type}")

    # Custom syntax: the offset is a bare integer (the property allows any integer type, so the
    # declarative format would print `16 : i64`), and the one type is both the operand's and the
    # result's.
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


