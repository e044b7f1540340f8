"""Every op of the fusion dialect on every element type: it compiles to PTX, or the fusion level
refuses it with a located message naming the op. No error may first appear in a lower dialect's
verifier (arith, sched, llvm, nvvm) or in LLVM: that is a fusion the dialect accepted and the
compiler could not build (issue 28: casts from i1 and i64 failed in upstream's arith verifier,
a cast to f64 in sched.store).

The ops come from the dialect's own op lists, so a new op without a case here fails
`test_the_sweep_covers_every_op`.
"""

from __future__ import annotations

import re

import pytest

from fuser.dialects import fusion as F
from fuser.dialects.ir import FuserDiagnostic
from fuser.driver import compile_fusion

SUPPORTED = list(F.DTYPE_NAMES)  # short names (u8 is spelled ui8 in MLIR: `_t`)
UNSUPPORTED = ["si8", "ui16", "i128", "f8E4M3FNUZ"]  # (f8E4M3FN and f8E5M2 are supported: issue 34)
FP8 = ["f8e4m3fn", "f8e5m2"]  # storage only: casts, shape ops, full and where; no arithmetic
FLOATS = ["f32", "f16", "bf16", "f64"]  # what math, cmp, where and reductions take (f64 in f64)
INTS = ["i8", "i16", "i32", "i64", "u8"]
# Ops of integers (issue 31) beside floats; the divisions with a rounding mode take integers only
INT_OPS = {"fusion.neg", "fusion.abs", "fusion.add", "fusion.sub", "fusion.mul", "fusion.max", "fusion.min",
           "fusion.pow", "fusion.fmod", "fusion.remainder", "fusion.trunc_div", "fusion.floor_div",
           "fusion.bitwise_and", "fusion.bitwise_or", "fusion.bitwise_xor", "fusion.bitwise_not",
           "fusion.bitwise_left_shift", "fusion.bitwise_right_shift", "fusion.logical_right_shift", "fusion.gcd"}
INT_ONLY = {"fusion.trunc_div", "fusion.floor_div", "fusion.bitwise_left_shift", "fusion.bitwise_right_shift",
            "fusion.logical_right_shift", "fusion.gcd"}
# The bitwise ops of integers and of i1 masks (there the logical ones)
INT_AND_MASK = {"fusion.bitwise_and", "fusion.bitwise_or", "fusion.bitwise_xor", "fusion.bitwise_not"}
# Float ops of f64 too (nextafter steps the bits of any float type; no f64 math otherwise)
F64_OPS = {"fusion.nextafter"}
# ... and of integers and i1 masks alike
ORDERED_OPS = {"fusion.cmp", "fusion.where", "fusion.full"}

R, C = 33, 64


def _t(shape, dt):
    return "tensor<" + "x".join(map(str, shape)) + "x" + {"u8": "ui8", "f8e4m3fn": "f8E4M3FN", "f8e5m2": "f8E5M2"}.get(dt, dt) + ">"


