"""The one parse path: parsing (in the one context, dialects/context.py), printing, verification
and diagnostics, shared by the passes, the compile driver, the reference interpreter, the tools
and the Python API.

Every parsed op gets a `file:line:col` location, so a verifier error can be reported the MLIR
way (`input.mlir:3:8: error: 'fusion.add' op ...`) instead of as a Python traceback.
"""

from __future__ import annotations

import functools
import re
import sys

from xdsl.dialects.builtin import (DenseArrayBase, FileLineColLoc, IntAttr, IntegerType, ModuleOp, StringAttr,
                                   UnknownLoc, i64)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, OpResult
from xdsl.ir.core import ErasedSSAValue
from xdsl.parser import Parser
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, NoTerminator, SymbolUserOpInterface
from xdsl.utils.exceptions import VerifyException, DiagnosticException, ParseError

from fuser.dialects.context import make_context
from fuser.dialects.fusion.types import unsupported_element


class FuserDiagnostic(Exception):
    """A user-facing error with an MLIR-style `file:line:col: error: message` text.

    Each line of the message is bounded (`bounded_line`): a diagnostic quotes at most a line's
    neighbourhood of the input, however large the input (a type of 100000 dims in a verifier
    message gave a 400 kB diagnostic for a 1 MB input)."""

    def __init__(self, message: object = "", *rest: object):
        if isinstance(message, str):
            message = "\n".join(bounded_line(line) for line in message.split("\n"))
        super().__init__(message, *rest)


MESSAGE_LINE_CHARS = 1024
"""The most of one diagnostic line kept: its start and its end, the middle elided."""


def bounded_line(line: str, limit: int = MESSAGE_LINE_CHARS) -> str:
    """`line`, or its first and last `limit // 2` characters around a note of what was left out."""
    if len(line) <= limit:
        return line
    half = limit // 2
    return f"{line[:half]}... ({len(line) - 2 * half} characters left out) ...{line[-half:]}"


# A ranked tensor type of static dims and a plain element type, as its text: fusions repeat a
# handful of these hundreds of times, and xDSL lexes and builds each one anew (two thirds of a
# fuzzer fusion's parse time went to its types).
_PLAIN_TENSOR = re.compile(r"tensor<(?:\d+x)*[A-Za-z][A-Za-z0-9]*>")
_TYPE_CACHE: dict[str, Attribute] = {}
_TYPE_CACHE_SIZE = 4096


class _LocatingParser(Parser):
    def parse_optional_type(self):
        """xDSL's type parser, with plain tensor types looked up by their text (attributes are
        immutable, so one instance serves every use)."""
        tok = self._current_token
        if tok.text != "tensor":
            return super().parse_optional_type()
        m = _PLAIN_TENSOR.match(self.lexer.input.content, tok.span.start)
        if m is None:
            return super().parse_optional_type()
        t = _TYPE_CACHE.get(m.group())
        if t is not None:
            self._resume_from(m.end())
            return t
        t = super().parse_optional_type()
        if t is not None and self._current_token.span.start >= m.end():
            if len(_TYPE_CACHE) >= _TYPE_CACHE_SIZE:
                _TYPE_CACHE.clear()
            _TYPE_CACHE[m.group()] = t
        return t

    def parse_optional_operation(self) -> Operation | None:
        loc = self._current_token.span.get_location()
        op = super().parse_optional_operation()
        if op is not None and isinstance(op.location, UnknownLoc):
            op.location = FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line), IntAttr(loc.col))
        return op


