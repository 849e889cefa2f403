#!/usr/bin/env bash
# Several trainings side by side on the one-GPU machine (nvidia-h200, 16 cores), each on its own
# cores, then `unilab eval` of each run's final policy with this tree's code, on the same cores.
#
# Usage (repository root, on the device machine):
#   bash benchmarks/device_seeds.sh OUTDIR LIMIT_S "TAG CODE CPUS ALGO TASK [key=value ...]" ...
#     TAG    name of the run (letters, digits, _ and -)
#     CODE   new (this tree, wheels in .whl) or old (the wheels in .whl_old: another commit's four
#            packages, built with `pip wheel --no-deps -w .whl_old ./mjbatch_uni ./unisim ./unilab_rl
#            ./unilab` in that commit's checkout; they run on .whl's third-party wheels)
#     CPUS   cores for taskset, e.g. 0-7; runs in one invocation go side by side and must not share
#            cores (refused); for one run after another, call the script once per run
#   Each run is stopped by SIGINT after LIMIT_S if still running (its summary then says so).
# Needs the wheels in .whl/ (see device_train.sh; PyAV is not needed: runs skip the video).
# Brings back OUTDIR/<TAG>.tgz: run_summary.json, run_config.json, learning_curve.png, the
# TensorBoard events, eval_*.json, policy.onnx, train.log and eval.txt. With RECORD_TAGS="TAG ..."
# set, those (new-code g1_walk_flat) runs also record the stepping clips of
# scripts/motion_commands/*.yaml with `unilab motion record` into the tgz's clips/. With
# POST_EVAL="COMMAND" set, `COMMAND RUN_DIR` runs after each run's evaluation, while its
# checkpoints are still there (e.g. POST_EVAL="python3 benchmarks/actor_average_ab.py").
# Each run compiles with its own empty torch.compile caches (TORCHINDUCTOR_CACHE_DIR and
# TRITON_CACHE_DIR under /tmp/compile_cache/TAG), so every run pays the cold first compile that a
# user's first run on a fresh machine pays, whatever ran before it in the call: a run after
# another would otherwise find its compiled update in the shared cache and start tens of seconds
# earlier. SHARED_COMPILE_CACHE=1 keeps torch's shared default caches instead. eval.txt ends with
# `benchmarks/run_timeline.py`'s line for the run: its first logged iteration's time and its
# steady rate from iteration 1,000 (from 100 in runs that stop before 1,000).
set -uo pipefail
out=$1; limit=$2; shift 2
# Runs given together share the machine: refuse core sets that overlap (run such specs in
# separate invocations, one after the other).
declare -A taken=()
for spec in "$@"; do
  read -r tag _ cpus _ <<<"$spec"
  IFS=, read -ra parts <<<"$cpus"
  for part in "${parts[@]}"; do
    lo=${part%-*}; hi=${part#*-}
    for ((c = lo; c <= hi; c++)); do
      if [ -n "${taken[$c]:-}" ]; then
        echo "error: CPUS of $tag ($cpus) overlap ${taken[$c]}'s at core $c; expected disjoint core sets for runs side by side" >&2
        exit 2
      fi
      taken[$c]=$tag
    done
  done
done
mkdir -p "$out"; nproc; nvidia-smi -L
install() {  # install() TARGET WHEELS...: one site folder per code version
  local target=$1; shift
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$target" "$@"
}
third_party=$(ls .whl/*.whl | grep -v -E '/(unilab|unilab_rl|unisim|mjbatch_uni|unisim_mjstep|unilab_robot_[a-z0-9_]+)-[0-9]')
install /tmp/site_new .whl/*.whl || exit 1
if ls .whl_old/*.whl >/dev/null 2>&1; then install /tmp/site_old $third_party .whl_old/*.whl || exit 1; fi
export PYTHONUNBUFFERED=1

one() {
  local tag=$1 code=$2 cpus=$3 algo=$4 task=$5; shift 5
  local site=/tmp/site_$code d rc t0
  rm -rf "/tmp/runs/$tag"; mkdir -p "/tmp/runs/$tag"
  if [ "${SHARED_COMPILE_CACHE:-0}" != 1 ]; then  # a cold, private compile cache per run
    rm -rf "/tmp/compile_cache/$tag"
    export TORCHINDUCTOR_CACHE_DIR=/tmp/compile_cache/$tag/inductor TRITON_CACHE_DIR=/tmp/compile_cache/$tag/triton
  fi
  t0=$(date +%s)
  PYTHONPATH=$site timeout --foreground --preserve-status -s INT "$limit" taskset -c "$cpus" \
    python3 -m unilab.cli train --algo "$algo" --task "$task" --sim mujoco training.log_dir="/tmp/runs/$tag" \
    training.progress=false training.no_play=true "$@" >"/tmp/runs/$tag.log" 2>&1
  rc=$?
  echo "[$tag] code $code, exit code $rc after $(( $(date +%s) - t0 )) s" >>"/tmp/runs/$tag.log"
}
pids=()
for spec in "$@"; do
  # shellcheck disable=SC2086
  one $spec & pids+=($!)
done
wait "${pids[@]}"

# Evaluate every run's final policy with this tree's code (old runs' configs are read through the
# key migration), each on its run's cores, all at once, then pack what comes back.
finish() {
  local tag=$1 cpus=$3 algo=$4 task=$5 d name script
  d=$(ls -td /tmp/runs/"$tag"/"$algo"/"$task"/*/ 2>/dev/null | head -1)
  [ -n "$d" ] || { echo "[$tag] no run directory" >"/tmp/runs/$tag.finish"; tail -n 20 "/tmp/runs/$tag.log" >>"/tmp/runs/$tag.finish"; return; }
  cp "/tmp/runs/$tag.log" "$d/train.log"
  export PYTHONPATH=/tmp/site_new
  taskset -c "$cpus" python3 -m unilab.cli eval "$d" >"$d/eval.txt" 2>&1 || echo "[$tag] eval failed" >>"$d/eval.txt"
  taskset -c "$cpus" python3 -m unilab.cli export "$d" >>"$d/eval.txt" 2>&1 || true
  if [[ " ${RECORD_TAGS:-} " == *" $tag "* ]]; then
    mkdir -p "$d/clips"
    for script in scripts/motion_commands/*.yaml; do
      name=$(basename "$script" .yaml)
      taskset -c "$cpus" python3 -m unilab.cli motion record "$d" --commands "$script" \
        --out "$d/clips/$name.npz" >>"$d/eval.txt" 2>&1 || echo "[$tag] record $name failed" >>"$d/eval.txt"
    done
  fi
  if [ -n "${POST_EVAL:-}" ]; then
    # shellcheck disable=SC2086
    taskset -c "$cpus" $POST_EVAL "$d" >>"$d/eval.txt" 2>&1 || echo "[$tag] POST_EVAL failed" >>"$d/eval.txt"
  fi
  python3 benchmarks/run_timeline.py "$tag=$d" --from-iteration 1000 >>"$d/eval.txt" 2>/dev/null \
    || python3 benchmarks/run_timeline.py "$tag=$d" --from-iteration 100 >>"$d/eval.txt" 2>&1 || true
  { echo "== $tag"; tail -n 3 "$d/train.log"; cat "$d/eval.txt"; } >"/tmp/runs/$tag.finish"
  rm -f "$d"/model_*.pt  # policy.onnx holds the policy; checkpoints stay behind (size)
  tar czf "$out/$tag.tgz" -C "$d" .
}
pids=()
for spec in "$@"; do
  # shellcheck disable=SC2086
  finish $spec & pids+=($!)
done
wait "${pids[@]}"
for spec in "$@"; do
  read -r tag _ <<<"$spec"
  cat "/tmp/runs/$tag.finish"
done
