"""The numpy reference interpreter against straightforward numpy, op by op."""

import math
import zlib

import ml_dtypes
import numpy as np
import pytest

from fuser.runtime.arrays import ArgumentError
from fuser.dialects.ir import parse_module
from fuser.runtime.reference import (
    UnsupportedOpError,
    find_func,
    reference_from_text,
    run_reference,
)

BF16 = ml_dtypes.bfloat16
NP = {"f32": np.float32, "f16": np.float16, "bf16": BF16}
# Relative tolerance of one rounding to each dtype (a couple of ulps).
RTOL = {"f32": 2e-6, "f16": 2e-3, "bf16": 1.6e-2}


@pytest.fixture
def rng(request):
    # Different data per test, reproducible from the test's name.
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def run1(text, *args, precision="native"):
    return reference_from_text(text)(*args, precision=precision)


def close(got, want, dtype, rtol=None, atol=None):
    rtol = RTOL[dtype] if rtol is None else rtol
    atol = rtol if atol is None else atol
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


def unary_text(op, t, attrs=""):
    return f"""func.func @f(%x: {t}) -> {t} {{
  %y = fusion.{op} %x {attrs}: {t}
  func.return %y : {t}
}}"""


def _erf(x):
    return np.vectorize(math.erf)(x)


UNARY = {
    "neg": (lambda x: -x, False),
    "abs": (np.abs, False),
    "exp": (np.exp, False),
    "log": (np.log, True),
    "tanh": (np.tanh, False),
    "sqrt": (np.sqrt, True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), True),
    "relu": (lambda x: np.where(x > 0, x, 0.0), False),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), False),
    "silu": (lambda x: x / (1 + np.exp(-x)), False),
    "gelu": (lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), False),
}


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op, dtype, rng):
    fn, positive = UNARY[op]
    x = rng.standard_normal((5, 33)) * 2
    if positive:
        x = np.abs(x) + 0.05
    x = x.astype(NP[dtype])
    (y,) = run1(unary_text(op, f"tensor<5x33x{dtype}>"), x)
    assert y.dtype == NP[dtype] and y.shape == x.shape
    close(y, fn(x.astype(np.float64)), dtype)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_gelu_tanh(dtype, rng):
    x = rng.standard_normal((7, 9)).astype(NP[dtype]) * 3
    (y,) = run1(unary_text("gelu", f"tensor<7x9x{dtype}>", '{approximate = "tanh"} '), x)
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    close(y, want, dtype)
    # ... and it is not the erf form (they differ by up to ~1e-3 around |x| ~ 2).
    if dtype == "f32":
        (exact,) = run1(unary_text("gelu", "tensor<7x9xf32>"), x)
        assert not np.array_equal(y, exact)


def test_native_computes_in_f32_and_rounds():
    # exp of a bf16 value is computed in f32 and rounded once to bf16.
    x = np.array([0.1, 1.5, -3.25, 7.0], dtype=BF16)
    (y,) = run1(unary_text("exp", "tensor<4xbf16>"), x)
    assert y.dtype == BF16
    np.testing.assert_array_equal(y, np.exp(x.astype(np.float32)).astype(BF16))
    (y64,) = run1(unary_text("exp", "tensor<4xbf16>"), x, precision="f64")
    assert y64.dtype == np.float64
    np.testing.assert_allclose(y64, np.exp(x.astype(np.float64)), rtol=1e-15)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
          "min": np.minimum, "pow": np.power}


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(op, dtype, rng):
    t = f"tensor<6x10x{dtype}>"
    a = rng.standard_normal((6, 10))
    b = rng.standard_normal((6, 10))
    if op == "pow":
        a = np.abs(a) + 0.1
    if op == "div":
        b = np.sign(b) * (np.abs(b) + 0.1)
    a, b = a.astype(NP[dtype]), b.astype(NP[dtype])
    text = f"""func.func @f(%a: {t}, %b: {t}) -> {t} {{
  %c = fusion.{op} %a, %b : {t}
  func.return %c : {t}
}}"""
    (c,) = run1(text, a, b)
    assert c.dtype == NP[dtype]
    close(c, BINARY[op](a.astype(np.float64), b.astype(np.float64)), dtype)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_propagate_nan(op):
    t = "tensor<4xf32>"
    a = np.array([np.nan, 1.0, 2.0, np.nan], np.float32)
    b = np.array([0.0, np.nan, 3.0, np.nan], np.float32)
    text = f"func.func @f(%a: {t}, %b: {t}) -> {t} {{\n %c = fusion.{op} %a, %b : {t}\n func.return %c : {t}\n}}"
    (c,) = run1(text, a, b)
    assert np.isnan(c[[0, 1, 3]]).all()
    assert c[2] == (3.0 if op == "max" else 2.0)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_order_signed_zeros(op):
    """-0 is below +0 (IEEE 754-2019, the kernels' max.NaN / min.NaN, torch.maximum / minimum):
    numpy's own gives minimum(-0, +0) = +0, and atan2(min(-0, +0), -1) came out +pi where the
    H100 gave -pi (GPU fuzz seed 12015053)."""
    t = "tensor<4xf32>"
    a = np.array([-0.0, 0.0, -0.0, 0.0], np.float32)
    b = np.array([0.0, -0.0, -0.0, 0.0], np.float32)
    text = f"func.func @f(%a: {t}, %b: {t}) -> {t} {{\n %c = fusion.{op} %a, %b : {t}\n func.return %c : {t}\n}}"
    (c,) = run1(text, a, b)
    assert (c == 0).all()
    assert np.signbit(c).tolist() == ([False, False, True, False] if op == "max" else [True, True, True, False])
    r = "tensor<3x2xf32>"
    text = f"func.func @f(%a: {r}) -> tensor<3xf32> {{\n %c = fusion.reduce {op} %a dims [1] : {r} to tensor<3xf32>\n" \
           " func.return %c : tensor<3xf32>\n}"
    (c,) = run1(text, np.array([[0.0, -0.0], [-0.0, 0.0], [-0.0, -0.0]], np.float32))
    assert np.signbit(c).tolist() == ([False, False, True] if op == "max" else [True, True, True])


