"""Offscreen MuJoCo rendering of a recorded trajectory into an mp4.

MuJoCo picks its OpenGL backend from ``MUJOCO_GL`` when ``mujoco`` is first imported, and PyOpenGL
fixes its platform at its own first import; a training process has imported mujoco long before it
plays. So the frames are rendered in a short child process (``python -m unilab.deploy.video
JOB.npz``) that sets ``MUJOCO_GL`` before anything else. That also lets a backend that fails be
followed by the next one, and keeps a crash inside a GL driver out of the trainer.

Backends, in order: the one named by ``MUJOCO_GL`` if set (only that one); otherwise EGL then
OSMesa where a GPU device node exists (``/dev/nvidia*``, ``/dev/dri/renderD*``), OSMesa then EGL
elsewhere; on macOS and Windows MuJoCo's default (CGL, WGL). OSMesa is software rendering: the
child lowers the shadow-map size and turns multisampling off there (about 50 ms per 640x480 frame
on one core instead of about 200 ms).

The mp4 is H.264 (yuv420p) written with PyAV (``av``); without PyAV, OpenCV's MPEG-4 Part 2
(``mp4v``) encoder is used if ``cv2`` is importable.

A tracking task's reference can be drawn as a translucent ghost beside the robot
(``ghost_qpos``): a second ``MjData`` of the same model is put in the reference state and its
geoms are appended to the frame's scene by MuJoCo's ``mjv_addGeoms`` (dynamic bodies only, so
no second floor), recoloured with :data:`GHOST_RGBA` (:func:`add_ghost_geoms`).
"""

from __future__ import annotations

import ctypes.util
import json
import os
import platform
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

GL_UNAVAILABLE_EXIT = 3
"""Exit code of the child when the GL backend it was given cannot render."""

_PYOPENGL_PLATFORM = {"egl": "egl", "osmesa": "osmesa"}
_INSTALL_HINT = (
    "install OSMesa (Debian/Ubuntu: apt-get install libosmesa6) or run where a GPU driver "
    "provides EGL; or skip the video (unilab play --no-video; training.no_play=true)"
)


GHOST_RGBA: tuple[float, float, float, float] = (0.35, 0.95, 0.55, 0.35)
"""Colour of the reference ghost: translucent green (alpha < 1 makes MuJoCo draw it transparent)."""


class VideoError(RuntimeError):
    """The video could not be written (bad settings, no encoder, a rendering failure)."""


class RenderUnavailableError(VideoError):
    """No OpenGL backend could render offscreen on this machine; the message says what was tried."""


@dataclass(frozen=True)
class VideoResult:
    """What :func:`render_video` wrote.

    Attributes:
        path: the mp4 file.
        frames: number of frames.
        width, height: frame size, pixels.
        fps: frames per second of the file.
        gl: the MuJoCo GL backend that rendered (``egl``, ``osmesa``, ...).
        gl_renderer: the OpenGL renderer string (e.g. ``llvmpipe (LLVM 15.0.6, 256 bits)``), or "".
        encoder: ``libx264`` (PyAV) or ``mp4v`` (OpenCV).
    """

    path: str
    frames: int
    width: int
    height: int
    fps: float
    gl: str
    gl_renderer: str
    encoder: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def gl_candidates(environ: dict[str, str] | None = None) -> list[str]:
    """The MuJoCo GL backends to try, in order (see the module docstring).

    Args:
        environ: environment to read ``MUJOCO_GL`` from (default ``os.environ``).

    Returns:
        Backend names for ``MUJOCO_GL``; ``""`` means MuJoCo's platform default.
    """
    env = os.environ if environ is None else environ
    chosen = env.get("MUJOCO_GL", "").strip().lower()
    if chosen:
        return [chosen]
    if platform.system() != "Linux":
        return [""]
    dev = Path("/dev")
    gpu = any(dev.glob("nvidia[0-9]*")) or any((dev / "dri").glob("renderD*"))
    return ["egl", "osmesa"] if gpu else ["osmesa", "egl"]


_SONAMES = {"osmesa": ("libOSMesa.so.8", "libOSMesa.so.6", "libOSMesa.so"), "egl": ("libEGL.so.1", "libEGL.so")}


