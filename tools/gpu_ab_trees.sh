#!/usr/bin/env bash
# A/B of fuser trees on one GPU machine, for changes whose effect shows in a model's step but
# not in a pipeline option (python -m fuser.tools.bench.ab compares pipelines in one process):
#   git archive REV | tar -x -C .gpu_trees/NAME      (here, for each tree; .gpu_* is carried)
#   export OUT; MODEL=gpt2 ROUNDS=5 TURNS=2 bash tools/gpu_ab_trees.sh .gpu_trees/A .gpu_trees/B
# Installs each tree into /tmp/pkgs_<name> (the carried wheels as tools/gpu_session.sh does), then
# runs fuser.tools.bench.step_host for each tree in turn, TURNS times (A B A B ...), each tree with
# a kernel cache of its own, and prints the rounds: step time, the host's queueing time, memory.
set -uo pipefail
MODEL=${MODEL:-gpt2}; ROUNDS=${ROUNDS:-5}; TURNS=${TURNS:-2}; SECONDS_EACH=${SECONDS_EACH:-240}
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl >/dev/null || exit 1
for tree in "$@"; do
  name=$(basename "$tree")
  (cd "$tree" && PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-compile \
    --upgrade --target "/tmp/pkgs_$name" . >/dev/null) || { echo "gpu_ab_trees: $tree did not install"; exit 1; }
done
nvidia-smi --query-gpu=name --format=csv,noheader
for turn in $(seq "$TURNS"); do
  for tree in "$@"; do
    name=$(basename "$tree")
    echo "== $name (turn $turn)"
    PYTHONPATH="/tmp/pkgs_$name:/tmp/site" PYTHONUNBUFFERED=1 FUSER_CACHE_DIR="/tmp/fuser-cache-$name" \
      timeout "$SECONDS_EACH" python3 -m fuser.tools.bench.step_host "$MODEL" --rounds "$ROUNDS" 2>&1 \
      | grep -E '^(# |round |Traceback|[A-Za-z]*Error)'
  done
done
