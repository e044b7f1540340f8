"""One GPU a process: the device of the first CUDA tensor (else FUSER_DEVICE, else 0) is the
one fuser runs on, as a torch.distributed rank needs (tools/bench/distributed.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from fuser.runtime import driver


@pytest.fixture
def fresh_state(monkeypatch):
    monkeypatch.setattr(driver, "_state", {})
    monkeypatch.setattr(driver._tls, "ctx", None, raising=False)


def test_the_first_device_asked_for_is_kept(fresh_state):
    assert driver.bind_device(2) == 2
    assert driver.bind_device(0) == 2  # later tensors on another GPU are refused by the caller
    assert driver.device_ordinal() == 2


def test_fuser_device_chooses_when_no_tensor_did(fresh_state, monkeypatch):
    monkeypatch.setenv("FUSER_DEVICE", "1")
    assert driver.device_ordinal() == 1
    monkeypatch.setattr(driver, "_state", {})
    monkeypatch.setenv("FUSER_DEVICE", "gpu1")
    with pytest.raises(driver.CudaError, match="FUSER_DEVICE='gpu1' is not a GPU number"):
        driver.device_ordinal()


@pytest.mark.gpu
def test_each_gpu_runs_its_own_process_fusions():
    """On every GPU of the machine, a process given tensors there runs the fusion there; a
    tensor on another GPU afterwards is refused with the reason."""
    torch = pytest.importorskip("torch")
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n < 2:
        pytest.skip("needs 2 GPUs")
    script = textwrap.dedent("""
        import sys, torch, fuser
        d = int(sys.argv[1])
        with fuser.FusionBuilder("twice") as fb:
            x = fb.input((1024, 1024), "f32", name="x")
            fb.output(fuser.exp(x) * 2.0)
        f = fuser.compile(fb)
        a = torch.randn(1024, 1024, device=f"cuda:{d}")
        out = f(a)
        assert out.device == a.device, out.device
        torch.testing.assert_close(out, torch.exp(a) * 2.0, rtol=1e-5, atol=1e-5)
        other = torch.randn(1024, 1024, device=f"cuda:{(d + 1) % torch.cuda.device_count()}")
        try:
            f(other)
        except Exception as e:
            assert f"fuser runs on cuda:{d} in this process" in str(e), e
        else:
            raise AssertionError("a tensor on another GPU was taken")
        print("ok", d)
    """)
    for d in range(n):
        r = subprocess.run([sys.executable, "-c", script, str(d)], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ))
        assert r.returncode == 0 and f"ok {d}" in r.stdout, r.stderr[-3000:]
