"""`fuser-fuzz --explain SEED`: where a failing case goes wrong, for a failure seen only on the GPU.

A GPU mismatch cannot be replayed on a machine without one, and a GPU session is short, so one
command gathers what the diagnosis needs:

1. the case under every schedule variant (`OPTION_VARIANTS`): which options give the mismatch;
2. its kernels: the sched-level IR of the failing variant, kernel names and launch shapes;
3. the first wrong value: every tensor value that the failing output depends on is returned as an
   extra output (the original outputs stay, so the fusion keeps its shape as far as possible) and
   compared, GPU against the reference interpreter in its float32 mode (which rounds as the
   kernels do). The first value in program order that differs while all of its operands agree is
   the op to look at; its wrong elements are printed with their operands' values, and the
   kernels launched with its buffer (name, grid, block, schedule).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from .runner import OPTION_VARIANTS, check, fuzz_case, make_inputs, pipeline_for
from .semantics import TOLERANCE, mismatch


def _with_outputs(text: str, names: list[str]) -> str:
    """The fusion with the SSA values `names` (e.g. '%ad2') returned after its own outputs."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType

    from fuser.dialects.ir import parse_module, print_module

    m = parse_module(text)
    fn = next(op for op in m.walk() if isinstance(op, func.FuncOp))
    by_name = {f"%{r.name_hint}": r for op in fn.body.block.ops for r in op.results if r.name_hint}
    ret = fn.body.block.last_op
    extra = [by_name[n] for n in names]
    ret.operands = [*ret.operands, *extra]
    fn.function_type = FunctionType.from_lists(list(fn.function_type.inputs.data), [v.type for v in ret.operands])
    if fn.res_attrs is not None:
        fn.res_attrs = ArrayAttr([*fn.res_attrs.data, *(DictionaryAttr({}) for _ in extra)])
    return print_module(m)


