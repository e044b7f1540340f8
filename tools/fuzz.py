"""fuser-fuzz: random multi-output fusions, compiled and checked against an independent float64
evaluation.

    fuser-fuzz --cases 1000 --seed 7            # CPU: compile (default pipeline, random options),
                                                # ptxas, reference interpreter vs float64
    fuser-fuzz --cases 1000 --gpu               # and run every kernel on the GPU
    fuser-fuzz --cases 200 --save-failures dir/ # failing cases, shrunk, as .mlir reproducers

Every fusion works on one shape, R x C or (one case in six) B x R x C (odd extents included),
its "rows" (the shape without its last extent, reduced over the last dim) and its "columns" (C,
reduced over every other dim); a 3-D case also reduces over its middle dim (B x C) and over its
two outer dims (R). One case in seven opens with a bf16 matmul (random layouts, K from 64 to 1000) as its
first R x C value. It draws pointwise chains, broadcasts, row and column reductions (some with
keepdim), var_mean and welford over rows or columns, segment_sets and transposes (the last two dims
swapped), then returns two to four values, preferring the shapes
that broke the planner:
an output that another output reads, a value returned twice, an input returned as is, an
output that also feeds a reduction, outputs of different shapes fed by one value.

Four cases in five then add a typed part, drawn from a random stream of its own after the part
above (which it reads but leaves as it was: a seed's float part and its inputs are what they
always were), that returns up to four more values:
`fusion.cmp` with every predicate (against a constant, another value, a value's own row or
column max or min, another reduction's result; in f32, f16 or bf16), `fusion.where` on a cmp, an
i1 input or a broadcast or transposed mask (in f32, f16 or bf16); i1 inputs (random 0/1 bytes),
i64 inputs (small: [-9, 9]; large: up to 2^40, a third of them halfway between two float32s, a
tenth 0), f64 inputs ([-4, 4] in full float64 precision, a tenth 0, some halfway between two
float32, f16 or bf16 values) and f16 inputs; casts between every pair of f32, f16, bf16, f64, i1
and i64 (an integer cast to a float is scaled back into range by a power of two before any
arithmetic, and is cast to f16 only when small; a float is scaled by 4 before it is truncated to
i64, and goes through relu before `!= 0`, so both give more than one answer); the
dropout-backward pattern grad * cast(keep) * 1.25, sometimes summed; broadcast, permute,
reshape and segment_set of i1, i64, f64, f16 and bf16 values (so masks and integers cross
kernel boundaries); div, pow, sqrt, rsqrt and tanh-form gelu; rarely a float far outside i64
(saturating) or a NaN cast to i1 or i64. The values it returns are masks, integers, f64, f16 and
bf16 values and f32 ones.

Each case is compiled with one of `OPTION_VARIANTS` (schedule options, or a forced split-K
strategy, serial or two-kernel, for the matmul cases).

Values stay in a modest range (inputs in [-2, 2], exp only of tanh, log, sqrt and rsqrt only of
1 + |v|, pow of 1 + |v| to a tanh, division by 1 + |v|, reduction sums scaled by 1/extent), so a
float32 kernel and the float64 reference agree to a
tolerance that fits the output dtype plus the rounding each output's computation amplifies (its
magnitude: what a sum added up, what a function's slope scales), and any real mismatch is a bug.

The evaluation (`_Gen.expected`) has the kernels' semantics, torch's: floats in float64, i1 as
bool, i64 as int64; a cast to a float rounds to nearest even (f64 and i64 values to f16 or bf16
through f32, as torch converts them); float -> i64 truncates toward zero, saturating at the i64
limits, NaN -> 0; -> i1 is `!= 0` (NaN -> true); i1 -> a number is 0 or 1.

Near-ties. Every value is either exact, one the kernel must give bit for bit (inputs,
constants, casts, neg, abs, relu, max, min, where, shape ops, segment_set and max/min reductions
of exact values; every i1 and i64 value), or carries the rounding of float32 arithmetic, within
the bound `mismatch` allows it (the TOLERANCE of its `level`, f32 or the f16/bf16 it was cast to,
plus its magnitude's slack). A comparison, or a cast to i1 or i64, of an inexact value may go
either way where its operands are within that bound of each other (of 0, of an integer step):
those elements are don't-care, and so is every element computed from one. So comparisons
mostly take exact operands (an input against a constant, a value against its own row max: eq
is then one-hot), which are checked everywhere; reductions never read a value that may hold a
don't-care element (it would blank a whole row). `mismatch` compares i1 and i64 outputs exactly
(counting the elements that differ), exact float outputs bit for bit, the others to their
tolerance; don't-care elements are skipped.

On a machine without a GPU the reference interpreter stands in for the kernels, in its float32
("native") mode, which computes in float32 and rounds as a kernel does, so the exact outputs are
checked bit for bit there too.
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import ml_dtypes
import numpy as np

SHAPES = [(31, 33), (64, 96), (7, 128), (129, 257), (2, 1024), (256, 64), (5, 3000), (1000, 24), (33, 512)]
# Matmul cases: R x C (= M x N) with rows of a multiple of 16 bytes, so the Hopper matmul takes
# them (ragged tiles, one tile, several); K from one 64-slice to many, ragged included.
# 3-D cases (one in six that have no matmul): the rows are B x R, the columns reduce two dims
SHAPES_3D = [(3, 5, 96), (2, 33, 64), (4, 7, 129), (8, 16, 256), (1, 31, 33), (5, 3, 1000)]
MATMUL_SHAPES = [(128, 128), (200, 264), (64, 96), (333, 136), (256, 64), (1000, 24)]
MATMUL_K = [64, 72, 256, 520, 1000]
UNARY = ["neg", "abs", "tanh", "sigmoid", "relu", "silu", "gelu"]
BINARY = ["add", "sub", "mul", "max", "min"]
OUT_DTYPES = ["f32", "f32", "f32", "bf16", "f16"]
CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")  # the dialect's; test_fuzz checks they match
CAST_TYPES = ("f32", "f16", "bf16", "f64", "i1", "i64")
LOWP = ("f16", "bf16")
DISCRETE = ("i1", "i64")
TYPED_SHARE = 0.8  # the cases with a typed part


@dataclass
class Value:
    name: str
    kind: str  # "full" (R x C), "row" (R), "col" (C), and the others of `_Gen.shape`
    dtype: str = "f32"
    exact: bool = False  # the kernel must give the evaluation's value bit for bit (i1, i64: always)
    level: str = "f32"   # an inexact float's error is within this dtype's TOLERANCE (and its magnitude)
    dc: bool = False     # may hold don't-care elements (see the module docstring)
    bound: float = 0.0   # an i64's largest magnitude (inf: none worth scaling back into range)


@dataclass
class Step:
    """One op of the fuzzer's own float64 semantics, written apart from the reference interpreter."""
    outs: list[str]
    fn: object              # operand values -> result value(s)
    operands: list[str]
    mag: object             # (operand values, their magnitudes) -> result magnitude(s)
    dc: object              # (operand values, their don't-care masks or None, margins) -> don't-care mask or None
    needs_margin: bool = False
    unrounded: object = None  # fn as the reference interpreter's f64 mode has it (float casts keep float64)