# One token of a line, each alternative linear: a whole string literal, a comment, a run of
# other characters, or a lone '/'. A '"' that matches none of them opens a string the line
# never closes.
_LINE_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[^"/\n]+|/')


def check_strings(text: str, filename: str, line_offset: int = 0) -> None:
    """Refuse a string literal left open at the end of its line. xDSL 0.74's lexer matches
    string literals with a nested-quantifier regex that backtracks exponentially on an open
    one: a one-character typo made fuser-opt spin for minutes."""
    for n, line in enumerate(text.split("\n"), 1):
        pos = 0
        while pos < len(line):
            m = _LINE_TOKEN.match(line, pos)
            if m is None:
                raise FuserDiagnostic(f"{filename}:{n + line_offset}:{pos + 1}: error: string literal not closed "
                                      f"on its line (MLIR strings cannot span lines)")
            pos = m.end()


def parse_module(text: str, filename: str = "<input>", line_offset: int = 0, verify: bool = True) -> ModuleOp:
    """Parse MLIR text into a verified module; errors become `FuserDiagnostic`."""
    check_strings(text, filename, line_offset)
    ctx = make_context()
    try:
        parser = _LocatingParser(ctx, text, filename)
        parser.lexer.input  # noqa: B018 - make sure the lexer exists before adjusting offsets
        module = parser.parse_module()
    except ParseError as e:
        raise FuserDiagnostic(format_parse_error(e, line_offset)) from None
    except DiagnosticException as e:  # unknown dialect/op and similar
        raise FuserDiagnostic(f"{filename}: error: {first_line(e)}") from None
    except RecursionError:  # xDSL's parser recurses once per nested region
        raise FuserDiagnostic(f"{filename}: error: regions nest too deeply to parse "
                              f"(Python's recursion limit, {sys.getrecursionlimit()})") from None
    if line_offset:
        _shift_locations(module, line_offset)
    if verify:
        verify_module(module)
    return module


def decode_source(data: bytes, filename: str) -> str:
    """The text of an input file; bytes that are not UTF-8 are a located diagnostic, not a
    UnicodeDecodeError."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[:e.start].decode("utf-8", errors="replace")
        line = before.count("\n") + 1
        col = len(before) - (before.rfind("\n") + 1) + 1
        raise FuserDiagnostic(f"{filename}:{line}:{col}: error: byte 0x{data[e.start]:02x} is not valid UTF-8 "
                              f"(MLIR text must be UTF-8)") from None


def _shift_locations(module: ModuleOp, line_offset: int) -> None:
    for op in module.walk():
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            op.location = FileLineColLoc(loc.filename, IntAttr(loc.line.data + line_offset), loc.column)


def format_parse_error(e: ParseError, line_offset: int = 0) -> str:
    loc = e.span.get_location()
    context = e.span.print_with_context().split("\n", 1)[-1]  # drop its own location line
    return f"{loc.file}:{loc.line + line_offset}:{loc.col}: error: {_clip(e.msg)}\n{_clip_context(context)}"


CONTEXT_CHARS = 160
"""The most of a source line a diagnostic quotes (a minified file is one line of megabytes)."""


def _clip(text: str) -> str:
    return text if len(text) <= 4 * CONTEXT_CHARS else text[:4 * CONTEXT_CHARS] + f"... ({len(text)} characters)"


def _clip_context(context: str) -> str:
    """The quoted source lines, each cut to a window of `CONTEXT_CHARS` around its caret."""
    lines = context.split("\n")
    for i in range(len(lines) - 1):
        src, mark = lines[i], lines[i + 1]
        if len(src) <= CONTEXT_CHARS or not mark.strip() or set(mark.strip()) - set("^~"):
            continue
        at = len(mark) - len(mark.lstrip())
        start = max(0, min(at - CONTEXT_CHARS // 2, len(src) - CONTEXT_CHARS))
        head = "..." if start else ""
        tail = "..." if start + CONTEXT_CHARS < len(src) else ""
        lines[i] = head + src[start:start + CONTEXT_CHARS] + tail
        lines[i + 1] = " " * (len(head) + at - start) + mark.strip()[:CONTEXT_CHARS]
    return "\n".join(_clip(line) for line in lines)


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def location_of(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return "<unknown>"


@functools.lru_cache(maxsize=4096)
def dense_array(t: IntegerType, values: tuple[int, ...]) -> DenseArrayBase:
    """DenseArrayBase.from_list, built once per value: attributes are immutable, and building one
    costs more than the op that holds it (the positions of a kernel's thousands of vector
    extracts, GEP indices)."""
    return DenseArrayBase.from_list(t, values)


def position(k: int) -> DenseArrayBase:
    """A `static_position` / extract-insert position [k] (i64)."""
    return dense_array(i64, (k,))


def verify_module(module: ModuleOp) -> None:
    """Verify, reporting the first failing op as `file:line:col: error: message`."""
    positions: dict = {}  # block -> {op: index}, built once per block
    ops = list(module.walk())
    for op in ops:  # first, as other checks (xDSL's traits) ask operands for their owner
        for i, v in enumerate(op.operands):
            if type(v) is ForwardDeclaredValue:
                raise FuserDiagnostic(f"{location_of(op)}: error: '{op.name}' op operand #{i} is used before its "
                                      f"definition (a value defined inside this op's own regions, or after it)")
    verified = _VERIFIED
    if len(verified) > _VERIFIED_MAX:
        verified.clear()
    for op in ops:
        try:
            operands = op.operands
            _verify_placement(op, operands)
            _verify_defined_before_use(op, operands, positions)
            if type(op) is FuncOp:
                _verify_tensor_signature(op)
            signature = _signature(op, operands)
            try:
                known = signature is not None and signature in verified
            except TypeError:  # (an attribute that cannot be hashed: verify the op itself)
                signature, known = None, False
            if not known:
                op.verify_()  # an IRDL op's verify_ checks its definition (operands, traits) first
                if signature is not None:
                    verified.add(signature)
            if op.name == "llvm.mlir.addressof":
                _verify_addressof(op)
        except DiagnosticException as e:
            raise FuserDiagnostic(f"{location_of(op)}: error: {_op_message(op, e)}") from None


# Signatures of ops whose verify_ passed, kept across calls: the same ops are verified after
# every pass of a pipeline and in every compile of similar fusions. Bounded: cleared when full.
_VERIFIED: set = set()
_VERIFIED_MAX = 50_000  # (a matmul compile has ~700 signatures; a few hundred bytes each)


@functools.cache
def _terminator_traits(cls: type) -> tuple[bool, bool]:
    """(IsTerminator, NoTerminator) of an op class: asked of every op a verification walks,
    and a trait lookup scans the class's traits."""
    return cls.has_trait(IsTerminator), cls.has_trait(NoTerminator)


@functools.cache
def _verify_reads_context(cls: type) -> bool:
    """True for an op class whose verify_ reads more than its signature: terminators (their
    parent's result types), symbol users (the symbol table) and classes that say so with
    `VERIFY_READS_CONTEXT = True` (an enclosing kernel, an operand's defining op)."""
    return (cls.has_trait(IsTerminator) or getattr(cls, "VERIFY_READS_CONTEXT", False)
            or any(isinstance(t, SymbolUserOpInterface) for t in cls.traits))


def _signature(op: Operation, operands) -> tuple | None:
    """What an op's `verify_` reads when it has no regions or successors: its class, operand and
    result types, properties, attributes and its parent's class (HasParent). Ops of the same
    signature verify alike, so each is verified once: a wgmma epilogue's 768 vector.extracts of
    a few lane positions took 72 of a matmul compile's 230 ms of verification. None: verify it,
    as every terminator is (a `scf.yield` or `func.return` checks its operands against its
    parent's own result types, which the parent's class does not say), as is every op whose
    verifier reads its surroundings (`_verify_reads_context`)."""
    if op.regions or op.successors or _verify_reads_context(type(op)):
        return None
    parent = op.parent_op()
    return (type(op), tuple(v.type for v in operands), tuple(r.type for r in op.results),
            tuple(op.properties.items()), tuple(op.attributes.items()), type(parent) if parent else None)


def verify_ops(module: ModuleOp, kinds: tuple[type, ...]) -> None:
    """Verify only the ops of `kinds` (each one's own `verify_`), reporting as verify_module: a
    cheap check of the ops whose errors nothing later catches."""
    for op in module.walk():
        if isinstance(op, kinds):
            try:
                op.verify_()
            except DiagnosticException as e:
                raise FuserDiagnostic(f"{location_of(op)}: error: {_op_message(op, e)}") from None


def _verify_placement(op: Operation, operands) -> None:
    """What xDSL's recursive `Operation.verify` checks besides `verify_`, for one op: no erased
    operand, successors in its own region and only on a block's last op, a terminator where
    its region needs one, no empty single-block region. Done here, inside the one walk, so that
    each op is verified once (calling `module.verify()` as well verified everything twice)."""
    for i, v in enumerate(operands):
        if type(v) is ErasedSSAValue:
            raise VerifyException(f"operand #{i} was erased")
    block = op.parent
    region = None if block is None else block.parent
    successors = op.successors
    if successors:
        if region is None or block.last_op is not op:
            raise VerifyException("an op with successors must end its block")
        if any(s.parent is not region for s in successors):
            raise VerifyException("a successor lies in another region")
    is_terminator, no_terminator = _terminator_traits(type(op))
    if region is not None and not is_terminator and block.last_op is op:
        holder = region.parent
        if len(region.blocks) > 1 or (holder is not None and not _terminator_traits(type(holder))[1]):
            raise VerifyException(f"ends a block of '{holder.name if holder else '?'}' but is not a terminator")
    if not no_terminator:
        for r in op.regions:
            if len(r.blocks) == 1 and r.block.first_op is None:
                raise VerifyException("has an empty block where a terminator is expected")


def _verify_tensor_signature(op: Operation) -> None:
    """A function on tensors is a fusion: its parameters and results must have element types the
    fusion dialect supports (an unused or returned-as-is parameter meets no op verifier)."""
    if not isinstance(op, FuncOp):
        return
    ft = op.function_type
    for what, types in (("argument", ft.inputs.data), ("result", ft.outputs.data)):
        for i, t in enumerate(types):
            if (why := unsupported_element(t)) is not None:
                raise VerifyException(f"'func.func' op @{op.sym_name.data} {what} #{i} ({t}): {why}")
    if op.res_attrs is not None:
        from fuser.dialects.fusion.layout import LayoutError, check_aliases
        try:
            check_aliases(op)
        except LayoutError as e:
            raise VerifyException(str(e)) from None


def _verify_defined_before_use(op: Operation, operands, positions: dict) -> None:
    """An operand defined by an op of the same block, or of a block enclosing this op, must come
    before it (MLIR's dominance rule within a block; xDSL's verifier does not check it). Values
    from other blocks of a multi-block region are left alone: that needs the region's CFG."""
    for i, v in enumerate(operands):
        owner = v.owner
        if type(v) is not OpResult or owner.parent is None:  # (a block argument: owned by its block)
            continue
        block = owner.parent
        user = op
        while user is not None and user.parent is not block:
            user = user.parent_op()
        if user is None:
            continue
        if block not in positions:
            positions[block] = {o: k for k, o in enumerate(block.ops)}
        where = positions[block]
        if where[owner] >= where[user]:
            name = f" (%{v.name_hint})" if v.name_hint else ""
            raise VerifyException(f"operand #{i}{name} is used before its definition at {location_of(owner)}")


def _verify_addressof(op: Operation) -> None:
    """`llvm.mlir.addressof @g` names an `llvm.mlir.global` or `llvm.func` of the nearest
    enclosing module (upstream's verifier checks the same; xDSL's does not)."""
    name = op.properties["global_name"].root_reference.data
    scope = op.parent_op()
    while scope is not None and scope.name not in ("gpu.module", "builtin.module"):
        scope = scope.parent_op()
    if scope is None:
        return
    for sym in scope.regions[0].block.ops:
        found = sym.properties.get("sym_name") or sym.attributes.get("sym_name")
        if found is not None and found.data == name:
            if sym.name not in ("llvm.mlir.global", "llvm.func"):
                raise VerifyException(f"'{op.name}' op @{name} is a {sym.name}, not an llvm.mlir.global or llvm.func")
            return
    raise VerifyException(f"'{op.name}' op refers to @{name}, which no llvm.mlir.global or llvm.func of the "
                          f"enclosing {scope.name} defines")


def _op_message(op: Operation, e: Exception) -> str:
    msg = first_line(e)
    return msg if msg.startswith("'") else f"'{op.name}' op {msg}"


def print_module(module: ModuleOp, generic: bool = False, debuginfo: bool = False) -> str:
    import io
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(module)
    return out.getvalue() + "\n"
