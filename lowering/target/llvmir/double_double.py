"""Double-double arithmetic for the f64 math helpers (libm_f64.py): a value as the unevaluated
sum hi + lo of two doubles (~106 bits), built from error-free transformations (Knuth's TwoSum,
Dekker's FastTwoSum, and the product's error by fma). Each function emits LLVM IR through an
`Emitter` and returns the names of the values."""

from __future__ import annotations

from .emitter import Emitter


def neg(e: Emitter, a: str) -> str:
    """-a (exact)."""
    return e.inst(f"fneg double {a}")


def two_sum(e: Emitter, a: str, b: str) -> tuple[str, str]:
    """(s, err) with s = fl(a + b) and s + err = a + b exactly, for any a and b (TwoSum)."""
    s = e.dbin("fadd", a, b)
    bb = e.dbin("fsub", s, a)
    err = e.dbin("fadd", e.dbin("fsub", a, e.dbin("fsub", s, bb)), e.dbin("fsub", b, bb))
    return s, err


def fast_two_sum(e: Emitter, a: str, b: str) -> tuple[str, str]:
    """(s, err) with s + err = a + b exactly, for |a| >= |b| (or a = 0)."""
    s = e.dbin("fadd", a, b)
    return s, e.dbin("fsub", b, e.dbin("fsub", s, a))


def two_prod(e: Emitter, a: str, b: str) -> tuple[str, str]:
    """(p, err) with p = fl(a b) and p + err = a b exactly (err by one fma)."""
    p = e.dbin("fmul", a, b)
    return p, e.dfma(a, b, neg(e, p))


def dd_add(e: Emitter, a: tuple[str, str], b: tuple[str, str]) -> tuple[str, str]:
    """a + b of two double-doubles, renormalized (hi = fl(hi + lo))."""
    s, err = two_sum(e, a[0], b[0])
    err = e.dbin("fadd", err, e.dbin("fadd", a[1], b[1]))
    return fast_two_sum(e, s, err)


def dd_mul(e: Emitter, a: tuple[str, str], b: tuple[str, str]) -> tuple[str, str]:
    """a b of two double-doubles (the lo * lo term left out), renormalized."""
    p, err = two_prod(e, a[0], b[0])
    err = e.dfma(a[0], b[1], e.dfma(a[1], b[0], err))
    return fast_two_sum(e, p, err)
