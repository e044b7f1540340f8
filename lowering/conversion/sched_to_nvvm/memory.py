"""Buffers and their accesses.

- shared buffers become `llvm.mlir.global`s in address space 3 (or, once `sched-alias-smem` has given
  them an `offset`, slices of the kernel's dynamic shared memory); register buffers become entry-block
  `llvm.alloca`s. The allocas use the default address space: the NVPTX data layout has no alloca
  address space (an addrspace(5) alloca would fail LLVM's verifier), SROA promotes a generic alloca
  indexed by constants, and NVPTX's own lowering moves what is left to .local;
- `memref.collapse_shape` of a buffer (the split-K matmul stores its [S, M, N] partials as [S*M, N]
  rows) is the same pointer with the collapsed row-major type: nothing is emitted;
- `memref.view` of a byte buffer (the matmul epilogue's staging bytes, seen as each output's
  element type) is the buffer's pointer moved by a constant byte shift;
- `sched.load` / `sched.store` become `llvm.getelementptr` on the buffer's pointer with the row-major
  (or static strided) linear offset, then `llvm.load` / `llvm.store`. Elements are kept as
  `sched.storage_type` says: an i1 is a byte (0 or 1), loaded as i8 then compared `!= 0` (any
  nonzero byte is true) and stored zero-extended, scalars and vectors alike, in every memory space.

A buffer-defining op only records its pointer in the kernel context; it is erased after the walk, once
every access through it has been lowered.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm, memref
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, IntegerType, MemRefType, VectorType, i1, i64
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from fuser.dialects import sched

from .common import Buffer, SchedToNVVMError, const_index, element_bytes, gep, low_bit, ptr_type, row_major, where
from .context import KernelContext, KernelPattern, lowers

STATIC_SMEM_LIMIT = 48 * 1024  # static shared memory a block may declare

_BUFFER_USERS = (sched.LoadOp, sched.StoreOp, sched.AtomicAddOp, sched.MBarrierInitOp, sched.MBarrierArriveOp,
                 sched.MBarrierArriveExpectTxOp, sched.MBarrierWaitOp, sched.TmaLoadOp, sched.TmaStoreOp,
                 sched.TmaReduceOp, sched.WgmmaDescOp, sched.MBarrierArriveClusterOp, memref.ViewOp, sched.ReleaseOp)


def _access_bytes(buf: SSAValue) -> list[int]:
    """Sizes of the vector loads and stores of a buffer (what its alignment must cover)."""
    out = []
    for u in buf.uses:
        o = u.operation
        t = o.result.type if isinstance(o, sched.LoadOp) else o.value.type if isinstance(o, sched.StoreOp) else None
        if isinstance(t, VectorType):
            out.append(element_bytes(t.element_type) * t.get_shape()[0])
    return out


class LowerAlloc(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.AllocOp, rewriter: PatternRewriter) -> None:
        k = self.k
        t = op.result.type
        assert isinstance(t, MemRefType)
        space = sched.memory_space(t)
        elem = t.element_type
        count = 1
        for s in t.get_shape():
            count *= s
        if count <= 0:
            raise k.fail(op, "cannot lower dynamic or empty buffer of")
        access_align = max([element_bytes(elem), *_access_bytes(op.result)])
        if space == sched.SHARED and op.offset is not None:
            byte_off = op.offset.value.data
            base = k.dynamic_smem_base()
            ptr = base if byte_off == 0 else k.at_entry(
                gep(base, [byte_off], IntegerType(8), ptr_type(3))).results[0]
            k.buffers[op.result] = Buffer(ptr, t, align_cap=min(16, low_bit(byte_off)))
        elif space == sched.SHARED:
            k.static_smem += count * element_bytes(elem)
            if k.static_smem > STATIC_SMEM_LIMIT:
                raise SchedToNVVMError(
                    f"'sched.alloc'{where(op)} in kernel @{k.name}: the shared buffers without an offset take "
                    f"{k.static_smem} bytes, over the {STATIC_SMEM_LIMIT}-byte limit of static shared memory; "
                    "run sched-alias-smem before convert-sched-to-nvvm to place them in dynamic shared memory")
            sym = f"__smem_{k.name}_{len(k.globals)}"
            k.globals.append(llvm.GlobalOp(llvm.LLVMArrayType(count, sched.storage_type(elem)), sym, "internal", addr_space=3,
                                           alignment=max(16, access_align)))
            ptr = k.at_entry(llvm.AddressOfOp(sym, ptr_type(3))).results[0]
            k.buffers[op.result] = Buffer(ptr, t)
        elif space == sched.REGISTER:
            size = k.const(1, i64)
            alloca = llvm.AllocaOp(size, llvm.LLVMArrayType(count, sched.storage_type(elem)), alignment=access_align)
            k.buffers[op.result] = Buffer(k.at_entry(alloca).results[0], t)
        else:
            raise k.fail(op, f"cannot lower memory space {space} of")
        if any(not isinstance(u.operation, _BUFFER_USERS) for u in op.result.uses):
            bad = next(u.operation for u in op.result.uses if not isinstance(u.operation, _BUFFER_USERS))
            raise k.fail(bad, "cannot lower buffer use by")
        k.dead_ops.append(op)


class LowerCollapseShape(KernelPattern):
    """A row-major view with merged dimensions: the source's pointer under the new type."""

    @lowers
    def match_and_rewrite(self, op: memref.CollapseShapeOp, rewriter: PatternRewriter) -> None:
        src = self.k.buffers.get(op.src)
        t = op.result.type
        if src is None:
            raise self.k.fail(op, "cannot lower (source not a kernel argument or sched.alloc)")
        if not isinstance(t, MemRefType) or src.type.get_strides() != row_major(src.type) or \
                t.get_strides() != row_major(t):
            raise self.k.fail(op, "cannot lower (only row-major buffers collapse to row-major views)")
        self.k.buffers[op.result] = Buffer(src.ptr, t, src.align_cap)
        self.k.dead_ops.append(op)


