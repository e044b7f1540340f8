"""convert-sched-to-nvvm: lower a sched-level module to the nvvm level (docs/ir-levels.md).

Kernels become `llvm.func`s with the bare-pointer convention inside one `gpu.module`; the host
function launches them with `gpu.launch_func`. Inside kernels:

- parallel indices read the PTX special registers (`nvvm.read.ptx.sreg.*`, i32) and are cast to
  `index`;
- a bound `sched.for` becomes an `scf.for` whose start is offset by the thread's position and
  whose step is multiplied by the binding's extent. The extents come from the kernel's static
  launch geometry, so the step is a constant. When the trip count is a constant that the binding
  covers, the loop becomes an `scf.if` (or, when it covers it exactly, straight-line code);
- `sched.load` / `sched.store` become `llvm.getelementptr` on the buffer's pointer with the
  row-major (or static strided) linear offset, then `llvm.load` / `llvm.store`;
- shared buffers become `llvm.mlir.global`s in address space 3 (or, once `sched-alias-smem` has
  given them an `offset`, slices of the kernel's dynamic shared memory); register buffers become
  entry-block `llvm.alloca`s. The allocas use the default address space: the NVPTX data layout
  has no alloca address space (an addrspace(5) alloca would fail LLVM's verifier), SROA promotes
  a generic alloca indexed by constants, and NVPTX's own lowering moves what is left to .local;
- `sched.barrier` / `sched.shfl_xor` become `nvvm.barrier` / `nvvm.shfl.sync bfly`.
- `memref.collapse_shape` of a buffer (the split-K matmul stores its [S, M, N] partials as
  [S*M, N] rows) is the same pointer with the collapsed row-major type: nothing is emitted.

- Hopper ops (docs in dialects/sched/): a `!sched.tensor_map` kernel argument becomes an
  `!llvm.ptr` parameter passed `byval` (128 bytes, align 64) and marked `nvvm.grid_constant`, so
  the kernel reads the descriptor in parameter space; wgmma fence/commit/wait and mbarrier
  init/arrive become the upstream `nvvm.*` ops; TMA copies, `mbarrier.arrive.expect_tx`, the
  `try_wait.parity` spin loop, `wgmma.mma_async`, `setmaxnreg` and `fence.proxy.async` become
  `llvm.inline_asm` (upstream lowers these through inline PTX too). Accumulators stay
  `vector<N x f32>` values; around an asm they are unpacked to scalars, and a
  `sched.wgmma.wait_group` re-defines the ones it passes through an empty asm tied to them, so no
  read can be scheduled before the wait.

Everything else of `arith`, `math`, `scf`, `vector`, `llvm` and `nvvm` passes through; any other
op inside a kernel is an error that names the op and the kernel.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, llvm, memref, scf, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    ArrayAttr,
    DictionaryAttr,
    Float32Type,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    VectorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator

from fuser.dialects import sched
from fuser.dialects import nvvm
from fuser.dialects.gpu_ext import MemsetOp
from fuser.passes.flush_wgmma import inflight_readers
from fuser.passes.ir import location_of
from fuser.dialects.nvvm import SPECIAL_REGISTER_OPS, ShflKind, ShflOp
from fuser.dialects.nvvm import BarrierOp as NVVMBarrierOp


class SchedToNVVMError(Exception):
    """The pass met something it cannot lower; the message names the op and the kernel."""


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------

_PASSTHROUGH_DIALECTS = frozenset({"arith", "math", "scf", "vector", "llvm", "nvvm"})
_SREG = {sched.ThreadIdxOp: "tid", sched.BlockIdxOp: "ctaid", sched.BlockDimOp: "ntid", sched.GridDimOp: "nctaid"}
_GEP_SSA = llvm.GEP_USE_SSA_VAL


def _where(op: Operation) -> str:
    loc = location_of(op)
    return "" if loc == "<unknown>" else f" at {loc}"


def element_bytes(t: Attribute) -> int:
    """Storage size of a memref element type in bytes."""
    if isinstance(t, IntegerType):
        return max(1, (t.width.data + 7) // 8)
    if isinstance(t, AnyFloat):
        return t.bitwidth // 8
    raise SchedToNVVMError(f"unsupported buffer element type {t}")


def _const_index(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr) and isinstance(v.type, IndexType):
        return op.value.value.data
    return None


def _fold(v: int | SSAValue) -> int | SSAValue:
    if isinstance(v, SSAValue):
        c = _const_index(v)
        return v if c is None else c
    return v


def _ptr(space: int) -> llvm.LLVMPointerType:
    return llvm.LLVMPointerType(IntAttr(space))


def _erase(op: Operation) -> None:
    op.detach()
    op.erase()


def _low_bit(n: int) -> int:
    return n & -n if n else 1 << 30


def _row_major_strides(t: MemRefType, where: str) -> tuple[list[int], int]:
    strides, offset = t.get_strides(), t.get_offset()
    if strides is None or offset is None or any(s is None for s in strides):
        raise SchedToNVVMError(f"buffer type {t}{where} has no static strided layout")
    return list(strides), offset  # type: ignore[arg-type]


def _row_major(t: MemRefType) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(t.get_shape()):
        out.append(acc)
        acc *= d
    return tuple(out[::-1])


@dataclass
class _Buffer:
    """Where a memref value lives after lowering."""

    ptr: SSAValue
    type: MemRefType
    align_cap: int | None = None  # largest alignment the base pointer guarantees (dynamic smem)


@dataclass
class _Builder:
    """Inserts ops either at a block's entry (in creation order) or before an op, folding index
    arithmetic on constants."""

    block: Block
    entry_last: Operation | None = None
    consts: dict[tuple[int, Attribute], SSAValue] = field(default_factory=dict)

    def at_entry(self, op: Operation) -> Operation:
        if self.entry_last is None:
            if self.block.first_op is None:
                self.block.add_op(op)
            else:
                self.block.insert_op_before(op, self.block.first_op)
        else:
            self.block.insert_op_after(op, self.entry_last)
        self.entry_last = op
        return op

    def const(self, value: int, t: Attribute = IndexType()) -> SSAValue:
        key = (value, t)
        if key not in self.consts:
            self.consts[key] = self.at_entry(arith.ConstantOp(IntegerAttr(value, t))).results[0]
        return self.consts[key]

    @staticmethod
    def before(op: Operation, new: Operation) -> SSAValue:
        parent = op.parent_block()
        assert parent is not None
        parent.insert_op_before(new, op)
        return new.results[0]

    def value(self, v: int | SSAValue) -> SSAValue:
        return self.const(v) if isinstance(v, int) else v

    def mul(self, a: int | SSAValue, b: int | SSAValue, at: Operation) -> int | SSAValue:
        """a * b on index values, inserted before `at`; ints and constants fold."""
        a, b = _fold(a), _fold(b)
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if isinstance(a, int):
            a, b = b, a
        if b == 0:
            return 0
        if b == 1:
            return a
        return self.before(at, arith.MuliOp(a, self.value(b)))

    def add(self, a: int | SSAValue, b: int | SSAValue, at: Operation) -> int | SSAValue:
        """a + b on index values, inserted before `at`; ints and constants fold."""
        a, b = _fold(a), _fold(b)
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(a, int):
            a, b = b, a
        if b == 0:
            return a
        return self.before(at, arith.AddiOp(a, self.value(b)))


# ------------------------------------------------------------------------------------------
# kernels
# ------------------------------------------------------------------------------------------


class _KernelLowering:
    def __init__(self, kernel: sched.KernelOp, index_bitwidth: int, castui: type[Operation] | None = None):
        self.kernel = kernel
        self.name = kernel.sym_name.data
        self.grid = kernel.grid_dims
        self.block_dims = kernel.block_dims
        self.offset_type = IntegerType(index_bitwidth)
        self.arg_types = [_ptr(0) if isinstance(a.type, sched.TensorMapType) else _ptr(1)
                          for a in kernel.body.block.args]
        self.body = Block(arg_types=self.arg_types)
        self.tensor_maps: dict[SSAValue, SSAValue] = {}
        self.b = _Builder(self.body)
        self.buffers: dict[SSAValue, _Buffer] = {}
        self.sregs: dict[str, SSAValue] = {}
        self.globals: list[llvm.GlobalOp] = []
        self.dynamic_smem: SSAValue | None = None
        self.castui = castui
        self.dead_allocs: list[sched.AllocOp] = []

    def error(self, op: Operation, what: str = "cannot lower") -> SchedToNVVMError:
        return SchedToNVVMError(f"{what} '{op.name}'{_where(op)} in kernel @{self.name}")

    # ---- driver

    def run(self) -> tuple[llvm.FuncOp, list[llvm.GlobalOp]]:
        old = self.kernel.body.block
        for arg, ptr in zip(old.args, self.body.args):
            ptr.name_hint = arg.name_hint
            if isinstance(arg.type, sched.TensorMapType):
                self.tensor_maps[arg] = ptr
                continue
            assert isinstance(arg.type, MemRefType)
            self.buffers[arg] = _Buffer(ptr, arg.type)
        ops = list(old.ops)
        for op in ops:
            op.detach()
            self.body.add_op(op)
        self.lower_ops(ops)
        for a in reversed(self.dead_allocs):
            _erase(a)

        fn_type = llvm.LLVMFunctionType([a.type for a in self.body.args], llvm.LLVMVoidType())
        attrs: dict[str, Attribute] = {
            "gpu.kernel": UnitAttr(),
            "nvvm.kernel": UnitAttr(),
            "nvvm.maxntid": DenseArrayBase.from_list(i32, list(self.block_dims)),
        }
        if self.kernel.cluster is not None:
            attrs["nvvm.cluster_dim"] = DenseArrayBase.from_list(i32, list(self.kernel.cluster.get_values()))
        for k, v in self.kernel.attributes.items():
            attrs.setdefault(k, v)
        fn = llvm.FuncOp(self.name, fn_type, linkage=llvm.LinkageAttr("external"), body=Region(self.body),
                         extra_attrs=attrs)
        if self.tensor_maps:
            tm_attrs = DictionaryAttr({"llvm.byval": llvm.LLVMArrayType(128, IntegerType(8)),
                                       "llvm.align": IntegerAttr(64, i64), "nvvm.grid_constant": UnitAttr()})
            fn.properties["arg_attrs"] = ArrayAttr([
                tm_attrs if isinstance(a.type, sched.TensorMapType) else DictionaryAttr({})
                for a in old.args])
        return fn, self.globals

    def lower_ops(self, ops: Iterable[Operation]) -> None:
        for op in list(ops):
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        if isinstance(op, tuple(_SREG)):
            op.results[0].replace_all_uses_with(self.sreg(_SREG[type(op)], op.dim.data))  # type: ignore[attr-defined]
            _erase(op)
        elif isinstance(op, sched.ForOp):
            self.lower_for(op)
        elif isinstance(op, sched.LoadOp | sched.StoreOp):
            self.lower_access(op)
        elif isinstance(op, sched.AllocOp):
            self.lower_alloc(op)
        elif isinstance(op, memref.CollapseShapeOp):
            self.lower_collapse(op)
        elif isinstance(op, sched.BarrierOp):
            self.replace(op, [NVVMBarrierOp()])
        elif isinstance(op, sched.ShflXorOp):
            shfl = ShflOp(ShflKind.BFLY, self.b.const(-1, i32), op.value,
                          self.b.const(op.offset.value.data, i32), self.b.const(0x1F, i32))
            self.replace(op, [shfl])
        elif isinstance(op, sched.ReturnOp):
            self.replace(op, [llvm.ReturnOp()])
        elif type(op) in _HOPPER_LOWERINGS:
            _HOPPER_LOWERINGS[type(op)](self, op)
        elif isinstance(op, sched.YieldOp):
            raise self.error(op, "misplaced")  # handled by lower_for
        elif op.dialect_name() in _PASSTHROUGH_DIALECTS:
            if any(isinstance(v.type, MemRefType) for v in (*op.operands, *op.results)):
                raise self.error(op, "cannot lower memref use by")
            for region in op.regions:
                for block in region.blocks:
                    if any(isinstance(a.type, MemRefType) for a in block.args):
                        raise self.error(op, "cannot lower memref block argument of")
                    self.lower_ops(block.ops)
        else:
            raise self.error(op)

    @staticmethod
    def replace(op: Operation, new_ops: Sequence[Operation]) -> None:
        parent = op.parent_block()
        assert parent is not None
        for n in new_ops:
            parent.insert_op_before(n, op)
        new_results = new_ops[-1].results if new_ops else ()
        for old, new in zip(op.results, new_results):
            old.replace_all_uses_with(new)
        _erase(op)

    # ---- parallel indices

    def sreg(self, reg: str, dim: str) -> SSAValue:
        key = f"{reg}.{dim}"
        if key not in self.sregs:
            r = self.b.at_entry(SPECIAL_REGISTER_OPS[key]()).results[0]
            # Special registers are non-negative: zero-extend when the context knows
            # arith.index_castui (xDSL 0.74 lacks it), else sign-extend (same value here).
            cast = (self.castui.create(operands=[r], result_types=[IndexType()]) if self.castui is not None
                    else arith.IndexCastOp(r, IndexType()))
            self.sregs[key] = self.b.at_entry(cast).results[0]
            self.sregs[key].name_hint = f"{reg}_{dim}"
        return self.sregs[key]

    def binding(self, bind: str, at: Operation) -> tuple[int | SSAValue, int]:
        """(position of this thread, number of positions) for a loop binding."""
        level, dim = bind.split(".")
        d = "xyz".index(dim)
        if level == "thread":
            return self.sreg("tid", dim), self.block_dims[d]
        if level == "block":
            return self.sreg("ctaid", dim), self.grid[d]
        assert level == "grid"
        pos = self.b.add(self.b.mul(self.sreg("ctaid", dim), self.block_dims[d], at), self.sreg("tid", dim), at)
        return pos, self.grid[d] * self.block_dims[d]

    # ---- loops

    def lower_for(self, op: sched.ForOp) -> None:
        body = op.body.block
        yield_op = body.last_op
        assert isinstance(yield_op, sched.YieldOp)
        lb, ub, step = op.lb, op.ub, op.step
        inits = list(op.iter_args)
        clb, cub, cstep = _const_index(lb), _const_index(ub), _const_index(step)
        trips = None
        if clb is not None and cub is not None and cstep is not None and cstep > 0:
            trips = max(0, -(-(cub - clb) // cstep))

        if trips == 0:  # never runs: the results are the inits
            for r, i in zip(op.results, inits):
                r.replace_all_uses_with(i)
            _erase(op)
            return

        pos, count = self.binding(op.bind.data, op)
        new_lb = self.b.add(lb, self.b.mul(pos, step, op), op)

        if trips is not None and trips <= count:
            # every thread runs at most one iteration: no loop
            lbv = self.b.value(new_lb)
            body.args[0].replace_all_uses_with(lbv)
            for a, i in zip(body.args[1:], inits):
                a.replace_all_uses_with(i)
            yielded = list(yield_op.arguments)
            _erase(yield_op)
            ops = list(body.ops)
            for o in ops:
                o.detach()
            if trips == count:  # ... and exactly one: straight-line code
                parent = op.parent_block()
                assert parent is not None
                for o in ops:
                    parent.insert_op_before(o, op)
                for r, y in zip(op.results, yielded):
                    r.replace_all_uses_with(y)
                _erase(op)
                self.lower_ops(ops)
                return
            cond = self.b.before(op, arith.CmpiOp(lbv, ub, "slt"))
            then_block = Block(ops)
            then_block.add_op(scf.YieldOp(*yielded))
            else_region = Region(Block([scf.YieldOp(*inits)])) if inits else Region()
            if_op = scf.IfOp(cond, [r.type for r in op.results], Region(then_block), else_region)
            self.replace(op, [if_op])
            self.lower_ops(ops)
            return

        new_step = self.b.mul(step, count, op)
        region = op.detach_region(op.body)
        loop = scf.ForOp(self.b.value(new_lb), ub, self.b.value(new_step), inits, region)
        yield_op.parent_block().insert_op_before(scf.YieldOp(*yield_op.arguments), yield_op)  # type: ignore[union-attr]
        _erase(yield_op)
        self.replace(op, [loop])
        self.lower_ops(loop.body.block.ops)

    # ---- memory

    def lower_alloc(self, op: sched.AllocOp) -> None:
        t = op.result.type
        assert isinstance(t, MemRefType)
        space = sched.memory_space(t)
        elem = t.element_type
        count = 1
        for s in t.get_shape():
            count *= s
        if count <= 0:
            raise self.error(op, "cannot lower dynamic or empty buffer of")
        access_align = max([element_bytes(elem), *self._access_bytes(op.result)])
        if space == sched.SHARED and op.offset is not None:
            byte_off = op.offset.value.data
            base = self.dynamic_smem_base()
            ptr = base if byte_off == 0 else self.b.at_entry(
                llvm.GEPOp(base, [byte_off], IntegerType(8), result_type=_ptr(3))).results[0]
            self.buffers[op.result] = _Buffer(ptr, t, align_cap=min(16, _low_bit(byte_off)))
        elif space == sched.SHARED:
            sym = f"__smem_{self.name}_{len(self.globals)}"
            self.globals.append(llvm.GlobalOp(llvm.LLVMArrayType(count, elem), sym, "internal", addr_space=3,
                                              alignment=max(16, access_align)))
            ptr = self.b.at_entry(llvm.AddressOfOp(sym, _ptr(3))).results[0]
            self.buffers[op.result] = _Buffer(ptr, t)
        elif space == sched.REGISTER:
            size = self.b.const(1, i64)
            alloca = llvm.AllocaOp(size, llvm.LLVMArrayType(count, elem), alignment=access_align)
            self.buffers[op.result] = _Buffer(self.b.at_entry(alloca).results[0], t)
        else:
            raise self.error(op, f"cannot lower memory space {space} of")
        if any(not isinstance(u.operation, _BUFFER_USERS) for u in op.result.uses):
            bad = next(u.operation for u in op.result.uses if not isinstance(u.operation, _BUFFER_USERS))
            raise self.error(bad, "cannot lower buffer use by")
        self.dead_allocs.append(op)  # erased once its loads and stores are lowered

    def lower_collapse(self, op: memref.CollapseShapeOp) -> None:
        """A row-major view with merged dimensions: the source's pointer under the new type."""
        src = self.buffers.get(op.src)
        t = op.result.type
        if src is None:
            raise self.error(op, "cannot lower (source not a kernel argument or sched.alloc)")
        if not isinstance(t, MemRefType) or src.type.get_strides() != _row_major(src.type) or \
                t.get_strides() != _row_major(t):
            raise self.error(op, "cannot lower (only row-major buffers collapse to row-major views)")
        self.buffers[op.result] = _Buffer(src.ptr, t, src.align_cap)
        self.dead_allocs.append(op)  # erased once the accesses through it are lowered

    @staticmethod
    def _access_bytes(buf: SSAValue) -> list[int]:
        out = []
        for u in buf.uses:
            o = u.operation
            t = o.result.type if isinstance(o, sched.LoadOp) else o.value.type if isinstance(o, sched.StoreOp) else None
            if isinstance(t, VectorType):
                out.append(element_bytes(t.element_type) * t.get_shape()[0])
        return out

    def dynamic_smem_base(self) -> SSAValue:
        if self.dynamic_smem is None:
            sym = f"__dynamic_smem_{self.name}"
            # 128-byte swizzled TMA/wgmma tiles need 1024-byte aligned shared memory
            hopper = any(type(o) in _HOPPER_LOWERINGS for o in self.body.walk())
            self.globals.append(llvm.GlobalOp(llvm.LLVMArrayType(0, IntegerType(8)), sym, "external", addr_space=3,
                                              alignment=1024 if hopper else 16))
            self.dynamic_smem = self.b.at_entry(llvm.AddressOfOp(sym, _ptr(3))).results[0]
        return self.dynamic_smem

    def address(self, op: Operation, buffer: SSAValue, indices: Sequence[SSAValue]) -> tuple[SSAValue, _Buffer]:
        """Pointer to buffer[indices] (row-major or static strided), inserted before `op`."""
        buf = self.buffers.get(buffer)
        if buf is None:
            raise self.error(op, "cannot lower (buffer not a kernel argument or sched.alloc)")
        t = buf.type
        elem = t.element_type
        strides, offset = _row_major_strides(t, _where(op))
        # constant terms are summed apart so that they fold into one addend
        lin: int | SSAValue = 0
        for idx, stride in zip(indices, strides):
            term = self.b.mul(idx, stride, op)
            if isinstance(term, int):
                offset += term
            else:
                lin = self.b.add(lin, term, op)
        lin = self.b.add(lin, offset, op)

        ptr = buf.ptr
        if isinstance(lin, int):
            if lin:
                if not -(2**31) < lin < 2**31:
                    raise self.error(op, f"offset {lin} out of range for")
                ptr = self.b.before(op, llvm.GEPOp(ptr, [lin], elem, result_type=ptr.type))
        else:
            off = self.b.before(op, arith.IndexCastOp(lin, self.offset_type))
            ptr = self.b.before(op, llvm.GEPOp(ptr, [_GEP_SSA], elem, ssa_indices=[off], result_type=ptr.type))
        return ptr, buf

    def lower_access(self, op: sched.LoadOp | sched.StoreOp) -> None:
        ptr, buf = self.address(op, op.buffer, op.indices)
        elem = buf.type.element_type
        vt = op.result.type if isinstance(op, sched.LoadOp) else op.value.type
        align = element_bytes(elem) * (vt.get_shape()[0] if isinstance(vt, VectorType) else 1)
        if buf.align_cap is not None:
            align = min(align, max(buf.align_cap, element_bytes(elem)))
        if isinstance(op, sched.LoadOp):
            self.replace(op, [llvm.LoadOp(ptr, vt, alignment=align)])
        else:
            self.replace(op, [llvm.StoreOp(op.value, ptr, alignment=align)])

    # ---- Hopper

    def smem_u32(self, op: Operation, buffer: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        """The 32-bit shared-memory address of buffer[indices] (what PTX's shared operands take)."""
        ptr, _ = self.address(op, buffer, indices)
        return self.b.before(op, llvm.PtrToIntOp(ptr, i32))

    def i32_of(self, op: Operation, v: SSAValue) -> SSAValue:
        c = _const_index(v)
        if c is not None:
            return self.b.const(c, i32)
        return self.b.before(op, arith.IndexCastOp(v, i32))

    def asm(self, op: Operation, text: str, constraints: str, operands: Sequence[SSAValue],
            result: Attribute | None = None) -> SSAValue | None:
        a = llvm.InlineAsmOp(text, constraints, list(operands), [result] if result is not None else [],
                             has_side_effects=True)
        parent = op.parent_block()
        assert parent is not None
        parent.insert_op_before(a, op)
        return a.results[0] if result is not None else None

    def unpack(self, op: Operation, vec: SSAValue) -> list[SSAValue]:
        n = vec.type.get_shape()[0]
        return [self.b.before(op, vector.ExtractOp.create(
            operands=[vec], result_types=[vec.type.element_type],
            properties={"static_position": DenseArrayBase.from_list(i64, [k])})) for k in range(n)]

    def pack(self, op: Operation, struct: SSAValue, start: int, vt: VectorType) -> SSAValue:
        n = vt.get_shape()[0]
        vec = self.b.before(op, llvm.UndefOp(vt))
        for k in range(n):
            x = self.b.before(op, llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [start + k]), struct,
                                                      vt.element_type))
            vec = self.b.before(op, vector.InsertOp.create(
                operands=[x, vec], result_types=[vt],
                properties={"static_position": DenseArrayBase.from_list(i64, [k])}))
        return vec

    def lower_mbarrier(self, op: Operation) -> None:
        ptr, _ = self.address(op, op.barriers, [op.index])
        if isinstance(op, sched.MBarrierInitOp):
            self.replace(op, [nvvm.MBarrierInitSharedOp(ptr, self.b.const(op.count.value.data, i32))])
        elif isinstance(op, sched.MBarrierArriveOp):
            self.replace(op, [nvvm.MBarrierArriveSharedOp(ptr)])
        elif isinstance(op, sched.MBarrierArriveExpectTxOp):
            addr = self.b.before(op, llvm.PtrToIntOp(ptr, i32))
            self.asm(op, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}",
                     [addr, self.b.const(op.bytes.value.data, i32)])
            _erase(op)
        else:
            assert isinstance(op, sched.MBarrierWaitOp)
            addr = self.b.before(op, llvm.PtrToIntOp(ptr, i32))
            phase = self.i32_of(op, op.phase)
            parity = self.b.before(op, arith.AndIOp(phase, self.b.const(1, i32)))
            self.asm(op, "{\n.reg .pred p;\nLAB_WAIT_${:uid}:\n"
                         "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
                         "@!p bra LAB_WAIT_${:uid};\n}", "r,r,~{memory}", [addr, parity])
            _erase(op)

    def lower_tma(self, op: Operation) -> None:
        if isinstance(op, sched.TmaLoadOp):
            tmap, rank = self.tensor_map(op), len(op.coords)
            dst = self.smem_u32(op, op.dst, op.dst_indices)
            bar = self.smem_u32(op, op.barriers, [op.index])
            coords = [self.i32_of(op, c) for c in reversed(op.coords)]  # PTX: innermost first
            cs = ", ".join(f"${i + 2}" for i in range(rank))
            if op.multicast is not None:
                self.lower_tma_multicast(op, rank, cs, [dst, tmap, *coords, bar])
                return
            self.asm(op, f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                         f"[$0], [$1, {{{cs}}}], [${rank + 2}];",
                     ",".join(["r", "l"] + ["r"] * rank + ["r", "~{memory}"]), [dst, tmap, *coords, bar])
        else:
            assert isinstance(op, sched.TmaStoreOp)
            tmap, rank = self.tensor_map(op), len(op.coords)
            src = self.smem_u32(op, op.src, op.src_indices)
            coords = [self.i32_of(op, c) for c in reversed(op.coords)]
            cs = ", ".join(f"${i + 1}" for i in range(rank))
            self.asm(op, f"cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group [$0, {{{cs}}}], [${rank + 1}];",
                     ",".join(["l"] + ["r"] * rank + ["r", "~{memory}"]), [tmap, *coords, src])
        _erase(op)

    def lower_tma_multicast(self, op: sched.TmaLoadOp, rank: int, cs: str, operands: list[SSAValue]) -> None:
        """The box lands at the same CTA-relative offset in every CTA of the mask, and each of
        them gets the complete_tx bytes on its barrier at the same offset as `bar`."""
        self.asm(op, "{\n.reg .b16 mask;\n"
                     f"mov.b16 mask, {op.multicast.value.data};\n"
                     f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     f".multicast::cluster [$0], [$1, {{{cs}}}], [${rank + 2}], mask;\n}}",
                 ",".join(["r", "l"] + ["r"] * rank + ["r", "~{memory}"]), operands)
        _erase(op)

    def lower_cluster(self, op: Operation) -> None:
        if isinstance(op, sched.ClusterBarrierOp):
            self.asm(op, "barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;", "~{memory}", [])
        elif isinstance(op, sched.FenceMBarrierInitOp):
            self.asm(op, "fence.mbarrier_init.release.cluster;", "~{memory}", [])
        else:
            assert isinstance(op, sched.MBarrierArriveClusterOp)
            addr = self.smem_u32(op, op.barriers, [op.index])
            self.asm(op, "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, $0, $1;\n"
                         "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}",
                     "r,r,~{memory}", [addr, self.i32_of(op, op.cta)])
        _erase(op)

    def tensor_map(self, op: Operation) -> SSAValue:
        tm = self.tensor_maps.get(op.tensor_map)
        if tm is None:
            raise self.error(op, "cannot lower (tensor map not a kernel argument)")
        return tm

    def lower_simple_asm(self, op: Operation) -> None:
        if isinstance(op, sched.BulkCommitGroupOp):
            text = "cp.async.bulk.commit_group;"
        elif isinstance(op, sched.BulkWaitGroupOp):
            text = f"cp.async.bulk.wait_group{'.read' if op.read is not None else ''} {op.pending.value.data};"
        elif isinstance(op, sched.FenceProxyAsyncOp):
            text = "fence.proxy.async.shared::cta;"
        elif isinstance(op, sched.NamedBarrierOp):
            text = f"bar.{op.action.data} {op.id.value.data}, {op.count.value.data};"
        else:
            assert isinstance(op, sched.SetMaxNRegOp)
            text = f"setmaxnreg.{op.action.data}.sync.aligned.u32 {op.count.value.data};"
        self.asm(op, text, "~{memory}", [])
        _erase(op)

    def lower_wgmma(self, op: Operation) -> None:
        if isinstance(op, sched.WgmmaFenceOp):
            self.replace(op, [nvvm.WgmmaFenceAlignedOp()])
        elif isinstance(op, sched.WgmmaCommitGroupOp):
            self.replace(op, [nvvm.WgmmaGroupSyncAlignedOp()])
        elif isinstance(op, sched.WgmmaDescOp):
            addr = self.smem_u32(op, op.buffer, op.indices)
            a64 = self.b.before(op, arith.ExtUIOp(addr, i64))
            lo = self.b.before(op, arith.ShRUIOp(self.b.before(op, arith.AndIOp(a64, self.b.const(0x3FFFF, i64))),
                                                 self.b.const(4, i64)))
            layout = {128: 1, 64: 2, 32: 3, 0: 0}[op.swizzle.value.data]
            hi = ((op.lbo.value.data >> 4) << 16) | ((op.sbo.value.data >> 4) << 32) | (layout << 62)
            if hi >= 1 << 63:
                hi -= 1 << 64
            self.replace(op, [arith.OrIOp(lo, self.b.const(hi, i64))])
        elif isinstance(op, sched.WgmmaMmaAsyncOp):
            n = op.n.value.data
            nacc = n // 2
            accs = self.unpack(op, op.acc)
            ta = 1 if op.trans_a is not None else 0
            tb = 1 if op.trans_b is not None else 0
            regs = ", ".join(f"${i}" for i in range(nacc))
            text = ("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                    f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{op.ab_type.data}.{op.ab_type.data} "
                    f"{{{regs}}}, ${nacc}, ${nacc + 1}, p, 1, 1, {ta}, {tb};\n}}")
            cons = ",".join(["=f"] * nacc + ["l", "l"] + [str(i) for i in range(nacc)])
            st = llvm.LLVMStructType.from_type_list([Float32Type()] * nacc)
            res = self.asm(op, text, cons, [op.desc_a, op.desc_b, *accs], st)
            vec = self.pack(op, res, 0, op.acc.type)
            op.result.replace_all_uses_with(vec)
            _erase(op)
        else:
            assert isinstance(op, sched.WgmmaWaitGroupOp)
            parent = op.parent_block()
            parent.insert_op_before(nvvm.WgmmaWaitGroupSyncOp(op.pending.value.data), op)
            if op.values:
                scalars = [x for v in op.values for x in self.unpack(op, v)]
                total = len(scalars)
                st = llvm.LLVMStructType.from_type_list([Float32Type()] * total)
                cons = ",".join(["=f"] * total + [str(i) for i in range(total)])
                res = self.asm(op, "// wgmma.wait_group: accumulators ready", cons, scalars, st)
                start = 0
                for r, v in zip(op.outs, op.values):
                    vec = self.pack(op, res, start, v.type)
                    start += v.type.get_shape()[0]
                    r.replace_all_uses_with(vec)
            _erase(op)


