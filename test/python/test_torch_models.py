"""Whole models through `torch.compile(model, backend=fuser.torch.backend())` on the CPU (regions
run in fuser's reference interpreter), and the pieces of `fuser-bench --models` that need no GPU.

The models are tools/bench/models.py's, at their `tiny` size, in float32, from this package's own
modules (`source="own"`: no transformers needed); the Hugging Face forms are tested where
transformers is importable. Each compiled model is checked against eager PyTorch from the same
weights and batch: the loss, every gradient, and for GPT-2 three AdamW steps. The benchmark's
sizes are checked on the meta device (shapes and parameter counts, nothing allocated).
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

import fuser.torch as ft  # noqa: E402
from fuser.tools.bench import cli, model_bench, timing  # noqa: E402
from fuser.tools.bench import models as M  # noqa: E402
from fuser.torch import profile as fprof  # noqa: E402

TOL = {"rtol": 1e-4, "atol": 1e-4}


def _compile(model):
    torch._dynamo.reset()
    be = ft.backend()
    return torch.compile(model, backend=be, dynamic=False), be


def _check_against_eager(name: str, source: str, adamw_steps: int = 0) -> None:
    model, make_batch = M.build(name, "tiny", source=source)
    eager = copy.deepcopy(model)
    compiled, be = _compile(model)
    batch = make_batch(0)

    got = M.loss(compiled, batch)
    got.backward()
    want = M.loss(eager, batch)
    want.backward()
    assert got.dtype == torch.float32 and got.dim() == 0
    assert abs(got.item() - want.item()) <= 1e-4 * abs(want.item()), (got.item(), want.item())
    grads = dict(eager.named_parameters())
    for n, p in model.named_parameters():
        assert p.grad is not None and grads[n].grad is not None, n
        torch.testing.assert_close(p.grad, grads[n].grad, **TOL, msg=lambda m, n=n: f"gradient of {n}: {m}")
    assert be.stats.regions > 0 and be.stats.fused_nodes > 0, be.stats
    assert {k for k, _ in be.graphs} >= {"forward", "backward"}

    if adamw_steps:  # training goes on from here, in step with eager
        opts = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (model, eager)]
        for o in opts:
            o.step()
            o.zero_grad()
        for i in range(1, adamw_steps + 1):
            b = make_batch(i)
            losses = []
            for fn, o in ((compiled, opts[0]), (eager, opts[1])):
                loss = M.loss(fn, b)
                loss.backward()
                o.step()
                o.zero_grad()
                losses.append(loss.item())
            assert math.isclose(losses[0], losses[1], rel_tol=1e-4), (i, losses)
        # (not the weights element by element: Adam turns a near-zero gradient's noise into a full step)


@pytest.mark.parametrize("name", M.MODELS)
def test_tiny_model_matches_eager(name):
    _check_against_eager(name, "own", adamw_steps=3 if name == "gpt2" else 0)


@pytest.mark.parametrize("name", ["gpt2", "llama", "bert_layer"])
def test_tiny_hf_model_matches_eager(name):
    pytest.importorskip("transformers")
    _check_against_eager(name, "hf")


def test_inference_matches_eager():
    model, make_batch = M.build("llama", "tiny", source="own")
    model.eval()
    compiled, be = _compile(model)
    batch = make_batch(3)
    with torch.no_grad():
        got, want = M.output(compiled, batch), M.output(model, batch)
    assert got.shape == (2, 16, 128)
    torch.testing.assert_close(got, want, **TOL)
    assert [k for k, _ in be.graphs] == ["inference"] and be.stats.regions > 0


# ------------------------------------------------------------------ models.py


BENCH = {  # model: (input shapes, output shape, parameters)
    "gpt2": ({"input_ids": (8, 1024), "labels": (8, 1024)}, (8, 1024, 50257), 124_439_808),
    "llama": ({"input_ids": (4, 2048), "labels": (4, 2048)}, (4, 2048, 32000), 311_445_504),
    "bert_layer": ({"x": (32, 512, 768), "target": (32, 512, 768)}, (32, 512, 768), 7_087_872),
    "mlp": ({"x": (8192, 4096), "target": (8192, 4096)}, (8192, 4096), 134_246_400),
}


@pytest.mark.parametrize("name", M.MODELS)
def test_bench_size_shapes_on_meta(name):
    """The benchmark's configurations, built on the meta device: nothing is allocated."""
    inputs, out_shape, params = BENCH[name]
    model, make_batch = M.build(name, "bench", source="own", dtype=torch.bfloat16, device="meta")
    assert M.param_count(model) == params
    assert all(p.device.type == "meta" and p.dtype == torch.bfloat16 for p in model.parameters())
    batch = make_batch(0)
    assert {k: tuple(v.shape) for k, v in batch.items()} == inputs
    with torch.no_grad():
        y = M.output(model, batch)
    assert tuple(y.shape) == out_shape and y.dtype == torch.bfloat16
    assert M.loss(model, batch).dtype == torch.float32


