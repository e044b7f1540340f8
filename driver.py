"""The compile driver: fusion IR -> pass pipeline -> LLVM IR -> PTX -> a launchable Program.

Results are cached in memory and on disk (runtime/cache.py) keyed by the IR text, the
pipeline, the target, and fuser's version with a digest of the compiler's source, so a second
compile of the same fusion is a lookup.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from fuser.lowering.target import ptx as ptx_mod
from fuser.lowering.conversion.nvvm_to_llvm import lower_nvvm_to_llvm
from fuser.lowering.target.llvmir.module import find_gpu_modules
from fuser.dialects import sched
from fuser.dialects.ir import FuserDiagnostic, parse_module, print_module, verify_ops
from fuser.passes.pipeline import build_pipeline, pipeline_text, run_passes, with_schedule_options
from fuser.passes.verify_buffers import check_buffers
from fuser.runtime import cache
from fuser.runtime.plan import Program, extract_program

log = logging.getLogger("fuser.compile")

# Which IR level a pass leaves behind; used to name the stages a CompileResult gives.
_STAGE_AFTER = {"convert-fusion-to-sched": "sched", "convert-sched-to-nvvm": "nvvm"}


class Stages(Mapping):
    """The IR text of each level ("fusion", "sched", "nvvm"), made when first asked for.

    A compile prints none of it: the sched and nvvm levels are made by running the pipeline
    again on the fusion's text up to convert-sched-to-nvvm and printing what each level pass
    leaves (the passes are deterministic: fuser-ir-snapshot checks it). Printing the two levels
    on every compile had cost a third of a matmul's compile time, and keeping clones of the
    module at those points three tenths of the printing (docs/perf-notes.md, issue 33).
    `levels=False` (compile(..., stages=False)) gives the fusion level only."""

    def __init__(self, fusion_text: str, source: str = "", passes: Sequence[ModulePass] = (), levels: bool = True):
        self._texts = {"fusion": fusion_text}
        self._source, self._passes = source, list(passes)
        made = [_STAGE_AFTER[p.name] for p in self._passes if p.name in _STAGE_AFTER] if levels else []
        self._keys = ("fusion", *dict.fromkeys(made))
        self._lock = threading.Lock()

    def __getitem__(self, level: str) -> str:
        if level not in self._keys:
            raise KeyError(level)
        if level not in self._texts:
            with self._lock:
                if level not in self._texts:
                    self._texts.update(_print_levels(self._source, self._passes))
        return self._texts[level]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        made = ", ".join(k for k in self._keys if k in self._texts)
        return f"Stages(levels={list(self._keys)}, printed=[{made}])"


def _print_levels(source: str, passes: Sequence[ModulePass]) -> dict[str, str]:
    """{level: text} of the levels the pipeline's level passes leave, from its input text."""
    last = max(i for i, p in enumerate(passes) if p.name in _STAGE_AFTER)
    texts: dict[str, str] = {}

    def record(p: ModulePass, m: ModuleOp) -> None:
        if p.name in _STAGE_AFTER:
            texts[_STAGE_AFTER[p.name]] = print_module(m)

    run_passes(passes[:last + 1], parse_module(source, "<fusion>"), after=record, verify_each=False)
    return texts


@dataclass
class CompileResult:
    program: Program
    stages: Mapping[str, str] = field(default_factory=dict)  # level -> IR text (a Stages: printed when asked)
    llvm_ir: str = ""
    ptx: str = ""
    seconds: float = 0.0
    cached: bool = False
    built_by: str = ""  # a cached result: who compiled it (host, pid, rank), as its entry records


