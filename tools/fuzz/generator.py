"""The float part of a random fusion, and `_Gen`, which draws a case and writes its MLIR text.

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

For every op it emits, `_Gen` records the op's float64 semantics (a `Step`, from the
`_Semantics` mixin of semantics.py); its typed part comes from the `_TypedPart` mixin of typed.py.
"""

from __future__ import annotations

import math
import random

import numpy as np

from .semantics import FP8, INTS, MLIR_NAMES, Step, Value, _derive, _Semantics
from .f64_part import _F64Part
from .typed import _TypedPart

SHAPES = [(31, 33), (64, 96), (7, 128), (129, 257), (2, 1024), (256, 64), (5, 3000), (1000, 24), (33, 512)]
# Matmul cases: R x C (= M x N) with rows of a multiple of 16 bytes, so the Hopper matmul takes
# them (ragged tiles, one tile, several); K from one 64-slice to many, ragged included.
# 3-D cases (one in six that have no matmul): the rows are B x R, the columns reduce two dims
SHAPES_3D = [(3, 5, 96), (2, 33, 64), (4, 7, 129), (8, 16, 256), (1, 31, 33), (5, 3, 1000)]
MATMUL_SHAPES = [(128, 128), (200, 264), (64, 96), (333, 136), (256, 64), (1000, 24)]
MATMUL_K = [64, 72, 256, 520, 1000]
# FP8 matmuls (one in four, issue 34): A [M, K] and B stored [N, K], both K-major as FP8 wgmmas read
# them, with rows of a multiple of 16 bytes (K % 16 == 0); K-slices of 128 elements, some ragged
MATMUL_K_FP8 = [64, 80, 256, 528, 1008]
UNARY = ["neg", "abs", "tanh", "sigmoid", "relu", "silu", "gelu"]
# Ops drawn in place of one of the above from their own stream (`variants`), so that a seed
# keeps the fusion it had before they existed, with some ops swapped: of a value in (-1, 1)
# (exp's place: exp2, expm1, sinh, cosh, asin, acos, and atanh and erfinv of half of it, away
# from their poles, erfcinv of 1 plus half of it), of 1 + |x| (log's: log2, log10, log1p of |x|,
# 1 / (1 + |x|), acosh), of any value (tanh's: erf, lgamma and the trigonometric ones; lgamma's poles
# make its slope, and so the error allowed, large near them), the step functions in place of abs, and tests of a
# float (isnan, signbit, ...) in place of some comparisons, masks combined by logical ops,
# atan2 in place of min, fmod and remainder in place of max.
VARIANTS = {"exp": ["exp2", "expm1", "sinh", "cosh", "asin", "acos", "atanh", "erfinv", "erfcinv"],
            "log": ["log2", "log10", "log1p", "reciprocal", "acosh"],
            "tanh": ["erf", "erfc", "sin", "cos", "tan", "atan", "asinh", "lgamma"],
            "abs": ["floor", "ceil", "trunc", "round", "sign"],
            "cmp": ["cmp", "cmp", "signbit", "isnan", "isinf", "isfinite", "isposinf", "isneginf"],
            "mask": ["mask", "logical_not", "logical_and", "logical_or", "logical_xor"], "min": ["atan2"],
            "max": ["fmod", "remainder"]}
BINARY = ["add", "sub", "mul", "max", "min"]
OUT_DTYPES = ["f32", "f32", "f32", "bf16", "f16"]