def _missing_library(gl: str) -> str | None:
    """Why ``gl`` cannot work here without trying it (its shared library is absent), or None.

    ``ctypes.util.find_library`` reads the linker cache (``ldconfig -p``); a library reachable only
    through ``LD_LIBRARY_PATH`` is found there only with ``ld`` or ``gcc`` installed, so the usual
    sonames are also opened directly before the library is called missing.
    """
    lib = {"osmesa": "OSMesa", "egl": "EGL"}.get(gl)
    if lib is None or ctypes.util.find_library(lib) is not None:
        return None
    for soname in _SONAMES[gl]:
        try:
            ctypes.CDLL(soname)
            return None
        except OSError:
            continue
    return f"lib{lib} not found"


def frame_stride(control_rate_hz: float, fps: float | None, max_default_fps: float = 30.0) -> int:
    """Env steps per video frame so that ``fps = control_rate_hz / stride``.

    Args:
        control_rate_hz: env steps per second (1 / step_dt).
        fps: wanted frames per second; ``None`` picks the highest rate ``<= max_default_fps``
            (25 fps for a 50 Hz policy).

    Raises:
        VideoError: ``fps`` is not the control rate divided by a whole number.
    """
    if fps is None:
        return max(1, int(np.ceil(control_rate_hz / max_default_fps - 1e-9)))
    stride = round(control_rate_hz / fps) if fps > 0 else 0
    if stride < 1 or abs(control_rate_hz / stride - fps) > 1e-6 * control_rate_hz:
        valid = ", ".join(f"{control_rate_hz / k:g}" for k in range(1, 7))
        raise VideoError(
            f"--fps {fps:g} is not the control rate ({control_rate_hz:g} Hz) divided by a whole "
            f"number; valid: {valid}, ..."
        )
    return stride


def check_frame_size(width: int, height: int) -> None:
    """Raise VideoError unless both are even numbers >= 16 (H.264 with yuv420p needs even sizes)."""
    for name, value in (("width", width), ("height", height)):
        if value < 16 or value % 2:
            raise VideoError(f"video {name} must be an even number >= 16 (H.264), got {value}")


def render_video(
    mjcf: str,
    qpos: np.ndarray,
    path: str | os.PathLike[str],
    *,
    fps: float,
    width: int = 640,
    height: int = 480,
    camera: str = "tracking",
    timeout_s: float = 1800.0,
    ghost_qpos: np.ndarray | None = None,
) -> VideoResult:
    """Render one frame per row of ``qpos`` and write them to an mp4.

    Args:
        mjcf: scene MJCF text (the env's); meshes it references are rendered.
        qpos: (T, nq) float joint positions of one world, one row per frame.
        path: the mp4 to write (its folder is created; an existing file is replaced).
        fps: frames per second of the file.
        width, height: frame size, pixels; even numbers >= 16 (H.264, yuv420p).
        camera: model camera to render from; a model without it gets a camera tracking its root
            body.
        timeout_s: limit for the rendering child, s.
        ghost_qpos: (T, nq) float qpos of a reference drawn as a translucent ghost in each frame
            (:func:`add_ghost_geoms`), or None.

    Returns:
        The :class:`VideoResult`.

    Raises:
        VideoError: bad settings, no mp4 encoder, or rendering failed.
        RenderUnavailableError: no OpenGL backend could render; the message lists each backend
            tried and why it failed, and how to install OSMesa.
    """
    qpos = np.asarray(qpos, dtype=np.float64)
    if qpos.ndim != 2 or qpos.shape[0] < 1:
        raise VideoError(f"qpos must be (T >= 1, nq), got shape {qpos.shape}")
    if ghost_qpos is not None:
        ghost_qpos = np.asarray(ghost_qpos, dtype=np.float64)
        if ghost_qpos.shape != qpos.shape:
            raise VideoError(f"ghost_qpos must have the shape of qpos {qpos.shape}, got {ghost_qpos.shape}")
    check_frame_size(width, height)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    job_meta = {"width": int(width), "height": int(height), "fps": float(fps), "camera": camera,
                "path": str(out)}
    tried: list[str] = []
    with tempfile.TemporaryDirectory(prefix="unilab_video_") as tmp:
        job = Path(tmp) / "job.npz"
        ghost = {} if ghost_qpos is None else {"ghost_qpos": ghost_qpos}
        np.savez(job, mjcf=np.array(mjcf), qpos=qpos, meta=np.array(json.dumps(job_meta)), **ghost)
        for gl in gl_candidates():
            missing = _missing_library(gl)
            if missing:
                tried.append(f"{gl}: {missing}")
                continue
            env = dict(os.environ)
            if gl:
                env["MUJOCO_GL"] = gl
            if gl in _PYOPENGL_PLATFORM:
                env["PYOPENGL_PLATFORM"] = _PYOPENGL_PLATFORM[gl]
            try:
                proc = subprocess.run(
                    [sys.executable, "-m", "unilab.deploy.video", str(job)],
                    env=env, capture_output=True, text=True, timeout=timeout_s,
                )
            except subprocess.TimeoutExpired:
                raise VideoError(f"rendering with {gl or 'the default GL'} took over {timeout_s:g} s") from None
            if proc.returncode == 0:
                return VideoResult(**json.loads(proc.stdout.strip().splitlines()[-1]))
            reason = _last_line(proc.stderr) or f"exit code {proc.returncode}"
            if proc.returncode != GL_UNAVAILABLE_EXIT:
                raise VideoError(f"rendering failed ({gl or 'default GL'}): {reason}")
            tried.append(f"{gl or 'default'}: {reason}")
    raise RenderUnavailableError(
        f"no offscreen OpenGL for MuJoCo ({'; '.join(tried)}); {_INSTALL_HINT}"
    )


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    line = lines[-1] if lines else ""
    return line[len("error: "):] if line.startswith("error: ") else line


