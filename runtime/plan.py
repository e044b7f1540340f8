"""The host program of a compiled fusion: buffers, workspaces and kernel launches.

:func:`extract_program` reads the host ``func.func`` of an nvvm-level module (see
docs/ir-levels.md) into a plain :class:`Program` the executor can run and the disk
cache can store as JSON. It accepts exactly the ops documented for that level and
names anything else in its error.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Union

from fuser.dialects.host_attrs import CORESIDENT_ATTR, DEPENDENT_LAUNCH_ATTR, KEPT_ZERO_ATTR

__all__ = ["DTYPES", "BufferSpec", "WorkspaceSpec", "TensorMapSpec", "LaunchStep", "Program", "ArgRef",
           "ProgramError", "extract_program", "tensor_type_str"]

# dtype name -> bytes per element (i1 is stored as one byte, like numpy's bool)
DTYPES: dict[str, int] = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8,
                          "u8": 1, "f8e4m3fn": 1, "f8e5m2": 1}


class ProgramError(ValueError):
    """The host function is not something the runtime can execute."""


def tensor_type_str(shape: tuple[int, ...], dtype: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


@dataclass(frozen=True)
class BufferSpec:
    """An input or output buffer. `shape` is the buffer's own (what the kernels index); a
    declared layout (issue 32, dialects/fusion/layout.py) adds the user's view of it: an input
    read in place through `strides` (elements, 0 allowed) from `offset` elements into its
    1-D storage buffer, an output stored in dim order `order` (outermost first); `view` is then
    the array's shape, which the user passes or gets back. `alias` (outputs only): the input
    whose buffer the kernels write this output into (an in-place output, `fusion.alias`): the
    executor allocates nothing for it and returns that input's array, updated."""
    name: str
    shape: tuple[int, ...]
    dtype: str
    view: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None
    offset: int = 0
    order: tuple[int, ...] | None = None
    alias: int | None = None

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPES[self.dtype]

    @property
    def user_shape(self) -> tuple[int, ...]:
        """The shape of the array the user passes or gets back."""
        return self.shape if self.view is None else self.view

    @property
    def plain(self) -> bool:
        """No declared layout: a dense row-major array of `shape`."""
        return self.view is None

    def layout_str(self) -> str:
        if self.strides is not None:
            return f"strides {self.strides} offset {self.offset}"
        if self.order is not None:
            return f"stride order {self.order}"
        return "row-major"

    def to_list(self) -> list:
        base = [self.name, list(self.shape), self.dtype]
        if self.plain and self.alias is None:
            return base
        lay = {} if self.plain else {
            "view": list(self.view), "strides": None if self.strides is None else list(self.strides),
            "offset": self.offset, "order": None if self.order is None else list(self.order)}
        if self.alias is not None:
            lay["alias"] = self.alias
        return base + [lay]

    @classmethod
    def from_list(cls, d: list) -> "BufferSpec":
        name, shape, dtype, *rest = d
        if not rest:
            return cls(name, tuple(shape), dtype)
        lay = rest[0]
        alias = None if lay.get("alias") is None else int(lay["alias"])
        if "view" not in lay:
            return cls(name, tuple(shape), dtype, alias=alias)
        return cls(name, tuple(shape), dtype, tuple(lay["view"]),
                   None if lay["strides"] is None else tuple(lay["strides"]), int(lay["offset"]),
                   None if lay["order"] is None else tuple(lay["order"]), alias)


@dataclass(frozen=True)
class WorkspaceSpec:
    """A buffer the executor owns. `zero_init`: zeroed before every call. `kept_zero`: zeroed once,
    when allocated; its kernels leave it zero again (a `fuser.kept_zero` gpu.alloc)."""
    shape: tuple[int, ...]
    dtype: str
    zero_init: bool = False
    kept_zero: bool = False

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPES[self.dtype]


