#!/usr/bin/env bash
# The async runtime and the update speed on the 2-GPU machine (nvidia-h200-x2), two jobs side by side:
#   A (GPU 0, cores 0-15): benchmarks/async_vs_sync.py with ASYNC_ARGS (backend alone, then the async rows);
#   B (GPU 1, cores 16-31): pytest on TESTS (default: unilab_rl/tests/test_agent.py -k cuda), then, unless
#      UPDATE_MODES is "none", benchmarks/update_speed.py with and without runtime.cuda_graph=true.
# With WALK="overrides" non-empty (and WALK_LIMIT_S, default 420), job B instead trains `unilab train --algo sac
#   --task g1_walk_flat --sim mujoco` with those overrides, stopped by SIGINT after WALK_LIMIT_S, and packs the
#   run directory (checkpoints dropped, policy.onnx exported) as OUTDIR/walk.tgz; UPDATE_MODES is then unused.
#   WALK=" " (one space) trains the plain default; WALK unset or empty runs the tests and update benchmark.
# Needs .whl: the wheels of the four packages and of mujoco and pydantic (the host cannot reach a
#   registry: `pip wheel` the packages and `pip download` the rest beforehand), plus pytest, iniconfig, packaging,
#   pygments and pluggy for the tests (`pip download --only-binary=:all: --no-deps --python-version 3.12 ...`).
# Usage: bash benchmarks/device_async_update.sh OUTDIR "ASYNC_ARGS" "UPDATE_MODES"
set -uo pipefail
out=$1; async_args=$2; modes=${3:-eager,reduce-overhead}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$out"; nproc; nvidia-smi -L
jobA() {
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=0 taskset -c 0-15 python3 benchmarks/async_vs_sync.py --num-envs 1024 --device cuda \
    --preset "" --out "$out/async.json" $async_args >"$out/async.log" 2>&1
  echo "[A] exit $?" >>"$out/async.log"
}
jobB() {
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=1 taskset -c 16-31 python3 -m pytest -q -p no:cacheprovider ${TESTS:-unilab_rl/tests/test_agent.py -k cuda} \
    >"$out/tests.log" 2>&1
  echo "[B tests] exit $?" >>"$out/tests.log"
  [ "$modes" = none ] && return
  for graph in false true; do
    CUDA_VISIBLE_DEVICES=1 taskset -c 16-31 python3 benchmarks/update_speed.py --device cuda --algos sac \
      --modes "$modes" --set runtime.cuda_graph=$graph --out "$out/update_$graph.json" >"$out/update_$graph.log" 2>&1
    echo "[B update cuda_graph=$graph] exit $?" >>"$out/update_$graph.log"
  done
}
jobWalk() {
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=1 timeout --foreground --preserve-status -s INT "${WALK_LIMIT_S:-420}" taskset -c 16-31 \
    python3 -m unilab.cli train --algo sac --task g1_walk_flat --sim mujoco training.log_dir=/tmp/walk \
    training.progress=false training.no_play=true $WALK >"$out/walk.log" 2>&1
  echo "[walk] exit $?" >>"$out/walk.log"
  local d; d=$(ls -td /tmp/walk/sac/g1_walk_flat/*/ | head -1)
  [ -f "$d/policy.onnx" ] || python3 -m unilab.cli export "$d" >>"$out/walk.log" 2>&1 || true
  rm -f "$d"/model_*.pt
  tar czf "$out/walk.tgz" -C "$d" .
}
if [ -n "${WALK:-}" ]; then jobA & jobWalk & wait; else jobA & jobB & wait; fi
for f in "$out"/tests.log "$out"/update_*.log "$out"/walk.log "$out"/async.log; do
  [ -f "$f" ] && { echo "== $f"; tail -n 14 "$f"; }
done
