"""Bad input gets a located diagnostic and a non-zero exit, fast, never a traceback or a hang
(regressions from issue 11's first attacks), and deep fusions compile without recursing on the
op count.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from fuser.dialects.ir import FuserDiagnostic, check_strings, decode_source, parse_module
from fuser.lowering.target.ptx import assemble_ptx, find_ptxas
from fuser.passes.pipeline import build_pipeline, run_passes
from fuser.tools.fuser_opt import main as fuser_opt_main

ROOT = Path(__file__).resolve().parents[2]
FUSER_OPT = [sys.executable, "-m", "fuser.tools.fuser_opt"]


def _opt(path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(FUSER_OPT + [str(path), *args], capture_output=True, text=True, timeout=timeout)


def test_non_utf8_bytes_are_a_located_error(tmp_path):
    good = (ROOT / "examples" / "row_sum.mlir").read_bytes()
    at = good.index(b"fusion.reduce")
    bad = tmp_path / "bad.mlir"
    bad.write_bytes(good[:at] + b"\xff" + good[at + 1:])
    line = good[:at].count(b"\n") + 1
    col = at - good[:at].rfind(b"\n")
    r = _opt(bad)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"{bad}:{line}:{col}: error: byte 0xff is not valid UTF-8 (MLIR text must be UTF-8)"


def test_decode_source_points_at_the_byte():
    with pytest.raises(FuserDiagnostic, match=r"^f.mlir:2:3: error: byte 0xc3 is not valid UTF-8"):
        decode_source(b"ok\nab\xc3(\n", "f.mlir")


def test_unterminated_string_is_refused_at_once(tmp_path):
    """xDSL's string-literal regex backtracks exponentially on an open string: a one-byte
    corruption of a lit test made fuser-opt spin for minutes."""
    text = (ROOT / "test" / "lit" / "fusion" / "matmul-split-k.mlir").read_text()
    bad = tmp_path / "open-string.mlir"
    bad.write_text(text.replace('{fuser.split_k = "note"} :', '{fuser.split_k = "note} :'))
    r = _opt(bad, timeout=30)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "error: string literal not closed on its line" in r.stderr
    assert f"{bad}:15:" in r.stderr


@pytest.mark.parametrize("line,ok", [
    ('%a = "x" // "open', True),
    ('%a = "esc \\" quote"', True),
    ('// only a "comment', True),
    ('%a = 1 / 2', True),
    ('%a = "open', False),
    ('%a = "x" "y', False),
])
def test_check_strings(line, ok):
    if ok:
        check_strings(line, "f.mlir")
    else:
        with pytest.raises(FuserDiagnostic, match=r"^f.mlir:1:\d+: error: string literal not closed"):
            check_strings(line, "f.mlir")


def _chain(n: int) -> str:
    lines = ["func.func @deep(%x: tensor<64x96xf32>) -> (tensor<64x96xf32>, tensor<64xf32>) {"]
    prev, prev2 = "%x", "%x"
    for i in range(n):
        if i % 5 == 4:
            lines.append(f"  %v{i} = fusion.add {prev}, {prev2} : tensor<64x96xf32>")
        else:
            lines.append(f"  %v{i} = fusion.{'tanh' if i % 3 == 0 else 'neg'} {prev} : tensor<64x96xf32>")
        prev2, prev = prev, f"%v{i}"
    lines += [f"  %s = fusion.reduce sum {prev} dims [1] : tensor<64x96xf32> to tensor<64xf32>",
              "  %b = fusion.broadcast %s dims [1] : tensor<64xf32> to tensor<64x96xf32>",
              f"  %y = fusion.sub {prev}, %b : tensor<64x96xf32>",
              "  func.return %y, %s : tensor<64x96xf32>, tensor<64xf32>", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("n", [400, 1500])
def test_deep_fusions_compile_without_recursing_on_the_op_count(n):
    m = parse_module(_chain(n))
    run_passes(build_pipeline("to-sched"), m, verify_each=False)  # normalization + a long chain
    assert sum(1 for op in m.walk() if op.name == "math.tanh") >= n // 3


def test_pow_compiles_to_ptx():
    """fusion.pow has no NVPTX powf: it is expanded into exp2/log2 with C's special cases."""
    from fuser.lowering.target.ptx import module_to_ptx

    m = parse_module("""
func.func @p(%x: tensor<1024xf32>, %y: tensor<1024xf32>) -> tensor<1024xf32> {
  %z = fusion.pow %x, %y : tensor<1024xf32>
  func.return %z : tensor<1024xf32>
}""")
    run_passes(build_pipeline("default"), m, verify_each=False)
    ptx = module_to_ptx(m, "sm_90a")
    assert "ex2.approx" in ptx and "lg2.approx" in ptx
    if find_ptxas() is not None:
        assert assemble_ptx(ptx, "sm_90a")[:4] == b"\x7fELF"


