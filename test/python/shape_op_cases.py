"""The index-map shape ops through the Python API (issue 32), each case beside the torch code it
stands for: shared by the CPU test (the reference interpreter equals torch; the fusion is one
kernel) and the GPU test (the kernels equal torch, bit for bit: these ops only move elements).

A case is (input shapes, fuser function, torch function); odd extents, vector-aligned ones
(64 f32 or 128 bf16 columns: lane groups that stay whole) and strided or offset maps that break
the alignment, consumers of every scheduler (pointwise, a reduction, a softmax's normalization),
and two outputs."""

from __future__ import annotations

import fuser


def _rope(x, y):
    # rotate_half: cat(-x2, x1) over the last dim, then x * cos + rotate_half(x) * sin
    a, b = fuser.split(x, x.shape[-1] // 2, -1)
    return x * y + fuser.cat([-b, a], -1) * y


def _torch_rope(torch, x, y):
    a, b = x.chunk(2, -1)
    return x * y + torch.cat([-b, a], -1) * y


CASES = {
    # name: (shapes, fuser, torch)
    "slice_step": ([(7, 45)], lambda x: fuser.slice(x, 1, 3, 40, 3), lambda t, x: x[:, 3:40:3]),
    "slice_rows_aligned": ([(33, 64)], lambda x: fuser.slice(x, 0, 5, -3), lambda t, x: x[5:-3]),
    "slice_cols_offset": ([(9, 128)], lambda x: fuser.slice(x, 1, 4, 68), lambda t, x: x[:, 4:68]),
    "slice_negative_step": ([(9, 16)], lambda x: fuser.slice(x, 0, -2, None, -2),
                            lambda t, x: t.flip(x, [0])[1::2]),
    "slice_3d": ([(3, 17, 40)], lambda x: fuser.slice(fuser.slice(x, 2, 8, 40, 2), 1, 1, 16),
                 lambda t, x: x[:, 1:16, 8:40:2]),
    "narrow_select": ([(4, 3, 32)], lambda x: fuser.narrow(fuser.select(x, 1, -1), 1, 8, 16),
                      lambda t, x: x[:, -1].narrow(1, 8, 16)),
    "pad_both": ([(5, 16)], lambda x: fuser.pad(x, [2, -1, -1, 3], 7.0),
                 lambda t, x: t.nn.functional.pad(x, [2, -1, -1, 3], value=7.0)),
    "pad_aligned": ([(6, 64)], lambda x: fuser.pad(x, [64, 0]), lambda t, x: t.nn.functional.pad(x, [64, 0])),
    "pad_3d": ([(2, 3, 33)], lambda x: fuser.pad(x, [1, 2, 0, 0, 1, 1], -2.0),
               lambda t, x: t.nn.functional.pad(x, [1, 2, 0, 0, 1, 1], value=-2.0)),
    "cat_last": ([(6, 8), (6, 24)], lambda a, b: fuser.cat([a, b], 1), lambda t, a, b: t.cat([a, b], 1)),
    "cat_rows_three": ([(3, 33), (5, 33)], lambda a, b: fuser.cat([a, b, a], 0), lambda t, a, b: t.cat([a, b, a], 0)),
    "cat_odd_cols": ([(5, 7), (5, 13)], lambda a, b: fuser.cat([b, a, b], -1), lambda t, a, b: t.cat([b, a, b], -1)),
    "cat_middle": ([(2, 3, 40), (2, 5, 40)], lambda a, b: fuser.cat([a, b], 1), lambda t, a, b: t.cat([a, b], 1)),
    "flip_last": ([(7, 32)], lambda x: fuser.flip(x, -1), lambda t, x: t.flip(x, [-1])),
    "flip_all": ([(5, 3, 33)], lambda x: fuser.flip(x, [0, 1, 2]), lambda t, x: t.flip(x, [0, 1, 2])),
    "flip_both_aligned": ([(6, 64)], lambda x: fuser.flip(x, [0, 1]), lambda t, x: t.flip(x, [0, 1])),
    "triu_tril": ([(2, 9, 7)], lambda x: fuser.triu(x, 1) + fuser.tril(x, -2),
                  lambda t, x: t.triu(x, 1) + t.tril(x, -2)),
    "expand": ([(1, 40), (3, 1, 40)], lambda a, b: fuser.expand(a, (3, 5, 40)) + fuser.expand(b, (3, 5, -1)),
               lambda t, a, b: a.expand(3, 5, 40) + b.expand(3, 5, -1)),
    "unsqueeze_squeeze": ([(6, 1, 10)], lambda x: fuser.unsqueeze(fuser.squeeze(x), 0),
                          lambda t, x: x.squeeze().unsqueeze(0)),
    "rope": ([(4, 10, 128), (4, 10, 128)], _rope, lambda t, x, y: _torch_rope(t, x, y)),
    "sum_of_cat": ([(64, 20), (64, 44)], lambda a, b: fuser.sum(fuser.cat([a, fuser.exp(b)], 1), 1),
                   lambda t, a, b: t.cat([a, t.exp(b)], 1).sum(1)),
    "column_sum_of_slice": ([(100, 30)], lambda x: fuser.sum(fuser.slice(x, 0, 1, 99, 2), 0),
                            lambda t, x: x[1:99:2].sum(0)),
    "softmax_of_pad": ([(16, 100)], lambda x: _softmax(fuser.pad(x, [0, 28], -30.0)),
                       lambda t, x: t.softmax(t.nn.functional.pad(x, [0, 28], value=-30.0), -1)),
    # indexed reads: the index inputs are made in `build` (i64, in range, some negative)
    "take_along_axis": ([(7, 50), "idx:7x3:50"], lambda x, i: fuser.take_along_axis(x, i, 1),
                        lambda t, x, i: t.gather(x, 1, i % 50)),
    "gather_rows": ([(40, 9), "idx:5x9:40"], lambda x, i: fuser.gather(x, 0, i), lambda t, x, i: t.gather(x, 0, i % 40)),
    "index_select_cols": ([(6, 33), "idx:10:33"], lambda x, i: fuser.index_select(x, 1, i),
                          lambda t, x, i: t.index_select(x, 1, i % 33)),
    "embedding": ([(100, 64), "idx:3x7:100"], lambda w, i: fuser.embedding(w, i),
                  lambda t, w, i: t.nn.functional.embedding(i % 100, w)),
    "cross_entropy": ([(16, 1000), "idx:16:1000"], lambda x, i: _cross_entropy(x, i),
                      lambda t, x, i: t.nn.functional.cross_entropy(x, i % 1000, reduction="none")),
    # a loss over logits[:, 1:] (a language model's shift): the sliced rows are cached on chip,
    # in registers (1000 columns) or shared memory (40001 f32 columns)
    "cross_entropy_of_slice": ([(3, 7, 1000), "idx:18:1000"], lambda x, i: _shifted_cross_entropy(x, i),
                               lambda t, x, i: t.nn.functional.cross_entropy(x[:, 1:].reshape(18, 1000), i % 1000,
                                                                             reduction="none")),
    "cross_entropy_of_slice_wide": ([(2, 6, 40001), "idx:10:40001"], lambda x, i: _shifted_cross_entropy(x, i),
                                    lambda t, x, i: t.nn.functional.cross_entropy(
                                        x[:, 1:].reshape(10, 40001), i % 40001, reduction="none")),
    "two_outputs": ([(8, 48)], lambda x: (fuser.flip(x, 0), fuser.slice(x, 1, 16, 48) * 2.0),
                    lambda t, x: (t.flip(x, [0]), x[:, 16:48] * 2.0)),
}


def _cross_entropy(x, label):
    """Per-row loss: logsumexp(x) - x[label]."""
    m = fuser.amax(x, 1, keepdim=True)
    lse = fuser.log(fuser.sum(fuser.exp(x - m), 1, keepdim=True)) + m
    return fuser.squeeze(lse - fuser.take_along_axis(x, fuser.unsqueeze(label, 1), 1), 1)


def _shifted_cross_entropy(x, label):
    b, s, v = x.shape
    return _cross_entropy(fuser.reshape(fuser.slice(x, 1, 1, None), (b * (s - 1), v)), label)


def _softmax(x):
    e = fuser.exp(x - fuser.amax(x, 1, keepdim=True))
    return e / fuser.sum(e, 1, keepdim=True)


EXACT = {name for name in CASES if name not in ("rope", "sum_of_cat", "column_sum_of_slice", "softmax_of_pad",
                                                 "cross_entropy", "cross_entropy_of_slice",
                                                 "cross_entropy_of_slice_wide")}
"""Cases that only move elements (or add two of them): the kernels equal torch bit for bit."""


def index_spec(s) -> tuple[tuple[int, ...], int] | None:
    """An index input "idx:AxB:N" -> (its shape, the extent it indexes), else None."""
    if not isinstance(s, str):
        return None
    _, shape, n = s.split(":")
    return tuple(int(d) for d in shape.split("x")), int(n)


def make_inputs(torch, name: str, data, **device):
    """The case's inputs: `data(shape)` for the data tensors, i64 indices in [-N, N) for the index
    inputs (negative ones count from the end, as torch's modulo in the expected functions)."""
    g = torch.Generator(**device).manual_seed(11)
    out = []
    for s in CASES[name][0]:
        spec = index_spec(s)
        out.append(data(s) if spec is None else torch.randint(-spec[1], spec[1], spec[0], generator=g, **device))
    return out


def build(name: str, dtype: str = "f32"):
    shapes, fn, _ = CASES[name]
    with fuser.FusionBuilder(name) as fb:
        xs = [fb.input(s, dtype, name=f"x{i}") if index_spec(s) is None else
              fb.input(index_spec(s)[0], "i64", name=f"x{i}") for i, s in enumerate(shapes)]
        out = fn(*xs)
        for o in out if isinstance(out, tuple) else (out,):
            fb.output(o)
    return fb


def expected(name: str, torch, *tensors):
    out = CASES[name][2](torch, *tensors)
    return list(out) if isinstance(out, tuple) else [out]
