"""Fit the coefficient tables of the f64 erf family (lowering/target/llvmir/libm_erf_f64.py).

Run `python -m fuser.tools.fit_erf_f64` (needs mpmath) and paste its output into that module.
Chebyshev interpolants at 120 bits (mpmath.chebyfit), as monomials, rounded to double:

* ERFCX_TABLE: erfcx(a) = e^(a^2) erfc(a) on ERFCX_COUNT intervals of width ERFCX_STEP from
  ERFCX_START, each as a polynomial of degree ERFCX_DEGREE in s = a - (interval's centre).
* ERFC_ASYM: a erfcx(a) as a polynomial of degree 14 in u = 1/a^2 on [0, 1/16] (a >= 4).

Prints the largest relative error of each fit (before the rounding of the coefficients).
"""

from __future__ import annotations

import mpmath as mp

mp.mp.prec = 120
ERFCX_START, ERFCX_STEP, ERFCX_COUNT, ERFCX_DEGREE = 0.5, 0.25, 14, 11
ASYM_DEGREE = 14


def erfcx(a):
    return mp.erfc(a) * mp.exp(a * a)


def main() -> None:
    rows, worst = [], 0.0
    for i in range(ERFCX_COUNT):
        c = mp.mpf(ERFCX_START) + ERFCX_STEP * i + ERFCX_STEP / 2
        poly, err = mp.chebyfit(lambda s: erfcx(c + s), [-ERFCX_STEP / 2, ERFCX_STEP / 2], ERFCX_DEGREE + 1, error=True)
        worst = max(worst, float(err / erfcx(c + ERFCX_STEP / 2)))
        rows.append(tuple(float(p) for p in reversed(poly)))  # lowest degree first
    print(f"# erfcx fits: largest relative error {worst:.2e}")
    print("ERFCX_TABLE = (")
    for r in rows:
        print("    (" + ", ".join(repr(v) for v in r) + "),")
    print(")")

    def h(u):
        return erfcx(1 / mp.sqrt(u)) / mp.sqrt(u) if u > 0 else 1 / mp.sqrt(mp.pi)
    poly, err = mp.chebyfit(h, [0, mp.mpf(1) / 16], ASYM_DEGREE + 1, error=True)
    print(f"# a erfcx(a) in u = 1/a^2: largest relative error {float(err / h(mp.mpf(1) / 16)):.2e}")
    print("ERFC_ASYM = (" + ", ".join(repr(float(p)) for p in reversed(poly)) + ")")


if __name__ == "__main__":
    main()
