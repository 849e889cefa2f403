#!/usr/bin/env bash
# Physics benchmark on the GPU machine from the wheels in .whl/ (see device_train.sh). Usage (repository root, on the device machine):
#   bash benchmarks/device_physics.sh OUTDIR [benchmarks/physics.py options...]
# Installs the wheels into /tmp/site, runs benchmarks/physics.py (default grid: nworld 256, 1024,
# 4096 x threads 1, 2, 4, 8, 16; about 4-5 minutes on 16 cores), writes OUTDIR/physics.json and
# OUTDIR/physics.txt, and prints the compact table last.
set -euo pipefail
out=$1; shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$out"
python3 benchmarks/physics.py --out "$out/physics.json" "$@" 2>&1 | tee "$out/physics.txt"