def test_configs():
    c = M.config("llama")
    assert (c.hidden, c.intermediate, c.layers, c.heads, c.kv_heads, c.vocab) == (2048, 5632, 4, 16, 4, 32000)
    c = M.config("gpt2")
    assert (c.hidden, c.layers, c.heads, c.vocab, c.batch, c.seq) == (768, 12, 12, 50257, 8, 1024)
    for name in M.MODELS:
        model, _ = M.build(name, "tiny", source="own", device="meta")
        assert M.param_count(model) <= 300_000, name
        assert not any(isinstance(m, torch.nn.Dropout) for m in model.modules())
    with pytest.raises(ValueError, match="unknown model"):
        M.config("resnet")
    with pytest.raises(ValueError, match="size"):
        M.config("gpt2", "huge")


def test_sources(monkeypatch):
    with pytest.raises(ValueError, match="no Hugging Face form"):
        M.resolve_source("mlp", "hf")
    assert M.resolve_source("mlp", "auto") == "own"
    monkeypatch.setattr(M, "hf_available", lambda: False)
    assert M.resolve_source("gpt2", "auto") == "own"
    monkeypatch.setattr(M, "hf_available", lambda: True)
    assert M.resolve_source("gpt2", "auto") == "hf" and M.resolve_source("gpt2", "own") == "own"
    with pytest.raises(ValueError, match="source"):
        M.resolve_source("gpt2", "pip")


def test_batches_are_seeded():
    _, make = M.build("bert_layer", "tiny", source="own")
    a, b, c = make(1), make(1), make(2)
    assert torch.equal(a["x"], b["x"]) and not torch.equal(a["x"], c["x"])
    _, make = M.build("gpt2", "tiny", source="own")
    ids = make(5)
    assert ids["input_ids"].dtype == torch.int64 and torch.equal(ids["input_ids"], ids["labels"])
    assert int(ids["input_ids"].max()) < 128


# ------------------------------------------------------------------ model_bench: checks and report


