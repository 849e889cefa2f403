"""LAFAN1-style retargeted G1 CSV (Unitree convention, as read by mjlab's and
BeyondMimic's ``scripts/csv_to_npz.py``).

One row per frame, no header, 36 columns: base position (3, m), base quaternion **xyzw** (4),
29 joint angles (rad) in Unitree order (left leg 6, right leg 6, waist yaw/roll/pitch, left arm 7,
right arm 7 = :data:`unilab.robots.g1.G1_JOINT_NAMES`). Recorded at 30 fps. Import reorders the
quaternion to wxyz, resamples to the control rate (50 fps) and recomputes every body pose and
velocity by forward kinematics on our G1 (:func:`unilab.motion.kinematics.fk_motion`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from unilab.motion.clip import MotionClip, MotionFormatError
from unilab.motion.kinematics import fk_motion, resample_qpos
from unilab.robots import g1

CSV_FPS = 30.0
"""Frame rate of the LAFAN1 retargeted CSV files."""

NUM_COLUMNS = 7 + len(g1.G1_JOINT_NAMES)
"""Columns per row: base pos 3, base quat xyzw 4, 29 joints."""


def read_lafan_csv(path: str | os.PathLike[str]) -> np.ndarray:
    """(T, 36) qpos with the base quaternion reordered to wxyz.

    Raises:
        MotionFormatError: unreadable file, wrong column count, non-finite values, fewer than two
            frames or a zero quaternion (naming the file and the column group).
    """
    path = Path(path)
    if not path.is_file():
        raise MotionFormatError(path, "file", "expected an existing CSV file")
    try:
        rows = np.loadtxt(path, delimiter=",", ndmin=2, dtype=np.float64)
    except ValueError as exc:
        raise MotionFormatError(path, "file", f"expected comma-separated numbers ({exc})") from None
    if rows.shape[1] != NUM_COLUMNS:
        raise MotionFormatError(
            path, "columns", f"expected {NUM_COLUMNS} columns (base pos 3, quat xyzw 4, 29 joints), got {rows.shape[1]}"
        )
    if rows.shape[0] < 2:
        raise MotionFormatError(path, "rows", f"expected at least 2 frames, got {rows.shape[0]}")
    bad = ~np.isfinite(rows)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise MotionFormatError(path, "values", f"expected finite numbers, found {rows[r, c]} at row {r}, column {c}")
    norm = np.linalg.norm(rows[:, 3:7], axis=1)
    if norm.min() < 1e-6:
        raise MotionFormatError(path, "base_quat_xyzw", f"expected non-zero quaternions, row {int(norm.argmin())} is zero")
    qpos = rows.copy()
    qpos[:, 3:7] = rows[:, [6, 3, 4, 5]]  # xyzw -> wxyz
    return qpos


def write_lafan_csv(path: str | os.PathLike[str], qpos: np.ndarray) -> None:
    """Write a (T, 36) qpos (quaternion wxyz) as a LAFAN1-style CSV (quaternion xyzw)."""
    rows = np.asarray(qpos, dtype=np.float64).copy()
    rows[:, 3:7] = qpos[:, [4, 5, 6, 3]]  # wxyz -> xyzw
    np.savetxt(path, rows, delimiter=",", fmt="%.8f")


def import_lafan_csv(
    path: str | os.PathLike[str],
    *,
    fps: float = CSV_FPS,
    out_fps: float = 50.0,
    robot_mjcf: str | None = None,
) -> MotionClip:
    """Read a LAFAN1-style CSV at ``fps``, resample to ``out_fps`` and compute body states by FK."""
    if fps <= 0 or out_fps <= 0:
        raise MotionFormatError(path, "fps", f"expected positive frame rates, got {fps} -> {out_fps}")
    qpos = read_lafan_csv(path)
    if fps != out_fps:
        qpos = resample_qpos(qpos, fps, out_fps)
    return fk_motion(qpos, out_fps, robot_mjcf=robot_mjcf, source=str(path))