def _case(op: str, dt: str) -> str:
    """A one-op fusion of `op` on element type `dt` (its main operand's)."""
    x, row, flat = _t((R, C), dt), _t((C,), dt), _t((R * C,), dt)
    m = _t((R, C), "i1")
    w = _t((128, C), dt) if dt in FP8 else _t((C, 128), dt)  # a matmul's B
    red = _t((R,), dt)
    red32 = _t((R,), "f64" if dt == "f64" else "f32")  # welford's statistics: f32 (f64 for f64)
    body = {
        "unary": f"%r = fusion.{{name}} %x : {x}",
        "test": f"%r = fusion.{{name}} %x : {x}",
        "binary": f"%r = fusion.{{name}} %x, %y : {x}",
        "fusion.cmp": f"%r = fusion.cmp lt, %x, %y : {x}",
        "fusion.where": f"%r = fusion.where %m, %x, %y : {x}",
        "fusion.full": f"%r = fusion.full {'1.5' if dt in FLOATS + FP8 + UNSUPPORTED else '1'} : {x}",
        "fusion.broadcast": f"%r = fusion.broadcast %b dims [0] : {row} to {x}",
        "fusion.reshape": f"%r = fusion.reshape %x : {x} to {flat}",
        "fusion.permute": f"%r = fusion.permute %x [1, 0] : {x} to {_t((C, R), dt)}",
        "fusion.segment_set": f"%r = fusion.segment_set %x : {x} to {x}",
        "fusion.slice": f"%r = fusion.slice %x start [1, 3] stop [R_, 64] step [2, 3] : {x} to {_t((16, 21), dt)}".replace(
            "R_", str(R)),
        "fusion.pad": f"%v = fusion.full 0 : tensor<{_t((1,), dt)[9:]}\n  %r = fusion.pad %x, %v low [1, -2] high [0, 3] : "
                      f"{x} to {_t((R + 1, C + 1), dt)}",
        "fusion.cat": f"%r = fusion.cat %x, %y, %x dim 0 : {x}, {x}, {x} to {_t((3 * R, C), dt)}",
        "fusion.flip": f"%r = fusion.flip %x dims [0, 1] : {x} to {x}",
        "fusion.as_strided": f"%r = fusion.as_strided %s strides [1, {R + 2}] offset 3 : {_t((3 + R + (R + 2) * (C - 1), ), dt)} "
                             f"to {x}",
        "fusion.gather": f"%r = fusion.gather %x, %gi dim 1 : {x}, {_t((R, 5), 'i64')} to {_t((R, 5), dt)}",
        "fusion.index_select": f"%r = fusion.index_select %x, %si dim 0 : {x}, {_t((7,), 'i32')} to {_t((7, C), dt)}",
        "fusion.scatter": f"%r = fusion.scatter %x, %gi, %g dim 1 : {x}, {_t((R, 5), 'i64')}, {_t((R, 5), dt)} to {x}",
        "fusion.scatter_add_atomic": f"%r = fusion.scatter_add_atomic %x, %gi, %g dim 1 : {x}, {_t((R, 5), 'i64')}, "
                                     f"{_t((R, 5), dt)} to {x}",
        "fusion.reduce": f"%r = fusion.reduce sum %x dims [1] : {x} to {red}",
        "fusion.scan": f"%r = fusion.scan max %x dim 1 : {x} to {x}",
        "fusion.sort": f"%r, %ri = fusion.sort %x dim 1 descending k 5 : {x} to {_t((R, 5), dt)}, {_t((R, 5), 'i64')}",
        "fusion.welford": f"%a, %q, %r = fusion.welford %x dims [1] : {x} to {red32}, {red32}, {_t((R,), 'i64')}",
        "fusion.var_mean": f"%r, %mean = fusion.var_mean %x dims [1] correction 1 : {x} to {red32}, {red32}",
        # (FP8 wgmmas read B K-major: stored [N, K], transpose_b)
        "fusion.matmul": f"%r = fusion.matmul %x, %w{' transpose_b' if dt in FP8 else ''} : {x}, {w} -> {_t((R, 128), 'f32')}",
    }
    kind = "unary" if op in _UNARY or op == "fusion.logical_not" else "binary" if op in _BINARY + _LOGICAL \
        else "test" if op in _TESTS else op
    line = body[kind].format(name=op.removeprefix("fusion."))
    args = (f"%x: {x}, %y: {x}, %m: {m}, %b: {row}, %w: {w}, %gi: {_t((R, 5), 'i64')}, %si: {_t((7,), 'i32')}, "
            f"%s: {_t((3 + R + (R + 2) * (C - 1),), dt)}, %g: {_t((R, 5), dt)}")
    rtype = _result_type(line)
    return f"func.func @sweep({args}) -> {rtype} {{\n  {line}\n  func.return %r : {rtype}\n}}\n"


