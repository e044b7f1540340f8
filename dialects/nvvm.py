"""The subset of upstream MLIR's NVVM dialect that fuser emits.

Op names, property names and custom assembly follow upstream MLIR exactly, so that our printed
nvvm-level IR parses and verifies under upstream `mlir-opt` (checked against the MLIR carried by
jaxlib 0.10.2, whose `register_dialects` registers nvvm; see test/python/test_nvvm_upstream.py):

    %t = nvvm.read.ptx.sreg.tid.x : i32
    nvvm.barrier
    nvvm.barrier id = %id number_of_threads = %n
    %r = nvvm.shfl.sync bfly %mask, %v, %offset, %clamp : f32 -> f32

Notes on upstream facts:
- `nvvm.barrier0` no longer exists upstream (jaxlib's MLIR rejects it); the plain `nvvm.barrier`
  (operands `barrierId`, `numberOfThreads`, both optional, sized by `operandSegmentSizes`) replaces it.
- The shuffle kind is the enum attribute `#nvvm<shfl_kind bfly>` (spaced opaque syntax; the
  form `#nvvm.shfl_kind<bfly>` is rejected upstream), printed bare in the custom form.
- The sreg ops' optional `range` (`#llvm.constant_range<...>`) is not modelled: we never emit it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I32,
    DenseArrayBase,
    Float32Type,
    IntAttr,
    IntegerAttr,
    StringAttr,
    IntegerType,
    UnitAttr,
    i32,
)
from xdsl.dialects.llvm import LLVMPointerType, LLVMStructType
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from fuser.dialects.keyword_syntax import keyword_error, parse_keyword

# --------------------------------------------------------------------------------------------
# Special registers: `%r = nvvm.read.ptx.sreg.<reg> : i32`
# --------------------------------------------------------------------------------------------


class SpecialRegisterOp(IRDLOperation):
    """Base of the `nvvm.read.ptx.sreg.*` ops (one i32 result, no operands)."""

    res = result_def(I32)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "attr-dict `:` type($res)"

    def __init__(self, result_type: Attribute = i32):
        super().__init__(result_types=[result_type])

    @classmethod
    def register(cls) -> str:
        """The PTX special register read, e.g. "tid.x"."""
        return cls.name.removeprefix("nvvm.read.ptx.sreg.")


def _sreg_op(sreg: str) -> type[SpecialRegisterOp]:
    class_name = "ReadPtxSreg" + "".join(p.capitalize() for p in sreg.split(".")) + "Op"
    cls = type(
        class_name,
        (SpecialRegisterOp,),
        {"name": f"nvvm.read.ptx.sreg.{sreg}", "__module__": __name__},
    )
    return irdl_op_definition(cls)


# tid/ntid/ctaid/nctaid x/y/z, then laneid and warpsize.
SPECIAL_REGISTER_OPS: dict[str, type[SpecialRegisterOp]] = {
    sreg: _sreg_op(sreg)
    for sreg in [f"{r}.{d}" for r in ("tid", "ntid", "ctaid", "nctaid") for d in "xyz"]
    + ["laneid", "warpsize"]
}
ThreadIdXOp = SPECIAL_REGISTER_OPS["tid.x"]
ThreadIdYOp = SPECIAL_REGISTER_OPS["tid.y"]
ThreadIdZOp = SPECIAL_REGISTER_OPS["tid.z"]
BlockDimXOp = SPECIAL_REGISTER_OPS["ntid.x"]
BlockDimYOp = SPECIAL_REGISTER_OPS["ntid.y"]
BlockDimZOp = SPECIAL_REGISTER_OPS["ntid.z"]
BlockIdXOp = SPECIAL_REGISTER_OPS["ctaid.x"]
BlockIdYOp = SPECIAL_REGISTER_OPS["ctaid.y"]
BlockIdZOp = SPECIAL_REGISTER_OPS["ctaid.z"]
GridDimXOp = SPECIAL_REGISTER_OPS["nctaid.x"]
GridDimYOp = SPECIAL_REGISTER_OPS["nctaid.y"]
GridDimZOp = SPECIAL_REGISTER_OPS["nctaid.z"]
LaneIdOp = SPECIAL_REGISTER_OPS["laneid"]
WarpSizeOp = SPECIAL_REGISTER_OPS["warpsize"]


# --------------------------------------------------------------------------------------------
# nvvm.barrier  (bar.sync / barrier.sync.aligned)
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """CTA barrier. With no operands it is `__syncthreads()` (barrier 0, all threads)."""

    name = "nvvm.barrier"

    barrierId = opt_operand_def(I32)
    numberOfThreads = opt_operand_def(I32)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "(`id` `=` $barrierId^)? (`number_of_threads` `=` $numberOfThreads^)? attr-dict"
    )

    def __init__(
        self,
        barrier_id: SSAValue | Operation | None = None,
        number_of_threads: SSAValue | Operation | None = None,
    ):
        super().__init__(
            operands=[
                [] if barrier_id is None else [barrier_id],
                [] if number_of_threads is None else [number_of_threads],
            ]
        )

    def verify_(self) -> None:
        if self.numberOfThreads is not None and self.barrierId is None:
            raise VerifyException("barrier id is missing, it should be set between 0 to 15")


@irdl_op_definition
class BarrierArriveOp(IRDLOperation):
    """`nvvm.barrier.arrive id = %id number_of_threads = %n`: arrive at a named barrier and go on
    (PTX `bar.arrive id, n`); the threads that `nvvm.barrier` on it wait for the arrivals."""

    name = "nvvm.barrier.arrive"

    barrierId = opt_operand_def(I32)
    numberOfThreads = operand_def(I32)  # (one optional operand: upstream has no operandSegmentSizes)

    assembly_format = "(`id` `=` $barrierId^)? `number_of_threads` `=` $numberOfThreads attr-dict"

    def __init__(self, barrier_id: SSAValue | Operation | None, number_of_threads: SSAValue | Operation):
        super().__init__(operands=[[] if barrier_id is None else [barrier_id], number_of_threads])


# --------------------------------------------------------------------------------------------
# nvvm.shfl.sync
# --------------------------------------------------------------------------------------------


class ShflKind(StrEnum):
    BFLY = "bfly"
    UP = "up"
    DOWN = "down"
    IDX = "idx"


@irdl_attr_definition
class ShflKindAttr(EnumAttribute[ShflKind], SpacedOpaqueSyntaxAttribute):
    """Prints as `#nvvm<shfl_kind bfly>`, exactly like upstream."""

    name = "nvvm.shfl_kind"


@irdl_op_definition
class ShflOp(IRDLOperation):
    """Warp shuffle: `%r = nvvm.shfl.sync <kind> %thread_mask, %val, %offset, %mask_and_clamp
    [{return_value_and_is_valid}] : T -> (T | !llvm.struct<(T, i1)>)`, T in {i32, f32}."""

    name = "nvvm.shfl.sync"

    thread_mask = operand_def(I32)
    val = operand_def(IntegerType | Float32Type)
    offset = operand_def(I32)
    mask_and_clamp = operand_def(I32)

    kind = prop_def(ShflKindAttr)
    return_value_and_is_valid = opt_prop_def(UnitAttr)

    res = result_def()

    traits = traits_def(NoMemoryEffect())

    def __init__(
        self,
        kind: ShflKind | str,
        thread_mask: SSAValue | Operation,
        val: SSAValue | Operation,
        offset: SSAValue | Operation,
        mask_and_clamp: SSAValue | Operation,
        return_value_and_is_valid: bool = False,
    ):
        val_type = SSAValue.get(val).type
        props: dict[str, Attribute] = {"kind": ShflKindAttr(ShflKind(kind))}
        result_type: Attribute = val_type
        if return_value_and_is_valid:
            props["return_value_and_is_valid"] = UnitAttr()
            result_type = LLVMStructType.from_type_list([val_type, IntegerType(1)])
        super().__init__(
            operands=[thread_mask, val, offset, mask_and_clamp],
            result_types=[result_type],
            properties=props,
        )

    def verify_(self) -> None:
        val_type = self.val.type
        if isinstance(val_type, IntegerType) and val_type.width.data != 32:
            raise VerifyException(f"'nvvm.shfl.sync' value must be i32 or f32, got {val_type}")
        if self.return_value_and_is_valid is None:
            if self.res.type != val_type:
                raise VerifyException("'nvvm.shfl.sync' result type must match the value type")
        else:
            expected = LLVMStructType.from_type_list([val_type, IntegerType(1)])
            if self.res.type != expected:
                raise VerifyException(
                    "'nvvm.shfl.sync' with return_value_and_is_valid must return "
                    f"{expected}, got {self.res.type}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data.value} ")
        printer.print_list(
            [self.thread_mask, self.val, self.offset, self.mask_and_clamp],
            printer.print_ssa_value,
        )
        # Upstream prints the unit property inside the attribute dictionary.
        attrs = dict(self.attributes)
        if self.return_value_and_is_valid is not None:
            attrs = {"return_value_and_is_valid": UnitAttr(), **attrs}
        printer.print_op_attributes(attrs)
        printer.print_string(" : ")
        printer.print_attribute(self.val.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.res.type)

    @classmethod
    def parse(cls, parser: Parser) -> ShflOp:
        kind = parser.parse_str_enum(ShflKind)
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        if len(operands) != 4:
            parser.raise_error("'nvvm.shfl.sync' expects 4 operands")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        val_type = parser.parse_type()
        parser.parse_punctuation("->")
        res_type = parser.parse_type()
        mask, val, offset, clamp = parser.resolve_operands(
            operands, [i32, val_type, i32, i32], parser.pos
        )
        props: dict[str, Attribute] = {"kind": ShflKindAttr(kind)}
        if "return_value_and_is_valid" in attrs:
            props["return_value_and_is_valid"] = attrs.pop("return_value_and_is_valid")
        op = cls.create(
            operands=[mask, val, offset, clamp],
            result_types=[res_type],
            properties=props,
            attributes=attrs,
        )
        return op


# --------------------------------------------------------------------------------------------
# Hopper: wgmma group ops and mbarriers (the ones upstream translates to intrinsics; the rest
# of the Hopper lowering is `llvm.inline_asm`, as upstream's NVVM-to-LLVM lowering does)
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class WgmmaFenceAlignedOp(IRDLOperation):
    """`nvvm.wgmma.fence.aligned` (PTX `wgmma.fence.sync.aligned`)."""

    name = "nvvm.wgmma.fence.aligned"
    assembly_format = "attr-dict"


@irdl_op_definition
class WgmmaGroupSyncAlignedOp(IRDLOperation):
    """`nvvm.wgmma.commit.group.sync.aligned` (PTX `wgmma.commit_group.sync.aligned`)."""

    name = "nvvm.wgmma.commit.group.sync.aligned"
    assembly_format = "attr-dict"


class _GroupCountSyntax:
    """`op N {attrs}`: the syntax of the wait-group ops, whose one operand is the `group` count."""

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.group.value.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        op = cls(parser.parse_integer())
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


@irdl_op_definition
class WgmmaWaitGroupSyncOp(_GroupCountSyntax, IRDLOperation):
    """`nvvm.wgmma.wait.group.sync.aligned 0` (PTX `wgmma.wait_group.sync.aligned N`)."""

    name = "nvvm.wgmma.wait.group.sync.aligned"
    group = prop_def(IntegerAttr)

    def __init__(self, group: int):
        from xdsl.dialects.builtin import i64
        super().__init__(properties={"group": IntegerAttr(group, i64)})



@irdl_op_definition
class MBarrierInitOp(IRDLOperation):
    """`nvvm.mbarrier.init %addr, %count : !llvm.ptr<3>, i32` (upstream's name and syntax; a
    shared-memory address gives PTX `mbarrier.init.shared.b64`)."""

    name = "nvvm.mbarrier.init"
    addr = operand_def(LLVMPointerType)
    count = operand_def(I32)
    assembly_format = "$addr `,` $count attr-dict `:` type(operands)"

    def __init__(self, addr: SSAValue | Operation, count: SSAValue | Operation):
        super().__init__(operands=[addr, count])


@irdl_op_definition
class MBarrierArriveOp(IRDLOperation):
    """`%state = nvvm.mbarrier.arrive %addr : !llvm.ptr<3> -> i64` (upstream's name and syntax);
    on another CTA's mbarrier (a shared::cluster pointer from `nvvm.mapa`) it has no result:
    `nvvm.mbarrier.arrive %remote : !llvm.ptr<7>`."""

    name = "nvvm.mbarrier.arrive"
    addr = operand_def(LLVMPointerType)
    res = opt_result_def(IntegerType)

    def __init__(self, addr: SSAValue | Operation):
        from xdsl.dialects.builtin import i64
        remote = SSAValue.get(addr).type.addr_space.data == 7
        super().__init__(operands=[addr], result_types=[[] if remote else [i64]])

    def verify_(self) -> None:
        space = self.addr.type.addr_space.data
        if space == 7 and self.res is not None:
            raise VerifyException(f"'{self.name}' op on a shared::cluster mbarrier returns no state")
        if space != 7 and self.res is None:
            raise VerifyException(f"'{self.name}' op on a local mbarrier returns its i64 state")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.addr)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.addr.type)
        if self.res is not None:
            printer.print_string(" -> ")
            printer.print_attribute(self.res.type)

    @classmethod
    def parse(cls, parser: Parser) -> "MBarrierArriveOp":
        addr = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        addr_t = parser.parse_type()
        res_types = [parser.parse_type()] if parser.parse_optional_punctuation("->") is not None else []
        op = cls.create(operands=[parser.resolve_operand(addr, addr_t)], result_types=res_types, attributes=attributes)
        return op


@irdl_op_definition
class MBarrierTryWaitParityOp(IRDLOperation):
    """`nvvm.mbarrier.try_wait.parity %addr, %phase, %ticks : !llvm.ptr<3>, i32, i32`: wait until
    the mbarrier's phase of parity `phase` has completed (PTX `mbarrier.try_wait.parity` in a
    loop), each try suspending the thread for up to `ticks` nanoseconds unless it completes."""

    name = "nvvm.mbarrier.try_wait.parity"
    addr = operand_def(LLVMPointerType)
    phase = operand_def(I32)
    ticks = operand_def(I32)
    assembly_format = "$addr `,` $phase `,` $ticks attr-dict `:` type(operands)"

    def __init__(self, addr: SSAValue | Operation, phase: SSAValue | Operation, ticks: SSAValue | Operation):
        super().__init__(operands=[addr, phase, ticks])

    def verify_(self) -> None:
        if self.addr.type.addr_space.data != 3:
            raise VerifyException(f"'{self.name}' op waits on a shared-memory mbarrier (!llvm.ptr<3>), got {self.addr.type}")


@irdl_op_definition
class MapaOp(IRDLOperation):
    """`%r = nvvm.mapa %addr, %cta : !llvm.ptr<3> -> !llvm.ptr<7>` (PTX `mapa.shared::cluster`):
    the shared::cluster address of the same shared-memory location in CTA `cta` of the cluster."""

    name = "nvvm.mapa"
    a = operand_def(LLVMPointerType)
    b = operand_def(I32)
    res = result_def(LLVMPointerType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = "$a `,` $b attr-dict `:` type($a) `->` type($res)"

    def __init__(self, addr: SSAValue | Operation, cta: SSAValue | Operation):
        super().__init__(operands=[addr, cta], result_types=[LLVMPointerType(IntAttr(7))])

    def verify_(self) -> None:
        if self.a.type.addr_space.data != 3 or self.res.type.addr_space.data != 7:
            raise VerifyException(f"'{self.name}' op maps a !llvm.ptr<3> to a !llvm.ptr<7>, got {self.a.type} -> "
                                  f"{self.res.type}")


class _ClusterBarrierSyntax:
    """`op {aligned}`: the cluster barrier halves, `.aligned` when every thread of the warp
    executes them together."""

    def __init__(self, aligned: bool = False):
        super().__init__(attributes={"aligned": UnitAttr()} if aligned else {})

    assembly_format = "attr-dict"


@irdl_op_definition
class ClusterArriveOp(_ClusterBarrierSyntax, IRDLOperation):
    """`nvvm.cluster.arrive` (PTX `barrier.cluster.arrive`, release semantics by default): this
    thread's arrival at the cluster barrier."""

    name = "nvvm.cluster.arrive"