def test_a_segment_set_feeding_var_mean_compiles():
    """A segment_set's value is materialized; var_mean reads it (was: "cannot be recomputed")."""
    from fuser import api

    k = api.compile("""
func.func @s(%x: tensor<64x96xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %t = fusion.tanh %x : tensor<64x96xf32>
  %g = fusion.segment_set %t : tensor<64x96xf32> to tensor<64x96xf32>
  %v, %m = fusion.var_mean %g dims [1] correction 0 : tensor<64x96xf32> to tensor<64xf32>, tensor<64xf32>
  func.return %v, %m : tensor<64xf32>, tensor<64xf32>
}""")
    assert len(k.program.launches) == 2 and ".entry" in k.ptx


def test_the_matmul_example_allocates_no_workspace():
    """The matmul example's plan had a 4096x4096 f32 workspace that no kernel used."""
    from fuser import api

    k = api.compile(ROOT / "examples" / "matmul_bias_gelu.mlir")
    assert k.program.workspaces == [] and len(k.program.launches) == 1


@pytest.mark.parametrize("option,message", [
    ("block=x", "option 'block' takes an integer, got 'x'"),
    ("persistent=maybe", "option 'persistent' takes true or false, got 'maybe'"),
    ("sms=true", "option 'sms' takes an integer, got True"),
])
def test_option_type_errors_name_the_option(option, message):
    from fuser.passes.pipeline import PipelineError

    with pytest.raises(PipelineError, match=f"bad options for pass 'convert-fusion-to-sched': {message}"):
        build_pipeline(f"convert-fusion-to-sched{{{option}}}")


def test_compile_reads_a_path(tmp_path):
    import fuser

    k = fuser.compile(str(ROOT / "examples" / "row_sum.mlir"))
    assert k.name == "row_stats"
    with pytest.raises(FileNotFoundError, match="neither MLIR text nor a readable file"):
        fuser.compile(str(tmp_path / "missing.mlir"))


def test_builder_shape_errors_are_type_errors():
    import fuser

    with pytest.raises(TypeError, match="shape must be an int or a sequence of ints, got 'abc'"):
        fuser.FusionBuilder("f").input("abc")


