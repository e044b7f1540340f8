"""fuser-bench (the package fuser.tools.bench) on a machine without a GPU (or torch): the registry,
its FusionBuilder fusions, --list, --show-mlir, the table and JSON, and the no-GPU exit.

Timing is never asserted here (PERF.md: a timing assertion is a flaky test); the GPU run is the
benchmark itself, read by people.
"""

import dataclasses
import json
import subprocess
import sys

import pytest

from fuser.dialects.ir import parse_module
from fuser.tools import bench
from fuser.tools.bench import cli, report, timing
from fuser.tools.bench import workloads as wl


def _mlir_workloads():
    return [w for w in wl.WORKLOADS if w.has_fusion]


@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
@pytest.mark.parametrize("w", _mlir_workloads(), ids=lambda w: w.name)
def test_workload_mlir_parses_and_verifies(w, quick):
    text = w.mlir_text(quick)
    module = parse_module(text)  # verifies too
    func = next(op for op in module.walk() if op.name == "func.func")
    in_types = [str(t) for t in func.function_type.inputs.data]
    expect = [wl.ttype(s, d) for s, d in w.inputs(w.shape_for(quick), w.dtype)]
    assert in_types == expect, "the MLIR signature must match the inputs the harness creates"


def test_workload_is_built_with_the_builder_api():
    """The fusion is a FusionBuilder; its text (what --show-mlir prints and test_matmul_gpu
    compiles) reads back as the same module, and every build is fresh."""
    from fuser.api import FusionBuilder

    for w in _mlir_workloads():
        fb = w.fusion(quick=True)
        assert isinstance(fb, FusionBuilder) and fb.func.sym_name.data == w.name.split("_" + wl.fmt_shape(w.shape))[0]
        assert parse_module(w.mlir_text(quick=True)).is_structurally_equivalent(fb.module), w.name
        assert w.fusion(quick=True) is not fb
    anchor = next(w for w in wl.WORKLOADS if w.family == "copy")
    assert not anchor.has_fusion and anchor.fusion() is None and anchor.mlir_text() is None


def test_builder_ir_golden_lines():
    """A few lines of the built IR, spelled out: the ops, their SSA names and types."""
    text = _by_name("bias_gelu_bf16").mlir_text(quick=True)
    for line in ("%xf = fusion.cast %x : tensor<1024x4096xbf16> to tensor<1024x4096xf32>",
                 "%bb = fusion.broadcast %bf dims [0] : tensor<4096xf32> to tensor<1024x4096xf32>",
                 '%g = fusion.gelu %s {approximate = "tanh"} : tensor<1024x4096xf32>',
                 "%o = fusion.cast %g : tensor<1024x4096xf32> to tensor<1024x4096xbf16>"):
        assert line in text
    text = _by_name("matmul_bias_relu_bf16_8192x8192x8192").mlir_text(quick=True)
    for line in ("%c = fusion.matmul %a, %b : tensor<512x512xbf16>, tensor<512x512xbf16> -> tensor<512x512xf32>",
                 "%bias_f = fusion.cast %bias : tensor<512xbf16> to tensor<512xf32>",
                 "%act = fusion.relu %s : tensor<512x512xf32>",
                 "func.return %o : tensor<512x512xbf16>"):
        assert line in text
    text = _by_name("var_mean_dim0_f32_32768x4096").mlir_text(quick=True)
    assert ("%v, %m = fusion.var_mean %x dims [0] correction 1 : tensor<1024x4096xf32> to tensor<4096xf32>, "
            "tensor<4096xf32>") in text
    text = _by_name("matmul_bf16_4096x4096x4096").mlir_text(quick=True)
    assert "%c = fusion.matmul %a, %b : tensor<256x256xbf16>, tensor<256x256xbf16> -> tensor<256x256xbf16>" in text


