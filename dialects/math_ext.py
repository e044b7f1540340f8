"""Upstream `math` ops that xDSL 0.74's math dialect lacks, with upstream's names and syntax."""

from __future__ import annotations

from xdsl.dialects.math import FloatingPointLikeUnaryMathOperation
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure, SameOperandsAndResultType


@irdl_op_definition
class ErfcOp(FloatingPointLikeUnaryMathOperation):
    """`%y = math.erfc %x : f32`: the complementary error function, 1 - erf(x), without the
    cancellation of computing it that way."""

    name = "math.erfc"

    traits = traits_def(Pure(), SameOperandsAndResultType())


@irdl_op_definition
class ErfinvOp(FloatingPointLikeUnaryMathOperation):
    """`%y = math.erfinv %x : f32`: the inverse error function on (-1, 1) (+-inf at +-1, NaN
    beyond). Not an upstream op: fuser's own, named as upstream would."""

    name = "math.erfinv"

    traits = traits_def(Pure(), SameOperandsAndResultType())


@irdl_op_definition
class ErfcinvOp(FloatingPointLikeUnaryMathOperation):
    """`%y = math.erfcinv %x : f32`: the inverse of erfc on (0, 2) (+inf at 0, -inf at 2, NaN
    beyond). Not an upstream op: fuser's own, named as upstream would."""

    name = "math.erfcinv"

    traits = traits_def(Pure(), SameOperandsAndResultType())


@irdl_op_definition
class LgammaOp(FloatingPointLikeUnaryMathOperation):
    """`%y = math.lgamma %x : f32`: log|gamma(x)| (+inf at 0 and the negative integers). Not an
    upstream op: fuser's own, named as upstream would."""

    name = "math.lgamma"

    traits = traits_def(Pure(), SameOperandsAndResultType())


@irdl_op_definition
class GeluOp(FloatingPointLikeUnaryMathOperation):
    """`%y = math.gelu %x : f64`: x/2 (1 + erf(x / sqrt 2)), GELU's erf form, computed as one
    function so that it keeps its relative accuracy where 1 + erf cancels (x << 0). Not an
    upstream op: fuser's own; the kernels use it for f64 only (f32 composes erf)."""

    name = "math.gelu"

    traits = traits_def(Pure(), SameOperandsAndResultType())


MATH_EXT_OPS = [ErfcOp, ErfinvOp, ErfcinvOp, LgammaOp, GeluOp]
