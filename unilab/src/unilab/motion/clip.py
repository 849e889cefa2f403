"""Motion clips: the BeyondMimic-style npz that also stores joint and body names, so both are matched by name.

Keys (T frames, J joints, B bodies; float32 unless noted):

=================  ==========  ======================================================
key                shape       meaning
=================  ==========  ======================================================
``fps``            () or (1,)  frames per second, > 0
``joint_names``    (J,) str    hinge joints, the column order of ``joint_*``
``body_names``     (B,) str    bodies, the order of ``body_*``; matched by name
``joint_pos``      (T, J)      rad
``joint_vel``      (T, J)      rad/s
``body_pos_w``     (T, B, 3)   m, world frame, body frame origin
``body_quat_w``    (T, B, 4)   wxyz, world frame
``body_lin_vel_w`` (T, B, 3)   m/s of the body frame origin, world frame
``body_ang_vel_w`` (T, B, 3)   rad/s, world frame
=================  ==========  ======================================================

BeyondMimic and mjlab write the same arrays without the names and index bodies by engine order
(``scripts/csv_to_npz.py`` in both); mjlab's docs warn that a file from another engine "will not
converge" (https://mujocolab.github.io/mjlab/main/source/training/motion_imitation.html).
Storing the names lets a clip be matched to any model by name.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Mapping, Sequence

import numpy as np

REQUIRED_KEYS: tuple[str, ...] = (
    "fps",
    "joint_names",
    "body_names",
    "joint_pos",
    "joint_vel",
    "body_pos_w",
    "body_quat_w",
    "body_lin_vel_w",
    "body_ang_vel_w",
)
"""Keys every motion npz must hold."""

LIMIT_TOLERANCE_RAD = 0.1
"""A joint further than this outside its hard limit makes a clip invalid (rad)."""


class MotionFormatError(ValueError):
    """A motion file is unusable; the message names the file, the key and what was expected."""

    def __init__(self, path: str | os.PathLike[str] | None, key: str, problem: str) -> None:
        self.path, self.key = path, key
        where = f"motion file {str(path)!r}" if path is not None else "motion clip"
        super().__init__(f"{where}: key {key!r}: {problem}")


@dataclass(frozen=True)
class MotionClip:
    """One motion, in memory (see the module docstring for the arrays).

    Attributes:
        fps: frames per second.
        joint_names, body_names: column / body order of the arrays.
        joint_pos, joint_vel: (T, J) float32.
        body_pos_w, body_lin_vel_w, body_ang_vel_w: (T, B, 3) float32.
        body_quat_w: (T, B, 4) float32 wxyz.
        source: the file it was loaded from, if any (for messages).
    """

    fps: float
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    joint_pos: np.ndarray
    joint_vel: np.ndarray
    body_pos_w: np.ndarray
    body_quat_w: np.ndarray
    body_lin_vel_w: np.ndarray
    body_ang_vel_w: np.ndarray
    source: str | None = None

    @property
    def num_frames(self) -> int:
        return int(self.joint_pos.shape[0])

    @property
    def duration_s(self) -> float:
        """Time from the first to the last frame, s."""
        return (self.num_frames - 1) / self.fps

    def select(self, joint_names: Sequence[str], body_names: Sequence[str]) -> "MotionClip":
        """The clip with its joints and bodies reordered (and subset) by name.

        Raises:
            MotionFormatError: a joint or body the clip lacks, naming them.
        """
        jidx = _indices(self, "joint_names", self.joint_names, joint_names)
        bidx = _indices(self, "body_names", self.body_names, body_names)
        return replace(
            self,
            joint_names=tuple(joint_names),
            body_names=tuple(body_names),
            joint_pos=self.joint_pos[:, jidx],
            joint_vel=self.joint_vel[:, jidx],
            body_pos_w=self.body_pos_w[:, bidx],
            body_quat_w=self.body_quat_w[:, bidx],
            body_lin_vel_w=self.body_lin_vel_w[:, bidx],
            body_ang_vel_w=self.body_ang_vel_w[:, bidx],
        )

    def save(self, path: str | os.PathLike[str] | BinaryIO, **extra: np.ndarray) -> None:
        """Write the clip as a compressed npz (float32 arrays, names as unicode arrays), plus the
        arrays of ``extra`` as given (e.g. a recording's ``command_vel``).

        Args:
            path: a file name (numpy appends ``.npz`` to one without that suffix) or a binary
                file object (written as is).
        """
        np.savez_compressed(
            path,
            fps=np.array([self.fps], dtype=np.float32),
            joint_names=np.array(self.joint_names),
            body_names=np.array(self.body_names),
            **extra,
            **{k: np.asarray(getattr(self, k), dtype=np.float32) for k in REQUIRED_KEYS[3:]},
        )


def _indices(clip: MotionClip, key: str, have: Sequence[str], want: Sequence[str]) -> list[int]:
    missing = [n for n in want if n not in have]
    if missing:
        raise MotionFormatError(
            clip.source, key, f"expected names {missing} (needed by the robot), not in the clip's {list(have)}"
        )
    return [list(have).index(n) for n in want]


def joint_limit_violations(
    clip: MotionClip, limits: Mapping[str, tuple[float, float]], margin: float = 0.0
) -> list[tuple[str, float, float, float, float]]:
    """Joints that leave ``[lower - margin, upper + margin]`` somewhere in the clip.

    Returns:
        (joint, clip min, clip max, lower, upper) per violating joint, rad, in clip order.
    """
    out = []
    for j, name in enumerate(clip.joint_names):
        if name not in limits:
            continue
        lo, hi = limits[name]
        qmin, qmax = float(clip.joint_pos[:, j].min()), float(clip.joint_pos[:, j].max())
        if qmin < lo - margin or qmax > hi + margin:
            out.append((name, qmin, qmax, lo, hi))
    return out


def validate_motion(
    clip: MotionClip,
    *,
    joint_names: Sequence[str] | None = None,
    joint_limits: Mapping[str, tuple[float, float]] | None = None,
    limit_tolerance: float = LIMIT_TOLERANCE_RAD,
) -> None:
    """Check a clip's shapes, values and (optionally) joints against a robot.

    Args:
        clip: the clip.
        joint_names: the robot's joints: the clip must hold exactly these (any order).
        joint_limits: joint -> (lower, upper) rad; a clip joint further than ``limit_tolerance``
            outside them is an error.

    Raises:
        MotionFormatError: naming the file, the key and what was expected.
    """
    path = clip.source
    if not (np.isfinite(clip.fps) and clip.fps > 0):
        raise MotionFormatError(path, "fps", f"expected a positive frame rate, got {clip.fps}")
    t, j, b = clip.joint_pos.shape[0], len(clip.joint_names), len(clip.body_names)
    if t < 2:
        raise MotionFormatError(path, "joint_pos", f"expected at least 2 frames, got {t}")
    if len(set(clip.joint_names)) != j or len(set(clip.body_names)) != b:
        key = "joint_names" if len(set(clip.joint_names)) != j else "body_names"
        raise MotionFormatError(path, key, "expected unique names, found duplicates")
    shapes = {
        "joint_pos": (t, j), "joint_vel": (t, j),
        "body_pos_w": (t, b, 3), "body_quat_w": (t, b, 4),
        "body_lin_vel_w": (t, b, 3), "body_ang_vel_w": (t, b, 3),
    }  # fmt: skip
    for key, shape in shapes.items():
        value = getattr(clip, key)
        if value.shape != shape:
            names = "J = len(joint_names)" if key.startswith("joint") else "B = len(body_names)"
            raise MotionFormatError(
                path, key, f"expected shape {shape} (T frames, {names}), got {value.shape}"
            )
        bad = ~np.isfinite(value)
        if bad.any():
            frame = int(np.argwhere(bad)[0][0])
            raise MotionFormatError(path, key, f"expected finite values, found NaN or inf at frame {frame}")
    norms = np.linalg.norm(clip.body_quat_w, axis=-1)
    if np.abs(norms - 1.0).max() > 1e-3:
        raise MotionFormatError(path, "body_quat_w", "expected unit quaternions (wxyz)")
    if joint_names is not None:
        missing = [n for n in joint_names if n not in clip.joint_names]
        extra = [n for n in clip.joint_names if n not in joint_names]
        if missing or extra or j != len(joint_names):
            raise MotionFormatError(
                path,
                "joint_names",
                f"expected the robot's {len(joint_names)} joints; clip has {j}"
                + (f", missing {missing}" if missing else "")
                + (f", unknown {extra}" if extra else ""),
            )
    if joint_limits is not None:
        bad_joints = joint_limit_violations(clip, joint_limits, margin=limit_tolerance)
        if bad_joints:
            name, qmin, qmax, lo, hi = bad_joints[0]
            raise MotionFormatError(
                path,
                "joint_pos",
                f"joint {name!r} spans [{qmin:.3f}, {qmax:.3f}] rad, expected within its limits "
                f"[{lo:.3f}, {hi:.3f}] ± {limit_tolerance} rad"
                + (f" ({len(bad_joints) - 1} more joints outside)" if len(bad_joints) > 1 else ""),
            )


def load_motion(
    path: str | os.PathLike[str],
    *,
    joint_names: Sequence[str] | None = None,
    joint_limits: Mapping[str, tuple[float, float]] | None = None,
    limit_tolerance: float = LIMIT_TOLERANCE_RAD,
) -> MotionClip:
    """Read and validate a motion npz (see :func:`validate_motion` for the checks).

    Raises:
        MotionFormatError: a missing file or key, a wrong shape, NaN, fps <= 0, wrong joints or
            joints far outside their limits, naming the file, the key and what was expected.
    """
    path = Path(path)
    if not path.is_file():
        raise MotionFormatError(path, "file", "expected an existing .npz file")
    if not zipfile.is_zipfile(path):  # np.load would try a .npy or a pickle next
        hint = "; import it first: unilab motion import FILE --out clip.npz" if path.suffix.lower() == ".csv" else ""
        raise MotionFormatError(path, "file", f"expected a numpy .npz archive (a zip of .npy arrays); it is not one{hint}")
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is one message
        raise MotionFormatError(path, "file", f"expected a numpy .npz archive ({type(exc).__name__}: {exc})") from None
    with data:
        missing = missing_key_error(path, data.files)
        if missing is not None:
            raise missing
        fps = _member(data, path, "fps").reshape(-1)
        if fps.size != 1 or not np.issubdtype(fps.dtype, np.number):
            raise MotionFormatError(path, "fps", f"expected one number, got {fps!r}")
        names = {}
        for key in ("joint_names", "body_names"):
            arr = _member(data, path, key)
            if arr.ndim != 1 or arr.dtype.kind not in "US":
                raise MotionFormatError(path, key, f"expected a 1-D array of strings, got {arr.dtype} {arr.shape}")
            names[key] = tuple(str(n) for n in arr.tolist())
        arrays = {}
        for key in REQUIRED_KEYS[3:]:
            arr = _member(data, path, key)
            if not np.issubdtype(arr.dtype, np.floating):
                raise MotionFormatError(path, key, f"expected floating-point values, got {arr.dtype}")
            arrays[key] = arr.astype(np.float32)
    clip = MotionClip(fps=float(fps[0]), **names, **arrays, source=str(path))
    validate_motion(clip, joint_names=joint_names, joint_limits=joint_limits, limit_tolerance=limit_tolerance)
    return clip


def missing_key_error(path: str | os.PathLike[str] | None, keys: Sequence[str]) -> MotionFormatError | None:
    """The error for a motion npz holding ``keys`` that lacks a key of :data:`REQUIRED_KEYS`:
    ``motion file 'clip.npz': key 'body_quat_w': missing; expected keys [...], found [...]``,
    naming the first missing key (the others are absent from ``found``). None when it lacks none.
    """
    missing = [k for k in REQUIRED_KEYS if k not in keys]
    if not missing:
        return None
    return MotionFormatError(path, missing[0], f"missing; expected keys {list(REQUIRED_KEYS)}, found {sorted(keys)}")


def _member(data, path: Path, key: str) -> np.ndarray:
    """Array ``key`` of an open npz, never unpickled.

    Raises:
        MotionFormatError: an object (pickled) array, or a member that cannot be read.
    """
    try:
        return np.asarray(data[key])
    except ValueError as exc:
        if "allow_pickle" in str(exc):  # numpy: "Object arrays cannot be loaded when allow_pickle=False"
            raise MotionFormatError(
                path, key, "expected a numeric or string array; it holds Python objects (pickled data), which are never loaded"
            ) from None
        raise MotionFormatError(path, key, f"unreadable array ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - a damaged archive member is one message
        raise MotionFormatError(path, key, f"unreadable array ({type(exc).__name__}: {exc})") from None
