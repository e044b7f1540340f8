"""`fusion.segment`: a group of fusion ops that one scheduler turns into one kernel (or the
kernels of one task, e.g. a split row reduction), and its terminator `fusion.yield`.

```
%s, %y = fusion.segment "normalization" (%x = %arg0 : tensor<8x64xf32>) -> (tensor<8xf32>, tensor<8x64xf32>)
    attributes {fuser.segment = "..."} {
  ...
  fusion.yield %sum, %out : tensor<8xf32>, tensor<8x64xf32>
}
```

The region is isolated from above: each operand enters as the block argument named on its left,
so a segment reads exactly what its kernels load. The scheduler name (`pointwise`, `reduction`,
`normalization`, `matmul`, `scan`, `sort`, `scatter`) is optional: `fusion-segment` fills it in for a hand-written segment
and keeps the segment's boundary. `fuser.segment` records the decision (parameters, memory
traffic, why a larger group was refused).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (IRDLOperation, irdl_op_definition, opt_prop_def, region_def, traits_def, var_operand_def,
                       var_result_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator
from xdsl.utils.exceptions import VerifyException

SCHEDULERS = ("pointwise", "reduction", "normalization", "matmul", "scan", "sort", "scatter")


@irdl_op_definition
class SegmentOp(IRDLOperation):
    name = "fusion.segment"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    scheduler = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region,
                 scheduler: str | None = None):
        props = {"scheduler": StringAttr(scheduler)} if scheduler else {}
        super().__init__(operands=[list(inputs)], result_types=[list(result_types)], regions=[body],
                         properties=props)

    @property
    def scheduler_name(self) -> str | None:
        return self.scheduler.data if self.scheduler is not None else None

    def verify_(self) -> None:
        if self.scheduler is not None and self.scheduler.data not in SCHEDULERS:
            raise VerifyException(f"'fusion.segment' op names scheduler '{self.scheduler.data}'; "
                                  f"expected one of {', '.join(SCHEDULERS)}")
        args = self.body.block.args
        if len(args) != len(self.inputs):
            raise VerifyException(f"'fusion.segment' op has {len(self.inputs)} operand(s) but its body takes "
                                  f"{len(args)} argument(s)")
        for i, (a, v) in enumerate(zip(args, self.inputs)):
            if a.type != v.type:
                raise VerifyException(f"'fusion.segment' op operand #{i} is {v.type} but body argument #{i} is {a.type}")
        term = self.body.block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException("'fusion.segment' op body must end with fusion.yield")
        if not self.outputs:
            raise VerifyException("'fusion.segment' op has no results: a segment must produce a value")
        if [v.type for v in term.values] != [r.type for r in self.outputs]:
            raise VerifyException(
                f"'fusion.segment' op yields ({', '.join(str(v.type) for v in term.values)}) but its results are "
                f"({', '.join(str(r.type) for r in self.outputs)})")
        for op in self.body.block.ops:
            if isinstance(op, SegmentOp):
                raise VerifyException("'fusion.segment' op holds another fusion.segment: segments do not nest")
            if op.dialect_name() != "fusion":
                raise VerifyException(f"'fusion.segment' op holds '{op.name}'; a segment holds fusion ops only")

    # Custom syntax: each operand is written next to the block argument it becomes.
    def print(self, printer: Printer) -> None:
        if self.scheduler is not None:
            printer.print_string(" ")
            printer.print_attribute(self.scheduler)
        printer.print_string(" (")
        printer.print_list(zip(self.body.block.args, self.inputs), lambda p: (
            printer.print_ssa_value(p[0]), printer.print_string(" = "), printer.print_ssa_value(p[1]),
            printer.print_string(" : "), printer.print_attribute(p[1].type)))
        printer.print_string(") -> (")
        printer.print_list([r.type for r in self.outputs], printer.print_attribute)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> SegmentOp:
        scheduler = parser.parse_optional_str_literal()
        pos = parser.pos

        def one():
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            operand = parser.parse_unresolved_operand()
            parser.parse_punctuation(":")
            return arg, operand, parser.parse_type()

        triples = parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
        parser.parse_punctuation("->")
        result_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        types = [t for _, _, t in triples]
        operands = parser.resolve_operands([o for _, o, _ in triples], types, pos)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region([a.resolve(t) for (a, _, _), t in zip(triples, types)])
        op = cls(operands, result_types, body, scheduler)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The values a `fusion.segment` produces: `fusion.yield %a, %b : tensor<..>, tensor<..>`."""

    name = "fusion.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(SegmentOp))
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


def new_segment(inputs: Sequence[SSAValue], result_types: Sequence[Attribute], scheduler: str | None = None
                ) -> tuple[SegmentOp, Block]:
    """An empty segment over `inputs` (its block arguments carry their names); fill the block
    and end it with a `YieldOp`."""
    block = Block(arg_types=[v.type for v in inputs])
    for a, v in zip(block.args, inputs):
        a.name_hint = v.name_hint
    return SegmentOp(inputs, result_types, Region(block), scheduler), block