class _Gen(_Semantics, _TypedPart, _F64Part):
    """One random fusion: its MLIR text (`lines`, `assemble`) and, op by op, its float64
    semantics (`steps`, which `expected` evaluates)."""

    def __init__(self, rng: random.Random, name: str):
        self.rng = rng
        self.variants: random.Random | None = None  # draws VARIANTS (fuzz_case sets it)
        self.creations: random.Random | None = None  # draws `creation` ops (fuzz_case sets it)
        self.scans: random.Random | None = None  # draws the typed part's scans (fuzz_case sets it)
        self.f64s: random.Random | None = None  # draws the typed part's f64 math (fuzz_case sets it)
        self.sorts: random.Random | None = None  # draws the typed part's sorts (fuzz_case sets it)
        self.scatters: random.Random | None = None  # turns gathers into scatters (fuzz_case sets it)
        self.fp8s: random.Random | None = None  # draws the typed part's FP8 values (fuzz_case sets it)
        self.name = name
        self.rows, self.cols = rng.choice(SHAPES)
        self.lead: tuple[int, ...] = ()  # a 3-D case's leading extent (B,)
        self.k, self.ta, self.tb = 0, False, False  # a matmul case's K and operand layouts
        self.lines: list[str] = []
        self.values: list[Value] = []   # f32 values, which arithmetic and reductions read
        self.typed: list[Value] = []    # values of the other types (i1, the integers, f64, f16, bf16)
        self.args: list[Value] = []
        self.info: dict[str, Value] = {}
        self.ranges: dict[str, str] = {}  # input name -> how `make_inputs` draws it
        self.made: list[Value] = []       # every computed value, in program order
        self.uses: dict[str, set[str]] = {}  # value -> values computed from it (directly)
        self.count = 0
        self.n_in = 0
        self.steps: list[Step] = []
        self.outputs: list[Value] = []
        self.arg_layouts: dict[str, tuple[tuple[int, ...], int]] = {}  # input -> declared (strides, offset)
        self.out_orders: list[tuple[int, ...] | None] = []  # per output: its stride order, if any
        self.out_aliases: list[int | None] = []  # per output: the input it is written into (in place), if any

    def ty(self, kind: str, dtype: str = "f32") -> str:
        """The tensor type of a kind and a dtype (short names: u8 is spelled ui8, f8e4m3fn f8E4M3FN)."""
        return "tensor<" + "".join(f"{d}x" for d in self.shape(kind)) + f"{MLIR_NAMES.get(dtype, dtype)}>"

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
        v.bound = max((o.bound for o in operands if o.dtype in INTS), default=0.0)
        self.lines.append(f"  %{v.name} = {rhs}")
        dc, needs_margin = self._dontcare(op, rhs, kind, operands, dtype)
        unrounded = self._numpy(rhs, kind, rounding=False) if op in ("cast", "full", "iota", "uniform", "normal") else None
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
        if kind.startswith("="):  # an explicit shape ("=7x33"): a slice's result, of no kind
            return tuple(int(d) for d in kind[1:].split("x"))
        m, n, k, b = self.rows, self.cols, self.k, self.lead
        return {"full": b + (m, n), "row": b + (m,), "col": (n,), "rowk": b + (m, 1),
                "mid": b + (n,), "ends": (m,),  # 3-D only: reduced over the middle dim / the two outer ones
                "tr": b + (n, m),                # a full value with its last two dims swapped
                "mma": (k, m) if self.ta else (m, k), "mmb": (n, k) if self.tb else (k, n),
                "scalar": ()}[kind]  # (a random op's seed or offset)

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

    def pick(self, kind: str | None = None, clean: bool = False) -> Value:
        """An f32 value (of this kind; `clean`: without don't-care elements, for reductions)."""
        pool = [v for v in self.values if (kind is None or v.kind == kind) and not (clean and v.dc)]
        return self.rng.choice(pool)

    # -------------------------------------------------------------- ops
    def const(self, value: float, kind: str, dtype: str = "f32") -> Value:
        return self.emit("c", kind, f"fusion.full {value:.9e} : {self.ty(kind, dtype)}", [], dtype, listed=False)

    def variant(self, op: str) -> str:
        """`op` a third of the time, else one of its VARIANTS (from their own stream)."""
        if self.variants is None or op not in VARIANTS or self.variants.random() < 1 / 3:
            return op
        return self.variants.choice(VARIANTS[op])

    def unary(self) -> Value:
        if self.creations is not None and self.creations.random() < 0.12:
            self.creation()  # (a value more for this op and later ones to pick)
        x = self.pick()
        r = self.rng.random()
        if r < 0.12:  # exp of a bounded value
            t = self.emit("t", x.kind, f"fusion.tanh %{x.name} : {self.ty(x.kind)}", [x])
            op = self.variant("exp")
            if op in ("atanh", "erfinv", "erfcinv"):  # of tanh(x) / 2: tanh rounds to 1 where these are finite
                half = self.const(0.5, x.kind)
                t = self.emit("h", x.kind, f"fusion.mul %{t.name}, %{half.name} : {self.ty(x.kind)}", [t, half])
            if op == "erfcinv":  # of 1 + tanh(x) / 2, in (1/2, 3/2)
                one = self.const(1.0, x.kind)
                t = self.emit("u", x.kind, f"fusion.add %{t.name}, %{one.name} : {self.ty(x.kind)}", [t, one])
            return self.emit(op[:2], x.kind, f"fusion.{op} %{t.name} : {self.ty(x.kind)}", [t])
        if r < 0.2:  # log of 1 + |x| (log1p of |x|, or 1 / (1 + |x|))
            a = self.emit("a", x.kind, f"fusion.abs %{x.name} : {self.ty(x.kind)}", [x])
            one = self.const(1.0, x.kind)
            s = self.emit("s", x.kind, f"fusion.add %{a.name}, %{one.name} : {self.ty(x.kind)}", [a, one])
            op = self.variant("log")
            arg = a if op == "log1p" else s
            return self.emit(op[:2], x.kind, f"fusion.{op} %{arg.name} : {self.ty(x.kind)}", [arg])
        op = self.variant(self.rng.choice(UNARY))
        return self.emit(op[:2], x.kind, f"fusion.{op} %{x.name} : {self.ty(x.kind)}", [x])

    def creation(self) -> Value:
        """Before a unary op (from its own stream, `creations`): iota of any numeric type, uniform
        or normal (f32, f16, bf16, f64) of a full value, with constant seed and
        offset, cast to f32 where drawn of another type."""
        rng = self.creations
        op = rng.choice(["uniform", "normal", "iota", "iota"])
        operands: list[Value] = []
        if op == "iota":
            dtype = rng.choice(["f32", "f64", "f16", "bf16", *INTS])  # each type alike: all must be drawn
            if dtype in INTS:
                start, step = rng.randint(0 if dtype == "u8" else -50, 50), rng.randint(-3, 3)
            else:
                start, step = round(rng.uniform(-4, 4), 3), round(rng.uniform(-0.01, 0.01), 5)
            # (MLIR float literals need a point: 5e-05 is not one, 5.000000000e-05 is)
            lit = (lambda v: str(v)) if dtype in INTS else (lambda v: f"{v:.9e}")
            rhs = f"fusion.iota start {lit(start)} step {lit(step)} : {self.ty('full', dtype)}"
        else:
            dtype = rng.choice(["f32", "f32", "bf16", "f16", "f64"])
            operands = [self.const(float(rng.randint(0, 10 ** 6)), "scalar", "i64"),
                        self.const(float(rng.randint(0, 5)), "scalar", "i64")]
            params = "low -2.0 high 3.0" if op == "uniform" else "mean 0.5 std 1.5"
            rhs = f"fusion.{op} %{operands[0].name}, %{operands[1].name} {params} : {self.ty('full', dtype)}"
        v = self.emit(op[:2], "full", rhs, operands, dtype, listed=dtype == "f32")
        if dtype != "f32":
            v = self.emit("x", "full", f"fusion.cast %{v.name} : {self.ty('full', dtype)} to {self.ty('full')}", [v])
        return v

    def binary(self) -> Value:
        a = self.pick()
        kind = a.kind
        if kind == "full" and self.rng.random() < 0.4:  # a broadcast row or column operand
            b = self.broadcast(self.rng.choice(self.reduced_kinds()))
        else:
            b = self.pick(kind)
        if self.rng.random() < 0.5:
            a, b = b, a
        op = self.variant(self.rng.choice(BINARY))
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

    def _stat(self, stem: str, kind: str, x: Value) -> Value:
        """A statistic of `x`: f32, or f64 of an f64 input (then checked at f64's tolerance where
        the input is)."""
        if x.dtype != "f64":
            return Value(self.fresh(stem), kind)
        return Value(self.fresh(stem), kind, "f64", level="f64" if x.exact or x.level == "f64" else x.level)

    def var_mean(self, x: Value, kind: str, axis: tuple[int, ...]) -> Value:
        var, mean = self._stat("var", kind, x), self._stat("mean", kind, x)
        t = var.dtype
        self.lines.append(f"  %{var.name}, %{mean.name} = fusion.var_mean %{x.name} dims {list(axis)} correction 0 : "
                          f"{self.ty('full', x.dtype)} to {self.ty(kind, t)}, {self.ty(kind, t)}")
        self._statistics_step([var, mean], lambda a: (np.var(a, axis=axis), np.mean(a, axis=axis)),
                              lambda vals, mags: (np.mean(mags[0] ** 2, axis=axis), np.mean(mags[0], axis=axis)),
                              x, axis)
        (self.values if t == "f32" else self.typed).extend([var, mean])
        return self.rng.choice([var, mean])

    def welford(self, x: Value, kind: str, axis: tuple[int, ...], n: int) -> Value:
        """avg, m2 (the sum of squared deviations, scaled by 1/n to stay in range) and the count
        (an i64 result the kernel still has to produce, which the typed part may read or return)."""
        avg, m2 = self._stat("avg", kind, x), self._stat("m2", kind, x)
        t = avg.dtype
        cnt = Value(self.fresh("n"), kind, "i64", exact=True, bound=float(n))
        self.lines.append(f"  %{avg.name}, %{m2.name}, %{cnt.name} = fusion.welford %{x.name} dims {list(axis)} : "
                          f"{self.ty('full', x.dtype)} to {self.ty(kind, t)}, {self.ty(kind, t)}, {self.ty(kind, 'i64')}")

        def moments(a):
            mu = np.mean(a, axis=axis, keepdims=True)
            return np.squeeze(mu, axis), np.sum((a - mu) ** 2, axis=axis), np.full(np.squeeze(mu, axis).shape, n)

        def magnitudes(vals, mags):
            mu = np.mean(mags[0], axis=axis, keepdims=True)
            return np.squeeze(mu, axis), np.sum((mags[0] + mu) ** 2, axis=axis), 0.0
        self._statistics_step([avg, m2, cnt], moments, magnitudes, x, axis)
        self.typed.append(cnt)
        scale = self.const(1.0 / n, kind, t)
        m = self.emit("m", kind, f"fusion.mul %{m2.name}, %{scale.name} : {self.ty(kind, t)}", [m2, scale], t,
                      listed=t == "f32")
        (self.values if t == "f32" else self.typed).append(avg)
        if t != "f32":
            self.typed.append(m)
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
        """A bf16 matmul (random layouts) or an FP8 one (K-major operands) as the fusion's first
        R x C value; the rest of the case is its epilogue and whatever else the generator draws.
        (`rng` is its own, so that the cases without a matmul are the ones the same seeds always
        gave.)"""
        self.rows, self.cols = rng.choice(MATMUL_SHAPES)
        self.k, self.ta, self.tb = rng.choice(MATMUL_K), rng.random() < 0.3, rng.random() < 0.3
        self.ta &= self.rows % 8 == 0  # a stored K x M needs rows of a multiple of 16 bytes (TMA): M % 8 == 0
        dt = "bf16"
        if rng.random() < 0.25:
            dt, self.k, self.ta, self.tb = rng.choice(FP8), rng.choice(MATMUL_K_FP8), False, True
        a, b = self.add_arg("ma", "mma", dt), self.add_arg("mb", "mmb", dt)
        flags = (" transpose_a" if self.ta else "") + (" transpose_b" if self.tb else "")
        self.emit("mm", "full", f"fusion.matmul %ma, %mb{flags} : {self.ty('mma', dt)}, {self.ty('mmb', dt)} "
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

    def draw_layouts(self, rng: random.Random) -> None:
        """Memory layouts at the boundary (issue 32), from their own stream after the rest of the
        case: about a third of the inputs of rank >= 1 are strided views (`random_layout`), and a
        quarter of the outputs of rank >= 2 ask for a random stride order."""
        for a in self.args:
            shape = self.shape(a.kind)
            if shape and rng.random() < 0.3:
                self.arg_layouts[a.name] = random_layout(rng, shape)
        self.out_orders = []
        for v in self.outputs:
            rank = len(self.shape(v.kind))
            order = tuple(rng.sample(range(rank), rank)) if rank >= 2 and rng.random() < 0.25 else None
            self.out_orders.append(order)
        self.draw_aliases(rng)

    def draw_aliases(self, rng: random.Random) -> None:
        """In-place outputs (issue 32), after the layouts from the same stream: in about 40% of the
        cases, up to two outputs without a stride order are written into a dense input of their
        shape and type (`fusion.alias`), each input taking one; every result must still read the
        inputs as passed (the compiler writes in place or stages)."""
        self.out_aliases = [None] * len(self.outputs)
        if rng.random() >= 0.4:
            return
        taken: set[int] = set()
        order = rng.sample(range(len(self.outputs)), len(self.outputs))
        # FP8 outputs first: their inputs are rare, and a KV cache in FP8 is a real in-place write
        for j in sorted(order, key=lambda j: self.outputs[j].dtype not in FP8)[:2]:
            v = self.outputs[j]
            if self.out_orders[j] is not None:
                continue
            fits = [i for i, a in enumerate(self.args) if i not in taken and a.name not in self.arg_layouts
                    and a.dtype == v.dtype and self.shape(a.kind) == self.shape(v.kind)]
            if fits:
                i = rng.choice(fits)
                taken.add(i)
                self.out_aliases[j] = i

    def assemble(self, final: list[Value]) -> str:
        def param(a: Value) -> str:
            lay = self.arg_layouts.get(a.name)
            attrs = "" if lay is None else (f" {{fusion.strides = array<i64: {', '.join(map(str, lay[0]))}>"
                                            f"{f', fusion.offset = {lay[1]} : i64' if lay[1] else ''}}}")
            return f"%{a.name}: {self.ty(a.kind, a.dtype)}{attrs}"

        orders = self.out_orders if len(self.out_orders) == len(final) else [None] * len(final)
        aliases = self.out_aliases if len(self.out_aliases) == len(final) else [None] * len(final)
        params = ", ".join(param(a) for a in self.args)
        results = ", ".join(self.ty(v.kind, v.dtype) for v in final)

        def attrs(o, i) -> str:
            entries = ([] if o is None else [f"fusion.stride_order = array<i64: {', '.join(map(str, o))}>"]) + \
                ([] if i is None else [f"fusion.alias = {i} : i64"])
            return f" {{{', '.join(entries)}}}" if entries else ""
        declared = ", ".join(self.ty(v.kind, v.dtype) + attrs(o, i) for v, o, i in zip(final, orders, aliases))
        body = "\n".join(self.lines)
        names = ", ".join(f"%{v.name}" for v in final)
        self.outputs = final
        return (f"func.func @{self.name}({params}) -> ({declared}) {{\n{body}\n"
                f"  func.return {names} : {results}\n}}\n")


def random_layout(rng: random.Random, shape: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """Element strides and an offset of a strided view of `shape`, as numpy and torch make them:
    the dims stored in a random order (half the time row-major), the innermost stored dim every
    second or third element a quarter of the time (a slice with a step), rows padded by a few
    elements a half of the time (a slice of a wider array), one dim of extent > 1 expanded
    (stride 0) a quarter of the time, and an offset of 0 to 7 elements (a view's storage offset)."""
    rank = len(shape)
    order = list(range(rank))
    if rank >= 2 and rng.random() < 0.5:
        rng.shuffle(order)
    step = rng.choice([1, 1, 1, 2, 3])
    strides = [0] * rank
    acc = 1
    for i, d in enumerate(reversed(order)):
        k = step if i == 0 else 1
        strides[d] = acc * k
        acc *= shape[d] * k + (rng.choice([0, 1, 3, 8]) if rng.random() < 0.5 else 0)
    wide = [d for d in range(rank) if shape[d] > 1]
    if wide and rng.random() < 0.25:
        strides[rng.choice(wide)] = 0
    return tuple(strides), rng.randint(0, 7)
