"""The state one kernel's lowering patterns share, and the emission helpers they build on.

`KernelContext` holds what no single op knows: the pointer each memref value became, the tensor-map
parameters, the special registers and constants hoisted to the entry block, the shared-memory globals,
and the kernel's launch geometry and offset width. Helpers that emit "before the op being rewritten"
take the `PatternRewriter`, whose insertion point the walker sets in front of the matched op;
helpers that emit at the entry block do so directly, since the walker does not revisit new ops
(`apply_recursively=False`) and so needs no notice of them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from types import UnionType
from typing import Union, get_args, get_origin

from xdsl.dialects import arith, llvm, vector
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, VectorType, i32
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from fuser.dialects import sched
from fuser.dialects.ir import position
from fuser.dialects.nvvm import SPECIAL_REGISTER_OPS

from .common import (HOPPER_OPS, Buffer, EntryBuilder, SchedToNVVMError, const_index, fold, gep, ptr_type,
                     static_strides, where)

_GEP_SSA = llvm.GEP_USE_SSA_VAL


class KernelContext:
    """Whole-kernel state for the patterns that lower one `sched.kernel` into the block `body` of its
    `llvm.func`."""

    def __init__(self, kernel: sched.KernelOp, body: Block, index_bitwidth: int,
                 castui: type[Operation] | None = None):
        self.name = kernel.sym_name.data
        self.grid = kernel.grid_dims
        self.block_dims = kernel.block_dims
        self.offset_type = IntegerType(index_bitwidth)
        self.castui = castui
        self.body = body
        self.buffers: dict[SSAValue, Buffer] = {}
        self.tensor_maps: dict[SSAValue, SSAValue] = {}
        self.globals: list[llvm.GlobalOp] = []
        self.static_smem = 0  # bytes of the shared buffers lowered to globals
        self.dead_ops: list[Operation] = []  # sched.alloc / memref.collapse_shape, erased after the walk
        self.loops: set[Operation] = set()  # the scf.for ops made from sched.for, whose sched.yield is pending
        self.error: SchedToNVVMError | None = None  # the first failure; the patterns stop there
        entry = EntryBuilder(body)  # the kernel's entry block, in creation order
        self.at_entry = entry.insert
        self.const = entry.const  # an integer constant (index unless a type is given), created once
        self._sregs: dict[str, SSAValue] = {}
        self._dynamic_smem: SSAValue | None = None

    def fail(self, op: Operation, what: str = "cannot lower") -> SchedToNVVMError:
        return SchedToNVVMError(f"{what} '{op.name}'{where(op)} in kernel @{self.name}")

    # ---- the entry block: constants, special registers, buffer pointers

    def value(self, v: int | SSAValue) -> SSAValue:
        return self.const(v) if isinstance(v, int) else v

    def sreg(self, reg: str, dim: str) -> SSAValue:
        """The PTX special register `reg.dim` as an index, read once at the kernel's entry."""
        key = f"{reg}.{dim}"
        if key not in self._sregs:
            r = self.at_entry(SPECIAL_REGISTER_OPS[key]()).results[0]
            # Special registers are non-negative: zero-extend when the context knows
            # arith.index_castui (xDSL 0.74 lacks it), else sign-extend (same value here).
            cast = (self.castui.create(operands=[r], result_types=[IndexType()]) if self.castui is not None
                    else arith.IndexCastOp(r, IndexType()))
            self._sregs[key] = self.at_entry(cast).results[0]
            self._sregs[key].name_hint = f"{reg}_{dim}"
        return self._sregs[key]

    def dynamic_smem_base(self) -> SSAValue:
        if self._dynamic_smem is None:
            sym = f"__dynamic_smem_{self.name}"
            # 128-byte swizzled TMA/wgmma tiles need 1024-byte aligned shared memory; this looks at the
            # Hopper ops still in the kernel when the first offset buffer is lowered
            hopper = any(type(o) in HOPPER_OPS for o in self.body.walk())
            self.globals.append(llvm.GlobalOp(llvm.LLVMArrayType(0, IntegerType(8)), sym, "external", addr_space=3,
                                              alignment=1024 if hopper else 16))
            self._dynamic_smem = self.at_entry(llvm.AddressOfOp(sym, ptr_type(3))).results[0]
        return self._dynamic_smem

    # ---- before the op being rewritten

    @staticmethod
    def before(rewriter: PatternRewriter, new: Operation) -> SSAValue:
        return rewriter.insert(new).results[0]

    def mul(self, rewriter: PatternRewriter, a: int | SSAValue, b: int | SSAValue) -> int | SSAValue:
        """a * b on index values; ints and constants fold."""
        a, b = fold(a), fold(b)
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if isinstance(a, int):
            a, b = b, a
        if b == 0:
            return 0
        if b == 1:
            return a
        return self.before(rewriter, arith.MuliOp(a, self.value(b)))

    def add(self, rewriter: PatternRewriter, a: int | SSAValue, b: int | SSAValue) -> int | SSAValue:
        """a + b on index values; ints and constants fold."""
        a, b = fold(a), fold(b)
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(a, int):
            a, b = b, a
        if b == 0:
            return a
        return self.before(rewriter, arith.AddiOp(a, self.value(b)))

    def binding(self, rewriter: PatternRewriter, bind: str) -> tuple[int | SSAValue, int]:
        """(position of this thread, number of positions) for a loop binding."""
        level, dim = bind.split(".")
        d = "xyz".index(dim)
        if level == "thread":
            return self.sreg("tid", dim), self.block_dims[d]
        if level == "block":
            return self.sreg("ctaid", dim), self.grid[d]
        assert level == "grid"
        pos = self.add(rewriter, self.mul(rewriter, self.sreg("ctaid", dim), self.block_dims[d]), self.sreg("tid", dim))
        return pos, self.grid[d] * self.block_dims[d]

    def address(self, rewriter: PatternRewriter, op: Operation, buffer: SSAValue,
                indices: Sequence[SSAValue]) -> tuple[SSAValue, Buffer]:
        """Pointer to buffer[indices] (row-major or static strided)."""
        buf = self.buffers.get(buffer)
        if buf is None:
            raise self.fail(op, "cannot lower (buffer not a kernel argument or sched.alloc)")
        t = buf.type
        elem = sched.storage_type(t.element_type)
        strides, offset = static_strides(t, where(op))
        # constant terms are summed apart so that they fold into one addend
        lin: int | SSAValue = 0
        for idx, stride in zip(indices, strides):
            term = self.mul(rewriter, idx, stride)
            if isinstance(term, int):
                offset += term
            else:
                lin = self.add(rewriter, lin, term)
        lin = self.add(rewriter, lin, offset)

        ptr = buf.ptr
        if isinstance(lin, int):
            if lin:
                if not -(2**31) < lin < 2**31:
                    raise self.fail(op, f"offset {lin} out of range for")
                ptr = self.before(rewriter, gep(ptr, [lin], elem, ptr.type))
        else:
            off = self.before(rewriter, arith.IndexCastOp(lin, self.offset_type))
            ptr = self.before(rewriter, gep(ptr, [_GEP_SSA], elem, ptr.type, [off]))
        return ptr, buf

    def smem_u32(self, rewriter: PatternRewriter, op: Operation, buffer: SSAValue,
                 indices: Sequence[SSAValue]) -> SSAValue:
        """The 32-bit shared-memory address of buffer[indices] (what PTX's shared operands take)."""
        ptr, _ = self.address(rewriter, op, buffer, indices)
        return self.before(rewriter, llvm.PtrToIntOp(ptr, i32))

    def i32_of(self, rewriter: PatternRewriter, v: SSAValue) -> SSAValue:
        c = const_index(v)
        if c is not None:
            return self.const(c, i32)
        return self.before(rewriter, arith.IndexCastOp(v, i32))

    def tensor_map(self, op: Operation) -> SSAValue:
        tm = self.tensor_maps.get(op.tensor_map)  # type: ignore[attr-defined]
        if tm is None:
            raise self.fail(op, "cannot lower (tensor map not a kernel argument)")
        return tm

    @staticmethod
    def asm(rewriter: PatternRewriter, text: str, constraints: str, operands: Sequence[SSAValue],
            result: Attribute | None = None) -> SSAValue | None:
        a = rewriter.insert(llvm.InlineAsmOp(text, constraints, list(operands),
                                             [result] if result is not None else [], has_side_effects=True))
        return a.results[0] if result is not None else None

    @classmethod
    def asm_statement(cls, rewriter: PatternRewriter, op: Operation, text: str) -> None:
        """Replace `op` (no operands used, no results) by one inline PTX statement."""
        cls.asm(rewriter, text, "~{memory}", [])
        rewriter.erase(op)

    def unpack(self, rewriter: PatternRewriter, vec: SSAValue) -> list[SSAValue]:
        n = vec.type.get_shape()[0]  # type: ignore[attr-defined]
        return [self.before(rewriter, vector.ExtractOp.create(
            operands=[vec], result_types=[vec.type.element_type],  # type: ignore[attr-defined]
            properties={"static_position": position(k)})) for k in range(n)]

    def pack(self, rewriter: PatternRewriter, struct: SSAValue, start: int, vt: VectorType) -> SSAValue:
        n = vt.get_shape()[0]
        vec = self.before(rewriter, llvm.UndefOp(vt))
        for k in range(n):
            x = self.before(rewriter, llvm.ExtractValueOp(position(start + k), struct,
                                                          vt.element_type))
            vec = self.before(rewriter, vector.InsertOp.create(
                operands=[x, vec], result_types=[vt],
                properties={"static_position": position(k)}))
        return vec

    def check_kept(self, op: Operation) -> None:
        """An op that stays as it is (arith, scf, ...) must not touch a memref: buffers are pointers now."""
        if any(isinstance(v.type, MemRefType) for v in (*op.operands, *op.results)):
            raise self.fail(op, "cannot lower memref use by")
        # (all of its blocks at once: the walker visits the nested ops after this)
        for region in op.regions:
            for block in region.blocks:
                if any(isinstance(a.type, MemRefType) for a in block.args):
                    raise self.fail(op, "cannot lower memref block argument of")


