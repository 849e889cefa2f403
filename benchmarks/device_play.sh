#!/usr/bin/env bash
# EGL check of play + video + export on the GPU machine: `unilab play` of a short run writes a
# video that decodes to frames of the configured size, and `unilab export` reports its max diff.
#
# Usage (repository root, on the device machine, carrying .whl and .gl):
#   set -o pipefail; bash benchmarks/device_play.sh "$OUT" [RUN_DIR] 2>&1 | tee "$OUT/device_play.log"
# .whl/: wheels of mujoco, pydantic, PyAV and the project (see device_train.sh)
# .gl/:  scripts/fetch-gl-loaders.sh              (libglvnd/libvulkan loaders; the driver is there)
# Without RUN_DIR it trains a short run with play + export at its end (TRAIN_ARGS, default
# "--preset laptop training.max_iterations=20 runtime.compile=false"), then runs `unilab play latest`
# and `unilab export latest` again, all with MUJOCO_GL=egl. With RUN_DIR it plays and exports that
# run. OUT_DIR gets: run_summary_train.json (after training), run_summary.json,
# play.mp4, policy.onnx, check.json (the decoded video's frame count and size, the GL backend and
# renderer, the ONNX difference). Exit 0 only when the video came from EGL and decodes to the
# configured size and frame count (not blank), from the NVIDIA driver where there is an NVIDIA
# device, and the ONNX check passed.
set -euo pipefail
out=${1:?usage: bash benchmarks/device_play.sh OUT_DIR [RUN_DIR]}
run=${2:-}
mkdir -p "$out"

# 1. GL loaders (the device notes: unpack the carried .debs into /, then ldconfig), unless the
#    image already has them. The NVIDIA EGL vendor file is named if glvnd's default folders lack it.
ldconfig -p > /tmp/ldcache.txt
if ! { grep -q 'libEGL\.so\.1 ' /tmp/ldcache.txt && grep -q 'libOpenGL\.so\.0 ' /tmp/ldcache.txt; }; then
  ls .gl/*.deb >/dev/null 2>&1 || { echo "error: no EGL loader here and no .gl/*.deb carried (scripts/fetch-gl-loaders.sh)"; exit 1; }
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
if [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ] && [ -f "$vendor" ] \
   && ! ls /usr/share/glvnd/egl_vendor.d/*nvidia*.json /etc/glvnd/egl_vendor.d/*nvidia*.json >/dev/null 2>&1; then
  export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor
fi
ldconfig -p > /tmp/ldcache.txt
grep -E 'libEGL(_nvidia)?\.so|libOpenGL\.so' /tmp/ldcache.txt || true
echo "__EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-}"

# 2. Wheels, offline, as benchmarks/device_train.sh installs them.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl UNILAB_STRICT_PLUGINS=1
nvidia-smi -L || true
python3 - <<'PY' || echo "warning: the EGL smoke test failed; play below reports why"
import importlib, torch
print("torch", torch.__version__, "cuda", torch.cuda.is_available())
for name in ("mujoco", "pydantic", "av", "cv2", "onnx", "onnxruntime", "unilab"):
    try:
        print(name, getattr(importlib.import_module(name), "__version__", "?"))
    except Exception as exc:  # noqa: BLE001 - a report line, the run goes on
        print(name, "MISSING:", exc)
import mujoco
from OpenGL import GL
r = mujoco.Renderer(mujoco.MjModel.from_xml_string("<mujoco><worldbody><geom size='1'/></worldbody></mujoco>"), 64, 64)
r.render()
print("EGL test frame rendered by:", GL.glGetString(GL.GL_RENDERER).decode())
r.close()
PY

# 3. Train (play + export at the end), or take the given run; then play and export it again.
if [ -z "$run" ]; then
  logs=$(mktemp -d /tmp/unilab_logs.XXXXXX)
  # shellcheck disable=SC2086 # TRAIN_ARGS is a word list on purpose
  python3 -m unilab.cli train --algo sac --task g1_walk_flat --sim mujoco \
    ${TRAIN_ARGS:---preset laptop training.max_iterations=20 runtime.compile=false} \
    training.no_play=false training.log_dir="$logs" training.progress=false
  run=$(ls -d "$logs"/sac/g1_walk_flat/*/ | sort | tail -n 1)
  cp "$run/run_summary.json" "$out/run_summary_train.json"
fi
run=${run%/}
python3 -m unilab.cli play "$run" || echo "warning: unilab play exited $?"
python3 -m unilab.cli export "$run" || echo "warning: unilab export exited $?"

# 4. Check and collect.
python3 - "$run" "$out" <<'PY'
import json, sys
from pathlib import Path
run, out = Path(sys.argv[1]), Path(sys.argv[2])
s = json.loads((run / "run_summary.json").read_text())
play, onnx = s.get("play") or {}, s.get("onnx") or {}
v = play.get("video") or {}
check = {"gl": v.get("gl"), "gl_renderer": v.get("gl_renderer"), "encoder": v.get("encoder"),
         "frames": v.get("frames"), "width": v.get("width"), "height": v.get("height"),
         "play_error": play.get("error"), "episode_return_mean": play.get("episode_return_mean"),
         "episode_length_mean": play.get("episode_length_mean"),
         "onnx_verified": onnx.get("verified"), "onnx_max_abs_diff": s.get("onnx_max_abs_diff")}
video = run / v["path"] if v.get("path") else None
decoded = []
if video and video.exists():
    try:
        import av
        with av.open(str(video)) as c:
            decoded = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    except ImportError:
        import cv2
        cap = cv2.VideoCapture(str(video))
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            decoded.append(frame)
check["decoded_frames"] = len(decoded)
check["decoded_shapes"] = sorted({tuple(f.shape) for f in decoded})
check["max_frame_std"] = max((float(f.std()) for f in decoded), default=0.0)
# On a machine with an NVIDIA device the frames must come from its driver, not Mesa's llvmpipe.
check["nvidia_device"] = any(Path("/dev").glob("nvidia[0-9]*"))
check["ok"] = bool(
    check["gl"] == "egl" and decoded
    and (not check["nvidia_device"] or "nvidia" in (check["gl_renderer"] or "").lower()) and check["decoded_frames"] == check["frames"]
    and check["decoded_shapes"] == [(check["height"], check["width"], 3)]
    and check["max_frame_std"] > 5.0 and check["onnx_verified"])
(out / "check.json").write_text(json.dumps(check, indent=2))
print(json.dumps(check, indent=2))
import shutil
shutil.copy(run / "run_summary.json", out / "run_summary.json")
if video and video.exists():
    shutil.copy(video, out / "play.mp4")
if (run / "policy.onnx").exists():
    shutil.copy(run / "policy.onnx", out / "policy.onnx")
sys.exit(0 if check["ok"] else 1)
PY