@irdl_op_definition
class ClusterWaitOp(_ClusterBarrierSyntax, IRDLOperation):
    """`nvvm.cluster.wait` (PTX `barrier.cluster.wait`, acquire semantics by default): wait until
    every non-exited thread of the cluster has arrived."""

    name = "nvvm.cluster.wait"


@irdl_op_definition
class FenceMBarrierInitOp(IRDLOperation):
    """`nvvm.fence.mbarrier.init` (PTX `fence.mbarrier_init.release.cluster`): mbarrier inits
    made visible to the other CTAs of the cluster before a release."""

    name = "nvvm.fence.mbarrier.init"
    assembly_format = "attr-dict"


@irdl_op_definition
class MBarrierArriveExpectTxOp(IRDLOperation):
    """`nvvm.mbarrier.arrive.expect_tx %addr, %bytes : !llvm.ptr<3>, i32`: arrive on the
    mbarrier and expect `bytes` more of asynchronous copies before its phase completes."""

    name = "nvvm.mbarrier.arrive.expect_tx"
    addr = operand_def(LLVMPointerType)
    txcount = operand_def(I32)
    assembly_format = "$addr `,` $txcount attr-dict `:` type(operands)"

    def __init__(self, addr: SSAValue | Operation, txcount: SSAValue | Operation):
        super().__init__(operands=[addr, txcount])


