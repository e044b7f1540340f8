"""Random multi-output fusions, as MLIR text, for differential tests against float64.

Every fusion works on one 2-D shape R x C (odd extents included) and its row (R) and column (C)
vectors. It draws pointwise chains, broadcasts, row and column reductions, var_mean and
segment_sets, then returns two to four values, preferring the shapes that broke the planner:
an output that another output reads, a value returned twice, an input returned as is, an
output that also feeds a reduction, outputs of different shapes fed by one value.

Values stay in a modest range (inputs in [-2, 2], exp only of tanh, log only of 1 + |v|,
reduction sums scaled by 1/extent), so a float32 kernel and the float64 reference agree to a
tolerance that fits the output dtype, and any real mismatch is a bug.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SHAPES = [(31, 33), (64, 96), (7, 128), (129, 257), (2, 1024), (256, 64), (5, 3000), (1000, 24), (33, 512)]
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
        self.lines: list[str] = []
        self.values: list[Value] = []
        self.args: list[Value] = []
        self.uses: dict[str, set[str]] = {}  # value -> values computed from it (directly)
        self.count = 0

    def ty(self, kind: str, dtype: str = "f32") -> str:
        shape = {"full": f"{self.rows}x{self.cols}", "row": f"{self.rows}", "col": f"{self.cols}"}[kind]
        return f"tensor<{shape}x{dtype}>"

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def emit(self, stem: str, kind: str, rhs: str, operands: list[Value], dtype: str = "f32",
             listed: bool = True) -> Value:
        v = Value(self.fresh(stem), kind, dtype)
        self.lines.append(f"  %{v.name} = {rhs}")
        for o in operands:
            self.uses.setdefault(o.name, set()).add(v.name)
        if listed:
            self.values.append(v)
        return v

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
            b = self.broadcast(self.rng.choice(["row", "col"]))
        else:
            b = self.pick(kind)
        if self.rng.random() < 0.5:
            a, b = b, a
        op = self.rng.choice(BINARY)
        return self.emit(op[:2], kind, f"fusion.{op} %{a.name}, %{b.name} : {self.ty(kind)}", [a, b])

    def broadcast(self, src_kind: str) -> Value:
        x = self.pick(src_kind) if any(v.kind == src_kind for v in self.values) else self.reduce(src_kind)
        dims = "[1]" if src_kind == "row" else "[0]"
        return self.emit("b", "full", f"fusion.broadcast %{x.name} dims {dims} : {self.ty(src_kind)} to "
                                      f"{self.ty('full')}", [x])

    def reduce(self, kind: str) -> Value:
        x = self.pick("full")
        dims, n = ("[1]", self.cols) if kind == "row" else ("[0]", self.rows)
        op = self.rng.choice(["sum", "sum", "max", "min"])
        r = self.emit("r", kind, f"fusion.reduce {op} %{x.name} dims {dims} : {self.ty('full')} to {self.ty(kind)}", [x])
        if op != "sum":
            return r
        scale = self.const(1.0 / n, kind)
        return self.emit("m", kind, f"fusion.mul %{r.name}, %{scale.name} : {self.ty(kind)}", [r, scale])

    def var_mean(self) -> Value:
        x = self.pick("full")
        var, mean = Value(self.fresh("var"), "row"), Value(self.fresh("mean"), "row")
        self.lines.append(f"  %{var.name}, %{mean.name} = fusion.var_mean %{x.name} dims [1] correction 0 : "
                          f"{self.ty('full')} to {self.ty('row')}, {self.ty('row')}")
        self.uses.setdefault(x.name, set()).update({var.name, mean.name})
        self.values += [var, mean]
        return self.rng.choice([var, mean])

    def segment(self) -> Value:
        x = self.pick()
        return self.emit("g", x.kind, f"fusion.segment_set %{x.name} : {self.ty(x.kind)} to {self.ty(x.kind)}", [x])

    # -------------------------------------------------------------- the fusion
    def build(self) -> str:
        rng = self.rng
        n_in = rng.randint(1, 3)
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
                self.reduce(rng.choice(["row", "col"]))
            elif r < 0.93:
                self.var_mean()
            else:
                self.segment()
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
        return (f"func.func @{self.name}({params}) -> ({results}) {{\n{body}\n"
                f"  func.return {names} : {results}\n}}\n")


def random_fusion(seed: int, name: str = "fuzz") -> str:
    """The MLIR text of one random multi-output fusion (the same text for the same seed)."""
    return _Gen(random.Random(seed), name).build()


TOLERANCE = {"f32": 2e-4, "bf16": 2e-2, "f16": 4e-3}


def mismatch(got, want, dtype: str) -> str | None:
    """None if `got` matches the float64 `want` for an output of `dtype`, else a short reason.

    Elementwise |got - want| <= tol * (|want| + max(max|want|, 1e-3)): relative to the element,
    with an absolute floor scaled by the output's magnitude (sums of many terms cancel), and
    never below 1e-3 * tol: a value that cancels to 0 in float32 and to 1e-32 in float64 (the
    variance of a constant row) is rounding, not a wrong answer, since inputs are of order 1."""
    import numpy as np

    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    if g.shape != w.shape:
        return f"shape {g.shape} != {w.shape}"
    tol = TOLERANCE[dtype]
    scale = float(np.max(np.abs(w))) if w.size else 0.0
    bad = ~(np.abs(g - w) <= tol * (np.abs(w) + max(scale, 1e-3))) & ~(np.isnan(g) & np.isnan(w))
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), w.shape)
        return f"{int(bad.sum())} of {w.size} elements differ; first at {tuple(int(x) for x in i)}: {g[i]} vs {w[i]}"
    return None
