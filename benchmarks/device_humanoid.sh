#!/usr/bin/env bash
# FlashSAC on Gymnasium's Humanoid-v4 on the one-GPU machine, several seeds side by side sharing
# the H200 (benchmarks/humanoid_flashsac.py, the official CPU-simulator settings). Needs the
# wheels in .whl/: the project's (device_seeds.sh's header) plus gymnasium, imageio, cloudpickle
# and farama-notifications (`pip download --no-deps` of each).
#
# PARALLEL=threads (the default): one process on all cores, one thread and CUDA stream per seed
# (--parallel threads). The seeds' kernels then share one CUDA context and run side by side on
# the GPU; as one process per seed they share it in time slices, and each seed's small acting
# pass waits for another process's slice (benchmarks/acting_latency.py measures that wait).
# Brings back OUTDIR/humanoid.json and humanoid.log.
# PARALLEL=processes: one process per seed, each on its own share of the cores; brings back
# OUTDIR/humanoid_<seed>.json and .log.
#
# Usage (repository root, on the device machine):
#   bash benchmarks/device_humanoid.sh OUTDIR STEPS SEED [SEED ...]
#   e.g. bash benchmarks/device_humanoid.sh $OUT 100000 0 1000 2000
# Prints the table against the published curve (per seed with PARALLEL=processes).
# SETS="KEY=VALUE ..." passes each as --set (FlashSACConfig or RuntimeConfig fields), e.g.
#   SETS="compile=false" bash benchmarks/device_humanoid.sh $OUT 100000 0
# The torch.compile caches (inductor, triton) of the call come back as OUTDIR/compile_cache.tgz,
# also when the call is stopped by a signal. The check compares returns at env steps, not
# wall-clock, so a later call may start warm: copy the file into a git-ignored folder of the tree
# (`mkdir -p .compile_cache && cp compile_cache.tgz .compile_cache/`), carry that folder, and set
# COMPILE_CACHE=.compile_cache/compile_cache.tgz (same machine kind, torch and code: else it
# compiles anew). The archive, not its contents, is carried: unpacked, one seed's caches are
# about 100 MB, over the 64 MiB a call carries. COMPILE_CACHE may also name an unpacked folder.
set -uo pipefail
if [ $# -lt 3 ]; then echo "error: expected OUTDIR STEPS SEED [SEED ...], got $# arguments" >&2; exit 2; fi
out=$1; steps=$2; shift 2
parallel=${PARALLEL:-threads}
case $parallel in threads|processes) ;; *) echo "error: PARALLEL=$parallel: expected threads or processes" >&2; exit 2;; esac
if [ -n "${COMPILE_CACHE:-}" ] && [ ! -d "$COMPILE_CACHE" ] && [ ! -f "$COMPILE_CACHE" ]; then
  echo "error: COMPILE_CACHE=$COMPILE_CACHE: expected a previous call's compile_cache.tgz or a folder it was unpacked into" >&2; exit 2
fi
mkdir -p "$out" /tmp/hcache; nproc; nvidia-smi -L
export TORCHINDUCTOR_CACHE_DIR=/tmp/hcache/inductor TRITON_CACHE_DIR=/tmp/hcache/triton
if [ -d "${COMPILE_CACHE:-}" ]; then cp -r "$COMPILE_CACHE"/. /tmp/hcache/
elif [ -n "${COMPILE_CACHE:-}" ]; then tar xzf "$COMPILE_CACHE" -C /tmp/hcache || exit 1; fi
pack_cache() { tar czf "$out/compile_cache.tgz" -C /tmp/hcache . && du -h "$out/compile_cache.tgz"; }
trap pack_cache EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site_h .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site_h PYTHONUNBUFFERED=1
sets=()
for kv in ${SETS:-}; do sets+=(--set "$kv"); done
if [ "$parallel" = threads ]; then
  seeds=$(IFS=,; echo "$*")
  python3 benchmarks/humanoid_flashsac.py --steps "$steps" --seeds "$seeds" --device cuda --parallel threads \
    "${sets[@]}" --out "$out/humanoid.json" >"$out/humanoid.log" 2>&1
  rc=$?
  tail -n 15 "$out/humanoid.log"
  exit $rc
fi
n=$#; per=$(( $(nproc) / n )); i=0; pids=()
for seed in "$@"; do
  cpus="$(( i * per ))-$(( (i + 1) * per - 1 ))"
  taskset -c "$cpus" python3 benchmarks/humanoid_flashsac.py --steps "$steps" --seeds "$seed" --device cuda \
    "${sets[@]}" --out "$out/humanoid_$seed.json" >"$out/humanoid_$seed.log" 2>&1 & pids+=($!)
  i=$((i + 1))
done
wait "${pids[@]}"
for seed in "$@"; do echo "== seed $seed"; tail -n 15 "$out/humanoid_$seed.log"; done