def compile_fusion(module: ModuleOp | str, pipeline: str | Sequence[ModulePass] = "default", arch: str = "sm_90a",
                   options: dict | None = None, stages: bool = True, wait: bool = True) -> CompileResult:
    """Compile a fusion module (or its MLIR text) to a Program the executor can launch.

    `options`: schedule options for the pipeline's planning passes (`{"block": 128}`), as if
    written in the pipeline text.

    `CompileResult.stages` gives the IR of each level, printed when first asked for (the sched
    and nvvm levels by running the pipeline again up to them); stages=False gives the fusion
    level only. Neither costs the compile anything, and either is served by the same cache entry.

    wait=False: when another process is compiling the same fusion into the shared disk cache,
    raise `cache.Busy` at once instead of waiting for it (a compile worker takes another first).
    Logger "fuser.compile" says at INFO which fusions were compiled and which were loaded after
    waiting for another process."""
    t0 = time.perf_counter()
    text = module if isinstance(module, str) else print_module(module)
    # The key sees the locations too: they become the PTX's line info (text parses to its own).
    located_text = text if isinstance(module, str) else print_module(module, debuginfo=True)
    # The target decides the pipeline too: below sm_90 sched-dependent-launch is left out, so a
    # plan of several kernels is launched plainly (no griddepcontrol, no fuser.dependent_launch).
    passes = ptx_mod.passes_for_arch(with_schedule_options(build_pipeline(pipeline), options), arch)
    ptext = pipeline_text(passes)  # the options are in it, as each planning pass's
    key = cache.make_key(located_text, "", arch, ptext, cache.compiler_fingerprint())
    levels = Stages(text, located_text, passes, levels=stages)
    hit = _cached_result(key, levels, t0, recheck=False)
    if hit is not None:
        return hit
    # The build lock: processes sharing the disk cache (a distributed job's ranks, the PyTorch
    # backend's compile workers) compile each fusion once; the others wait and load it.
    with cache.default_cache().building(key, wait=wait):
        hit = _cached_result(key, levels, t0, recheck=True)
        if hit is not None:
            log.info("%s: loaded from the disk cache after waiting: built by %s", _symbol(text),
                     hit.built_by or "another process")
            return hit
        result = _build(text, module, passes, arch, levels, t0)
        cache.default_cache().put(key, {"ptx": result.ptx, "llvm_ir": result.llvm_ir},
                                  {"program": result.program.to_json(include_ptx=False), "built_by": _builder()})
    log.info("%s: compiled in %.2f s (%d kernels)", _symbol(text), result.seconds, len(result.program.launches))
    return result


def make_cubin(ptx: str, kc: cache.KernelCache | None = None) -> bool:
    """Assemble `ptx` with ptxas into the kernel cache (runtime/cubins.py) unless it is there, so
    that the process that launches it loads machine code instead of having the driver compile the
    PTX. False when it cannot be made: no ptxas, no `.target`, or ptxas refused the PTX (the
    driver's JIT then meets and reports that)."""
    from fuser.runtime import cubins

    arch = cubins.target_arch(ptx)
    if arch is None or ptx_mod.find_ptxas() is None:
        return False
    try:
        (kc or cache.default_cache()).get_or_create(cubins.key(ptx), lambda: (
            cubins.payloads(ptx_mod.assemble_ptx(ptx, arch, list(cubins.FLAGS[1:]))), {"arch": arch}))
    except ptx_mod.PtxasError:
        return False
    return True


def _builder() -> str:
    """Who built a cache entry, for logs: host, pid and the torch.distributed rank if any."""
    rank = os.environ.get("RANK")
    return f"{socket.gethostname()} pid {os.getpid()}" + (f" rank {rank}" if rank is not None else "")


def _symbol(text: str) -> str:
    m = re.search(r"func\.func\s+(@[\w$.-]+)", text)
    return m.group(1) if m else "fusion"


def _cached_result(key: str, stages: Stages, t0: float, recheck: bool) -> CompileResult | None:
    """The cached CompileResult for key, or None (a miss, or an entry from another layout)."""
    c = cache.default_cache()
    hit = c.recheck(key) if recheck else c.get(key)
    if hit is None:
        return None
    try:
        ptx = hit.payloads["ptx"]
        program = Program.from_json(hit.meta["program"], ptx=ptx)
    except (KeyError, ValueError, TypeError):
        return None  # an entry from another layout: rebuild it
    return CompileResult(program, stages, hit.payloads.get("llvm_ir", ""), ptx,
                         time.perf_counter() - t0, cached=True, built_by=str(hit.meta.get("built_by", "")))


VERIFY_SETTINGS = ("sched", "end", "each")


def verify_setting() -> str:
    """FUSER_VERIFY: "sched" (the default: the sched level's loads and stores), "end" (and the
    whole IR after the last pass: the test suite's setting), or "each" (the whole IR after every
    pass; FUSER_VERIFY_EACH=1 says the same)."""
    if os.environ.get("FUSER_VERIFY_EACH", "0") == "1":
        return "each"
    value = os.environ.get("FUSER_VERIFY", "").strip().lower() or "sched"
    if value not in VERIFY_SETTINGS:
        raise FuserDiagnostic(f"error: FUSER_VERIFY={value!r}: expected one of {', '.join(VERIFY_SETTINGS)}")
    return value


