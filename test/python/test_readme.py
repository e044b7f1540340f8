"""The README's command examples still work: every `fuser-opt examples/...` line of its fuser-opt
block and the pipeline-syntax example run and exit 0 (they need no GPU)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = open(os.path.join(ROOT, "README.md")).read()


def _fuser_opt_lines() -> list[str]:
    block = README.split("## fuser-opt", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [ln.split("  #")[0].strip() for ln in block.splitlines() if ln.startswith("fuser-opt examples/")]


def _run(argv: list[str], tmp_path) -> subprocess.CompletedProcess:
    env = dict(os.environ, FUSER_CACHE_DIR=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "fuser.tools.fuser_opt"] + argv
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("line", _fuser_opt_lines())
def test_fuser_opt_examples(line, tmp_path):
    r = _run(shlex.split(line)[1:], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() or "--verify-diagnostics" in line  # a check that passes prints nothing


def test_pipeline_syntax_example(tmp_path):
    pipe = re.search(r"Pipeline syntax:.*?`'([^']+)'`", README, re.S).group(1)
    r = _run(["examples/bias_gelu.mlir", "-p", pipe], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]


def test_examples_are_listed():
    assert len(_fuser_opt_lines()) >= 6


def test_python_api_examples(tmp_path, monkeypatch):
    """The Python API blocks run in order, in one namespace, up to their GPU calls (the lines
    marked `# GPU`), which the GPU tests cover."""
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path / "cache"))
    blocks = re.findall(r"```python\n(.*?)```", README.split("## Python API", 1)[1].split("\n## ", 1)[0], re.S)
    assert len(blocks) >= 2
    ns: dict = {}
    for code in blocks:
        exec("\n".join(ln for ln in code.splitlines() if "# GPU" not in ln), ns)  # noqa: S102
    assert "fusion.matmul" in ns["fb"].mlir() and "sched.kernel" in ns["k"].ir("sched")


def test_list_passes_specs_parse():
    """`fuser-opt --list-passes` prints every pass with its defaults in the syntax the pipeline
    parser takes, so a user can paste any line into -p."""
    from fuser.passes.pipeline import build_pipeline
    from fuser.passes.registry import available_passes
    from fuser.tools.fuser_opt import describe_passes, pass_spec

    text = describe_passes()
    for name, load in available_passes().items():
        spec = pass_spec(load())
        assert f"  {spec}\n" in text + "\n"
        assert [p.name for p in build_pipeline(spec)] == [name]


def test_error_example(tmp_path):
    """The README's error example is examples/bad.mlir, and prints exactly what the README shows."""
    block = README.split("Errors are MLIR-style and exit non-zero:", 1)[1].split("```", 2)[1]
    cmd, shown = [ln for ln in block.splitlines() if ln.strip()][:2]
    r = _run(shlex.split(cmd.removeprefix("$ "))[1:], tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip() == shown.strip()


def test_no_reference_outside_the_repository():
    """Docs point at files in the repository, never at ../shared or other outside paths."""
    for path in ["README.md"] + [os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))]:
        text = open(os.path.join(ROOT, path)).read()
        assert "../shared" not in text and "shared/PERF.md" not in text, path


def _sh_lines(prefixes: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """Every line of every ```sh block that starts with one of `prefixes`, with the `#   ` comment
    lines that follow it (the output the README shows)."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        lines = block.splitlines()
        for i, ln in enumerate(lines):
            if ln.startswith(prefixes):
                shown = []
                for nxt in lines[i + 1:]:
                    if not nxt.startswith("#   "):
                        break
                    shown.append(nxt[4:].strip())
                out.append((ln.split("  #")[0].strip(), shown))
    return out


@pytest.mark.parametrize("line,shown", _sh_lines(("fuser-opt ",)), ids=lambda x: x if isinstance(x, str) else "")
def test_every_fuser_opt_command(line, shown, tmp_path):
    """Every fuser-opt command in the README's sh blocks (pipes included) runs, and where the
    README shows output under it, that output's words are there."""
    env = dict(os.environ, FUSER_CACHE_DIR=str(tmp_path / "cache"))
    cmd = line.replace("fuser-opt ", f"{shlex.quote(sys.executable)} -m fuser.tools.fuser_opt ", 1)
    r = subprocess.run(cmd, shell=True, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)  # noqa: S602
    assert r.returncode == 0, r.stderr[-2000:]
    text = " ".join(shown)  # what the README shows: its quoted strings and launch geometry must be there
    for part in re.findall(r'"([^"]+)"', text) + re.findall(r"grid \[[^\]]*\] block \[[^\]]*\]", text):
        assert part in r.stdout, (part, r.stdout[-2000:])
