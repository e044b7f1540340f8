"""The PyTorch backend under torch.distributed on the CPU: two gloo ranks train the tiny GPT-2
and Llama-style decoder under DDP and FSDP2, fuser's regions in the reference interpreter, and
their losses equal one process's on the same global batch (tools/bench/distributed.py, the code
`fuser-bench --models --distributed N` runs on GPUs)."""

from __future__ import annotations

import os
import time

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from fuser.tools.bench import distributed  # noqa: E402


def test_world_sizes():
    assert distributed.world_sizes(4) == [4, 2, 1]
    assert distributed.world_sizes(2) == [2, 1]
    assert distributed.world_sizes(1) == [1]
    assert distributed.world_sizes(6) == [6, 3, 1]


@pytest.fixture(scope="module")
def rows():
    return distributed.run(2, ["gpt2", "llama"], peers=["fuser"], size="tiny", source="own", device="cpu",
                           dtype="f32", curve_steps=3, warmup=0, timed=1, timeout=600, log=lambda msg: None)


@pytest.mark.parametrize("model", ["gpt2", "llama"])
@pytest.mark.parametrize("wrap", distributed.WRAPS)
def test_two_ranks_train_as_one_process(rows, model, wrap):
    got = {r["world"]: r for r in rows if r["model"] == model and r["wrap"] == wrap}
    assert set(got) == {1, 2}, rows
    for world, r in got.items():
        assert r["status"] == "ok" and r["error"] is None, r
        assert len(r["fuser"]) == world
        for rank in r["fuser"]:  # every rank ran fuser regions, none fell back
            assert rank["regions"] > 0 and rank["reference_calls"] > 0, rank
            assert rank["torch_calls"] == 0 and rank["compile_errors"] == 0, rank
    one, two = got[1]["curve"], got[2]["curve"]
    assert len(one) == 3 and one[0] > one[-1] - 1.0
    # the same global batch: the same losses, up to the order of the f32 gradient sums
    assert got[2]["curve_rel"] < 1e-5, (one, two)


def test_a_failing_rank_stops_its_world_and_says_why(tmp_path):
    """A rank whose run raises writes its error and exits, so torchrun stops the others (which
    would wait for it in a collective until the timeout); the row says ERROR with the reason."""
    results = distributed.launch(2, ["--models", "nosuch", "--wraps", "ddp", "--peers", "eager", "--size", "tiny",
                                     "--device", "cpu", "--micro-batches", "2"], str(tmp_path), timeout=300)
    failure = [r for r in results if r["rank"] is None]
    assert len(failure) == 1 and failure[0]["error"].startswith("torchrun exited with"), results
    ranks = [r for r in results if r["rank"] is not None]
    assert ranks and all("unknown model 'nosuch'" in r["error"] for r in ranks), ranks
    rows = distributed.combine(results)
    assert [r["status"] for r in rows] == ["ERROR"] and "unknown model 'nosuch'" in rows[0]["error"]


def test_a_run_past_its_timeout_is_stopped(tmp_path):
    """The run is stopped at its timeout and says so last; what its ranks finished before (on a
    fast, idle machine, rank 0 may have finished a peer) is kept."""
    results = distributed.launch(2, ["--models", "gpt2", "--size", "tiny", "--source", "own", "--device", "cpu",
                                     "--micro-batches", "2"], str(tmp_path), timeout=2)
    assert results[-1] == {"world": 2, "rank": None, "error": "stopped after 2 s"}
    assert all("curve" in r and "error" not in r for r in results[:-1]), results
    # no rank outlives the stop (each names the run's folder on its command line)
    deadline = time.monotonic() + 30
    while (left := _processes_naming(str(tmp_path))) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, left


def _processes_naming(text: str) -> list[str]:
    """Command lines of the live processes that contain `text` (Linux /proc)."""
    found = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                line = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{d}/stat") as f:
                zombie = f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except (OSError, IndexError):
            continue
        if text in line and not zombie:
            found.append(f"{d}: {line[:200]}")
    return found
