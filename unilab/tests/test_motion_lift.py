"""Lifting a clip's feet out of the floor: the root rises by exactly the depth of the lowest sole
capsule at the frames that sink, nothing else changes, and inspect then finds no penetration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

from unilab.motion import fk_motion, lift_clip_feet, lift_feet, load_motion
from unilab.motion.inspect import inspect_motion
from unilab.robots import g1
from unilab.tasks.g1_motion_tracking import DEFAULT_MOTION

UNILAB = str(Path(sys.executable).parent / "unilab")
CLEARANCE = 0.002  # every frame's lowest sole point 2 mm above the floor before the faults
SINK = {**{f: 0.005 for f in range(10, 20)}, 30: 0.020, 31: 0.0004}  # frame -> depth below the floor, m
SHALLOW, FLOAT = range(40, 45), range(50, 55)  # sunk 1 mm (still above) / raised 30 mm


def lowest_sole_point(model: mujoco.MjModel, qpos: np.ndarray) -> np.ndarray:
    """(T,) height of the lowest point of any sole capsule, m: the lower end of its axis minus the
    radius (a capsule's lowest point; computed from MuJoCo's geom poses, not its distance query)."""
    data = mujoco.MjData(model)
    geoms = [model.geom(n).id for n in g1.FOOT_GEOM_NAMES]
    assert all(model.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE for g in geoms)
    out = np.zeros(len(qpos))
    for i, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        half = np.abs(data.geom_xmat[geoms].reshape(-1, 3, 3)[:, 2, 2]) * model.geom_size[geoms, 1]
        out[i] = np.min(data.geom_xpos[geoms, 2] - half - model.geom_size[geoms, 0])
    return out


@pytest.fixture(scope="module")
def sunk():
    """(qpos with known faults, expected lift per frame): the shipped clip's motion, each frame
    placed with its lowest sole 2 mm above the floor, then frames sunk or raised (SINK, SHALLOW, FLOAT)."""
    clip = load_motion(DEFAULT_MOTION)
    p = clip.body_names.index("pelvis")
    qpos = np.concatenate((clip.body_pos_w[:, p], clip.body_quat_w[:, p], clip.joint_pos), axis=1)[:60]
    qpos = qpos.astype(np.float64)
    model = g1.g1_model(with_floor=True)
    qpos[:, 2] += CLEARANCE - lowest_sole_point(model, qpos)
    expected = np.zeros(len(qpos))
    for f, depth in SINK.items():
        qpos[f, 2] -= CLEARANCE + depth
        expected[f] = depth
    qpos[list(SHALLOW), 2] -= 0.001
    qpos[list(FLOAT), 2] += 0.030
    low = lowest_sole_point(model, qpos)
    np.testing.assert_allclose(low[expected > 0], -expected[expected > 0], atol=1e-12)
    assert (low[expected == 0] > 0.0009).all()
    return qpos, expected


def test_lift_is_the_depth_at_the_sunk_frames_and_nothing_elsewhere(sunk):
    qpos, expected = sunk
    lifted, lift = lift_feet(qpos)
    np.testing.assert_allclose(lift, expected, rtol=0, atol=1e-9)
    assert np.flatnonzero(lift > 1e-9).tolist() == sorted(SINK)
    np.testing.assert_allclose(lifted[:, 2], qpos[:, 2] + expected, rtol=0, atol=1e-9)
    rest = np.ones(len(qpos), dtype=bool)
    rest[sorted(SINK)] = False
    np.testing.assert_array_equal(lifted[rest], qpos[rest])  # other frames bit for bit
    np.testing.assert_array_equal(np.delete(lifted, 2, axis=1), np.delete(qpos, 2, axis=1))  # joints, root x, y, quat
    np.testing.assert_allclose(lowest_sole_point(g1.g1_model(with_floor=True), lifted)[sorted(SINK)], 0.0, atol=1e-9)


def test_a_lifted_clip_passes_the_floor_check_it_failed(sunk):
    qpos, _ = sunk
    clip = fk_motion(qpos, 50.0, source="sunk.npz")
    before = inspect_motion(clip)
    assert before.feet_penetration.frames == list(range(10, 20)) + [30]  # 31 (0.4 mm) is within the tolerance
    assert 19.0 < before.feet_penetration.max_depth_mm < 21.0
    assert before.floating_frames == list(FLOAT)
    after_clip, lift = lift_clip_feet(clip)
    after = inspect_motion(after_clip)
    assert not after.feet_penetration.frames and after.feet_penetration.max_depth_mm < 1e-3
    assert after.floating_frames == list(FLOAT)  # a lift never lowers anything
    assert after_clip.body_names == clip.body_names and after_clip.joint_names == clip.joint_names
    np.testing.assert_array_equal(after_clip.joint_pos, clip.joint_pos)
    dz = after_clip.body_pos_w[..., 2] - clip.body_pos_w[..., 2]  # every body rises with the root
    np.testing.assert_allclose(dz, np.repeat(lift[:, None], len(clip.body_names), axis=1), atol=2e-6)


def test_import_lifts_only_when_asked(sunk, tmp_path):
    qpos, expected = sunk
    path = tmp_path / "sunk.npz"
    np.savez(path, fps=np.array([50.0]), joint_names=np.array(g1.G1_JOINT_NAMES), joint_pos=qpos)
    result = subprocess.run([UNILAB, "motion", "import", str(path), "--out", str(tmp_path / "lifted.npz"), "--lift-feet"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "note: --lift-feet: the root lifted out of the floor in 12 of 60 frames (frames 10-19, 30-31)" in result.stdout
    assert "by up to 20.0 mm" in result.stdout
    assert "into the floor" not in result.stderr and "nothing touches the floor in 5 frames" in result.stderr
    lifted = load_motion(tmp_path / "lifted.npz")
    p = lifted.body_names.index("pelvis")
    np.testing.assert_allclose(lifted.body_pos_w[:, p, 2], qpos[:, 2] + expected, atol=1e-6)
    from unilab.motion.importers import import_motion

    plain = import_motion(path).clip  # off by default: the file's root height as it is
    np.testing.assert_allclose(plain.body_pos_w[:, plain.body_names.index("pelvis"), 2], qpos[:, 2], atol=1e-6)


def test_the_lift_note_tells_sinking_from_rounding():
    from unilab.motion.importers import lift_note

    assert "nothing lifted" in lift_note(np.zeros(5))
    rounding = lift_note(np.array([0.0, 2e-6, 0.0, 1e-5]))
    assert "within 0.05 mm" in rounding and "10 um in 2 of 4 frames" in rounding
    sunk = lift_note(np.array([0.0, 0.01, 0.004, 0.0]))
    assert "in 2 of 4 frames" in sunk and "up to 10.0 mm" in sunk and "mean 7.0 mm" in sunk
