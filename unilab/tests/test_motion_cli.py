"""`unilab motion import|inspect`, a laptop-preset training run of g1_motion_tracking and its\nevaluation from policy.onnx."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from unilab.config import owner_config_files
from unilab.tasks.g1_motion_tracking import DEFAULT_MOTION

UNILAB = str(Path(sys.executable).parent / "unilab")
CONFIGS = Path(DEFAULT_MOTION).parent.parent / "configs"


@pytest.fixture
def run(unilab_in_process):
    """``run(*args, cwd) -> result``: the ``unilab`` command, run in this process."""
    return unilab_in_process


@pytest.fixture(scope="module")
def laptop_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, list[Path]]:
    """`unilab train --preset laptop` of g1_motion_tracking for 5 iterations, in a new process as a
    user runs it: the finished process and the run directories it wrote."""
    tmp_path = tmp_path_factory.mktemp("motion_laptop")
    result = subprocess.run([UNILAB, "train", "--algo", "sac", "--task", "g1_motion_tracking", "--sim", "mujoco",
                             "--preset", "laptop", "training.max_iterations=5", "training.no_play=true",
                             "sim.nthread=1", f"training.log_dir={tmp_path / 'logs'}"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=240)  # fmt: skip
    return result, sorted((tmp_path / "logs" / "sac" / "g1_motion_tracking").glob("*"))


def test_train_laptop_preset_completes(laptop_run):
    result, runs = laptop_run
    assert result.returncode == 0, result.stderr
    (run_dir,) = runs
    summary = json.loads((run_dir / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion"
    assert summary["iterations"] == 5 and summary["num_envs"] == 32
    config = json.loads((run_dir / "run_config.json").read_text())["config"]
    assert config["env"]["motion"]["file"] is None and config["env"]["episode_length_s"] == 10.0
    assert config["runtime"]["mode"] == "sync"  # the laptop preset over the owner YAML's async


def test_eval_plays_the_clip_from_an_exported_policy_alone(laptop_run, run, tmp_path):
    result, (trained,) = laptop_run  # an untrained policy: 5 iterations, before learning_starts
    assert result.returncode == 0, result.stderr
    run_dir = tmp_path / trained.name
    shutil.copytree(trained, run_dir)
    assert run("export", str(run_dir), cwd=tmp_path).returncode == 0
    for f in run_dir.glob("model_*.pt"):  # evaluation needs no checkpoint
        f.unlink()
    out = run("eval", str(run_dir), "--num-envs", "2", "--json", str(tmp_path / "eval.json"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    r = json.loads((tmp_path / "eval.json").read_text())
    assert r["suite"] == "tracking" and r["policy"]["kind"] == "onnx" and r["rows"] == 3
    (clip,) = r["cases"]
    assert clip["name"] == "default" and clip["frames"] == 301  # the 6 s default clip at 50 Hz
    start = clip["from_start"]
    # An untrained policy falls: a failed row names the failure term, a completed one played the clip.
    if start["completed"]:
        assert start["frames_played"] == 299 and start["failure"] is None
    else:
        assert start["frames_played"] < 299 and start["failure"] in ("anchor_pos", "anchor_ori")
    assert set(start["kernels"]) == {"motion_global_anchor_pos", "motion_global_anchor_ori", "motion_body_pos",
                                     "motion_body_ori", "motion_body_lin_vel", "motion_body_ang_vel"}
    assert all(0 < k <= 1 for k in start["kernels"].values())
    assert r["headline"] == float(start["completed"])
    assert "clips completed from frame 0" in out.stdout
    assert json.loads((run_dir / "run_summary.json").read_text())["eval"]["tracking"]["cases"] == r["cases"]


def test_bad_motion_file_is_one_error_line(run, tmp_path):
    result = run("train", "--algo", "sac", "--task", "g1_motion_tracking", "training.num_envs=2",
                 f"env.motion.file={tmp_path / 'none.npz'}", f"training.log_dir={tmp_path / 'logs'}",
                 cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]  # (after the CPU-learner warning)
    assert last.startswith("error: could not build task 'g1_motion_tracking': motion file")
    assert "none.npz" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "logs" / "sac").exists()


def test_owner_yaml_is_read_per_algorithm():
    sac = owner_config_files(CONFIGS, "sac", "mujoco", "laptop")
    assert [p.name for p in sac] == ["sac_mujoco.yaml", "sac_mujoco.laptop.yaml"]
    flash = owner_config_files(CONFIGS, "flashsac", "mujoco", "laptop")
    assert [p.name for p in flash] == ["flashsac_mujoco.yaml", "flashsac_mujoco.laptop.yaml"]


def test_inspect_prints_the_clip(run, tmp_path):
    result = run("motion", "inspect", str(DEFAULT_MOTION), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "fps:      50" in out and "frames:   301" in out and "duration: 6.00 s" in out
    assert "joints:   29: left_hip_pitch_joint" in out and "bodies:   30: pelvis" in out
    assert "joint range violations: 0 outside the hard limits, 0 more outside the soft limits" in out


def test_inspect_takes_a_shipped_clip_by_name(run, tmp_path):
    result = run("motion", "inspect", "squat", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["file"].endswith("squat.npz") and report["frames"] == 401
    # a file of that name in the working directory wins over the shipped clip
    (tmp_path / "squat").write_text("not a clip")
    result = run("motion", "inspect", "squat", cwd=tmp_path)
    assert result.returncode == 2 and "squat" in result.stderr
    result = run("motion", "inspect", "shipped", cwd=tmp_path)  # the set is no one clip: its names
    assert result.returncode == 2 and result.stderr.startswith("error:") and "squat" in result.stderr


def test_inspect_refuses_a_set_of_clips_and_lists_shipped_names_for_a_missing_file(run, tmp_path):
    shutil.copy(DEFAULT_MOTION, tmp_path / "a.npz")
    (tmp_path / "set.yaml").write_text("clips:\n  - a.npz\n  - file: a.npz\n    name: b\n")
    result = run("motion", "inspect", "set.yaml", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.splitlines() == [
        f"error: motion file 'set.yaml': a manifest of 2 clips; expected one clip: inspect each of its files, "
        f"e.g. `unilab motion inspect {tmp_path / 'a.npz'}`"
    ]
    result = run("motion", "inspect", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2 and f"motion file '{tmp_path}': a folder of 1 clip; expected one clip" in result.stderr
    result = run("motion", "inspect", "sqat", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.splitlines() == [
        "error: motion file 'sqat': no such file; expected a motion file or a shipped clip's name (default, lunge, "
        "reach, sidestep, squat, start_stop, turn_in_place, twist, walk_backward, walk_forward)"
    ]


def test_inspect_reports_soft_limit_violations_and_rejects_bad_files(run, tmp_path):
    with np.load(DEFAULT_MOTION) as data:
        arrays = {k: data[k].copy() for k in data.files}
    knee = list(arrays["joint_names"]).index("left_knee_joint")
    arrays["joint_pos"][10, knee] = 2.8  # inside the hard limit 2.88, outside the soft one
    np.savez(tmp_path / "knee.npz", **arrays)
    result = run("motion", "inspect", str(tmp_path / "knee.npz"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "1 more outside the soft limits" in result.stdout
    assert "soft: left_knee_joint" in result.stdout
    arrays["fps"] = np.array([0.0])
    np.savez(tmp_path / "fps.npz", **arrays)
    result = run("motion", "inspect", str(tmp_path / "fps.npz"), cwd=tmp_path)
    assert result.returncode == 2
    assert "fps.npz" in result.stderr and "key 'fps'" in result.stderr


@pytest.mark.parametrize("dropped", ["body_quat_w", "joint_pos"])
def test_inspect_names_the_key_a_clip_npz_lacks(run, tmp_path, dropped):
    """A clip npz that lost a key the importer cannot do without is refused naming that key and the
    keys a clip holds, not with the importer's account of layouts and joint_pos columns."""
    from unilab.motion.clip import REQUIRED_KEYS

    with np.load(DEFAULT_MOTION) as data:
        arrays = {k: data[k] for k in data.files if k != dropped}
    np.savez(tmp_path / "clip.npz", **arrays)
    result = run("motion", "inspect", str(tmp_path / "clip.npz"), cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: motion file '{tmp_path / 'clip.npz'}': key '{dropped}': missing; expected keys "
        f"{list(REQUIRED_KEYS)}, found {sorted(arrays)}"
    ]