@pytest.mark.parametrize("pred,fn", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                                     ("gt", np.greater), ("ge", np.greater_equal)])
def test_cmp(pred, fn, rng):
    a = rng.integers(-3, 4, (4, 8)).astype(BF16)  # small integers: plenty of ties
    b = rng.integers(-3, 4, (4, 8)).astype(BF16)
    t = "tensor<4x8xbf16>"
    text = f"func.func @f(%a: {t}, %b: {t}) -> tensor<4x8xi1> {{\n %c = fusion.cmp {pred}, %a, %b : {t}\n func.return %c : tensor<4x8xi1>\n}}"
    (c,) = run1(text, a, b)
    assert c.dtype == np.bool_
    np.testing.assert_array_equal(c, fn(a.astype(np.float32), b.astype(np.float32)))


def test_where(rng):
    c = rng.random((3, 7)) < 0.5
    a = rng.standard_normal((3, 7)).astype(np.float16)
    b = rng.standard_normal((3, 7)).astype(np.float16)
    text = """func.func @f(%c: tensor<3x7xi1>, %a: tensor<3x7xf16>, %b: tensor<3x7xf16>) -> tensor<3x7xf16> {
  %r = fusion.where %c, %a, %b : tensor<3x7xf16>
  func.return %r : tensor<3x7xf16>
}"""
    (r,) = run1(text, c, a, b)
    np.testing.assert_array_equal(r, np.where(c, a, b))


@pytest.mark.parametrize("src,dst", [("f32", "bf16"), ("f32", "f16"), ("bf16", "f32"), ("f16", "bf16"), ("bf16", "f16")])
def test_cast_floats(src, dst, rng):
    x = (rng.standard_normal(64) * 10).astype(NP[src])
    text = f"func.func @f(%x: tensor<64x{src}>) -> tensor<64x{dst}> {{\n %y = fusion.cast %x : tensor<64x{src}> to tensor<64x{dst}>\n func.return %y : tensor<64x{dst}>\n}}"
    (y,) = run1(text, x)
    assert y.dtype == NP[dst]
    # One round-to-nearest-even from the exact source value.
    np.testing.assert_array_equal(y, x.astype(np.float64).astype(np.float32).astype(NP[dst]))
    # In f64 precision a cast does not round.
    (y64,) = run1(text, x, precision="f64")
    np.testing.assert_array_equal(y64, x.astype(np.float64))