_BUFFER_USERS = (sched.LoadOp, sched.StoreOp, sched.MBarrierInitOp, sched.MBarrierArriveOp,
                 sched.MBarrierArriveExpectTxOp, sched.MBarrierWaitOp, sched.TmaLoadOp, sched.TmaStoreOp,
                 sched.WgmmaDescOp, sched.MBarrierArriveClusterOp)

_HOPPER_LOWERINGS = {
    sched.MBarrierInitOp: _KernelLowering.lower_mbarrier,
    sched.MBarrierArriveOp: _KernelLowering.lower_mbarrier,
    sched.MBarrierArriveExpectTxOp: _KernelLowering.lower_mbarrier,
    sched.MBarrierWaitOp: _KernelLowering.lower_mbarrier,
    sched.TmaLoadOp: _KernelLowering.lower_tma,
    sched.TmaStoreOp: _KernelLowering.lower_tma,
    sched.BulkCommitGroupOp: _KernelLowering.lower_simple_asm,
    sched.BulkWaitGroupOp: _KernelLowering.lower_simple_asm,
    sched.FenceProxyAsyncOp: _KernelLowering.lower_simple_asm,
    sched.SetMaxNRegOp: _KernelLowering.lower_simple_asm,
    sched.NamedBarrierOp: _KernelLowering.lower_simple_asm,
    sched.WgmmaFenceOp: _KernelLowering.lower_wgmma,
    sched.WgmmaCommitGroupOp: _KernelLowering.lower_wgmma,
    sched.WgmmaDescOp: _KernelLowering.lower_wgmma,
    sched.WgmmaMmaAsyncOp: _KernelLowering.lower_wgmma,
    sched.WgmmaWaitGroupOp: _KernelLowering.lower_wgmma,
    sched.ClusterBarrierOp: _KernelLowering.lower_cluster,
    sched.FenceMBarrierInitOp: _KernelLowering.lower_cluster,
    sched.MBarrierArriveClusterOp: _KernelLowering.lower_cluster,
}