def _result_type(line: str) -> str:
    """The type of %r: the last type the op spells for it."""
    if "fusion.cmp" in line or any(f"{t} " in line for t in _TESTS):
        return _t((R, C), "i1")
    if "welford" in line:
        return _t((R,), "i64")
    if "var_mean" in line:
        return line.rsplit("to ", 1)[1].split(",")[0].strip()
    if "matmul" in line:
        return line.rsplit("-> ", 1)[1].strip()
    if "fusion.sort" in line:  # (its values)
        return line.rsplit("to ", 1)[1].split(",")[0].strip()
    return line.rsplit(" ", 1)[1] if " to " not in line else line.rsplit("to ", 1)[1].strip()


_UNARY = [op.name for op in F.UNARY_OPS]
_BINARY = [op.name for op in F.BINARY_OPS]
_TESTS = [op.name for op in F.FLOAT_TEST_OPS]
_LOGICAL = [op.name for op in F.LOGICAL_OPS if op.name != "fusion.logical_not"]
OPS = _UNARY + _BINARY + _TESTS + _LOGICAL + ["fusion.logical_not", "fusion.cmp", "fusion.where", "fusion.full", "fusion.broadcast", "fusion.reshape",
                          "fusion.permute", "fusion.slice", "fusion.pad", "fusion.cat", "fusion.flip", "fusion.gather",
                          "fusion.index_select", "fusion.as_strided", "fusion.scatter", "fusion.scatter_add_atomic",
                          "fusion.segment_set", "fusion.reduce", "fusion.scan", "fusion.sort", "fusion.welford",
                          "fusion.var_mean", "fusion.matmul"]
# Made by passes or around other ops, not on their own: a cast has its own sweep below.
NOT_SWEPT = {"fusion.cast": "test_every_cast_compiles", "fusion.segment": "written by fusion-segment",
             "fusion.yield": "the terminator of fusion.segment",
             "fusion.iota": "test_creation_ops_on_every_element_type", "fusion.uniform": "(the same)",
             "fusion.normal": "(the same)"}
# What must compile, not merely be refused: shape ops on every supported type, the rest on floats.
SHAPE_LIKE = {"fusion.broadcast", "fusion.reshape", "fusion.permute", "fusion.slice", "fusion.pad", "fusion.cat",
              "fusion.flip", "fusion.gather", "fusion.index_select", "fusion.segment_set", "fusion.as_strided",
              "fusion.scatter", "fusion.full"}  # (full: of every type, f64 too)
# The matmul scheduler takes bf16 and f16 operands; on a 33-row output of f32 operands it refuses.
MATMUL_TYPES = {"bf16", "f16", "f8e4m3fn", "f8e5m2"}


def _must_compile(op: str, dt: str) -> bool:
    if dt not in SUPPORTED:
        return False
    if op in SHAPE_LIKE:
        return True
    if dt in FP8:  # (and `where`: a select of bits, and matmul's FP8 wgmmas; every other op refuses FP8, as torch's do)
        return op in ("fusion.where", "fusion.matmul")
    if op == "fusion.matmul":
        return dt in MATMUL_TYPES
    if op.startswith("fusion.logical_") and op not in INT_ONLY:  # (logical_right_shift is an integer op)
        return dt == "i1"
    if op in ORDERED_OPS:
        return dt in FLOATS + INTS + ["i1"]
    if op == "fusion.reduce":  # a sum of integers (issue 31; of masks it must be i64, refused here)
        return dt in FLOATS + INTS
    if op == "fusion.scan":  # a running max of floats, integers and masks (issue 31)
        return dt in FLOATS + INTS + ["i1"]
    if op == "fusion.scatter_add_atomic":  # what red.global.add takes (issue 32)
        return dt in ("f32", "f64", "i32", "i64")
    if op == "fusion.sort":  # topk of every float (f64 too), integer and mask (issue 32)
        return dt in FLOATS + INTS + ["i1", "f64"]
    if op in INT_ONLY:
        return dt in INTS
    if op in F64_OPS:
        return dt in FLOATS + ["f64"]
    if op in INT_AND_MASK:
        return dt in INTS + ["i1"]
    return dt in FLOATS or (op in INT_OPS and dt in INTS)


