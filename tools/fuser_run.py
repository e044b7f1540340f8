"""fuser-run: compile a fusion, run it on the GPU, check it against the reference interpreter.

    fuser-run examples/bias_gelu.mlir
    fuser-run examples/row_sum.mlir --input x=x.npy --reps 50
    fuser-run fusion.mlir --save-outputs out_    # writes out_0.npy, out_1.npy, ...

Inputs are random (seeded with --seed: normal for float inputs, small integers for i64, coin
flips for i1) unless given as .npy files. Without an NVIDIA GPU it says so and runs the reference
interpreter instead.

An --input file must be a .npy file (np.save) of numbers: bool, integer or float, or bfloat16
(ml_dtypes' bfloat16, which np.save writes as 2-byte void '<V2'). Its values go into the input's
element type only when none changes: a float64 file into an f32 input, an int64 file into an f32
input or an f32 file into a bf16 input is taken when every value is exactly representable and
refused otherwise (convert the array yourself, e.g. a.astype(np.float32), if the rounding is
meant). Complex files, float files for integer or i1 inputs and integer files for i1 inputs are
always refused; object, string and structured arrays too.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from fuser.dialects.ir import FuserDiagnostic, decode_source, parse_module
from fuser.passes.pipeline import PipelineError

# Relative error allowed against the float64 reference, by output dtype. f64 outputs get f32's:
# math runs in f32 (an f64 output is computed in f64 only when it is a cast or move of f64 data).
TOLERANCE = {"f32": 1e-4, "f16": 2e-3, "bf16": 1.6e-2, "f64": 1e-4,
             "f8e4m3fn": 7e-2, "f8e5m2": 1.3e-1}  # (FP8: a value the f32 kernel and the float64
#   reference round to either side of an FP8 grid point differs by an ulp, 12.5% (25%) of it)


def _dtype_name(t) -> str:
    from fuser.dialects.fusion import dtype_name
    return dtype_name(t.element_type)


def _input_files(items: list[str], names: list[str]) -> dict[int, tuple[str, str]]:
    """--input NAME=FILE options -> {argument position: (option text, file)}."""
    files: dict[int, tuple[str, str]] = {}
    for item in items:
        key, eq, path = item.partition("=")
        if not eq or not key or not path:
            raise FuserDiagnostic(f"error: --input {item}: expected NAME=FILE.npy, NAME the argument's SSA name "
                                  f"without % (or its position); the fusion's arguments are {', '.join(names)}")
        if key in names:
            i = names.index(key)
        elif key.isdigit() and int(key) < len(names):
            i = int(key)
        else:
            raise FuserDiagnostic(f"error: --input {key}=...: the fusion has no argument '{key}'; its arguments are "
                                  f"{', '.join(names)} (or positions 0-{len(names) - 1})")
        if i in files:
            raise FuserDiagnostic(f"error: --input {item}: argument '{names[i]}' is already given by "
                                  f"--input {files[i][0]}")
        files[i] = (item, path)
    return files


def _make_inputs(fn, given: list[str], seed: int) -> list[np.ndarray]:
    from fuser.dialects.fusion.layout import input_layout
    from fuser.runtime.arrays import as_layout, numpy_dtype
    rng = np.random.default_rng(seed)
    names = [arg.name_hint or f"arg{i}" for i, arg in enumerate(fn.body.block.args)]
    files = _input_files(given, names)
    arrays = []
    for i, arg in enumerate(fn.body.block.args):
        shape, dt = tuple(arg.type.get_shape()), _dtype_name(arg.type)
        want = numpy_dtype(dt)
        if i in files:
            item, path = files[i]
            arrays.append(_load_input(path, f"--input {item}", names[i], shape, dt, want))
        elif want.kind == "b":
            arrays.append(rng.random(shape) < 0.5)
        elif want.kind in "iu":  # (u8: 0 to 7)
            arrays.append(rng.integers(-8 if want.kind == "i" else 0, 8, shape).astype(want))
        else:
            arrays.append(rng.standard_normal(shape).astype(np.float32).astype(want))
    # A strided input (issue 32) is a view at its declared strides and offset of a storage of its own
    for i in range(len(arrays)):
        layout = input_layout(fn, i)
        if layout is not None and i not in files:
            arrays[i] = as_layout(arrays[i], layout.strides, layout.offset)
    return arrays


def _load_input(path: str, label: str, name: str, shape: tuple[int, ...], dt: str, want) -> np.ndarray:
    """The array of a .npy file as a C-contiguous array of numpy dtype `want` (the input's element
    type `dt`), or a one-line FuserDiagnostic saying why not. `label` names the option."""
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as e:
        raise FuserDiagnostic(f"error: {label}: cannot read {path}: {e.strerror}") from None
    if magic[:4] == b"PK\x03\x04":
        raise FuserDiagnostic(f"error: {label}: {path} is an .npz archive; give one array saved with np.save")
    if magic != b"\x93NUMPY":
        raise FuserDiagnostic(f"error: {label}: {path} is not a .npy file (save the array with np.save)")
    try:
        # never unpickle: an object array is refused, not executed
        a = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, OSError) as e:
        if "allow_pickle" in str(e):
            raise FuserDiagnostic(f"error: {label}: {path} holds an object array (pickled Python objects); "
                                  f"input '{name}' takes numbers") from None
        raise FuserDiagnostic(f"error: {label}: {path} is not a readable .npy file: {e}") from None
    a = _as_bf16_if_void2(a)
    if a.shape != shape:
        raise FuserDiagnostic(f"error: {label}: input '{name}' from .npy has shape {a.shape}, expected {shape}")
    return np.ascontiguousarray(_convert(a, want, f"{label}: {a.dtype} array into input '{name}' of type {dt}"))


def _as_bf16_if_void2(a: np.ndarray) -> np.ndarray:
    """np.save writes an ml_dtypes bfloat16 array as 2-byte void ('<V2'): read it back as bf16."""
    if a.dtype.kind == "V" and a.dtype.itemsize == 2 and a.dtype.fields is None:
        from fuser.runtime.arrays import numpy_dtype
        bf16 = numpy_dtype("bf16")
        if a.dtype != bf16:
            return a.view(bf16)
    return a


def _kind(dt) -> str:
    """numpy's kind letter, with ml_dtypes' bfloat16 and float8 types ('V' to numpy) counted as floats."""
    return "f" if dt.name == "bfloat16" or dt.name.startswith("float8") else dt.kind


def _convert(a: np.ndarray, want, what: str) -> np.ndarray:
    """`a` as dtype `want` when no value changes; else a FuserDiagnostic starting with `what`."""
    src, dst = _kind(a.dtype), _kind(want)
    if a.dtype == want:
        return a
    if src == "c":
        raise FuserDiagnostic(f"error: {what}: refused, its imaginary parts would be dropped")
    if src not in ("b", "i", "u", "f"):
        raise FuserDiagnostic(f"error: {what}: refused, fuser-run takes arrays of bool, integers or floats")
    if src == "f" and dst != "f":
        raise FuserDiagnostic(f"error: {what}: refused, a float array does not go into an integer or i1 input; "
                              f"save it as {want} if that is meant")
    if dst == "b" and src != "b":
        raise FuserDiagnostic(f"error: {what}: refused, only a bool array goes into an i1 input; "
                              f"save a bool array (e.g. a != 0) instead")
    with np.errstate(all="ignore"):  # overflow and invalid casts are what the check looks for
        out = a.astype(want)
        if src == "b":
            return out  # 0 and 1 fit every type
        if src in "iu" and dst in "iu":
            info = np.iinfo(want)
            same = (a >= info.min) & (a <= info.max)
        else:
            back = out.astype(a.dtype)
            same = back == a
            if src == "f":
                same |= np.isnan(back) & np.isnan(a)
            else:
                same &= np.isfinite(out)
    if not same.all():
        bad = np.argwhere(~same)
        first = tuple(int(j) for j in bad[0])
        raise FuserDiagnostic(f"error: {what}: refused, {len(bad)} of {a.size} values would change "
                              f"(at {first}: {a[first]!s} becomes {out[first]!s}); convert the array "
                              f"yourself if that is meant")
    return out


def _fp8_matmul_error(fn) -> float:
    """The error an FP8 matmul of `fn` may carry into its outputs whatever their dtype: the
    accumulator's truncation on Hopper (fp8.matmul_accumulation_error), for the largest K."""
    from fuser.dialects.fusion import dtype_name
    from fuser.dialects.fusion.fp8 import NUMPY, matmul_accumulation_error
    worst = 0.0
    for op in fn.walk():
        if op.name == "fusion.matmul" and dtype_name(op.operands[0].type.element_type) in NUMPY:
            a_shape = op.operands[0].type.get_shape()
            worst = max(worst, matmul_accumulation_error(a_shape[-2] if op.transpose_a else a_shape[-1]))
    return worst


