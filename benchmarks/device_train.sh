#!/usr/bin/env bash
# Train on the GPU machine from wheels in .whl/: the host has torch but no mujoco or pydantic and
# cannot reach a registry, so .whl/ holds x86-64 CPython 3.12 wheels of those
# (`pip download --only-binary=:all: --python-version 3.12 --no-deps mujoco pydantic ...`) and of
# the four packages (`pip wheel --no-deps ./mjbatch_uni ./unisim ./unilab_rl ./unilab`).
# Usage (repository root, on the device machine): bash benchmarks/device_train.sh OUTDIR [overrides...]
# Installs the wheels into /tmp/site, then runs `unilab train` with the given overrides and copies
# each run's run_summary.json to OUTDIR.
set -euo pipefail
out=$1; shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$out"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
nproc
python3 -m unilab.cli train --algo sac --task g1_walk_flat --sim mujoco \
  training.log_dir=/tmp/logs "$@" 2>&1 | tail -n 30
for f in /tmp/logs/sac/g1_walk_flat/*/run_summary.json; do
  cp "$f" "$out/$(basename "$(dirname "$f")")_summary.json"; cat "$f"
done
