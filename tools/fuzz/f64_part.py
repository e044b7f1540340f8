"""The f64 math of a case: `_F64Part`, a mixin of the generator's `_Gen` (issue 31: f64 computed
in f64).

Three typed parts in five end with one or two f64 chains, drawn from a stream of their own
(`f64s`) after the rest, so a seed's other ops are what they were: an f64 input ([-4, 4] in full
float64 precision) or an f64 value made before, through two to four steps of f64 math in the
ranges the float part keeps (exp-like functions of a tanh, log-like ones of 1 + |x|, the others
of any value, lgamma included; where of a cmp against a constant; add, sub, mul, max, min, atan2, fmod and remainder by 1 + |y|, division by 1 + |y|,
pow of 1 + |x| to a tanh), then half the time a reduction of it (sum scaled by 1/n, prod of
factors 1 + x / n, max, min; argmax, argmin of an exact value), a var_mean or welford in f64, or a scan (sum scaled
by 1/n, max, min) along the last dim. An f64 result computed from f64 operands is checked at f64's
tolerance (semantics.TOLERANCE["f64"]), not f32's.
"""

from __future__ import annotations

from .semantics import Value

F64_ANY = ("neg", "abs", "relu", "tanh", "sigmoid", "silu", "sin", "cos", "atan", "asinh", "floor", "ceil", "trunc",
           "round", "sign", "gelu", "erf", "erfc", "lgamma")  # (gelu: either form; lgamma: its poles at
# the integers <= 0 that the step functions make give +inf, as the reference's)
# of tanh(x) (atanh and erfinv: of tanh(x) / 2; erfcinv: of 1 + tanh(x) / 2)
F64_OF_TANH = ("exp", "exp2", "expm1", "sinh", "cosh", "asin", "acos", "atanh", "erfinv", "erfcinv")
F64_OF_ONE_PLUS = ("log", "log2", "log10", "log1p", "reciprocal", "acosh", "sqrt", "rsqrt", "tan")  # of 1 + |x| (log1p: |x|)
F64_BINARY = ("add", "sub", "mul", "max", "min", "atan2", "div", "fmod", "remainder", "pow")


