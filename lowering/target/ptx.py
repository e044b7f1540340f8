"""LLVM IR -> PTX (llvmlite's NVPTX backend) and PTX -> cubin (ptxas).

- `llvm_ir_to_ptx` parses and verifies the IR, runs LLVM's O3 pipeline (new pass manager) and
  emits PTX for sm_80 / sm_90 / sm_90a at PTX ISA 8.0 (`+ptx80`: the first version with sm_90a,
  and what the CUDA 13.0 driver and ptxas accept).
- A call to an unknown `llvm.*` intrinsic silently becomes an `.extern .func` in the PTX (then
  fails in ptxas with an obscure message), so `llvm_ir_to_ptx` rejects that up front.
- A kernel that uses an instruction the target lacks (wgmma on sm_90, TMA on sm_80, ...) is
  refused before LLVM sees it (lowering/target/llvmir/arch.py), with UnsupportedArchError naming the
  kernel and the instruction: LLVM would abort the process. For sm_80 and sm_90 the codegen also
  runs in a forked child, so that an abort the table did not foresee is a PtxError, not the end
  of the caller's process.
- `assemble_ptx` runs ptxas from the `nvidia-cuda-nvcc` wheel (site-packages/nvidia/cu13/bin),
  or from $PATH, and raises `PtxasError` with ptxas's message.

Entry points for tools: `module_to_llvm_ir(module, arch)`, `module_to_ptx(module, arch)`,
`gpu_modules_to_ptx(module, arch)` (a dict per gpu.module), `gpu_module_to_ptx(gpu_module_op, arch)`.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import llvmlite.binding as llvm

from fuser.lowering.target import llvmir
from fuser.lowering.target.llvmir import TRIPLE, gpu_modules_to_llvm_ir, translate_gpu_module
from fuser.lowering.target.llvmir.arch import (
    SUPPORTED_ARCHS,
    UnsupportedArchError,
    check_arch_name,
    check_llvm_ir_arch,
    passes_for_arch,
)

PTX_FEATURES = "+ptx80"


class PtxError(Exception):
    """LLVM rejected the IR or produced unusable PTX."""


class PtxasError(Exception):
    """ptxas is missing or rejected the PTX (the message holds ptxas's output)."""


@functools.cache
def _init_llvm() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


@functools.cache
def _target_machine(arch: str, opt_level: int) -> llvm.TargetMachine:
    _init_llvm()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=PTX_FEATURES, opt=opt_level)


# One compile at a time: llvmlite parses into LLVM's global context, which is not thread-safe,
# and a fork must not happen while another thread is inside LLVM (the child could wait forever
# on a lock that thread held).
_LLVM_LOCK = threading.Lock()
# Exit statuses of the codegen child (anything else, or a signal, is LLVM ending the process).
_CHILD_OK, _CHILD_PTX_ERROR = 0, 3


def llvm_ir_to_ptx(llvm_ir: str, arch: str = "sm_90a", opt_level: int = 3) -> str:
    """Compile LLVM IR text (triple nvptx64-nvidia-cuda) to PTX text."""
    check_llvm_ir_arch(llvm_ir, arch)
    with _LLVM_LOCK:
        _target_machine(arch, opt_level)  # made in this process, so that a codegen child finds it made
        # sm_90a, the default target that every test covers, compiles in-process: a fork costs
        # 20-100 ms here (more the larger the process). The others compile in a child, so that if
        # the arch table ever misses an instruction, LLVM's abort ends the child, not a notebook.
        if arch == "sm_90a" or not hasattr(os, "fork"):
            ptx = _codegen(llvm_ir, arch, opt_level)
        else:
            ptx = _codegen_in_child(llvm_ir, arch, opt_level)
    ptx = avoid_wrapping_neg_abs(ptx)
    unresolved = re.findall(r"^\.extern \.func.*?\b(llvm\.[\w.]+)", ptx, re.MULTILINE)
    if unresolved:
        raise PtxError(f"unknown LLVM intrinsic(s) {sorted(set(unresolved))} (not selectable by NVPTX)")
    return ptx


_NEG16 = re.compile(r"^(\s*)neg\.s16\s+(%\w+),\s*(%\w+);", re.MULTILINE)
_ABS = re.compile(r"^(\s*)abs\.s(16|32|64)\s+(%\w+),\s*(%\w+);", re.MULTILINE)


