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

Each case is compiled with one of `OPTION_VARIANTS` (schedule options, or a forced split-K
strategy, serial or two-kernel, for the matmul cases).

Values stay in a modest range (inputs in [-2, 2], exp only of tanh, log only of 1 + |v|,
reduction sums scaled by 1/extent), so a float32 kernel and the float64 reference agree to a
tolerance that fits the output dtype plus the rounding each output's computation amplifies (its
magnitude: what a sum added up, what a function's slope scales), and any real mismatch is a bug.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass
class Value:
    name: str
    kind: str  # "full" (R x C), "row" (R), "col" (C)
    dtype: str = "f32"


class _Gen:
    def __init__(self, rng: random.Random, name: str):
        self.rng = rng
        self.name = name
        self.rows, self.cols = rng.choice(SHAPES)
        self.lead: tuple[int, ...] = ()  # a 3-D case's leading extent (B,)
        self.k, self.ta, self.tb = 0, False, False  # a matmul case's K and operand layouts
        self.lines: list[str] = []
        self.values: list[Value] = []
        self.args: list[Value] = []
        self.uses: dict[str, set[str]] = {}  # value -> values computed from it (directly)
        self.count = 0
        # The fuzzer's own float64 semantics, written apart from the reference interpreter:
        # (result names, numpy function, operand names), in program order.
        self.steps: list[tuple[list[str], object, list[str]]] = []
        self.mag_steps: list[object] = []  # per step: (operand values, their magnitudes) -> magnitude(s)

    def ty(self, kind: str, dtype: str = "f32") -> str:
        return "tensor<" + "x".join(str(d) for d in self.shape(kind)) + f"x{dtype}>"

    def fresh(self, stem: str) -> str:
        self.count += 1
        # A stem ending in a digit takes a separator: "m2" + 7 must not spell "m" + 27.
        return f"{stem}_{self.count}" if stem[-1].isdigit() else f"{stem}{self.count}"

    def emit(self, stem: str, kind: str, rhs: str, operands: list[Value], dtype: str = "f32",
             listed: bool = True) -> Value:
        v = Value(self.fresh(stem), kind, dtype)
        self.lines.append(f"  %{v.name} = {rhs}")
        self.steps.append(([v.name], self._numpy(rhs, kind), [o.name for o in operands]))
        self.mag_steps.append(self._magnitude(rhs, kind))
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

    def _numpy(self, rhs: str, kind: str):
        """The float64 function of one emitted op, from its text."""
        op = rhs.split()[0].removeprefix("fusion.")
        if op == "full":
            value, shape = float(rhs.split()[1]), self.shape(kind)
            return lambda: np.full(shape, value)
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
        takes |f'(x)| * magnitude(x) + |f(x)|."""
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
        slope = _SLOPE[op]
        return lambda vals, mags: np.abs(slope(vals[0])) * mags[0] + np.abs(fn(vals[0]))

    def pick(self, kind: str | None = None) -> Value:
        pool = [v for v in self.values if kind is None or v.kind == kind]
        return self.rng.choice(pool)

    # -------------------------------------------------------------- ops
    def const(self, value: float, kind: str) -> Value:
        return self.emit("c", kind, f"fusion.full {value:.9e} : {self.ty(kind)}", [], listed=False)

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

    def broadcast(self, src_kind: str) -> Value:
        x = self.pick(src_kind) if any(v.kind == src_kind for v in self.values) else self.reduce(src_kind)
        dims = self.dims(src_kind)[0]
        return self.emit("b", "full", f"fusion.broadcast %{x.name} dims {dims} : {self.ty(src_kind)} to "
                                      f"{self.ty('full')}", [x])

    def reduce(self, kind: str) -> Value:
        x = self.pick("full")
        dims, n = self.dims(kind)
        op = self.rng.choice(["sum", "sum", "max", "min"])
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
        x = self.pick("full")
        kind = "row" if self.rng.random() < 0.6 else "col"
        if self.lead and kind == "col":
            kind = self.rng.choice(["col", "mid", "ends"])
        axis, n = self.dims(kind)
        axis = tuple(axis)
        if self.rng.random() < 0.5:
            return self.var_mean(x, kind, axis)
        return self.welford(x, kind, axis, n)

    def var_mean(self, x: Value, kind: str, axis: tuple[int, ...]) -> Value:
        var, mean = Value(self.fresh("var"), kind), Value(self.fresh("mean"), kind)
        self.lines.append(f"  %{var.name}, %{mean.name} = fusion.var_mean %{x.name} dims {list(axis)} correction 0 : "
                          f"{self.ty('full')} to {self.ty(kind)}, {self.ty(kind)}")
        self.uses.setdefault(x.name, set()).update({var.name, mean.name})
        self.steps.append(([var.name, mean.name], lambda a: (np.var(a, axis=axis), np.mean(a, axis=axis)), [x.name]))
        self.mag_steps.append(lambda vals, mags: (np.mean(mags[0] ** 2, axis=axis), np.mean(mags[0], axis=axis)))
        self.values += [var, mean]
        return self.rng.choice([var, mean])

    def welford(self, x: Value, kind: str, axis: tuple[int, ...], n: int) -> Value:
        """avg, m2 (the sum of squared deviations, scaled by 1/n to stay in range) and the count
        (unused: an i64 result the kernel still has to produce)."""
        avg, m2, cnt = (Value(self.fresh(s), kind) for s in ("avg", "m2", "n"))
        self.lines.append(f"  %{avg.name}, %{m2.name}, %{cnt.name} = fusion.welford %{x.name} dims {list(axis)} : "
                          f"{self.ty('full')} to {self.ty(kind)}, {self.ty(kind)}, {self.ty(kind, 'i64')}")
        self.uses.setdefault(x.name, set()).update({avg.name, m2.name})

        def moments(a):
            mu = np.mean(a, axis=axis, keepdims=True)
            return np.squeeze(mu, axis), np.sum((a - mu) ** 2, axis=axis), np.full(np.squeeze(mu, axis).shape, float(n))

        def magnitudes(vals, mags):
            mu = np.mean(mags[0], axis=axis, keepdims=True)
            return np.squeeze(mu, axis), np.sum((mags[0] + mu) ** 2, axis=axis), 0.0
        self.steps.append(([avg.name, m2.name, cnt.name], moments, [x.name]))
        self.mag_steps.append(magnitudes)
        scale = self.const(1.0 / n, kind)
        m = self.emit("m", kind, f"fusion.mul %{m2.name}, %{scale.name} : {self.ty(kind)}", [m2, scale])
        self.values.append(avg)
        return self.rng.choice([avg, m])

    def transpose(self) -> Value:
        """A full value with its last two dims swapped (the transpose scheduler's input)."""
        x = self.pick("full")
        rank = len(self.shape("full"))
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        return self.emit("p", "tr", f"fusion.permute %{x.name} {perm} : {self.ty('full')} to {self.ty('tr')}", [x])

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
        a, b = Value("ma", "mma", "bf16"), Value("mb", "mmb", "bf16")
        self.args += [a, b]
        flags = (" transpose_a" if self.ta else "") + (" transpose_b" if self.tb else "")
        self.emit("mm", "full", f"fusion.matmul %ma, %mb{flags} : {self.ty('mma', 'bf16')}, {self.ty('mmb', 'bf16')} "
                                f"-> {self.ty('full')}", [a, b])

    def build(self, matmul_rng: random.Random | None = None, lead: int = 0) -> str:
        """`lead` > 0: a 3-D case of that leading extent (R x C taken from `SHAPES_3D`)."""
        rng = self.rng
        if matmul_rng is not None:
            self.matmul(matmul_rng)
        elif lead:
            self.lead = (lead,)
        n_in = rng.randint(1 if not self.args else 0, 3)
        for i in range(n_in):
            kind = "full" if i == 0 else rng.choice(["full", "row", "col"])
            dtype = rng.choice(["f32", "f32", "bf16"])
            arg = Value(f"in{i}", kind, dtype)
            self.args.append(arg)
            if dtype == "f32":
                self.values.append(arg)
            else:
                self.emit("x", kind, f"fusion.cast %{arg.name} : {self.ty(kind, dtype)} to {self.ty(kind)}", [arg])
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
        return self.finish()

    def finish(self) -> str:
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
        final: list[Value] = []
        for v in outs:
            dtype = rng.choice(OUT_DTYPES) if v.dtype == "f32" else v.dtype
            if dtype != v.dtype:
                v = self.emit("o", v.kind, f"fusion.cast %{v.name} : {self.ty(v.kind)} to {self.ty(v.kind, dtype)}",
                              [v], dtype, listed=False)
            final.append(v)
        params = ", ".join(f"%{a.name}: {self.ty(a.kind, a.dtype)}" for a in self.args)
        results = ", ".join(self.ty(v.kind, v.dtype) for v in final)
        body = "\n".join(self.lines)
        names = ", ".join(f"%{v.name}" for v in final)
        self.outputs = final
        return (f"func.func @{self.name}({params}) -> ({results}) {{\n{body}\n"
                f"  func.return {names} : {results}\n}}\n")

    def evaluate(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return self.evaluate_with_magnitudes(inputs)[0]

    def evaluate_with_magnitudes(self, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The float64 results, and the magnitudes their rounding errors scale with (`_magnitude`)."""
        env = {a.name: np.asarray(x, dtype=np.float64) for a, x in zip(self.args, inputs)}
        mag = {n: np.abs(x) for n, x in env.items()}
        for (names, fn, operands), mfn in zip(self.steps, self.mag_steps):
            vals = [env[o] for o in operands]
            with np.errstate(over="ignore"):  # exp(-x) of a very negative x: inf, and sigmoid 0, as meant
                out, m = fn(*vals), mfn(vals, [mag[o] for o in operands])
            for n, x, y in zip(names, out if len(names) > 1 else [out], m if len(names) > 1 else [m]):
                env[n] = np.asarray(x, dtype=np.float64)
                mag[n] = np.broadcast_to(np.asarray(y, dtype=np.float64), env[n].shape)
        return [env[v.name] for v in self.outputs], [mag[v.name] for v in self.outputs]


def _dims_of(rhs: str) -> tuple[int, ...]:
    """The `dims [...]` of an op's text."""
    return tuple(int(d) for d in re.search(r"dims \[([\d, ]*)\]", rhs).group(1).split(","))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _gelu_slope(x):
    return 0.5 * (1.0 + _ERF(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


_SLOPE = {  # derivatives of the unary ops that are not plain sign changes
    "tanh": lambda x: 1.0 - np.tanh(x) ** 2, "exp": np.exp, "log": lambda x: 1.0 / x,
    "sigmoid": lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)),
    "silu": lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))), "gelu": _gelu_slope,
}
_IDENTITY = lambda x: x  # noqa: E731
_NUMPY = {
    "neg": np.negative, "abs": np.abs, "tanh": np.tanh, "exp": np.exp, "log": np.log,
    "sigmoid": _sigmoid, "relu": lambda x: np.maximum(x, 0.0), "silu": lambda x: x * _sigmoid(x),
    "gelu": lambda x: 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0))),
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
    "cast": _IDENTITY, "segment_set": _IDENTITY,
}


