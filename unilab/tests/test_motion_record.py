"""`unilab motion record`: a walking run's policy under a scripted command becomes a clip (format
and applied commands; an untrained policy, so not walking quality); command scripts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from unilab.motion import MotionFormatError, foot_floor_depth, load_motion
from unilab.motion.record import read_command_script
from unilab.robots import g1

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "motion_commands"


@pytest.fixture
def run(unilab_in_process):
    """``run(*args, cwd) -> result``: the ``unilab`` command, run in this process."""
    return unilab_in_process


@pytest.fixture(scope="module")
def walk_run(tmp_path_factory, finished_walk_run) -> Path:
    """A 2-iteration g1_walk_flat run (an untrained policy that stands for a second or so)."""
    return finished_walk_run(tmp_path_factory.mktemp("walk"))


def test_record_writes_a_clip_with_the_scripted_commands(walk_run, run, tmp_path):
    (tmp_path / "cmd.csv").write_text("duration,vx,vy,yaw_rate\n0.3,0,0,0\n0.3,0.5,0,0\n0.2,0,-0.2,0.8\n")
    result = run("motion", "record", str(walk_run), "--commands", str(tmp_path / "cmd.csv"), "--settle", "0.2",
                 "--out", str(tmp_path / "rec.npz"), cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stdout and "41 frames at 50 fps (0.80 s), 29 joints, 14 bodies" in result.stdout
    assert "note: --lift-feet:" in result.stdout
    clip = load_motion(tmp_path / "rec.npz", joint_names=g1.G1_JOINT_NAMES, joint_limits=g1.JOINT_RANGE)
    assert clip.fps == 50.0 and clip.num_frames == 41  # the reset frame + 40 steps
    assert clip.body_names[0] == "pelvis" and "torso_link" in clip.body_names
    # frame 0 is reached before the first step; frame k after step k, under its segment's command
    cmd = np.load(tmp_path / "rec.npz")["command_vel"]
    expected = np.array([[0, 0, 0]] * 16 + [[0.5, 0, 0]] * 15 + [[0, -0.2, 0.8]] * 10, dtype=np.float32)
    np.testing.assert_array_equal(cmd, expected)
    # the robot stood on the floor through the settling: the clip starts on its feet
    pelvis_z = clip.body_pos_w[0, 0, 2]
    assert 0.6 < pelvis_z < 0.8
    # the clip is the rollout: the joints moved (the policy acted), and the body velocities
    # are consistent with the positions (forward kinematics of the recorded qpos)
    assert np.abs(clip.joint_pos[-1] - clip.joint_pos[0]).max() > 1e-3
    fd = (clip.body_pos_w[2:] - clip.body_pos_w[:-2]) * 25.0
    assert np.abs(fd - clip.body_lin_vel_w[1:-1]).max() < 0.2
    # soles that sank into the floor (soft contact) were lifted out: none is below it
    qpos = np.concatenate((clip.body_pos_w[:, 0], clip.body_quat_w[:, 0], clip.joint_pos), axis=1)
    assert foot_floor_depth(qpos).max() < 1e-6


def test_record_refuses_bad_input_with_one_line(walk_run, run, tmp_path):
    (tmp_path / "bad.yaml").write_text("segments:\n  - {duration: 1.0}\n  - {duration: -1, vx: 0.5}\n")
    result = run("motion", "record", str(walk_run), "--commands", str(tmp_path / "bad.yaml"),
                 "--out", str(tmp_path / "x.npz"), cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error:") and "segments[1].duration" in line and "greater than 0" in line
    (tmp_path / "ok.yaml").write_text("- {duration: 0.1}\n")
    result = run("motion", "record", str(tmp_path / "no_run"), "--commands", str(tmp_path / "ok.yaml"),
                 "--out", str(tmp_path / "x.npz"), cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2 and result.stderr.startswith("error:") and "Traceback" not in result.stderr
    assert not (tmp_path / "x.npz").exists()


def test_the_shipped_command_scripts_parse():
    scripts = sorted(SCRIPTS.glob("*.yaml"))
    assert [p.stem for p in scripts] == ["sidestep", "start_stop", "turn_in_place", "walk_backward", "walk_forward"]
    for path in scripts:
        segments = read_command_script(path)
        total = sum(s.duration for s in segments)
        assert 5.0 <= total <= 9.0, (path.name, total)  # one clip fits the 10 s tracking episode
        assert segments[0].vx == segments[0].vy == segments[0].yaw_rate == 0.0  # starts standing
        assert all(abs(s.vx) <= 1.0 and abs(s.vy) <= 0.5 and abs(s.yaw_rate) <= 1.0 for s in segments)  # trained ranges


def test_command_script_errors_name_the_segment(tmp_path):
    (tmp_path / "a.csv").write_text("1.0,0,0\n")
    with pytest.raises(MotionFormatError, match=r"a.csv.*key 'row 1'.*expected 4 numbers"):
        read_command_script(tmp_path / "a.csv")
    (tmp_path / "b.yaml").write_text("segments:\n  - {duration: 1.0, speed: 2}\n")
    with pytest.raises(MotionFormatError, match=r"key 'segments\[0\]\.speed'"):
        read_command_script(tmp_path / "b.yaml")
    (tmp_path / "c.json").write_text('[{"duration": 0.5, "vy": 0.2}]')
    (seg,) = read_command_script(tmp_path / "c.json")
    assert (seg.duration, seg.vx, seg.vy, seg.yaw_rate) == (0.5, 0.0, 0.2, 0.0)