def test_fuser_opt_tool_habits(tmp_path):
    """--version; '-' reads stdin; a failed run leaves an existing -o file alone; an unwritable
    -o is an error, not a traceback; a misspelt pipeline lists the named ones."""
    r = subprocess.run(FUSER_OPT + ["--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("fuser-opt ")
    src = (ROOT / "examples" / "row_sum.mlir").read_text()
    r = subprocess.run(FUSER_OPT + ["-", "-p", "to-sched"], input=src, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "sched.kernel @row_stats_k0" in r.stdout
    out = tmp_path / "out.mlir"
    out.write_text("keep")
    bad = tmp_path / "bad.mlir"
    bad.write_text(src.replace("fusion.reduce", "fusion.reduc"))
    r = _opt(bad, "-o", str(out))
    assert r.returncode == 1 and out.read_text() == "keep"
    r = _opt(ROOT / "examples" / "row_sum.mlir", "-o", str(tmp_path / "no" / "such" / "dir.mlir"))
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr
    r = _opt(ROOT / "examples" / "row_sum.mlir", "-p", "defualt")
    assert r.returncode == 2 and "named pipelines: default, to-sched" in r.stderr


def test_diagnostic_on_a_huge_line_quotes_a_window_of_it(tmp_path):
    """A minified file is one line of megabytes: the diagnostic quotes 160 characters around the
    error, caret under it, not the whole line twice."""
    ops = [f"%y{i} = fusion.exp %x : tensor<4xf32>" for i in range(20000)]
    ops[10000] = "%y10000 = fusion.bogus %x : tensor<4xf32>"
    text = "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> { " + " ".join(ops) + " func.return %x : tensor<4xf32> }"
    path = tmp_path / "oneline.mlir"
    path.write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert fuser_opt_main([str(path)]) == 1
    msg = err.getvalue()
    assert msg.startswith(f"{path}:1:") and "fusion.bogus is not registered" in msg and len(msg) < 1000, msg[:300]
    col = int(msg.split(":")[2])  # 1-based, in the whole line
    src, caret = msg.splitlines()[1:3]
    assert src.startswith("...") and src.endswith("...") and len(src) == 166 and "fusion.bogus" in src
    at = caret.index("^")  # the caret stands under the character the location names
    start = text.index(src[3:-3])
    assert at - 3 == col - 1 - start


def test_diagnostics_of_a_50_mb_one_line_file_stay_small(tmp_path):
    """A 50 MB input on one line (an error at its start, the rest of the line after it) gives a
    diagnostic of a few hundred bytes, not one that quotes the line."""
    path = tmp_path / "huge.mlir"
    path.write_text("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> { %z = fusion.bogus %x : tensor<4xf32> // "
                    + "x" * 50_000_000 + "\n}\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert fuser_opt_main([str(path)]) == 1
    msg = err.getvalue()
    assert "fusion.bogus is not registered" in msg and len(msg) < 1000, msg[:300]


def test_every_diagnostic_line_is_bounded():
    """Whatever builds the message (a verifier quoting a type of 10^6 dims, a pass naming an
    op), each of its lines keeps its start and end and leaves the middle out."""
    from fuser.dialects.ir import MESSAGE_LINE_CHARS, FuserDiagnostic

    huge = "tensor<" + "1x" * 25_000_000 + "f32>"
    e = FuserDiagnostic(f"f.mlir:1:2: error: 'fusion.exp' op result type {huge}, expected tensor<4xf16>\nnote: short")
    first, second = str(e).split("\n")
    assert first.startswith("f.mlir:1:2: error: 'fusion.exp' op result type tensor<1x1x")
    assert first.endswith("1x1xf32>, expected tensor<4xf16>") and "characters left out" in first
    assert len(first) < MESSAGE_LINE_CHARS + 60 and second == "note: short"
    assert str(FuserDiagnostic("x" * MESSAGE_LINE_CHARS)) == "x" * MESSAGE_LINE_CHARS  # short enough: as is


@pytest.mark.parametrize("bad, where", [
    ("tensor<4xf32", "1:49: error: Expected '>'"),  # the '>' missing after a type already seen whole
    ("tensor<4xf32, 7>", "2:3: error: 'func.return' op"),  # an encoding: not a plain type, parsed by xDSL
    ("tensor<4xnope>", "1:45: error:"),               # an element type nobody defines
])
def test_type_cache_leaves_malformed_types_to_the_parser(bad, where):
    """Plain tensor types are looked up by their text once parsed (dialects/ir.py); a malformed
    one that begins like a cached type is still a located parse error, and a well-formed one
    gives the same type as before."""
    good = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %a : tensor<4xf32>\n}\n"
    first = parse_module(good, "good.mlir")
    assert parse_module(good, "good.mlir").body.block.first_op.function_type == first.body.block.first_op.function_type
    with pytest.raises(FuserDiagnostic) as e:
        parse_module(good.replace("-> tensor<4xf32> {", f"-> {bad} {{"), "bad.mlir")
    assert str(e.value).startswith(f"bad.mlir:{where}")


def test_verification_remembers_only_what_an_op_alone_decides():
    """verify_module keeps the signatures of ops it has verified across calls (a pipeline verifies
    the same ops after every pass). An op whose verifier reads its surroundings is never taken
    from that memory: the same `sched.cluster.barrier`, valid in a cluster kernel, is an error in
    a kernel without a cluster; the same `func.call`, valid beside its callee, is an error
    without it."""
    from fuser.dialects.ir import FuserDiagnostic, parse_module

    cluster = """sched.kernel @k() grid [2, 1, 1] block [128, 1, 1] smem 0 {cl} {{
  sched.cluster.barrier
  sched.return
}}"""
    parse_module(cluster.format(cl="cluster [2, 1, 1]"))
    with pytest.raises(FuserDiagnostic, match="'sched.cluster.barrier' op needs a sched.kernel launched with a cluster"):
        parse_module(cluster.format(cl=""))
    callee = "func.func private @g(%x: f32) -> f32 {\n  func.return %x : f32\n}\n"
    call = "func.func @f(%x: f32) -> f32 {\n  %y = func.call @g(%x) : (f32) -> f32\n  func.return %y : f32\n}\n"
    parse_module(callee + call)
    with pytest.raises(FuserDiagnostic, match="@g"):
        parse_module(call)
