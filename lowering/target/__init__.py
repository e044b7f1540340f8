"""The target: LLVM IR text from the llvm/nvvm dialects (llvmir/) and PTX and cubin from it (ptx.py)."""