def test_cast_masks_and_counts():
    x = np.array([0.0, -1.5, 2.7, -0.0], np.float32)
    text = """func.func @f(%x: tensor<4xf32>, %m: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xf32>, tensor<4xi64>) {
  %b = fusion.cast %x : tensor<4xf32> to tensor<4xi1>
  %f = fusion.cast %m : tensor<4xi1> to tensor<4xf32>
  %i = fusion.cast %x : tensor<4xf32> to tensor<4xi64>
  func.return %b, %f, %i : tensor<4xi1>, tensor<4xf32>, tensor<4xi64>
}"""
    b, f, i = run1(text, x, np.array([True, False, True, False]))
    np.testing.assert_array_equal(b, [False, True, True, False])
    np.testing.assert_array_equal(f, np.array([1, 0, 1, 0], np.float32))
    np.testing.assert_array_equal(i, np.array([0, -1, 2, 0], np.int64))
    assert (b.dtype, f.dtype, i.dtype) == (np.bool_, np.float32, np.int64)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_full(dtype):
    text = f"func.func @f() -> tensor<2x3x{dtype}> {{\n %c = fusion.full -0.3 : tensor<2x3x{dtype}>\n func.return %c : tensor<2x3x{dtype}>\n}}"
    (c,) = run1(text)
    assert c.dtype == NP[dtype] and c.shape == (2, 3)
    np.testing.assert_array_equal(c, np.full((2, 3), -0.3).astype(NP[dtype]))


@pytest.mark.parametrize("dims,out,expand", [
    ([0], (3, 5), lambda x: np.broadcast_to(x[None, :], (3, 5))),
    ([1], (5, 3), lambda x: np.broadcast_to(x[:, None], (5, 3))),
    ([0, 2], (2, 5, 4), lambda x: np.broadcast_to(x[None, :, None], (2, 5, 4))),
])
def test_broadcast(dims, out, expand, rng):
    x = rng.standard_normal(5).astype(np.float32)
    ot = "tensor<" + "x".join(map(str, out)) + "xf32>"
    text = f"func.func @f(%x: tensor<5xf32>) -> {ot} {{\n %y = fusion.broadcast %x dims {dims} : tensor<5xf32> to {ot}\n func.return %y : {ot}\n}}"
    (y,) = run1(text, x)
    np.testing.assert_array_equal(y, expand(x))


def test_reshape_permute_segment_set(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float16)
    text = """func.func @f(%x: tensor<2x3x4xf16>) -> (tensor<6x4xf16>, tensor<4x2x3xf16>, tensor<2x3x4xf16>) {
  %r = fusion.reshape %x : tensor<2x3x4xf16> to tensor<6x4xf16>
  %p = fusion.permute %x [2, 0, 1] : tensor<2x3x4xf16> to tensor<4x2x3xf16>
  %s = fusion.segment_set %x : tensor<2x3x4xf16> to tensor<2x3x4xf16>
  func.return %r, %p, %s : tensor<6x4xf16>, tensor<4x2x3xf16>, tensor<2x3x4xf16>
}"""
    r, p, s = run1(text, x)
    np.testing.assert_array_equal(r, x.reshape(6, 4))
    np.testing.assert_array_equal(p, np.transpose(x, (2, 0, 1)))
    np.testing.assert_array_equal(s, x)
    assert p.flags["C_CONTIGUOUS"]


def _tt(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


@pytest.mark.parametrize("kind,fn", [("sum", np.sum), ("max", np.max), ("min", np.min)])
@pytest.mark.parametrize("dims", [[1], [0, 2], [2]])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype,out_dtype", [("f32", "f32"), ("bf16", "f32"), ("bf16", "bf16"), ("f16", "f16")])
def test_reduce(kind, fn, dims, keepdim, dtype, out_dtype, rng):
    shape = (3, 40, 5)
    x = rng.standard_normal(shape).astype(NP[dtype])
    want = fn(x.astype(np.float64), axis=tuple(dims), keepdims=keepdim)
    text = f"""func.func @f(%x: {_tt(shape, dtype)}) -> {_tt(want.shape, out_dtype)} {{
  %r = fusion.reduce {kind} %x dims {dims}{' keepdim' if keepdim else ''} : {_tt(shape, dtype)} to {_tt(want.shape, out_dtype)}
  func.return %r : {_tt(want.shape, out_dtype)}
}}"""
    (r,) = run1(text, x)
    assert r.dtype == NP[out_dtype] and r.shape == want.shape
    close(r, want, out_dtype)


def test_reduce_sum_accumulates_beyond_f32():
    # 2^24 + 1 + 1 ... : a naive f32 running sum loses every 1.0 after 2^24.
    x = np.ones(1001, np.float32)
    x[0] = 2.0**24
    text = """func.func @f(%x: tensor<1001xf32>) -> tensor<f32> {
  %r = fusion.reduce sum %x dims [0] : tensor<1001xf32> to tensor<f32>
  func.return %r : tensor<f32>
}"""
    (r,) = run1(text, x)
    assert r == np.float32(2.0**24 + 1000)


@pytest.mark.parametrize("keepdim", [False, True])
def test_welford(keepdim, rng):
    x = (rng.standard_normal((6, 50)) * 3 + 1).astype(BF16)
    s = "6x1" if keepdim else "6"
    text = f"""func.func @f(%x: tensor<6x50xbf16>) -> (tensor<{s}xf32>, tensor<{s}xf32>, tensor<{s}xi64>) {{
  %a, %m2, %n = fusion.welford %x dims [1]{' keepdim' if keepdim else ''} : tensor<6x50xbf16> to tensor<{s}xf32>, tensor<{s}xf32>, tensor<{s}xi64>
  func.return %a, %m2, %n : tensor<{s}xf32>, tensor<{s}xf32>, tensor<{s}xi64>
}}"""
    avg, m2, n = run1(text, x)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=keepdim)
    close(avg, mean, "f32")
    close(m2, ((x64 - x64.mean(axis=1, keepdims=True)) ** 2).sum(axis=1, keepdims=keepdim), "f32")
    assert n.dtype == np.int64 and n.shape == mean.shape and (n == 50).all()


