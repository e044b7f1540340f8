"""docs/nvfuser-ops.md stays true: all 134 of nvFuser's frontend ops are listed once, every
"yes" names a function (or Tensor method) fuser's API has, and the counts line adds up."""

from __future__ import annotations

import re
from pathlib import Path

from fuser import api

DOC = Path(__file__).resolve().parents[2] / "docs" / "nvfuser-ops.md"


def _rows() -> list[tuple[str, str, str]]:
    rows = []
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| `([a-z0-9_]+)` \| (yes|no|part 2) \| (.*) \|$", line)
        if m:
            rows.append(m.groups())
    return rows


def test_every_op_is_listed_once():
    names = [r[0] for r in _rows()]
    assert len(names) == 134 and len(set(names)) == 134


def test_every_yes_names_what_the_api_has():
    for op, status, spelling in _rows():
        if status != "yes":
            continue
        m = re.match(r"(fuser|Tensor)\.([A-Za-z_][A-Za-z0-9_]*)", spelling)
        assert m, f"{op}: 'yes' without a fuser spelling: {spelling!r}"
        owner = api if m.group(1) == "fuser" else api.Tensor
        assert hasattr(owner, m.group(2)) or (owner is api.Tensor and m.group(2) == "shape"), \
            f"{op}: {spelling} does not exist"


def test_the_counts_add_up():
    counts = {s: sum(1 for r in _rows() if r[1] == s) for s in ("yes", "part 2", "no")}
    line = next(ln for ln in DOC.read_text().splitlines() if ln.startswith("Counts:"))
    assert line == f"Counts: {counts['yes']} yes, {counts['part 2']} part 2, {counts['no']} no."