class _F64Part:
    """f64 chains, reductions, statistics and scans (see the module docstring); `_Gen` supplies
    `emit`, `const`, `ty`, `dims`, `reduced_kinds`, `new_input`, `pick_typed`, `var_mean`,
    `welford` and `keep`."""

    def f64_math(self) -> Value:
        rng = self.f64s
        x = self.pick_typed("f64", "full") if rng.random() < 0.3 else None
        x = x if x is not None and not x.dc else self.new_input("full", "f64")
        for _ in range(rng.randint(2, 4)):
            x = self._f64_step(x)
        r = rng.random()
        if x.dc:  # (reductions never read a value that may hold don't-care elements)
            return self.keep(x)
        if r < 0.3:
            return self._f64_reduce(x)
        if r < 0.45:
            axis, n = self.dims(kind := rng.choice(self.reduced_kinds()))
            return self.var_mean(x, kind, tuple(axis)) if rng.random() < 0.5 else self.welford(x, kind, tuple(axis), n)
        if r < 0.6:
            return self._f64_scan(x)
        return self.keep(x)

    def _f64(self, stem: str, rhs: str, operands: list[Value], kind: str = "full", dtype: str = "f64") -> Value:
        return self.emit(stem, kind, rhs, operands, dtype, listed=False)

    def _one_plus_abs(self, x: Value) -> tuple[Value, Value]:
        ty = self.ty("full", "f64")
        a = self._f64("a", f"fusion.abs %{x.name} : {ty}", [x])
        one = self.const(1.0, "full", "f64")
        return a, self._f64("s", f"fusion.add %{a.name}, %{one.name} : {ty}", [a, one])

    def _f64_step(self, x: Value) -> Value:
        rng, ty = self.f64s, self.ty("full", "f64")
        r = rng.random()
        if r < 0.25:
            op = rng.choice(F64_ANY)
            attrs = ' {approximate = "tanh"}' if op == "gelu" and rng.random() < 0.5 else ""
            return self._f64(op[:2], f"fusion.{op} %{x.name}{attrs} : {ty}", [x])
        if r < 0.4:
            op = rng.choice(F64_OF_TANH)
            t = self._f64("t", f"fusion.tanh %{x.name} : {ty}", [x])
            if op in ("atanh", "erfinv", "erfcinv"):
                half = self.const(0.5, "full", "f64")
                t = self._f64("h", f"fusion.mul %{t.name}, %{half.name} : {ty}", [t, half])
            if op == "erfcinv":
                one = self.const(1.0, "full", "f64")
                t = self._f64("u", f"fusion.add %{t.name}, %{one.name} : {ty}", [t, one])
            return self._f64(op[:2], f"fusion.{op} %{t.name} : {ty}", [t])
        if r < 0.55:
            op = rng.choice(F64_OF_ONE_PLUS)
            a, s = self._one_plus_abs(x)
            if op == "tan":  # of 1 / (1 + |x|), in (0, 1]: away from its poles
                s = self._f64("q", f"fusion.reciprocal %{s.name} : {ty}", [s])
            return self._f64(op[:2], f"fusion.{op} %{(a if op == 'log1p' else s).name} : {ty}", [a if op == "log1p" else s])
        if r < 0.65:  # where(x cmp c, x, y): cmp and where of f64
            pred = rng.choice(("eq", "ne", "lt", "le", "gt", "ge"))
            c = self.const(round(rng.uniform(-1, 1), 3), "full", "f64")
            m = self._f64("cm", f"fusion.cmp {pred}, %{x.name}, %{c.name} : {ty}", [x, c], dtype="i1")
            y = self.new_input("full", "f64")
            return self._f64("wh", f"fusion.where %{m.name}, %{x.name}, %{y.name} : {ty}", [m, x, y])
        op = rng.choice(F64_BINARY)
        y = self.new_input("full", "f64")
        if rng.random() < 0.5:
            x, y = y, x
        if op in ("div", "fmod", "remainder"):
            _, d = self._one_plus_abs(y)
            return self._f64(op[:2], f"fusion.{op} %{x.name}, %{d.name} : {ty}", [x, d])
        if op == "pow":
            _, u = self._one_plus_abs(x)
            t = self._f64("t", f"fusion.tanh %{y.name} : {ty}", [y])
            return self._f64("pw", f"fusion.pow %{u.name}, %{t.name} : {ty}", [u, t])
        return self._f64(op[:2], f"fusion.{op} %{x.name}, %{y.name} : {ty}", [x, y])

    def _f64_reduce(self, x: Value) -> Value:
        rng, ty = self.f64s, self.ty("full", "f64")
        op = rng.choice(["sum", "prod", "max", "min"] + (["argmax", "argmin"] if x.exact else []))
        rank = len(self.shape("full"))
        kind = rng.choice([k for k in self.reduced_kinds() if not op.startswith("arg") or len(self.dims(k)[0]) in (1, rank)])
        dims, n = self.dims(kind)
        if op in ("sum", "prod"):
            c = self.const(1.0 / n, "full", "f64")
            x = self._f64("sf", f"fusion.mul %{x.name}, %{c.name} : {ty}", [x, c])
        if op == "prod":
            c = self.const(1.0, "full", "f64")
            x = self._f64("sf", f"fusion.add %{x.name}, %{c.name} : {ty}", [x, c])
        out = "i64" if op.startswith("arg") else "f64"
        v = self._f64("rd", f"fusion.reduce {op} %{x.name} dims {dims} : {ty} to {self.ty(kind, out)}", [x], kind, out)
        if out == "i64":
            v.bound = float(n)
        return self.keep(v)

    def _f64_scan(self, x: Value) -> Value:
        rng, ty = self.f64s, self.ty("full", "f64")
        op = rng.choice(["sum", "max", "min"])
        if op == "sum":
            c = self.const(1.0 / self.cols, "full", "f64")
            x = self._f64("sf", f"fusion.mul %{x.name}, %{c.name} : {ty}", [x, c])
        rank = len(self.shape("full"))
        return self.keep(self._f64("cs", f"fusion.scan {op} %{x.name} dim {rank - 1} : {ty} to {ty}", [x]))
