"""Upstream `arith` ops that xDSL 0.74's arith dialect lacks, with upstream's names and syntax."""

from __future__ import annotations

from xdsl.dialects.arith import FloatingPointLikeBinaryOperation
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure


@irdl_op_definition
class RemFOp(FloatingPointLikeBinaryOperation):
    """`%r = arith.remf %a, %b : f32`: C's fmod, the remainder of a / b truncated, with a's sign."""

    name = "arith.remf"

    traits = traits_def(Pure())


ARITH_EXT_OPS = [RemFOp]