# ============================================================================ the child process
def _render_model(mjcf: str):
    """The scene for rendering: the env's MJCF plus a sky gradient when it has no skybox."""
    import mujoco

    spec = mujoco.MjSpec.from_string(mjcf)
    if not any(t.type == mujoco.mjtTexture.mjTEXTURE_SKYBOX for t in spec.textures):
        sky = spec.add_texture()
        sky.name = "unilab_render_sky"
        sky.type = mujoco.mjtTexture.mjTEXTURE_SKYBOX
        sky.builtin = mujoco.mjtBuiltin.mjBUILTIN_GRADIENT
        sky.rgb1 = [0.62, 0.74, 0.86]
        sky.rgb2 = [0.10, 0.13, 0.18]
        sky.width = sky.height = 256
    return spec.compile()


def add_ghost_geoms(scene, model, data, rgba: tuple[float, float, float, float] = GHOST_RGBA, option=None) -> int:
    """Append the geoms of ``data``'s dynamic bodies to ``scene`` as a translucent ghost.

    Uses MuJoCo's ``mjv_addGeoms`` (category ``mjCAT_DYNAMIC``: the robot, not the floor), then
    sets each added geom's colour to ``rgba``. Needs no OpenGL context: ``scene`` is any
    ``mujoco.MjvScene`` (e.g. ``mujoco.Renderer.scene`` after ``update_scene``).

    Args:
        scene: the frame's scene; geoms are added after its current ones.
        model, data: the model and the ghost's state (forward kinematics done).
        rgba: colour of the ghost; alpha < 1 draws it transparent.
        option: ``mujoco.MjvOption`` (default: MuJoCo's defaults).

    Returns:
        The number of geoms added (fewer than the ghost has when ``scene.maxgeom`` is reached).
    """
    import mujoco

    before = scene.ngeom
    mujoco.mjv_addGeoms(model, data, option or mujoco.MjvOption(), mujoco.MjvPerturb(),
                        mujoco.mjtCatBit.mjCAT_DYNAMIC, scene)  # fmt: skip
    for i in range(before, scene.ngeom):
        geom = scene.geoms[i]
        geom.rgba[:] = rgba
        geom.transparent = rgba[3] < 1.0  # drawn in the transparent pass, after the opaque geoms
    return scene.ngeom - before


