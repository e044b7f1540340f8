"""The typed part of a case: `_TypedPart`, a mixin of the generator's `_Gen`.

Four cases in five then add a typed part, drawn from a random stream of its own after the float
part (which it reads but leaves as it was: a seed's float part and its inputs are what they
always were), that returns three to six more values:
`fusion.cmp` with every predicate (against a constant, another value, a value's own row or
column max or min, another reduction's result; in f32, f16 or bf16), `fusion.where` on a cmp, an
i1 input or a broadcast or transposed mask (in f32, f16 or bf16); i1 inputs (random 0/1 bytes),
i64 inputs (small: [-9, 9]; large: up to 2^40, a third of them halfway between two float32s, a
tenth 0), i8, i16, i32 and u8 inputs (small, or the type's whole range), f64 inputs ([-4, 4] in
full float64 precision, a tenth 0, some halfway between two float32, f16 or bf16 values) and f16
inputs; casts between every pair of f32, f16, bf16, f64, i1, i8, i16, i32, i64 and u8 (chains of
casts from integers and masks; an integer cast to a float is scaled back into range by a power
of two before any arithmetic, and is cast to f16 only when small; a float is scaled by 4 before
it is truncated to an integer, and goes through relu before `!= 0`, so both give more than one
answer); chains of integer math (`int_math`: wrapping arithmetic, divisions by 0 and -1 now and
then, bitwise ops, shifts past the width, gcd, cmp and where of integers and masks); the
dropout-backward pattern grad * cast(keep) * 1.25, sometimes summed; broadcast, permute,
reshape and segment_set of i1, integer, f64, f16 and bf16 values (so masks and integers cross
kernel boundaries); div, pow, sqrt, rsqrt and tanh-form gelu; rarely a float far outside i64
(saturating) or a NaN cast to i1 or an integer. The values it returns are masks, integers, f64,
f16 and bf16 values and f32 ones. Reductions of issue 31 (`typed_reduce`): sum, prod, max and
min of integer and mask values (in i64 or their type), any and all of every type, argmax and
argmin of exact integers, masks and f32 / bf16 inputs (ties and, in floats, NaN), and f32
products of factors near 1, over rows or columns. Scans (`typed_scan`): cumsum, cumprod, cummax
and cummin along the last dim of integer and mask values (in i64 or their type), of f32 values
(sums of values scaled by 1/n, products of factors 1 + x / n; max and min of exact values, NaN
where one passes 1.9 now and then) and of bf16 inputs (max and min): one or two outputs more in
three typed parts in five, drawn from a stream of their own (`scans`) after the rest. f64 math,
reductions, statistics and scans (`f64_math`, f64_part.py): one or two outputs more in three
typed parts in five, from a stream of their own (`f64s`) after the scans. Sorts (`typed_sort`,
issue 32): fusion.sort along the last dim, ascending or descending, whole or
topk's first k, of exact integer and mask values and of f32 (ties: small integers cast; NaN
where one passes 1.9 now and then), bf16, f16 and f64 inputs, returning its values or its
indices: one output more in half the typed parts, from a stream of its own (`sorts`) after the
f64 math.
"""

from __future__ import annotations

import math
import random

from .semantics import _FP8_FORMAT, DISCRETE, FP8, INT_LIMIT, INTS, LOWP, Step, Value, _sort

CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")  # the dialect's; test_fuzz checks they match
CAST_TYPES = ("f32", "f16", "bf16", "f64", "i1", "i8", "i16", "i32", "i64", "u8")
# The integer ops `int_math` chains (cmp and where: of the integers, and of masks)
INT_OPS = ("add", "sub", "mul", "max", "min", "neg", "abs", "pow", "trunc_div", "floor_div", "fmod", "remainder",
           "cmp", "where", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
           "bitwise_right_shift", "logical_right_shift", "gcd")
SHIFTS = ("bitwise_left_shift", "bitwise_right_shift", "logical_right_shift")
WIDTH = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8}


def int_bound(src: str, bound: float, dst: str) -> float:
    """The largest magnitude of an integer of type `dst` cast from a value of type `src` at most
    `bound` in magnitude: 1 from i1; a signed source wraps into u8 anywhere in [0, 255]; else
    the bound, cut at what `dst` holds (wrapping or saturating stays inside it)."""
    if src == "i1":
        return 1.0
    if dst == "u8" and src != "u8":
        return INT_LIMIT["u8"]
    return min(bound, INT_LIMIT[dst])


