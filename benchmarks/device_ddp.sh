#!/usr/bin/env bash
# 1 vs 2 GPUs: the SAC g1_walk_flat default (owner YAML: async runtime) for SECONDS each, on the
# 2-GPU machine, from the wheels in .whl/, as benchmarks/device_train.sh.
# Usage (repository root, on the device machine):
#   bash benchmarks/device_ddp.sh OUTDIR [SECONDS=240] [overrides...]
# Run 1: training.devices=[0] (one learner on cuda:0, all the machine's cores).
# Run 2: training.devices=[0,1] (two ranks, NCCL, each with half the cores and its own envs:
#        training.num_envs per rank, so twice the envs in total).
# Each run's directory comes back as OUTDIR/run_<n>gpu.tgz.
# Overrides for one run only: env DDP_ARGS_1GPU / DDP_ARGS_2GPU (space-separated key=value), e.g. a
# shorter training.max_iterations for the 2-GPU run, which walks sooner.
# Each run is stopped with SIGINT after SECONDS (or ends at training.max_iterations if given) (rank 0 writes run_summary.json, status
# interrupted). Prints per run: env steps/s over the whole run (run_summary.json, all ranks,
# start-up and compile included) and the last progress line's rate (steady state, all ranks).
set -euo pipefail
out=$1; secs=${2:-240}; shift; [ $# -gt 0 ] && shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$out"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.device_count(), "GPUs")'
echo "cores: $(nproc)"
for devices in '[0]' '[0,1]'; do
  n=$(python3 -c "print(len($devices))")
  extra_var=DDP_ARGS_${n}GPU; read -r -a extra <<< "${!extra_var:-}"
  logs=/tmp/logs_ddp_$n
  # The run goes until SECONDS unless an override sets training.max_iterations (a key is given once).
  limit=(training.max_iterations=100000000)
  for a in "$@" "${extra[@]}"; do [[ $a == training.max_iterations=* ]] && limit=(); done
  rm -rf "$logs"
  echo "== training.devices=$devices for ${secs} s"
  t0=$(date +%s)
  timeout -s INT -k 120 "$secs" python3 -m unilab.cli train --algo sac --task g1_walk_flat --sim mujoco \
    "${limit[@]}" training.no_play=true training.log_dir="$logs" \
    training.devices="$devices" "$@" "${extra[@]}" > "$out/train_${n}gpu.log" 2>&1 || true
  if [ $(( $(date +%s) - t0 )) -lt 90 ]; then
    # A failure within 90 s (e.g. CUDA graphs vs the in-place gradient all-reduce): once more
    # without CUDA graphs, for the rest of the time.
    echo "== failed after $(( $(date +%s) - t0 )) s; retrying with runtime.compile_mode=max-autotune-no-cudagraphs"
    tail -n 30 "$out/train_${n}gpu.log"; mv "$out/train_${n}gpu.log" "$out/train_${n}gpu_failed.log"; rm -rf "$logs"
    timeout -s INT -k 120 $(( secs - $(date +%s) + t0 )) python3 -m unilab.cli train --algo sac --task g1_walk_flat \
      --sim mujoco "${limit[@]}" training.no_play=true training.log_dir="$logs" \
      training.devices="$devices" runtime.compile_mode=max-autotune-no-cudagraphs "$@" "${extra[@]}" > "$out/train_${n}gpu.log" 2>&1 || true
  fi
  tail -n 5 "$out/train_${n}gpu.log"
  summary=$(ls "$logs"/sac/g1_walk_flat/*/run_summary.json 2>/dev/null | head -n 1)
  [ -n "$summary" ] || { echo "no run_summary.json for $devices"; continue; }
  cp "$summary" "$out/summary_${n}gpu.json"
  # The run directory (config, TensorBoard events, curve; no checkpoints) comes back for diagnosis
  # on another machine, with a policy.onnx exported from its last checkpoint.
  d=$(dirname "$summary")
  [ -f "$d/policy.onnx" ] || python3 -m unilab.cli export "$d" >>"$out/export_${n}gpu.log" 2>&1 || true
  tar czf "$out/run_${n}gpu.tgz" -C "$d" --exclude='model_*.pt' . || true
  python3 - "$summary" "$out/train_${n}gpu.log" "$n" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
rates = re.findall(r"train \d+/\d+ \(\d+%\): (\d+) env steps/s", open(sys.argv[2]).read())
print(f"RESULT {sys.argv[3]} GPU(s): env_steps_per_s {s.get('env_steps_per_s')} (whole run, all ranks), "
      f"last progress line {rates[-1] if rates else '-'} env steps/s, world_size {s.get('world_size')}, "
      f"devices {s.get('devices')}, num_envs_total {s.get('num_envs_total')}, status {s.get('status')}, "
      f"utd_ratio {s.get('utd_ratio')}, ranks_identical {s.get('ranks_identical')}, "
      f"mean_episode_length {s.get('mean_episode_length')}, time_to_goal {s.get('time_to_goal_episode_length')}")
PY
done | tee "$out/device_ddp.txt"
grep '^RESULT' "$out/device_ddp.txt"
