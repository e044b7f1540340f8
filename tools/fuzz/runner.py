"""fuser-fuzz: random multi-output fusions, compiled and checked against an independent float64
evaluation.

The run: a case from a seed (`fuzz_case`: the generator's text and evaluation; `make_inputs`:
its inputs), compiled and checked against the evaluation (`check`), a failure shrunk to fewer
outputs (`shrink`), and the run (`run`; the command is cli.py).

Each case is compiled with one of `OPTION_VARIANTS` (schedule options, or a forced split-K
strategy, serial or two-kernel, for the matmul cases).

On a machine without a GPU the reference interpreter stands in for the kernels, in its float32
("native") mode, which computes in float32 and rounds as a kernel does, so the exact outputs are
checked bit for bit there too.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .generator import SHAPES_3D, _Gen
from .semantics import _round_to, mismatch

TYPED_SHARE = 0.8  # the cases with a typed part


@dataclass
class FuzzCase:
    seed: int
    text: str
    inputs: list[tuple[tuple[int, ...], str]]   # (shape, dtype) of each argument
    outputs: list[str]                          # dtype of each result
    evaluate: object = field(repr=False)        # (inputs, rounding=True) -> float64 results
    with_magnitudes: object = field(repr=False, default=None)  # inputs -> (results, their error magnitudes)
    ranges: list[str] = field(default_factory=list)  # how `make_inputs` draws each input
    checks: list[str] = field(default_factory=list)  # how `mismatch` compares each result (`_Gen.check_key`)
    expected: object = field(repr=False, default=None)  # (inputs, rounding=True) -> (results, magnitudes, don't-cares)
    layouts: list = field(default_factory=list)  # per input: the (strides, offset) it declares, or None
    aliased: tuple = ()  # the inputs an in-place output is written into (issue 32)


def fuzz_case(seed: int, name: str = "fuzz") -> FuzzCase:
    g = _Gen(random.Random(seed), name)
    g.variants = random.Random(seed * 7919 + 3)  # ops swapped in (generator.VARIANTS): the rest stays as it was
    g.creations = random.Random(seed * 104729 + 11)  # iota and random ops in a unary op's place
    g.scans = random.Random(seed * 7919 + 5)  # scans after the typed part's other outputs
    g.f64s = random.Random(seed * 7919 + 7)  # f64 math after the scans (issue 31)
    g.sorts = random.Random(seed * 7919 + 11)  # sorts after those (a stream of their own)
    g.scatters = random.Random(seed * 7919 + 13)  # a scatter after some index maps (issue 32)
    g.fp8s = random.Random(seed * 7919 + 17)  # FP8 values after the sorts (issue 34)
    side = random.Random(seed * 7919 + 1)  # one case in seven opens with a matmul
    with_matmul = side.random() < 1 / 7
    lead = 0
    if not with_matmul and side.random() < 1 / 6:  # and one in six of the others is 3-D
        lead, g.rows, g.cols = side.choice(SHAPES_3D)
    typed = random.Random(seed * 7919 + 2)  # the typed part's own stream: the float part stays as it was
    g.build(side if with_matmul else None, lead, typed if typed.random() < TYPED_SHARE else None)
    g.draw_layouts(random.Random(seed * 7919 + 9))  # strided inputs, outputs in a stride order (issue 32)
    text = g.assemble(g.outputs)
    return FuzzCase(seed, text, [(g.shape(a.kind), a.dtype) for a in g.args], [v.dtype for v in g.outputs],
                    g.evaluate, g.evaluate_with_magnitudes, [g.ranges[a.name] for a in g.args],
                    [g.check_key(v) for v in g.outputs], g.expected, [g.arg_layouts.get(a.name) for a in g.args],
                    tuple(i for i in g.out_aliases if i is not None))


def random_fusion(seed: int, name: str = "fuzz") -> str:
    """The MLIR text of one random multi-output fusion (the same text for the same seed)."""
    return fuzz_case(seed, name).text


def make_inputs(case: FuzzCase, seed: int) -> list[np.ndarray]:
    """A case's inputs, from a seed: floats uniform in [-2, 2] (float32 values, drawn first and
    as they always were), masks of random 0/1 bytes, small integers in [-9, 9] (as u8: 0 to 9 and
    247 to 255), an integer type's whole range (its ends a tenth each), large i64 up to
    2^40 (a third halfway between two float32s where |x| >= 2^39, a tenth 0), indices of an extent N
    in [-N - 2, N + 2) (beyond it, the nearest end is read), f64 values in
    [-4, 4] (a tenth 0, a twentieth each halfway between two float32, f16 or bf16 values), "wide"
    f32 values in [-600, 600] (a tenth scaled into the FP8 subnormals) to cast to FP8."""
    from fuser.runtime.arrays import as_layout
    from fuser.runtime.reference import numpy_dtype

    rng = np.random.default_rng(seed)
    out = []
    for (shape, dt), how in zip(case.inputs, case.ranges or ["uniform"] * len(case.inputs)):
        if how == "uniform":
            x = rng.uniform(-2, 2, shape).astype(np.float32).astype(numpy_dtype(dt))
        elif how == "wide":  # f32 in [-600, 600] (past f8e4m3fn's 448), a tenth below 2^-6 (FP8 subnormals)
            x = rng.uniform(-600, 600, shape)
            x = np.where(rng.random(shape) < 0.1, x * 2.0 ** -16, x).astype(np.float32)
        elif how == "mask":
            x = rng.integers(0, 2, shape).astype(np.bool_)
        elif how == "small":
            x = rng.integers(-9, 10, shape, dtype=np.int64).astype(numpy_dtype(dt))  # (u8: -1 wraps to 255)
        elif how.startswith("index:"):  # indices of an extent N: [-N, N), and a few beyond (clamped)
            n = int(how.split(":")[1])
            x = rng.integers(-n - 2, n + 2, shape, dtype=np.int64).astype(numpy_dtype(dt))
        elif how == "large":
            x = rng.integers(-2 ** 40, 2 ** 40, shape, dtype=np.int64, endpoint=True)
            tie = rng.integers(-2 ** 24, 2 ** 24, shape, dtype=np.int64) * 2 ** 16 + 2 ** 15
            r = rng.random(shape)
            x = np.where(r < 1 / 3, tie, np.where(r < 0.43, 0, x))
        elif how == "range":  # the integer type's whole range, its two ends a tenth each
            info = np.iinfo(numpy_dtype(dt))
            x = rng.integers(int(info.min), int(info.max), shape, dtype=np.int64, endpoint=True)
            r = rng.random(shape)
            x = np.where(r < 0.1, info.min, np.where(r < 0.2, info.max, x)).astype(numpy_dtype(dt))
        else:  # f64
            x = rng.uniform(-4, 4, shape)
            r = rng.random(shape)
            for lo, hi, bits, dtype in ((0.0, 0.05, 23, "f32"), (0.05, 0.1, 10, "f16"), (0.1, 0.15, 7, "bf16")):
                a = _round_to(x, dtype)  # a float of that type, then half its unit in the last place more
                tie = a + np.ldexp(1.0, np.frexp(a)[1] - bits - 2)
                x = np.where((r >= lo) & (r < hi), tie, x)
            x = np.where(r >= 0.9, 0.0, x)
        out.append(x)
    # Strided inputs: each a view of its storage at the declared strides and offset (an expanded
    # dim repeats its first slice); drawn after every value, so the other inputs stay the same.
    for i, lay in enumerate(case.layouts or []):
        if lay is not None:
            out[i] = as_layout(np.asarray(out[i]), *lay)
    return out



# ------------------------------------------------------------------ the run

OPTION_VARIANTS = ["", "block=128", "vector=2", "persistent=false", "split=1", "split=3", "sms=16",
                   # forced split-K (a no-op without a matmul): serial and two-kernel under random epilogues
                   "fusion-split-k{strategy=serial factor=2}", "fusion-split-k{strategy=two-kernel factor=3}"]


def pipeline_for(options: str) -> str:
    """The default pipeline with these schedule options (`default{...}`: pipeline-wide), or with
    `fusion-split-k{...}`'s options."""
    if options.startswith("fusion-split-k{"):
        from fuser.passes.pipeline import with_split_k
        return with_split_k("default", options.removeprefix("fusion-split-k{").removesuffix("}"))
    return f"default{{{options}}}" if options else "default"


