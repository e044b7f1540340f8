"""fuser-run: compile a fusion, run it on the GPU, check it against the reference interpreter.

    fuser-run examples/bias_gelu.mlir
    fuser-run examples/row_sum.mlir --input x=x.npy --reps 50
    fuser-run fusion.mlir --save-outputs out_    # writes out_0.npy, out_1.npy, ...

Inputs are random normal (seeded with --seed) unless given as .npy files. Without an NVIDIA GPU
it says so and runs the reference interpreter instead.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from fuser.dialects.ir import FuserDiagnostic, decode_source, parse_module
from fuser.passes.pipeline import PipelineError

TOLERANCE = {"f32": 1e-4, "f16": 2e-3, "bf16": 1.6e-2, "f64": 1e-9}


def _dtype_name(t) -> str:
    from fuser.dialects.fusion import dtype_name
    return dtype_name(t.element_type)


def _make_inputs(fn, given: dict[str, str], seed: int) -> list[np.ndarray]:
    from fuser.runtime.arrays import numpy_dtype
    rng = np.random.default_rng(seed)
    names = [arg.name_hint or f"arg{i}" for i, arg in enumerate(fn.body.block.args)]
    for key in given:
        if key not in names and not (key.isdigit() and int(key) < len(names)):
            raise FuserDiagnostic(f"error: --input {key}=...: the fusion has no argument '{key}'; its arguments are "
                                  f"{', '.join(names)} (or positions 0-{len(names) - 1})")
    arrays = []
    for i, arg in enumerate(fn.body.block.args):
        name = arg.name_hint or f"arg{i}"
        shape, dt = tuple(arg.type.get_shape()), _dtype_name(arg.type)
        if name in given or str(i) in given:
            a = np.load(given.get(name, given.get(str(i))))
            if a.shape != shape:
                raise FuserDiagnostic(f"error: input '{name}' from .npy has shape {a.shape}, expected {shape}")
            arrays.append(a.astype(numpy_dtype(dt)))
        else:
            arrays.append(rng.standard_normal(shape).astype(np.float32).astype(numpy_dtype(dt)))
    return arrays


def _rel_err(got, ref) -> float:
    g, r = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape:
        return float("inf")
    return float(np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-30))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fuser-run", description=__doc__.split("\n\n")[0])
    p.add_argument("input_file", help="a .mlir file holding one fusion function")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="take argument NAME (its SSA name without %%, or its position) from a .npy file")
    p.add_argument("-p", "--pipeline", default="default", help="pass pipeline (default: the 'default' pipeline)")
    p.add_argument("--arch", default="sm_90a", choices=("sm_90a", "sm_90", "sm_80"))
    p.add_argument("--reps", type=int, default=20, help="timed repetitions (median reported)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-outputs", metavar="PREFIX", help="write each output to PREFIX<i>.npy")
    args = p.parse_args(argv)
    try:
        return _run(args)
    except (FuserDiagnostic, PipelineError) as e:
        print(f"fuser-run: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"fuser-run: error: {e}", file=sys.stderr)
        return 1


def _run(args) -> int:
    from fuser.runtime import driver
    from fuser.runtime.arrays import ArgumentError
    from fuser.runtime.reference import run_reference

    with open(args.input_file, "rb") as f:
        text = decode_source(f.read(), args.input_file)
    module = parse_module(text, args.input_file)
    fns = [op for op in module.body.block.ops if op.name == "func.func"]
    if len(fns) != 1:
        raise FuserDiagnostic(f"{args.input_file}: error: expected one func.func, found {len(fns)}")
    fn = fns[0]
    given = dict(kv.split("=", 1) for kv in args.input)
    inputs = _make_inputs(fn, given, args.seed)
    out_types = [_dtype_name(t) for t in fn.function_type.outputs.data]

    # Compile first, on any machine: pipeline and schedule errors surface with or without a GPU.
    from fuser import api
    t0 = time.perf_counter()
    k = api.compile(text, pipeline=args.pipeline, arch=args.arch)
    compile_s = time.perf_counter() - t0
    try:
        driver.require_gpu()
    except driver.NoGPUError:
        print(f"fuser-run: compiled in {compile_s * 1e3:.0f} ms; no GPU here, so these are the reference "
              "interpreter's outputs")
        outputs = run_reference(fn, inputs, precision="native")
        for i, o in enumerate(outputs):
            print(f"  output {i}: shape {o.shape} dtype {o.dtype} mean {np.mean(o.astype(np.float64)):.6g}")
        _save(args, outputs)
        return 0
    ref = run_reference(fn, inputs, precision="f64")
    try:
        got = k(*inputs)
    except ArgumentError as e:
        raise FuserDiagnostic(f"error: {e}") from None
    got = list(got) if isinstance(got, tuple) else [got]
    ok = True
    for i, (g, r, dt) in enumerate(zip(got, ref, out_types)):
        err = _rel_err(g, r)
        good = err <= TOLERANCE.get(dt, 1e-4)
        ok &= good
        print(f"output {i}: {g.shape} {dt}  relative error vs float64 reference {err:.2e}  {'OK' if good else 'MISMATCH'}")
    # Time with inputs already on the device, so the numbers are the kernels', not the copies'.
    dev = [_to_device(a) for a in inputs]
    times = driver.time_fn(lambda: k(*dev), warmup=3, reps=args.reps)
    ms = float(np.median(times))
    nbytes = sum(a.nbytes for a in inputs) + sum(np.asarray(g).nbytes for g in got)
    print(f"compile {compile_s * 1e3:.0f} ms; kernel time {ms * 1e3:.1f} us (median of {args.reps}); "
          f"{nbytes / ms / 1e6:.1f} GB/s counting {nbytes / 1e6:.1f} MB read+written; "
          f"{len(k.program.launches)} kernel launch(es)")
    _save(args, got)
    return 0 if ok else 3


def _to_device(a: np.ndarray):
    from fuser.runtime.arrays import DeviceArray, numpy_dtype
    name = next(n for n in ("f32", "f16", "bf16") if numpy_dtype(n) == a.dtype)
    d = DeviceArray(a.shape, name)
    d.buffer.copy_from_host(np.ascontiguousarray(a))
    return d


def _save(args, outputs) -> None:
    if args.save_outputs:
        for i, o in enumerate(outputs):
            np.save(f"{args.save_outputs}{i}.npy", np.asarray(o))


if __name__ == "__main__":
    sys.exit(main())