@dataclass
class FuzzCase:
    seed: int
    text: str
    inputs: list[tuple[tuple[int, ...], str]]   # (shape, dtype) of each argument
    outputs: list[str]                          # dtype of each result
    evaluate: object = field(repr=False)        # inputs -> float64 results
    with_magnitudes: object = field(repr=False, default=None)  # inputs -> (results, their error magnitudes)


def fuzz_case(seed: int, name: str = "fuzz") -> FuzzCase:
    g = _Gen(random.Random(seed), name)
    side = random.Random(seed * 7919 + 1)  # one case in seven opens with a matmul
    with_matmul = side.random() < 1 / 7
    lead = 0
    if not with_matmul and side.random() < 1 / 6:  # and one in six of the others is 3-D
        lead, g.rows, g.cols = side.choice(SHAPES_3D)
    text = g.build(side if with_matmul else None, lead)
    return FuzzCase(seed, text, [(g.shape(a.kind), a.dtype) for a in g.args], [v.dtype for v in g.outputs],
                    g.evaluate, g.evaluate_with_magnitudes)


def random_fusion(seed: int, name: str = "fuzz") -> str:
    """The MLIR text of one random multi-output fusion (the same text for the same seed)."""
    return fuzz_case(seed, name).text


TOLERANCE = {"f32": 2e-4, "bf16": 2e-2, "f16": 4e-3}