class _Gen:
    def __init__(self, rng: random.Random, name: str):
        self.rng = rng
        self.name = name
        self.rows, self.cols = rng.choice(SHAPES)
        self.lead: tuple[int, ...] = ()  # a 3-D case's leading extent (B,)
        self.k, self.ta, self.tb = 0, False, False  # a matmul case's K and operand layouts
        self.lines: list[str] = []
        self.values: list[Value] = []   # f32 values, which arithmetic and reductions read
        self.typed: list[Value] = []    # values of the other types (i1, i64, f64, f16, bf16)
        self.args: list[Value] = []
        self.info: dict[str, Value] = {}
        self.ranges: dict[str, str] = {}  # input name -> how `make_inputs` draws it
        self.made: list[Value] = []       # every computed value, in program order
        self.uses: dict[str, set[str]] = {}  # value -> values computed from it (directly)
        self.count = 0
        self.n_in = 0
        self.steps: list[Step] = []
        self.outputs: list[Value] = []

    def ty(self, kind: str, dtype: str = "f32") -> str:
        return "tensor<" + "x".join(str(d) for d in self.shape(kind)) + f"x{dtype}>"

    def fresh(self, stem: str) -> str:
        self.count += 1
        # A stem ending in a digit takes a separator: "m2" + 7 must not spell "m" + 27.
        return f"{stem}_{self.count}" if stem[-1].isdigit() else f"{stem}{self.count}"

    def add_arg(self, name: str, kind: str, dtype: str, how: str = "uniform", bound: float = 0.0) -> Value:
        v = Value(name, kind, dtype, exact=True, bound=bound)
        self.args.append(v)
        self.info[name] = v
        self.ranges[name] = how
        return v

    def emit(self, stem: str, kind: str, rhs: str, operands: list[Value], dtype: str = "f32",
             listed: bool = True) -> Value:
        op = rhs.split()[0].removeprefix("fusion.")
        v = Value(self.fresh(stem), kind, dtype, *_derive(op, rhs, operands, dtype))
        v.bound = max((o.bound for o in operands if o.dtype == "i64"), default=0.0)
        self.lines.append(f"  %{v.name} = {rhs}")
        dc, needs_margin = self._dontcare(op, rhs, kind, operands, dtype)
        unrounded = self._numpy(rhs, kind, rounding=False) if op in ("cast", "full") else None
        self.steps.append(Step([v.name], self._numpy(rhs, kind), [o.name for o in operands], self._magnitude(rhs, kind),
                               dc, needs_margin, unrounded))
        self.info[v.name] = v
        self.made.append(v)
        for o in operands:
            self.uses.setdefault(o.name, set()).add(v.name)
        if listed:
            self.values.append(v)
        return v

    def shape(self, kind: str) -> tuple[int, ...]:
        m, n, k, b = self.rows, self.cols, self.k, self.lead
        return {"full": b + (m, n), "row": b + (m,), "col": (n,), "rowk": b + (m, 1),
                "mid": b + (n,), "ends": (m,),  # 3-D only: reduced over the middle dim / the two outer ones
                "tr": b + (n, m),                # a full value with its last two dims swapped
                "mma": (k, m) if self.ta else (m, k), "mmb": (n, k) if self.tb else (k, n)}[kind]

    def reduced_kinds(self) -> list[str]:
        """What a full value reduces to: rows and columns, and in a 3-D case (B x R x C) also over
        the middle dim (B x C) and over the two outer dims (R)."""
        return ["row", "col", "mid", "ends"] if self.lead else ["row", "col"]

    def dims(self, kind: str) -> tuple[list[int], int]:
        """The dims a full value is reduced over to make a row or a column (the dims a broadcast
        adds back), and how many elements each result element takes."""
        rank = len(self.shape("full"))
        if kind == "row":
            return [rank - 1], self.cols
        if kind == "mid":
            return [1], self.rows
        if kind == "ends":
            return [0, 2], self.lead[0] * self.cols
        return list(range(rank - 1)), math.prod(self.shape("row"))

    def _numpy(self, rhs: str, kind: str, rounding: bool = True):
        """The float64 function of one emitted op, from its text (`rounding=False`: float casts
        and constants keep float64, as in the reference interpreter's f64 mode)."""
        op = rhs.split()[0].removeprefix("fusion.")
        if op == "full":
            value, shape = float(rhs.split()[1]), self.shape(kind)
            if rounding:  # the constant the kernel holds
                value = float(_round_to(np.float64(value), _elems(rhs)[-1]))
            return lambda: np.full(shape, value)
        if op == "cast":
            src, dst = _elems(rhs)
            return lambda x: _cast(x, src, dst, rounding)
        if op == "cmp":
            return _CMP[rhs.split()[1].rstrip(",")]
        if op == "gelu" and '"tanh"' in rhs:
            return _gelu_tanh
        if op == "broadcast":  # a row gains its last dim back, a column its leading ones
            full, added = self.shape("full"), _dims_of(rhs)
            return lambda x: np.broadcast_to(np.expand_dims(x, added), full)
        if op == "reduce":
            fn = {"sum": np.sum, "max": np.max, "min": np.min}[rhs.split()[1]]
            axis = _dims_of(rhs)
            keep = "keepdim" in rhs
            return lambda x: fn(x, axis=axis, keepdims=keep)
        if op == "permute":
            perm = tuple(int(d) for d in re.search(r"\[([\d, ]*)\]", rhs).group(1).split(","))
            return lambda x: np.transpose(x, perm)
        if op == "reshape":
            shape = self.shape(kind)
            return lambda x: np.reshape(x, shape)
        if op == "matmul":
            ta, tb = self.ta, self.tb
            return lambda a, b: (a.T if ta else a) @ (b.T if tb else b)
        return _NUMPY[op]

    def _magnitude(self, rhs: str, kind: str):
        """How one op scales the rounding error it is handed: the magnitude of its result, for an
        error bound of eps * magnitude. Sums add the magnitudes of their terms (so a sum that
        cancels keeps the size of what it added), products multiply them, and a function of x
        takes |f'(x)| * magnitude(x) + |f(x)|. (An i1 or i64 result's magnitude is its value:
        `expected` sets it.)"""
        op = rhs.split()[0].removeprefix("fusion.")
        fn = self._numpy(rhs, kind) if op != "full" else None
        if op == "full":
            value = abs(float(rhs.split()[1]))
            return lambda vals, mags: value
        if op in ("broadcast", "reshape", "permute", "matmul"):  # linear in each operand's magnitude
            return lambda vals, mags: fn(*mags)
        if op in ("cast", "segment_set", "neg", "abs", "relu"):
            return lambda vals, mags: mags[0]
        if op == "reduce":
            axis, keep = _dims_of(rhs), "keepdim" in rhs
            return lambda vals, mags: np.sum(mags[0], axis=axis, keepdims=keep) if "sum" in rhs.split()[1] else \
                np.max(mags[0], axis=axis, keepdims=keep)
        if op in ("add", "sub"):
            return lambda vals, mags: mags[0] + mags[1]
        if op == "mul":
            return lambda vals, mags: mags[0] * mags[1]
        if op in ("max", "min"):
            return lambda vals, mags: np.maximum(mags[0], mags[1])
        if op == "cmp":
            return lambda vals, mags: 0.0
        if op == "where":
            return lambda vals, mags: np.where(vals[0], mags[1], mags[2])
        if op == "div":  # a / b with |b| >= 1
            return lambda vals, mags: (mags[0] + np.abs(vals[0] / vals[1]) * mags[1]) / np.abs(vals[1])
        if op == "pow":  # a ** t with a >= 1: d/da = t a^(t-1), d/dt = ln(a) a^t
            def pow_magnitude(vals, mags):
                p = np.power(vals[0], vals[1])
                return p * (np.abs(vals[1]) * mags[0] / vals[0] + np.abs(np.log(vals[0])) * mags[1]) + p
            return pow_magnitude
        slope = _SLOPE[op]
        return lambda vals, mags: np.abs(slope(vals[0])) * mags[0] + np.abs(fn(vals[0]))

    def _dontcare(self, op: str, rhs: str, kind: str, operands: list[Value], dtype: str):
        """The don't-care mask of an op's result, and whether it needs its operands' margins: an
        elementwise op's result is don't-care where any operand is; a comparison or a cast to
        i1/i64 also where an inexact operand's margin (its error bound) reaches the answer's
        edge; reductions and shape ops carry their operand's mask along."""
        if op in ("full", "matmul"):
            return (lambda vals, dcs, margins: None), False
        if op in ("broadcast", "reshape", "permute"):
            move = self._numpy(rhs, kind)
            return (lambda vals, dcs, margins: None if dcs[0] is None else move(dcs[0])), False
        if op == "reduce":
            axis, keep = _dims_of(rhs), "keepdim" in rhs
            return (lambda vals, dcs, margins: None if dcs[0] is None else
                    np.any(dcs[0], axis=axis, keepdims=keep)), False
        flip = None
        from_float = bool(operands) and operands[0].dtype not in DISCRETE
        if op == "cmp":
            flip = lambda vals, m: np.abs(vals[0] - vals[1]) <= m  # noqa: E731
        elif op == "cast" and dtype == "i1" and from_float:
            flip = lambda vals, m: np.abs(vals[0]) <= m  # noqa: E731
        elif op == "cast" and dtype == "i64" and from_float:
            flip = lambda vals, m: _trunc_i64(vals[0] - m) != _trunc_i64(vals[0] + m)  # noqa: E731

        def dc(vals, dcs, margins):
            out = functools.reduce(np.logical_or, [d for d in dcs if d is not None], None) \
                if any(d is not None for d in dcs) else None
            known = [m for m in margins or [] if m is not None]
            if flip is not None and known:
                m = sum(known)
                f = (m > 0) & flip(vals, m)
                out = f if out is None else out | f
            return out
        return dc, flip is not None

    def pick(self, kind: str | None = None, clean: bool = False) -> Value:
        """An f32 value (of this kind; `clean`: without don't-care elements, for reductions)."""
        pool = [v for v in self.values if (kind is None or v.kind == kind) and not (clean and v.dc)]
        return self.rng.choice(pool)

    # -------------------------------------------------------------- ops
    def const(self, value: float, kind: str, dtype: str = "f32") -> Value:
        return self.emit("c", kind, f"fusion.full {value:.9e} : {self.ty(kind, dtype)}", [], dtype, listed=False)

    def unary(self) -> Value:
        x = self.pick()
        r = self.rng.random()
        if r < 0.12:  # exp of a bounded value
            t = self.emit("t", x.kind, f"fusion.tanh %{x.name} : {self.ty(x.kind)}", [x])
            return self.emit("e", x.kind, f"fusion.exp %{t.name} : {self.ty(x.kind)}", [t])
        if r < 0.2:  # log of 1 + |x|
            a = self.emit("a", x.kind, f"fusion.abs %{x.name} : {self.ty(x.kind)}", [x])
            one = self.const(1.0, x.kind)
            s = self.emit("s", x.kind, f"fusion.add %{a.name}, %{one.name} : {self.ty(x.kind)}", [a, one])
            return self.emit("l", x.kind, f"fusion.log %{s.name} : {self.ty(x.kind)}", [s])
        op = self.rng.choice(UNARY)
        return self.emit(op[:2], x.kind, f"fusion.{op} %{x.name} : {self.ty(x.kind)}", [x])

    def binary(self) -> Value:
        a = self.pick()
        kind = a.kind
        if kind == "full" and self.rng.random() < 0.4:  # a broadcast row or column operand
            b = self.broadcast(self.rng.choice(self.reduced_kinds()))
        else:
            b = self.pick(kind)
        if self.rng.random() < 0.5:
            a, b = b, a
        op = self.rng.choice(BINARY)
        return self.emit(op[:2], kind, f"fusion.{op} %{a.name}, %{b.name} : {self.ty(kind)}", [a, b])

    def broadcast(self, src_kind: str, x: Value | None = None) -> Value:
        """A row or column (`x`, or one picked or made) broadcast to the full shape; a value of
        another type than f32 is filed with the typed ones."""
        if x is None:
            x = self.pick(src_kind) if any(v.kind == src_kind for v in self.values) else self.reduce(src_kind)
        dims, t = self.dims(src_kind)[0], x.dtype
        b = self.emit("b", "full", f"fusion.broadcast %{x.name} dims {dims} : {self.ty(src_kind, t)} to "
                                   f"{self.ty('full', t)}", [x], t, listed=t == "f32")
        if t != "f32":
            self.typed.append(b)
        return b

    def reduce(self, kind: str, x: Value | None = None, op: str | None = None) -> Value:
        x = x if x is not None else self.pick("full", clean=True)
        dims, n = self.dims(kind)
        op = op if op is not None else self.rng.choice(["sum", "sum", "max", "min"])
        if kind == "row" and self.rng.random() < 0.25:  # keepdim (R x 1), then back to a row
            r = self.emit("k", "rowk", f"fusion.reduce {op} %{x.name} dims {dims} keepdim : {self.ty('full')} to "
                                       f"{self.ty('rowk')}", [x], listed=False)
            r = self.emit("r", kind, f"fusion.reshape %{r.name} : {self.ty('rowk')} to {self.ty('row')}", [r])
        else:
            r = self.emit("r", kind, f"fusion.reduce {op} %{x.name} dims {dims} : {self.ty('full')} to "
                                     f"{self.ty(kind)}", [x])
        if op != "sum":
            return r
        scale = self.const(1.0 / n, kind)
        return self.emit("m", kind, f"fusion.mul %{r.name}, %{scale.name} : {self.ty(kind)}", [r, scale])

    def statistics(self) -> Value:
        """var_mean or welford over the rows (dims [1]) or the columns (dims [0]) of a value (in a
        3-D case also over its middle dim or its two outer dims)."""
        x = self.pick("full", clean=True)
        kind = "row" if self.rng.random() < 0.6 else "col"
        if self.lead and kind == "col":
            kind = self.rng.choice(["col", "mid", "ends"])
        axis, n = self.dims(kind)
        axis = tuple(axis)
        if self.rng.random() < 0.5:
            return self.var_mean(x, kind, axis)
        return self.welford(x, kind, axis, n)

    def _statistics_step(self, outs: list[Value], fn, mag, x: Value, axis: tuple[int, ...]) -> None:
        self.steps.append(Step([v.name for v in outs], fn, [x.name], mag,
                               lambda vals, dcs, margins: None if dcs[0] is None else np.any(dcs[0], axis=axis)))
        for v in outs:
            self.info[v.name] = v
            self.made.append(v)
        self.uses.setdefault(x.name, set()).update(v.name for v in outs)

    def var_mean(self, x: Value, kind: str, axis: tuple[int, ...]) -> Value:
        var, mean = Value(self.fresh("var"), kind), Value(self.fresh("mean"), kind)
        self.lines.append(f"  %{var.name}, %{mean.name} = fusion.var_mean %{x.name} dims {list(axis)} correction 0 : "
                          f"{self.ty('full')} to {self.ty(kind)}, {self.ty(kind)}")
        self._statistics_step([var, mean], lambda a: (np.var(a, axis=axis), np.mean(a, axis=axis)),
                              lambda vals, mags: (np.mean(mags[0] ** 2, axis=axis), np.mean(mags[0], axis=axis)),
                              x, axis)
        self.values += [var, mean]
        return self.rng.choice([var, mean])

    def welford(self, x: Value, kind: str, axis: tuple[int, ...], n: int) -> Value:
        """avg, m2 (the sum of squared deviations, scaled by 1/n to stay in range) and the count
        (an i64 result the kernel still has to produce, which the typed part may read or return)."""
        avg, m2 = Value(self.fresh("avg"), kind), Value(self.fresh("m2"), kind)
        cnt = Value(self.fresh("n"), kind, "i64", exact=True, bound=float(n))
        self.lines.append(f"  %{avg.name}, %{m2.name}, %{cnt.name} = fusion.welford %{x.name} dims {list(axis)} : "
                          f"{self.ty('full')} to {self.ty(kind)}, {self.ty(kind)}, {self.ty(kind, 'i64')}")

        def moments(a):
            mu = np.mean(a, axis=axis, keepdims=True)
            return np.squeeze(mu, axis), np.sum((a - mu) ** 2, axis=axis), np.full(np.squeeze(mu, axis).shape, n)

        def magnitudes(vals, mags):
            mu = np.mean(mags[0], axis=axis, keepdims=True)
            return np.squeeze(mu, axis), np.sum((mags[0] + mu) ** 2, axis=axis), 0.0
        self._statistics_step([avg, m2, cnt], moments, magnitudes, x, axis)
        self.typed.append(cnt)
        scale = self.const(1.0 / n, kind)
        m = self.emit("m", kind, f"fusion.mul %{m2.name}, %{scale.name} : {self.ty(kind)}", [m2, scale])
        self.values.append(avg)
        return self.rng.choice([avg, m])

    def transpose(self, x: Value | None = None) -> Value:
        """A full value with its last two dims swapped (the transpose scheduler's input), or a
        transposed one swapped back."""
        x = x if x is not None else self.pick("full")
        rank = len(self.shape("full"))
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        to = "tr" if x.kind == "full" else "full"
        t = x.dtype
        p = self.emit("p", to, f"fusion.permute %{x.name} {perm} : {self.ty(x.kind, t)} to {self.ty(to, t)}",
                      [x], t, listed=t == "f32")
        if x.dtype != "f32":
            self.typed.append(p)
        return p

    def segment(self) -> Value:
        x = self.pick()
        return self.emit("g", x.kind, f"fusion.segment_set %{x.name} : {self.ty(x.kind)} to {self.ty(x.kind)}", [x])

    # -------------------------------------------------------------- the fusion
    def matmul(self, rng: random.Random) -> None:
        """A bf16 matmul (random layouts) as the fusion's first R x C value; the rest of the
        case is its epilogue and whatever else the generator draws. (`rng` is its own, so that
        the cases without a matmul are the ones the same seeds always gave.)"""
        self.rows, self.cols = rng.choice(MATMUL_SHAPES)
        self.k, self.ta, self.tb = rng.choice(MATMUL_K), rng.random() < 0.3, rng.random() < 0.3
        self.ta &= self.rows % 8 == 0  # a stored K x M needs rows of a multiple of 16 bytes (TMA): M % 8 == 0
        a, b = self.add_arg("ma", "mma", "bf16"), self.add_arg("mb", "mmb", "bf16")
        flags = (" transpose_a" if self.ta else "") + (" transpose_b" if self.tb else "")
        self.emit("mm", "full", f"fusion.matmul %ma, %mb{flags} : {self.ty('mma', 'bf16')}, {self.ty('mmb', 'bf16')} "
                                f"-> {self.ty('full')}", [a, b])

    def build(self, matmul_rng: random.Random | None = None, lead: int = 0,
              typed_rng: random.Random | None = None) -> str:
        """`lead` > 0: a 3-D case of that leading extent (R x C taken from `SHAPES_3D`);
        `typed_rng`: add a typed part drawn from it."""
        rng = self.rng
        if matmul_rng is not None:
            self.matmul(matmul_rng)
        elif lead:
            self.lead = (lead,)
        n_in = rng.randint(1 if not self.args else 0, 3)
        for i in range(n_in):
            kind = "full" if i == 0 else rng.choice(["full", "row", "col"])
            dtype = rng.choice(["f32", "f32", "bf16"])
            arg = self.add_arg(f"in{i}", kind, dtype)
            if dtype == "f32":
                self.values.append(arg)
            else:
                self.typed.append(arg)
                self.emit("x", kind, f"fusion.cast %{arg.name} : {self.ty(kind, dtype)} to {self.ty(kind)}", [arg])
        self.n_in = n_in
        steps = rng.randint(2, 9)
        for _ in range(steps):
            r = rng.random()
            if r < 0.35:
                self.unary()
            elif r < 0.7:
                self.binary()
            elif r < 0.85:
                self.reduce(rng.choice(self.reduced_kinds()))
            elif r < 0.93:
                self.statistics()
            elif r < 0.965:
                self.segment()
            else:
                self.transpose()
        outs = self.choose_outputs()
        if typed_rng is not None:
            outs += self.typed_part(typed_rng)
        return self.assemble(outs)

    def choose_outputs(self) -> list[Value]:
        rng = self.rng
        computed = [v for v in self.values if v.name not in {a.name for a in self.args}]
        n_out = rng.randint(2, 4)
        outs: list[Value] = []
        # Prefer a value another value reads (an output feeding an output), then the last value.
        fed = [v for v in computed if self.uses.get(v.name)]
        if fed:
            outs.append(rng.choice(fed))
        outs.append(computed[-1])
        while len(outs) < n_out:
            r = rng.random()
            if r < 0.15:
                outs.append(rng.choice(outs))                      # a value returned twice
            elif r < 0.22:
                outs.append(rng.choice(self.args))                 # an input returned as is
            else:
                outs.append(rng.choice(computed))
        rng.shuffle(outs)
        return [self.out_cast(v) for v in outs]

    def out_cast(self, v: Value) -> Value:
        """An f32 output in a random output dtype (most stay f32)."""
        dtype = self.rng.choice(OUT_DTYPES) if v.dtype == "f32" else v.dtype
        if dtype != v.dtype:
            v = self.emit("o", v.kind, f"fusion.cast %{v.name} : {self.ty(v.kind)} to {self.ty(v.kind, dtype)}",
                          [v], dtype, listed=False)
        return v

    def assemble(self, final: list[Value]) -> str:
        params = ", ".join(f"%{a.name}: {self.ty(a.kind, a.dtype)}" for a in self.args)
        results = ", ".join(self.ty(v.kind, v.dtype) for v in final)
        body = "\n".join(self.lines)
        names = ", ".join(f"%{v.name}" for v in final)
        self.outputs = final
        return (f"func.func @{self.name}({params}) -> ({results}) {{\n{body}\n"
                f"  func.return {names} : {results}\n}}\n")

    # -------------------------------------------------------------- the typed part
    def typed_part(self, rng: random.Random) -> list[Value]:
        """Two to six features of the other types (and the float ops the float part never
        draws), reading the float part's values; returns two to four (where there are as many)
        of the values they made that nothing reads, those of other types than f32 first."""
        self.rng = rng
        start = len(self.made)
        features = [(self.cmp_alone, 2), (self.where, 3), (self.dropout, 2), (self.use_int, 3), (self.f64, 3),
                    (self.lowp, 3), (self.shape_op, 4), (self.float_op, 3), (self.special, 0.4)]
        for _ in range(rng.randint(2, 6)):
            rng.choices([f for f, _ in features], [w for _, w in features])[0]()
        leaves = [v for v in self.made[start:] if not self.uses.get(v.name)]
        typed = [v for v in leaves if v.dtype != "f32"]
        floats = [v for v in leaves if v.dtype == "f32"]
        n = rng.randint(2, 4)
        outs = rng.sample(typed, min(n, len(typed)))
        outs += rng.sample(floats, min(n - len(outs), len(floats)))
        return [self.out_cast(v) for v in outs]

    def keep(self, v: Value) -> Value:
        """File a value of the typed part: f32 ones with the float values, others with the typed."""
        (self.values if v.dtype == "f32" else self.typed).append(v)
        return v

    def pick_kind(self, kind: str, prefer_exact: bool = False) -> Value:
        """An f32 value of this kind without don't-care elements (exact ones preferred, if asked),
        made if there is none."""
        pool = [v for v in self.values if v.kind == kind and not v.dc]
        exact = [v for v in pool if v.exact]
        if exact and prefer_exact and self.rng.random() < 0.7:
            return self.rng.choice(exact)
        if pool:
            return self.rng.choice(pool)
        return self.transpose(self.pick("full", clean=True)) if kind == "tr" else self.reduce(kind)

    def pick_typed(self, dtype: str, kind: str | None = None) -> Value | None:
        """A value of this type made before (not R x 1, not a saturated integer), if any."""
        pool = [v for v in self.typed if v.dtype == dtype and v.kind != "rowk" and (kind is None or v.kind == kind)
                and v.bound <= 2.0 ** 40]
        return self.rng.choice(pool) if pool else None

    def new_input(self, kind: str, dtype: str) -> Value:
        how, bound = {"i1": "mask", "f64": "f64"}.get(dtype, "uniform"), 0.0
        if dtype == "i64":
            how = self.rng.choice(["small", "large"])
            bound = 9.0 if how == "small" else 2.0 ** 40
        v = self.add_arg(f"in{self.n_in}", kind, dtype, how, bound)
        self.n_in += 1
        return self.keep(v)

    def make(self, dtype: str, kind: str) -> Value:
        """A value of this type and kind: a new input, one made before, or a new one computed."""
        rng = self.rng
        if dtype == "f32":
            return self.pick_kind(kind)
        if kind in ("full", "row", "col") and rng.random() < 0.35:
            return self.new_input(kind, dtype)
        old = self.pick_typed(dtype, kind)
        if old is not None and rng.random() < 0.5:
            return old
        if dtype == "i1" and rng.random() < 0.2:  # relu(x) != 0
            x = self.pick_kind(kind, prefer_exact=True)
            return self.cast(self.emit("re", kind, f"fusion.relu %{x.name} : {self.ty(kind)}", [x], listed=False), "i1")
        if dtype == "i1":
            return self.cmp(kind)
        if dtype == "i64" and rng.random() < 0.25:  # a mask's 0 and 1
            return self.cast(self.make("i1", kind), "i64")
        x = self.pick_kind(kind)
        if dtype == "i64":  # small integers, 4x truncated
            return self.cast(self.scaled(x, 4.0), "i64", bound=16.0)
        return self.cast(x, dtype)

    def cast(self, x: Value, dst: str, bound: float = 16.0) -> Value:
        """`x` cast to `dst`; an i64 cast from a float is at most `bound` in magnitude."""
        v = self.emit("cv", x.kind, f"fusion.cast %{x.name} : {self.ty(x.kind, x.dtype)} to {self.ty(x.kind, dst)}",
                      [x], dst, listed=False)
        if dst == "i64":
            v.bound = 1.0 if x.dtype == "i1" else x.bound if x.dtype == "i64" else bound
        return self.keep(v)

    def scaled(self, x: Value, factor: float, listed: bool = False) -> Value:
        c = self.const(factor, x.kind)
        return self.emit("sc", x.kind, f"fusion.mul %{x.name}, %{c.name} : {self.ty(x.kind)}", [x, c], listed=listed)

    def positive(self, x: Value) -> Value:
        """1 + |x|"""
        a = self.emit("a", x.kind, f"fusion.abs %{x.name} : {self.ty(x.kind)}", [x], listed=False)
        one = self.const(1.0, x.kind)
        return self.emit("s", x.kind, f"fusion.add %{a.name}, %{one.name} : {self.ty(x.kind)}", [a, one], listed=False)

    def maybe_sum(self, y: Value, p: float) -> None:
        """Sum `y` (a full value without don't-care elements) over its rows or columns, with
        probability p: what the masks in it feed a reduction."""
        if y.kind == "full" and y.dtype == "f32" and not y.dc and self.rng.random() < p:
            self.reduce(self.rng.choice(self.reduced_kinds()), x=y, op="sum")

    def cmp(self, kind: str) -> Value:
        """A mask: an exact value (preferred) compared with a constant, another value, its own row
        or column max or min (eq: one-hot where it is reached), another reduction's result."""
        rng = self.rng
        pred = rng.choice(CMP_PREDICATES)
        dtype = rng.choice(LOWP) if rng.random() < 0.3 else "f32"
        if dtype != "f32" and kind in ("full", "row", "col") and rng.random() < 0.3:
            a = self.new_input(kind, dtype)
        else:
            a = self.pick_kind(kind, prefer_exact=True)
        r = rng.random()
        if r < 0.4:
            b = self.const(rng.choice([0.0, 0.5, -0.25, 1.0]), kind, dtype)
        elif r < 0.6 and a.kind == "full":
            src = a if a.dtype == "f32" else self.pick_kind(kind, prefer_exact=True)
            red = self.reduce(rng.choice(self.reduced_kinds()), x=src, op=rng.choice(["max", "min"]))
            b = self.broadcast(red.kind, x=red)
            a = src
        elif r < 0.7 and kind in self.reduced_kinds():
            b = self.reduce(kind)
        else:
            b = self.pick_kind(kind)
        a, b = (v if v.dtype == dtype else self.cast(v, dtype) for v in (a, b))
        return self.keep(self.emit("q", kind, f"fusion.cmp {pred}, %{a.name}, %{b.name} : {self.ty(kind, dtype)}",
                                   [a, b], "i1", listed=False))

    def mask(self) -> Value:
        return self.source("i1")

    def cmp_alone(self) -> Value:
        return self.cmp(self.rng.choice(["full", "row", "col"]))

    def where(self) -> Value:
        """where(mask, a, b or 0): in f32, f16 or bf16, over the mask's kind or, broadcast, the full shape."""
        rng = self.rng
        m = self.mask()
        if m.kind in self.reduced_kinds() and rng.random() < 0.4:
            m = self.broadcast(m.kind, x=m)
        kind = m.kind
        dtype = rng.choice(LOWP) if rng.random() < 0.25 else "f32"
        a = self.pick_kind(kind)
        b = self.const(0.0, kind, dtype) if rng.random() < 0.3 else self.pick_kind(kind)
        a, b = (v if v.dtype == dtype else self.cast(v, dtype) for v in (a, b))
        w = self.keep(self.emit("w", kind, f"fusion.where %{m.name}, %{a.name}, %{b.name} : {self.ty(kind, dtype)}",
                                [m, a, b], dtype, listed=False))
        if dtype != "f32" and rng.random() < 0.5:
            w = self.cast(w, "f32")
        self.maybe_sum(w, 0.3)
        return w

    def dropout(self) -> Value:
        """grad * cast(keep) * 1.25, dropout's backward: a mask in arithmetic, then maybe summed."""
        rng = self.rng
        keep = self.pick_typed("i1", "full") if rng.random() < 0.5 else None
        keep = keep or self.make("i1", "full")
        dst = rng.choice(["f32", "f32", "f16", "bf16", "f64", "i64"])
        k = self.cast(keep, dst)
        if dst != "f32":
            k = self.cast(k, "f32")
        g = self.pick_kind("full")
        y = self.emit("dm", "full", f"fusion.mul %{g.name}, %{k.name} : {self.ty('full')}", [g, k])
        y = self.scaled(y, 1.25, listed=True)
        self.maybe_sum(y, 0.5)
        return y

    def use_int(self) -> Value:
        """An i64 as a mask, or as a float scaled back into range by a power of two."""
        rng = self.rng
        v = self.source("i64")
        dst = rng.choice(["f32", "bf16", "f64", "i1"] + (["f16"] if v.bound <= 2048 else []))
        c = self.cast(v, dst)
        if dst == "i1":
            return c
        if dst != "f32":
            c = self.cast(c, "f32")
        return self.scaled(c, 2.0 ** -math.ceil(math.log2(v.bound + 1)), listed=True)

    def f64(self) -> Value:
        """A computed value returned in f64, or an f64 value cast to another type."""
        rng = self.rng
        if rng.random() < 0.35:
            return self.cast(self.pick(), "f64")
        v = self.source("f64")
        dst = rng.choice(["f32", "f16", "bf16", "i1", "i64"])
        c = self.cast(v, dst, bound=4.0)
        return self.cast(c, "f32") if dst in LOWP and rng.random() < 0.7 else c

    def lowp(self) -> Value:
        """An f16 or bf16 value (an input, one made before, or a cast) cast to another type."""
        rng = self.rng
        t = rng.choice(LOWP)
        dst = rng.choice([d for d in CAST_TYPES if d != t])
        kind = rng.choice(["full", "full", "row", "col"])
        r = rng.random()
        if r < 0.25:
            src = self.new_input(kind, t)
        elif r < 0.5:
            src = self.source(t)
        else:
            x = self.pick_kind(kind)
            if dst == "i1":  # zeros, so that != 0 has two answers
                x = self.emit("re", kind, f"fusion.relu %{x.name} : {self.ty(kind)}", [x], listed=False)
            elif dst == "i64":
                x = self.scaled(x, 4.0)
            src = self.cast(x, t)
        c = self.cast(src, dst)
        return self.cast(c, "f32") if dst in LOWP and rng.random() < 0.5 else c

    def shape_op(self) -> Value:
        """broadcast, permute, reshape or segment_set of an i1, i64, f64, f16 or bf16 value."""
        rng = self.rng
        dtype = rng.choice(["i1", "i64", "f64", "f16", "bf16"])
        op = rng.choice(["broadcast", "permute", "reshape", "segment_set"])
        kind = {"broadcast": rng.choice(self.reduced_kinds()), "permute": "full", "reshape": "row",
                "segment_set": rng.choice(["full", "row", "col"])}[op]
        return self.moved(self.make(dtype, kind), op)

    def moved(self, x: Value, op: str | None = None, back: bool = False) -> Value:
        """`x` through a shape op (`op`, or one that fits its kind), the value used in its place:
        a row or column broadcast, a full value transposed (and maybe, or if `back`, back), a row
        reshaped to R x 1 (and maybe, or if `back`, back), or a segment_set (a kernel boundary)."""
        rng = self.rng
        op = op or rng.choice([o for o, kinds in (("broadcast", self.reduced_kinds()), ("permute", ["full"]),
                                                   ("reshape", ["row"]), ("segment_set", [x.kind])) if x.kind in kinds])
        t = x.dtype
        if op == "broadcast":
            return self.broadcast(x.kind, x=x)
        if op == "permute":
            p = self.transpose(x)
            return self.transpose(p) if back or rng.random() < 0.5 else p
        if op == "reshape":
            r = self.keep(self.emit("z", "rowk", f"fusion.reshape %{x.name} : {self.ty('row', t)} to "
                                                 f"{self.ty('rowk', t)}", [x], t, listed=False))
            if back or rng.random() < 0.5:
                r = self.keep(self.emit("z", "row", f"fusion.reshape %{r.name} : {self.ty('rowk', t)} to "
                                                    f"{self.ty('row', t)}", [r], t, listed=False))
            return r
        return self.keep(self.emit("g", x.kind, f"fusion.segment_set %{x.name} : {self.ty(x.kind, t)} to "
                                                f"{self.ty(x.kind, t)}", [x], t, listed=False))

    def source(self, dtype: str) -> Value:
        """A value of this type to read: one made before or a new one, a quarter of them moved
        through a shape op first (a mask or integer crossing a kernel boundary, transposed, ...)."""
        rng = self.rng
        v = self.pick_typed(dtype) if rng.random() < 0.5 else None
        v = v or self.make(dtype, rng.choice(["full", "full", "row", "col"]))
        return self.moved(v, back=True) if v.kind != "tr" and rng.random() < 0.25 else v

    def float_op(self) -> Value:
        """The float ops the float part never draws: div, pow, sqrt, rsqrt, tanh-form gelu."""
        rng = self.rng
        op = rng.choice(["div", "pow", "sqrt", "rsqrt", "gelu"])
        x = self.pick()
        kind, ty = x.kind, self.ty(x.kind)
        if op == "gelu":
            return self.emit("gt", kind, f'fusion.gelu %{x.name} {{approximate = "tanh"}} : {ty}', [x])
        if op in ("sqrt", "rsqrt"):
            u = self.positive(x)
            return self.emit(op[:2], kind, f"fusion.{op} %{u.name} : {ty}", [u])
        y = self.pick(kind)
        if op == "div":
            d = self.positive(y)
            return self.emit("d", kind, f"fusion.div %{x.name}, %{d.name} : {ty}", [x, d])
        u = self.positive(x)
        t = self.emit("t", kind, f"fusion.tanh %{y.name} : {ty}", [y], listed=False)
        return self.emit("pw", kind, f"fusion.pow %{u.name}, %{t.name} : {ty}", [u, t])

    def special(self) -> Value:
        """A float far outside i64 (saturates), or a NaN (true as a mask, 0 as an integer)."""
        rng = self.rng
        x = self.pick_kind("full")
        if rng.random() < 0.5:
            return self.cast(self.scaled(x, 1e30), "i64", bound=math.inf)
        m = self.make("i1", "full")
        nan = self.const(math.nan, "full")
        w = self.emit("w", "full", f"fusion.where %{m.name}, %{x.name}, %{nan.name} : {self.ty('full')}",
                      [m, x, nan], listed=False)
        return self.cast(w, rng.choice(DISCRETE), bound=2.0)

    # -------------------------------------------------------------- evaluation
    def evaluate(self, inputs: list[np.ndarray], rounding: bool = True) -> list[np.ndarray]:
        return self.expected(inputs, rounding)[0]

    def evaluate_with_magnitudes(self, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return self.expected(inputs)[:2]

    def expected(self, inputs: list[np.ndarray], rounding: bool = True):
        """The outputs (floats as float64, i1 as bool, i64 as int64), the magnitudes their
        rounding errors scale with (`_magnitude`) and their don't-care masks (None: none).
        `rounding=False` computes float casts and constants as the reference interpreter's f64
        mode does, in float64 without rounding."""
        env = {a.name: _as(x, a.dtype) for a, x in zip(self.args, inputs)}
        mag = {n: np.abs(x).astype(np.float64) for n, x in env.items()}
        dc: dict[str, np.ndarray | None] = dict.fromkeys(env)
        for st in self.steps:
            vals = [env[o] for o in st.operands]
            fn = st.fn if rounding or st.unrounded is None else st.unrounded
            # exp(-x) of a very negative x: inf, and sigmoid 0, as meant; NaN only where made on purpose
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                out, m = fn(*vals), st.mag(vals, [mag[o] for o in st.operands])
                margins = [self._margin(o, env[o], mag[o]) for o in st.operands] if st.needs_margin else None
                d = st.dc(vals, [dc[o] for o in st.operands], margins)
            many = len(st.outs) > 1
            for n, x, y in zip(st.outs, out if many else [out], m if many else [m]):
                v = self.info[n]
                env[n] = _as(x, v.dtype)
                mag[n] = (np.abs(env[n]).astype(np.float64) if v.dtype in DISCRETE else
                          np.broadcast_to(np.asarray(y, dtype=np.float64), env[n].shape))
                dc[n] = None if d is None else np.broadcast_to(d, env[n].shape)
        names = [v.name for v in self.outputs]
        return [env[n] for n in names], [mag[n] for n in names], [dc[n] for n in names]

    def _margin(self, name: str, x: np.ndarray, magnitude: np.ndarray) -> np.ndarray | None:
        """How far the kernel's value may be from `x`: None (not at all) for an exact value, else
        the bound `mismatch` allows it."""
        v = self.info[name]
        if v.exact or v.dtype in DISCRETE:
            return None
        scale = max(float(np.max(np.abs(x), where=np.isfinite(x), initial=0.0)), 1e-3)
        return TOLERANCE[v.level] * (np.abs(x) + scale) + ROUNDING_SLACK * magnitude

    def check_key(self, v: Value) -> str:
        """How `mismatch` compares an output: i1 and i64 exactly, an exact float bit for bit, an
        inexact one to the looser tolerance of its dtype and its level."""
        if v.dtype in DISCRETE:
            return v.dtype
        return "exact" if v.exact else max(v.dtype, v.level, key=TOLERANCE.__getitem__)


_EXACT_OPS = {"neg", "abs", "relu", "max", "min", "where", "cast", "broadcast", "reshape", "permute", "segment_set"}


def _derive(op: str, rhs: str, operands: list[Value], dtype: str) -> tuple[bool, str, bool]:
    """(exact, level, dc) of an op's result (see Value). Ops that only move, select or compare
    values, and casts (the evaluation rounds as the kernel does), keep exactness; arithmetic in
    float32 loses it."""
    dc = any(o.dc for o in operands)
    inexact = [o for o in operands if not o.exact]
    if dtype in DISCRETE:  # exact, except where an inexact operand may flip it
        return True, "f64", dc or bool(inexact)
    keeps = op in _EXACT_OPS or (op == "reduce" and rhs.split()[1] in ("max", "min"))
    if op == "full" or (keeps and not inexact):
        return True, "f64", dc
    level = max([o.level for o in inexact] + ["f32"] + ([dtype] if op == "cast" else []), key=TOLERANCE.__getitem__)
    return False, level, dc


def _elems(rhs: str) -> list[str]:
    """The element types of the tensor types in an op's text, in order."""
    return re.findall(r"x([a-z]+\d*)>", rhs)


def _as(x, dtype: str) -> np.ndarray:
    """A value as the evaluation holds it: i1 as bool, i64 as int64, floats as float64."""
    return np.asarray(x).astype({"i1": np.bool_, "i64": np.int64}.get(dtype, np.float64), copy=False)


def _round_to(x, dtype: str) -> np.ndarray:
    """A float64 value rounded to a float dtype (nearest, ties to even), as float64. f16 and bf16
    go through float32, as torch converts f64 (and i64) values to them and the kernels do: one
    rounding from f32, f16 and bf16 values, two from f64 ones."""
    x = np.asarray(x, dtype=np.float64)
    if dtype == "f64":
        return x
    y = x.astype(np.float32)
    if dtype in LOWP:
        y = y.astype(np.float16 if dtype == "f16" else ml_dtypes.bfloat16)
    return y.astype(np.float64)


def _trunc_i64(x) -> np.ndarray:
    """float -> i64: toward zero, saturating at the i64 limits, NaN -> 0."""
    t = np.trunc(np.asarray(x, dtype=np.float64))
    out = np.zeros(t.shape, np.int64)
    inside = (t > -2.0 ** 63) & (t < 2.0 ** 63)
    out[inside] = t[inside].astype(np.int64)
    out[t >= 2.0 ** 63] = np.iinfo(np.int64).max
    out[t <= -2.0 ** 63] = np.iinfo(np.int64).min
    return out


def _cast(x: np.ndarray, src: str, dst: str, rounding: bool = True) -> np.ndarray:
    """fusion.cast's semantics (torch's). `rounding=False`: float targets keep float64, as the
    reference interpreter's f64 mode has them."""
    if dst == "i1":
        return x != 0  # NaN is true
    if dst == "i64":
        return x.astype(np.int64) if src in DISCRETE else _trunc_i64(x)
    if src == "i64" and rounding and dst != "f64":  # to the nearest float32 (then f16 or bf16)
        return _round_to(x.astype(np.float32), dst)
    y = x.astype(np.float64)  # i1: 0 or 1; i64: exact up to 2^53
    return _round_to(y, dst) if rounding else y


def _dims_of(rhs: str) -> tuple[int, ...]:
    """The `dims [...]` of an op's text."""
    return tuple(int(d) for d in re.search(r"dims \[([\d, ]*)\]", rhs).group(1).split(","))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _gelu_slope(x):
    return 0.5 * (1.0 + _ERF(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


_SLOPE = {  # derivatives of the unary ops that are not plain sign changes (gelu's tanh form: the erf form's, close)
    "tanh": lambda x: 1.0 - np.tanh(x) ** 2, "exp": np.exp, "log": lambda x: 1.0 / x,
    "sigmoid": lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)),
    "silu": lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))), "gelu": _gelu_slope,
    "sqrt": lambda x: 0.5 / np.sqrt(x), "rsqrt": lambda x: 0.5 * x ** -1.5,
}
_IDENTITY = lambda x: x  # noqa: E731
_NUMPY = {
    "neg": np.negative, "abs": np.abs, "tanh": np.tanh, "exp": np.exp, "log": np.log,
    "sigmoid": _sigmoid, "relu": lambda x: np.maximum(x, 0.0), "silu": lambda x: x * _sigmoid(x),
    "gelu": lambda x: 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0))),
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
    "div": np.divide, "pow": np.power, "where": np.where, "segment_set": _IDENTITY,
}
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal}


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