def _dependencies(text: str, out: int) -> list[tuple[str, str, list[str]]]:
    """(value, op name, operand values) of each tensor op that output `out` depends on, in program order."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import TensorType

    from fuser.dialects.ir import parse_module

    m = parse_module(text)
    fn = next(op for op in m.walk() if isinstance(op, func.FuncOp))
    ops = list(fn.body.block.ops)
    needed = {id(fn.body.block.last_op.operands[out])}
    chain = []
    for op in reversed(ops[:-1]):
        if any(id(r) in needed for r in op.results):
            needed.update(id(o) for o in op.operands)
            for r in op.results:
                if isinstance(r.type, TensorType) and r.name_hint:
                    chain.append((f"%{r.name_hint}", op.name,
                                  [f"%{o.name_hint}" if o.name_hint else "?" for o in op.operands]))
    return chain[::-1]


def _compare(got, want) -> np.ndarray:
    """Element mask where the GPU's value differs from the reference's (same rounding: the
    dtype's tolerance for floats, bit for bit for integers, masks and FP8)."""
    from fuser.runtime.reference import numpy_dtype

    g, w = np.asarray(got), np.asarray(want)
    dtype = {np.dtype(numpy_dtype(d)): d for d in ("f64", "f32", "f16", "bf16")}.get(w.dtype)
    if dtype is None:
        return g.astype(np.float64) != w.astype(np.float64)  # (NaN != NaN: no NaN in these types but FP8's)
    g, w = g.astype(np.float64), w.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return ~((np.abs(g - w) <= TOLERANCE[dtype] * (np.abs(w) + 1e-3)) | (np.isnan(g) & np.isnan(w)) | (g == w))


def _as_list(out) -> list:
    """A fusion's results as a list (a single result is not a tuple)."""
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _on_gpu(text: str, options: str, inputs: list) -> list:
    from fuser import api

    return _as_list(api.compile(text, pipeline=pipeline_for(options))(*inputs))


def _in_reference(text: str, options: str, inputs: list) -> list:
    from fuser.runtime.reference import reference_from_text

    return _as_list(reference_from_text(text)(*inputs, precision="native"))


def explain(seed: int, log: Callable[[str], None] = print, options: str | None = None, gpu: bool = True,
            run: Callable[[str, str, list], list] | None = None, output: int | None = None) -> None:
    """The report above, for case `seed` under `options` (default: the case's own), bisecting
    `output` (default: the one that mismatched). With gpu=False
    the reference interpreter stands in for the kernels (a dry run: everything agrees), or `run`
    (text, options, inputs) -> outputs does (the tests' planted errors)."""
    from fuser import api

    run = run or (_on_gpu if gpu else _in_reference)

    case = fuzz_case(seed)
    inputs = make_inputs(case, seed)
    want, mags, dontcares = case.expected(inputs)
    options = OPTION_VARIANTS[seed % len(OPTION_VARIANTS)] if options is None else options
    log(f"== seed {seed}: {len(case.outputs)} outputs, its own options '{options}'")
    failing = None
    for variant in OPTION_VARIANTS:
        status, detail = check(case, case.text, variant, inputs, want, gpu, mags, dontcares)
        log(f"  options '{variant}': {status} {detail}")
        if variant == options and status == "mismatch":
            failing = int(detail.split("#", 1)[1].split(" ", 1)[0])
    if failing is None and gpu:
        log("  its own options gave no mismatch: nothing to bisect")
        return
    failing = output if output is not None else failing or 0
    k = api.compile(case.text, pipeline=pipeline_for(options))
    log(f"-- kernels under '{options}': " + ", ".join(
        line.split()[-1].rstrip("(") for line in k.ptx.splitlines() if line.startswith(".visible .entry")))
    fresh = [x.copy() if i in case.aliased else x for i, x in enumerate(inputs)]
    g0 = np.asarray(run(case.text, options, fresh)[failing])
    fresh = [x.copy() if i in case.aliased else x for i, x in enumerate(inputs)]
    r0 = np.asarray(_in_reference(case.text, options, fresh)[failing])
    bad0 = _compare(g0, r0) & ~np.asarray(dontcares[failing], bool) if dontcares[failing] is not None \
        else _compare(g0, r0)
    log(f"-- output #{failing} {r0.shape} {r0.dtype}: {int(bad0.sum())} elements differ from the reference "
        f"(float32 mode) where they matter; the first:")
    for idx in list(zip(*np.nonzero(bad0)))[:8]:
        log(f"   at {tuple(int(i) for i in idx)}: GPU {g0[idx]!r}, reference {r0[idx]!r}")
    log(f"-- output #{failing}: the values it depends on, GPU against the reference (float32 mode)")
    chain = _dependencies(case.text, failing)
    text = _with_outputs(case.text, [v for v, _, _ in chain])
    fresh = [x.copy() if i in case.aliased else x for i, x in enumerate(inputs)]
    got = run(text, options, fresh)
    fresh = [x.copy() if i in case.aliased else x for i, x in enumerate(inputs)]
    ref = _in_reference(text, options, fresh)
    n = len(case.outputs)
    status = mismatch(got[failing], want[failing], (case.checks or case.outputs)[failing], mags[failing],
                      dontcares[failing])
    log(f"   with the extra outputs the original output #{failing} is: {status or 'right'}")
    bad_values: dict[str, np.ndarray] = {}
    values = {f"%in{i}": (np.asarray(x), np.asarray(x)) for i, x in enumerate(inputs)}
    for (v, opname, operands), g, r in zip(chain, got[n:], ref[n:]):
        bad = _compare(g, r)
        values[v] = (np.asarray(g), np.asarray(r))
        mark = f"{int(bad.sum())} of {bad.size} differ" if bad.any() else "ok"
        log(f"   {v} = {opname}({', '.join(operands)}) {np.asarray(r).shape}: {mark}")
        if bad.any():
            bad_values[v] = bad
            if not any(o in bad_values for o in operands):
                _show_first(v, opname, operands, bad, values, log)
                for header in _kernels_writing(text, options, v):
                    log(f"      its buffer's kernel: {header}")


def _kernels_writing(text: str, options: str, v: str) -> list[str]:
    """Name, grid, block and schedule of each kernel launched with the buffer of value `v` (an
    output here, so the host function names its buffer after it): the kernel that writes it, and
    any that read it back."""
    from fuser import api

    sched_ir = api.compile(text, pipeline=pipeline_for(options)).ir("sched").splitlines()
    names = {m.group(1) for line in sched_ir if "sched.launch" in line and re.search(re.escape(v) + r"\b", line)
             for m in [re.search(r"sched\.launch @(\w+)", line)] if m}
    out = []
    for line in sched_ir:
        head = re.match(r"\s*sched\.kernel @(\w+)\(", line)
        if head and head.group(1) in names:
            launch = re.search(r"grid \[[^\]]*\] block \[[^\]]*\] smem \d+", line)
            schedule = re.search(r'fuser\.schedule = "([^"]*)"', line)
            out.append(f"@{head.group(1)} {launch.group(0) if launch else ''}"
                       + (f": {schedule.group(1)}" if schedule else ""))
    return out


def _show_first(v: str, opname: str, operands: list[str], bad: np.ndarray, values: dict, log) -> None:
    """A value that differs although its operands agree: its first wrong elements, with theirs."""
    log(f"   >> {v} ({opname}) is the first wrong value; its operands agree on the GPU")
    for idx in list(zip(*np.nonzero(bad)))[:6]:
        parts = []
        for o in operands:
            if o in values:
                og = values[o][0]
                try:
                    parts.append(f"{o}={og[idx] if og.shape == bad.shape else '(shape ' + str(og.shape) + ')'}")
                except IndexError:
                    parts.append(f"{o}=?")
        g, r = values[v]
        log(f"      at {tuple(int(i) for i in idx)}: GPU {g[idx]!r}, reference {r[idx]!r}; {' '.join(parts)}")