@dataclass(frozen=True)
class TensorMapSpec:
    """A TMA descriptor (CUtensorMap) the executor encodes for a buffer at call time
    (`nvgpu.tma.create.descriptor` in the host function): `source` is ("in"|"out"|"ws", i); `box` is in
    the buffer's dimension order (outermost first); `swizzle` is 0, 32, 64 or 128 bytes."""
    source: tuple[str, int]
    shape: tuple[int, ...]
    dtype: str
    box: tuple[int, ...]
    swizzle: int


# A kernel argument: ("in", i) | ("out", i) | ("ws", i) name a buffer; ("tmap", i) a tensor
# map passed by value (128 bytes); ("const", dtype, value) is a by-value scalar taken from an
# arith.constant.
ArgRef = Union[tuple[str, int], tuple[str, str, Any]]


@dataclass(frozen=True)
class LaunchStep:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    args: tuple[ArgRef, ...]
    cluster: tuple[int, int, int] | None = None
    # Its CTAs wait on one another (serial split-K on a persistent grid): the grid must fit on
    # the GPU at once, which the executor checks (`fuser.coresident` on the gpu.launch_func).
    coresident: bool = False
    # It may start while the kernel launched before it still runs (programmatic dependent
    # launch: `fuser.dependent_launch` on the gpu.launch_func; the kernel waits in
    # griddepcontrol.wait before it touches memory).
    dependent: bool = False


@dataclass
class Program:
    name: str
    inputs: list[BufferSpec]
    outputs: list[BufferSpec]
    workspaces: list[WorkspaceSpec]
    launches: list[LaunchStep]
    ptx: str
    arch: str
    zero_outputs: tuple[int, ...] = field(default=())  # outputs a gpu.memset zeroes first
    tensor_maps: list[TensorMapSpec] = field(default_factory=list)

    def to_json(self, include_ptx: bool = True) -> str:
        d = {
            "format": 1, "name": self.name, "arch": self.arch,
            "inputs": [b.to_list() for b in self.inputs],
            "outputs": [b.to_list() for b in self.outputs],
            "workspaces": [[list(w.shape), w.dtype, w.zero_init, w.kept_zero] for w in self.workspaces],
            "launches": [{"kernel": s.kernel, "grid": list(s.grid), "block": list(s.block),
                          "smem": s.smem, "args": [list(a) for a in s.args],
                          "cluster": None if s.cluster is None else list(s.cluster),
                          "coresident": s.coresident, "dependent": s.dependent}
                         for s in self.launches],
            "zero_outputs": list(self.zero_outputs),
            "tensor_maps": [[list(t.source), list(t.shape), t.dtype, list(t.box), t.swizzle] for t in self.tensor_maps],
        }
        if include_ptx:
            d["ptx"] = self.ptx
        return json.dumps(d, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, ptx: str | None = None) -> "Program":
        d = json.loads(text)
        if d.get("format") != 1:
            raise ProgramError(f"unknown program format {d.get('format')!r}")
        if ptx is None:
            ptx = d["ptx"]
        return cls(
            name=d["name"],
            inputs=[BufferSpec.from_list(b) for b in d["inputs"]],
            outputs=[BufferSpec.from_list(b) for b in d["outputs"]],
            workspaces=[_workspace_from_json(w) for w in d["workspaces"]],
            launches=[LaunchStep(s["kernel"], tuple(s["grid"]), tuple(s["block"]), int(s["smem"]),
                                 tuple(tuple(a) for a in s["args"]),
                                 None if s.get("cluster") is None else tuple(s["cluster"]),
                                 bool(s.get("coresident", False)), bool(s.get("dependent", False)))
                      for s in d["launches"]],
            ptx=ptx, arch=d["arch"], zero_outputs=tuple(d.get("zero_outputs", ())),
            tensor_maps=[TensorMapSpec((src[0], int(src[1])), tuple(sh), dt, tuple(bx), int(sw))
                         for src, sh, dt, bx, sw in d.get("tensor_maps", [])])


def _workspace_from_json(w: list) -> WorkspaceSpec:
    # [shape, dtype, zero_init] before kept_zero existed, [shape, dtype, zero_init, kept_zero] since
    shape, dtype, zero_init, *rest = w
    return WorkspaceSpec(tuple(shape), dtype, bool(zero_init), bool(rest[0]) if rest else False)


