"""The package's import graph: no cycles, and arrows that point down the layers.

    tools -> api, driver -> passes -> lowering -> dialects        runtime -> dialects only

and inside lowering/, folders that point down too:

    target -> conversion -> emitters -> analysis -> heuristics -> lowering/*.py (common, provenance)

Every `import` of a fuser module counts, at module level or inside a function: a lazy import
may keep start-up fast, but it must not hide a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = ("dialects", "passes", "lowering", "runtime", "tools")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = ["fuser", *rel.parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    files = [ROOT / "__init__.py", ROOT / "api.py", ROOT / "driver.py"]
    files += [f for d in PACKAGE_DIRS for f in (ROOT / d).rglob("*.py")]
    return {_module_name(f): f for f in files}


def _runtime_nodes(tree: ast.AST):
    """Every node, except under `if TYPE_CHECKING:` (imports for annotations only)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo += node.orelse
            continue
        todo += list(ast.iter_child_nodes(node))


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("fuser")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            if not base.startswith("fuser"):
                continue
            for a in node.names:  # `from fuser.x import y` imports the module fuser.x.y if there is one
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return {m for m in out if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {m: _imports(p, m, known) for m, p in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_graph_sees_the_package():
    g = _graph()
    assert "fuser.lowering.conversion.fusion_to_sched" in g and "fuser.dialects.sched" in g
    assert "fuser.dialects.fusion" in g["fuser.lowering.conversion.fusion_to_sched"]


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_cycle_detection_works():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _layer(m: str) -> str:
    parts = m.split(".")
    return parts[1] if len(parts) > 1 else "fuser"


ALLOWED = {
    "dialects": {"dialects"},
    "runtime": {"dialects", "runtime"},
    "lowering": {"dialects", "lowering"},  # conversions and analyses; the passes are above them
    "passes": {"dialects", "lowering", "passes"},
    "driver": {"dialects", "lowering", "passes", "runtime", "driver"},
    "api": {"dialects", "runtime", "driver", "api"},
}


def test_imports_point_down_the_layers():
    bad = []
    for m, deps in _graph().items():
        allowed = ALLOWED.get(_layer(m))
        if allowed is None:
            continue  # tools and the package root may import anything below them
        bad += [f"{m} -> {d}" for d in sorted(deps) if _layer(d) not in allowed]
    assert bad == []


# lowering/'s folders, lowest first: a module may import its own folder and those before it.
LOWERING_FOLDERS = ("", "heuristics", "analysis", "emitters", "conversion", "target")


def _lowering_folder(m: str) -> str | None:
    parts = m.split(".")
    if parts[:2] != ["fuser", "lowering"] or len(parts) < 3:
        return None
    return parts[2] if len(parts) > 3 else ""


def test_lowering_folders_point_down():
    g = _graph()
    rank = {f: i for i, f in enumerate(LOWERING_FOLDERS)}
    assert {_lowering_folder(m) for m in g} - {None} == set(LOWERING_FOLDERS), "a folder of lowering/ has no rank"
    bad = []
    for m, deps in g.items():
        here = _lowering_folder(m)
        if here is None:
            continue
        bad += [f"{m} -> {d}" for d in sorted(deps)
                if _lowering_folder(d) is not None and rank[_lowering_folder(d)] > rank[here]]
    assert bad == []


def test_passes_use_analyses_not_emitters():
    """Passes ask analyses and heuristics (what a scheduler decides is analysis/schedules.py,
    which the emitters build from too); the emitters and conversions are the conversion
    passes' (registered by name), and the target is the driver's."""
    bad = [f"{m} -> {d}" for m, deps in _graph().items() if m.startswith("fuser.passes")
           for d in sorted(deps) if _lowering_folder(d) in ("emitters", "conversion", "target")]
    assert bad == []


def test_nothing_imports_the_frontend_by_its_folder_name():
    """frontend/torch installs as `fuser.torch` (pyproject's package-dir); `fuser.frontend`
    exists only in an editable checkout, so an import of it passes here and fails on the GPU
    machine, where fuser is installed (test_inplace_gpu's backend tests did)."""
    bad = []
    for f in sorted(ROOT.rglob("*.py")):
        if ".venv" in f.parts or "build" in f.parts:
            continue
        for node in _runtime_nodes(ast.parse(f.read_text(), str(f))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{f.relative_to(ROOT)}:{node.lineno}" for n in names if n.startswith("fuser.frontend")]
    assert not bad, f"import fuser.torch instead: {bad}"
