#!/usr/bin/env bash
# Two g1_walk_flat trainings side by side on the 2-GPU machine (nvidia-h200-x2): run A on GPU 0 and
# cores 0-15, run B on GPU 1 and cores 16-31, each `unilab train --algo sac --task g1_walk_flat
# --sim mujoco` with its own overrides, stopped by SIGINT after LIMIT_S if still running; play
# (EGL video) and export run at the end of a completed run. Each run's directory (summary, config,
# curve, TensorBoard events, video, policy.onnx, log) comes back as OUTDIR/<tag>.tgz.
# Needs the wheels in .whl/, PyAV among them (see device_train.sh), and .gl (scripts/fetch-gl-loaders.sh).
# Usage: bash benchmarks/device_walk.sh OUTDIR LIMIT_S "A overrides" "B overrides"
#   An override string may start with "algo=flashsac " to train another registered algorithm, e.g.
#   FlashSAC vs SAC side by side: ... "algo=flashsac runtime.mode=async" "".
#   "task=NAME " (before or after algo=) trains another task (default g1_walk_flat), e.g.
#   "algo=flashsac task=g1_motion_tracking runtime.mode=async".
# An async run that fails within 90 s is repeated with runtime.mode=sync (reported in the log).
set -uo pipefail
out=$1; limit=$2; a=$3; b=$4
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$vendor" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 MUJOCO_GL=egl PYOPENGL_PLATFORM=egl
mkdir -p "$out"; nproc; nvidia-smi -L
one() {
  local tag=$1 gpu=$2 cpus=$3 args=$4 algo=sac task=g1_walk_flat t0 rc d
  while [[ "$args" == algo=* || "$args" == task=* ]]; do  # leading algo=NAME / task=NAME, any order
    local word=${args%% *}
    if [[ "$word" == algo=* ]]; then algo=${word#algo=}; else task=${word#task=}; fi
    args=${args#"$word"}; args=${args# }
  done
  rm -rf "/tmp/$tag" "/tmp/$tag.log"  # a warm machine keeps /tmp: never pack an earlier call's run
  t0=$(date +%s)
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$gpu timeout --foreground --preserve-status -s INT "$limit" taskset -c "$cpus" python3 -m unilab.cli train \
    --algo "$algo" --task "$task" --sim mujoco training.log_dir=/tmp/$tag training.progress=false \
    $args >"/tmp/$tag.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && [ $(( $(date +%s) - t0 )) -lt 90 ] && [[ "$args" == *runtime=async* ]]; then
    echo "[$tag] async failed (rc $rc) after $(( $(date +%s) - t0 )) s; retrying with sync" >>"/tmp/$tag.log"
    rm -rf "/tmp/$tag/$algo"
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES=$gpu timeout --foreground --preserve-status -s INT $(( limit - $(date +%s) + t0 )) taskset -c "$cpus" \
      python3 -m unilab.cli train --algo "$algo" --task "$task" --sim mujoco training.log_dir=/tmp/$tag \
      training.progress=false ${args//runtime=async/runtime=sync} >>"/tmp/$tag.log" 2>&1
    rc=$?
  fi
  # --preserve-status: python's own status. 130 with "training stopped by SIGINT" in the log is a
  # clean stop; 130 without it, or 137, means the process died of the signal.
  echo "[$tag] exit code $rc after $(( $(date +%s) - t0 )) s" >>"/tmp/$tag.log"
  d=$(ls -td /tmp/$tag/"$algo"/"$task"/*/ | head -1)
  cp "/tmp/$tag.log" "$d/train.log"
  # The last checkpoint's policy as ONNX (about 1 MB, checkpoints stay behind): enough to roll the
  # policy out again on another machine (a run stopped by a signal exports no policy of its own).
  [ -f "$d/policy.onnx" ] || python3 -m unilab.cli export "$d" >>"$d/train.log" 2>&1 || true
  rm -f "$d"/model_*.pt
  tar czf "$out/$tag.tgz" -C "$d" .
}
one A 0 0-15 "$a" & one B 1 16-31 "$b" & wait
for t in A B; do echo "== $t"; tail -n 8 "/tmp/$t.log"; done