def _refusal_pattern(message: str) -> str:
    """A refusal's message without the names and numbers that differ between cases."""
    m = re.sub(r"%\w+|@\w+|\d+", "N", message.split("failed:", 1)[-1].strip())
    return m[:120]


def check(case: FuzzCase, text: str, options: str, inputs, want, gpu: bool, mags=None,
          dontcares=None) -> tuple[str, str]:
    """('ok' | 'refused' | 'mismatch' | 'crash', detail) for one fusion text."""
    from fuser import api
    from fuser.dialects.ir import FuserDiagnostic
    from fuser.lowering.target.ptx import PtxasError, assemble_ptx, find_ptxas
    from fuser.runtime.reference import reference_from_text

    try:
        k = api.compile(text, pipeline=pipeline_for(options))
        if find_ptxas() is not None:
            assemble_ptx(k.ptx, "sm_90a")
    except FuserDiagnostic as e:
        if "convert-fusion-to-sched' failed" in str(e) or "fusion-split-k' failed" in str(e):
            return "refused", _refusal_pattern(str(e))
        return "crash", str(e).splitlines()[0]
    except PtxasError as e:
        return "crash", f"ptxas: {str(e).splitlines()[0]}"
    except Exception as e:  # noqa: BLE001 - anything else is a compiler bug to report
        return "crash", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    # an in-place output updates its input: each run gets its own copy (the case's inputs stay as drawn)
    inputs = [x.copy() if i in case.aliased else x for i, x in enumerate(inputs)]
    try:
        got = k(*inputs) if gpu else reference_from_text(text)(*inputs, precision="native")
    except Exception as e:  # noqa: BLE001
        return "crash", f"run: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    got = got if isinstance(got, (tuple, list)) else [got]
    keys = case.checks or case.outputs
    for i, (g, w, dt, key) in enumerate(zip(got, want, case.outputs, keys)):
        why = mismatch(g, w, key, None if mags is None else mags[i], None if dontcares is None else dontcares[i])
        if why:
            return "mismatch", f"output #{i} ({dt}{'' if key == dt else ', ' + key}): {why}"
    return "ok", ""


