"""fuser-opt's mlir-opt habits: --time-passes and --verify-diagnostics with `expected-error`
annotations (the lit tests in test/lit/fuser-opt/ cover the common cases; these the corners)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fuser.tools.fuser_opt import main, make_arg_parser, parse_expectations

ROOT = Path(__file__).resolve().parents[2]

KERNEL_OK = """sched.kernel @ok() grid [1, 1, 1] block [32, 1, 1] smem 0 {
  sched.return
}
"""
# The verifier rejects line 1 (col 1): 2048 threads.
KERNEL_BIG = """sched.kernel @big() grid [1, 1, 1] block [1024, 2, 1] smem 0 {
  sched.return
}
"""


def _opt(capsys, tmp_path, text: str, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "in.mlir"
    path.write_text(text)
    rc = main([str(path), *args])
    out, err = capsys.readouterr()
    return rc, out, err.replace(str(path), "in.mlir")


def _timing_rows(err: str) -> list[tuple[float, float, str]]:
    return [(float(s), float(p), name) for s, p, name in
            re.findall(r"^ +(\d+\.\d{4}) \( *(\d+\.\d)%\)  (.+)$", err, re.M)]


def test_help_documents_the_flags():
    text = make_arg_parser().format_help()
    assert "--time-passes" in text and "expected-error" in text


def test_time_passes_rows_in_pipeline_order(capsys, tmp_path):
    src = (ROOT / "examples" / "row_sum.mlir").read_text()
    rc, out, err = _opt(capsys, tmp_path, src, "-p", "to-sched", "--time-passes")
    assert rc == 0 and "sched.kernel" in out and "Execution time report" not in out  # the table goes to stderr
    rows = _timing_rows(err)
    names = [name for _, _, name in rows]
    assert names == ["parse", "canonicalize", "fusion-layouts", "fusion-fold-empty", "fusion-sort-scatters", "fusion-sink-reshapes", "fusion-approx-exp", "fusion-split-k", "fusion-segment",
                     "convert-fusion-to-sched",
                     "sched-verify-buffers", "sched-flush-wgmma", "sched-insert-bulk-syncs", "sched-alias-smem", "sched-dependent-launch", "cse",
                     "verify", "print", "rest", "Total"]
    total = rows[-1][0]
    assert rows[-1][1] == 100.0 and f"Total Execution Time: {total:.4f} seconds" in err
    assert sum(s for s, _, _ in rows[:-1]) == pytest.approx(total, abs=1e-3)  # the rows add up to the total


def test_time_passes_after_a_failure(capsys, tmp_path):
    """A failed run still reports where the time went, and still fails."""
    rc, _, err = _opt(capsys, tmp_path, KERNEL_BIG, "--time-passes")
    assert rc == 1 and "in.mlir:1:1: error: 'sched.kernel' op @big" in err
    assert [name for _, _, name in _timing_rows(err)] == ["parse", "verify", "print", "rest", "Total"]


def test_no_annotations_keeps_the_old_behaviour(capsys, tmp_path):
    """Diagnostics go to stdout and the exit is 0, whatever they say."""
    rc, out, err = _opt(capsys, tmp_path, KERNEL_BIG, "--verify-diagnostics")
    assert rc == 0 and err == "" and "in.mlir:1:1: error: 'sched.kernel' op @big" in out


def test_annotations_are_ignored_without_verify_diagnostics(capsys, tmp_path):
    rc, out, err = _opt(capsys, tmp_path, "// expected-error@+1 {{exceeds 1024}}\n" + KERNEL_BIG)
    assert rc == 1 and "in.mlir:2:1: error: 'sched.kernel' op @big" in err


def test_matched_diagnostics_are_not_printed(capsys, tmp_path):
    text = "// expected-error@+1 {{exceeds 1024}}\n" + KERNEL_BIG + "// -----\n" + KERNEL_OK
    rc, out, err = _opt(capsys, tmp_path, text, "--split-input-file", "--verify-diagnostics")
    assert rc == 0 and err == "" and "error" not in out and "sched.kernel @ok" in out


def test_annotated_and_plain_chunks_side_by_side(capsys, tmp_path):
    """Only the annotated chunk is checked; the plain one prints its diagnostic as before."""
    text = KERNEL_BIG + "// -----\n// expected-error@+1 {{no such error}}\n" + KERNEL_OK
    rc, out, err = _opt(capsys, tmp_path, text, "--split-input-file", "--verify-diagnostics")
    assert rc == 1
    assert "in.mlir:1:1: error: 'sched.kernel' op @big" in out
    assert err == 'in.mlir:5:4: error: expected error "no such error" was not produced\n'


def test_unknown_location(capsys, tmp_path):
    """A diagnostic without a line (here -t ptx on IR with no kernels) matches `@unknown`, and
    is reported without a line when unexpected."""
    src = (ROOT / "examples" / "row_sum.mlir").read_text()
    rc, _, err = _opt(capsys, tmp_path, "// expected-error@unknown {{needs nvvm-level IR}}\n" + src,
                      "-t", "ptx", "--verify-diagnostics")
    assert rc == 0 and err == ""
    rc, _, err = _opt(capsys, tmp_path, "// expected-error {{needs nvvm-level IR}}\n" + src,
                      "-t", "ptx", "--verify-diagnostics")
    assert rc == 1
    assert err.splitlines() == [
        "in.mlir: error: unexpected error: -t ptx needs nvvm-level IR (a gpu.module with kernels); "
        "run the lowering first, e.g. -p default",
        'in.mlir:1:4: error: expected error "needs nvvm-level IR" was not produced']


def test_pass_failure_is_matched(capsys, tmp_path):
    text = """func.func @mm(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %c = fusion.matmul %a, %b : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32> // expected-error {{the Hopper matmul takes bf16, f16, f8E4M3FN or f8E5M2}}
  func.return %c : tensor<64x16xf32>
}
"""
    rc, _, err = _opt(capsys, tmp_path, text, "-p", "fusion-segment,convert-fusion-to-sched", "--verify-diagnostics")
    assert rc == 0 and err == ""


def test_annotation_lines():
    """Lines are file lines (the chunk's offset added); @above/@below skip annotation lines."""
    text = "\n".join([
        "a",                                   # 11
        "// expected-error@below {{b1}}",      # 12
        "// expected-note@below {{b2}}",       # 13
        "b",                                   # 14
        "// expected-warning@above {{a1}}",    # 15
        "c // expected-error {{here}}",        # 16
        "// expected-error@-6 {{minus}}",      # 17
        "// expected-error@+3 {{plus}}",       # 18
        "// expected-error@unknown {{nowhere}}",
        "// CHECK: expected-error without braces is prose",
    ])
    expected, complaints = parse_expectations(text, "f.mlir", 10)
    assert complaints == []
    assert [(x.severity, x.message, x.line) for x in expected] == [
        ("error", "b1", 14), ("note", "b2", 14), ("warning", "a1", 14), ("error", "here", 16),
        ("error", "minus", 11), ("error", "plus", 21), ("error", "nowhere", None)]
    assert expected[0].where == "f.mlir:12:4"


def test_a_space_before_the_at_reads_the_same():
    """mlir-opt accepts `expected-error @+1 {{...}}` as well as `expected-error@+1`; an annotation
    written that way must be checked, not read as prose (test/lit/nvvm/invalid.mlir was)."""
    expected, complaints = parse_expectations("// expected-error @+1 {{m}}\nx\n// expected-note @above {{n}}",
                                              "f.mlir", 0)
    assert complaints == [] and [(x.severity, x.message, x.line) for x in expected] == [
        ("error", "m", 2), ("note", "n", 2)]


@pytest.mark.parametrize("line, complaint", [
    ("// expected-error@+x {{m}}", "f.mlir:1:4: error: malformed expected-error annotation"),
    ("// expected-error-re {{m}}", "f.mlir:1:4: error: malformed expected-error annotation"),
    ("// expected-note {{open", "f.mlir:1:4: error: malformed expected-note annotation"),
    ("// expected-error@above {{m}}", "f.mlir:1:4: error: no line above for '@above' to refer to"),
])
def test_malformed_annotations(line, complaint):
    expected, complaints = parse_expectations(line, "f.mlir", 0)
    assert expected == [] and len(complaints) == 1 and complaints[0].startswith(complaint)


def test_help_and_version_load_no_compiler():
    """`fuser-opt --help` and `--version` answer without importing xDSL, numpy or any dialect
    (that import is most of a run's start-up: ~0.4 s of the 0.45 s --help took before)."""
    import subprocess
    import sys

    code = ("import sys\nfrom fuser.tools.fuser_opt import main\n"
            "for argv in (['--help'], ['--version']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('xdsl', 'numpy') "
            "or m.startswith('fuser.dialects'))\n"
            "assert not heavy, heavy\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-1500:]
    assert "named pipelines:" in r.stdout and "fuser-opt " in r.stdout


def test_closed_pipe_is_not_a_traceback():
    """`fuser-opt ... | head`: the reader closes the pipe early; fuser-opt exits quietly."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "fuser.tools.fuser_opt", "--list-passes"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()  # like `head -1`
    err = p.stderr.read().decode()
    assert p.wait() == 0 and "Traceback" not in err, err


def test_a_translation_error_is_a_diagnostic_not_a_traceback(tmp_path):
    """An op the LLVM IR translation does not handle: `-t ptx` says which, where, and exits 1."""
    import subprocess
    import sys

    f = tmp_path / "cbrt.mlir"
    f.write_text('''module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    llvm.func @f() attributes {nvvm.kernel} {
      %a = arith.constant 1.0 : f64
      %b = math.cbrt %a : f64
      llvm.return
    }
  }) : () -> ()
}
''')
    r = subprocess.run([sys.executable, "-m", "fuser.tools.fuser_opt", str(f), "-t", "ptx"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"{f}: error: -t ptx: cannot translate 'math.cbrt' (in @f at {f}:5:7)")