@irdl_op_definition
class CpAsyncBulkCommitGroupOp(IRDLOperation):
    """`nvvm.cp.async.bulk.commit.group` (PTX `cp.async.bulk.commit_group`): the bulk copies
    this thread issued since the last commit form one group."""

    name = "nvvm.cp.async.bulk.commit.group"
    assembly_format = "attr-dict"


@irdl_op_definition
class CpAsyncBulkWaitGroupOp(_GroupCountSyntax, IRDLOperation):
    """`nvvm.cp.async.bulk.wait_group 1 {read}` (PTX `cp.async.bulk.wait_group[.read] 1`): wait
    until at most N groups are pending; with `read`, only until their sources have been read."""

    name = "nvvm.cp.async.bulk.wait_group"
    group = prop_def(IntegerAttr)
    read = opt_prop_def(UnitAttr)

    def __init__(self, group: int, read: bool = False):
        from xdsl.dialects.builtin import i32
        props = {"group": IntegerAttr(group, i32)}
        if read:
            props["read"] = UnitAttr()
        super().__init__(properties=props)

    def print(self, printer: Printer) -> None:  # `wait_group 1 {read}`: the property in braces, as upstream
        printer.print_string(f" {self.group.value.data}")
        if self.read is not None:
            printer.print_string(" {read}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        group = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        op = cls(group, read="read" in attrs)
        op.attributes.update({k: v for k, v in attrs.items() if k != "read"})
        return op

    def verify_(self) -> None:
        if self.group.value.data < 0:
            raise VerifyException(f"'{self.name}' op group {self.group.value.data} must be >= 0")



class SetMaxRegisterAction(StrEnum):
    INCREASE = "increase"
    DECREASE = "decrease"


_SETMAXREG_ACTIONS = tuple(a.value for a in SetMaxRegisterAction)


@irdl_attr_definition
class SetMaxRegisterActionAttr(EnumAttribute[SetMaxRegisterAction], SpacedOpaqueSyntaxAttribute):
    """`#nvvm<action increase>` (upstream's spelling in the generic form)."""

    name = "nvvm.action"


@irdl_op_definition
class SetMaxRegisterOp(IRDLOperation):
    """`nvvm.setmaxregister increase 232` (PTX `setmaxnreg.inc.sync.aligned.u32 232`): the
    warpgroup's per-thread register budget, raised or lowered."""

    name = "nvvm.setmaxregister"
    action = prop_def(SetMaxRegisterActionAttr)
    regCount = prop_def(IntegerAttr)  # noqa: N815 (upstream's attribute name)

    def __init__(self, action: str, count: int):
        from xdsl.dialects.builtin import i32
        if action not in _SETMAXREG_ACTIONS:
            raise VerifyException(keyword_error(self.name, "action", _SETMAXREG_ACTIONS, action))
        super().__init__(properties={"action": SetMaxRegisterActionAttr(SetMaxRegisterAction(action)),
                                     "regCount": IntegerAttr(count, i32)})

    def verify_(self) -> None:
        n = self.regCount.value.data
        if not 24 <= n <= 256 or n % 8:
            raise VerifyException(f"'{self.name}' op register count {n} must be a multiple of 8 in 24..256")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.action.data.value} {self.regCount.value.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        op = cls(parse_keyword(parser, cls.name, "action", _SETMAXREG_ACTIONS), parser.parse_integer())
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


class GridDepAction(StrEnum):
    WAIT = "wait"
    LAUNCH_DEPENDENTS = "launch_dependents"


_GRIDDEP_KINDS = tuple(a.value for a in GridDepAction)


@irdl_attr_definition
class GridDepActionAttr(EnumAttribute[GridDepAction], SpacedOpaqueSyntaxAttribute):
    """`#nvvm<grid_dep_action wait>` (upstream's spelling in the generic form)."""

    name = "nvvm.grid_dep_action"


@irdl_op_definition
class GridDepControlOp(IRDLOperation):
    """`nvvm.griddepcontrol wait` / `nvvm.griddepcontrol launch_dependents` (PTX
    `griddepcontrol.wait` / `.launch_dependents`, sm_90): wait for the grids this one depends on
    to complete and flush, or let the dependent grid be dispatched (programmatic dependent
    launch)."""

    name = "nvvm.griddepcontrol"
    kind = prop_def(GridDepActionAttr)

    def __init__(self, kind: str):
        if kind not in _GRIDDEP_KINDS:
            raise VerifyException(keyword_error(self.name, "kind", _GRIDDEP_KINDS, kind))
        super().__init__(properties={"kind": GridDepActionAttr(GridDepAction(kind))})

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data.value}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        op = cls(parse_keyword(parser, cls.name, "kind", _GRIDDEP_KINDS))
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