ROUNDING_SLACK = 16 * 2.0 ** -24
"""Rounding a float32 kernel may add to an element, per unit of its magnitude (see `_Gen._magnitude`):
16 float32 epsilons, for the summation order and the approximate exp/log/division."""


# Where rounding to the output dtype gives infinity: half of an ulp past the largest finite value.
OVERFLOW = {"f16": 65520.0, "bf16": 3.3961e38}


def mismatch(got, want, dtype: str, magnitude=None) -> str | None:
    """None if `got` matches the float64 `want` for an output of `dtype`, else a short reason.

    Elementwise |got - want| <= tol * (|want| + max(max|want|, 1e-3)) + ROUNDING_SLACK * magnitude:
    relative to the element, with an absolute floor scaled by the output's magnitude and never
    below 1e-3 * tol (a value that cancels to 0 in float32 and to 1e-32 in float64, the variance
    of a constant row, is rounding, since inputs are of order 1), plus the rounding that the
    computation itself amplifies: a sum of 1000 terms of order 1 that cancels to 1e-13 in
    float64 is 1e-5 in float32, and that is not a wrong answer either."""
    import numpy as np

    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    if g.shape != w.shape:
        return f"shape {g.shape} != {w.shape}"
    tol = TOLERANCE[dtype]
    scale = float(np.max(np.abs(w))) if w.size else 0.0
    slack = 0.0 if magnitude is None else ROUNDING_SLACK * np.asarray(magnitude, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf
        bad = ~(np.abs(g - w) <= tol * (np.abs(w) + max(scale, 1e-3)) + slack) & ~(np.isnan(g) & np.isnan(w))
    # A value past the dtype's largest finite one rounds to infinity (f16: from 65520 on): the
    # kernel's inf is right where the exact value is within rounding of that threshold.
    limit = OVERFLOW.get(dtype)
    if limit is not None:
        bad &= ~(np.isinf(g) & (np.sign(g) == np.sign(w)) & (np.abs(w) >= limit * (1 - tol)))
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), w.shape)
        return f"{int(bad.sum())} of {w.size} elements differ; first at {tuple(int(x) for x in i)}: {g[i]} vs {w[i]}"
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