# --------------------------------------------------------------------- extraction


def _dtype_of(t: Any) -> str | None:
    from xdsl.dialects import builtin as b
    if isinstance(t, b.Float32Type):
        return "f32"
    if isinstance(t, b.Float16Type):
        return "f16"
    if isinstance(t, b.BFloat16Type):
        return "bf16"
    if isinstance(t, b.Float64Type):
        return "f64"
    if isinstance(t, b.Float8E4M3FNType):
        return "f8e4m3fn"
    if isinstance(t, b.Float8E5M2Type):
        return "f8e5m2"
    if isinstance(t, b.IntegerType) and t.signedness.data == b.Signedness.UNSIGNED:
        return "u8" if t.width.data == 8 else None
    if isinstance(t, b.IntegerType) and t.width.data in (1, 8, 16, 32, 64):
        return f"i{t.width.data}"
    return None


def _memref_spec(t: Any, what: str) -> tuple[tuple[int, ...], str]:
    from xdsl.dialects import builtin as b
    if not isinstance(t, b.MemRefType):
        raise ProgramError(f"{what}: expected a memref, got {t}")
    dtype = _dtype_of(t.element_type)
    if dtype is None:
        raise ProgramError(f"{what}: unsupported element type {t.element_type} "
                           f"(supported: {', '.join(DTYPES)})")
    shape = tuple(int(d) for d in t.get_shape())
    if any(d < 0 for d in shape):
        raise ProgramError(f"{what}: dynamic shapes are not supported yet ({t})")
    if not isinstance(t.layout, b.NoneAttr):
        raise ProgramError(f"{what}: only identity-layout memrefs are supported ({t})")
    if not isinstance(t.memory_space, b.NoneAttr):
        raise ProgramError(f"{what}: only default-memory-space memrefs are supported ({t})")
    return shape, dtype


def _with_layout(spec: BufferSpec, host: Any, i: int, is_input: bool) -> BufferSpec:
    """`spec` with the layout the host function's argument i declares (its `fusion.view` and
    strides and offset, or stride order), checked against the buffer's shape."""
    from dataclasses import replace

    from fuser.dialects.fusion.layout import ALIAS, OFFSET, STRIDE_ORDER, STRIDES, VIEW, arg_attrs, dim_order, strided_span
    attrs = arg_attrs(host, i)
    if ALIAS in attrs:
        if is_input:
            raise ProgramError(f"@{host.sym_name.data} argument {i}: {ALIAS} on an input (it marks an output)")
        spec = replace(spec, alias=int(attrs[ALIAS].value.data))
    if VIEW not in attrs:
        if STRIDES in attrs or STRIDE_ORDER in attrs:
            raise ProgramError(f"@{host.sym_name.data} argument {i}: a layout without fusion.view (fusion-layouts "
                               "did not run)")
        return spec
    view = tuple(int(v) for v in attrs[VIEW].get_values())
    what = f"@{host.sym_name.data} argument {i} (%{spec.name})"
    if is_input:
        if STRIDES not in attrs:
            raise ProgramError(f"{what}: fusion.view without fusion.strides")
        strides = tuple(int(v) for v in attrs[STRIDES].get_values())
        offset = int(attrs[OFFSET].value.data) if OFFSET in attrs else 0
        if spec.shape != (strided_span(view, strides, offset),):
            raise ProgramError(f"{what}: buffer of shape {spec.shape} for a view {view} with strides {strides} "
                               f"offset {offset}")
        return replace(spec, view=view, strides=strides, offset=offset)
    stride_order = tuple(int(v) for v in attrs[STRIDE_ORDER].get_values()) if STRIDE_ORDER in attrs else None
    order = None if stride_order is None or sorted(stride_order) != list(range(len(view))) else dim_order(stride_order)
    if order is None or tuple(view[d] for d in order) != spec.shape:
        raise ProgramError(f"{what}: buffer of shape {spec.shape} is not the view {view} in stride order "
                           f"{None if stride_order is None else list(stride_order)}")
    return replace(spec, view=view, order=order)