class _BracketedEnum:
    """Upstream's form of an nvvm enum attribute: the value in angle brackets,
    `#nvvm.proxy_kind<async.shared>` (xDSL's EnumAttribute prints it bare)."""

    @classmethod
    def parse_parameter(cls, parser: AttrParser):
        with parser.in_angle_brackets():
            return parser.parse_str_enum(cls.enum_type)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")


class ProxyKind(StrEnum):
    ASYNC = "async"
    ASYNC_GLOBAL = "async.global"
    ASYNC_SHARED = "async.shared"
    ALIAS = "alias"


@irdl_attr_definition
class ProxyKindAttr(_BracketedEnum, EnumAttribute[ProxyKind]):
    """`#nvvm.proxy_kind<async.shared>`: which proxies a `nvvm.fence.proxy` orders."""

    name = "nvvm.proxy_kind"


class SharedSpace(StrEnum):
    CTA = "cta"
    CLUSTER = "cluster"


@irdl_attr_definition
class SharedSpaceAttr(_BracketedEnum, EnumAttribute[SharedSpace]):
    """`#nvvm.shared_space<cta>`: the shared-memory window of an `async.shared` proxy fence."""

    name = "nvvm.shared_space"


@irdl_op_definition
class FenceProxyOp(IRDLOperation):
    """`nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}`
    (PTX `fence.proxy.async.shared::cta`): orders this thread's generic-proxy accesses with the
    async proxy's (TMA, wgmma operand reads); `async.global` for global memory. The properties
    print in the attribute dictionary, as upstream's."""

    name = "nvvm.fence.proxy"
    kind = prop_def(ProxyKindAttr)
    space = opt_prop_def(SharedSpaceAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, kind: str, space: str | None = None):
        props: dict[str, Attribute] = {"kind": ProxyKindAttr(ProxyKind(kind))}
        if space is not None:
            props["space"] = SharedSpaceAttr(SharedSpace(space))
        super().__init__(properties=props)

    def verify_(self) -> None:
        shared = self.kind.data == ProxyKind.ASYNC_SHARED
        if shared != (self.space is not None):
            raise VerifyException(f"'{self.name}' op takes a shared-memory space exactly when its kind is async.shared")


