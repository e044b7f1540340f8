"""What the GPU tests that compare with torch share: torch with a CUDA device (the test is
skipped without one) and torch's dtype for a fuser dtype name (the runtime's own table)."""

from __future__ import annotations

import pytest

from fuser.runtime.arrays import torch_dtype

__all__ = ["cuda_torch", "torch_dtype"]


def cuda_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch
