#!/usr/bin/env bash
# One GPU-machine session: install the carried pure-Python wheels, run the GPU tests, then an
# optional command (e.g. the benchmark). Usage on the device machine, from the repo root:
#   bash tools/gpu_session.sh [pytest args...] [-- command...]
# The machine has torch, numpy, llvmlite and cuda.bindings; xdsl, lit and filecheck travel
# as wheels in .whl/ (see README, "Running on a GPU machine").
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl >/dev/null || exit 1
# fuser itself, installed (not linked): fuser.torch lives in frontend/torch (pyproject's package-dir).
# Built with the carried setuptools (>= 77 reads the SPDX license string), whatever the machine has.
PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-compile --upgrade \
  --target /tmp/pkgs . >/dev/null || exit 1
export PYTHONPATH=/tmp/pkgs:/tmp/site PYTHONUNBUFFERED=1
export FUSER_CACHE_DIR=${FUSER_CACHE_DIR:-/tmp/fuser-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
pyargs=(); cmd=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; cmd=("$@"); break; fi
  pyargs+=("$1"); shift
done
if [ ${#pyargs[@]} -gt 0 ]; then
  python3 -m pytest -p no:cacheprovider "${pyargs[@]}" 2>&1 | tee "$OUT/pytest.log" | tail -n 60
fi
if [ ${#cmd[@]} -gt 0 ]; then
  "${cmd[@]}"
fi