class TmaReduxKind(StrEnum):
    ADD = "add"
    MIN = "min"
    MAX = "max"
    INC = "inc"
    DEC = "dec"
    AND = "and"
    OR = "or"
    XOR = "xor"


@irdl_attr_definition
class TmaReduxKindAttr(_BracketedEnum, EnumAttribute[TmaReduxKind]):
    """`#nvvm.tma_redux_kind<add>`: how a TMA reduction combines with global memory."""

    name = "nvvm.tma_redux_kind"


class TmaStoreMode(StrEnum):
    TILE = "tile"
    IM2COL = "im2col"


@irdl_attr_definition
class TmaStoreModeAttr(_BracketedEnum, EnumAttribute[TmaStoreMode]):
    """`#nvvm.tma_store_mode<tile>`: how a TMA store or reduction writes its box (fuser: tiles)."""

    name = "nvvm.tma_store_mode"


class _TmaFromShared(IRDLOperation):
    """A box of shared memory to global through a tensor map: `%tmap, %smem, box[%c0, ...]`, the
    coordinates i32 and innermost first (PTX's order), completing in the thread's bulk group.
    Upstream's operand groups (its generic form has the optional L2 cache hint, and for stores a
    predicate) and its `mode` property; fuser emits neither option, and tile mode only."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    # Each op declares its operands itself (IRDL orders a subclass's fields before its base's):
    # tmaDescriptor, srcMem, coordinates, then the optional groups named here, in order.
    _OPTIONAL: ClassVar[tuple[str, ...]] = ()

    def verify_(self) -> None:
        if not 1 <= len(self.coordinates) <= 5:
            raise VerifyException(f"'{self.name}' op takes 1 to 5 coordinates, got {len(self.coordinates)}")
        space = self.srcMem.type.addr_space.data
        if space != 3:
            raise VerifyException(f"'{self.name}' op source must be a shared-memory pointer (!llvm.ptr<3>), "
                                  f"got address space {space}")
        if any(getattr(self, n) is not None for n in self._OPTIONAL) or self.mode.data != TmaStoreMode.TILE:
            raise VerifyException(f"'{self.name}' op: an L2 cache hint, a predicate and im2col mode are not modelled here")

    @classmethod
    def _operand_groups(cls, tensor_map, src, coordinates) -> list:
        return [tensor_map, src, list(coordinates)] + [[] for _ in cls._OPTIONAL]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.tmaDescriptor, self.srcMem], printer.print_ssa_value)
        printer.print_string(", box[")
        printer.print_list(self.coordinates, printer.print_ssa_value)
        printer.print_string("]")
        extra = {k: v for k, v in self.properties.items() if k not in ("mode", "operandSegmentSizes")}
        printer.print_op_attributes({**extra, **self.attributes})
        printer.print_string(" : ")
        printer.print_list([self.tmaDescriptor.type, self.srcMem.type], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        tmap = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        src = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        parser.parse_keyword("box")
        coords = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tmap_t = parser.parse_type()
        parser.parse_punctuation(",")
        src_t = parser.parse_type()
        props = {"mode": TmaStoreModeAttr(TmaStoreMode.TILE),
                 "operandSegmentSizes": DenseArrayBase.from_list(i32, [1, 1, len(coords)] + [0] * len(cls._OPTIONAL))}
        for name in cls._PROPS_IN_ATTRS:
            if name in attributes:
                props[name] = attributes.pop(name)
        return cls.create(operands=[parser.resolve_operand(tmap, tmap_t), parser.resolve_operand(src, src_t),
                                    *[parser.resolve_operand(c, i32) for c in coords]],
                          properties=props, attributes=attributes)

    _PROPS_IN_ATTRS: ClassVar[tuple[str, ...]] = ()  # properties the custom form writes in its attr-dict


@irdl_op_definition
class CpAsyncBulkTensorSharedCtaToGlobalOp(_TmaFromShared):
    """`nvvm.cp.async.bulk.tensor.global.shared.cta %tmap, %smem, box[...]` (PTX
    `cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group`): a TMA store; what falls
    outside the tensor is not written."""

    name = "nvvm.cp.async.bulk.tensor.global.shared.cta"
    tmaDescriptor = operand_def(LLVMPointerType)  # noqa: N815 (upstream's names)
    srcMem = operand_def(LLVMPointerType)  # noqa: N815
    coordinates = var_operand_def(I32)
    l2CacheHint = opt_operand_def(IntegerType)  # noqa: N815
    predicate = opt_operand_def(IntegerType)
    mode = prop_def(TmaStoreModeAttr)
    _OPTIONAL: ClassVar[tuple[str, ...]] = ("l2CacheHint", "predicate")

    def __init__(self, tensor_map: SSAValue, src: SSAValue, coordinates: Sequence[SSAValue]):
        super().__init__(operands=self._operand_groups(tensor_map, src, coordinates),
                         properties={"mode": TmaStoreModeAttr(TmaStoreMode.TILE)})


@irdl_op_definition
class CpAsyncBulkTensorReduceOp(_TmaFromShared):
    """`nvvm.cp.async.bulk.tensor.reduce %tmap, %smem, box[...] {redKind = #nvvm.tma_redux_kind<add>}`
    (PTX `cp.reduce.async.bulk.tensor.Nd.global.shared::cta.add.tile.bulk_group`): a TMA store
    that combines with what global memory holds, element by element, atomically."""

    name = "nvvm.cp.async.bulk.tensor.reduce"
    tmaDescriptor = operand_def(LLVMPointerType)  # noqa: N815 (upstream's names)
    srcMem = operand_def(LLVMPointerType)  # noqa: N815
    coordinates = var_operand_def(I32)
    l2CacheHint = opt_operand_def(IntegerType)  # noqa: N815
    mode = prop_def(TmaStoreModeAttr)
    redKind = prop_def(TmaReduxKindAttr)  # noqa: N815 (upstream's attribute name)
    _OPTIONAL: ClassVar[tuple[str, ...]] = ("l2CacheHint",)
    _PROPS_IN_ATTRS: ClassVar[tuple[str, ...]] = ("redKind",)

    def __init__(self, tensor_map: SSAValue, src: SSAValue, coordinates: Sequence[SSAValue], kind: str):
        super().__init__(operands=self._operand_groups(tensor_map, src, coordinates),
                         properties={"redKind": TmaReduxKindAttr(TmaReduxKind(kind)),
                                     "mode": TmaStoreModeAttr(TmaStoreMode.TILE)})


class TmaLoadMode(StrEnum):
    TILE = "tile"
    IM2COL = "im2col"


@irdl_attr_definition
class TmaLoadModeAttr(_BracketedEnum, EnumAttribute[TmaLoadMode]):
    """`#nvvm.tma_load_mode<tile>`: how a TMA load reads its box (fuser loads tiles)."""

    name = "nvvm.tma_load_mode"


@irdl_op_definition
class CpAsyncBulkTensorGlobalToSharedClusterOp(IRDLOperation):
    """`nvvm.cp.async.bulk.tensor.shared.cluster.global %dst, %tmap, %mbar, box[%c0, ...]
    [multicast_mask = %m] : !llvm.ptr<7>, !llvm.ptr` (PTX `cp.async.bulk.tensor.Nd.shared::cluster
    .global.tile.mbarrier::complete_tx::bytes[.multicast::cluster]`): a TMA load of one box into
    shared memory (a shared::cluster address, address space 7; this CTA's shared memory is cast
    to it), whose bytes complete on the mbarrier; with a multicast mask, into every CTA of the
    mask at the same offset. Upstream's operand groups and properties; im2col offsets, the L2
    cache hint and the predicate are not modelled (fuser never emits them)."""

    name = "nvvm.cp.async.bulk.tensor.shared.cluster.global"
    dstMem = operand_def(LLVMPointerType)  # noqa: N815 (upstream's names)
    tmaDescriptor = operand_def(LLVMPointerType)  # noqa: N815
    coordinates = var_operand_def(I32)
    mbar = operand_def(LLVMPointerType)
    im2colOffsets = var_operand_def(IntegerType)  # noqa: N815
    multicastMask = opt_operand_def(IntegerType)  # noqa: N815
    l2CacheHint = opt_operand_def(IntegerType)  # noqa: N815
    predicate = opt_operand_def(IntegerType)
    isCTAOnly = prop_def(IntegerAttr)  # noqa: N815
    mode = prop_def(TmaLoadModeAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, dst: SSAValue, tensor_map: SSAValue, coordinates: Sequence[SSAValue], mbar: SSAValue,
                 multicast_mask: SSAValue | None = None):
        from xdsl.dialects.builtin import i1
        super().__init__(operands=[dst, tensor_map, list(coordinates), mbar, [],
                                   [] if multicast_mask is None else [multicast_mask], [], []],
                         properties={"isCTAOnly": IntegerAttr(0, i1), "mode": TmaLoadModeAttr(TmaLoadMode.TILE)})

    def verify_(self) -> None:
        def fail(what: str):
            raise VerifyException(f"'{self.name}' op {what}")
        if not 1 <= len(self.coordinates) <= 5:
            fail(f"takes 1 to 5 coordinates, got {len(self.coordinates)}")
        if self.dstMem.type.addr_space.data != 7:
            fail(f"destination must be a shared::cluster pointer (!llvm.ptr<7>), got {self.dstMem.type}")
        if self.mbar.type.addr_space.data != 3:
            fail(f"mbarrier must be a shared-memory pointer (!llvm.ptr<3>), got {self.mbar.type}")
        if self.multicastMask is not None and self.multicastMask.type != IntegerType(16):
            fail(f"multicast mask must be i16, got {self.multicastMask.type}")
        if self.im2colOffsets or self.l2CacheHint is not None or self.predicate is not None:
            fail("im2col offsets, an L2 cache hint and a predicate are not modelled here")
        if self.mode.data != TmaLoadMode.TILE or self.isCTAOnly.value.data:
            fail("only the tile mode, cluster-wide, is modelled here")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.dstMem, self.tmaDescriptor, self.mbar], printer.print_ssa_value)
        printer.print_string(", box[")
        printer.print_list(self.coordinates, printer.print_ssa_value)
        printer.print_string("]")
        if self.multicastMask is not None:
            printer.print_string(" multicast_mask = ")
            printer.print_ssa_value(self.multicastMask)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list([self.dstMem.type, self.tmaDescriptor.type], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> "CpAsyncBulkTensorGlobalToSharedClusterOp":
        dst = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        tmap = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        mbar = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        parser.parse_keyword("box")
        coords = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        mask = None
        if parser.parse_optional_keyword("multicast_mask") is not None:
            parser.parse_punctuation("=")
            mask = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        dst_t = parser.parse_type()
        parser.parse_punctuation(",")
        tmap_t = parser.parse_type()
        from xdsl.dialects.builtin import i16
        op = cls(parser.resolve_operand(dst, dst_t), parser.resolve_operand(tmap, tmap_t),
                 [parser.resolve_operand(c, i32) for c in coords],
                 parser.resolve_operand(mbar, LLVMPointerType(IntAttr(3))),
                 None if mask is None else parser.resolve_operand(mask, i16))
        op.attributes.update(attributes)
        return op


# --------------------------------------------------------------------------------------------
# wgmma.mma_async: `%d = nvvm.wgmma.mma_async %descA, %descB, %c, <m = 64, n = 128, k = 16>,
#   D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<..> -> !llvm.struct<..>`
# --------------------------------------------------------------------------------------------


def _parse_stripped(cls, parser: Parser, parse_body):
    """`#nvvm.name<...>` (any attribute, which must be a `cls`) or the bare `<...>`."""
    pos = parser.pos
    attr = parser.parse_optional_attribute()
    if attr is None:
        return parse_body()
    if not isinstance(attr, cls):
        parser.raise_error(f"expected #{cls.name}<...>, got {attr}", pos, parser.pos)
    return attr


class _StrippedEnum(_BracketedEnum):
    """An enum attribute that upstream's wgmma syntax prints without its `#nvvm.name` prefix
    (`<bf16>`) and parses with or without it."""

    @classmethod
    def parse_stripped(cls, parser: Parser):
        return _parse_stripped(cls, parser, lambda: cls(cls.parse_parameter(parser)))

    def stripped(self) -> str:
        return f"<{self.data.value}>"


class WgmmaType(StrEnum):
    F16 = "f16"
    BF16 = "bf16"
    TF32 = "tf32"
    E4M3 = "e4m3"
    E5M2 = "e5m2"
    S8 = "s8"
    U8 = "u8"
    B1 = "b1"
    F32 = "f32"
    S32 = "s32"


@irdl_attr_definition
class WgmmaTypeAttr(_StrippedEnum, EnumAttribute[WgmmaType]):
    """`#nvvm.wgmma_type<bf16>`: an element type of a wgmma operand or accumulator."""

    name = "nvvm.wgmma_type"


class WgmmaScaleIn(StrEnum):
    ONE = "one"
    NEG = "neg"


@irdl_attr_definition
class WgmmaScaleInAttr(_StrippedEnum, EnumAttribute[WgmmaScaleIn]):
    """`#nvvm.wgmma_scale_in<one>`: an A or B operand as it is (`one`) or negated (`neg`)."""

    name = "nvvm.wgmma_scale_in"


class WgmmaScaleOut(StrEnum):
    ONE = "one"
    ZERO = "zero"


@irdl_attr_definition
class WgmmaScaleOutAttr(_StrippedEnum, EnumAttribute[WgmmaScaleOut]):
    """`#nvvm.wgmma_scale_out<one>`: D = A*B + D (`one`) or D = A*B (`zero`)."""

    name = "nvvm.wgmma_scale_out"


class MMALayout(StrEnum):
    ROW = "row"
    COL = "col"


@irdl_attr_definition
class MMALayoutAttr(_StrippedEnum, EnumAttribute[MMALayout]):
    """`#nvvm.mma_layout<row>`: how a wgmma operand lies in shared memory. A `row` and B `col` are
    K-major (PTX's untransposed forms); A `col` / B `row` are the transposed (MN-major) ones."""

    name = "nvvm.mma_layout"


@irdl_attr_definition
class MMAShapeAttr(ParametrizedAttribute):
    """`#nvvm.shape<m = 64, n = 128, k = 16>`: the shape of one wgmma."""

    name = "nvvm.shape"
    m: IntAttr
    n: IntAttr
    k: IntAttr

    def __init__(self, m: int, n: int, k: int):
        super().__init__(IntAttr(m), IntAttr(n), IntAttr(k))

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        values = []
        with parser.in_angle_brackets():
            for i, key in enumerate("mnk"):
                if i:
                    parser.parse_punctuation(",")
                parser.parse_keyword(key)
                parser.parse_punctuation("=")
                values.append(IntAttr(parser.parse_integer(allow_boolean=False, allow_negative=False)))
        return values

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(self.stripped())

    def stripped(self) -> str:
        return f"<m = {self.m.data}, n = {self.n.data}, k = {self.k.data}>"

    @classmethod
    def parse_stripped(cls, parser: Parser) -> "MMAShapeAttr":
        return _parse_stripped(cls, parser, lambda: cls(*(v.data for v in cls.parse_parameters(parser))))


# K of one wgmma per operand type; the float types that may be transposed or negated
_WGMMA_K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}
_WGMMA_ACC = {"f16": ("f32", "f16"), "bf16": ("f32",), "tf32": ("f32",), "e4m3": ("f32", "f16"),
              "e5m2": ("f32", "f16"), "s8": ("s32",), "u8": ("s32",), "b1": ("s32",)}