def _without_output(text: str, i: int) -> str:
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ArrayAttr, FunctionType

    from fuser.dialects.ir import parse_module, print_module

    m = parse_module(text)
    fn = next(op for op in m.walk() if isinstance(op, func.FuncOp))
    ret = fn.body.block.last_op
    kept = [v for j, v in enumerate(ret.operands) if j != i]
    ret.operands = kept
    fn.function_type = FunctionType.from_lists(list(fn.function_type.inputs.data), [v.type for v in kept])
    if fn.res_attrs is not None:  # (a stride order goes with its output)
        fn.res_attrs = ArrayAttr([a for j, a in enumerate(fn.res_attrs.data) if j != i])
    return print_module(m)


def shrink(case: FuzzCase, options: str, inputs, want, gpu: bool, status: str, mags=None,
           dontcares=None) -> tuple[str, list[int]]:
    """Drop outputs while the failure stays; returns the smaller text and the outputs kept."""
    text, keep = case.text, list(range(len(case.outputs)))
    keys = case.checks or case.outputs
    i = 0
    while len(keep) > 1 and i < len(keep):
        trial = _without_output(text, i)
        kept = [j for j in keep if j != keep[i]]
        sub = replace(case, text=trial, outputs=[case.outputs[j] for j in kept], checks=[keys[j] for j in kept])
        only = lambda xs: None if xs is None else [xs[j] for j in kept]  # noqa: E731
        if check(sub, trial, options, inputs, only(want), gpu, only(mags), only(dontcares))[0] == status:
            text, keep = trial, kept
        else:
            i += 1
    return text, keep