class LowerView(KernelPattern):
    """A typed row-major view of a byte buffer at a constant byte shift."""

    @lowers
    def match_and_rewrite(self, op: memref.ViewOp, rewriter: PatternRewriter) -> None:
        k = self.k
        src = k.buffers.get(op.source)
        t = op.result.type
        if src is None:
            raise k.fail(op, "cannot lower (source not a sched.alloc)")
        shift = const_index(op.byte_shift)
        if shift is None or op.sizes or not isinstance(t, MemRefType) or t.get_strides() != row_major(t):
            raise k.fail(op, "cannot lower (only static row-major views at a constant byte shift)")
        ptr = src.ptr if shift == 0 else k.at_entry(
            gep(src.ptr, [shift], IntegerType(8), src.ptr.type)).results[0]
        cap = src.align_cap if shift == 0 else min(src.align_cap or 16, low_bit(shift))
        k.buffers[op.result] = Buffer(ptr, t, cap)
        k.dead_ops.append(op)


class LowerRelease(RewritePattern):
    """A release is sched-alias-smem's information (the pass erases the ones it reads); without
    the pass the buffers have bytes of their own and it means nothing."""

    @lowers
    def match_and_rewrite(self, op: sched.ReleaseOp, rewriter: PatternRewriter) -> None:
        rewriter.erase_op(op)


class LowerAccess(KernelPattern):
    @lowers
    def match_and_rewrite(self, op: sched.LoadOp | sched.StoreOp, rewriter: PatternRewriter) -> None:
        ptr, buf = self.k.address(rewriter, op, op.buffer, op.indices)
        elem = buf.type.element_type
        vt = op.result.type if isinstance(op, sched.LoadOp) else op.value.type
        align = element_bytes(elem) * (vt.get_shape()[0] if isinstance(vt, VectorType) else 1)
        if buf.align_cap is not None:
            align = min(align, max(buf.align_cap, element_bytes(elem)))
        if elem == i1:  # a byte per element: widen on the way out, compare on the way in
            mt = _bytes_of(vt)
            if isinstance(op, sched.LoadOp):
                raw = self.k.before(rewriter, llvm.LoadOp(ptr, mt, alignment=align))
                zero = self.k.before(rewriter, arith.ConstantOp(_zero(mt), mt))
                # llvm.icmp, not arith.cmpi: xDSL's arith.cmpi takes no vectors
                rewriter.replace(op, llvm.ICmpOp(raw, zero, IntegerAttr(1, i64)))  # 1 = ne
            else:
                wide = self.k.before(rewriter, llvm.ZExtOp(op.value, mt))
                rewriter.replace(op, llvm.StoreOp(wide, ptr, alignment=align))
        elif isinstance(op, sched.LoadOp):
            rewriter.replace(op, llvm.LoadOp(ptr, vt, alignment=align))
        else:
            rewriter.replace(op, llvm.StoreOp(op.value, ptr, alignment=align))


class LowerAtomicAdd(KernelPattern):
    """sched.atomic_add -> PTX `red.global.add.{f32,f64,u32,u64}` at the element's address (inline
    PTX, as upstream's NVVM lowering spells instructions LLVM has no intrinsic for)."""

    _PTX = {"f32": ("f32", "f"), "f64": ("f64", "d"), "i32": ("u32", "r"), "i64": ("u64", "l")}

    @lowers
    def match_and_rewrite(self, op: sched.AtomicAddOp, rewriter: PatternRewriter) -> None:
        ptr, _ = self.k.address(rewriter, op, op.buffer, op.indices)
        suffix, constraint = self._PTX[str(op.value.type)]
        self.k.asm(rewriter, f"red.global.add.{suffix} [$0], $1;", f"l,{constraint},~{{memory}}", [ptr, op.value])
        rewriter.erase(op)


def _bytes_of(t):
    """The byte type (or vector of bytes) an i1 value (or vector of i1) is stored as."""
    i8 = IntegerType(8)
    return VectorType(i8, t.get_shape()) if isinstance(t, VectorType) else i8


def _zero(t):
    return DenseIntOrFPElementsAttr.from_list(t, [0] * t.get_shape()[0]) if isinstance(t, VectorType) else IntegerAttr(0, t)


def memory_patterns(k: KernelContext) -> list[RewritePattern]:
    return [LowerAlloc(k), LowerCollapseShape(k), LowerView(k), LowerRelease(), LowerAccess(k), LowerAtomicAdd(k)]