@irdl_op_definition
class WgmmaMmaAsyncOp(IRDLOperation):
    """`nvvm.wgmma.mma_async` (PTX `wgmma.mma_async.sync.aligned.m64nNkK`): the warpgroup's
    D = A*B + D (or A*B, with scale-out zero) on A and B in shared memory, through their matrix
    descriptors; the accumulators are an LLVM struct (N/2 registers per thread for f32 and s32).
    Upstream's operand order (generic form: inouts, descriptorA, descriptorB) and properties;
    the optional `satfinite` is not modelled (fuser never emits integer wgmmas)."""

    name = "nvvm.wgmma.mma_async"
    inouts = operand_def(LLVMStructType)
    descriptorA = operand_def(IntegerType)  # noqa: N815 (upstream's names)
    descriptorB = operand_def(IntegerType)  # noqa: N815
    results_ = result_def(LLVMStructType)
    shape = prop_def(MMAShapeAttr)
    typeA = prop_def(WgmmaTypeAttr)  # noqa: N815
    typeB = prop_def(WgmmaTypeAttr)  # noqa: N815
    typeD = prop_def(WgmmaTypeAttr)  # noqa: N815
    scaleD = prop_def(WgmmaScaleOutAttr)  # noqa: N815
    scaleA = prop_def(WgmmaScaleInAttr)  # noqa: N815
    scaleB = prop_def(WgmmaScaleInAttr)  # noqa: N815
    layoutA = prop_def(MMALayoutAttr)  # noqa: N815
    layoutB = prop_def(MMALayoutAttr)  # noqa: N815

    def __init__(self, inouts: SSAValue, desc_a: SSAValue, desc_b: SSAValue, n: int, ab_type: str = "bf16",
                 trans_a: bool = False, trans_b: bool = False, accumulate: bool = True, d_type: str = "f32",
                 m: int = 64, k: int | None = None):
        k = _WGMMA_K.get(ab_type, 16) if k is None else k
        props = {"shape": MMAShapeAttr(m, n, k), "typeA": WgmmaTypeAttr(WgmmaType(ab_type)),
                 "typeB": WgmmaTypeAttr(WgmmaType(ab_type)), "typeD": WgmmaTypeAttr(WgmmaType(d_type)),
                 "scaleD": WgmmaScaleOutAttr(WgmmaScaleOut.ONE if accumulate else WgmmaScaleOut.ZERO),
                 "scaleA": WgmmaScaleInAttr(WgmmaScaleIn.ONE), "scaleB": WgmmaScaleInAttr(WgmmaScaleIn.ONE),
                 "layoutA": MMALayoutAttr(MMALayout.COL if trans_a else MMALayout.ROW),
                 "layoutB": MMALayoutAttr(MMALayout.ROW if trans_b else MMALayout.COL)}
        super().__init__(operands=[inouts, desc_a, desc_b], result_types=[inouts.type], properties=props)

    @property
    def trans_a(self) -> bool:
        """PTX's imm-trans-a: A is MN-major."""
        return self.layoutA.data == MMALayout.COL

    @property
    def trans_b(self) -> bool:
        return self.layoutB.data == MMALayout.ROW

    def verify_(self) -> None:
        def fail(what: str):
            raise VerifyException(f"'{self.name}' op {what}")
        m, n, k = self.shape.m.data, self.shape.n.data, self.shape.k.data
        ta, tb, td = self.typeA.data.value, self.typeB.data.value, self.typeD.data.value
        for operand in (self.descriptorA, self.descriptorB):
            if operand.type != IntegerType(64):
                fail(f"matrix descriptors must be i64, got {operand.type}")
        if ta not in _WGMMA_K or tb not in _WGMMA_K:
            fail(f"operand types {ta} and {tb}: A and B take f16, bf16, tf32, e4m3, e5m2, s8, u8 or b1")
        fp8, ints = {"e4m3", "e5m2"}, {"s8", "u8"}
        if ta != tb and not ({ta, tb} <= fp8 or {ta, tb} <= ints):
            fail(f"A is {ta} but B is {tb}")
        if m != 64:
            fail(f"shape m = {m}: wgmma is m64")
        if k != _WGMMA_K[ta]:
            fail(f"shape k = {k}: a {ta} wgmma has k = {_WGMMA_K[ta]}")
        n_ok = 8 <= n <= 256 and n % 8 == 0 and (ta not in ints and ta != "b1" or n <= 32 or n % 16 == 0)
        if not n_ok:
            fail(f"shape n = {n}: must be a multiple of 8 in 8..256" + (" (of 16 past 32)" if ta in ints | {"b1"} else ""))
        if td not in _WGMMA_ACC[ta]:
            fail(f"a {ta} wgmma accumulates in {' or '.join(_WGMMA_ACC[ta])}, not {td}")
        transposable = ta in ("f16", "bf16")
        if not transposable and (self.trans_a or self.trans_b):
            fail(f"only f16 and bf16 operands may be transposed (A col / B row), not {ta}")
        if (ta in ints or ta == "b1") and WgmmaScaleIn.NEG in (self.scaleA.data, self.scaleB.data):
            fail(f"integer operands cannot be negated")
        if td == "f16":
            fail("an f16 accumulator is not modelled here (fuser emits f32 accumulators)")
        want = [Float32Type() if td == "f32" else IntegerType(32)] * (n // 2)
        for v, role in ((self.inouts, "accumulator operand"), (self.results_, "result")):
            types = list(v.type.types.data)
            if types != want:
                fail(f"{role} must be a struct of {n // 2} {'f32' if td == 'f32' else 'i32'} for n = {n}, "
                     f"got {v.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.descriptorA, self.descriptorB, self.inouts], printer.print_ssa_value)
        printer.print_string(f", {self.shape.stripped()}, D[{self.typeD.stripped()}, {self.scaleD.stripped()}], "
                             f"A[{self.typeA.stripped()}, {self.scaleA.stripped()}, {self.layoutA.stripped()}], "
                             f"B[{self.typeB.stripped()}, {self.scaleB.stripped()}, {self.layoutB.stripped()}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.inouts.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.results_.type)

    @classmethod
    def parse(cls, parser: Parser) -> "WgmmaMmaAsyncOp":
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        c = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        shape = MMAShapeAttr.parse_stripped(parser)
        parts = {}
        for role, attrs in (("D", (WgmmaTypeAttr, WgmmaScaleOutAttr)),
                            ("A", (WgmmaTypeAttr, WgmmaScaleInAttr, MMALayoutAttr)),
                            ("B", (WgmmaTypeAttr, WgmmaScaleInAttr, MMALayoutAttr))):
            parser.parse_punctuation(",")
            parser.parse_keyword(role)
            parser.parse_punctuation("[")
            values = []
            for i, attr in enumerate(attrs):
                if i:
                    parser.parse_punctuation(",")
                values.append(attr.parse_stripped(parser))
            parser.parse_punctuation("]")
            parts[role] = values
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        in_type = parser.parse_type()
        parser.parse_punctuation("->")
        out_type = parser.parse_type()
        c = parser.resolve_operand(c, in_type)
        a = parser.resolve_operand(a, IntegerType(64))
        b = parser.resolve_operand(b, IntegerType(64))
        (td, sd), (ta, sa, la), (tb, sb, lb) = parts["D"], parts["A"], parts["B"]
        op = cls.create(operands=[c, a, b], result_types=[out_type], attributes=attributes,
                        properties={"shape": shape, "typeA": ta, "typeB": tb, "typeD": td, "scaleD": sd,
                                    "scaleA": sa, "scaleB": sb, "layoutA": la, "layoutB": lb})
        return op


HOPPER_OPS = [WgmmaFenceAlignedOp, WgmmaGroupSyncAlignedOp, WgmmaWaitGroupSyncOp, MBarrierInitOp, MBarrierArriveOp,
              MBarrierArriveExpectTxOp, CpAsyncBulkCommitGroupOp, CpAsyncBulkWaitGroupOp, SetMaxRegisterOp, FenceProxyOp,
              CpAsyncBulkTensorSharedCtaToGlobalOp, CpAsyncBulkTensorReduceOp, WgmmaMmaAsyncOp,
              CpAsyncBulkTensorGlobalToSharedClusterOp, MBarrierTryWaitParityOp, MapaOp, ClusterArriveOp, ClusterWaitOp, FenceMBarrierInitOp,
              GridDepControlOp]


NVVM = Dialect(
    "nvvm",
    [*SPECIAL_REGISTER_OPS.values(), BarrierOp, BarrierArriveOp, ShflOp, *HOPPER_OPS],
    [ShflKindAttr, SetMaxRegisterActionAttr, GridDepActionAttr, ProxyKindAttr, TmaStoreModeAttr, SharedSpaceAttr, TmaReduxKindAttr, WgmmaTypeAttr, WgmmaScaleInAttr,
     WgmmaScaleOutAttr, MMALayoutAttr, MMAShapeAttr, TmaLoadModeAttr],
)

__all__: Sequence[str] = [
    "NVVM",
    "SPECIAL_REGISTER_OPS",
    "SpecialRegisterOp",
    "BarrierOp",
    "ShflOp",
    "ShflKind",
    "ShflKindAttr",
]
