"""Module assembly: each `gpu.module` becomes one LLVM module (triple `nvptx64-nvidia-cuda`).

`ModuleTranslator` collects a module's globals, function definitions (bodies by
FunctionTranslator), math helpers (libm.py), intrinsic declarations, attribute groups and
metadata, and prints them in that order. Kernels (`nvvm.kernel`) get LLVM 22's `ptx_kernel`
calling convention, and launch bounds become string function attributes
(`"nvvm.maxntid"="256,1,1"`; LLVM 22 reads these instead of `!nvvm.annotations`).

The nvvm ops without an LLVM intrinsic are not translated here: `convert-nvvm-to-llvm`
(lowering/conversion/nvvm_to_llvm.py) turns them into `llvm.inline_asm` first.

Entry points: `translate_gpu_module`, `gpu_modules_to_llvm_ir`, `module_to_llvm_ir`,
`find_gpu_modules`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FileLineColLoc,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.dialects.llvm import LLVMFunctionType
from xdsl.ir import Attribute, Operation

from fuser.dialects.sched.core import PTX_IDENTIFIER

from .common import TranslationError, int_prop, op_name, prop
from .emitter import Emitter
from .function import FunctionTranslator
from .libm import MATH_HELPERS, MATH_HELPERS2
from .math_f64 import MATH_F64, MATH_F64_2
from .llvm_types import constant_literal, llvm_type

TRIPLE = "nvptx64-nvidia-cuda"

# Kernel attributes (upstream MLIR name -> the string function attribute LLVM 22's NVPTX backend
# reads; e.g. "nvvm.cluster_dim"="2,1,1" gives .explicitcluster / .reqnctapercluster 2, 1, 1).
_LAUNCH_BOUNDS = {
    "nvvm.maxntid": "nvvm.maxntid",
    "nvvm.reqntid": "nvvm.reqntid",
    "nvvm.minctasm": "nvvm.minctasm",
    "nvvm.maxnreg": "nvvm.maxnreg",
    "nvvm.cluster_dim": "nvvm.cluster_dim",
    "nvvm.cluster_max_blocks": "nvvm.maxclusterrank",
}


class ModuleTranslator:
    def __init__(self, name: str):
        self.name = name
        self.globals: list[str] = []
        self.functions: list[str] = []
        self.declarations: dict[str, str] = {}
        self.helpers: dict[str, str] = {}
        self.helper_globals: dict[str, str] = {}
        self.attribute_groups: list[str] = []
        self.metadata_nodes: dict[str, str] = {}
        self.compile_unit = ""  # the DICompileUnit, made with the first subprogram

    # --- debug locations: `.loc` / `.file` directives only (no DWARF sections, no `debug` target) ---
    def subprogram(self, func: Operation, name: str) -> str:
        """The `DISubprogram` of a function whose op has a file location, or ""."""
        loc = func.location
        if not isinstance(loc, FileLineColLoc):
            return ""
        file = self._file(loc)
        if not self.compile_unit:
            self.compile_unit = self.metadata(
                f'distinct !DICompileUnit(language: DW_LANG_C, file: {file}, producer: "fuser", isOptimized: true, '
                f"runtimeVersion: 0, emissionKind: DebugDirectivesOnly)")
        return self.metadata(
            f'distinct !DISubprogram(name: "{name}", scope: {file}, file: {file}, line: {loc.line.data}, '
            f"type: {self.metadata('!DISubroutineType(types: !{})')}, scopeLine: {loc.line.data}, "
            f"spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: {self.compile_unit})")

    def debug_location(self, op: Operation, scope: str) -> str:
        """The `DILocation` of `op` in `scope` (a subprogram), or "" where either is missing."""
        loc = op.location
        if not scope or not isinstance(loc, FileLineColLoc):
            return ""
        return self.metadata(f"!DILocation(line: {loc.line.data}, column: {loc.column.data}, scope: {scope})")

    def _file(self, loc: FileLineColLoc) -> str:
        directory, _, base = loc.filename.data.rpartition("/")
        return self.metadata(f'!DIFile(filename: "{_escape(base)}", directory: "{_escape(directory)}")')

    def declare(self, fn: str, ret: str, arg_types: Sequence[str]) -> None:
        self.declarations.setdefault(fn, f"declare {ret} @{fn}({', '.join(arg_types)})")

    def metadata(self, node: str) -> str:
        """The name (`!0`, `!1`, ...) of a metadata node, added on first use."""
        if node not in self.metadata_nodes:
            self.metadata_nodes[node] = f"!{len(self.metadata_nodes)}"
        return self.metadata_nodes[node]

    def helper(self, math_op: str) -> str:
        """Define (once) the f32 helper for a math op (of one operand, or two: MATH_HELPERS2);
        return its name."""
        return self._math_helper(f"__fuser_{math_op.split('.')[-1]}f", "float", math_op, MATH_HELPERS, MATH_HELPERS2)

    def helper_f64(self, math_op: str) -> str:
        """Define (once) the f64 helper for a math op (math_f64.py: MATH_F64, or MATH_F64_2 for
        two operands); return its name."""
        return self._math_helper(f"__fuser_{math_op.split('.')[-1]}", "double", math_op, MATH_F64, MATH_F64_2)

    def _math_helper(self, fn: str, ty: str, math_op: str, unary: dict, binary: dict) -> str:
        if fn not in self.helpers:
            e = Emitter(self, fn)
            e.start_block("entry")
            params = ["%a", "%b"] if math_op in binary else ["%x"]
            body = (binary if math_op in binary else unary)[math_op](e, *params)
            e.emit(f"ret {ty} {body}")
            body = "\n".join(e.lines)
            self.helpers[fn] = (
                f"define internal {ty} @{fn}({', '.join(f'{ty} ' + p for p in params)}) "
                f"#{self.attr_group('alwaysinline')} {{\n{body}\n}}"
            )
        return fn

    def define_global(self, name: str, text: str) -> None:
        """Add the module-level definition `text` of global @name once (a helper's constant table)."""
        if name not in self.helper_globals:
            self.helper_globals[name] = text
            self.globals.append(text)

    def attr_group(self, text: str) -> int:
        """The number of the attribute group `text`, added on first use."""
        if text not in self.attribute_groups:
            self.attribute_groups.append(text)
        return self.attribute_groups.index(text)

    def add_global(self, op: Operation) -> None:
        name = prop(op, "sym_name").data
        ty = llvm_type(prop(op, "global_type"))
        linkage_attr = prop(op, "linkage")
        linkage = linkage_attr.linkage.data if linkage_attr is not None else "external"
        space = int_prop(op, "addr_space") or 0
        value = prop(op, "value")
        kind = "constant" if prop(op, "constant") is not None else "global"
        parts = [f"@{name} ="]
        if linkage != "external" or value is None:
            parts.append(linkage)
        if space:
            parts.append(f"addrspace({space})")
        parts.append(f"{kind} {ty}")
        if value is not None and space == 3:
            raise TranslationError(f"shared-memory global @{name} cannot have an initializer")
        if value is not None:
            parts.append(constant_literal(value, prop(op, "global_type")))
        elif linkage != "external":
            parts.append("undef")  # shared memory has no initializer
        text = " ".join(parts)
        align = int_prop(op, "alignment")
        if align:
            text += f", align {align}"
        self.globals.append(text)

    def add_function(self, op: Operation) -> None:
        name = prop(op, "sym_name").data
        ftype = prop(op, "function_type")
        if not isinstance(ftype, LLVMFunctionType):
            raise TranslationError(f"llvm.func @{name}: missing function_type")
        if not PTX_IDENTIFIER.fullmatch(name):  # NVPTX would abort the process on it
            raise TranslationError(f'llvm.func @"{name}": a function name must be a PTX identifier (letters, digits, '
                                   f"'_', '$'; not starting with a digit)")
        ret = llvm_type(ftype.output)
        cconv = prop(op, "CConv")
        cconv_name = getattr(cconv, "cconv_name", "ccc")
        kernel = "nvvm.kernel" in op.attributes or cconv_name == "ptx_kernel"
        arg_attrs = prop(op, "arg_attrs")
        params = []
        for i, t in enumerate(ftype.inputs.data):
            text = llvm_type(t)
            if isinstance(arg_attrs, ArrayAttr) and i < len(arg_attrs.data):
                text += _param_attrs(arg_attrs.data[i])
            params.append(text)
        linkage_attr = prop(op, "linkage")
        linkage = linkage_attr.linkage.data if linkage_attr is not None else "external"
        if not op.regions[0].blocks:
            self.declare(name, ret, [llvm_type(t) for t in ftype.inputs.data])
            return
        fn_attrs = []
        for key, llvm_key in _LAUNCH_BOUNDS.items():
            attr = op.attributes.get(key)
            if attr is None:
                continue
            if isinstance(attr, DenseArrayBase):
                values = ",".join(str(v) for v in attr.iter_values())
            elif isinstance(attr, IntegerAttr):
                values = str(attr.value.data)
            else:
                raise TranslationError(f"llvm.func @{name}: cannot translate {key} = {attr}")
            fn_attrs.append(f'"{llvm_key}"="{values}"')
        head = "define "
        if linkage != "external":
            head += f"{linkage} "
        if kernel:
            head += "ptx_kernel "
        elif cconv_name != "ccc":
            head += f"{cconv_name} "
        head += f"{ret} @{name}(" + ", ".join(f"{p} %arg{i}" for i, p in enumerate(params)) + ")"
        if fn_attrs:
            head += f" #{self.attr_group(' '.join(fn_attrs))}"
        ft = FunctionTranslator(self, op, name)
        if ft.subprogram:
            head += f" !dbg {ft.subprogram}"
        lines = ft.translate()
        self.functions.append(head + " {\n" + "\n".join(lines) + "\n}")

    def text(self) -> str:
        parts = [f"; ModuleID = '{self.name}'", f'target triple = "{TRIPLE}"', ""]
        if self.globals:
            parts += self.globals + [""]
        for chunk in (self.functions, list(self.helpers.values())):
            for f in chunk:
                parts += [f, ""]
        parts += sorted(self.declarations.values())
        if self.attribute_groups:
            parts.append("")
            parts += [f"attributes #{i} = {{ {a} }}" for i, a in enumerate(self.attribute_groups)]
        if self.compile_unit:
            flags = self.metadata('!{i32 2, !"Debug Info Version", i32 3}')
            parts += ["", f"!llvm.dbg.cu = !{{{self.compile_unit}}}", f"!llvm.module.flags = !{{{flags}}}"]
        if self.metadata_nodes:
            parts.append("")
            parts += [f"{n} = {node}" for node, n in self.metadata_nodes.items()]
        return "\n".join(parts) + "\n"


def _escape(text: str) -> str:
    """A string as an LLVM metadata string literal's body (`"` and `\\` and non-printables as \\XX)."""
    return "".join(c if c.isprintable() and c not in '"\\' else "".join(f"\\{b:02X}" for b in c.encode())
                   for c in text)


def _param_attrs(attrs: Attribute) -> str:
    """LLVM parameter attributes from an `arg_attrs` entry (`llvm.noalias`, `llvm.align = 16`)."""
    if not isinstance(attrs, DictionaryAttr):
        return ""
    out = []
    for key, value in attrs.data.items():
        if key == "nvvm.grid_constant":
            out.append('"nvvm.grid_constant"')  # LLVM 22 NVPTX: param attribute
            continue
        if key == "llvm.byval":
            out.append(f"byval({llvm_type(value)})")
            continue
        if not key.startswith("llvm."):
            continue
        name = key.removeprefix("llvm.")
        if isinstance(value, UnitAttr):
            out.append(name)
        elif isinstance(value, IntegerAttr):
            out.append(f"{name}({value.value.data})" if name != "align" else f"align {value.value.data}")
    return "".join(" " + a for a in out)


def translate_gpu_module(gpu_module: Operation) -> str:
    """LLVM IR text for one `gpu.module` (or any op whose single-block region holds
    `llvm.func` / `llvm.mlir.global` ops). The nvvm ops that LLVM has no intrinsic for are first
    rewritten to inline PTX by `convert-nvvm-to-llvm`, on a copy (the caller's IR is kept)."""
    from fuser.lowering.conversion.nvvm_to_llvm import lower_nvvm_to_llvm, needs_lowering

    if needs_lowering(gpu_module):
        gpu_module = gpu_module.clone()
        lower_nvvm_to_llvm(gpu_module)
    name = prop(gpu_module, "sym_name")
    name_text = name.data if isinstance(name, StringAttr) else op_name(gpu_module)
    if len(gpu_module.regions) != 1 or len(gpu_module.regions[0].blocks) != 1:
        raise TranslationError(f"'{op_name(gpu_module)}' @{name_text} must have one single-block region")
    t = ModuleTranslator(name_text)
    for op in gpu_module.regions[0].blocks.first.ops:
        if op_name(op) == "llvm.mlir.global":
            t.add_global(op)
    for op in gpu_module.regions[0].blocks.first.ops:
        if op_name(op) == "llvm.func":
            t.add_function(op)
        elif op_name(op) not in ("llvm.mlir.global", "gpu.module_end"):
            raise TranslationError(f"cannot translate '{op_name(op)}' (in gpu.module @{name_text})")
    return t.text()


def find_gpu_modules(module: Operation) -> list[Operation]:
    """The `gpu.module` ops directly inside `module` (a builtin.module)."""
    if op_name(module) == "gpu.module":
        return [module]
    if not module.regions:
        return []
    return [op for op in module.regions[0].blocks.first.ops if op_name(op) == "gpu.module"]


def gpu_modules_to_llvm_ir(module: ModuleOp | Operation) -> dict[str, str]:
    """{gpu.module name: LLVM IR text} for every gpu.module in `module`. A module holding
    `llvm.func`s directly (no gpu.module) is translated as one unit named after itself."""
    gpu_modules = find_gpu_modules(module)
    if not gpu_modules:
        has_funcs = module.regions and any(
            op_name(op) == "llvm.func" for op in module.regions[0].blocks.first.ops
        )
        if not has_funcs:
            raise TranslationError("no gpu.module (and no llvm.func) to translate")
        ops = list(module.regions[0].blocks.first.ops)
        unsupported = [op_name(op) for op in ops if op_name(op) not in ("llvm.func", "llvm.mlir.global")]
        if unsupported:
            raise TranslationError(f"cannot translate '{unsupported[0]}' (in the top-level module)")
        return {"module": translate_gpu_module(module)}
    out = {}
    for g in gpu_modules:
        out[prop(g, "sym_name").data] = translate_gpu_module(g)
    return out


def module_to_llvm_ir(module: ModuleOp | Operation) -> str:
    """LLVM IR text of every gpu.module in `module`, one after another (each starts with its own
    `; ModuleID = '<name>'` line; with several gpu.modules the text is for reading, not parsing)."""
    return "\n".join(gpu_modules_to_llvm_ir(module).values())