def test_check_helpers():
    w = torch.tensor([3.0, 4.0])
    assert model_bench.rel_err(w + torch.tensor([0.03, 0.04]), w) == pytest.approx(1e-2, rel=1e-5)
    assert model_bench.rel_err(torch.zeros(2), torch.zeros(2)) == 0.0
    assert model_bench.rel_err(torch.tensor([math.nan, 0.0]), w) == math.inf
    with pytest.raises(ValueError, match="shape"):
        model_bench.rel_err(torch.zeros(3), w)

    want = {"big": torch.full((4,), 10.0), "zero": torch.tensor([1e-6, -1e-6]), "none": None}
    got = {"big": torch.full((4,), 10.1), "zero": torch.tensor([-1e-6, 1e-6]), "none": None}
    errs = model_bench.grad_errors(got, want)
    assert errs["big"] == pytest.approx(1e-2, rel=1e-5)
    # a mathematically-zero gradient is noise in both: measured against the floor, not its own norm
    assert errs["zero"] < 1e-3 and "none" not in errs
    assert model_bench.worst(errs)[0] == "big"
    assert model_bench.grad_errors({"a": None}, {"a": w}) == {"a": math.inf}
    assert model_bench.worst({}) == (None, 0.0)

    assert model_bench.curve_error([1.0, 2.1], [1.0, 2.0]) == pytest.approx(0.05, rel=1e-9)
    assert model_bench.curve_error([1.0], [1.0, 2.0]) == math.inf
    assert model_bench.curve_error([1.0, math.nan], [1.0, 2.0]) == math.inf
    # after the tracked steps, one spike counts through the mean (the chaos of bf16 training),
    # while a curve that stops learning does not pass
    n = model_bench.CURVE_TRACKED
    eager = [10.0 - 0.1 * i for i in range(n + 10)]
    spiky = eager[:n] + [x * (1.3 if i == 5 else 1.0) for i, x in enumerate(eager[n:])]
    assert model_bench.curve_error(spiky, eager) == pytest.approx(0.3 * eager[n + 5] / sum(eager[n:]), rel=1e-9)
    assert model_bench.curve_error(eager[:n] + [eager[n - 1]] * 10, eager) > model_bench.CURVE_RTOL
    assert model_bench.curve_error([eager[0] * 1.06] + eager[1:], eager) > model_bench.CURVE_RTOL

    ok = {"loss_rel": 1e-3, "grad_rel": 1e-2, "curve_rel": 1e-2}
    assert model_bench.check_failures("train", ok) == []
    bad = model_bench.check_failures("train", {**ok, "grad_rel": 0.5, "grad_worst": "w", "curve_rel": math.inf})
    assert len(bad) == 2 and "gradient of w" in bad[0] and "loss curve" in bad[1]
    assert model_bench.check_failures("infer", {"out_rel": 0.1})
    assert not model_bench.check_failures("infer", {"out_rel": 0.0})


def _row(**kw):
    r = model_bench.ModelRow("gpt2", "train", source="hf", shape="8x1024", params=124_439_808, **kw)
    r.peers["eager"].ms, r.peers["inductor"].ms, r.peers["fuser"].ms = 30.0, 20.0, 25.0
    r.peers["inductor"].first_s, r.peers["fuser"].first_s = 40.0, 90.0
    r.peers["max_autotune"].error = "skipped (--quick)"
    r.peers["fuser"].check = {"loss_rel": 1e-3, "grad_rel": 8e-3, "curve_rel": 2e-3}
    return r


def test_table_notes_and_json(tmp_path):
    ok = _row()
    ok.split = {"total_ms": 20.0, "fuser_ms": 5.0, "other_ms": 15.0, "fused_share": 0.25, "steps": 3,
                "fuser_kernels_per_step": 40,
                "by_op": [("aten::mm", 9.0), ("aten::_scaled_dot_product_flash_attention", 6.0)]}
    ok.fuser_stats = {"regions": 12, "fused_nodes": 300, "torch_nodes": {"aten.mm.default": 50},
                      "partition_seconds": 3.25, "precompile_seconds": 20.0, "compile_seconds": 1.5, "causal_masks": 4}
    err = model_bench.ModelRow("llama", "infer", status="ERROR")
    err.peers["fuser"].error = "RuntimeError: boom"
    err.notes.append("fuser ERROR: RuntimeError: boom")
    rows = [ok, err]
    assert ok.ratio("eager") == pytest.approx(1.2) and ok.ratio("max_autotune") is None
    text = model_bench.format_table(rows)
    lines = text.splitlines()
    assert lines[0].split()[:6] == ["model", "mode", "source", "shape", "params", "status"]
    assert "124.4M" in lines[2] and "1.20x" in lines[2] and "0.80x" in lines[2] and "25.0%" in lines[2]
    assert "ERROR" in lines[3]
    md = model_bench.format_table(rows, markdown=True)
    assert md.startswith("| model | mode |") and md.count("\n") == 3
    notes = model_bench.below_table(rows)
    assert any("25.0% fused" in n for n in notes) and any("aten::mm" in n for n in notes)
    assert any("llama infer: fuser ERROR" in n for n in notes)
    assert any(n.endswith("4 attention masks made is_causal; first step: partition 3.2 s, precompile 20.0 s, "
                          "compile or load in the process 1.5 s") for n in notes), notes
    path = tmp_path / "out" / "models.json"
    model_bench.write_json(str(path), rows, {"device": "test"}, {"quick": True})
    doc = json.loads(path.read_text())
    assert doc["kind"] == "models" and doc["rows"][0]["fuser_over_eager"] == pytest.approx(1.2)
    assert doc["rows"][0]["gpu_time_split"]["by_op"][0] == ["aten::mm", 9.0]
    assert doc["rows"][1]["peers"]["fuser"]["error"] == "RuntimeError: boom"