def gpu_problem() -> str | None:
    """None when kernels can run here, else one line that says why not."""
    try:
        from fuser.runtime import driver
        driver.require_gpu()
    except Exception as e:  # noqa: BLE001 - NoGPUError, or no CUDA bindings at all
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        return msg if msg.startswith("no NVIDIA GPU/driver found") else f"no NVIDIA GPU/driver found: {msg}"
    return None


@contextlib.contextmanager
def _verifying_every_pass():
    """The compile driver verifies the whole IR only at the end; the fuzzer verifies it after
    every pass, so that a scheduler's ill-typed sched IR fails the compile on the CPU (a bf16 row
    stored as f32 values once reached the GPU as wrong numbers: seed 11283004)."""
    before = os.environ.get("FUSER_VERIFY_EACH")
    os.environ["FUSER_VERIFY_EACH"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["FUSER_VERIFY_EACH"]
        else:
            os.environ["FUSER_VERIFY_EACH"] = before


def run(cases: int, seed: int, gpu: bool = False, save: Path | None = None, log=print,
        seconds: float | None = None, verify_each: bool | None = None) -> Counter:
    """Check `cases` fusions from `seed` on; with `seconds`, start no case after that long (at
    least one runs) and still print the summary, so a run inside a time budget says what it did.
    `verify_each` (default: on the CPU, where the compile is what is tested; a GPU run tests
    numbers and has the driver's own checks) verifies the IR after every pass."""
    verify = not gpu if verify_each is None else verify_each
    with _verifying_every_pass() if verify else contextlib.nullcontext():
        return _run(cases, seed, gpu, save, log, seconds)


def _run(cases: int, seed: int, gpu: bool, save: Path | None, log, seconds: float | None) -> Counter:
    counts: Counter = Counter()
    refusals: Counter = Counter()
    if gpu and (problem := gpu_problem()):  # before any case, not as a crash of each
        raise RuntimeError(problem)
    t0 = time.perf_counter()
    done = 0
    for s in range(seed, seed + cases):
        if seconds is not None and done and time.perf_counter() - t0 >= seconds:
            break
        done += 1
        case = fuzz_case(s)
        options = OPTION_VARIANTS[s % len(OPTION_VARIANTS)]
        inputs = make_inputs(case, s)
        want, mags, dontcares = case.expected(inputs)
        status, detail = check(case, case.text, options, inputs, want, gpu, mags, dontcares)
        counts[status] += 1
        if status == "refused":
            refusals[detail] += 1
        elif status != "ok":
            log(f"seed {s} ({options or 'default options'}): {status}: {detail}")
            if save is not None:
                text, keep = shrink(case, options, inputs, want, gpu, status, mags, dontcares)
                save.mkdir(parents=True, exist_ok=True)
                (save / f"fuzz-{s}.mlir").write_text(
                    f"// fuser-fuzz seed {s}, pipeline options '{options}', {status}: {detail}\n"
                    f"// kept outputs {keep} of the original case\n{text}")
    ran = f"{done}" if done == cases else f"{done} of {cases} (stopped at --seconds {seconds:g})"
    log(f"fuser-fuzz: {ran} cases from seed {seed} on the {'GPU' if gpu else 'CPU'} in "
        f"{time.perf_counter() - t0:.0f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for pattern, n in refusals.most_common():
        log(f"  refused {n}x: {pattern}")
    return counts
