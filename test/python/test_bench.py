"""fuser-bench on a machine without a GPU (or torch): the registry, --list, and the no-GPU exit.

Timing is never asserted here (PERF.md: a timing assertion is a flaky test); the GPU run is the
benchmark itself, read by people.
"""

import json
import subprocess
import sys

import pytest

from fuser.passes.ir import parse_module
from fuser.tools import bench


def _mlir_workloads():
    return [w for w in bench.WORKLOADS if w.mlir is not None]


@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
@pytest.mark.parametrize("w", _mlir_workloads(), ids=lambda w: w.name)
def test_workload_mlir_parses_and_verifies(w, quick):
    text = w.mlir_text(quick)
    module = parse_module(text)  # verifies too
    func = next(op for op in module.walk() if op.name == "func.func")
    in_types = [str(t) for t in func.function_type.inputs.data]
    expect = [bench.ttype(s, d) for s, d in w.inputs(w.shape_for(quick), w.dtype)]
    assert in_types == expect, "the MLIR signature must match the inputs the harness creates"


def test_registry_is_consistent():
    names = [w.name for w in bench.WORKLOADS]
    assert len(names) == len(set(names))
    families = {w.family for w in bench.WORKLOADS}
    assert {"copy", "pointwise", "row_sum", "col_sum", "sum_all"} <= families
    assert sum(1 for w in bench.WORKLOADS if w.family == "copy") == 1
    for w in bench.WORKLOADS:
        assert w.dtype in bench.ELEM_BYTES
        assert bench.nbytes(w.quick_shape, w.dtype) <= bench.nbytes(w.shape, w.dtype)
        assert w.rtol == (1e-2 if w.dtype == "bf16" else 1e-5 if w.family in ("pointwise", "copy") else 1e-4)
        if w.family == "pointwise":  # PERF.md's pointwise target is stated at >= 256 MB of traffic
            assert w.bytes_moved(w.shape, w.dtype) >= 256 * 10**6


def test_bytes_and_rates():
    row = next(w for w in bench.WORKLOADS if w.name == "row_sum_bf16_32768x4096")
    assert row.bytes_moved(row.shape, "bf16") == 32768 * 4096 * 2 + 32768 * 2
    gelu = next(w for w in bench.WORKLOADS if w.name == "bias_gelu_f32")
    r, c = gelu.shape
    assert gelu.bytes_moved(gelu.shape, "f32") == 3 * r * c * 4 + c * 4
    copy = next(w for w in bench.WORKLOADS if w.family == "copy")
    assert copy.bytes_moved(copy.shape, "f32") == 4 * 2**30  # 2 GiB read + 2 GiB written
    assert bench.rate_of(copy, copy.shape, 1.0) == pytest.approx(4 * 2**30 / 1e-3 / 1e9)


def test_select_by_regex():
    assert {w.family for w in bench.select("row_sum")} == {"row_sum"}
    assert [w.name for w in bench.select("^scale_bf16$")] == ["scale_bf16"]
    assert len(bench.select(None)) == len(bench.WORKLOADS)


def test_list(capsys):
    assert bench.main(["--list"]) == 0
    out = capsys.readouterr().out
    for w in bench.WORKLOADS:
        assert w.name in out