# A fusion of at least this many kernels has them lowered in several processes.
SPLIT_KERNELS = 4


# Threads that never take a lock a forked lowering child uses (xDSL, llvmlite, logging):
# tqdm's progress-bar monitor, which a torch.compile leaves running for the process's life.
FORK_SAFE_THREADS = frozenset({"tqdm_monitor"})


def _fork_safe() -> bool:
    """True when this process has no thread but the caller's and FORK_SAFE_THREADS'."""
    me = threading.current_thread()
    return all(t is me or t.name in FORK_SAFE_THREADS for t in threading.enumerate())


def compile_jobs() -> int:
    """FUSER_COMPILE_JOBS: processes that lower one fusion's kernels at once (default: the CPUs
    this process may run on, at most 8; 1: all in this process). Each compile of a fusion of
    SPLIT_KERNELS kernels or more, in a process without other threads (`_fork_safe`), forks them: the longest compile of a model's first step (a
    GPT-2 backward layer, 18 kernels) bounds the backend's precompile, which compiles the
    distinct fusions in parallel processes."""
    value = os.environ.get("FUSER_COMPILE_JOBS", "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise FuserDiagnostic(f"error: FUSER_COMPILE_JOBS={value!r}: expected a number of processes") from None
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def _lower_kernels_apart(mod: ModuleOp, kernels: list, conversion: ModulePass, arch: str, jobs: int,
                         verify_end: bool) -> tuple[str, str, Program] | None:
    """Lower a sched-level module's kernels in up to `jobs` forked processes, each taking a group
    of them (balanced by op count) from the NVVM conversion to PTX, while this process lowers the
    host functions; the parts' PTX is merged into one module (ptx.merge_ptx). (PTX, LLVM IR of
    the parts, Program), or None when a part failed (the caller compiles again in one process,
    which reports it). A child touches only xDSL and llvmlite (no CUDA), as ptx.py's codegen
    child does, so a parent that holds a CUDA context may fork."""
    import json
    import tempfile

    from fuser.lowering.conversion.sched_to_nvvm.convert import gpu_module_name
    from fuser.lowering.conversion.sched_to_nvvm.host import lower_host
    from xdsl.dialects import func

    size = {k.sym_name.data: sum(1 for _ in k.walk()) for k in kernels}
    groups: list[list] = [[] for _ in range(min(jobs, len(kernels)))]
    load = [0] * len(groups)
    for name in sorted(size, key=lambda n: -size[n]):  # the largest first, to the lightest group
        i = load.index(min(load))
        groups[i].append(name)
        load[i] += size[name]
    children = []
    for names in groups:
        out = tempfile.TemporaryFile()
        pid = os.fork()
        if pid == 0:  # the child: its kernels only, to PTX; the answer as JSON in `out`
            status = 0
            try:
                keep = set(names)
                for op in list(mod.body.block.ops):
                    if isinstance(op, func.FuncOp) or (isinstance(op, sched.KernelOp) and op.sym_name.data not in keep):
                        op.detach()
                        op.erase(safe_erase=False)
                run_passes([conversion], mod, verify_each=False, verify_end=verify_end)
                lower_nvvm_to_llvm(mod)
                llvm_ir = ptx_mod.module_to_llvm_ir(mod, arch)
                answer = {"ptx": ptx_mod.llvm_ir_to_ptx(llvm_ir, arch), "llvm_ir": llvm_ir}
            except BaseException as e:  # noqa: BLE001 - reported by the serial compile
                answer, status = {"error": f"{type(e).__name__}: {e}"}, 3
            try:
                out.write(json.dumps(answer).encode())
                out.flush()
            finally:
                os._exit(status)
        children.append((pid, out))
    by_name = {k.sym_name.data: k for k in kernels}
    gpu_name = gpu_module_name(mod)
    for h in [o for o in mod.body.block.ops if isinstance(o, func.FuncOp)]:
        lower_host(h, by_name, gpu_name)
    for k in kernels:
        k.detach()
        k.erase(safe_erase=False)
    answers = []
    for pid, out in children:
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        raw = out.read()
        out.close()
        try:
            answers.append(json.loads(raw) if status == 0 else None)
        except ValueError:
            answers.append(None)
    failed = [a.get("error", "") if a else "the process died" for a in answers if a is None or "ptx" not in a]
    if failed:
        log.info("parallel lowering: %s; compiling in one process", failed[0])
        return None
    try:
        ptx = ptx_mod.merge_ptx([a["ptx"] for a in answers])
    except ptx_mod.PtxError as e:
        log.info("parallel lowering: %s; compiling in one process", e)
        return None
    llvm_ir = "\n".join(f"; kernels {', '.join(g)}\n{a['llvm_ir']}" for g, a in zip(groups, answers))
    return ptx, llvm_ir, extract_program(mod, ptx, arch)


def _build(text: str, module: ModuleOp | str, passes: list[ModulePass], arch: str, stages: Stages,
           t0: float, jobs: int | None = None) -> CompileResult:
    """Run the pipeline, then LLVM: the compile proper (`jobs`: compile_jobs() unless given)."""
    mod = parse_module(text, "<fusion>") if isinstance(module, str) else module.clone()
    reached: set[str] = set()

    # Whatever the pipeline, never launch a kernel that reads unwritten data (once: the named
    # pipelines already run the check as a pass).
    checked_by_pipeline = any(p.name == "sched-verify-buffers" for p in passes)
    # What is verified (FUSER_VERIFY, `verify_setting`): by default the schedulers' loads and
    # stores at the sched level: the NVVM conversion makes every pointer opaque, so a store of
    # the wrong type would pass any later check and LLVM's (a bf16 row once stored f32 values:
    # wrong numbers on the GPU). Verifying the whole sched level instead cost 7.5% of a compile;
    # the whole IR after the last pass ("end") 20-25% of a large fusion's (LLVM verifies the IR
    # it is given anyway). "each": after every pass, to find the one that produced invalid IR.
    verify = verify_setting()
    verify_each = verify == "each"
    names = [p.name for p in passes]
    to_nvvm = names.index("convert-sched-to-nvvm") if "convert-sched-to-nvvm" in names else 0
    last_sched = passes[to_nvvm - 1] if to_nvvm > 0 and not verify_each else None

    def record(p: ModulePass, m: ModuleOp) -> None:
        if p.name == "convert-fusion-to-sched" and not checked_by_pipeline:
            check_buffers(m)
        if p.name in _STAGE_AFTER:
            reached.add(_STAGE_AFTER[p.name])
        if p is last_sched:
            verify_ops(m, sched.MEMORY_ACCESS_OPS)

    # A fusion of many kernels lowers them from the sched level on in several processes at once
    # (`_lower_kernels_apart`) when the pipeline ends with the NVVM conversion.
    # Only from a process without other threads (`_fork_safe`): a lock another thread holds at the fork (LLVM's, the
    # logging module's) would stay held in the child (the backend's compile workers are such
    # processes; a compile in a threaded one takes one process).
    jobs = compile_jobs() if jobs is None else jobs
    apart = jobs > 1 and not verify_each and hasattr(os, "fork") and _fork_safe() \
        and 0 < to_nvvm == len(passes) - 1
    if apart:
        run_passes(passes[:to_nvvm], mod, after=record, verify_each=False, verify_end=False)
        kernels = [k for k in mod.body.block.ops if isinstance(k, sched.KernelOp)]
        if len(kernels) >= SPLIT_KERNELS:
            done = _lower_kernels_apart(mod, kernels, passes[to_nvvm], arch, jobs, verify == "end")
            if done is not None:
                ptx, llvm_ir, program = done
                return CompileResult(program, stages, llvm_ir, ptx, time.perf_counter() - t0)
            # (a part failed: the whole again, in this process, reports the error as a serial
            # compile would)
            return _build(text, module, passes, arch, stages, t0, jobs=1)
        run_passes(passes[to_nvvm:], mod, after=record, verify_each=False, verify_end=verify == "end")
    else:
        run_passes(passes, mod, after=record, verify_each=verify_each, verify_end=verify == "end")
    if "nvvm" not in reached:
        raise FuserDiagnostic("error: the pipeline did not reach the nvvm level (it must include convert-sched-to-nvvm)")
    lower_nvvm_to_llvm(mod)  # in place: the module is ours, so the translation need not copy it
    if find_gpu_modules(mod):
        llvm_ir = ptx_mod.module_to_llvm_ir(mod, arch)
        ptx = ptx_mod.llvm_ir_to_ptx(llvm_ir, arch)
    else:  # no kernel to launch (an input returned into itself, outputs with no elements)
        llvm_ir = ptx = ""
    program = extract_program(mod, ptx, arch)
    return CompileResult(program, stages, llvm_ir, ptx, time.perf_counter() - t0)
