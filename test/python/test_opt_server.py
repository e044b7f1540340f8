"""The warm fuser-opt server (tools/opt_server.py) that the lit suite runs fuser-opt through: a
call through it gives the same output, exit status and diagnostics as a call of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SORT = ROOT / "test" / "lit" / "fusion-to-sched" / "sort.mlir"
BAD = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = fusion.nope %a\n}\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sock = str(tmp_path_factory.mktemp("srv") / "opt.sock")
    proc = subprocess.Popen([sys.executable, "-m", "fuser.tools.opt_server", sock])
    deadline = time.monotonic() + 120
    while not os.path.exists(sock):
        assert proc.poll() is None, "the server exited while starting"
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield sock
    proc.terminate()
    proc.wait()
    assert not os.path.exists(sock), "the server leaves no socket behind"


def fuser_opt(args, sock=None, stdin=None, env=None, cwd=None):
    environ = {k: v for k, v in os.environ.items() if k != "FUSER_OPT_SERVER"}
    if sock:
        environ["FUSER_OPT_SERVER"] = sock
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "fuser.tools.fuser_opt", *args], input=stdin, capture_output=True,
                          text=True, env=environ, cwd=cwd)


@pytest.mark.parametrize("args, stdin", [
    ([str(SORT)], None),
    ([str(SORT), "--split-input-file", "-p", "fusion-segment,convert-fusion-to-sched"], None),
    (["-"], BAD),                       # a diagnostic read from standard input, exit status 1
    (["--no-such-flag"], None),         # argparse's usage error, exit status 2
    ([str(SORT), "-p", "no-such-pass"], None),
    (["--version"], None),
])
def test_a_call_through_the_server_is_the_same_as_one_of_its_own(server, args, stdin):
    alone = fuser_opt(args, stdin=stdin)
    served = fuser_opt(args, server, stdin=stdin)
    assert (served.returncode, served.stdout, served.stderr) == (alone.returncode, alone.stdout, alone.stderr)


def test_the_server_runs_the_call_in_the_callers_directory(server, tmp_path):
    (tmp_path / "in.mlir").write_text(SORT.read_text())
    out = fuser_opt(["in.mlir", "-o", "out.mlir"], server, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "sched" not in (tmp_path / "out.mlir").read_text() and "@sort_rows" in (tmp_path / "out.mlir").read_text()


def test_without_a_server_at_the_path_fuser_opt_runs_alone(tmp_path):
    out = fuser_opt([str(SORT)], str(tmp_path / "nobody.sock"))
    assert out.returncode == 0 and "@sort_rows" in out.stdout


def test_the_lit_configuration_starts_the_server():
    text = (ROOT / "test" / "lit.cfg.py").read_text()
    assert "fuser.tools.opt_server" in text and "FUSER_OPT_SERVER" in text
