"""Provenance: every op a conversion creates carries the location of the op it comes from, so
that a diagnostic, `--mlir-print-debuginfo`, the LLVM IR's debug locations and the PTX's `.loc`
lines all point at the user's fusion op.

A conversion says which op it is working for (`with located(op):`); builders stamp that
location on each op they insert that has none of its own (`stamp`). Locations already set are
kept, so the innermost `located` wins and ops copied from the input keep theirs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.dialects.builtin import UnknownLoc
from xdsl.ir import Attribute, Operation

_current: ContextVar[Attribute | None] = ContextVar("fuser_current_location", default=None)


@contextmanager
def located(where: Operation | Attribute | None) -> Iterator[None]:
    """Ops built inside the block take `where`'s location (an op's, or a location attribute);
    an unknown location changes nothing."""
    loc = where.location if isinstance(where, Operation) else where
    if loc is None or isinstance(loc, UnknownLoc):
        yield
        return
    token = _current.set(loc)
    try:
        yield
    finally:
        _current.reset(token)


def stamp(op: Operation) -> None:
    """Give `op`, and the ops nested in it, the current location where they have none."""
    loc = _current.get()
    if loc is None:
        return
    for o in op.walk():
        if isinstance(o.location, UnknownLoc):
            o.location = loc
