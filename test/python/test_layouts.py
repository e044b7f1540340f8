"""Strided inputs and stride-ordered outputs (issue 32) without a GPU: the declarations, the
fusion-layouts rewrite, the reference interpreter in both forms, the runtime's argument checks
(strides, offsets, alignment) and storage of host arrays, the Program's JSON, the API's errors."""

from __future__ import annotations

import numpy as np
import pytest
from layout_cases import VIEWS, declared, make_view, unary_fusion

import fuser
from fuser.dialects.fusion.layout import order_strides
from fuser.dialects.ir import parse_module
from fuser.passes.layouts import apply_layouts
from fuser.runtime.arrays import ArgumentError, convert_arg
from fuser.runtime.plan import BufferSpec, Program
from fuser.runtime.reference import find_func, run_reference

torch = pytest.importorskip("torch")


def _np(t):
    return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_reference_reads_strided_views(name):
    """The reference of the declared form and of fusion-layouts' rewrite (storage read through
    fusion.as_strided) agree with torch on the view, for every view shape of the cases."""
    gen = torch.Generator().manual_seed(1)
    v = make_view(torch, name, "f32", gen)
    fb = unary_fusion(v, "f32")
    want = (torch.exp(v) * 0.5 + v).numpy()
    np.testing.assert_allclose(fuser.compile(fb).reference(v.numpy()), want, rtol=1e-5, atol=1e-6)
    fn = find_func(parse_module(fb.mlir()))
    assert apply_layouts(fn) == 1
    assert "fusion.as_strided" in str(fn)
    np.testing.assert_allclose(run_reference(fn, [v.numpy()])[0], want, rtol=1e-5, atol=1e-6)