@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("dims", [[1], [0, 1]])
def test_var_mean(correction, dims, rng):
    x = (rng.standard_normal((4, 30)) * 2 - 1).astype(np.float16)
    x64 = x.astype(np.float64)
    want_var = np.var(x64, axis=tuple(dims), ddof=correction)
    want_mean = np.mean(x64, axis=tuple(dims))
    ot = _tt(want_var.shape, "f32")
    text = f"""func.func @f(%x: tensor<4x30xf16>) -> ({ot}, {ot}) {{
  %v, %m = fusion.var_mean %x dims {dims} correction {correction} : tensor<4x30xf16> to {ot}, {ot}
  func.return %v, %m : {ot}, {ot}
}}"""
    v, m = run1(text, x)
    assert v.dtype == np.float32 and m.dtype == np.float32
    close(v, want_var, "f32")
    close(m, want_mean, "f32")


def test_var_mean_keepdim_and_degenerate_correction():
    text = """func.func @f(%x: tensor<2x1xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>) {
  %v, %m = fusion.var_mean %x dims [1] correction 1 keepdim : tensor<2x1xf32> to tensor<2x1xf32>, tensor<2x1xf32>
  func.return %v, %m : tensor<2x1xf32>, tensor<2x1xf32>
}"""
    v, m = run1(text, np.array([[3.0], [-1.0]], np.float32))
    assert v.shape == (2, 1) and np.isnan(v).all()  # 0/0, as torch.var_mean of one element
    np.testing.assert_array_equal(m, [[3.0], [-1.0]])


