"""LAFAN1-style CSV import: quaternion order, resampling to 50 fps, and body poses by forward
kinematics that agree with the 50 fps clip they were derived from."""

from __future__ import annotations

import numpy as np
import pytest

from unilab.motion import (
    MotionFormatError,
    fk_motion,
    import_lafan_csv,
    load_motion,
    read_lafan_csv,
    resample_qpos,
    write_lafan_csv,
)
from unilab.robots import g1
from unilab.tasks.g1_motion_tracking import DEFAULT_MOTION


def default_qpos() -> np.ndarray:
    """(T, 36) qpos of the shipped clip at 50 fps (root = the pelvis body, which carries the free joint)."""
    clip = load_motion(DEFAULT_MOTION)
    p = clip.body_names.index("pelvis")
    return np.concatenate(
        (clip.body_pos_w[:, p], clip.body_quat_w[:, p], clip.select(g1.G1_JOINT_NAMES, ()).joint_pos), axis=1
    ).astype(np.float64)


def test_csv_round_trip_matches_fk_at_50_fps(tmp_path):
    qpos50 = default_qpos()
    reference = fk_motion(qpos50, 50.0)
    csv = tmp_path / "clip.csv"
    write_lafan_csv(csv, resample_qpos(qpos50, 50.0, 30.0))
    raw = np.loadtxt(csv, delimiter=",")
    assert raw.shape == (181, 36)  # 6 s at 30 fps
    np.testing.assert_allclose(raw[0, 3:7], [0.0, 0.0, 0.0, 1.0], atol=1e-6)  # xyzw on disk

    clip = import_lafan_csv(csv)  # 30 fps in, 50 fps out
    assert clip.fps == 50.0 and clip.num_frames == reference.num_frames == 301
    assert clip.body_names == reference.body_names
    pos_err = np.abs(clip.body_pos_w - reference.body_pos_w).max()
    assert pos_err < 2e-3, pos_err  # m: linear interpolation of a smooth 30 fps trajectory
    quat_dot = np.abs(np.sum(clip.body_quat_w * reference.body_quat_w, axis=-1))
    assert quat_dot.min() > 1 - 1e-4
    assert np.abs(clip.body_lin_vel_w - reference.body_lin_vel_w).max() < 0.05  # m/s
    np.testing.assert_allclose(clip.joint_pos, reference.joint_pos, atol=5e-3)


def test_fk_velocities_are_consistent_with_positions():
    clip = fk_motion(default_qpos(), 50.0)
    # central difference of the body positions ~ the FK linear velocity
    fd = (clip.body_pos_w[2:] - clip.body_pos_w[:-2]) * 25.0
    assert np.abs(fd - clip.body_lin_vel_w[1:-1]).max() < 0.02


def test_resample_linear_and_slerp_exact():
    t30 = np.arange(31) / 30.0  # 1 s
    qpos = np.zeros((31, 36))
    qpos[:, 0] = 2.0 * t30
    yaw = 0.8 * t30
    qpos[:, 3], qpos[:, 6] = np.cos(yaw / 2), np.sin(yaw / 2)
    qpos[:, 7:] = 0.3 * t30[:, None]
    out = resample_qpos(qpos, 30.0, 50.0)
    t50 = np.arange(51) / 50.0
    assert out.shape == (51, 36)
    np.testing.assert_allclose(out[:, 0], 2.0 * t50, atol=1e-12)
    np.testing.assert_allclose(out[:, 7:], 0.3 * np.tile(t50[:, None], (1, 29)), atol=1e-12)
    np.testing.assert_allclose(out[:, 3], np.cos(0.4 * t50), atol=1e-12)
    np.testing.assert_allclose(out[:, 6], np.sin(0.4 * t50), atol=1e-12)
    # down-sampling keeps only frames inside the clip
    assert resample_qpos(qpos, 30.0, 10.0).shape[0] == 11


def test_bad_csv_names_file_and_expectation(tmp_path):
    bad = tmp_path / "short.csv"
    np.savetxt(bad, np.zeros((5, 35)), delimiter=",")
    with pytest.raises(MotionFormatError, match=r"short.csv.*key 'columns'.*expected 36 columns"):
        read_lafan_csv(bad)
    nan = tmp_path / "nan.csv"
    rows = np.zeros((5, 36))
    rows[:, 6] = 1.0
    rows[2, 10] = np.nan
    np.savetxt(nan, rows, delimiter=",")
    with pytest.raises(MotionFormatError, match=r"nan.csv.*expected finite numbers.*row 2, column 10"):
        read_lafan_csv(nan)
