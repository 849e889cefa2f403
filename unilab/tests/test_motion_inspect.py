"""`unilab motion inspect`: floor penetration, floating and self-collision found by MuJoCo's
collision detection at the frames where a clip was broken on purpose."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from unilab.motion import fk_motion, load_motion
from unilab.motion.inspect import format_frames, frame_ranges, inspect_motion
from unilab.robots import g1
from unilab.tasks.g1_motion_tracking import DEFAULT_MOTION

UNILAB = str(Path(sys.executable).parent / "unilab")
SINK, ARM, LIFT = range(40, 50), range(100, 110), range(200, 210)


def shipped_qpos() -> np.ndarray:
    clip = load_motion(DEFAULT_MOTION)
    p = clip.body_names.index("pelvis")
    return np.concatenate((clip.body_pos_w[:, p], clip.body_quat_w[:, p], clip.joint_pos), axis=1).astype(np.float64)


@pytest.fixture(scope="module")
def broken_clip():
    """The shipped clip (feet on the floor, no self-contact) with three faults:
    frames 40-49 sunk 20 mm into the floor, frames 100-109 frozen with the left arm swung into
    the torso (shoulder roll -0.3 rad), frames 200-209 lifted 50 mm off the floor."""
    qpos = shipped_qpos()
    qpos[list(SINK), 2] -= 0.020
    qpos[list(ARM)] = qpos[ARM.start]
    qpos[list(ARM), 7 + g1.G1_JOINT_NAMES.index("left_shoulder_roll_joint")] = -0.3
    qpos[list(LIFT), 2] += 0.050
    return fk_motion(qpos, 50.0, source="broken.npz")


def test_the_shipped_clip_is_clean():
    report = inspect_motion(load_motion(DEFAULT_MOTION))
    assert report.warnings == []
    assert not report.feet_penetration.frames and not report.floating_frames and not report.self_collisions
    assert report.feet_penetration.max_depth_mm < 2.0  # soles rest on the floor


def test_faults_are_flagged_at_their_frames(broken_clip):
    report = inspect_motion(broken_clip)
    assert report.feet_penetration.frames == list(SINK)
    assert 19.0 < report.feet_penetration.max_depth_mm < 23.0  # 20 mm plus the soles' resting depth
    assert report.feet_penetration.worst_frame in SINK
    assert report.floating_frames == list(LIFT)
    assert 45.0 < report.max_float_mm < 50.0
    assert report.self_collision_frames == list(ARM)
    pairs = {c.what: c for c in report.self_collisions}
    assert "left_elbow_link / torso_link" in pairs
    assert pairs["left_elbow_link / torso_link"].frames == list(ARM)
    assert pairs["left_elbow_link / torso_link"].max_depth_mm > 10.0
    assert all(set(c.frames) <= set(ARM) for c in report.self_collisions)  # nothing elsewhere
    text = " | ".join(report.warnings)
    assert "into the floor in 10 frames (frames 40-49)" in text
    assert "nothing touches the floor in 10 frames (frames 200-209)" in text
    assert "interpenetrates itself on the collision model in 10 frames" in text
    assert "inconsistent" in text  # sinks in some frames and floats in others: no single --z-offset


def test_a_constant_offset_gets_the_z_offset_that_fixes_it():
    qpos = shipped_qpos()
    qpos[:, 2] -= 0.015
    report = inspect_motion(fk_motion(qpos, 50.0))
    (warning,) = report.warnings
    assert "--z-offset 0.016" in warning or "--z-offset 0.017" in warning  # 15 mm + the soles' resting depth
    qpos[:, 2] += 0.015 + 0.030
    (warning,) = inspect_motion(fk_motion(qpos, 50.0)).warnings
    assert "--z-offset -0.029" in warning or "--z-offset -0.030" in warning


def test_a_sunk_clip_is_penetration_and_never_floating_with_a_negative_height():
    qpos = shipped_qpos()
    qpos[:, 2] -= 0.030
    report = inspect_motion(fk_motion(qpos, 50.0))
    assert report.feet_penetration.frames == list(range(qpos.shape[0]))
    assert report.floating_frames == [] and report.max_float_mm == 0.0
    assert report.min_clearance_mm < -30.0  # the signed clearance keeps the depth
    (line,) = [ln for ln in report.lines() if ln.startswith("floating")]
    assert line == "floating (lowest geom above the floor): highest 0.0 mm; 0 frames beyond 10 mm"
    floor = report.to_dict()["floor"]
    assert floor["floating"] == {"num_frames": 0, "frame_ranges": [], "max_height_mm": 0.0}
    assert floor["min_clearance_mm"] < -30.0
    assert not any("touches the floor" in w for w in report.warnings)


def test_json_report(tmp_path, broken_clip):
    broken_clip.save(tmp_path / "broken.npz")
    result = subprocess.run([UNILAB, "motion", "inspect", str(tmp_path / "broken.npz"), "--json"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    r = json.loads(result.stdout)
    assert r["frames"] == 301 and r["fps"] == 50.0
    assert r["floor"]["feet_penetration"]["frame_ranges"] == [[40, 49]]
    assert r["floor"]["floating"]["frame_ranges"] == [[200, 209]]
    assert r["self_collision"]["num_frames"] == 10
    assert any(p["what"] == "left_elbow_link / torso_link" and p["frame_ranges"] == [[100, 109]]
               for p in r["self_collision"]["pairs"])  # fmt: skip
    assert len(r["warnings"]) >= 3
    text = subprocess.run([UNILAB, "motion", "inspect", str(tmp_path / "broken.npz")],
                          capture_output=True, text=True, timeout=120).stdout  # fmt: skip
    assert "feet into the floor: deepest" in text and "frames 40-49" in text
    assert r["floor"]["floating"]["max_height_mm"] > 45.0  # the lifted frames, not the sunk ones
    assert (f"floating (lowest geom above the floor): highest {r['floor']['floating']['max_height_mm']:.1f} mm; "
            "10 frames beyond 10 mm: frames 200-209") in text
    assert "left_elbow_link / torso_link: frames 100-109 (10 frames)" in text


def test_frame_ranges():
    assert frame_ranges([9, 3, 4, 5]) == [(3, 5), (9, 9)]
    assert format_frames([7]) == "frame 7"
    assert format_frames([1, 2, 3, 10]) == "frames 1-3, 10"


STEPPING = ("walk_forward", "walk_backward", "sidestep", "turn_in_place", "start_stop")


def test_every_shipped_clip_passes_inspect():
    folder = Path(DEFAULT_MOTION).parent
    clips = sorted(folder.glob("*.npz"))
    assert {p.stem for p in clips} == {"default", "squat", "reach", "twist", "lunge", *STEPPING}
    assert sum(p.stat().st_size for p in clips) < 4 * 2**20  # the set stays a few MB
    for path in clips:
        clip = load_motion(path, joint_names=g1.G1_JOINT_NAMES, joint_limits=g1.JOINT_RANGE)
        assert clip.fps == 50.0 and clip.duration_s <= 10.0, path.name  # one episode from frame 0
        report = inspect_motion(clip)
        assert not report.feet_penetration.frames and not report.other_penetration.frames, path.name
        assert report.feet_penetration.max_depth_mm < report.thresholds.floor_tolerance_m * 1e3, path.name
        assert not report.floating_frames and not report.root_fast_frames, path.name
        assert not any(frames for _, _, frames in report.joint_speed.values()), path.name
        if path.stem not in STEPPING:  # made by inverse kinematics: nothing to warn about
            assert report.warnings == [], path.name
            continue
        # recorded from the simulated walker: its ankle pitch reaches the soft limit (within the
        # hard limits' tolerance) and its ankles brush each other in a few frames of a sidestep
        tol = report.thresholds.hard_limit_tolerance_rad
        assert all(a >= lo - tol and b <= hi + tol for _, a, b, lo, hi in report.hard_limits), path.name
        assert {row[0] for row in report.hard_limits + report.soft_limits} <= {
            "left_ankle_pitch_joint", "right_ankle_pitch_joint"}, path.name
        assert all(c.what == "left_ankle_roll_link / right_ankle_roll_link" and len(c.frames) <= 3
                   and c.max_depth_mm < 10.0 for c in report.self_collisions), path.name  # fmt: skip
        assert "command_vel" in np.load(path).files, path.name


def test_inspect_video_shows_the_clip_on_the_g1(tmp_path):
    """`--video` writes the clip's poses, every second frame of a 50 fps clip; a bad frame size is
    one error line."""
    av = pytest.importorskip("av")
    unilab = str(Path(sys.executable).parent / "unilab")
    clip = load_motion(DEFAULT_MOTION)
    out = tmp_path / "clip.mp4"
    result = subprocess.run([unilab, "motion", "inspect", str(DEFAULT_MOTION), "--video", str(out),
                             "--width", "64", "--height", "48"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    frames = -(-clip.num_frames // 2)
    assert f"video: {out} ({frames} frames, 64x48, 25 fps)" in result.stdout
    with av.open(str(out)) as container:
        images = [f.to_ndarray(format="gray") for f in container.decode(video=0)]
    assert len(images) == frames and images[0].shape == (48, 64)
    assert np.abs(images[0].astype(int) - images[len(images) // 2].astype(int)).max() > 0  # the pose moves
    bad = subprocess.run([unilab, "motion", "inspect", str(DEFAULT_MOTION), "--video", str(out), "--width", "65"],
                         capture_output=True, text=True)
    lines = [line for line in bad.stderr.splitlines() if line.strip()]
    assert bad.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --video") and "65" in lines[0]