def lowers(method: Callable) -> Callable:
    """xDSL's `op_type_rewrite_pattern` (the op types from the method's annotation), with those
    types kept on the method as `op_types`, so that the kernel's walk offers each op only to the
    patterns that lower its type (`DispatchingApplier`) instead of to all thirty in turn."""
    wrapped = op_type_rewrite_pattern(method)
    hint = list(inspect.signature(method, eval_str=True).parameters.values())[1].annotation
    wrapped.op_types = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
    return wrapped


class DispatchingApplier(RewritePattern):
    """GreedyRewritePatternApplier's rule (the patterns in order until one acts; no folding, no
    dead-code elimination) over only the patterns whose `op_types` an op is an instance of
    (a pattern without `op_types` is offered every op), then `last` if none acted."""

    def __init__(self, patterns: Sequence[RewritePattern], last: RewritePattern):
        self.patterns = list(patterns)
        self.last = last
        self._for_type: dict[type, list[RewritePattern]] = {}

    def _candidates(self, cls: type) -> list[RewritePattern]:
        if cls not in self._for_type:
            self._for_type[cls] = [p for p in self.patterns
                                   if not hasattr(p.match_and_rewrite, "op_types")
                                   or issubclass(cls, p.match_and_rewrite.op_types)]
        return self._for_type[cls]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        for pattern in self._candidates(type(op)):
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return
        self.last.match_and_rewrite(op, rewriter)


class KernelPattern(RewritePattern):
    """A pattern that needs the kernel's shared state."""

    def __init__(self, k: KernelContext):
        self.k = k
