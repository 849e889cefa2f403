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
from unilab.motion.kinematics import fk_motion, resample_qpos, root_quat_wxyz
from unilab.robots import g1

CSV_FPS = 30.0
"""Frame rate of the LAFAN1 retargeted CSV files."""

NUM_COLUMNS = 7 + len(g1.G1_JOINT_NAMES)
"""Columns per row: base pos 3, base quat xyzw 4, 29 joints."""


def _parse_rows(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The numbers of a comma-separated file and the file line of each row.

    Blank lines and ``#`` comments are skipped (as ``numpy.loadtxt`` does).

    Returns:
        (rows (T, C) float64, lines (T,) int: the 1-based file line of each row).

    Raises:
        MotionFormatError: not UTF-8 text, no rows, a first row that is not numbers (a header),
            a later field that is not a number, or a row with another column count than the first.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise MotionFormatError(path, "file", "expected UTF-8 text (comma-separated numbers)") from None
    except OSError as exc:
        raise MotionFormatError(path, "file", f"cannot read it ({exc.strerror})") from None
    rows: list[list[float]] = []
    lines: list[int] = []
    width = first_line = 0
    for number, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        fields = body.split(",")
        if not rows:
            width, first_line = len(fields), number
        elif len(fields) != width:
            raise MotionFormatError(
                path, "columns", f"line {number} has {len(fields)} columns, line {first_line} (the first row) "
                f"has {width}; expected {NUM_COLUMNS} on every line (base pos 3, quat xyzw 4, 29 joints)",
            )  # fmt: skip
        try:
            rows.append([float(f) for f in fields])
        except ValueError:
            col = next(i for i, f in enumerate(fields) if not _is_number(f))
            if not rows:
                raise MotionFormatError(
                    path, "header", f"the first row (line {number}) is not numbers (column {col} is "
                    f"{fields[col].strip()!r}); a header row is not expected (every line is one frame of "
                    f"{NUM_COLUMNS} numbers): delete that line",
                ) from None  # fmt: skip
            raise MotionFormatError(
                path, "values", f"expected numbers, found {fields[col].strip()!r} at row {len(rows)}, column {col} "
                f"(line {number})"
            ) from None
        lines.append(number)
    if not rows:
        what = "is empty" if not text.strip() else "has only blank and # comment lines"
        raise MotionFormatError(path, "file", f"{what}; expected one row of {NUM_COLUMNS} comma-separated "
                                              f"numbers per frame (base pos 3, quat xyzw 4, 29 joints)")
    return np.asarray(rows, dtype=np.float64), np.asarray(lines)


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def read_lafan_csv(path: str | os.PathLike[str], quat_order: str = "xyzw") -> np.ndarray:
    """(T, 36) qpos with the base quaternion reordered to wxyz and normalised.

    Blank lines and ``#`` comments are skipped; there is no header row.

    Args:
        path: the CSV.
        quat_order: the order of columns 3-6, ``xyzw`` (the format's) or ``wxyz``.

    Raises:
        MotionFormatError: unreadable or empty file, a header row or another non-number, rows of
            different lengths or the wrong column count, non-finite values, fewer than two frames,
            a quaternion whose norm is not within :data:`~unilab.motion.kinematics.QUAT_NORM_TOLERANCE`
            of 1, or one that looks stored in the other order (upside down as read, upright the
            other way: :func:`~unilab.motion.kinematics.root_quat_wxyz`); naming the file, the
            column group and the line.
    """
    path = Path(path)
    if not path.is_file():
        raise MotionFormatError(path, "file", "expected an existing CSV file")
    rows, lines = _parse_rows(path)
    if rows.shape[1] != NUM_COLUMNS:
        raise MotionFormatError(
            path, "columns", f"expected {NUM_COLUMNS} columns (base pos 3, quat xyzw 4, 29 joints), got {rows.shape[1]}"
        )
    if rows.shape[0] < 2:
        raise MotionFormatError(path, "rows", f"expected at least 2 frames, got {rows.shape[0]}")
    bad = ~np.isfinite(rows)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise MotionFormatError(
            path, "values", f"expected finite numbers, found {rows[r, c]} at row {r}, column {c} (line {lines[r]})"
        )
    qpos = rows.copy()
    qpos[:, 3:7] = root_quat_wxyz(rows[:, 3:7], quat_order, path=path, key="root quaternion",
                                  where=lambda r: f"row {r} (line {lines[r]})", layout_order="xyzw")
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