# ------------------------------------------------------------------------------------------
# host
# ------------------------------------------------------------------------------------------


def _zero(t: Attribute) -> arith.ConstantOp:
    if isinstance(t, AnyFloat):
        return arith.ConstantOp(FloatAttr(0.0, t))
    if isinstance(t, IntegerType | IndexType):
        return arith.ConstantOp(IntegerAttr(0, t))
    raise SchedToNVVMError(f"cannot zero-initialise a workspace of element type {t}")


def _lower_host(fn: func.FuncOp, kernels: dict[str, sched.KernelOp], gpu_module: str | None) -> None:
    entry = fn.body.blocks[0] if fn.body.blocks else None
    if entry is None:
        return
    b = _Builder(entry)
    fname = fn.sym_name.data
    workspaces: list[tuple[SSAValue, Block]] = []
    for op in list(fn.walk()):
        if isinstance(op, sched.WorkspaceOp):
            t = op.result.type
            new: list[Operation] = [gpu.AllocOp(t)]
            if op.zero_init is not None:
                zero = _zero(t.element_type)
                new += [zero, MemsetOp(new[0], zero)]
            block = op.parent_block()
            assert block is not None
            for n in new:
                block.insert_op_before(n, op)
            op.result.replace_all_uses_with(new[0].results[0])
            _erase(op)
            workspaces.append((new[0].results[0], block))
        elif isinstance(op, sched.LaunchOp):
            kname = op.kernel.root_reference.data
            k = kernels.get(kname)
            where = f"'sched.launch'{_where(op)} in @{fname}"
            if k is None or gpu_module is None:
                raise SchedToNVVMError(f"{where}: no sched.kernel @{kname} in this module")
            want = list(k.function_type.inputs.data)
            got = [a.type for a in op.args]
            if want != got:
                raise SchedToNVVMError(f"{where}: arguments ({', '.join(map(str, got))}) "
                                       f"do not match @{kname}'s ({', '.join(map(str, want))})")
            cluster = [b.const(c) for c in k.cluster.get_values()] if k.cluster is not None else None
            launch = gpu.LaunchFuncOp(
                SymbolRefAttr(gpu_module, [kname]),
                [b.const(g) for g in k.grid_dims],
                [b.const(t) for t in k.block_dims],
                clusterSize=cluster,
                kernelOperands=list(op.args),
                dynamicSharedMemorySize=b.const(k.smem.value.data, i32),
            )
            _KernelLowering.replace(op, [launch])
        elif isinstance(op, sched.TensorMapOp):
            pass  # a host-side op the runtime executes (cuTensorMapEncodeTiled), kept as is
        elif op.dialect_name() == "sched":
            raise SchedToNVVMError(f"cannot lower '{op.name}'{_where(op)} in host function @{fname}")
    for ws, block in workspaces:
        term = block.last_op
        if term is None or not term.has_trait(IsTerminator):
            block.add_op(gpu.DeallocOp(ws))
        else:
            block.insert_op_before(gpu.DeallocOp(ws), term)


