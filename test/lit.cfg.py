# lit configuration for fuser's FileCheck regression tests (test/lit/**.mlir).
import os
import shutil
import sys

import lit.formats

config.name = "fuser"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["python", "Inputs", "Output"]
config.test_source_root = os.path.dirname(__file__)

# The tools come from the environment fuser is installed in (the venv that runs lit).
bindir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bindir, config.environment.get("PATH", os.environ.get("PATH", ""))])
for var in ("HOME", "FUSER_CACHE_DIR", "CUDA_VISIBLE_DEVICES", "PYTHONPATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Keep lit runs from writing into the user's kernel cache.
config.environment.setdefault("FUSER_CACHE_DIR", os.path.join(config.test_source_root, "Output", "cache"))
if shutil.which("filecheck", path=config.environment["PATH"]) is None:
    lit_config.fatal("filecheck is not installed in this environment (pip install filecheck)")
