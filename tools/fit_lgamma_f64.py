"""Fit the coefficient tables of the f64 lgamma (lowering/target/llvmir/libm_lgamma_f64.py).

Run `python -m fuser.tools.fit_lgamma_f64` (needs mpmath) and paste its output into that module.
At 120 bits, rounded to double:

* LGAMMA_G2: G(t) = lgamma(2 + t) / t (1 - Euler's gamma at t = 0), a Chebyshev interpolant of
  degree G2_DEGREE on [-1/2, 1/2] (mpmath.chebyfit), as a polynomial in t; LGAMMA_G2_C0_LO, what
  the rounding took from its constant term (t G(t) takes the term t c0 as a double-double).
* STIRLING: Stirling's series B_2k / (2k (2k - 1)), k = 1 .. STIRLING_TERMS (exact rationals).
* SINPI_Q: sin(pi r) = pi r + r^3 Q(r^2), Q's Taylor terms (-1)^k pi^(2k+1) / (2k+1)!, k = 1 .. 9;
  COSPI_C: cos(pi s) = 1 - (pi s)^2 / 2 + s^4 C(s^2), (-1)^k pi^(2k) / (2k)!, k = 2 .. 10 (both for
  |r|, |s| <= 1/4, where the first term left out is below 1e-19).
* HALF_LOG_2PI, LOG_PI as two doubles each (hi + lo).

Prints the largest relative error of the fit (before the rounding of the coefficients) and of
the rounded polynomial on a grid of 2001 points.
"""

from __future__ import annotations

import mpmath as mp

mp.mp.prec = 120
G2_DEGREE = 20
STIRLING_TERMS = 10
SINPI_TERMS = 9


def g2(t):
    return mp.loggamma(2 + t) / t if t != 0 else 1 - mp.euler


def two(v) -> tuple[float, float]:
    hi = float(v)
    return hi, float(v - hi)


def main() -> None:
    poly, err = mp.chebyfit(g2, [-0.5, 0.5], G2_DEGREE + 1, error=True)
    cs = [float(p) for p in reversed(poly)]  # lowest degree first
    worst = max(abs(mp.polyval(list(reversed([mp.mpf(c) for c in cs])), t) / g2(t) - 1)
                for t in mp.linspace(-0.5, 0.5, 2001))
    print(f"# G(t) = lgamma(2 + t) / t: fit error {float(err / g2(mp.mpf(-0.5))):.2e} relative, "
          f"{float(worst):.2e} with the coefficients rounded")
    print("LGAMMA_G2 = (" + ", ".join(repr(c) for c in cs) + ")")
    print(f"LGAMMA_G2_C0_LO = {float(poly[-1] - cs[0])!r}")
    stirling = [mp.bernoulli(2 * k) / (2 * k * (2 * k - 1)) for k in range(1, STIRLING_TERMS + 1)]
    print("STIRLING = (" + ", ".join(repr(float(c)) for c in stirling) + ")")
    q = [(-1) ** k * mp.pi ** (2 * k + 1) / mp.factorial(2 * k + 1) for k in range(1, SINPI_TERMS + 1)]
    print("SINPI_Q = (" + ", ".join(repr(float(c)) for c in q) + ")")
    c = [(-1) ** k * mp.pi ** (2 * k) / mp.factorial(2 * k) for k in range(2, SINPI_TERMS + 2)]
    print("COSPI_C = (" + ", ".join(repr(float(v)) for v in c) + ")")
    print(f"HALF_LOG_2PI = {two(mp.log(2 * mp.pi) / 2)!r}")
    print(f"LOG_PI = {two(mp.log(mp.pi))!r}")


if __name__ == "__main__":
    main()
