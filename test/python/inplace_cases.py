"""Random in-place fusions (shared by test_inplace.py and test_inplace_gpu.py): 2-4 inputs, some
of them written in place by an output computed from any of them (as is, negated, flipped, a sum
of two), beside plain outputs that return an input as is or computed. The expected values come
from the inputs as they were passed, by numpy, independently of the compiler."""

from __future__ import annotations

import random
from collections.abc import Callable


import fuser

KINDS = ("as is", "neg", "flip", "sum of two")


def random_inplace(seed: int) -> tuple[fuser.FusionBuilder, tuple[int, int], int, list[tuple[int | None, Callable]]]:
    """(builder, input shape, number of inputs, per output: (the input it is written into or
    None, numpy function of the list of original inputs))."""
    rng = random.Random(seed)
    n = rng.randint(2, 4)
    shape = (rng.choice([1, 7, 33]), rng.choice([5, 64, 129]))
    fb = fuser.FusionBuilder(f"inplace_{seed}")
    xs = [fb.input(shape, "f32", name=f"x{k}") for k in range(n)]
    outputs: list[tuple[int | None, Callable]] = []

    def value(k: int, j: int, kind: str):
        if kind == "as is":
            return xs[k], lambda X: X[k]
        if kind == "neg":
            return -xs[k], lambda X: -X[k]
        if kind == "flip":
            return fuser.flip(xs[k], [1]), lambda X: X[k][:, ::-1]
        return xs[k] + xs[j], lambda X: X[k] + X[j]

    for t in rng.sample(range(n), rng.randint(1, n)):  # each written by one output
        v, f = value(rng.randrange(n), rng.randrange(n), rng.choice(KINDS))
        fb.output(v, alias=xs[t])
        outputs.append((t, f))
    for _ in range(rng.randint(0, 2)):
        v, f = value(rng.randrange(n), rng.randrange(n), rng.choice(("as is", "neg", "sum of two")))
        fb.output(v)
        outputs.append((None, f))
    return fb, shape, n, outputs