class _Mp4Writer:
    """H.264 through PyAV, else MPEG-4 Part 2 through OpenCV. Frames are (H, W, 3) uint8 RGB."""

    def __init__(self, path: str, width: int, height: int, fps: float) -> None:
        try:
            import av
        except ImportError:
            av = None
        if av is not None:
            self.encoder = "libx264"
            self._container = av.open(path, mode="w", format="mp4")
            self._stream = self._container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001))
            self._stream.width, self._stream.height = width, height
            self._stream.pix_fmt = "yuv420p"
            self._stream.options = {"crf": "23", "preset": "fast"}
            self._av = av
            return
        try:
            import cv2
        except ImportError:
            raise VideoError("no mp4 encoder: install PyAV (pip install av)") from None
        self.encoder = "mp4v"
        self._av = None
        self._cv2 = cv2
        self._writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"mp4v"), fps, (width, height))
        if not self._writer.isOpened():
            raise VideoError("OpenCV could not open an mp4v writer; install PyAV (pip install av)")

    def write(self, frame: np.ndarray) -> None:
        if self._av is not None:
            video_frame = self._av.VideoFrame.from_ndarray(frame, format="rgb24")
            for packet in self._stream.encode(video_frame):
                self._container.mux(packet)
        else:
            self._writer.write(self._cv2.cvtColor(frame, self._cv2.COLOR_RGB2BGR))

    def close(self) -> None:
        if self._av is not None:
            for packet in self._stream.encode():
                self._container.mux(packet)
            self._container.close()
        else:
            self._writer.release()


def _gl_renderer_string() -> str:
    try:
        from OpenGL import GL

        value = GL.glGetString(GL.GL_RENDERER)
        return value.decode() if isinstance(value, bytes) else str(value or "")
    except Exception:  # noqa: BLE001 - informative only
        return ""


def _child(job_path: str) -> int:
    """Render the job in ``job_path``; print the VideoResult as JSON on the last stdout line."""
    gl = os.environ.get("MUJOCO_GL", "")
    job = np.load(job_path)
    meta = json.loads(str(job["meta"]))
    width, height, fps = meta["width"], meta["height"], meta["fps"]
    try:
        import mujoco

        model = _render_model(str(job["mjcf"]))
    except Exception as exc:  # noqa: BLE001 - one line to the parent
        print(f"error: could not build the render model: {exc}", file=sys.stderr)
        return 1
    qpos = job["qpos"]
    if qpos.shape[1] != model.nq:
        print(f"error: qpos has {qpos.shape[1]} columns, the model has nq={model.nq}", file=sys.stderr)
        return 1
    vis = model.vis
    vis.global_.offwidth = max(int(vis.global_.offwidth), width)
    vis.global_.offheight = max(int(vis.global_.offheight), height)
    if gl == "osmesa":  # software rasterizer: a smaller shadow map, no multisampling
        vis.quality.shadowsize = min(int(vis.quality.shadowsize), 1024)
        vis.quality.offsamples = 0
    try:
        renderer = mujoco.Renderer(model, height, width)
    except Exception as exc:  # noqa: BLE001 - the parent tries the next backend
        print(f"error: {type(exc).__name__}: {exc}".replace("\n", " "), file=sys.stderr)
        return GL_UNAVAILABLE_EXIT
    tmp = Path(meta["path"] + ".tmp.mp4")
    try:
        gl_renderer = _gl_renderer_string()
        camera = _camera(model, meta["camera"])
        data = mujoco.MjData(model)
        ghost = job["ghost_qpos"] if "ghost_qpos" in job.files else None
        ghost_data = mujoco.MjData(model) if ghost is not None else None
        writer = _Mp4Writer(str(tmp), width, height, fps)
        try:
            for i, row in enumerate(qpos):
                data.qpos[:] = row
                mujoco.mj_forward(model, data)
                renderer.update_scene(data, camera=camera)
                if ghost is not None:
                    ghost_data.qpos[:] = ghost[i]
                    mujoco.mj_kinematics(model, ghost_data)
                    add_ghost_geoms(renderer.scene, model, ghost_data)
                writer.write(renderer.render())
        finally:
            writer.close()
        os.replace(tmp, meta["path"])
    except Exception as exc:  # noqa: BLE001 - one line to the parent
        tmp.unlink(missing_ok=True)
        text = str(exc) if isinstance(exc, VideoError) else f"{type(exc).__name__}: {exc}"
        print("error: " + text.replace("\n", " "), file=sys.stderr)
        return 1
    finally:
        renderer.close()
    result = VideoResult(meta["path"], len(qpos), width, height, fps, gl or "default", gl_renderer,
                         writer.encoder)
    print(json.dumps(result.to_dict()))
    return 0


def _camera(model, name: str):
    """The model camera ``name``, or a free camera tracking the root body when there is none."""
    import mujoco

    if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name) >= 0:
        return name
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    camera.trackbodyid = 1 if model.nbody > 1 else 0
    camera.distance, camera.azimuth, camera.elevation = 3.0, 135.0, -15.0
    return camera


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