# ------------------------------------------------------------------------------------------
# the pass
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvertSchedToNVVM(ModulePass):
    """Lower sched kernels to llvm/nvvm inside a gpu.module and the host function to gpu ops."""

    name = "convert-sched-to-nvvm"

    index_bitwidth: int = 64
    """Width of the integer offsets fed to llvm.getelementptr (64, or 32 when buffers are < 2 GiB)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.index_bitwidth not in (32, 64):
            raise SchedToNVVMError(f"index-bitwidth must be 32 or 64, got {self.index_bitwidth}")
        kernels = [o for o in op.ops if isinstance(o, sched.KernelOp)]
        for o in op.walk():
            if isinstance(o, sched.KernelOp) and o.parent_op() is not op:
                raise SchedToNVVMError(f"'sched.kernel' @{o.sym_name.data}{_where(o)} must be at module level")
        hosts = [o for o in op.ops if isinstance(o, func.FuncOp)]
        launching = [h for h in hosts if any(isinstance(x, sched.LaunchOp) for x in h.walk())]

        gpu_name = None
        if kernels:
            gpu_name = f"{launching[0].sym_name.data}_kernels" if len(launching) == 1 else "kernels"
            taken = {o.sym_name.data for o in op.ops if isinstance(getattr(o, "sym_name", None), StringAttr)}
            base, n = gpu_name, 0
            while gpu_name in taken:
                n += 1
                gpu_name = f"{base}_{n}"

        for k in kernels:  # the wgmma read-after-write syncs are sched-flush-wgmma's to place
            readers = inflight_readers(k)
            if readers:
                r = readers[0]
                raise SchedToNVVMError(f"'sched.kernel' @{k.sym_name.data}: '{r.name}'{_where(r)} reads a "
                                       f"'sched.wgmma.mma_async' result before any 'sched.wgmma.wait_group 0'; "
                                       f"run sched-flush-wgmma before convert-sched-to-nvvm")
        castui = ctx.get_optional_op("arith.index_castui")
        by_name = {k.sym_name.data: k for k in kernels}
        for h in hosts:
            _lower_host(h, by_name, gpu_name)

        if not kernels:
            return
        contents: list[Operation] = []
        globals_: list[Operation] = []
        for k in kernels:
            fn, gl = _KernelLowering(k, self.index_bitwidth, castui).run()
            globals_ += gl
            contents.append(fn)
            k.detach()
            k.erase(safe_erase=False)
        gmod = gpu.ModuleOp(StringAttr(gpu_name), Region(Block([*globals_, *contents])))  # type: ignore[arg-type]
        op.body.block.add_op(gmod)
        op.attributes["gpu.container_module"] = UnitAttr()


__all__ = ["ConvertSchedToNVVM", "MemsetOp", "SchedToNVVMError", "element_bytes"]
