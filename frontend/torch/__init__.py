"""fuser's PyTorch frontend: a `torch.compile` backend.

    import torch, fuser.torch
    model = torch.compile(model, backend="fuser")                    # the entry point's backend
    model = torch.compile(model, backend=fuser.torch.backend(debug=True))
    print(fuser.torch.explain(model, x))                             # regions, fallbacks, GPU share

AOTAutograd gives forward and backward ATen graphs; one translation table (translate.py) maps
ATen ops to fusion ops; torch.fx's CapabilityBasedPartitioner groups the nodes the table takes
into regions, each one fuser fusion; everything else runs in PyTorch. Regions of CPU tensors run
in fuser's reference interpreter (so the whole path is tested without a GPU), regions of CUDA
tensors as kernels compiled by `fuser.api.compile`.

The package lives in `frontend/torch/` (mapped to `fuser.torch` by pyproject.toml): a `torch/`
folder at the repository root would shadow the real torch for Python run from there.
"""

from .backend import FuserBackend, backend, fuser_backend
from .explain import Explanation, explain
from .translate import TABLE, Unsupported, is_supported, why_unsupported

__all__ = ["FuserBackend", "backend", "fuser_backend", "explain", "Explanation", "TABLE", "Unsupported",
           "is_supported", "why_unsupported"]
