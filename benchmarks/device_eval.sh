#!/usr/bin/env bash
# One seed of the default SAC g1_walk_flat run on the GPU machine (nvidia-h200), then `unilab eval`
# of its final policy. Training evaluates snapshots every training.eval_interval iterations (the
# owner YAML's 250) in the background, so run_summary.json also holds time_to_eval_pass.
# Needs the wheels in .whl/ (see device_train.sh). Copies back OUTDIR/seed<N>_{summary.json,
# eval_walking.json,eval.txt,learning_curve.png}.
# Usage (repository root, on the device machine): bash benchmarks/device_eval.sh OUTDIR SEED [overrides...]
set -uo pipefail
out=$1; seed=$2; shift 2
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$out"; nproc; nvidia-smi -L
rm -rf "/tmp/seed$seed"  # a warm machine keeps /tmp
python3 -m unilab.cli train --algo sac --task g1_walk_flat --sim mujoco training.seed="$seed" \
  training.log_dir="/tmp/seed$seed" training.progress=false training.no_play=true "$@" 2>&1 | tail -n 5
run=$(ls -d /tmp/seed"$seed"/sac/g1_walk_flat/* | tail -n 1)
python3 -m unilab.cli eval "$run" 2>&1 | tee "$out/seed${seed}_eval.txt"
cp "$run/run_summary.json" "$out/seed${seed}_summary.json"
cp "$run/eval_walking.json" "$out/seed${seed}_eval_walking.json"
cp "$run/learning_curve.png" "$out/seed${seed}_learning_curve.png"
python3 - "$run/run_summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
e = s.get("eval_during_training") or {}
print("time_to_eval_pass:", s.get("time_to_eval_pass"))
print("eval during training:", {k: e.get(k) for k in ("interval", "evals", "skipped", "busy_s", "error")})
print("learn wall s:", s.get("learn_wall_time_s"), "env steps/s:", s.get("env_steps_per_s"))
EOF
