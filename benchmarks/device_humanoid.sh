#!/usr/bin/env bash
# FlashSAC on Gymnasium's Humanoid-v4 on the one-GPU machine: one process per seed, side by side,
# each on its own cores, sharing the H200 (benchmarks/humanoid_flashsac.py, the official
# CPU-simulator settings). Needs the wheels in .whl/: the project's (device_seeds.sh's header) plus
# gymnasium, imageio, cloudpickle and farama-notifications (`pip download --no-deps` of each).
# Usage (repository root, on the device machine):
#   bash benchmarks/device_humanoid.sh OUTDIR STEPS SEED [SEED ...]
#   e.g. bash benchmarks/device_humanoid.sh $OUT 100000 0 1000 2000
# Brings back OUTDIR/humanoid_<seed>.json and .log; prints each seed's table against the
# published curve.
set -uo pipefail
out=$1; steps=$2; shift 2
mkdir -p "$out"; nproc; nvidia-smi -L
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site_h .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site_h PYTHONUNBUFFERED=1
n=$#; per=$(( $(nproc) / n )); i=0; pids=()
for seed in "$@"; do
  cpus="$(( i * per ))-$(( (i + 1) * per - 1 ))"
  taskset -c "$cpus" python3 benchmarks/humanoid_flashsac.py --steps "$steps" --seeds "$seed" --device cuda \
    --out "$out/humanoid_$seed.json" >"$out/humanoid_$seed.log" 2>&1 & pids+=($!)
  i=$((i + 1))
done
wait "${pids[@]}"
for seed in "$@"; do echo "== seed $seed"; tail -n 15 "$out/humanoid_$seed.log"; done
