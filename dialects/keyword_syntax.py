"""The custom syntax of ops whose assembly starts with a bare keyword from a fixed set
(`nvvm.griddepcontrol wait`, `sched.griddepcontrol launch_dependents`,
`nvvm.setmaxregister increase 232`): the keyword is checked while parsing, so a wrong one is a
diagnostic at its location, worded as the verifier words it."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.parser import Parser


def keyword_error(op_name: str, what: str, allowed: Sequence[str], got: str) -> str:
    return f"'{op_name}' op {what} must be {' or '.join(allowed)}, got '{got}'"


def parse_keyword(parser: Parser, op_name: str, what: str, allowed: Sequence[str]) -> str:
    """The next identifier, which must be one of `allowed`."""
    pos = parser.pos
    word = parser.parse_identifier()
    if word not in allowed:
        parser.raise_error(keyword_error(op_name, what, allowed, word), pos, parser.pos)
    return word
