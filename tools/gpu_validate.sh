#!/usr/bin/env bash
# One validation pass on a GPU machine inside a device-time budget, from the repo root:
#   export OUT; PYTEST_SECONDS=300 FUZZ_SECONDS=240 SANITIZE='sorts|scatters' BENCH='embedding' \
#       bash tools/gpu_validate.sh [pytest paths...]        (default: test/python)
# 1. installs as tools/gpu_session.sh does;
# 2. runs the GPU tests (-m gpu) on every core, stopped after PYTEST_SECONDS; each failure is
#    written to $OUT/failures.txt as it happens, so a run cut off by its limit still names them;
# 3. runs fuser-fuzz --gpu in FUZZ_PROCS processes for FUZZ_SECONDS (seeds from FUZZ_SEED, each
#    process 1000 apart; --seconds makes each print its summary however far it got), then
#    `fuser-fuzz --explain` on the first EXPLAIN failing seeds (default 4, each within
#    EXPLAIN_SECONDS) into $OUT/explain.txt;
# 4. runs the sanitizer on the cases matching SANITIZE, the fuser-bench rows matching BENCH, and
#    the models matching MODELS (`fuser-bench --models --quick --modes train`, e.g. '^gpt2$');
# 5. prints a short table last. A step whose variable is empty or 0 is skipped. At most five
#    files land in $OUT (the device machine returns a few files only).
# On a machine of several GPUs the pytest workers and the fuzz processes are spread over them
# (FUSER_TEST_GPUS, test/python/conftest.py); the tests that need several GPUs run after, alone.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PYTEST_SECONDS=${PYTEST_SECONDS:-300}
FUZZ_SECONDS=${FUZZ_SECONDS:-0}
FUZZ_PROCS=${FUZZ_PROCS:-12}
FUZZ_SEED=${FUZZ_SEED:-$(( $(date +%s) % 1000000 * 100 ))}
EXPLAIN=${EXPLAIN:-4}               # failing fuzz seeds explained after the run (0: none)
EXPLAIN_SECONDS=${EXPLAIN_SECONDS:-240}
SANITIZE=${SANITIZE:-}
BENCH=${BENCH:-}
MODELS=${MODELS:-}
bash tools/gpu_session.sh -- true > /dev/null 2>&1 || { echo "gpu_validate: install failed"; exit 1; }
export PYTHONPATH=/tmp/pkgs:/tmp/site PYTHONUNBUFFERED=1 FUSER_CACHE_DIR=${FUSER_CACHE_DIR:-/tmp/fuser-cache}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
ngpus=$(nvidia-smi -L | grep -c '^GPU ')
[ "$ngpus" -gt 1 ] && gpu="$ngpus x $gpu"
MULTI_GPU_TESTS=(test/python/test_multi_gpu.py)
t0=$(date +%s)
paths=("$@"); [ ${#paths[@]} -gt 0 ] || paths=(test/python)
: > "$OUT/failures.txt"

if [ "$PYTEST_SECONDS" -gt 0 ]; then
  # -vv (pyproject's -q takes one v back): xdist prints "[gwN] [ NN%] FAILED test::id" as each
  # test ends, where the progress dots would name failures only in the summary at the end
  ignore=(); [ "$ngpus" -gt 1 ] && for t in "${MULTI_GPU_TESTS[@]}"; do ignore+=(--ignore "$t"); done
  FUSER_TEST_GPUS=$ngpus timeout "$PYTEST_SECONDS" python3 -m pytest -p no:cacheprovider -vv -rfE --tb=short \
    -n "$(nproc)" -m gpu "${ignore[@]}" "${paths[@]}" \
    2>&1 | tee "$OUT/pytest.log" | grep --line-buffered -E '^\[gw[0-9]+\] \[ *[0-9]+%\] (FAILED|ERROR) ' \
    | sed -u -E 's/^\[gw[0-9]+\] \[ *[0-9]+%\] //' >> "$OUT/failures.txt"
  if [ "$ngpus" -gt 1 ]; then  # every GPU visible to these
    timeout 300 python3 -m pytest -p no:cacheprovider -rfE --tb=short -m gpu "${MULTI_GPU_TESTS[@]}" \
      > /tmp/gpu_validate_multi.log 2>&1
    grep -E '^(FAILED|ERROR) ' /tmp/gpu_validate_multi.log >> "$OUT/failures.txt"
    echo "multi-GPU tests: $(grep -E '(passed|failed|skipped)' /tmp/gpu_validate_multi.log | tail -n 1)" >> "$OUT/pytest.log"
  fi
fi
t_pytest=$(( $(date +%s) - t0 ))

if [ "$FUZZ_SECONDS" -gt 0 ]; then
  mkdir -p /tmp/gpu_validate_fuzz; rm -f /tmp/gpu_validate_fuzz/*
  for i in $(seq 0 $(( FUZZ_PROCS - 1 ))); do
    CUDA_VISIBLE_DEVICES=$(( i % ngpus )) python3 -m fuser.tools.fuzz --gpu --cases 100000 --seed $(( FUZZ_SEED + i * 1000 )) --seconds "$FUZZ_SECONDS" \
      --save-failures "$OUT/fuzz-failures" > "/tmp/gpu_validate_fuzz/$i.txt" 2>&1 &
  done
  wait
  cat /tmp/gpu_validate_fuzz/*.txt > "$OUT/fuzz.log"
  # each failing seed (the first EXPLAIN of them) explained on the spot: where it goes wrong,
  # which a machine without a GPU cannot tell (fuser-fuzz --explain)
  i=0
  for seed in $(grep -oE "^seed [0-9]+ " "$OUT/fuzz.log" | awk '{print $2}' | head -n "$EXPLAIN"); do
    CUDA_VISIBLE_DEVICES=$(( i % ngpus )) timeout "$EXPLAIN_SECONDS" python3 -m fuser.tools.fuzz --explain "$seed" \
      > "/tmp/gpu_validate_fuzz/explain-$seed.txt" 2>&1 &
    i=$(( i + 1 ))
  done
  wait
  cat /tmp/gpu_validate_fuzz/explain-*.txt > "$OUT/explain.txt" 2>/dev/null || true
fi

if [ -n "$SANITIZE" ]; then
  # compute-sanitizer starts /usr/bin/python3.12: the torch environment's packages go on its path
  PYTHONPATH=/tmp/pkgs:/tmp/site:/opt/torch/.venv/lib/python3.12/site-packages \
    python3 -m fuser.tools.sanitize --cases "$SANITIZE" > "$OUT/sanitize.log" 2>&1
fi
if [ -n "$BENCH" ]; then
  python3 -m fuser.tools.bench --filter "$BENCH" >> "$OUT/sanitize.log" 2>&1
fi
if [ -n "$MODELS" ]; then
  python3 -m fuser.tools.bench --models --quick --modes train --filter "$MODELS" >> "$OUT/sanitize.log" 2>&1
fi

echo "== gpu_validate on $gpu, $(( $(date +%s) - t0 )) s =="
if [ "$PYTEST_SECONDS" -gt 0 ]; then
  summary=$(grep -E "^=+ .* in [0-9.]+s" "$OUT/pytest.log" | tail -n 1)
  echo "pytest ($t_pytest s): ${summary:-cut off at ${PYTEST_SECONDS} s (no summary)}; $(grep -c . "$OUT/failures.txt") failure(s)"
  grep -E '^multi-GPU tests:' "$OUT/pytest.log" | sed 's/^/  /'
  sed 's/^/  /' "$OUT/failures.txt" | head -n 30
fi
if [ "$FUZZ_SECONDS" -gt 0 ]; then
  echo "fuzz (from seed $FUZZ_SEED, $FUZZ_PROCS processes):"
  grep -E "^fuser-fuzz:" "$OUT/fuzz.log" | sed 's/^/  /'
  grep -E "^seed [0-9]+ " "$OUT/fuzz.log" | sed 's/^/  /' | head -n 20
  [ -s "$OUT/explain.txt" ] && grep -E "^== seed|>> |^-- output" "$OUT/explain.txt" | sed 's/^/  /' | head -n 30
fi
if [ -n "$SANITIZE$BENCH$MODELS" ]; then
  tail -n 40 "$OUT/sanitize.log"
fi
