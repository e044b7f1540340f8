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

# One warm fuser-opt for the whole run (tools/opt_server.py): loading the compiler is most of a
# short fuser-opt call, and the suite makes hundreds. FUSER_LIT_SERVER=0 runs each call cold.
if os.environ.get("FUSER_LIT_SERVER", "1") != "0":
    import atexit
    import subprocess
    import tempfile
    import time

    _server_dir = tempfile.mkdtemp(prefix="fuser-lit-")
    _socket = os.path.join(_server_dir, "fuser-opt.sock")
    _server = subprocess.Popen([sys.executable, "-m", "fuser.tools.opt_server", _socket],
                               env=dict(os.environ, **config.environment))

    def _stop_server():
        _server.terminate()
        _server.wait()
        shutil.rmtree(_server_dir, ignore_errors=True)

    atexit.register(_stop_server)
    _deadline = time.monotonic() + 60
    while not os.path.exists(_socket) and _server.poll() is None and time.monotonic() < _deadline:
        time.sleep(0.05)
    if os.path.exists(_socket):
        config.environment["FUSER_OPT_SERVER"] = _socket
    else:
        lit_config.warning("the warm fuser-opt server did not start; each fuser-opt call starts cold")