def check(case: FuzzCase, text: str, options: str, inputs, want, gpu: bool, mags=None) -> tuple[str, str]:
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
        got = k(*inputs) if gpu else reference_from_text(text)(*inputs, precision="f64")
    except Exception as e:  # noqa: BLE001
        return "crash", f"run: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    got = got if isinstance(got, (tuple, list)) else [got]
    for i, (g, w, dt) in enumerate(zip(got, want, case.outputs)):
        why = mismatch(g, w, dt, None if mags is None else mags[i])
        if why:
            return "mismatch", f"output #{i} ({dt}): {why}"
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


def shrink(case: FuzzCase, options: str, inputs, want, gpu: bool, status: str, mags=None) -> tuple[str, list[int]]:
    """Drop outputs while the failure stays; returns the smaller text and the outputs kept."""
    text, keep = case.text, list(range(len(case.outputs)))
    i = 0
    while len(keep) > 1 and i < len(keep):
        trial = _without_output(text, i)
        sub = FuzzCase(case.seed, trial, case.inputs, [case.outputs[j] for j in keep if j != keep[i]], case.evaluate)
        kept = [j for j in keep if j != keep[i]]
        if check(sub, trial, options, inputs, [want[j] for j in kept], gpu,
                 None if mags is None else [mags[j] for j in kept])[0] == status:
            text, keep = trial, [j for j in keep if j != keep[i]]
        else:
            i += 1
    return text, keep


def run(cases: int, seed: int, gpu: bool = False, save: Path | None = None, log=print) -> Counter:
    from fuser.runtime.reference import numpy_dtype

    counts: Counter = Counter()
    refusals: Counter = Counter()
    t0 = time.perf_counter()
    for s in range(seed, seed + cases):
        rng = np.random.default_rng(s)
        case = fuzz_case(s)
        options = OPTION_VARIANTS[s % len(OPTION_VARIANTS)]
        inputs = [rng.uniform(-2, 2, shape).astype(np.float32).astype(numpy_dtype(dt)) for shape, dt in case.inputs]
        want, mags = case.with_magnitudes(inputs)
        status, detail = check(case, case.text, options, inputs, want, gpu, mags)
        counts[status] += 1
        if status == "refused":
            refusals[detail] += 1
        elif status != "ok":
            log(f"seed {s} ({options or 'default options'}): {status}: {detail}")
            if save is not None:
                text, keep = shrink(case, options, inputs, want, gpu, status, mags)
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
    counts = run(args.cases, args.seed, args.gpu, args.save_failures)
    return 1 if counts["mismatch"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