def _find_host(module: Any, name: str | None) -> Any:
    from xdsl.dialects import func
    cands = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)
             and (name is None or op.sym_name.data == name)]
    tagged = [op for op in cands if "fuser.num_outputs" in op.attributes]
    if len(tagged) == 1:
        return tagged[0]
    if not tagged:
        what = f"named '{name}' " if name else ""
        raise ProgramError(f"no host func.func {what}with a 'fuser.num_outputs' attribute in the module")
    names = ", ".join(op.sym_name.data for op in tagged)
    raise ProgramError(f"several host functions ({names}); pass name=")


def _kernel_symbols(module: Any) -> dict[str, set[str]]:
    """gpu.module name -> symbols defined in it."""
    out: dict[str, set[str]] = {}
    for op in module.body.block.ops:
        if op.name == "gpu.module":
            syms = set()
            for inner in op.regions[0].block.ops if op.regions and op.regions[0].blocks else ():
                s = inner.properties.get("sym_name") or inner.attributes.get("sym_name")
                if s is not None:
                    syms.add(s.data)
            sym = op.properties.get("sym_name") or op.attributes.get("sym_name")
            out[sym.data] = syms
    return out


def _const_value(op: Any) -> tuple[Any, Any]:
    """(python value, type) of an arith.constant."""
    from xdsl.dialects import builtin as b
    attr = op.value
    if isinstance(attr, b.IntegerAttr):
        return attr.value.data, attr.type
    if isinstance(attr, b.FloatAttr):
        return attr.value.data, attr.type
    raise ProgramError(f"arith.constant with an unsupported value {attr}")


def _op_name(op: Any) -> str:
    """The op's name, also for ops parsed unregistered (xDSL has no gpu.memset)."""
    if op.name == "builtin.unregistered":
        return op.op_name.data
    return op.name


def _is_plus_zero(v: Any) -> bool:
    """A value whose bytes are all zero (so cuMemsetD8(0) produces it); -0.0 is not."""
    return v == 0 and math.copysign(1.0, float(v)) > 0


def _operand(op: Any, field_name: str) -> Any:
    v = getattr(op, field_name, None)
    if v is None and not hasattr(op, field_name):
        raise ProgramError(f"cannot read operand '{field_name}' of {op.name} ({type(op).__name__})")
    return v


_ENTRY_RE = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)")


