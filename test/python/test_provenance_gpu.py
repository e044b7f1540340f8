"""Provenance on the GPU: a kernel's instructions carry the .mlir line of the fusion op they
come from, so compute-sanitizer names the user's file and line.

A planted out-of-bounds read (an input whose buffer holds one element where the fusion reads
a million) is run under memcheck; its report must point at `planted.mlir` and a line that
holds one of the fusion's ops. Skipped where compute-sanitizer is missing or cannot see the
device (gVisor machines: "Device not supported").
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

from fuser.tools.sanitize import CUDA_SANITIZER, _pythonpath

pytestmark = pytest.mark.gpu

PLANTED = """func.func @planted(%x: tensor<1048576xf32>, %y: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %s = fusion.add %x, %y : tensor<1048576xf32>
  %r = fusion.relu %s : tensor<1048576xf32>
  func.return %r : tensor<1048576xf32>
}
"""
OP_LINES = {2, 3}  # the lines of fusion.add and fusion.relu above

LAUNCH = """
import sys
import numpy as np
import fuser
from fuser.runtime import driver
from fuser.runtime.arrays import DeviceArray

f = fuser.compile(sys.argv[1])
x = DeviceArray((1,), "f32")   # one element...
x.shape = (1048576,)           # ...passed off as a million: the kernel reads past the end
y = DeviceArray((1048576,), "f32")
f(x, y)
driver.synchronize()
"""


def test_memcheck_names_the_mlir_line(tmp_path):
    sanitizer = shutil.which("compute-sanitizer") or shutil.which(CUDA_SANITIZER)
    if sanitizer is None:
        pytest.skip("compute-sanitizer not found")
    src = tmp_path / "planted.mlir"
    src.write_text(PLANTED)
    script = tmp_path / "launch.py"
    script.write_text(LAUNCH)
    env = dict(os.environ, PYTHONPATH=_pythonpath(), FUSER_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sanitizer, "--tool", "memcheck", "--show-backtrace", "device", sys.executable,
                        str(script), str(src)], env=env, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    if "Device not supported" in out:
        pytest.skip("compute-sanitizer cannot see this device")
    assert "Invalid __global__ read" in out, out[-3000:]
    lines = {int(m) for m in re.findall(r"planted\.mlir:(\d+)", out)}
    assert lines, f"memcheck's report names no line of planted.mlir:\n{out[-3000:]}"
    assert lines <= OP_LINES, f"lines {sorted(lines)} are not fusion op lines {sorted(OP_LINES)}"