def avoid_wrapping_neg_abs(ptx: str) -> str:
    """Integer negation and absolute value as a complement and an add. On an H100 (ptxas of
    CUDA 13) `neg.s16` and `abs.s16` of -32768 left a value that a following `shr.s16` or the
    `mul.hi.s16` of a division read as +32768 (-(-32768) >> 3 gave 4096, remainder(-(-32768), -3)
    gave -1), while the same wrap through `add.s16` is read right; `abs.s32` of INT_MIN read by
    `rem.s32` gave the remainder of +2^31 (GPU fuzz seed 9920000), so abs is rewritten at every
    width (there, with the rewrite off, neg.s32 and neg.s64 read by shifts, divisions and
    remainders were right). LLVM forms neg and abs from any multiply by -1 or select of a
    negation, so the kernels' IR cannot avoid them."""
    ptx = _NEG16.sub(r"\1not.b16 \2, \3;\n\1add.s16 \2, \2, 1;", ptx)
    return _ABS.sub(r"\1{\n\1.reg .pred %abs_p;\n\1.reg .b\2 %abs_t;\n\1setp.lt.s\2 %abs_p, \4, 0;\n"
                    r"\1not.b\2 %abs_t, \4;\n\1add.s\2 %abs_t, %abs_t, 1;\n\1selp.b\2 \3, %abs_t, \4, %abs_p;\n\1}", ptx)


def _codegen(llvm_ir: str, arch: str, opt_level: int) -> str:
    """Parse, verify, optimize and emit PTX: the part of the compile where LLVM may abort."""
    tm = _target_machine(arch, opt_level)
    try:
        mod = llvm.parse_assembly(llvm_ir)
        mod.verify()
    except RuntimeError as err:
        raise PtxError(f"invalid LLVM IR: {err}") from err
    mod.triple = TRIPLE
    mod.data_layout = str(tm.target_data)
    if opt_level > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)