def extract_program(module: Any, ptx: str, arch: str, name: str | None = None) -> Program:
    """Read the host func.func of an nvvm-level module into a Program."""
    host = _find_host(module, name)
    fname = host.sym_name.data
    nout_attr = host.attributes["fuser.num_outputs"]
    n_out = int(getattr(getattr(nout_attr, "value", None), "data", -1))
    args = host.body.blocks[0].args
    if not 0 <= n_out <= len(args):
        raise ProgramError(f"@{fname}: fuser.num_outputs = {nout_attr} but the function has {len(args)} arguments")
    n_in = len(args) - n_out

    refs: dict[Any, tuple] = {}
    inputs: list[BufferSpec] = []
    outputs: list[BufferSpec] = []
    for i, a in enumerate(args):
        nm = a.name_hint or f"arg{i}"
        shape, dtype = _memref_spec(a.type, f"@{fname} argument {i} (%{nm})")
        spec = _with_layout(BufferSpec(nm, shape, dtype), host, i, i < n_in)
        if i < n_in:
            refs[a] = ("in", len(inputs))
            inputs.append(spec)
        else:
            refs[a] = ("out", len(outputs))
            outputs.append(spec)
    for j, o in enumerate(outputs):
        if o.alias is not None and not (0 <= o.alias < n_in and (inputs[o.alias].shape, inputs[o.alias].dtype,
                                                                 inputs[o.alias].plain) == (o.shape, o.dtype, True)):
            raise ProgramError(f"@{fname} output {j} (%{o.name}): fusion.alias = {o.alias} names no dense input of "
                               f"its shape {o.shape} and type {o.dtype}")

    consts: dict[Any, tuple[Any, Any]] = {}
    workspaces: list[dict] = []
    launches: list[LaunchStep] = []
    zero_outputs: list[int] = []
    tensor_maps: list[TensorMapSpec] = []
    ranked: dict[Any, Any] = {}  # memref.cast result -> the ranked type it views
    used: set[tuple] = set()   # buffers some launch already read or wrote
    kernels = _kernel_symbols(module)
    entries = set(_ENTRY_RE.findall(ptx or ""))
    returned = False

    def const_int(v: Any, what: str, op: Any) -> int:
        if v not in consts:
            raise ProgramError(f"{op.name} @{fname}: {what} must come from an arith.constant")
        val, _ = consts[v]
        if not isinstance(val, int) or isinstance(val, bool):
            raise ProgramError(f"{op.name} @{fname}: {what} must be an integer constant, got {val!r}")
        return val

    for op in host.body.blocks[0].ops:
        opname = _op_name(op)
        if returned:
            raise ProgramError(f"@{fname}: op '{opname}' after func.return")
        if opname == "arith.constant":
            consts[op.results[0]] = _const_value(op)
        elif opname == "gpu.alloc":
            res = op.results[0]
            if len(op.operands):
                raise ProgramError(f"gpu.alloc in @{fname}: dynamic sizes and async dependencies are not supported")
            shape, dtype = _memref_spec(res.type, f"gpu.alloc in @{fname}")
            refs[res] = ("ws", len(workspaces))
            workspaces.append({"shape": shape, "dtype": dtype, "zero": False,
                               "kept_zero": KEPT_ZERO_ATTR in op.attributes})
        elif opname == "gpu.memset":
            if op.results:
                raise ProgramError(f"gpu.memset in @{fname}: async memset is not supported")
            # named operands when the op is registered, else (..., dst, value) like upstream
            dst = getattr(op, "dst", None)
            dst = op.operands[-2] if dst is None else dst
            val = getattr(op, "value", None)
            val = op.operands[-1] if val is None else val
            if val not in consts or not _is_plus_zero(consts[val][0]):
                raise ProgramError(f"gpu.memset in @{fname}: only a constant zero fill value is supported")
            ref = refs.get(dst)
            if ref is None or ref[0] == "in":
                raise ProgramError(f"gpu.memset in @{fname}: target must be a workspace (gpu.alloc) or an output")
            if ref in used:
                raise ProgramError(f"gpu.memset in @{fname}: zeroing a buffer after a launch used it is not supported")
            if ref[0] == "ws" and workspaces[ref[1]]["kept_zero"]:
                raise ProgramError(f"gpu.memset in @{fname}: workspace #{ref[1]} is {KEPT_ZERO_ATTR}, which the "
                                   f"executor zeroes once at allocation; a per-call memset contradicts it")
            if ref[0] == "ws":
                workspaces[ref[1]]["zero"] = True
            elif ref[1] not in zero_outputs:
                zero_outputs.append(ref[1])
        elif opname == "memref.cast":  # the unranked view a TMA descriptor is made from
            src = refs.get(op.operands[0])
            if src is None or src[0] not in ("in", "out", "ws"):
                raise ProgramError(f"memref.cast in @{fname}: operand must be an argument or a gpu.alloc buffer")
            refs[op.results[0]] = src
            ranked[op.results[0]] = op.operands[0].type
        elif opname == "nvgpu.tma.create.descriptor":
            src = refs.get(op.operands[0])
            if src is None or op.operands[0] not in ranked:
                raise ProgramError(f"nvgpu.tma.create.descriptor in @{fname}: operand must be a memref.cast of an "
                                   f"argument or a gpu.alloc buffer")
            shape, dtype = _memref_spec(ranked[op.operands[0]], f"nvgpu.tma.create.descriptor in @{fname}")
            t = op.results[0].type
            box = tuple(const_int(v, "a box dimension", op) for v in op.operands[1:])
            if list(box) != t.box_dims:
                raise ProgramError(f"nvgpu.tma.create.descriptor in @{fname}: box {list(box)} differs from its "
                                   f"descriptor type's {t.box_dims}")
            if (t.l2promo.data, t.oob.data, t.interleave.data) != ("l2promo_256b", "zero", "none"):
                raise ProgramError(f"nvgpu.tma.create.descriptor in @{fname}: the runtime makes descriptors with "
                                   f"l2promo_256b, oob = zero and no interleave, not {t}")
            refs[op.results[0]] = ("tmap", len(tensor_maps))
            tensor_maps.append(TensorMapSpec(src, shape, dtype, box, t.swizzle_bytes))
        elif opname == "gpu.launch_func":
            launches.append(_launch_step(op, fname, refs, consts, const_int, kernels, entries, used))
        elif opname == "gpu.dealloc":
            if refs.get(op.operands[-1], ("",))[0] != "ws":
                raise ProgramError(f"gpu.dealloc in @{fname}: operand is not a gpu.alloc workspace")
        elif opname == "func.return":
            if op.operands:
                raise ProgramError(f"func.return in @{fname}: the host function returns nothing "
                                   f"(outputs are arguments)")
            returned = True
        else:
            raise ProgramError(f"unsupported op '{opname}' in host function @{fname} "
                               f"(allowed: arith.constant, gpu.alloc, gpu.memset, memref.cast, nvgpu.tma.create.descriptor, "
                               f"gpu.launch_func, "
                               f"gpu.dealloc, func.return)")

    return Program(fname, inputs, outputs,
                   [WorkspaceSpec(w["shape"], w["dtype"], w["zero"], w["kept_zero"]) for w in workspaces],
                   launches, ptx, arch, tuple(zero_outputs), tensor_maps)


