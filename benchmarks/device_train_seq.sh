#!/usr/bin/env bash
# g1_walk_flat trainings one after another on the whole GPU machine (all its cores, GPU 0), each
# `unilab train --algo <algo> --task g1_walk_flat --sim mujoco` with its own overrides, stopped by
# SIGINT after LIMIT_S if still running (no play). Each run's directory (summary, config, curve,
# TensorBoard events, log; no checkpoints) comes back as OUTDIR/<n>.tgz, n = 1, 2, ...
# Needs the wheels in .whl/, PyAV among them (see device_train.sh).
# Usage: bash benchmarks/device_train_seq.sh OUTDIR LIMIT_S "overrides 1" ["overrides 2" ...]
#   An override string may start with "algo=flashsac " to train another registered algorithm.
set -uo pipefail
out=$1; limit=$2; shift 2
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$out"; nproc; nvidia-smi -L; lscpu | grep -E 'Model name|Thread|Core|Socket|NUMA node'
n=0
for args in "$@"; do
  n=$((n + 1)); algo=sac
  if [[ "$args" == algo=* ]]; then algo=${args%% *}; algo=${algo#algo=}; args=${args#* }; [[ "$args" == algo=* ]] && args=""; fi
  echo "== run $n: --algo $algo $args (limit $limit s)"
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout --foreground --preserve-status -s INT -k 60 "$limit" python3 -m unilab.cli train --algo "$algo" --task g1_walk_flat --sim mujoco \
    training.log_dir=/tmp/run$n training.progress=false training.no_play=true $args >"/tmp/run$n.log" 2>&1
  # --preserve-status: python's own status. 130 with "training stopped by SIGINT" in the log is a
  # clean stop; 130 without it, or 137, means the process died of the signal.
  echo "[run $n] exit code $? after $(( $(date +%s) - t0 )) s" | tee -a "/tmp/run$n.log"
  tail -n 4 "/tmp/run$n.log"
  d=$(ls -td /tmp/run$n/"$algo"/g1_walk_flat/*/ 2>/dev/null | head -1)  # newest: a warm machine keeps /tmp
  [ -n "$d" ] || { cp "/tmp/run$n.log" "$out/$n.log"; continue; }
  cp "/tmp/run$n.log" "$d/train.log"
  # The last checkpoint's policy as ONNX (about 1 MB, checkpoints stay behind): enough to roll the
  # policy out again on another machine (a run stopped by a signal exports no policy of its own).
  [ -f "$d/policy.onnx" ] || python3 -m unilab.cli export "$d" >>"$d/train.log" 2>&1 || true
  rm -f "$d"/model_*.pt
  python3 - "$d/run_summary.json" "$n" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
r = s.get("episode_rewards", {})
print(f"RESULT run {sys.argv[2]}: status {s.get('status')}, iterations {s.get('iterations')}, env_steps {s.get('env_steps')}, "
      f"env_steps_per_s {s.get('env_steps_per_s')}, mean_episode_length {s.get('mean_episode_length')}, "
      f"track_linear_velocity {r.get('track_linear_velocity')}, time_to_goal {s.get('time_to_goal_episode_length')}, "
      f"learn_wall_time_s {s.get('learn_wall_time_s')}")
PY
  tar czf "$out/$n.tgz" -C "$d" .
done