def fuzz_case(seed: int, name: str = "fuzz") -> FuzzCase:
    g = _Gen(random.Random(seed), name)
    side = random.Random(seed * 7919 + 1)  # one case in seven opens with a matmul
    with_matmul = side.random() < 1 / 7
    lead = 0
    if not with_matmul and side.random() < 1 / 6:  # and one in six of the others is 3-D
        lead, g.rows, g.cols = side.choice(SHAPES_3D)
    typed = random.Random(seed * 7919 + 2)  # the typed part's own stream: the float part stays as it was
    text = g.build(side if with_matmul else None, lead, typed if typed.random() < TYPED_SHARE else None)
    return FuzzCase(seed, text, [(g.shape(a.kind), a.dtype) for a in g.args], [v.dtype for v in g.outputs],
                    g.evaluate, g.evaluate_with_magnitudes, [g.ranges[a.name] for a in g.args],
                    [g.check_key(v) for v in g.outputs], g.expected)


def random_fusion(seed: int, name: str = "fuzz") -> str:
    """The MLIR text of one random multi-output fusion (the same text for the same seed)."""
    return fuzz_case(seed, name).text


def make_inputs(case: FuzzCase, seed: int) -> list[np.ndarray]:
    """A case's inputs, from a seed: floats uniform in [-2, 2] (float32 values, drawn first and
    as they always were), masks of random 0/1 bytes, small integers in [-9, 9], large ones up to
    2^40 (a third halfway between two float32s where |x| >= 2^39, a tenth 0), f64 values in
    [-4, 4] (a tenth 0, a twentieth each halfway between two float32, f16 or bf16 values)."""
    from fuser.runtime.reference import numpy_dtype

    rng = np.random.default_rng(seed)
    out = []
    for (shape, dt), how in zip(case.inputs, case.ranges or ["uniform"] * len(case.inputs)):
        if how == "uniform":
            x = rng.uniform(-2, 2, shape).astype(np.float32).astype(numpy_dtype(dt))
        elif how == "mask":
            x = rng.integers(0, 2, shape).astype(np.bool_)
        elif how == "small":
            x = rng.integers(-9, 10, shape, dtype=np.int64)
        elif how == "large":
            x = rng.integers(-2 ** 40, 2 ** 40, shape, dtype=np.int64, endpoint=True)
            tie = rng.integers(-2 ** 24, 2 ** 24, shape, dtype=np.int64) * 2 ** 16 + 2 ** 15
            r = rng.random(shape)
            x = np.where(r < 1 / 3, tie, np.where(r < 0.43, 0, x))
        else:  # f64
            x = rng.uniform(-4, 4, shape)
            r = rng.random(shape)
            for lo, hi, bits, dtype in ((0.0, 0.05, 23, "f32"), (0.05, 0.1, 10, "f16"), (0.1, 0.15, 7, "bf16")):
                a = _round_to(x, dtype)  # a float of that type, then half its unit in the last place more
                tie = a + np.ldexp(1.0, np.frexp(a)[1] - bits - 2)
                x = np.where((r >= lo) & (r < hi), tie, x)
            x = np.where(r >= 0.9, 0.0, x)
        out.append(x)
    return out