def _rel_err(got, ref) -> float:
    g, r = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape:
        return float("inf")
    return float(np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-30))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fuser-run", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.strip().split("\n\n")[-1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input_file", help="a .mlir file holding one fusion function")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="take argument NAME (its SSA name without %%, or its position) from a .npy file; "
                        "its values must fit the argument's element type exactly (see below)")
    p.add_argument("-p", "--pipeline", default="default", help="pass pipeline (default: the 'default' pipeline)")
    p.add_argument("--arch", default="sm_90a", choices=("sm_90a", "sm_90", "sm_80"))
    p.add_argument("--reps", type=_positive, default=20, help="timed repetitions (median reported)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-outputs", metavar="PREFIX", help="write each output to PREFIX<i>.npy")
    args = p.parse_args(argv)
    from fuser.runtime.arrays import ArgumentError
    from fuser.runtime.plan import ProgramError
    try:
        return _run(args)
    except (FuserDiagnostic, PipelineError) as e:
        print(f"fuser-run: {e}", file=sys.stderr)
        return 1
    except (OSError, ArgumentError, ProgramError) as e:  # an input or type the runtime cannot take
        print(f"fuser-run: error: {e}", file=sys.stderr)
        return 1


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a count of at least 1, got {text}")
    return n


def _run(args) -> int:
    from fuser.runtime import driver
    from fuser.runtime.reference import run_reference

    with open(args.input_file, "rb") as f:
        text = decode_source(f.read(), args.input_file)
    module = parse_module(text, args.input_file)
    fns = [op for op in module.body.block.ops if op.name == "func.func"]
    if len(fns) != 1:
        raise FuserDiagnostic(f"{args.input_file}: error: expected one func.func, found {len(fns)}")
    fn = fns[0]
    inputs = _make_inputs(fn, args.input, args.seed)
    in_types = [_dtype_name(arg.type) for arg in fn.body.block.args]
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
    got = k(*inputs)
    got = list(got) if isinstance(got, tuple) else [got]
    ok = True
    floor = _fp8_matmul_error(fn)
    for i, (g, r, dt) in enumerate(zip(got, ref, out_types)):
        err = _rel_err(g, r)
        good = err <= max(TOLERANCE.get(dt, 1e-4), floor)
        ok &= good
        print(f"output {i}: {g.shape} {dt}  relative error vs float64 reference {err:.2e}  {'OK' if good else 'MISMATCH'}")
    # Time with inputs already on the device, so the numbers are the kernels', not the copies'.
    from fuser.dialects.fusion.layout import input_layout
    dev = [_to_device(a, dt, input_layout(fn, i)) for i, (a, dt) in enumerate(zip(inputs, in_types))]
    times = driver.time_fn(lambda: k(*dev), warmup=3, reps=args.reps)
    ms = float(np.median(times))
    nbytes = sum(a.nbytes for a in inputs) + sum(np.asarray(g).nbytes for g in got)
    print(f"compile {compile_s * 1e3:.0f} ms; kernel time {ms * 1e3:.1f} us (median of {args.reps}); "
          f"{nbytes / ms / 1e6:.1f} GB/s counting {nbytes / 1e6:.1f} MB read+written; "
          f"{len(k.program.launches)} kernel launch(es)")
    _save(args, got)
    return 0 if ok else 3