def test_stride_order_is_nvfusers_convention():
    """Entry d ranks dim d's stride, 0 the innermost: [2, 1, 0] is row-major, [0, 1] a
    column-major matrix, as nvFuser's add_output(stride_order=) reads them."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for order, want in [((2, 1, 0), (12, 4, 1)), ((0, 1, 2), (1, 2, 6)), ((1, 2, 0), (4, 8, 1))]:
        assert order_strides(x.shape, order) == want
        fb = fuser.FusionBuilder("conv")
        fb.output(fuser.neg(fb.input(x.shape, "f32", name="x")), stride_order=order)
        out = fuser.compile(fb).reference(x)
        assert out.strides == tuple(4 * s for s in want), order
    m = np.ones((3, 5), np.float32)
    fb = fuser.FusionBuilder("colmajor")
    fb.output(fuser.neg(fb.input(m.shape, "f32", name="m")), stride_order=[0, 1])
    assert fuser.compile(fb).reference(m).flags["F_CONTIGUOUS"]


@pytest.mark.parametrize("order", [(1, 0, 2), (2, 1, 0), (0, 2, 1), (0, 1, 2)])
def test_reference_outputs_in_stride_order(order):
    x = np.random.default_rng(2).standard_normal((3, 5, 7)).astype(np.float32)
    fb = fuser.FusionBuilder("ordered")
    a = fb.input(x.shape, "f32", name="x")
    fb.output(fuser.neg(a), stride_order=order)
    out = fuser.compile(fb).reference(x)
    np.testing.assert_array_equal(out, -x)
    assert out.strides == tuple(s * 4 for s in order_strides(x.shape, order))
    fn = find_func(parse_module(fb.mlir()))
    apply_layouts(fn)  # the rewritten form returns the dense permute; the reference views it back
    again = run_reference(fn, [x])[0]
    np.testing.assert_array_equal(again, -x)
    assert again.strides == out.strides


def test_program_keeps_layouts_through_json():
    gen = torch.Generator().manual_seed(3)
    v = make_view(torch, "gaps_offset", "f32", gen)
    fb = unary_fusion(v, "f32", order=(0, 1))  # column-major
    prog = fuser.compile(fb).program
    (x,), (y,) = prog.inputs, prog.outputs
    assert (x.shape, x.view, x.strides, x.offset) == ((3 + 5 * 37 + 31,), (6, 31), (37, 1), 3)
    assert (y.shape, y.view, y.order) == ((31, 6), (6, 31), (1, 0))
    again = Program.from_json(prog.to_json())
    assert again.inputs == prog.inputs and again.outputs == prog.outputs


def test_mismatched_strides_name_the_argument_and_both_layouts():
    spec = BufferSpec("x", (45,), "f32", view=(5, 9), strides=(1, 5), offset=0)
    dense = np.zeros((5, 9), np.float32)
    with pytest.raises(ArgumentError, match=r"argument 0 \('%x'\): compiled for the layout strides \(1, 5\) offset 0, "
                                            r"got numpy float32 array of shape \(5, 9\) with strides \(9, 1\)"):
        convert_arg(dense, 0, spec)
    with pytest.raises(ArgumentError, match=r"expected tensor<5x9xf32> with strides \(1, 5\), got numpy float32 "
                                            r"array of shape \(9, 5\)"):
        convert_arg(dense.T.copy(), 0, spec)
    t = torch.zeros(5, 9)
    with pytest.raises(ArgumentError, match=r"compiled for the layout strides \(1, 5\) offset 0, got torch float32 "
                                            r"tensor .* with strides \(9, 1\)"):
        convert_arg(t, 0, spec)


@pytest.mark.parametrize("dtype", ["f32", "bf16", "i64", "u8", "i1"])
def test_host_arrays_are_stored_at_their_strides(dtype):
    """A strided numpy array (and a CPU torch tensor) is uploaded as its storage: each element
    at offset + sum(i * strides), the unreached ones zero."""
    gen = torch.Generator().manual_seed(4)
    v = make_view(torch, "gaps_offset", dtype, gen)
    strides, offset = declared(v)
    from fuser.dialects.fusion import strided_span
    spec = BufferSpec("x", (strided_span(v.shape, strides, offset),), dtype, view=tuple(v.shape), strides=strides,
                      offset=offset)
    for arr in (v, _host(v)):
        ptr, host, _, _ = convert_arg(arr, 0, spec)
        assert ptr is None and host.shape == spec.shape
        back = np.lib.stride_tricks.as_strided(host[offset:], v.shape, [s * host.itemsize for s in strides])
        np.testing.assert_array_equal(back.astype(np.float64) if dtype == "bf16" else back,
                                      _np(v) if dtype != "bf16" else v.float().numpy())


def _host(v):
    if v.dtype == torch.bfloat16:  # numpy has no bf16 of its own: ml_dtypes', at the same strides
        import ml_dtypes
        return v.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return v.numpy()


class _CAI:
    def __init__(self, shape, typestr, strides, ptr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (ptr, False), "version": 3, "stream": 1}


def test_device_arrays_are_passed_in_place_from_an_aligned_buffer():
    """A device array's buffer is `offset` elements before its data pointer, 16-byte aligned;
    a misaligned one is refused, saying which offset would fit."""
    spec = BufferSpec("x", (3 + 5 * 37 + 31,), "f32", view=(6, 31), strides=(37, 1), offset=3)
    base = 0x7000_0000
    ptr, host, kind, _ = convert_arg(_CAI((6, 31), "<f4", (148, 4), base + 12), 0, spec)
    assert (ptr, host, kind) == (base, None, "device")
    with pytest.raises(ArgumentError, match=r"compiled for the layout strides \(37, 1\) offset 3, got a buffer at "
                                            r"0x70000004 .* not 16-byte aligned; declare offset 0"):
        convert_arg(_CAI((6, 31), "<f4", (148, 4), base + 16), 0, spec)
    with pytest.raises(ArgumentError, match=r"with strides \(36, 1\)"):
        convert_arg(_CAI((6, 31), "<f4", (144, 4), base + 12), 0, spec)
    expanded = BufferSpec("b", (33,), "bf16", view=(6, 33), strides=(0, 1))
    assert convert_arg(_CAI((6, 33), "<V2", (0, 2), base), 0, expanded)[0] == base


def test_torch_storage_offset_below_the_declared_offset_is_refused():
    spec = BufferSpec("x", (40,), "f32", view=(4, 8), strides=(8, 1), offset=4)
    t = torch.zeros(40)[:32].view(4, 8)  # storage offset 0
    with pytest.raises(ArgumentError, match="storage offset 0, less than the declared offset 4"):
        from fuser.runtime import arrays
        arrays._from_torch(t.cuda() if torch.cuda.is_available() else _FakeCuda(t), 0, spec)


class _FakeCuda:
    """A CPU tensor that says it is on CUDA, up to the layout check (nothing is read)."""
    def __init__(self, t):
        self._t = t
        self.dtype, self.shape, self.is_cuda = t.dtype, t.shape, True
        self.device = "cuda:0"

    def stride(self):
        return self._t.stride()

    def storage_offset(self):
        return self._t.storage_offset()

    def get_device(self):
        return 0


def test_api_declarations_are_checked():
    fb = fuser.FusionBuilder("bad")
    with pytest.raises(ValueError, match=r"strides \[1\] and offset 0 must be 2 non-negative"):
        fb.input((4, 5), "f32", name="x", strides=(1,))
    with pytest.raises(ValueError, match="offset 2 without strides"):
        fb.input((4, 5), "f32", name="y", offset=2)
    x = fb.input((4, 5), "f32", name="z", strides=(0, 1))
    with pytest.raises(ValueError, match=r"stride_order \[0, 0\] is not a permutation of its 2 dims \(entry d ranks dim d.s stride, 0 the innermost: row-major is \[1, 0\]\)"):
        fb.output(fuser.neg(x), stride_order=[0, 0])
    assert fuser.strides_of(np.zeros((4, 6), np.float32)[:, ::2]) == (6, 2)
    assert fuser.strides_of(torch.zeros(3, 4).t()) == (1, 4)


def test_expanded_and_stepped_inputs_of_every_type_in_the_reference():
    gen = torch.Generator().manual_seed(5)
    for dtype in ["f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64", "u8", "i1"]:
        for name in ("expand_cols", "step_slice", "permuted_3d"):
            v = make_view(torch, name, dtype, gen)
            order = tuple(range(v.dim()))  # dim 0 innermost: every stride differs from row-major's
            got = fuser.compile(unary_fusion(v, dtype, order=order)).reference(_host(v))
            from layout_cases import unary_torch
            want = unary_torch(torch, v, dtype)
            g = np.asarray(got, dtype=np.float64) if dtype in ("bf16", "f16") else got
            w = want.double().numpy() if dtype in ("bf16", "f16") else want.numpy()
            exact = dtype not in ("f32", "f64", "bf16", "f16")
            tol = {"bf16": 1e-2, "f16": 2e-3}.get(dtype, 0 if exact else 1e-5)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol / 10, err_msg=f"{dtype} {name}")
            assert got.strides == tuple(s * got.itemsize for s in order_strides(v.shape, order)), (dtype, name)


def _device_array(shape, perm=None, ptr=0x7000_0000):
    """A DeviceArray without a GPU (nothing is allocated or read): its shape, pointer and view."""
    from fuser.runtime.arrays import DeviceArray
    a = object.__new__(DeviceArray)
    a.shape, a.dtype, a.ptr, a.stream, a.perm = tuple(shape), "f32", ptr, 0, None
    return a if perm is None else a.permute(perm)


def test_device_array_views_are_checked_as_strided_arrays():
    """A dense DeviceArray is a row-major input; its permuted view (an output in a stride
    order) has the strides of its order, passes where they are declared and is refused as
    non-contiguous where a row-major array is expected."""
    dense = _device_array((9, 7))
    assert dense.strides == (7, 1)
    assert convert_arg(dense, 0, BufferSpec("x", (9, 7), "f32"))[0] == 0x7000_0000
    view = dense.permute([1, 0])
    assert view.shape == (7, 9) and view.strides == (1, 7)
    assert view.__cuda_array_interface__["strides"] == (4, 28)
    assert convert_arg(view, 0, BufferSpec("x", (63,), "f32", view=(7, 9), strides=(1, 7)))[0] == 0x7000_0000
    with pytest.raises(ArgumentError, match="non-contiguous"):
        convert_arg(view, 0, BufferSpec("x", (7, 9), "f32"))
    assert _device_array((2, 3, 4), perm=[2, 0, 1]).strides == (1, 12, 4)