def _codegen_in_child(llvm_ir: str, arch: str, opt_level: int) -> str:
    """`_codegen` in a forked child that writes the PTX (or PtxError's message) to a file and
    leaves by os._exit (no atexit handlers, no flush of the parent's buffers). The child touches
    nothing but llvmlite, so a parent that has initialized CUDA is fine. LLVM's fatal errors go
    to stderr, which the child sends to a second file for the message."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the child
            status = _CHILD_PTX_ERROR
            try:
                os.dup2(err.fileno(), 2)
                try:
                    text, status = _codegen(llvm_ir, arch, opt_level), _CHILD_OK
                except PtxError as e:
                    text = str(e)
                except Exception as e:  # not expected: still a message, not a silent exit
                    text = f"{type(e).__name__}: {e}"
                out.write(text.encode())
                out.flush()
            finally:
                os._exit(status)
        try:
            _, wstatus = os.waitpid(pid, 0)
        except BaseException:  # e.g. KeyboardInterrupt: do not leave the child running
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        out.seek(0)
        text = out.read().decode()
        code = os.waitstatus_to_exitcode(wstatus)
        if code == _CHILD_OK:
            return text
        if code == _CHILD_PTX_ERROR and text:
            raise PtxError(text)
        err.seek(0)
        lines = [ln.strip() for ln in err.read().decode(errors="replace").splitlines() if ln.strip()]
        why = next((ln.removeprefix("LLVM ERROR:").strip() for ln in lines if ln.startswith("LLVM ERROR")),
                   lines[0] if lines else f"exit status {code}")
        raise PtxError(f"LLVM aborted while generating PTX for {arch}: {why}")


def module_to_llvm_ir(module, arch: str = "sm_90a") -> str:
    """LLVM IR of every gpu.module in `module` (what `fuser-opt -t llvm` prints). The IR does not
    depend on `arch`; it is checked for instructions `arch` lacks."""
    check_arch_name(arch)
    ir = llvmir.module_to_llvm_ir(module)
    check_llvm_ir_arch(ir, arch)
    return ir


def gpu_module_to_ptx(gpu_module_op, arch: str = "sm_90a", opt_level: int = 3) -> str:
    """PTX for one `gpu.module` op."""
    return llvm_ir_to_ptx(translate_gpu_module(gpu_module_op), arch, opt_level)


def gpu_modules_to_ptx(module, arch: str = "sm_90a", opt_level: int = 3) -> dict[str, str]:
    """{gpu.module name: PTX} for every gpu.module in a builtin.module."""
    return {
        name: llvm_ir_to_ptx(ir, arch, opt_level)
        for name, ir in gpu_modules_to_llvm_ir(module).items()
    }


def module_to_ptx(module, arch: str = "sm_90a", opt_level: int = 3) -> str:
    """PTX of every gpu.module in `module`, one after another (what `fuser-opt -t ptx` prints)."""
    return "\n".join(gpu_modules_to_ptx(module, arch, opt_level).values())


def find_ptxas() -> str | None:
    """Path of ptxas: $FUSER_PTXAS, the nvidia-cuda-nvcc wheel, then $PATH; None if absent."""
    env = os.environ.get("FUSER_PTXAS")
    if env and os.access(env, os.X_OK):
        return env
    try:
        import nvidia  # namespace package of the NVIDIA wheels

        for root in nvidia.__path__:
            for sub in ("cu13", "cuda_nvcc", "cu12"):
                cand = Path(root) / sub / "bin" / "ptxas"
                if cand.is_file() and os.access(cand, os.X_OK):
                    return str(cand)
    except ImportError:
        pass
    return shutil.which("ptxas")


def assemble_ptx(ptx: str, arch: str = "sm_90a", extra_args: list[str] | None = None) -> bytes:
    """Assemble PTX into a cubin with ptxas; raise PtxasError with ptxas's message on failure."""
    check_arch_name(arch)
    ptxas = find_ptxas()
    if ptxas is None:
        raise PtxasError(
            "ptxas not found (install nvidia-cuda-nvcc, put ptxas on PATH or set FUSER_PTXAS)"
        )
    with tempfile.TemporaryDirectory(prefix="fuser-ptxas-") as tmp:
        src, out = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        cmd = [ptxas, f"-arch={arch}", "-O3", *(extra_args or []), str(src), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            msg = (proc.stderr + proc.stdout).strip().replace(str(src), "<ptx>")
            raise PtxasError(f"ptxas failed (exit {proc.returncode}):\n{msg}")
        return out.read_bytes()


__all__ = [
    "SUPPORTED_ARCHS",
    "PtxError",
    "PtxasError",
    "UnsupportedArchError",
    "passes_for_arch",
    "llvm_ir_to_ptx",
    "gpu_module_to_ptx",
    "gpu_modules_to_ptx",
    "module_to_ptx",
    "module_to_llvm_ir",
    "find_ptxas",
    "assemble_ptx",
    "merge_ptx",
]


_PTX_HEADER = (".version", ".target", ".address_size")
_PTX_SYMBOL = re.compile(r"([A-Za-z_$%][\w$]*)\s*(?:\[[^\]]*\])?\s*(?:=.*)?;?\s*$")
_PTX_FUNCTION = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")


def merge_ptx(parts: Sequence[str]) -> str:
    """One PTX module of the kernels of several (one fusion's kernels lowered in separate
    processes, driver.py): the shared header once, then each part's module-scope items in order.
    An item (a declaration, or a function with its body) that two parts both have is kept once
    if the two are the same text; a symbol two parts define differently is a PtxError."""
    header: list[str] | None = None
    items: dict[str, str] = {}
    order: list[str] = []
    for part in parts:
        lines = part.splitlines()
        head = [ln for ln in lines if ln.strip().startswith(_PTX_HEADER)]
        if header is None:
            header = head
        elif head != header:
            raise PtxError(f"cannot merge PTX modules with different headers: {header} and {head}")
        for key, text in _ptx_items([ln for ln in lines if not ln.strip().startswith(_PTX_HEADER)]):
            if key in items:
                if items[key] != text:
                    raise PtxError(f"cannot merge PTX modules: {key} is defined differently in two of them")
                continue
            items[key] = text
            order.append(key)
    return "\n".join([*(header or []), "", *(items[k] for k in order)]) + "\n"


def _ptx_items(lines: list[str]) -> Iterator[tuple[str, str]]:
    """(symbol, text) of each module-scope item of PTX lines without the header: a declaration
    line, or a function from its first line to the brace that closes its body. Comments and
    blank lines between items are dropped."""
    depth, current, opened = 0, [], False
    for ln in lines:
        stripped = ln.split("//")[0].strip()
        if depth == 0 and not current and not stripped:
            continue
        current.append(ln)
        depth += stripped.count("{") - stripped.count("}")
        opened = opened or "{" in stripped
        if depth:
            continue
        text = "\n".join(current)
        head = " ".join(x.split("//")[0].strip() for x in current)
        fn = _PTX_FUNCTION.search(head)
        if fn and not opened and not head.rstrip().endswith(";"):
            continue  # a function's signature, its body still to come
        if fn:
            key = fn.group(1)
        else:
            m = _PTX_SYMBOL.search(head)
            key = m.group(1) if m else head
        yield key, text
        current, opened = [], False
    if current:
        raise PtxError("cannot merge PTX modules: a part ends inside a function")
