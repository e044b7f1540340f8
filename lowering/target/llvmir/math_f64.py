"""Every f64 math helper: libm_f64.py's, the erf family's (libm_erf_f64.py) and lgamma's
(libm_lgamma_f64.py), both of which build on libm_f64's exp and log, as one table for the
translation (module.py, ops_arith.py)."""

from __future__ import annotations

from collections.abc import Callable

from . import libm_f64
from .emitter import Emitter
from .libm_erf_f64 import ERF_F64
from .libm_lgamma_f64 import LGAMMA_F64

# math op name -> the body of its f64 helper double(double %x)
MATH_F64: dict[str, Callable[[Emitter, str], str]] = {**libm_f64.MATH_F64, **ERF_F64, **LGAMMA_F64}
# two-operand op name -> the body of its f64 helper double(double %a, double %b)
MATH_F64_2: dict[str, Callable[[Emitter, str, str], str]] = dict(libm_f64.MATH_F64_2)
