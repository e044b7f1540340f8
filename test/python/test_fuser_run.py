"""fuser-run on any machine: it compiles before it runs (pipeline and option errors surface
without a GPU), refuses --input names the fusion does not have, and without a GPU says so in
one sentence and prints the reference interpreter's outputs. --input files: a bf16 .npy loads as
bf16, each input type takes its own numpy dtype unchanged, a conversion that would change a value
is refused, and every bad file or option is one line on stderr, never a traceback."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

from fuser.dialects.ir import FuserDiagnostic
from fuser.tools.fuser_run import _load_input, main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROW_SUM = os.path.join(ROOT, "examples", "row_sum.mlir")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path / "cache"))


def _no_gpu() -> bool:
    from fuser.runtime import driver

    try:
        driver.require_gpu()
    except driver.NoGPUError:
        return True
    return False


def test_bad_option_is_an_error_on_any_machine(capsys):
    assert main([ROW_SUM, "-p", "convert-fusion-to-sched{bogus=1}"]) == 1
    assert "bad options for pass 'convert-fusion-to-sched'" in capsys.readouterr().err


def test_unknown_input_name(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((4, 4), np.float32))
    assert main([ROW_SUM, "--input", f"q={tmp_path / 'x.npy'}"]) == 1
    err = capsys.readouterr().err
    assert "--input q=...: the fusion has no argument 'q'; its arguments are x" in err


@pytest.mark.skipif(not _no_gpu(), reason="a GPU is here: fuser-run runs the kernels")
def test_without_a_gpu_one_sentence_then_the_reference(capsys):
    assert main([ROW_SUM]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("fuser-run: compiled in ") and out[0].endswith(
        "no GPU here, so these are the reference interpreter's outputs")
    assert out[1].startswith("  output 0: shape (4097,)")


# ------------------------------------------------------------------ --input files

BF16 = np.dtype(ml_dtypes.bfloat16)


def _double(tmp_path, dt: str) -> str:
    """A fusion y = x + x of a 4x8 tensor of element type dt."""
    path = tmp_path / f"double_{dt}.mlir"
    path.write_text(f"""func.func @f(%x: tensor<4x8x{dt}>) -> tensor<4x8x{dt}> {{
  %y = fusion.add %x, %x : tensor<4x8x{dt}>
  func.return %y : tensor<4x8x{dt}>
}}""")
    return str(path)


def _cast_to_f32(tmp_path, dt: str) -> str:
    """A fusion y = cast(x) to f32 of a 4x8 tensor of element type dt."""
    path = tmp_path / f"cast_{dt}.mlir"
    path.write_text(f"""func.func @f(%x: tensor<4x8x{dt}>) -> tensor<4x8xf32> {{
  %y = fusion.cast %x : tensor<4x8x{dt}> to tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}}""")
    return str(path)


def _one_line_error(capsys, *needles: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith("fuser-run: error: ") and err.count("\n") == 1, err
    for n in needles:
        assert n in err, err
    return err


def test_bf16_npy_from_ml_dtypes_loads_as_bf16(tmp_path, capsys):
    """np.save writes an ml_dtypes bfloat16 array as 2-byte void; it used to fail with
    'No cast function available.'"""
    x = (np.arange(32, dtype=np.float32).reshape(4, 8) / 4 - 3).astype(BF16)
    np.save(tmp_path / "x.npy", x)
    loaded = _load_input(str(tmp_path / "x.npy"), "--input x=x.npy", "x", (4, 8), "bf16", BF16)
    assert loaded.dtype == BF16 and np.array_equal(loaded.view(np.uint16), x.view(np.uint16))
    assert main([_double(tmp_path, "bf16"), "--input", f"x={tmp_path / 'x.npy'}",
                 "--save-outputs", str(tmp_path / "out_"), "--reps", "1"]) == 0
    out = np.load(tmp_path / "out_0.npy").view(BF16)
    assert np.array_equal(out.astype(np.float32), 2 * x.astype(np.float32))
    # a bf16 file into an f32 input widens exactly
    f32 = _load_input(str(tmp_path / "x.npy"), "--input x=x.npy", "x", (4, 8), "f32", np.dtype(np.float32))
    assert np.array_equal(f32, x.astype(np.float32))


@pytest.mark.parametrize("dt, np_dtype, values", [
    ("f32", np.float32, np.linspace(-1, 1, 32) / 3),
    ("f16", np.float16, np.linspace(-1, 1, 32) / 3),
    ("bf16", BF16, np.linspace(-1, 1, 32) / 3),
    ("f64", np.float64, np.linspace(-1, 1, 32) / 3),
    ("i1", np.bool_, np.arange(32) % 3 == 0),
    ("i64", np.int64, np.arange(32) * (2**40 + 1) - 2**45),
])
def test_matching_dtype_loads_unchanged(tmp_path, dt, np_dtype, values):
    a = np.asarray(values).astype(np_dtype).reshape(4, 8)
    np.save(tmp_path / "a.npy", np.asfortranarray(a))  # Fortran order comes back C-contiguous
    got = _load_input(str(tmp_path / "a.npy"), "--input x=a.npy", "x", (4, 8), dt, np.dtype(np_dtype))
    assert got.dtype == np.dtype(np_dtype) and got.flags.c_contiguous
    assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(a).view(np.uint8))


@pytest.mark.parametrize("dt, values", [
    ("i1", np.arange(32) % 3 == 0),
    ("i64", np.arange(32, dtype=np.int64) - 7),
])
def test_integer_and_bool_inputs_through_the_tool(tmp_path, dt, values):
    x = values.reshape(4, 8)
    np.save(tmp_path / "x.npy", x)
    assert main([_cast_to_f32(tmp_path, dt), "--input", f"x={tmp_path / 'x.npy'}",
                 "--save-outputs", str(tmp_path / "out_"), "--reps", "1"]) == 0
    assert np.array_equal(np.load(tmp_path / "out_0.npy"), x.astype(np.float32))


@pytest.mark.parametrize("saved, dt, want, ok", [
    (np.arange(32, dtype=np.int64) - 16, "f32", np.float32, True),    # small integers are exact
    (np.full(32, 2**24 + 1, dtype=np.int64), "f32", np.float32, False),
    (np.full(32, 2**62, dtype=np.int64), "f16", np.float16, False),   # overflows to inf
    (np.arange(32, dtype=np.float64) / 4, "f32", np.float32, True),   # representable float64
    (np.linspace(0, 1, 32), "f32", np.float32, False),               # rounding
    (np.linspace(0, 1, 32).astype(np.float32), "bf16", BF16, False),
    (np.array([np.nan, np.inf] * 16), "f16", np.float16, True),
    (np.full(32, 1e300), "f32", np.float32, False),
    (np.arange(32, dtype=np.uint8), "i64", np.int64, True),
    (np.full(32, 2**64 - 1, dtype=np.uint64), "i64", np.int64, False),
    (np.ones(32, dtype=np.bool_), "f32", np.float32, True),
    (np.ones(32, dtype=np.bool_), "i64", np.int64, True),
    (np.arange(32, dtype=np.float32), "i64", np.int64, False),         # float into integer: never
    (np.ones(32, dtype=np.float32), "i1", np.bool_, False),            # float into i1: never
    (np.ones(32, dtype=np.int64), "i1", np.bool_, False),              # integer into i1: never
    (np.ones(32, dtype=np.complex64), "f32", np.float32, False),       # complex: never
])
def test_lossy_conversions_are_refused(tmp_path, saved, dt, want, ok):
    np.save(tmp_path / "a.npy", saved.reshape(4, 8))
    load = lambda: _load_input(str(tmp_path / "a.npy"), "--input x=a.npy", "x", (4, 8), dt,  # noqa: E731
                               np.dtype(want))
    if ok:
        got = load()
        assert got.dtype == np.dtype(want)
        with np.errstate(invalid="ignore"):
            assert np.array_equal(got.astype(np.float64), saved.reshape(4, 8).astype(np.float64), equal_nan=True)
    else:
        with pytest.raises(FuserDiagnostic) as e:
            load()
        msg = str(e.value)
        assert "\n" not in msg and "refused" in msg
        assert msg.startswith(f"error: --input x=a.npy: {saved.dtype} array into input 'x' of type {dt}: "), msg


def test_lossy_conversion_through_the_tool(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.linspace(0, 1, 32).reshape(4, 8))
    assert main([_double(tmp_path, "f32"), "--input", f"x={tmp_path / 'x.npy'}"]) == 1
    _one_line_error(capsys, "float64 array into input 'x' of type f32: refused, 30 of 32 values would change")


def _write_bad_files(tmp_path) -> dict[str, str]:
    np.save(tmp_path / "obj.npy", np.array([1, "a", None], dtype=object), allow_pickle=True)
    np.savez(tmp_path / "two.npz", a=np.zeros(3), b=np.zeros(3))
    (tmp_path / "text.npy").write_text("1 2 3\n")
    np.save(tmp_path / "full.npy", np.zeros((4, 8), np.float32))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "full.npy").read_bytes()[:-20])
    np.save(tmp_path / "str.npy", np.full((4, 8), "ab"))
    np.save(tmp_path / "rec.npy", np.zeros((4, 8), dtype=[("a", "f4"), ("b", "i4")]))
    return {n: str(tmp_path / n) for n in ("obj.npy", "two.npz", "text.npy", "cut.npy", "str.npy", "rec.npy")}


@pytest.mark.parametrize("which, message", [
    ("obj.npy", "holds an object array"),
    ("two.npz", "is an .npz archive"),
    ("text.npy", "is not a .npy file"),
    ("cut.npy", "is not a readable .npy file"),
    ("str.npy", "<U2 array into input 'x' of type f32: refused"),
    ("rec.npy", "array into input 'x' of type f32: refused"),
    ("missing.npy", "cannot read"),
])
def test_bad_input_files_are_one_line_errors(tmp_path, capsys, which, message):
    files = _write_bad_files(tmp_path)
    path = files.get(which, str(tmp_path / which))
    assert main([_double(tmp_path, "f32"), "--input", f"x={path}"]) == 1
    _one_line_error(capsys, f"--input x={path}: ", message)


@pytest.mark.parametrize("option, message", [
    ("x.npy", "--input x.npy: expected NAME=FILE.npy"),
    ("x=", "--input x=: expected NAME=FILE.npy"),
    ("=x.npy", "--input =x.npy: expected NAME=FILE.npy"),
])
def test_input_without_name_or_file(tmp_path, capsys, option, message):
    assert main([_double(tmp_path, "f32"), "--input", option]) == 1
    _one_line_error(capsys, message, "the fusion's arguments are x")


def test_input_given_twice(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((4, 8), np.float32))
    x = tmp_path / "x.npy"
    assert main([_double(tmp_path, "f32"), "--input", f"x={x}", "--input", f"0={x}"]) == 1
    _one_line_error(capsys, f"--input 0={x}: argument 'x' is already given by --input x={x}")


def test_reps_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        main([ROW_SUM, "--reps", "0"])
    assert "--reps: expected a count of at least 1, got 0" in capsys.readouterr().err


def test_an_fp8_matmul_widens_the_check_by_its_accumulation():
    """Hopper's FP8 wgmma truncates its f32 accumulator (fp8.matmul_accumulation_error): every
    output of a fusion with an FP8 matmul is checked to that bound (the sanitizer's matmul_fp8,
    K = 640, came back 3.9e-4 from float64 on an H200), others to their dtype's tolerance."""
    from fuser.dialects.fusion.fp8 import matmul_accumulation_error
    from fuser.dialects.ir import parse_module
    from fuser.tools.fuser_run import _fp8_matmul_error
    from fuser.tools.sanitize import CASES

    def fn_of(text):
        return next(op for op in parse_module(text).body.block.ops if op.name == "func.func")

    fp8 = CASES["matmul_fp8"][0]
    assert _fp8_matmul_error(fn_of(fp8)) == matmul_accumulation_error(640) == 20 * 2.0 ** -13
    assert _fp8_matmul_error(fn_of(CASES["matmul_rows_store"][0])) == 0.0