def _launch_step(op: Any, fname: str, refs: dict, consts: dict, const_int: Any,
                 kernels: dict[str, set[str]], entries: set[str], used: set) -> LaunchStep:
    if op.results or len(_operand(op, "asyncDependencies")):
        raise ProgramError(f"gpu.launch_func in @{fname}: async launches are not supported")
    sym = op.kernel
    root = sym.root_reference.data
    nested = [r.data for r in sym.nested_references.data]
    kernel = nested[-1] if nested else root
    if nested and root in kernels and kernel not in kernels[root]:
        raise ProgramError(f"gpu.launch_func in @{fname}: kernel @{kernel} is not defined in gpu.module @{root}")
    if entries and kernel not in entries:
        raise ProgramError(f"gpu.launch_func in @{fname}: kernel '{kernel}' is not an entry of the PTX "
                           f"(entries: {', '.join(sorted(entries))})")
    dims = {}
    for part in ("grid", "block", "cluster"):
        vals = [_operand(op, f"{part}Size{ax}") for ax in "XYZ"]
        if part == "cluster" and all(v is None for v in vals):
            dims[part] = None
            continue
        dims[part] = tuple(const_int(v, f"{part} size {ax}", op) for v, ax in zip(vals, "xyz"))
    smem_v = _operand(op, "dynamicSharedMemorySize")
    smem = 0 if smem_v is None else const_int(smem_v, "dynamic_shared_memory_size", op)

    args = []
    for k, v in enumerate(_operand(op, "kernelOperands")):
        if v in refs:
            args.append(refs[v])
            used.add(refs[v])
        elif v in consts:
            val, t = consts[v]
            from xdsl.dialects import builtin as b
            dtype = "i64" if isinstance(t, b.IndexType) else _dtype_of(t)
            if dtype is None:
                raise ProgramError(f"gpu.launch_func @{kernel} in @{fname}: scalar operand {k} has "
                                   f"unsupported type {t}")
            args.append(("const", dtype, val))
        else:
            owner = getattr(getattr(v, "owner", None), "name", "a block argument")
            raise ProgramError(f"gpu.launch_func @{kernel} in @{fname}: operand {k} comes from "
                               f"'{owner}', expected a function argument, a gpu.alloc or a constant")
    return LaunchStep(kernel, dims["grid"], dims["block"], smem, tuple(args), dims["cluster"],
                      CORESIDENT_ATTR in op.attributes, DEPENDENT_LAUNCH_ATTR in op.attributes)