def test_var_mean_large_mean_small_variance(rng):
    # A one-pass E[x^2]-E[x]^2 in f32 (or even f64 for a large mean) cancels catastrophically;
    # the reference's f64 mode must agree with a float64 two-pass computation.
    x = (1.0e4 + 1.0e-2 * rng.standard_normal((3, 4096))).astype(np.float32)
    text = """func.func @f(%x: tensor<3x4096xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %v, %m = fusion.var_mean %x dims [1] correction 1 : tensor<3x4096xf32> to tensor<3xf32>, tensor<3xf32>
  func.return %v, %m : tensor<3xf32>, tensor<3xf32>
}"""
    x64 = x.astype(np.float64)
    mean = x64.sum(axis=1) / x.shape[1]
    var = ((x64 - mean[:, None]) ** 2).sum(axis=1) / (x.shape[1] - 1)
    v64, m64 = run1(text, x, precision="f64")
    assert v64.dtype == np.float64
    np.testing.assert_allclose(v64, var, rtol=1e-9)
    np.testing.assert_allclose(m64, mean, rtol=1e-14)
    v, m = run1(text, x)
    np.testing.assert_allclose(v, var, rtol=1e-5)
    # The data's own variance is ~1e-4 once rounded to f32 (the f32 grid near 1e4 is ~1e-3).
    assert 1e-5 < v.min() and v.max() < 1e-3


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype,out", [("bf16", "f32"), ("f16", "f16"), ("f32", "f32"), ("bf16", "bf16")])
def test_matmul(ta, tb, dtype, out, rng):
    m, n, k = 17, 9, 40
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(NP[dtype])
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(NP[dtype])
    flags = (" transpose_a" if ta else "") + (" transpose_b" if tb else "")
    at, bt, ot = _tt(a.shape, dtype), _tt(b.shape, dtype), _tt((m, n), out)
    text = f"""func.func @f(%a: {at}, %b: {bt}) -> {ot} {{
  %c = fusion.matmul %a, %b{flags} : {at}, {bt} -> {ot}
  func.return %c : {ot}
}}"""
    (c,) = run1(text, a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = (a64.T if ta else a64) @ (b64.T if tb else b64)
    assert c.dtype == NP[out] and c.shape == (m, n)
    close(c, want, out, rtol=RTOL[out] * 4, atol=RTOL[out] * 4)


def test_chain_of_ops_native_vs_f64(rng):
    # A softmax in bf16 I/O with f32 math: native and f64 agree to bf16 precision.
    text = """func.func @softmax(%x: tensor<8x128xbf16>) -> tensor<8x128xbf16> {
  %xf = fusion.cast %x : tensor<8x128xbf16> to tensor<8x128xf32>
  %mx = fusion.reduce max %xf dims [1] : tensor<8x128xf32> to tensor<8xf32>
  %mb = fusion.broadcast %mx dims [1] : tensor<8xf32> to tensor<8x128xf32>
  %d = fusion.sub %xf, %mb : tensor<8x128xf32>
  %e = fusion.exp %d : tensor<8x128xf32>
  %s = fusion.reduce sum %e dims [1] keepdim : tensor<8x128xf32> to tensor<8x1xf32>
  %s1 = fusion.reshape %s : tensor<8x1xf32> to tensor<8xf32>
  %sb = fusion.broadcast %s1 dims [1] : tensor<8xf32> to tensor<8x128xf32>
  %p = fusion.div %e, %sb : tensor<8x128xf32>
  %y = fusion.cast %p : tensor<8x128xf32> to tensor<8x128xbf16>
  func.return %y : tensor<8x128xbf16>
}"""
    x = (rng.standard_normal((8, 128)) * 4).astype(BF16)
    (y,) = run1(text, x)
    (y64,) = run1(text, x, precision="f64")
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    assert y.dtype == BF16 and y64.dtype == np.float64
    np.testing.assert_allclose(y64, want, rtol=1e-12)
    close(y, want, "bf16", atol=1e-4)


# ------------------------------------------------------------------- errors and API

TWO_ARGS = """func.func @f(%x: tensor<4x5xf32>, %y: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %z = fusion.add %x, %y : tensor<4x5xf32>
  func.return %z : tensor<4x5xf32>
}"""


def test_argument_errors():
    f = reference_from_text(TWO_ARGS)
    x = np.zeros((4, 5), np.float32)
    with pytest.raises(ArgumentError, match=r"@f takes 2 arguments, got 1"):
        f(x)
    with pytest.raises(ArgumentError,
                       match=r"argument 1 \('%y'\): expected tensor<4x5xf32>, got float16 array of shape \(4, 5\)"):
        f(x, x.astype(np.float16))
    with pytest.raises(ArgumentError, match=r"argument 0 \('%x'\): expected tensor<4x5xf32>, got float32 array of shape \(5, 4\)"):
        f(x.T.copy(), x)
    with pytest.raises(ArgumentError, match=r"got bfloat16 array"):
        f(x, x.astype(BF16))
    with pytest.raises(ValueError):  # it is a ValueError too, for callers that do not know the class
        f(x, x.astype(np.float64))


def test_unknown_op_is_named():
    from xdsl.dialects import arith

    module = parse_module(TWO_ARGS)
    func = find_func(module)
    add = next(op for op in func.body.block.ops if op.name == "fusion.add")
    addf = arith.AddfOp(add.lhs, add.rhs)
    func.body.block.insert_op_before(addf, add)
    x = np.ones((4, 5), np.float32)
    with pytest.raises(UnsupportedOpError, match="no semantics for op 'arith.addf'"):
        run_reference(func, [x, x])


def test_bad_precision():
    x = np.ones((4, 5), np.float32)
    with pytest.raises(ValueError, match="precision"):
        reference_from_text(TWO_ARGS)(x, x, precision="f16")


def test_module_and_func_selection():
    text = TWO_ARGS + "\n" + TWO_ARGS.replace("@f", "@g").replace("fusion.add", "fusion.mul")
    x = np.full((4, 5), 3.0, np.float32)
    (z,) = reference_from_text(text, "g")(x, x)
    assert (z == 9.0).all()
    with pytest.raises(ValueError, match="2 func.func"):
        reference_from_text(text)
    with pytest.raises(KeyError, match="@h"):
        reference_from_text(text, "h")
    (z,) = run_reference(parse_module(TWO_ARGS), [x, x])  # a one-function module is accepted
    assert (z == 6.0).all()
