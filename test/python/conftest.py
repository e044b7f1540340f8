"""Skip tests marked @pytest.mark.gpu when no NVIDIA GPU/driver is present; spread xdist workers
over the GPUs when FUSER_TEST_GPUS says how many there are."""

import os

import pytest


def _pin_worker_to_one_gpu() -> None:
    """FUSER_TEST_GPUS=N (tools/gpu_validate.sh on a machine of N GPUs): xdist worker gwK sees only
    GPU K % N, so N GPUs share the suite. Set before any CUDA call, which reads the variable once.
    Tests that need several GPUs see one here and skip: the script runs them on their own."""
    n = int(os.environ.get("FUSER_TEST_GPUS") or 0)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if n > 1 and worker.startswith("gw"):
        os.environ["CUDA_VISIBLE_DEVICES"] = str(int(worker[2:]) % n)


_pin_worker_to_one_gpu()
# The suite verifies every compile's whole IR after its last pass (fuser.driver.verify_setting),
# a check of the compiler that users' compiles leave to LLVM; its compile workers inherit it.
os.environ.setdefault("FUSER_VERIFY", "end")
# pytest-xdist already runs a worker per core: a compile does not fork more processes (the
# parallel lowering's own tests set FUSER_COMPILE_JOBS themselves)
os.environ.setdefault("FUSER_COMPILE_JOBS", "1")


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    from fuser.runtime.driver import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU found")
    for item in gpu_items:
        item.add_marker(skip)


UPSTREAM_JAXLIB = "0.10.2"  # as pinned in pyproject.toml's test extra


@pytest.fixture(scope="session")
def upstream():
    """Parse-and-verify with upstream MLIR's own parser (jaxlib.mlir); skips when jaxlib is absent,
    or is not the version the project's test extra pins: upstream's syntax for the nvvm ops moves
    between MLIR versions (the GPU machine's older jaxlib spells some properties differently)."""
    jaxlib = pytest.importorskip("jaxlib", reason="jaxlib (upstream MLIR) is not installed")
    if jaxlib.__version__ != UPSTREAM_JAXLIB:
        pytest.skip(f"the upstream checks target jaxlib {UPSTREAM_JAXLIB}'s MLIR; found {jaxlib.__version__}")
    jax_ir = pytest.importorskip("jaxlib.mlir.ir", reason="jaxlib (upstream MLIR) is not installed")
    jax_ext = pytest.importorskip("jaxlib.mlir._mlir_libs._jax_mlir_ext")
    ctx = jax_ir.Context()
    registry = jax_ir.DialectRegistry()
    jax_ext.register_dialects(registry)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()

    def parse(text: str):
        module = jax_ir.Module.parse(text, ctx)
        assert module.operation.verify()
        return module

    return parse
