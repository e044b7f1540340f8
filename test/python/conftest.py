"""Skip tests marked @pytest.mark.gpu when no NVIDIA GPU/driver is present."""

import pytest


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
