"""The motion npz: the shipped default clip loads; every bad clip names the file, the key and
what was expected."""

from __future__ import annotations

import numpy as np
import pytest

from unilab.motion import REQUIRED_KEYS, MotionFormatError, load_motion
from unilab.robots import g1
from unilab.tasks.g1_motion_tracking import DEFAULT_MOTION


def load_g1(path):
    return load_motion(path, joint_names=g1.G1_JOINT_NAMES, joint_limits=g1.JOINT_RANGE)


def test_default_clip_loads_and_is_small():
    clip = load_g1(DEFAULT_MOTION)
    assert clip.fps == 50.0
    assert clip.num_frames > 100 and clip.duration_s == pytest.approx((clip.num_frames - 1) / 50)
    assert clip.joint_names == g1.G1_JOINT_NAMES
    assert set(clip.body_names) == set(g1.G1_BODY_NAMES)
    assert DEFAULT_MOTION.stat().st_size < 1_000_000
    # starts at rest in the default pose
    np.testing.assert_allclose(clip.joint_pos[0], g1.KNEES_BENT_QPOS[7:], atol=1e-5)
    assert np.abs(clip.joint_vel[0]).max() < 0.01  # one-sided difference at the first frame


def test_select_matches_bodies_by_name():
    clip = load_g1(DEFAULT_MOTION)
    sub = clip.select(g1.G1_JOINT_NAMES[::-1], ("torso_link", "pelvis"))
    np.testing.assert_array_equal(sub.body_pos_w[:, 0], clip.body_pos_w[:, clip.body_names.index("torso_link")])
    np.testing.assert_array_equal(sub.joint_pos[:, 0], clip.joint_pos[:, -1])
    with pytest.raises(MotionFormatError, match="body_names.*'no_such_link'"):
        clip.select(g1.G1_JOINT_NAMES, ("no_such_link",))


def _arrays() -> dict:
    with np.load(DEFAULT_MOTION) as data:
        return {k: data[k].copy() for k in data.files}


def _drop(key):
    def edit(a):
        del a[key]
    return edit


def _set(key, fn):
    def edit(a):
        a[key] = fn(a[key])
    return edit


def _nan(a):
    a["body_pos_w"][7, 3, 2] = np.nan


def _far_outside(a):
    a["joint_pos"][:, list(g1.G1_JOINT_NAMES).index("left_knee_joint")] = 3.5  # limit 2.88 rad


BAD_CLIPS = {
    "missing_key": (_drop("body_quat_w"), "body_quat_w", "expected keys"),
    "no_names": (_drop("joint_names"), "joint_names", "expected keys"),
    "fps_zero": (_set("fps", lambda v: np.zeros_like(v)), "fps", "expected a positive frame rate"),
    "fps_negative": (_set("fps", lambda v: -v), "fps", "expected a positive frame rate"),
    "joint_count": (
        _set("joint_pos", lambda v: v[:, :28]), "joint_pos", "expected shape (301, 29)"
    ),
    "joint_names_count": (
        _set("joint_names", lambda v: v[:28]), "joint_pos", "expected shape (301, 28)"
    ),
    "joint_names_wrong": (
        _set("joint_names", lambda v: np.where(v == "left_knee_joint", "left_knee", v)),
        "joint_names", "missing ['left_knee_joint']",
    ),
    "nan": (_nan, "body_pos_w", "expected finite values, found NaN or inf at frame 7"),
    "far_outside_limits": (_far_outside, "joint_pos", "'left_knee_joint' spans [3.500, 3.500] rad, expected within"),
    "body_shape": (
        _set("body_lin_vel_w", lambda v: v[:, :, :2]), "body_lin_vel_w", "expected shape (301, 30, 3)"
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CLIPS))
def test_bad_clip_message_names_file_key_and_expectation(tmp_path, case):
    edit, key, expected = BAD_CLIPS[case]
    arrays = _arrays()
    edit(arrays)
    path = tmp_path / f"{case}.npz"
    np.savez(path, **arrays)
    with pytest.raises(MotionFormatError) as info:
        load_g1(path)
    message = str(info.value)
    assert str(path) in message
    assert f"key {key!r}" in message
    assert expected in message


def test_not_an_npz_and_missing_file(tmp_path):
    bad = tmp_path / "clip.npz"
    bad.write_text("hello")
    with pytest.raises(MotionFormatError, match="clip.npz.*key 'file'.*expected a numpy .npz archive"):
        load_g1(bad)
    with pytest.raises(MotionFormatError, match="key 'file'.*expected an existing"):
        load_g1(tmp_path / "absent.npz")


def test_required_keys_match_decision_5():
    assert set(REQUIRED_KEYS) == {"fps", "joint_names", "body_names", "joint_pos", "joint_vel",
                                  "body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w"}


def test_shipped_clip_is_what_the_script_generates(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "make_default_motion.py"
    out = tmp_path / "default.npz"
    result = subprocess.run([sys.executable, str(script), "--out", str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    fresh, shipped = load_g1(out), load_g1(DEFAULT_MOTION)
    assert fresh.body_names == shipped.body_names
    np.testing.assert_allclose(fresh.body_pos_w, shipped.body_pos_w, atol=1e-5)
    np.testing.assert_allclose(fresh.joint_pos, shipped.joint_pos, atol=1e-6)


def test_a_missing_configured_clip_names_the_setting(tmp_path):
    from unilab.tasks.g1_motion_tracking import G1MotionTrackingConfig
    from unilab.tasks.g1_motion_tracking.env_cfg import load_task_motion

    cfg = G1MotionTrackingConfig(motion={"file": str(tmp_path / "absent.npz")})
    with pytest.raises(MotionFormatError, match=r"absent.npz'?: key 'env.motion.file': expected an existing motion .npz, a folder of .npz, a manifest "
                       r"\(.yaml/.json\), `shipped` \(every shipped clip\) or a shipped clip's name \(default, lunge, "):
        load_task_motion(cfg, step_dt=0.02)