def test_package_entry_points():
    """`fuser.tools.bench:main` (the console script), `python3 -m fuser.tools.bench`, and the names
    that callers of the former single module import (test_matmul_gpu: `matmul`)."""
    import importlib.util
    from importlib.metadata import entry_points

    assert bench.main is cli.main
    assert importlib.util.find_spec("fuser.tools.bench.__main__") is not None
    scripts = [ep for ep in entry_points(group="console_scripts") if ep.name == "fuser-bench"]
    if scripts:  # present when fuser is pip-installed (editable or not)
        assert scripts[0].value == "fuser.tools.bench:main" and scripts[0].load() is cli.main
    text = bench.matmul("bias_gelu", (256, 256, 256), (256, 256, 256)).mlir((256, 256, 256), "bf16")
    assert isinstance(text, str) and "fusion.matmul" in text
    for name in bench.__all__:
        assert hasattr(bench, name), name


def test_help_lists_every_option():
    proc = subprocess.run([sys.executable, "-m", "fuser.tools.bench", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0
    for opt in ("--filter", "--quick", "--list", "--show-mlir", "--json", "--png", "--no-compile", "--markdown",
                "--rep-ms", "--peak-tflops"):
        assert opt in proc.stdout


def test_registry_is_consistent():
    names = [w.name for w in wl.WORKLOADS]
    assert len(names) == len(set(names))
    families = {w.family for w in wl.WORKLOADS}
    assert {"copy", "pointwise", "row_sum", "col_sum", "sum_all", "var_mean", "var_mean_dim0", "layer_norm",
            "rms_norm", "matmul", "matmul_bias_relu", "matmul_bias_gelu", "mid_sum", "transpose", "log_softmax"} <= families
    assert sum(1 for w in wl.WORKLOADS if w.family == "copy") == 1
    for w in wl.WORKLOADS:
        assert w.dtype in wl.ELEM_BYTES
        assert wl.nbytes(w.quick_shape, w.dtype) <= wl.nbytes(w.shape, w.dtype)
        if w.family.startswith("matmul"):
            assert w.rtol == 2e-2 and w.dtype == "bf16" and w.unit == "TFLOP/s"
        elif w.family == "log_softmax":  # f32 out from bf16 in: the output's tolerance
            assert w.rtol == 1e-4 and w.unit == "GB/s"
        else:
            assert w.rtol == (1e-2 if w.dtype == "bf16" else 1e-5 if w.family in ("pointwise", "copy", "transpose") else 1e-4)
            assert w.unit == "GB/s"
        assert len(w.scales_for(w.shape)) == len(w.inputs(w.shape, w.dtype))
        if w.family == "pointwise":  # PERF.md's pointwise target is stated at >= 256 MB of traffic
            assert w.bytes_moved(w.shape, w.dtype) >= 256 * 10**6


def test_bytes_and_rates():
    row = next(w for w in wl.WORKLOADS if w.name == "row_sum_bf16_32768x4096")
    assert row.bytes_moved(row.shape, "bf16") == 32768 * 4096 * 2 + 32768 * 2
    gelu = next(w for w in wl.WORKLOADS if w.name == "bias_gelu_f32")
    r, c = gelu.shape
    assert gelu.bytes_moved(gelu.shape, "f32") == 3 * r * c * 4 + c * 4
    copy = next(w for w in wl.WORKLOADS if w.family == "copy")
    assert copy.bytes_moved(copy.shape, "f32") == 4 * 2**30  # 2 GiB read + 2 GiB written
    assert timing.rate_of(copy, copy.shape, 1.0) == pytest.approx(4 * 2**30 / 1e-3 / 1e9)


def test_select_by_regex():
    assert {w.family for w in wl.select("row_sum")} == {"row_sum"}
    assert [w.name for w in wl.select("^scale_bf16$")] == ["scale_bf16"]
    assert len(wl.select(None)) == len(wl.WORKLOADS)


def test_list(capsys):
    assert cli.main(["--list"]) == 0
    out = capsys.readouterr().out
    for w in wl.WORKLOADS:
        assert w.name in out


def test_list_filtered(capsys):
    assert cli.main(["--list", "--filter", "col_sum_bf16"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 + 3 and all("col_sum_bf16" in line for line in lines[1:])


def test_show_mlir(capsys):
    assert cli.main(["--show-mlir", "--filter", "^sum_all_bf16$"]) == 0
    out = capsys.readouterr().out
    assert "fusion.reduce sum %x dims [0] : tensor<536870912xbf16> to tensor<f32>" in out
    assert "fusion.cast %s : tensor<f32> to tensor<bf16>" in out


def test_bad_filter(capsys):
    assert cli.main(["--filter", "nothing-matches-this"]) == 2
    assert "no workload matches" in capsys.readouterr().err


def test_no_gpu_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(timing, "gpu_problem", lambda: "no NVIDIA GPU/driver found: test")
    assert cli.main(["--quick"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fuser-bench needs an NVIDIA GPU: no NVIDIA GPU/driver found")


def test_missing_torch_is_reported(monkeypatch):
    from fuser.runtime import driver

    monkeypatch.setattr(driver, "require_gpu", lambda: None, raising=False)
    monkeypatch.setattr(driver, "gpu_available", lambda: True)
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    problem = timing.gpu_problem()
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
    code = ("import sys, fuser.tools.bench, fuser.tools.bench.cli; "
            "assert not {'torch', 'triton', 'matplotlib'} & set(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def _fake_rows():
    ws = {w.name: w for w in wl.WORKLOADS}
    ok = timing.RowResult(ws["scale_f32"], ws["scale_f32"].shape, status="ok",
                         fuser=timing.PeerResult(ms=1.0, rate=4000.0, rel_err=0.0),
                         eager=timing.PeerResult(ms=1.1, rate=3636.0),
                         compile=timing.PeerResult(error="RuntimeError: boom"), pct_ceiling=95.0)
    fail = timing.RowResult(ws["row_sum_f32_32768x4096"], (1024, 4096), status="FAIL",
                           fuser=timing.PeerResult(error="relative error 0.5 > 0.0001", rel_err=0.5),
                           eager=timing.PeerResult(ms=0.2, rate=3000.0), compile=timing.PeerResult(ms=0.25, rate=2400.0))
    anchor_w = ws["copy_f32"]
    anchor = timing.RowResult(anchor_w, anchor_w.shape, status="anchor", eager=timing.PeerResult(ms=1.0, rate=4200.0),
                             compile=timing.PeerResult(error="not a peer for this workload"), pct_ceiling=100.0)
    return [anchor, ok, fail]


def test_table_and_notes_from_results():
    rows = _fake_rows()
    text = report.format_table(rows)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["workload", "shape", "dtype"]
    ok_line = next(line for line in lines if line.startswith("scale_f32"))
    assert "4000" in ok_line and "1.10x" in ok_line and "n/a" in ok_line and "95%" in ok_line
    fail_line = next(line for line in lines if line.startswith("row_sum_f32"))
    assert "FAIL" in fail_line and "1024x4096" in fail_line
    md = report.format_table(rows, markdown=True)
    assert md.splitlines()[0].startswith("| workload |") and len(md.splitlines()) == 2 + len(rows)
    n = report.notes(rows)
    assert any("row_sum_f32_32768x4096: fuser FAIL" in line for line in n)
    assert any("scale_f32: torch.compile n/a: RuntimeError: boom" in line for line in n)


def test_json_from_results(tmp_path):
    path = tmp_path / "out" / "bench.json"
    report.write_json(str(path), _fake_rows(), report.environment(), {"quick": True}, 4200.0)
    doc = json.loads(path.read_text())
    assert doc["copy_gbps"] == 4200.0 and doc["env"]["date"]
    by_name = {r["name"]: r for r in doc["rows"]}
    assert by_name["scale_f32"]["fuser_over_eager"] == pytest.approx(1.1)
    assert by_name["scale_f32"]["compile"]["error"] == "RuntimeError: boom"
    assert by_name["row_sum_f32_32768x4096"]["status"] == "FAIL"
    assert by_name["row_sum_f32_32768x4096"]["fuser_over_eager"] is None


def test_png_is_drawn(tmp_path):
    """A real chart, when matplotlib is installed: a PNG file, and no error."""
    pytest.importorskip("matplotlib")
    path = tmp_path / "chart.png"
    assert report.draw_png(str(path), _fake_rows(), "t", 4200.0) is None
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_png_without_matplotlib_says_so(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    why = report.draw_png(str(tmp_path / "c.png"), _fake_rows(), "t", 4200.0)
    assert why is not None and "matplotlib" in why


# ----------------------------------------------------------- the normalization and matmul families

NEW_FAMILIES = ("var_mean", "var_mean_dim0", "layer_norm", "rms_norm", "matmul", "matmul_bias_relu",
                "matmul_bias_gelu")


def _by_name(name):
    return next(w for w in wl.WORKLOADS if w.name == name)


def test_new_families_cover_perf_shapes():
    names = {w.name for w in wl.WORKLOADS}
    for dt in ("f32", "bf16"):
        for shape in ("32768x4096", "8192x16384", "262144x1024"):
            assert f"var_mean_{dt}_{shape}" in names
            assert f"layer_norm_{dt}_{shape}" in names
        assert f"var_mean_dim0_{dt}_32768x4096" in names
        assert f"rms_norm_{dt}_32768x4096" in names
    for shape in ("8192x8192x8192", "4096x4096x4096", "2048x2048x8192", "16384x16384x1024",
                  "1024x1024x32768", "512x512x65536", "256x4096x16384", "128x128x131072"):
        assert f"matmul_bf16_{shape}" in names
    assert "matmul_bias_relu_bf16_8192x8192x8192" in names
    assert "matmul_bias_gelu_bf16_4096x4096x4096" in names
    for w in wl.WORKLOADS:
        if w.family in NEW_FAMILIES:  # --quick stays small: a smoke run, and cheap for the interpreter
            assert sum(wl.nbytes(s, d) for s, d in w.inputs(w.quick_shape, w.dtype)) <= 16 * 2**20


def test_new_families_bytes_and_flops():
    vm = _by_name("var_mean_bf16_32768x4096")
    assert vm.bytes_moved(vm.shape, "bf16") == 32768 * 4096 * 2 + 2 * 32768 * 4
    dim0 = _by_name("var_mean_dim0_f32_32768x4096")
    assert dim0.bytes_moved(dim0.shape, "f32") == 32768 * 4096 * 4 + 2 * 4096 * 4
    ln = _by_name("layer_norm_f32_262144x1024")
    assert ln.bytes_moved(ln.shape, "f32") == 2 * 262144 * 1024 * 4 + 2 * 1024 * 4
    rms = _by_name("rms_norm_bf16_32768x4096")
    assert rms.bytes_moved(rms.shape, "bf16") == 2 * 32768 * 4096 * 2 + 4096 * 2
    mm = _by_name("matmul_bf16_2048x2048x8192")
    assert mm.flops(mm.shape) == 2 * 2048 * 2048 * 8192
    assert mm.inputs(mm.shape, "bf16") == [((2048, 8192), "bf16"), ((8192, 2048), "bf16")]
    assert mm.scales_for(mm.shape) == pytest.approx([1 / 8192 ** 0.5, 1.0])
    assert timing.rate_of(mm, mm.shape, 1.0) == pytest.approx(2 * 2048 * 2048 * 8192 / 1e-3 / 1e12)
    big_k = _by_name("matmul_bf16_128x128x131072")
    assert big_k.flops(big_k.shape) == 2 * 128 * 128 * 131072 and "split-K" in big_k.note
    assert big_k.bytes_moved(big_k.shape, "bf16") == 2 * 128 * 131072 * 2 + 128 * 128 * 2
    gelu = _by_name("matmul_bias_gelu_bf16_4096x4096x4096")
    assert [s for s, _ in gelu.inputs(gelu.shape, "bf16")] == [(4096, 4096), (4096, 4096), (4096,)]


def test_large_k_quick_shapes_still_split():
    """fuser-bench --quick exercises the split path: the quick large-K shapes are split too."""
    from fuser.lowering.heuristics.split_k import auto_decision
    for w in wl.WORKLOADS:
        if w.family == "matmul" and "split-K" in w.note:
            assert auto_decision(*w.shape).splits > 1, w.name
            assert auto_decision(*w.quick_shape).splits > 1, w.name


def _np_dtype(dt):
    import ml_dtypes
    import numpy as np
    return {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[dt]


def _numpy_peer(w, ins):
    """The torch peer's math in float64 numpy, outputs rounded as torch returns them."""
    import numpy as np

    xs = [np.asarray(a, dtype=np.float64) for a in ins]
    out_dt = _np_dtype(w.dtype)
    eps = wl.LN_EPS
    if w.family in ("var_mean", "var_mean_dim0"):
        axis = 1 if w.family == "var_mean" else 0
        return [np.var(xs[0], axis=axis, ddof=1).astype(np.float32), np.mean(xs[0], axis=axis).astype(np.float32)]
    if w.family == "layer_norm":
        x, wt, b = xs
        m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return [((x - m) / np.sqrt(v + eps) * wt + b).astype(out_dt)]
    if w.family == "rms_norm":
        x, wt = xs
        return [(x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * wt).astype(out_dt)]
    c = xs[0] @ xs[1]
    if w.family == "matmul_bias_relu":
        c = np.maximum(c + xs[2], 0)
    elif w.family == "matmul_bias_gelu":
        u = c + xs[2]
        c = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))
    return [c.astype(out_dt)]


@pytest.mark.parametrize("w", [w for w in wl.WORKLOADS if w.family in NEW_FAMILIES], ids=lambda w: w.name)
def test_new_workload_reference_matches_numpy_peer(w):
    """On the quick shape, the interpreter's answer for the workload's MLIR agrees with the torch
    function (as numpy) within the tolerance the harness checks the GPU result with."""
    import numpy as np
    from fuser.runtime.reference import reference_from_text

    rng = np.random.default_rng(7)
    shape = w.quick_shape
    ins = [(rng.standard_normal(s) * k).astype(np.float32).astype(_np_dtype(d))
           for (s, d), k in zip(w.inputs(shape, w.dtype), w.scales_for(shape))]
    got = reference_from_text(w.mlir_text(quick=True))(*ins)
    want = _numpy_peer(w, ins)
    assert len(got) == len(want)
    for g, r in zip(got, want):
        assert g.shape == r.shape and g.dtype == r.dtype
        g64, r64 = g.astype(np.float64), r.astype(np.float64)
        err = np.linalg.norm(g64 - r64) / np.linalg.norm(r64)
        assert err <= w.rtol, f"relative error {err:.3g} > {w.rtol}"
    if w.family.startswith("matmul"):  # the 1/sqrt(K) input scale keeps the output O(1)
        assert 0.3 < float(np.std(want[0].astype(np.float64))) < 3


def test_mlir_float_literals():
    text = _by_name("layer_norm_f32_32768x4096").mlir_text(quick=True)
    assert "fusion.full 1.0e-05" in text and "correction 0" in text
    text = _by_name("rms_norm_f32_32768x4096").mlir_text(quick=True)
    assert "%n = fusion.full 4096.0 : tensor<256xf32>" in text


# ------------------------------------------------------------------ the harness never aborts


class _FakeCuda:
    def __init__(self):
        self.broken = None

    def synchronize(self):
        if self.broken:
            raise RuntimeError(self.broken)


class _FakeBench:
    """Stands in for Bench (which needs torch and a GPU) in run_all."""

    def __init__(self, outcomes):
        self.quick = True
        self.outcomes = outcomes
        self.copy_gbps = None
        self.torch = type("T", (), {})()
        self.torch.cuda = _FakeCuda()
        self.logged = []

    def log(self, msg):
        self.logged.append(msg)

    def _ceiling(self, row):
        pass

    def run(self, w):
        what = self.outcomes.get(w.name, "ok")
        if what == "raise":
            raise ValueError("harness bug")
        if what == "fault":
            self.torch.cuda.broken = "CUDA error: an illegal memory access was encountered"
            return timing.RowResult(w, w.quick_shape, status="ERROR", fuser=timing.PeerResult(error="run: fault"))
        return timing.RowResult(w, w.quick_shape, status=what, eager=timing.PeerResult(ms=1.0, rate=100.0))


def test_run_all_carries_on_after_errors():
    ws = [_by_name(n) for n in ("copy_f32", "scale_f32", "var_mean_f32_32768x4096", "layer_norm_f32_32768x4096",
                                "matmul_bf16_4096x4096x4096", "rms_norm_f32_32768x4096")]
    fake = _FakeBench({"scale_f32": "raise", "var_mean_f32_32768x4096": "unsupported",
                       "matmul_bf16_4096x4096x4096": "fault"})
    rows = timing.run_all(fake, ws, anchor=ws[0])
    assert [r.workload.name for r in rows] == [w.name for w in ws]
    assert fake.copy_gbps == 100.0
    st = {r.workload.name: r for r in rows}
    assert st["scale_f32"].status == "ERROR" and "harness: ValueError: harness bug" in st["scale_f32"].fuser.error
    assert st["var_mean_f32_32768x4096"].status == "unsupported"
    assert st["layer_norm_f32_32768x4096"].status == "ok"
    assert st["matmul_bf16_4096x4096x4096"].status == "ERROR"
    lost = st["rms_norm_f32_32768x4096"]
    assert lost.status == "ERROR"
    assert "not run: the CUDA context was lost during matmul_bf16_4096x4096x4096" in lost.fuser.error
    text = report.format_table(rows)
    assert "unsupported" in next(line for line in text.splitlines() if line.startswith("var_mean_f32"))
    n = report.notes(rows)
    assert any(line.startswith("rms_norm_f32_32768x4096: fuser ERROR: not run") for line in n)


def test_run_all_reports_each_row_as_it_finishes(tmp_path):
    """Each finished row is logged with its numbers and how many are left, and handed to
    on_row, where the CLI rewrites its JSON (a crash keeps what was measured)."""
    ws = [_by_name(n) for n in ("copy_f32", "scale_f32", "layer_norm_f32_32768x4096")]
    fake = _FakeBench({})
    seen = []
    path = tmp_path / "partial.json"

    def on_row(rows):
        seen.append(len(rows))
        report.write_json(str(path), rows, {}, {}, None)
    timing.run_all(fake, ws, anchor=ws[0], on_row=on_row)
    assert seen == [1, 2, 3]
    done = [m for m in fake.logged if "left" in m]
    assert done[0].strip().startswith("ok, eager 100.0 GB/s") and done[0].endswith("2 left")
    assert done[-1].endswith("0 left")
    import json
    assert len(json.loads(path.read_text())["rows"]) == 3


def test_compile_error_becomes_a_row_not_a_traceback(monkeypatch):
    import types

    from fuser import api
    from fuser.api import FusionBuilder
    from fuser.dialects.ir import FuserDiagnostic

    w = _by_name("var_mean_bf16_32768x4096")
    fake_self = types.SimpleNamespace(quick=True, pipeline="default")

    seen = []

    def boom(fusion, *a, **k):
        seen.append(fusion)
        raise FuserDiagnostic("<unknown>: error: pass 'convert-fusion-to-sched' failed: 'fusion.var_mean' is not "
                              "supported: fusion.var_mean needs the normalization scheduler")

    monkeypatch.setattr(api, "compile", boom)
    row = timing.RowResult(w, w.quick_shape)
    timing.Bench._fuser(fake_self, w, row, [[]], None)
    assert row.status == "unsupported" and "fusion.var_mean" in row.fuser.error
    assert isinstance(seen[0], FusionBuilder) and seen[0].func.sym_name.data == "var_mean_bf16"
    assert "fuser unsupported: compile:" in report.notes([row])[0]

    class ParseLike(BaseException):  # xDSL's parse errors are not Exceptions
        pass

    def bad(text, *a, **k):
        raise ParseLike("<unknown>:2:21 Expected ':'")

    monkeypatch.setattr(api, "compile", bad)
    row = timing.RowResult(w, w.quick_shape)
    timing.Bench._fuser(fake_self, w, row, [[]], None)
    assert row.status == "ERROR" and row.fuser.error.startswith("compile: ParseLike")

    def broken_build(s, d):  # a fusion the builder rejects is a compile error of that row too
        raise ValueError("cannot broadcast tensor<4xf32> to shape [3, 5]")

    monkeypatch.setattr(api, "compile", lambda *a, **k: pytest.fail("compile must not be reached"))
    row = timing.RowResult(w, w.quick_shape)
    timing.Bench._fuser(fake_self, dataclasses.replace(w, build=broken_build), row, [[]], None)
    assert row.status == "ERROR" and row.fuser.error.startswith("compile: ValueError: cannot broadcast")


def test_exit_status_ignores_unsupported_rows():
    assert timing.is_unsupported("'fusion.matmul' is not supported yet: the Hopper matmul scheduler is being built")
    assert timing.is_unsupported("unknown pass 'fusion-translate-welford'; available passes: ...")
    assert not timing.is_unsupported("relative error 0.5 > 0.0001")
    assert "unsupported" not in timing.BAD_STATUSES


class _TimerTorch:
    """Just enough of torch for Bench.time_ms, logging what reaches the stream in order."""

    float32 = "float32"

    def __init__(self):
        self.log: list[str] = []
        log = self.log

        class Event:
            def __init__(self, enable_timing=False):
                assert enable_timing

            def record(self):
                log.append("record")

            def elapsed_time(self, other):
                return 0.5

        class Cuda:
            pass

        Cuda.Event = Event
        Cuda.synchronize = staticmethod(lambda: None)
        self.cuda = Cuda

    def ones(self, n, dtype=None, device=None):
        log = self.log

        class Buffer:
            nbytes = n * 4

            def sum(self):
                log.append("flush-read")

            def zero_(self):  # a writing flush would charge its write-backs to the timed call
                raise AssertionError("the flush must read, not write")

        assert device == "cuda"
        return Buffer()


def test_timer_flushes_l2_by_reading_before_every_timed_call():
    fake = _TimerTorch()
    b = object.__new__(timing.Bench)
    b.torch, b.reps, b._flush = fake, 100, None
    seen = []
    ms = b.time_ms(lambda x: (seen.append(x), fake.log.append("call")), [[1], [2]])
    assert ms == 0.5
    assert b._flush.nbytes == timing.FLUSH_BYTES
    timed = [i for i, e in enumerate(fake.log) if e == "call" and i > 0 and fake.log[i - 1] == "record"]
    assert len(timed) >= 20 + 5
    for i in timed:  # flush, start event, the call, end event: nothing else in between
        assert fake.log[i - 2:i + 2] == ["flush-read", "record", "call", "record"]
    assert set(seen) == {1, 2}, "input sets are cycled"


def test_compile_mode_on_the_cpu(monkeypatch, capsys, tmp_path):
    """`fuser-bench --compile --mock-launch` without a GPU: a row per selected fusion with its
    kernel count, cold / warm / disk compile times and a mocked cached call's host time."""
    pytest.importorskip("torch")
    from fuser.runtime import arrays, driver, executor
    from fuser.tools.bench import cli, timing

    # mock_launch replaces these for the rest of the process: put them back after the test
    for obj, name in ((driver, "require_gpu"), (driver, "device_ordinal"), (arrays, "_bind_device"),
                      (executor, "load_module"), (executor, "_kernel"), (executor, "_torch_raw_stream"),
                      (driver, "encode_tensor_map")):
        monkeypatch.setattr(obj, name, getattr(obj, name))
    monkeypatch.setattr(driver, "_direct_state", list(driver._direct_state))
    monkeypatch.setattr(driver._tls, "ctx", None, raising=False)
    monkeypatch.setattr(timing, "gpu_problem", lambda: "no GPU here")
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    assert cli.main(["--compile", "--mock-launch", "--filter", "^(row_sum|softmax)$", "--reps", "1",
                     "--calls", "20"]) == 0
    out = capsys.readouterr().out
    assert "launches mocked at the driver call" in out and "import fuser + driver" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith(("row_sum", "softmax"))}
    assert set(rows) == {"row_sum", "softmax"}
    for kernels, cold, warm, disk, call in rows.values():
        assert kernels == "1" and float(cold) > float(warm) > 0 and float(disk) > 0 and float(call) > 0


def test_cross_entropy_row_matches_torch_on_the_cpu():
    """The loss-and-gradient row's fusion (reference interpreter) against its torch function on
    the CPU, at an odd shape; its labels are drawn below the vocabulary size."""
    torch = pytest.importorskip("torch")
    import numpy as np
    from fuser.runtime.reference import reference_from_text

    w = next(w for w in wl.WORKLOADS if w.family == "cross_entropy")
    shape = (37, 1001)
    assert w.int_bounds(shape) == [None, 1001] and w.library[0] == "liger"
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(shape, generator=g) * 3).bfloat16()
    y = torch.randint(0, shape[1], (shape[0],), generator=g)
    loss, dx = reference_from_text(w.mlir(shape, w.dtype))(x.float().numpy().astype(_np_dtype("bf16")), y.numpy())
    want_loss, want_dx = w.torch_fn(x, y)
    assert abs(float(loss) - want_loss.item()) <= 1e-5 * abs(want_loss.item())
    got = torch.from_numpy(np.asarray(dx, dtype=np.float32))
    assert dx.dtype == _np_dtype("bf16") and tuple(got.shape) == shape
    err = (got.double() - want_dx.double()).norm() / want_dx.double().norm()
    assert err <= w.rtol, err


def test_library_peer_in_the_table_notes_and_json(tmp_path):
    w = next(w for w in wl.WORKLOADS if w.family == "cross_entropy")
    timed = timing.RowResult(w, w.quick_shape, fuser=timing.PeerResult(ms=1.0, rate=2000.0),
                             eager=timing.PeerResult(ms=3.0, rate=700.0), library=timing.PeerResult(ms=1.2, rate=1700.0))
    missing = timing.RowResult(w, w.shape, fuser=timing.PeerResult(ms=1.0, rate=2000.0),
                               library=timing.PeerResult(error="liger is not installed (No module named 'liger_kernel')"))
    lines = report.format_table([timed, missing]).splitlines()
    assert lines[0].split()[-2:] == ["fuser/library", "%"] or "fuser/library" in lines[0]
    assert "1.20x liger" in lines[2] and "n/a liger" in lines[3]
    assert any("liger n/a: liger is not installed" in n for n in report.notes([missing]))
    path = tmp_path / "bench.json"
    report.write_json(str(path), [timed], report.environment(), {"quick": True}, 3000.0)
    row = json.loads(path.read_text())["rows"][0]
    assert row["library"]["name"] == "liger" and row["library"]["fuser_over_library"] == pytest.approx(1.2)


def test_rotary_row_matches_torch_on_the_cpu():
    """The rotary row's fusion (reference interpreter: split and cat as index maps) against its
    torch function on the CPU, at an odd sequence length, for q and k with different head counts."""
    torch = pytest.importorskip("torch")
    import numpy as np
    from fuser.runtime.reference import reference_from_text

    w = next(w for w in wl.WORKLOADS if w.family == "rotary")
    shape = (2, 3, 1, 7, 16)
    g = torch.Generator().manual_seed(0)
    ins = [torch.randn(s, generator=g).bfloat16() for s, _ in w.inputs(shape, w.dtype)]
    got = reference_from_text(w.mlir(shape, w.dtype))(*[x.float().numpy().astype(_np_dtype("bf16")) for x in ins])
    for g_, want in zip(got, w.torch_fn(*ins), strict=True):
        assert tuple(g_.shape) == tuple(want.shape)
        g64 = torch.from_numpy(np.asarray(g_, dtype=np.float64))
        assert ((g64 - want.double()).norm() / want.double().norm()).item() <= w.rtol


def test_embedding_row_matches_torch_on_the_cpu():
    """The embedding forward + weight-gradient row's fusion (reference interpreter) against its
    torch function on the CPU at an odd shape, ids drawn below the vocabulary (many repeats)."""
    torch = pytest.importorskip("torch")
    import numpy as np
    from fuser.runtime.reference import reference_from_text

    w = next(w for w in wl.WORKLOADS if w.family == "embedding")
    shape = (301, 53, 24)
    assert w.int_bounds(shape) == [None, 53, None] and w.library[0] == "liger"
    g = torch.Generator().manual_seed(0)
    wt = torch.randn(53, 24, generator=g).bfloat16()
    ids = torch.randint(0, 53, (301,), generator=g)
    dy = torch.randn(301, 24, generator=g).bfloat16()
    bf = _np_dtype("bf16")
    rows, dw = reference_from_text(w.mlir(shape, w.dtype))(wt.float().numpy().astype(bf), ids.numpy(),
                                                           dy.float().numpy().astype(bf))
    want_rows, want_dw = w.torch_fn(wt, ids, dy)
    assert torch.equal(torch.from_numpy(np.asarray(rows, np.float32)), want_rows.float())
    got = torch.from_numpy(np.asarray(dw, dtype=np.float32)).double()
    want = want_dw.double()
    assert dw.dtype == bf and (got - want).norm() / want.norm() <= w.rtol