@pytest.mark.parametrize("dropped", ["body_pos_w", "joint_pos"])
def test_import_names_the_key_a_clip_npz_lacks(run, tmp_path, dropped):
    """`motion import` of a clip npz that lost a key is refused as inspect refuses it: naming that
    key and the keys a clip holds, not the layouts' joint_pos columns."""
    from unilab.motion.clip import REQUIRED_KEYS

    with np.load(DEFAULT_MOTION) as data:
        arrays = {k: data[k] for k in data.files if k != dropped}
    np.savez(tmp_path / "clip.npz", **arrays)
    result = run("motion", "import", str(tmp_path / "clip.npz"), "-o", str(tmp_path / "out.npz"), cwd=tmp_path)
    assert result.returncode == 2 and not (tmp_path / "out.npz").exists()
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert errors == [
        f"error: motion file '{tmp_path / 'clip.npz'}': key '{dropped}': missing; expected keys "
        f"{list(REQUIRED_KEYS)}, found {sorted(arrays)}"
    ], result.stderr


def test_inspect_reads_a_clip_npz_without_velocities_as_import_would_write_it(run, tmp_path):
    with np.load(DEFAULT_MOTION) as data:
        arrays = {k: data[k] for k in data.files if k != "joint_vel"}
    np.savez(tmp_path / "clip.npz", **arrays)
    result = run("motion", "inspect", str(tmp_path / "clip.npz"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "layout:   beyondmimic_npz, 301 frames at 50 fps in the file" in result.stdout


def test_import_writes_a_loadable_clip(run, tmp_path):
    from unilab.motion import load_motion, write_lafan_csv

    rows = np.zeros((31, 36))
    clip = load_motion(DEFAULT_MOTION)
    p = clip.body_names.index("pelvis")
    rows[:, :3], rows[:, 3:7], rows[:, 7:] = clip.body_pos_w[:31, p], clip.body_quat_w[:31, p], clip.joint_pos[:31]
    write_lafan_csv(tmp_path / "a.csv", rows)
    result = run("motion", "import", str(tmp_path / "a.csv"), "--out", str(tmp_path / "a.npz"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "51 frames at 50 fps (1.00 s), 29 joints, 30 bodies" in result.stdout
    assert load_motion(tmp_path / "a.npz").num_frames == 51


def test_reimporting_a_clip_says_its_bodies_match_forward_kinematics_and_shifted_ones_do_not(run, tmp_path):
    result = run("motion", "import", str(DEFAULT_MOTION), "--out", str(tmp_path / "same.npz"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "  stored body positions match forward kinematics on the G1 (within 0.05 mm); bodies recomputed" in (
        result.stdout.splitlines())
    with np.load(DEFAULT_MOTION) as data:
        arrays = {k: data[k].copy() for k in data.files}
    arrays["body_pos_w"][:, 3, 2] += 0.002  # one body 2 mm off in every frame
    np.savez(tmp_path / "off.npz", **arrays)
    result = run("motion", "import", str(tmp_path / "off.npz"), "--out", str(tmp_path / "b.npz"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "differ from forward kinematics on the G1 by up to 2.0 mm" in result.stdout


def test_a_wxyz_csv_is_one_error_line_and_imports_with_quat_order(run, tmp_path):
    from unilab.motion import load_motion

    clip = load_motion(DEFAULT_MOTION)
    p = clip.body_names.index("pelvis")
    rows = np.concatenate((clip.body_pos_w[:31, p], clip.body_quat_w[:31, p], clip.joint_pos[:31]), axis=1)
    np.savetxt(tmp_path / "wxyz.csv", rows, delimiter=",", fmt="%.8f")  # quaternion wxyz, not xyzw
    refused = run("motion", "import", str(tmp_path / "wxyz.csv"), "--out", str(tmp_path / "a.npz"), cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: motion file") and "looks like wxyz, not xyzw" in line, line
    assert not (tmp_path / "a.npz").exists()
    ok = run("motion", "import", str(tmp_path / "wxyz.csv"), "--out", str(tmp_path / "a.npz"),
             "--quat-order", "wxyz", cwd=tmp_path)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "warning" not in ok.stderr, ok.stderr  # upright: no floating warning
    inspected = run("motion", "inspect", str(tmp_path / "wxyz.csv"), "--quat-order", "wxyz", cwd=tmp_path)
    assert inspected.returncode == 0, inspected.stderr
    # the file's own frames and rate beside the rate it is inspected at (the importer's 50 fps)
    assert ("layout:   lafan_csv, 31 frames at 30 fps in the file (inspected as `unilab motion import` would "
            "write it, at 50 fps)") in inspected.stdout.splitlines()
    assert "fps:      50" in inspected.stdout and "frames:   51" in inspected.stdout
    report = json.loads(run("motion", "inspect", str(tmp_path / "wxyz.csv"), "--quat-order", "wxyz", "--json",
                            cwd=tmp_path).stdout)  # fmt: skip
    assert (report["layout"], report["source_frames"], report["source_fps"], report["fps"]) == ("lafan_csv", 31, 30, 50)


def test_import_out_must_name_an_npz_and_its_folder_is_created(run, tmp_path):
    from unilab.motion import load_motion, write_lafan_csv

    clip = load_motion(DEFAULT_MOTION)
    p = clip.body_names.index("pelvis")
    write_lafan_csv(tmp_path / "a.csv", np.concatenate(
        (clip.body_pos_w[:31, p], clip.body_quat_w[:31, p], clip.joint_pos[:31]), axis=1))  # fmt: skip
    (tmp_path / "folder").mkdir()
    (tmp_path / "afile").write_text("")
    refused = {  # numpy appended .npz to the first two, wrote folder.npz for the third
        "noext": "expected a file name ending in .npz, got no suffix",
        "x.csv": "expected a file name ending in .npz, got '.csv'",
        "folder": "is a folder; expected the .npz file to write",
        "afile/x.npz": "is a file, not a folder",
    }
    for out, message in refused.items():
        result = run("motion", "import", "a.csv", "--out", out, cwd=tmp_path)
        assert result.returncode == 2 and result.stdout == "", (out, result.stdout)
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith(f"error: --out {out}: ") and message in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "afile", "folder"]
    out = tmp_path / "new" / "deeper" / "a.npz"  # a missing folder is created (as export --output does)
    ok = run("motion", "import", "a.csv", "--out", str(out), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert f"wrote {out}: 51 frames" in ok.stdout and load_motion(out).num_frames == 51