def _to_device(a: np.ndarray, dt: str, layout=None):
    """A's values on the device: a DeviceArray, or for a strided input the view of a device
    storage at its declared layout (a `__cuda_array_interface__` with its strides)."""
    from fuser.runtime.arrays import DeviceArray, _host_storage
    from fuser.runtime.plan import BufferSpec
    if layout is None:
        d = DeviceArray(a.shape, dt)
        d.buffer.copy_from_host(np.ascontiguousarray(a))
        return d
    spec = BufferSpec("x", (layout.span,), dt, view=layout.shape, strides=layout.strides, offset=layout.offset)
    storage = DeviceArray(spec.shape, dt)
    storage.buffer.copy_from_host(_host_storage(a, spec))
    return _DeviceView(storage, layout)


class _DeviceView:
    """A strided view of a device storage (kept alive here), as a `__cuda_array_interface__`."""

    def __init__(self, storage, layout):
        self.storage, self.layout = storage, layout

    @property
    def __cuda_array_interface__(self) -> dict:
        cai = dict(self.storage.__cuda_array_interface__)
        size = np.dtype(cai["typestr"]).itemsize if cai["typestr"] != "<V2" else 2
        cai.update(shape=self.layout.shape, strides=tuple(s * size for s in self.layout.strides),
                   data=(self.storage.ptr + self.layout.offset * size, False))
        return cai


def _save(args, outputs) -> None:
    if args.save_outputs:
        for i, o in enumerate(outputs):
            np.save(f"{args.save_outputs}{i}.npy", np.asarray(o))


if __name__ == "__main__":
    sys.exit(main())
