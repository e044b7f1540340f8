"""`fusion.matmul`: C = A @ B with f32 accumulation, optionally as split-K partial products."""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerAttr, TensorType, UnitAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .types import FP8_TYPES, NARROW_FLOAT_TYPES, _check_tensor, _dims, _print_attrs, tensor

@irdl_op_definition
class MatmulOp(IRDLOperation):
    """`C[M,N] = A[M,K] @ B[K,N]` with f32 accumulation.

    Operands are given as stored: with `transpose_a` A is stored [K,M] (column-major MxK), with
    `transpose_b` B is stored [N,K]. Operands are bf16, f16 or FP8 (f8E4M3FN, f8E5M2; both of
    one type); the result's element type is f32, f16 or bf16.
    `%c = fusion.matmul %a, %b : tensor<128x64xbf16>, tensor<64x32xbf16> -> tensor<128x32xf32>`

    With `k_chunk KC` (split-K, made by fusion-split-k) the result is the S = ceil(K / KC)
    partial products, f32: `result[s] = A[:, s*KC : min(K, (s+1)*KC)] @ B[s*KC : ..., :]`, so
    `fusion.reduce sum %p dims [0]` gives the product back.
    `%p = fusion.matmul %a, %b k_chunk 1024 : tensor<128x4096xbf16>, tensor<4096x32xbf16> -> tensor<4x128x32xf32>`

    With `k_chunk KC serial` (serial split-K, made by `fusion-split-k{strategy=serial}`) the
    result is the whole product again, of any float type: the S splits are still computed by
    separate CTAs, but they add their f32 tiles into one workspace tile in split order inside
    the matmul kernel, and the last split runs the epilogue (no partials, no second kernel).
    `%c = fusion.matmul %a, %b k_chunk 1024 serial : tensor<128x4096xbf16>, tensor<4096x32xbf16> -> tensor<128x32xbf16>`
    """

    name = "fusion.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    transpose_a = opt_prop_def(UnitAttr)
    transpose_b = opt_prop_def(UnitAttr)
    k_chunk = opt_prop_def(IntegerAttr)
    serial = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, a: SSAValue, b: SSAValue, transpose_a: bool = False, transpose_b: bool = False, dtype: str = "f32",
                 k_chunk: int | None = None, serial: bool = False):
        sa, sb = _dims(a.type), _dims(b.type)
        m = sa[1] if transpose_a else sa[0]
        n = sb[0] if transpose_b else sb[1]
        props: dict[str, Attribute] = {}
        if transpose_a:
            props["transpose_a"] = UnitAttr()
        if transpose_b:
            props["transpose_b"] = UnitAttr()
        shape = [m, n]
        if k_chunk is not None:
            props["k_chunk"] = IntegerAttr(k_chunk, i64)
        if serial:
            props["serial"] = UnitAttr()
        if k_chunk is not None and not serial:
            k = sa[0] if transpose_a else sa[1]
            shape = [-(-k // k_chunk) if k_chunk > 0 else 0, m, n]
        super().__init__(operands=[a, b], result_types=[tensor(shape, dtype)], properties=props)

    def mnk(self) -> tuple[int, int, int]:
        sa, sb = _dims(self.a.type), _dims(self.b.type)
        m, k = (sa[1], sa[0]) if self.transpose_a else (sa[0], sa[1])
        n = sb[0] if self.transpose_b else sb[1]
        return m, n, k

    @property
    def chunk(self) -> int | None:
        """K elements per partial product (`k_chunk`), None for an ordinary matmul."""
        return None if self.k_chunk is None else self.k_chunk.value.data

    @property
    def partial_products(self) -> bool:
        """Whether the result is the S f32 partial products (two-kernel split-K), not the product."""
        return self.k_chunk is not None and self.serial is None

    @property
    def splits(self) -> int:
        """S, the number of partial products (1 without `k_chunk`)."""
        kc = self.chunk
        return 1 if kc is None or kc <= 0 else -(-self.mnk()[2] // kc)

    def verify_(self) -> None:
        for what, v in (("operand #0 ('a')", self.a), ("operand #1 ('b')", self.b), ("result", self.result)):
            if isinstance(v.type, TensorType) and isinstance(v.type.element_type, Float64Type):
                raise VerifyException(f"'fusion.matmul' op {what} is f64: matmul takes bf16, f16 or FP8 operands "
                                      f"(wgmma; f32 through them), f64 matmul is not supported")
        ta = _check_tensor(self, "operand #0 ('a')", self.a.type, NARROW_FLOAT_TYPES + FP8_TYPES)
        tb = _check_tensor(self, "operand #1 ('b')", self.b.type, NARROW_FLOAT_TYPES + FP8_TYPES)
        for what, t in (("operand #0 ('a')", ta), ("operand #1 ('b')", tb)):
            if t.get_num_dims() != 2:
                raise VerifyException(f"'fusion.matmul' op {what} must be 2-D, got {t}")
        if ta.element_type != tb.element_type:
            raise VerifyException(f"'fusion.matmul' op operand #1 ('b') has element type {tb.element_type}, expected {ta.element_type} like operand #0 ('a')")
        sa, sb = _dims(ta), _dims(tb)
        ka = sa[0] if self.transpose_a else sa[1]
        kb = sb[1] if self.transpose_b else sb[0]
        if ka != kb:
            raise VerifyException(f"'fusion.matmul' op contraction extents differ: operand #0 ('a') {ta} has K={ka}, operand #1 ('b') {tb} has K={kb}")
        m, n, k = self.mnk()
        rt = _check_tensor(self, "result", self.result.type, NARROW_FLOAT_TYPES)
        kc = self.chunk
        if self.serial is not None and kc is None:
            raise VerifyException("'fusion.matmul' op 'serial' needs a k_chunk (it says how the split K is reduced)")
        if kc is not None and kc <= 0:
            raise VerifyException(f"'fusion.matmul' op k_chunk must be positive, got {kc}")
        if not self.partial_products:
            if _dims(rt) != (m, n):
                raise VerifyException(f"'fusion.matmul' op result has shape {list(_dims(rt))}, expected {[m, n]}")
            return
        if rt.element_type != Float32Type():
            raise VerifyException(f"'fusion.matmul' op with k_chunk has element type {rt.element_type}; its partial "
                                  "products must be f32 (cast after the fusion.reduce sum)")
        want = [self.splits, m, n]
        if list(_dims(rt)) != want:
            raise VerifyException(f"'fusion.matmul' op result has shape {list(_dims(rt))}, expected {want} "
                                  f"(S = ceil(K / k_chunk) = ceil({k} / {kc}) partial products of {m}x{n})")

    # Custom syntax: `k_chunk` is a bare integer (the declarative format would print the property,
    # of any integer type, as `N : i64`).
    @classmethod
    def parse(cls, parser: Parser):
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        props: dict[str, Attribute] = {}
        for flag in ("transpose_a", "transpose_b"):
            if parser.parse_optional_keyword(flag):
                props[flag] = UnitAttr()
        if parser.parse_optional_keyword("k_chunk"):
            props["k_chunk"] = IntegerAttr(parser.parse_integer(), i64)
        if parser.parse_optional_keyword("serial"):
            props["serial"] = UnitAttr()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        at = parser.parse_type()
        parser.parse_punctuation(",")
        bt = parser.parse_type()
        parser.parse_punctuation("->")
        rt = parser.parse_type()
        op = cls.create(operands=[parser.resolve_operand(a, at), parser.resolve_operand(b, bt)], result_types=[rt],
                        properties=props)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.a)
        printer.print_string(", ")
        printer.print_operand(self.b)
        for flag in ("transpose_a", "transpose_b"):
            if getattr(self, flag) is not None:
                printer.print_string(f" {flag}")
        if self.k_chunk is not None:
            printer.print_string(f" k_chunk {self.chunk}")
        if self.serial is not None:
            printer.print_string(" serial")
        _print_attrs(printer, self, [])
        printer.print_string(" : ")
        printer.print_attribute(self.a.type)
        printer.print_string(", ")
        printer.print_attribute(self.b.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