def test_list_filtered(capsys):
    assert bench.main(["--list", "--filter", "col_sum_bf16"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 + 3 and all("col_sum_bf16" in line for line in lines[1:])


def test_show_mlir(capsys):
    assert bench.main(["--show-mlir", "--filter", "^sum_all_bf16$"]) == 0
    out = capsys.readouterr().out
    assert "fusion.reduce sum %x dims [0] : tensor<536870912xbf16> to tensor<f32>" in out
    assert "fusion.cast %s : tensor<f32> to tensor<bf16>" in out


def test_bad_filter(capsys):
    assert bench.main(["--filter", "nothing-matches-this"]) == 2
    assert "no workload matches" in capsys.readouterr().err


def test_no_gpu_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(bench, "gpu_problem", lambda: "no NVIDIA GPU/driver found: test")
    assert bench.main(["--quick"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fuser-bench needs an NVIDIA GPU: no NVIDIA GPU/driver found")


def test_missing_torch_is_reported(monkeypatch):
    from fuser.runtime import driver

    monkeypatch.setattr(driver, "require_gpu", lambda: None, raising=False)
    monkeypatch.setattr(driver, "gpu_available", lambda: True)
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    problem = bench.gpu_problem()
    assert problem is not None and "torch" in problem


def test_real_environment_without_gpu_exits_2_without_traceback():
    from fuser.runtime.driver import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present: the no-GPU path cannot be seen here")
    proc = subprocess.run([sys.executable, "-m", "fuser.tools.bench", "--quick", "--filter", "scale_f32"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "fuser-bench needs an NVIDIA GPU: " in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_import_does_not_load_torch():
    code = "import sys, fuser.tools.bench; assert not {'torch', 'triton', 'matplotlib'} & set(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def _fake_rows():
    ws = {w.name: w for w in bench.WORKLOADS}
    ok = bench.RowResult(ws["scale_f32"], ws["scale_f32"].shape, status="ok",
                         fuser=bench.PeerResult(ms=1.0, rate=4000.0, rel_err=0.0),
                         eager=bench.PeerResult(ms=1.1, rate=3636.0),
                         compile=bench.PeerResult(error="RuntimeError: boom"), pct_ceiling=95.0)
    fail = bench.RowResult(ws["row_sum_f32_32768x4096"], (1024, 4096), status="FAIL",
                           fuser=bench.PeerResult(error="relative error 0.5 > 0.0001", rel_err=0.5),
                           eager=bench.PeerResult(ms=0.2, rate=3000.0), compile=bench.PeerResult(ms=0.25, rate=2400.0))
    anchor_w = ws["copy_f32"]
    anchor = bench.RowResult(anchor_w, anchor_w.shape, status="anchor", eager=bench.PeerResult(ms=1.0, rate=4200.0),
                             compile=bench.PeerResult(error="not a peer for this workload"), pct_ceiling=100.0)
    return [anchor, ok, fail]


def test_table_and_notes_from_results():
    rows = _fake_rows()
    text = bench.format_table(rows)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["workload", "shape", "dtype"]
    ok_line = next(line for line in lines if line.startswith("scale_f32"))
    assert "4000" in ok_line and "1.10x" in ok_line and "n/a" in ok_line and "95%" in ok_line
    fail_line = next(line for line in lines if line.startswith("row_sum_f32"))
    assert "FAIL" in fail_line and "1024x4096" in fail_line
    md = bench.format_table(rows, markdown=True)
    assert md.splitlines()[0].startswith("| workload |") and len(md.splitlines()) == 2 + len(rows)
    n = bench.notes(rows)
    assert any("row_sum_f32_32768x4096: fuser FAIL" in line for line in n)
    assert any("scale_f32: torch.compile n/a: RuntimeError: boom" in line for line in n)


def test_json_from_results(tmp_path):
    path = tmp_path / "out" / "bench.json"
    bench.write_json(str(path), _fake_rows(), bench.environment(), {"quick": True}, 4200.0)
    doc = json.loads(path.read_text())
    assert doc["copy_gbps"] == 4200.0 and doc["env"]["date"]
    by_name = {r["name"]: r for r in doc["rows"]}
    assert by_name["scale_f32"]["fuser_over_eager"] == pytest.approx(1.1)
    assert by_name["scale_f32"]["compile"]["error"] == "RuntimeError: boom"
    assert by_name["row_sum_f32_32768x4096"]["status"] == "FAIL"
    assert by_name["row_sum_f32_32768x4096"]["fuser_over_eager"] is None


def test_png_without_matplotlib_says_so(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    why = bench.draw_png(str(tmp_path / "c.png"), _fake_rows(), "t", 4200.0)
    assert why is not None and "matplotlib" in why