def test_status_from_checks():
    r = _row()
    model_bench._set_status(r)
    assert r.status == "ok" and r.notes == []
    r = _row()
    r.peers["fuser"].check["grad_rel"] = 0.3
    r.peers["inductor"].check = {"out_rel": 0.0, "curve_rel": 0.2}
    model_bench._set_status(r)
    assert r.status == "FAIL" and "fuser FAIL" in r.notes[0] and "inductor differs" in r.notes[1]
    r = _row()
    r.peers["fuser"].error = "RuntimeError: boom"
    model_bench._set_status(r)
    assert r.status == "ERROR"
    r = _row()
    r.peers["eager"].error = "OutOfMemoryError: CUDA out of memory"
    model_bench._set_status(r)
    assert r.status == "ERROR" and "nothing to check" in r.notes[0]


def test_selection_and_peers():
    assert model_bench.select_models(None) == list(M.MODELS)
    assert model_bench.select_models("gpt2|mlp") == ["gpt2", "mlp"]
    assert model_bench.MODEL_NAMES == M.MODELS
    assert model_bench.peers_for(quick=True, no_compile=False)["max_autotune"] == "skipped (--quick)"
    assert model_bench.peers_for(quick=False, no_compile=True)["inductor"] == "skipped (--no-compile)"
    assert not any(model_bench.peers_for(quick=False, no_compile=False).values())


# ------------------------------------------------------------------ the command line


def test_cli_models_flag():
    args = cli.parse_args(["--models", "--filter", "gpt2", "--quick", "--json", "x.json", "--markdown"])
    assert args.models and args.filter == "gpt2" and args.quick and args.json == "x.json" and args.markdown
    assert not cli.parse_args([]).models
    args = model_bench.parse_args(["--size", "tiny", "--source", "own", "--modes", "train"])
    assert args.models and args.size == "tiny" and args.source == "own" and args.modes == "train"
    # every option of model_bench's own command line is one of fuser-bench --models' too
    args = cli.parse_args(["--models", "--modes", "train", "--kernels", "k"])
    assert args.modes == "train" and args.kernels == "k" and cli.parse_args([]).modes == ",".join(model_bench.MODES)
    own = {a.dest for a in model_bench._parser()._actions} - {"help"}
    assert own <= set(vars(cli.parse_args(["--models"])))


