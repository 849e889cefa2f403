#!/usr/bin/env bash
# Two trainings side by side on the 2-GPU machine (nvidia-h200-x2): run A on GPU 0 and cores 0-15,
# run B on GPU 1 and cores 16-31, each with its own overrides; copies each run's summary, curve,
# TensorBoard events and log into OUTDIR. Needs the wheels in .whl/ (see device_train.sh).
# Usage: bash benchmarks/device_ab.sh OUTDIR LIMIT_S "A overrides" "B overrides"
set -uo pipefail
out=$1; limit=$2; a=$3; b=$4
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$out"; nproc; nvidia-smi -L
one() {
  local tag=$1 gpu=$2 cpus=$3 args=$4
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$gpu timeout -s INT "$limit" taskset -c "$cpus" python3 -m unilab.cli train \
    --algo sac --task g1_walk_flat --sim mujoco training.log_dir=/tmp/$tag training.no_play=true \
    training.progress=false $args >"$out/$tag.log" 2>&1
  local d; d=$(ls -td /tmp/$tag/*/*/*/ | head -1)  # newest: a warm machine keeps /tmp
  cp "$d/run_summary.json" "$out/${tag}_summary.json"; cp "$d/learning_curve.png" "$out/${tag}_curve.png"
  tar czf "$out/${tag}_tb.tgz" -C "$d" $(cd "$d" && ls events*)
}
one A 0 0-15 "$a" & one B 1 16-31 "$b" & wait
for t in A B; do echo "== $t"; tail -n 5 "$out/$t.log"; cat "$out/${t}_summary.json"; done