TOLERANCE = {"f64": 1e-12, "f32": 2e-4, "bf16": 2e-2, "f16": 4e-3}


ROUNDING_SLACK = 16 * 2.0 ** -24
"""Rounding a float32 kernel may add to an element, per unit of its magnitude (see `_Gen._magnitude`):
16 float32 epsilons, for the summation order and the approximate exp/log/division."""


# Where rounding to the output dtype gives infinity: half of an ulp past the largest finite value.
OVERFLOW = {"f16": 65520.0, "bf16": 3.3961e38}


def mismatch(got, want, dtype: str, magnitude=None, dontcare=None) -> str | None:
    """None if `got` matches the float64 `want` for an output of `dtype`, else a short reason.

    i1 and i64 (and "exact", a float the kernel must give bit for bit): every element equal
    (NaN to NaN). Floats: elementwise
    |got - want| <= tol * (|want| + max(max|want|, 1e-3)) + ROUNDING_SLACK * magnitude:
    relative to the element, with an absolute floor scaled by the output's magnitude and never
    below 1e-3 * tol (a value that cancels to 0 in float32 and to 1e-32 in float64, the variance
    of a constant row, is rounding, since inputs are of order 1), plus the rounding that the
    computation itself amplifies: a sum of 1000 terms of order 1 that cancels to 1e-13 in
    float64 is 1e-5 in float32, and that is not a wrong answer either. Elements where
    `dontcare` is set are not compared."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return f"shape {g.shape} != {w.shape}"
    skip = np.zeros(w.shape, bool) if dontcare is None else np.asarray(dontcare, bool)
    if dtype in DISCRETE:  # compared as integers, so that an i1 byte of 2 is not taken for true
        bad = g.astype(np.int64) != w.astype(np.int64)
    else:
        g, w = g.astype(np.float64), w.astype(np.float64)
        with np.errstate(invalid="ignore"):  # inf - inf
            if dtype == "exact":
                bad = ~((g == w) | (np.isnan(g) & np.isnan(w)))
            else:
                tol = TOLERANCE[dtype]
                scale = float(np.max(np.abs(w))) if w.size else 0.0
                slack = 0.0 if magnitude is None else ROUNDING_SLACK * np.asarray(magnitude, dtype=np.float64)
                bad = ~(np.abs(g - w) <= tol * (np.abs(w) + max(scale, 1e-3)) + slack) & ~(np.isnan(g) & np.isnan(w))
                # A value past the dtype's largest finite one rounds to infinity (f16: from 65520 on):
                # the kernel's inf is right where the exact value is within rounding of that threshold.
                limit = OVERFLOW.get(dtype)
                if limit is not None:
                    bad &= ~(np.isinf(g) & (np.sign(g) == np.sign(w)) & (np.abs(w) >= limit * (1 - tol)))
    bad &= ~skip
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), w.shape)
        unchecked = f" ({int(skip.sum())} don't-care)" if skip.any() else ""
        return (f"{int(bad.sum())} of {w.size} elements differ{unchecked}; first at {tuple(int(x) for x in i)}: "
                f"{g[i]} vs {w[i]}")
    return None


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
    from fuser.lowering.ptx import PtxasError, assemble_ptx, find_ptxas
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
    from xdsl.dialects.builtin import FunctionType

    from fuser.dialects.ir import parse_module, print_module

    m = parse_module(text)
    fn = next(op for op in m.walk() if isinstance(op, func.FuncOp))
    ret = fn.body.block.last_op
    kept = [v for j, v in enumerate(ret.operands) if j != i]
    ret.operands = kept
    fn.function_type = FunctionType.from_lists(list(fn.function_type.inputs.data), [v.type for v in kept])
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


def run(cases: int, seed: int, gpu: bool = False, save: Path | None = None, log=print) -> Counter:
    counts: Counter = Counter()
    refusals: Counter = Counter()
    if gpu and (problem := gpu_problem()):  # before any case, not as a crash of each
        raise RuntimeError(problem)
    t0 = time.perf_counter()
    for s in range(seed, seed + cases):
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
    log(f"fuser-fuzz: {cases} cases from seed {seed} on the {'GPU' if gpu else 'CPU'} in "
        f"{time.perf_counter() - t0:.0f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for pattern, n in refusals.most_common():
        log(f"  refused {n}x: {pattern}")
    return counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fuser-fuzz", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=200, help="how many random fusions (default 200)")
    p.add_argument("--seed", type=int, default=0, help="first seed (case i uses seed + i)")
    p.add_argument("--gpu", action="store_true", help="run every kernel on the GPU (else: the reference interpreter)")
    p.add_argument("--save-failures", type=Path, help="write each failing case, shrunk, as a .mlir reproducer here")
    args = p.parse_args(argv)
    if args.gpu and (problem := gpu_problem()):
        print(f"fuser-fuzz: {problem}", file=sys.stderr)
        return 2
    counts = run(args.cases, args.seed, args.gpu, args.save_failures)
    return 1 if counts["mismatch"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