def test_model_ab_on_the_cpu(capsys):
    """fuser.tools.bench.ab --model alternates training steps of one model compiled with each
    pipeline and backend options (the reference interpreter on the CPU): each variant compiles its
    own graphs and their first losses agree."""
    from fuser.tools.bench import ab

    second = "default{matmul_epilogue_work=0};partitioner=default"
    rc = ab.main(["--pipelines", "default", second, "--model", "gpt2", "--size", "tiny",
                  "--source", "own", "--rounds", "1", "--steps", "1"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0, out
    firsts = [line for line in out if line.startswith("# default")]
    assert len(firsts) == 2 and all(" 2 graphs" in line for line in firsts)
    assert firsts[0].split("loss ")[1].split(",")[0] == firsts[1].split("loss ")[1].split(",")[0]
    rows = [line.split() for line in out if not line.startswith("#")]
    assert [r[0] for r in rows] == ["default", second] and rows[1][3].endswith("x")


def test_model_ab_backend_variants():
    from fuser.tools.bench.ab import backend_variant

    assert backend_variant("default") == ("default", {})
    assert backend_variant("default{tile=128x256}; partitioner=default, pad_matmuls=false, compile_workers=2") == \
        ("default{tile=128x256}", {"partitioner": "default", "pad_matmuls": False, "compile_workers": 2})
    with pytest.raises(SystemExit, match="expected name=value"):
        backend_variant("default;partitioner")


def test_model_ab_bad_arguments(capsys):
    from fuser.tools.bench import ab

    with pytest.raises(SystemExit):
        ab.main(["--pipelines", "default", "default", "--model", "resnet"])
    assert "the models are gpt2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ab.main(["--pipelines", "default", "default", "--model", "gpt2", "--matmul", "64x64x64"])
    assert "--model times a model alone" in capsys.readouterr().err


def test_models_without_gpu_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(timing, "gpu_problem", lambda: "no NVIDIA GPU/driver found: test")
    assert cli.main(["--models", "--quick"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fuser-bench needs an NVIDIA GPU: no NVIDIA GPU/driver found") and "Traceback" not in err


def test_models_bad_arguments(capsys):
    assert cli.main(["--models", "--filter", "resnet"]) == 2
    assert "no model matches" in capsys.readouterr().err
    assert cli.main(["--models", "--filter", "("]) == 2
    assert "bad --filter regex" in capsys.readouterr().err
    assert model_bench.main(["--modes", "train,eval"]) == 2
    assert "--modes" in capsys.readouterr().err


def test_models_list_needs_no_gpu(capsys):
    assert cli.main(["--models", "--list", "--filter", "bert|mlp"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["model", "source", "input"]
    assert out[1].split()[:3] == ["bert_layer", out[1].split()[1], "32x512x768"] and out[2].startswith("mlp")


def test_fresh_caches(monkeypatch):
    import os

    for var in model_bench.CACHE_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", "/somewhere/triton")  # the caller's choice is kept
    caches, set_here, tmp = model_bench.fresh_caches()
    try:
        assert set_here == ["FUSER_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"]
        assert caches["TRITON_CACHE_DIR"] == "/somewhere/triton" and caches["FUSER_CACHE_DIR"].startswith(tmp)
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"].startswith(tmp) and os.path.isdir(tmp)
    finally:
        os.rmdir(tmp)


def test_model_bench_import_does_not_load_torch():
    code = ("import sys, fuser.tools.bench.model_bench, fuser.tools.bench.cli; "
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_harness_on_cpu():
    """The whole method (checks, curve, timing, rows) on the CPU, eager against fuser."""
    bench = model_bench.ModelBench(quick=True, size="tiny", source="own", device="cpu", dtype=torch.float32,
                                   peers=("eager", "fuser"), log=lambda msg: None)
    rows = bench.run_model("mlp")
    assert [r.mode for r in rows] == ["train", "infer"]
    for r in rows:
        assert r.status == "ok", r.notes
        assert r.peers["eager"].ms > 0 and r.peers["fuser"].ms > 0 and r.peers["fuser"].first_s > 0
        assert r.peers["inductor"].error == "skipped (not asked for)" and r.ratio("eager") > 0
        assert r.fuser_stats["regions"] > 0
    train, infer = rows
    c = train.peers["fuser"].check
    assert c["loss_rel"] < 1e-5 and c["grad_rel"] < 1e-4 and c["curve_rel"] < 1e-4
    assert len(c["curve"]) == model_bench.CURVE_STEPS and c["curve"][-1] < c["curve"][0]  # it learns
    assert infer.peers["fuser"].check["out_rel"] < 1e-5


# ------------------------------------------------------------------ profile.py


def test_gpu_time_split_needs_a_gpu():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError, match="CUDA"):
        fprof.gpu_time_split(lambda: None)


def _ev(name, device, start=0.0, end=0.0, kernels=(), parent=None, id=0, annotation=False):
    from torch.autograd import DeviceType

    return SimpleNamespace(name=name, device_type=DeviceType.CUDA if device else DeviceType.CPU, id=id,
                           time_range=SimpleNamespace(start=start, end=end), is_user_annotation=annotation,
                           kernels=[SimpleNamespace(name=k, duration=d) for k, d in kernels], cpu_parent=parent)


def test_split_events():
    """fuser kernels by name; other kernels charged to the outermost aten:: op that launched them."""
    step = _ev("CompiledFunction", False, id=1)
    linear = _ev("aten::addmm", False, id=2, parent=step, kernels=[("sm90_gemm", 60.0)])
    inner = _ev("aten::copy_", False, id=3, parent=_ev("aten::_to_copy", False, id=4, parent=step),
                kernels=[("copy_kernel", 10.0)])
    twin = _ev("aten::copy_", False, id=3, parent=None, kernels=[("copy_kernel", 10.0)])  # same correlation id
    launcher = _ev("fuser_region", False, id=5, kernels=[("fuser_ab12_k0", 20.0)])
    device = [_ev("sm90_gemm", True, 0, 60), _ev("copy_kernel", True, 60, 70), _ev("fuser_ab12_k0", True, 70, 90),
              _ev("fuser_ab12_k1", True, 90, 100), _ev("memset", True, 100, 110),
              _ev("Optimizer.step#AdamW.step", True, 0, 500, annotation=True)]
    split = fprof.split_events([step, linear, inner, twin, launcher, *device], steps=2)
    assert split["total_ms"] == pytest.approx(0.055) and split["fuser_ms"] == pytest.approx(0.015)
    assert split["fused_share"] == pytest.approx(30 / 110) and split["fuser_kernels_per_step"] == 1
    assert split["by_op"] == [("aten::addmm", pytest.approx(0.03)), ("aten::_to_copy", pytest.approx(0.005)),
                              (fprof.NO_OP, pytest.approx(0.005))]
    lines = fprof.format_split(split, top=2)
    assert "27.3% fused" in lines[0] and len(lines) == 3 and "aten::addmm" in lines[1]



def test_kernel_times_and_report():
    """Every device event by name, per step, with the op that launched it; the report groups
    them by category and names fuser's kernels by their region."""
    from fuser.tools.bench import kernel_report

    step = _ev("CompiledFunction", False, id=1)
    linear = _ev("aten::addmm", False, id=2, parent=step, kernels=[("sm90_xmma_gemm", 60.0)])
    launcher = _ev("fuser_region", False, id=5, kernels=[("fuser_ab12_k0", 20.0)])
    device = [_ev("sm90_xmma_gemm", True, 0, 60), _ev("fuser_ab12_k0", True, 70, 90), _ev("fuser_ab12_k0", True, 90, 110),
              _ev("Optimizer.step#AdamW.step", True, 0, 500, annotation=True)]
    ks = fprof.kernel_times([step, linear, launcher, *device], steps=2)
    assert [(k["name"], k["op"]) for k in ks] == [("sm90_xmma_gemm", "aten::addmm"), ("fuser_ab12_k0", "fuser")]
    assert ks[0]["ms"] == pytest.approx(0.03) and ks[1]["ms"] == pytest.approx(0.02) and ks[1]["calls"] == 1
    doc = {"rows": [{"model": "m", "mode": "train", "peers": {"fuser": {"kernels": ks}, "eager": {"kernels": None}}}]}
    lines = kernel_report.report(doc, top=5, names={"fuser_ab12_k0": "grid [132, 1, 1] | matmul"})
    assert lines[0].startswith("== m train fuser: 0.05 ms") and "matmul 0.03, fuser 0.02" in lines[0]
    assert "| matmul" in lines[2] and len(lines) == 3


@pytest.mark.gpu
def test_harness_on_the_gpu():
    """The tiny MLP through the whole method on CUDA in bf16, with the profiler's split."""
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    bench = model_bench.ModelBench(quick=True, size="tiny", source="own", peers=("eager", "fuser"),
                                   log=lambda msg: None)
    for r in bench.run_model("mlp"):
        assert r.status == "ok", r.notes
        assert r.split is not None and r.split["fuser_ms"] > 0 and 0 < r.split["fused_share"] <= 1


def test_padded_lm_head_trains_like_eager(monkeypatch):
    """GPT-2 (ours, tiny) with a 131-word vocabulary in bf16: the LM head's matmuls have unaligned
    rows, padding is forced (PAD_MIN_MACS = 0), and the 20-step loss curve and the first step's
    gradients still track eager's (the padding and the slice are right across optimizer steps)."""
    import dataclasses

    from fuser.torch import pad_matmuls

    monkeypatch.setattr(pad_matmuls, "PAD_MIN_MACS", 0)
    tiny = dataclasses.replace(M.CONFIGS["gpt2"]["tiny"], vocab=131)
    monkeypatch.setitem(M.CONFIGS["gpt2"], "tiny", tiny)
    bench = model_bench.ModelBench(quick=True, size="tiny", source="own", modes=("train",), device="cpu",
                                   dtype=torch.bfloat16, peers=("eager", "fuser"), log=lambda msg: None)
    (row,) = bench.run_model("gpt2")
    assert row.status == "ok", row.notes
    assert row.fuser_stats["padded_matmuls"] >= 2
    c = row.peers["fuser"].check
    assert c["loss_rel"] < 1e-3 and c["grad_rel"] < 5e-2 and c["curve_rel"] < 1e-2, c


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cudagraphs_match_plain_launches_on_gpu(dtype):
    """backend(cudagraphs=True) on GPT-2-like blocks (the tiny GPT-2, on the GPU): three AdamW
    training steps and an inference pass give what the same backend gives without CUDA graphs
    (fresh random batches each step, so replays must read the new inputs), and the graphs were
    captured, not skipped."""
    runs = {}
    for graphs in (False, True):
        torch._dynamo.reset()
        model, make_batch = M.build("gpt2", "tiny", source="own", dtype=dtype, device="cuda")
        be = ft.backend(cudagraphs=graphs)
        compiled = torch.compile(model, backend=be, dynamic=False)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        losses, grads = [], []
        for step in range(3):
            loss = M.loss(compiled, make_batch(step))
            loss.backward()
            grads.append(model.lm_head.weight.grad.detach().clone() if hasattr(model, "lm_head")
                         else next(model.parameters()).grad.detach().clone())
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        with torch.no_grad():
            model.eval()
            out = M.output(compiled, make_batch(7)).float().clone()
        runs[graphs] = (losses, grads, out)
        assert be.stats.regions > 0
        if graphs:
            assert be.stats.cudagraph_skips == 0, be.stats
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 2e-2}
    (l0, g0, o0), (l1, g1, o1) = runs[False], runs[True]
    for a, b in zip(l0, l1):
        assert math.isclose(a, b, rel_tol=tol["rtol"]), (l0, l1)
    for a, b in zip(g0, g1):
        torch.testing.assert_close(b.float(), a.float(), **tol)
    torch.testing.assert_close(o1, o0, **tol)


def test_kernel_report_names_each_fuser_kernels_kind(tmp_path):
    """kernel_report --regions compiles each region here and tags its kernels: a wgmma kernel is a
    matmul, a persistent row schedule is rows; the fuser line is split by those kinds."""
    from fuser.tools.bench import kernel_report

    examples = Path(__file__).parents[2] / "examples"
    for example, func in (("matmul_bias_gelu", "linear_gelu"), ("layer_norm", "layer_norm")):
        text = (examples / f"{example}.mlir").read_text().replace(f"@{func}(", f"@fuser_{func}(")
        (tmp_path / f"fuser_{func}.mlir").write_text(text)
    kinds: dict[str, str] = {}
    names = kernel_report.region_kernels(str(tmp_path), kinds)
    assert kinds["fuser_linear_gelu_k0"] == "matmul" and "matmul" in names["fuser_linear_gelu_k0"]
    assert kinds["fuser_layer_norm_k0"] == "rows"
    ks = [{"name": "fuser_linear_gelu_k0", "ms": 0.5, "calls": 1, "op": "fuser"},
          {"name": "fuser_layer_norm_k0", "ms": 0.25, "calls": 1, "op": "fuser"}]
    doc = {"rows": [{"model": "m", "mode": "train", "peers": {"fuser": {"kernels": ks}}}]}
    lines = kernel_report.report(doc, top=0, names=names, kinds=kinds)
    assert lines[1].strip() == "fuser's kernels by kind: matmul 0.50, rows 0.25"


def test_kernel_report_floor(tmp_path):
    """--floor: a kernel's argument bytes from its sched.kernel line (tensor maps by their memref,
    a rank-0 buffer its one element), and the memory-bound kernels sorted by their time above the
    floor, matmuls left out."""
    from fuser.tools.bench import kernel_report

    line = ("  sched.kernel @k(%0 : memref<8x1024xbf16>, %1 : !sched.tensor_map<memref<64x32xf32>, box [64, 32], "
            "swizzle 128>, %2 : memref<f32>, %3 : memref<4x4xi64>) grid [8, 1, 1] block [256, 1, 1] smem 0 {")
    assert kernel_report.argument_bytes(line) == 8 * 1024 * 2 + 64 * 32 * 4 + 4 + 16 * 8
    kinds = {"fuser_a_k0": "pointwise", "fuser_a_k1": "rows", "fuser_a_k2": "matmul"}
    nbytes = {"fuser_a_k0": 4_300_000, "fuser_a_k1": 4_300_000, "fuser_a_k2": 1}
    ks = [{"name": "fuser_a_k0", "ms": 0.002, "calls": 2, "op": "fuser"},   # floor 2 x 1 us: on it
          {"name": "fuser_a_k1", "ms": 0.005, "calls": 1, "op": "fuser"},   # floor 1 us: 4 us above
          {"name": "fuser_a_k2", "ms": 1.0, "calls": 1, "op": "fuser"}]
    doc = {"rows": [{"model": "m", "mode": "train", "peers": {"fuser": {"kernels": ks}}}]}
    lines = kernel_report.floor_report(doc, top=5, kinds=kinds, nbytes=nbytes, tb_per_s=4.3)
    assert "memory-bound kernels 0.01 ms, floor 0.00 ms at 4.3 TB/s" in lines[0]
    assert [ln.split()[-2] for ln in lines[1:]] == ["fuser_a_k1", "fuser_a_k0"]
    assert "+ 0.004" in lines[1] and "+ 0.000" in lines[2]


def test_step_host_rounds_on_the_cpu():
    """step_host times rounds of training steps through the backend (queued and synced host time;
    the allocator's figures only on CUDA) and hands back the step for a profile."""
    from fuser.tools.bench import step_host

    logged: list[str] = []
    rows, step = step_host.measure("mlp", rounds=2, steps=1, size="tiny", source="own", log=logged.append)
    assert len(rows) == 2 and all(r["step_ms"] >= r["queued_ms"] > 0 for r in rows)
    assert logged[0].startswith("# mlp: first step ") and logged[1].startswith("round 0: queued_ms ")
    step()  # (what --profile runs)