class _TypedPart:
    """The typed part's ops, as a mixin of `_Gen`: they draw from `self.rng` (the typed part's own
    stream, which `typed_part` installs) and emit through `_Gen`'s `emit`, `const`, `reduce`,
    `broadcast` and `transpose`."""

    def typed_part(self, rng: random.Random) -> list[Value]:
        """Three to eight features of the other types (and the float ops the float part never
        draws), reading the float part's values; returns three to six (where there are as many)
        of the values they made that nothing reads, those of other types than f32 first; three
        times in ten one more, a nextafter (`next_float`, drawn after the rest)."""
        self.rng = rng
        start = len(self.made)
        features = [(self.cmp_alone, 2), (self.where, 3), (self.dropout, 2), (self.use_int, 3), (self.f64, 3),
                    (self.lowp, 3), (self.shape_op, 7), (self.index_maps, 5), (self.float_op, 3), (self.special, 0.4), (self.int_casts, 6),
                    (self.int_math, 6), (self.typed_reduce, 10)]
        for _ in range(rng.randint(3, 8)):
            rng.choices([f for f, _ in features], [w for _, w in features])[0]()
        leaves = [v for v in self.made[start:] if not self.uses.get(v.name)]
        typed = [v for v in leaves if v.dtype != "f32"]
        floats = [v for v in leaves if v.dtype == "f32"]
        n = rng.randint(3, 6)
        outs = rng.sample(typed, min(n, len(typed)))
        outs += rng.sample(floats, min(n - len(outs), len(floats)))
        if self.scans is not None and self.scans.random() < 0.6:  # from their own stream: the rest stays
            self.rng = self.scans
            outs += [self.typed_scan() for _ in range(self.scans.randint(1, 2))]
            self.rng = rng
        if self.f64s is not None and self.f64s.random() < 0.6:  # f64 math (issue 31), from its own stream
            outs += [self.f64_math() for _ in range(self.f64s.randint(1, 2))]
        if self.sorts is not None and self.sorts.random() < 0.5:  # (after the scans: they stay as they were)
            self.rng = self.sorts
            outs.append(self.typed_sort())
            self.rng = rng
        if self.fp8s is not None and self.fp8s.random() < 0.5:  # FP8 (issue 34), after the sorts
            self.rng = self.fp8s
            outs += [self.typed_fp8() for _ in range(self.fp8s.randint(1, 2))]
            self.rng = rng
        outs = [self.out_cast(v) for v in outs]
        if rng.random() < 0.3:  # (drawn last, so that what came before is what each seed always gave)
            outs.append(self.out_cast(self.next_float()))
        return outs

    def typed_reduce(self) -> Value:
        """A reduction of issue 31 over the rows or columns of an exact value: sum, prod, max or
        min of an integer or a mask; any, all, argmax or argmin of those or of an f32 or bf16
        input (ties: bf16 values, or small integers cast to f32; NaN where the input is past
        1.9 now and then); an f32 product of factors 1 + x / n, which stays in range."""
        rng = self.rng
        op = rng.choice(["sum", "prod", "max", "min", "any", "all", "argmax", "argmin"])
        floats = ("f32", "bf16") if op in ("any", "all", "argmax", "argmin") else ("f32",) if op == "prod" else ()
        dtype = rng.choice(DISCRETE + floats)
        rank = len(self.shape("full"))
        kind = rng.choice([k for k in self.reduced_kinds() if not op.startswith("arg") or len(self.dims(k)[0]) in (1, rank)])
        dims, n = self.dims(kind)
        ty = self.ty("full")
        if dtype in DISCRETE:
            x = self.make(dtype, "full")
            if x.dc or not x.exact:
                x = self.new_input("full", dtype)
        elif op == "prod":
            x = self.new_input("full", dtype)
            y = self.emit("pf", "full", f"fusion.mul %{x.name}, %{(c := self.const(1.0 / n, 'full')).name} : {ty}",
                          [x, c], listed=False)
            x = self.emit("pf", "full", f"fusion.add %{y.name}, %{(c := self.const(1.0, 'full')).name} : {ty}",
                          [y, c], listed=False)
        else:
            x = self.new_input("full", dtype) if dtype == "bf16" or rng.random() < 0.5 else \
                self.cast(self.new_input("full", "i8"), "f32")
            if rng.random() < 0.4:  # NaN is nonzero, and the max and the min
                t = self.ty("full", dtype)
                m = self.emit("nm", "full", f"fusion.cmp gt, %{x.name}, %{(c := self.const(1.9, 'full', dtype)).name}"
                                            f" : {t}", [x, c], "i1", listed=False)
                x = self.emit("nw", "full", f"fusion.where %{m.name}, %{(c := self.const(math.nan, 'full', dtype)).name}"
                                            f", %{x.name} : {t}", [m, c, x], dtype, listed=False)
        out = {"sum": "i64", "prod": "i64", "any": "i1", "all": "i1", "argmax": "i64", "argmin": "i64"}.get(op, dtype)
        if op == "prod" and dtype not in DISCRETE:
            out = dtype
        v = self.emit("rd", kind, f"fusion.reduce {op} %{x.name} dims {dims} : {self.ty('full', x.dtype)} to "
                                  f"{self.ty(kind, out)}", [x], out, listed=False)
        if out in INTS:
            v.bound = {"sum": min(n * max(x.bound, 1.0), INT_LIMIT["i64"]), "prod": INT_LIMIT["i64"], "argmax": float(n),
                       "argmin": float(n)}.get(op, x.bound)
        return self.keep(v)

    def typed_scan(self) -> Value:
        """A scan along the last dim of a full value: cumsum, cumprod, cummax or cummin of an
        exact integer or mask (sums and products in i64, or in the input's type, wrapped); of an
        f32 value (a sum of values scaled by 1/n, a product of factors 1 + x / n, which stay in
        range; max and min of an exact value, with NaN where it passes 1.9 now and then); max and
        min of a bf16 input."""
        rng = self.rng
        op = rng.choice(["sum", "prod", "max", "min"])
        dtype = rng.choice(DISCRETE + ("f32", "f32") + (("bf16",) if op in ("max", "min") else ()))
        n = self.cols
        ty = self.ty("full")
        if dtype in DISCRETE:
            x = self.make(dtype, "full")
            if x.dc or not x.exact:
                x = self.new_input("full", dtype)
        elif op in ("sum", "prod"):
            x = self.pick_kind("full")
            if x.dc:
                x = self.new_input("full", "f32")
            x = self.emit("sf", "full", f"fusion.mul %{x.name}, %{(c := self.const(1.0 / n, 'full')).name} : {ty}",
                          [x, c], listed=False)
            if op == "prod":
                x = self.emit("sf", "full", f"fusion.add %{x.name}, %{(c := self.const(1.0, 'full')).name} : {ty}",
                              [x, c], listed=False)
        else:
            x = self.new_input("full", dtype) if dtype == "bf16" or rng.random() < 0.5 else \
                self.cast(self.new_input("full", "i8"), "f32")
            if rng.random() < 0.4:  # NaN sticks
                t = self.ty("full", dtype)
                m = self.emit("nm", "full", f"fusion.cmp gt, %{x.name}, %{(c := self.const(1.9, 'full', dtype)).name}"
                                            f" : {t}", [x, c], "i1", listed=False)
                x = self.emit("nw", "full", f"fusion.where %{m.name}, %{(c := self.const(math.nan, 'full', dtype)).name}"
                                            f", %{x.name} : {t}", [m, c, x], dtype, listed=False)
        out = dtype
        if op in ("sum", "prod") and dtype in DISCRETE:
            out = "i64" if dtype in ("i1", "i64") or rng.random() < 0.7 else dtype
        rank = len(self.shape("full"))
        v = self.emit("cs", "full", f"fusion.scan {op} %{x.name} dim {rank - 1} : {self.ty('full', x.dtype)} to "
                                    f"{self.ty('full', out)}", [x], out, listed=False)
        if out in INTS:
            v.bound = {"sum": min(n * max(x.bound, 1.0), INT_LIMIT["i64"]), "prod": INT_LIMIT["i64"]}.get(op, x.bound)
            if out != "i64" and op in ("sum", "prod"):
                v.bound = INT_LIMIT[out]  # (wrapped into its type)
        return self.keep(v)

    def typed_sort(self) -> Value:
        """A sort along the last dim of an exact full value (no don't-cares: every element of a
        row moves every other one): ascending or descending, the whole row or topk's first k
        (1, 2, 3, 8, 16, 17 or the row), of an integer or mask, or of an f32 (half of them small
        integers cast: ties; NaN where one passes 1.9 now and then), bf16, f16 or f64 input. Both
        results are written; the values or the indices are returned."""
        rng = self.rng
        dtype = rng.choice(DISCRETE + ("f32", "f32", "bf16", "f16", "f64"))
        if dtype in DISCRETE:
            x = self.make(dtype, "full")
            if x.dc or not x.exact:
                x = self.new_input("full", dtype)
        else:
            x = self.new_input("full", dtype) if dtype != "f32" or rng.random() < 0.5 else \
                self.cast(self.new_input("full", "i8"), "f32")
            if dtype != "f64" and rng.random() < 0.4:  # NaN: the greatest
                t = self.ty("full", dtype)
                m = self.emit("nm", "full", f"fusion.cmp gt, %{x.name}, %{(c := self.const(1.9, 'full', dtype)).name}"
                                            f" : {t}", [x, c], "i1", listed=False)
                x = self.emit("nw", "full", f"fusion.where %{m.name}, %{(c := self.const(math.nan, 'full', dtype)).name}"
                                            f", %{x.name} : {t}", [m, c, x], dtype, listed=False)
        shape = self.shape("full")
        n = shape[-1]
        k = None if rng.random() < 0.5 else min(n, rng.choice([1, 2, 3, 8, 16, 17, n]))
        descending = rng.random() < 0.5
        kind = "full" if k is None else "=" + "x".join(str(d) for d in shape[:-1] + (k,))
        values = Value(self.fresh("sv"), kind, x.dtype, exact=True, bound=x.bound)
        indices = Value(self.fresh("si"), kind, "i64", exact=True, bound=float(n))
        self.lines.append(f"  %{values.name}, %{indices.name} = fusion.sort %{x.name} dim {len(shape) - 1}"
                          f"{' descending' if descending else ''}{'' if k is None else f' k {k}'} : "
                          f"{self.ty('full', x.dtype)} to {self.ty(kind, x.dtype)}, {self.ty(kind, 'i64')}")
        self.steps.append(Step([values.name, indices.name], _sort(descending, k or n), [x.name],
                               lambda vals, mags: (0.0, 0.0), lambda vals, dcs, margins: None))
        for v in (values, indices):
            self.info[v.name] = v
            self.made.append(v)
        self.uses.setdefault(x.name, set()).update((values.name, indices.name))
        return self.keep(rng.choice([values, indices]))

    def typed_fp8(self) -> Value:
        """An FP8 value (issue 34): a new FP8 input, a cast to FP8 of an f32 input of [-600, 600]
        (f8e4m3fn saturates past 448; subnormals), of a value of any cast type, or of the other
        FP8 type; half the time moved through a shape op (every one, segment_set too) or
        selected by `where` against an FP8 constant; returned as it is or cast to another type."""
        rng = self.rng
        t = rng.choice(FP8)
        top = _FP8_FORMAT[t][2]
        kind = rng.choice(["full", "full", "row", "col"])
        r = rng.random()
        if r < 0.2:
            v = self.new_input(kind, t)
        elif r < 0.45:
            x = self.add_arg(f"in{self.n_in}", kind, "f32", "wide")
            self.n_in += 1
            v = self.cast(x, t)
        elif r < 0.55:
            v = self.cast(self.typed_fp8_source(kind, [d for d in FP8 if d != t][0]), t)
        else:
            v = self.cast(self.source(rng.choice(CAST_TYPES)), t)
        # (f8e5m2 of an integer past its range is inf: no bound then, so nothing scales it back)
        bound = top if t == "f8e4m3fn" or v.bound <= top else math.inf
        v.bound = bound
        r = rng.random()
        if r < 0.4 and v.kind != "tr":
            v = self.moved(v)
        elif r < 0.55 and v.kind in ("full", "row", "col"):
            m = self.make("i1", v.kind)
            c = self.const(rng.choice([0.0, 1.5, -448.0, 0.0625]), v.kind, t)
            a, b = (v, c) if rng.random() < 0.5 else (c, v)
            v = self.keep(self.emit("w", v.kind, f"fusion.where %{m.name}, %{a.name}, %{b.name} : {self.ty(v.kind, t)}",
                                    [m, a, b], t, listed=False))
        v.bound = bound
        if rng.random() < 0.35:
            return v
        return self.cast(v, rng.choice([d for d in CAST_TYPES + FP8 if d != t]), bound=bound)

    def typed_fp8_source(self, kind: str, t: str) -> Value:
        """A value of FP8 type `t`: one made before, or a new input."""
        old = self.pick_typed(t, kind)
        return old if old is not None and self.rng.random() < 0.5 else self.new_input(kind, t)

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
        elif dtype in INTS:  # small ones (as u8: near 0 and 255), or the type's whole range
            how = self.rng.choice(["small", "range"])
            bound = 9.0 if how == "small" and dtype != "u8" else INT_LIMIT[dtype]
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
        if dtype in INTS and rng.random() < 0.25:  # a mask's 0 and 1
            return self.cast(self.make("i1", kind), dtype)
        if dtype in INTS and rng.random() < 0.3:  # another integer, wrapped or extended
            other = self.pick_typed(rng.choice([t for t in INTS if t != dtype]), kind)
            if other is not None:
                return self.cast(other, dtype)
        x = self.pick_kind(kind)
        if dtype in INTS:  # small integers, 4x truncated (as u8, the negative ones wrap)
            return self.cast(self.scaled(x, 4.0), dtype, bound=16.0)
        return self.cast(x, dtype)

    def cast(self, x: Value, dst: str, bound: float = 16.0) -> Value:
        """`x` cast to `dst`; an integer cast from a float is at most `bound` in magnitude (or,
        from a float holding an integer, that integer's bound); a float cast from an integer
        keeps the integer's bound."""
        v = self.emit("cv", x.kind, f"fusion.cast %{x.name} : {self.ty(x.kind, x.dtype)} to {self.ty(x.kind, dst)}",
                      [x], dst, listed=False)
        if dst in INTS:
            v.bound = int_bound(x.dtype, x.bound if x.dtype in DISCRETE else x.bound or bound, dst)
        elif x.dtype in INTS:
            v.bound = x.bound
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
        test = self.variant("cmp")  # now and then a test of `a` alone, from the variants' own stream
        if test != "cmp":
            q = self.emit("q", kind, f"fusion.{test} %{a.name} : {self.ty(kind, dtype)}", [a], "i1", listed=False)
        else:
            q = self.emit("q", kind, f"fusion.cmp {pred}, %{a.name}, %{b.name} : {self.ty(kind, dtype)}", [a, b],
                          "i1", listed=False)
        return self.keep(self.combined(q))

    def combined(self, q: Value) -> Value:
        """Mask `q`, or (from the variants' stream) its logical_not, or its and / or / xor with an
        earlier mask of its shape."""
        op = self.variant("mask")
        others = [v for v in self.typed if v.dtype == "i1" and v.kind == q.kind]
        ty = self.ty(q.kind, "i1")
        if op == "logical_not":
            return self.emit("n", q.kind, f"fusion.logical_not %{q.name} : {ty}", [q], "i1", listed=False)
        if op != "mask" and others:
            o = self.variants.choice(others)
            return self.emit("lg", q.kind, f"fusion.{op} %{q.name}, %{o.name} : {ty}", [q, o], "i1", listed=False)
        return q

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
        dst = rng.choice(["f32", "f32", "f16", "bf16", "f64", "i64", rng.choice(INTS)])
        k = self.cast(keep, dst)
        if dst != "f32":
            k = self.cast(k, "f32")
        g = self.pick_kind("full")
        y = self.emit("dm", "full", f"fusion.mul %{g.name}, %{k.name} : {self.ty('full')}", [g, k])
        y = self.scaled(y, 1.25, listed=True)
        self.maybe_sum(y, 0.5)
        return y

    def use_int(self) -> Value:
        """An integer (i64 half the time) as a mask, or as a float scaled back into range by a
        power of two."""
        rng = self.rng
        v = self.source("i64" if rng.random() < 0.5 else rng.choice(INTS))
        dst = rng.choice(["f32", "bf16", "f64", "i1"] + (["f16"] if v.bound <= 2048 else []))
        c = self.cast(v, dst)
        if dst == "i1":
            return c
        if dst != "f32":
            c = self.cast(c, "f32")
        return self.scaled(c, 2.0 ** -math.ceil(math.log2(v.bound + 1)), listed=True)

    def int_casts(self) -> Value:
        """A chain of two to four casts from an integer or a mask, each to another type (floats
        too: an integer through f16 or bf16 rounds, and an inf from f16 saturates back), the last
        one returned as it is, or, a float, scaled back into range."""
        rng = self.rng
        v = self.source(rng.choice(INTS + ("i1",)))
        for _ in range(rng.randint(2, 4)):
            v = self.cast(v, rng.choice([d for d in CAST_TYPES if d != v.dtype]), bound=v.bound)
        if v.dtype in DISCRETE or v.dtype == "f64":
            return v
        if v.dtype != "f32":
            v = self.cast(v, "f32")
        return self.scaled(v, 2.0 ** -math.ceil(math.log2(min(v.bound, 2.0 ** 64) + 1)), listed=True)

    def int_math(self) -> Value:
        """A chain of four to eight integer ops on one integer type (wrapping, as torch's): + - *
        max min & | ^ gcd of another value of the type or a constant, neg, abs, ~, ** of a small
        exponent (negative ones too), shifts (by amounts past the width and negative ones too),
        trunc_div, floor_div, fmod and remainder (divisors that are 0 or -1 now and then: fuser's
        definitions), a cmp (or a test of two masks, and their bitwise ops) and a where that
        brings the chain back to the integer type; returns the chain's last value."""
        rng = self.rng
        dtype, kind = rng.choice(INTS), rng.choice(["full", "full", "row", "col"])
        ty = self.ty(kind, dtype)
        v = self.make(dtype, kind)
        for _ in range(rng.randint(4, 8)):
            op = rng.choice(INT_OPS)
            if op in ("neg", "abs", "bitwise_not"):
                v = self.emit(op[:2], kind, f"fusion.{op} %{v.name} : {ty}", [v], dtype, listed=False)
                continue
            r = rng.random()
            if op == "pow":
                lo = 0 if dtype == "u8" else -2
                b = self.const(float(rng.randint(lo, 6)), kind, dtype) if r < 0.7 else self.new_input(kind, dtype)
            elif op in SHIFTS and r < 0.7:  # by a constant, past the width and negative ones too
                lo = 0 if dtype == "u8" else -2
                b = self.const(float(rng.randint(lo, WIDTH[dtype] + 2)), kind, dtype)
            elif r < 0.25:  # a constant, 0 and -1 (the divisions' edges) among them
                b = self.const(float(rng.choice([0, 1, 2, 3, 7] + ([] if dtype == "u8" else [-1, -3]))), kind, dtype)
            else:
                b = self.make(dtype, kind)
            if op in ("cmp", "where"):
                m = self.emit("q", kind, f"fusion.cmp {rng.choice(CMP_PREDICATES)}, %{v.name}, %{b.name} : {ty}",
                              [v, b], "i1", listed=False)
                if rng.random() < 0.5:  # masks compared (false < true) and chosen between
                    o = self.make("i1", kind)
                    mty = self.ty(kind, "i1")
                    m = self.emit("q", kind, f"fusion.cmp {rng.choice(CMP_PREDICATES)}, %{m.name}, %{o.name} : {mty}",
                                  [m, o], "i1", listed=False)
                    one = self.const(float(rng.randint(0, 1)), kind, "i1")
                    m = self.emit("w", kind, f"fusion.where %{o.name}, %{m.name}, %{one.name} : {mty}", [o, m, one],
                                  "i1", listed=False)
                    bit = rng.choice(["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"])
                    if bit == "bitwise_not":  # the bitwise ops of masks: the logical ones
                        m = self.emit("bn", kind, f"fusion.bitwise_not %{m.name} : {mty}", [m], "i1", listed=False)
                    else:
                        m = self.emit("bw", kind, f"fusion.{bit} %{m.name}, %{o.name} : {mty}", [m, o], "i1",
                                      listed=False)
                v = self.emit("w", kind, f"fusion.where %{m.name}, %{v.name}, %{b.name} : {ty}", [m, v, b], dtype,
                              listed=False)
                continue
            v = self.emit(op[:2], kind, f"fusion.{op} %{v.name}, %{b.name} : {ty}", [v, b], dtype, listed=False)
        v.bound = INT_LIMIT[dtype]
        return self.keep(v)

    def f64(self) -> Value:
        """A computed value returned in f64, or an f64 value cast to another type."""
        rng = self.rng
        if rng.random() < 0.35:
            return self.cast(self.pick(), "f64")
        v = self.source("f64")
        dst = rng.choice(["f32", "f16", "bf16", "i1", "i64", rng.choice(INTS)])
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
            elif dst in INTS:
                x = self.scaled(x, 4.0)
            src = self.cast(x, t)
        c = self.cast(src, dst)
        return self.cast(c, "f32") if dst in LOWP and rng.random() < 0.5 else c

    def shape_op(self) -> Value:
        """broadcast, permute, reshape or segment_set of an i1, integer, f64, f16 or bf16 value."""
        rng = self.rng
        dtype = rng.choice(["i1", "f64", "f16", "bf16", *INTS])
        op = rng.choice(["broadcast", "permute", "reshape", "segment_set"])
        kind = {"broadcast": rng.choice(self.reduced_kinds()), "permute": "full", "reshape": "row",
                "segment_set": rng.choice(["full", "row", "col"])}[op]
        return self.moved(self.make(dtype, kind), op)

    def index_maps(self) -> Value:
        """Slices, pads, cats or a flip (`reindexed`) of a full value of any type."""
        return self.reindexed(self.make(self.rng.choice(["f32", "f32", "i1", "f64", "f16", "bf16", *INTS]), "full"))

    def reindexed(self, x: Value) -> Value:
        """Full value `x` through the index-map ops back to the full shape, along one dim `d`: a
        flip, a shift (a pad negative on one side), a slice (maybe strided) padded back, x's
        leading elements beside another value's trailing ones (a cat of two slices), x's
        even elements before its odd ones, or a gather or index_select along d where a new
        index input says (indices from -n - 2 to n + 1: negative ones and a few out of range);
        now and then a scatter into the result (`scattered`)."""
        rng, t = self.rng, x.dtype
        full = self.shape("full")
        d = rng.randrange(len(full))
        n = full[d]
        ty = self.ty("full", t)
        form = rng.choice(["flip", "flip", "shift", "slice_pad", "cat", "deinterleave", "gather", "index_select"])

        def emit(stem: str, rhs: str, operands: list[Value], shape: tuple[int, ...]) -> Value:
            kind = "full" if shape == full else "=" + "x".join(map(str, shape))
            return self.emit(stem, kind, rhs, operands, t, listed=False)

        def sliced(v: Value, start: int, stop: int, step: int = 1) -> Value:
            lo, hi, k = [0] * len(full), list(full), [1] * len(full)
            lo[d], hi[d], k[d] = start, stop, step
            shape = tuple(-(-(b - a) // c) for a, b, c in zip(lo, hi, k))
            return emit("sl", f"fusion.slice %{v.name} start {lo} stop {hi} step {k} : {self.ty(v.kind, t)} to "
                              f"{self.ty('=' + 'x'.join(map(str, shape)), t)}", [v], shape)

        def padded(v: Value, low: int, high: int) -> Value:
            fill = {"i1": 1.0, "u8": 200.0}.get(t, -3.0 if t in INTS else rng.choice([0.0, -1.5, 2.0]))
            c = self.const(fill, "scalar", t)
            lo, hi = [0] * len(full), [0] * len(full)
            lo[d], hi[d] = low, high
            shape = tuple(m + a + b for m, a, b in zip(self.shape(v.kind), lo, hi))
            return emit("pd", f"fusion.pad %{v.name}, %{c.name} low {lo} high {hi} : {self.ty(v.kind, t)} to "
                              f"{self.ty('=' + 'x'.join(map(str, shape)), t)}", [v, c], shape)

        def cat(parts: list[Value]) -> Value:
            types = ", ".join(self.ty(p.kind, t) for p in parts)
            return emit("ct", f"fusion.cat {', '.join('%' + p.name for p in parts)} dim {d} : {types} to {ty}", parts, full)

        if n < 2 and form not in ("gather", "index_select"):
            form = "flip"
        if form in ("gather", "index_select"):  # along d, where an index input says (i64 or i32)
            kind = "full" if form == "gather" else f"={n}"
            it = rng.choice(["i64", "i32"])
            index = self.add_arg(f"in{self.n_in}", kind, it, f"index:{n}", float(n + 2))
            self.n_in += 1
            r = emit("gx" if form == "gather" else "ix", f"fusion.{form} %{x.name}, %{index.name} dim {d} : {ty}, "
                                                         f"{self.ty(kind, it)} to {ty}", [x, index], full)
        elif form == "flip":
            dims = sorted(rng.sample(range(len(full)), rng.randint(1, len(full))))
            r = emit("fl", f"fusion.flip %{x.name} dims {dims} : {ty} to {ty}", [x], full)
        elif form == "shift":
            a = rng.randint(1, n - 1)
            r = padded(x, -a, a) if rng.random() < 0.5 else padded(x, a, -a)
        elif form == "slice_pad":
            start = rng.randrange(n)
            stop, step = rng.randint(start + 1, n), rng.choice([1, 1, 2, 3])
            v = sliced(x, start, stop, step)
            m = self.shape(v.kind)[d]
            low = rng.randint(-(m // 2), n - m + m // 2)
            r = padded(v, low, n - m - low)
        elif form == "cat":
            y = self.make(t, "full")
            k = rng.randint(1, n - 1)
            r = cat([sliced(x, 0, k), sliced(y, k, n)])
        else:
            r = cat([sliced(x, 0, n, 2), sliced(x, 1, n, 2)])
        if self.scatters is not None and self.scatters.random() < 0.5:  # then a scatter into it, half the time
            r = self.scattered(r, d)
        return self.keep(r)

    def scattered(self, x: Value, d: int) -> Value:
        """Full value `x` with a src input's elements written (or added: not to masks) along `d`
        where an index input says (issue 32): m index positions (1, 2, n, or past the 16 that
        fusion-sort-scatters sorts), an index of src's shape or one line shared along the other
        dims (index_add's), indices from -n - 2 to n + 1 (negative ones, a few out of range:
        the nearest end), repeats (the last wins; sums in order); some sums of f32, f64, i32 and
        i64 by atomic adds (fusion.scatter_add_atomic: any order, within rounding). Drawn from its own stream
        (`scatters`), so the rest of the case stays as it was."""
        rng, t = self.scatters, x.dtype
        full = self.shape("full")
        n = full[d]
        m = rng.choice([1, 2, n, n + 3, 3 * n + 1, 40])
        sshape = tuple(m if k == d else e for k, e in enumerate(full))
        ishape = sshape if rng.random() < 0.5 else tuple(m if k == d else 1 for k in range(len(full)))
        kind = lambda shape: "=" + "x".join(map(str, shape))  # noqa: E731
        it = rng.choice(["i64", "i32"])
        index = self.add_arg(f"in{self.n_in}", kind(ishape), it, f"index:{n}", float(n + 2))
        src = self.add_arg(f"in{self.n_in + 1}", kind(sshape), t,
                           "mask" if t == "i1" else "range" if t in INTS else "uniform", x.bound)
        self.n_in += 2
        add = " add" if t not in ("i1", *FP8) and rng.random() < 0.5 else ""  # (FP8: storage only)
        atomic = add and t in ("f32", "f64", "i32", "i64") and rng.random() < 0.5  # (its own kernels, atomic adds)
        ty = self.ty("full", t)
        op, add = ("scatter_add_atomic", "") if atomic else ("scatter", add)
        rhs = (f"fusion.{op} %{x.name}, %{index.name}, %{src.name} dim {d}{add} : {ty}, "
               f"{self.ty(kind(ishape), it)}, {self.ty(kind(sshape), t)} to {ty}")
        return self.emit("sc", "full", rhs, [x, index, src], t, listed=False)

    def moved(self, x: Value, op: str | None = None, back: bool = False) -> Value:
        """`x` through a shape op (`op`, or one that fits its kind), the value used in its place:
        a row or column broadcast, a full value transposed (and maybe, or if `back`, back) or
        reindexed (`reindexed`), a row reshaped to R x 1 (and maybe, or if `back`, back), or a
        segment_set (a kernel boundary)."""
        rng = self.rng
        op = op or rng.choice([o for o, kinds in (("broadcast", self.reduced_kinds()), ("permute", ["full"]),
                                                   ("reshape", ["row"]), ("segment_set", [x.kind]),
                                                   ("reindex", ["full"])) if x.kind in kinds])
        t = x.dtype
        if op == "reindex":
            return self.reindexed(x)
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

    def next_float(self) -> Value:
        """nextafter (issue 31) of an f32, f16, bf16 or f64 value toward another of its type, a
        signed zero or an infinity (toward zero or away from it; from a zero, the least
        subnormal), or itself. Exact operands give an exact result, checked bit for bit."""
        rng = self.rng
        t = rng.choice(["f32", "f16", "bf16", "f64"])
        kind = rng.choice(["full", "full", "row", "col"])
        a = self.new_input(kind, t) if rng.random() < 0.6 else self.make(t, kind)
        r = rng.random()
        if r < 0.4:
            b = self.new_input(kind, t) if rng.random() < 0.5 else self.make(t, kind)
        elif r < 0.85:
            b = self.const(rng.choice([0.0, -0.0, math.inf, -math.inf]), kind, t)
        else:
            b = a
        return self.keep(self.emit("na", kind, f"fusion.nextafter %{a.name}, %{b.name} : {self.ty(kind, t)}", [a, b], t,
                                   listed=False))

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
