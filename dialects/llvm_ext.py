"""Upstream `llvm` ops that xDSL 0.74's llvm dialect lacks, with upstream's names and syntax."""

from __future__ import annotations

from xdsl.dialects.llvm import LLVMPointerType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class AddrSpaceCastOp(IRDLOperation):
    """`%q = llvm.addrspacecast %p : !llvm.ptr<3> to !llvm.ptr<7>`: the same object seen from
    another address space (here: this CTA's shared memory as a shared::cluster address)."""

    name = "llvm.addrspacecast"
    arg = operand_def(LLVMPointerType)
    res = result_def(LLVMPointerType)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$arg attr-dict `:` type($arg) `to` type($res)"

    def __init__(self, ptr: SSAValue | Operation, result_type: LLVMPointerType):
        super().__init__(operands=[ptr], result_types=[result_type])

    def verify_(self) -> None:
        if self.arg.type == self.res.type:
            raise VerifyException(f"'{self.name}' op casts {self.arg.type} to itself")


LLVM_EXT_OPS = [AddrSpaceCastOp]
