"""What each GPU target has: one table of the instruction families a kernel may use that not
every supported target has, and the check that refuses a kernel before LLVM sees it.

Why a check of our own: LLVM's NVPTX backend aborts the whole process (`LLVM ERROR: Cannot
select: intrinsic %llvm.nvvm.wgmma...`) on an intrinsic the target lacks, and passes inline PTX
through unread, so ptxas (or the driver's JIT) fails later with a message about a line of PTX.
The check reads the LLVM IR text, the one form every path goes through (fuser.compile,
`fuser-opt -t llvm|ptx`, hand-written LLVM IR given to lowering/target/ptx.py): in each function the
`llvm.nvvm.*` intrinsics it calls, the PTX of its inline asm (comments dropped) and its
function attributes (a cluster launch), matched against each family's pattern.

The table's facts are the PTX ISA's target notes, checked against ptxas 13.0 on sm_80, sm_90
and sm_90a: wgmma and setmaxnreg are sm_90a only; the FP8 cvt forms appeared in sm_89; the rest
appeared in sm_90.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# In order: each target has everything the ones before it have (true of these three; an
# `a` target of a later generation would break the order: sm_100a has no wgmma).
SUPPORTED_ARCHS = ("sm_80", "sm_90", "sm_90a")


@dataclass(frozen=True)
class ArchFeature:
    instruction: str  # what the error names
    arch: str  # the first target that has it
    pattern: str  # regex over a function's PTX text, intrinsic names (less `llvm.nvvm.`) and attributes
    optional_pass: str = ""  # a pass that only uses it to run faster: left out for targets without it


ARCH_FEATURES = (
    ArchFeature("wgmma.mma_async (warpgroup MMA)", "sm_90a", r"\bwgmma\.mma_async"),
    ArchFeature("wgmma.fence/commit_group/wait_group (warpgroup MMA)", "sm_90a", r"\bwgmma\."),
    ArchFeature("setmaxnreg (warpgroup register reallocation)", "sm_90a", r"\bsetmaxnreg\b"),
    ArchFeature("cp.async.bulk.tensor (TMA)", "sm_90", r"\bcp\.(reduce\.)?async\.bulk\.tensor\b"),
    ArchFeature("cp.async.bulk (bulk async copies and their groups)", "sm_90", r"\bcp\.(reduce\.)?async\.bulk\b"),
    ArchFeature("mbarrier.try_wait", "sm_90", r"\bmbarrier\.try_wait\b"),
    ArchFeature("mbarrier expect_tx (transaction counts)", "sm_90", r"\bmbarrier\.[\w.:]*expect_tx\b"),
    # barrier.cluster, mapa, fence.mbarrier_init.release.cluster, %clusterid and the other cluster
    # registers, the shared::cluster window, a kernel's cluster launch attributes
    ArchFeature("thread-block clusters (barrier.cluster, mapa, shared::cluster or a cluster launch)", "sm_90",
                r"[.:%]n?cluster|\bmapa\b|\bmaxclusterrank\b"),
    ArchFeature("fence.proxy.async (async proxy fence)", "sm_90", r"\bfence\.proxy\.async\b"),
    ArchFeature("griddepcontrol (programmatic dependent launch)", "sm_90", r"\bgriddepcontrol\b",
                optional_pass="sched-dependent-launch"),
    ArchFeature("elect.sync", "sm_90", r"\belect\.sync\b"),
    # (sm_89 has it too, the first target that does; of the targets here sm_90 is)
    ArchFeature("cvt with .e4m3x2/.e5m2x2 (FP8 conversions)", "sm_90", r"\b(e4m3|e5m2)x2\b"),
)
_PATTERNS = [(f, re.compile(f.pattern)) for f in ARCH_FEATURES]


class UnsupportedArchError(ValueError):
    """A kernel uses an instruction the target lacks (the message names both)."""


def check_arch_name(arch: str) -> None:
    if arch not in SUPPORTED_ARCHS:
        raise ValueError(f"unsupported arch {arch!r}; expected one of {', '.join(SUPPORTED_ARCHS)}")


def arch_has(arch: str, feature: ArchFeature) -> bool:
    return SUPPORTED_ARCHS.index(arch) >= SUPPORTED_ARCHS.index(feature.arch)


def passes_for_arch(passes: Sequence, arch: str) -> list:
    """`passes` without those that would use, only to go faster, an instruction `arch` lacks
    (sched-dependent-launch below sm_90: the kernels of a plan are then launched plainly)."""
    check_arch_name(arch)
    dropped = {f.optional_pass for f in ARCH_FEATURES if f.optional_pass and not arch_has(arch, f)}
    return [p for p in passes if p.name not in dropped]


# What a function uses: the intrinsics it calls, its inline asm strings and the attribute
# groups on its `define` line. (Patterns that start with a literal: the IR of a matmul kernel
# is megabytes, and a regex anchored on `^` or `\b` crawls through it.)
_NAME = re.compile(r'@("[^"]*"|[\w.$-]+)\(')
_INTRINSIC = re.compile(r"@llvm\.nvvm\.([\w.]+)")
_ASM = re.compile(r'asm [\w ]*"((?:[^"\\]|\\.)*)"')
_ATTR_GROUP = re.compile(r"\nattributes #(\d+) = \{([^\n]*)\}")
_PTX_COMMENT = re.compile(r"//[^\n]*")
_HEX_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})")


def _functions(llvm_ir: str):
    """(kind, name, what it uses as text) for each function definition, in IR order."""
    groups = dict(_ATTR_GROUP.findall(llvm_ir))
    for chunk in ("\n" + llvm_ir).split("\ndefine ")[1:]:
        head, _, body = chunk.partition("\n")
        body = body[:body.find("\n}")]
        name = _NAME.search(head)
        used = _INTRINSIC.findall(body)
        # inline PTX, `\0A` newlines and other hex escapes decoded, comments dropped
        used += [_PTX_COMMENT.sub("", _HEX_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), asm))
                 for asm in _ASM.findall(body)]
        used += [groups.get(g, "") for g in re.findall(r"#(\d+)", head[head.rfind(")"):])]
        kind = "kernel" if "ptx_kernel" in head[:name.start() if name else 0] else "function"
        yield kind, name.group(1).strip('"') if name else "?", "\n".join(used)


def check_llvm_ir_arch(llvm_ir: str, arch: str) -> None:
    """Raise UnsupportedArchError naming the first function (in IR order) that uses an instruction
    `arch` lacks, the instruction and the target it needs."""
    check_arch_name(arch)
    missing = [(f, p) for f, p in _PATTERNS if not arch_has(arch, f)]
    if not missing:
        return
    for kind, name, used in _functions(llvm_ir):
        found = [f for f, p in missing if p.search(used)]
        if found:
            need = max(found, key=lambda f: SUPPORTED_ARCHS.index(f.arch))  # the table's first of the newest
            archs = " or ".join(SUPPORTED_ARCHS[SUPPORTED_ARCHS.index(need.arch):])
            raise UnsupportedArchError(f"{kind} @{name} needs {need.arch}: it uses {need.instruction}, which {arch} "
                                       f"lacks; compile with --arch {archs}")
