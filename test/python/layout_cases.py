"""Strided inputs and stride-ordered outputs (issue 32): cases shared by the CPU tests
(test_layouts.py, the reference interpreter) and the GPU tests (test_layouts_gpu.py, against
torch on CUDA).

Each case makes, from a generator of random values, a torch tensor view with odd shapes and
strides (slices with steps, transposes, expands, as_strided with gaps and storage offsets),
declares those strides in a FusionBuilder, and computes a torch function of it; outputs may
ask for a stride order."""

from __future__ import annotations

import fuser

# dtype name -> torch dtype attribute name
DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "i32": "int32",
          "i64": "int64", "i16": "int16", "i8": "int8", "u8": "uint8", "i1": "bool"}


def random_base(torch, n: int, dtype: str, gen, device: str = "cpu"):
    """A 1-D tensor of n random values of `dtype` (floats of both signs, integers over a range
    that fits the type, masks)."""
    tdt = getattr(torch, DTYPES[dtype])
    if dtype == "i1":
        return torch.rand(n, generator=gen, device=device) > 0.5
    if dtype == "u8":
        return torch.randint(0, 256, (n,), generator=gen, device=device, dtype=tdt)
    if dtype.startswith("i"):
        lim = {"i8": 100, "i16": 3000}.get(dtype, 100000)
        return torch.randint(-lim, lim, (n,), generator=gen, device=device, dtype=tdt)
    return torch.randn(n, generator=gen, device=device, dtype=torch.float32).to(tdt)


# name -> (shape, make(base) -> view, storage elements); views made from a fresh storage
VIEWS = {
    # x[:, ::3] of a 7x40: rows 40 apart, every third column
    "step_slice": ((7, 14), lambda b: b[:280].view(7, 40)[:, ::3], 280),
    # a transpose of a 9x5 (innermost stride 9)
    "transpose": ((5, 9), lambda b: b[:45].view(9, 5).t(), 45),
    # expand of a row along 6 rows (stride 0 outer)
    "expand_rows": ((6, 33), lambda b: b[:33].view(1, 33).expand(6, 33), 33),
    # expand of a column along 17 columns (stride 0 innermost)
    "expand_cols": ((5, 17), lambda b: b[:5].view(5, 1).expand(5, 17), 5),
    # as_strided with gaps between rows and a storage offset of 3: rows 37 apart
    "gaps_offset": ((6, 31), lambda b: b.as_strided((6, 31), (37, 1), 3), 3 + 5 * 37 + 31),
    # a 3-D view: a permute of a sliced tensor (dims 0 and 2 swapped, middle dim stepped)
    "permuted_3d": ((4, 3, 5), lambda b: b[:5 * 6 * 4].view(5, 6, 4)[:, ::2, :].permute(2, 1, 0), 120),
    # a column slice starting at an odd element: rows aligned, the view 1 element in
    "odd_start": ((8, 24), lambda b: b[:8 * 32].view(8, 32)[:, 1:25], 256),
    # rows 40 apart, whole 16-byte lines (vector loads)
    "aligned_rows": ((9, 32), lambda b: b[:360].view(9, 40)[:, :32], 360),
}


def make_view(torch, name: str, dtype: str, gen, device: str = "cpu"):
    shape, make, n = VIEWS[name]
    v = make(random_base(torch, n + 8, dtype, gen, device))
    assert tuple(v.shape) == shape, (name, v.shape)
    return v


def declared(v) -> tuple[tuple[int, ...], int]:
    """(strides, offset) to declare for view v: its strides and its storage offset within a
    16-byte line, the buffer starting at an aligned storage element."""
    per_line = max(16 // v.element_size(), 1)
    return tuple(v.stride()), v.storage_offset() % per_line


def unary_fusion(v, dtype: str, order=None):
    """y = f(x) of a strided x: for floats exp(x) * 0.5 + x (f64: x rounded to f32), for integers x * 3 - 1 (wrapping),
    for masks not x; the output in stride order `order`."""
    strides, offset = declared(v)
    fb = fuser.FusionBuilder("strided")
    x = fb.input(tuple(v.shape), dtype, name="x", strides=strides, offset=offset)
    if dtype == "i1":
        y = fuser.logical_not(x)
    elif dtype.startswith(("i", "u")):
        y = x * 3 - 1
    elif dtype == "f64":  # (f64 arithmetic is not fusion's: a cast to f32 and back, moved as is)
        y = fuser.cast(fuser.cast(x, "f32"), "f64")
    else:
        y = fuser.exp(x) * 0.5 + x
    fb.output(y, stride_order=order)
    return fb


def unary_torch(torch, v, dtype: str):
    if dtype == "i1":
        return ~v
    if dtype.startswith(("i", "u")):
        return v * 3 - 1
    if v.dtype == torch.float64:
        return v.float().double()
    return torch.exp(v) * 0.5 + v