def _compile_or_refusal(text: str) -> str | None:
    """None when it compiles to PTX; else the error, which must be a located fusion-level one."""
    try:
        compile_fusion(text)
        return None
    except FuserDiagnostic as e:
        msg = str(e)
    first = msg.splitlines()[0]
    # located (file:line:col), naming a fusion op or the function; nothing from a lower level
    assert re.match(r"[^:\s]+:\d+:\d+: error: .*'(fusion\.\w+|func\.func)'", first), msg
    assert not re.search(r"'(arith|sched|llvm|nvvm|gpu|vector|memref|math|scf)\.|LLVM|<unknown>", msg), msg
    return first


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))


@pytest.mark.parametrize("dt", SUPPORTED + UNSUPPORTED)
@pytest.mark.parametrize("op", OPS)
def test_every_op_on_every_element_type(op, dt):
    error = _compile_or_refusal(_case(op, dt))
    if _must_compile(op, dt):
        assert error is None, error
    elif dt in UNSUPPORTED:
        assert error is not None and "is not supported" in error, error
    else:  # a supported type the op does not take: the fusion level refuses it, naming the op
        assert error is not None and f"'{op}'" in error, (op, dt)
        if dt in FP8 and not op.startswith("fusion.logical_"):  # (those take masks: "expected i1 (a mask)")
            # ... and says what to do, as torch's "not implemented for 'Float8_e4m3fn'" does not
            assert "FP8 tensors are storage only" in error and "cast to f32 or bf16 first" in error, error


@pytest.mark.parametrize("src", SUPPORTED + UNSUPPORTED[:1])
def test_every_cast_compiles(src):
    """One fusion casting a tensor of `src` to every supported type (and to an unsupported one,
    which the verifier refuses)."""
    x = _t((R, C), src)
    outs = [d for d in SUPPORTED if d != src]
    lines = "\n".join(f"  %c{i} = fusion.cast %x : {x} to {_t((R, C), d)}" for i, d in enumerate(outs))
    types = ", ".join(_t((R, C), d) for d in outs)
    text = (f"func.func @casts(%x: {x}) -> ({types}) {{\n{lines}\n"
            f"  func.return {', '.join(f'%c{i}' for i in range(len(outs)))} : {types}\n}}\n")
    error = _compile_or_refusal(text)
    assert (error is None) == (src in SUPPORTED), error


def test_the_sweep_covers_every_op():
    ops = {op.name for op in F.Fusion.operations}
    assert ops == set(OPS) | set(NOT_SWEPT), sorted(ops ^ (set(OPS) | set(NOT_SWEPT)))


# What the creation ops take (issue 31): iota every number type, uniform the floats, normal the
# floats the kernels have log, sin and cos for (not f64).
CREATION_TYPES = {"fusion.iota": FLOATS + ["f64"] + INTS, "fusion.uniform": FLOATS + ["f64"], "fusion.normal": FLOATS}


@pytest.mark.parametrize("dt", SUPPORTED + UNSUPPORTED[:1])
@pytest.mark.parametrize("op", sorted(CREATION_TYPES))
def test_creation_ops_on_every_element_type(op, dt):
    """A creation op of each result type compiles to PTX where the op takes that type; elsewhere
    the verifier refuses it, naming the op."""
    x, key = _t((R, C), dt), "tensor<i64>"
    line = {"fusion.iota": f"%r = fusion.iota start 1 step 2 : {x}",
            "fusion.uniform": f"%r = fusion.uniform %s, %o low 0.0 high 1.0 : {x}",
            "fusion.normal": f"%r = fusion.normal %s, %o mean 0.0 std 1.0 : {x}"}[op]
    text = f"func.func @sweep(%s: {key}, %o: {key}) -> {x} {{\n  {line}\n  func.return %r : {x}\n}}\n"
    error = _compile_or_refusal(text)
    if dt in CREATION_TYPES[op]:
        assert error is None, error
    else:
        assert error is not None and (f"'{op}'" in error or "is not supported" in error), (op, dt, error)
