"""Bad files and values given to the commands end in one ``error:`` line (exit 2), never a
traceback: a run_config.json that is not an object, npz files that are not clips or hold pickled
objects, checkpoints with NaN weights, seeds numpy cannot take; and a run trained with relative
paths plays from another directory."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from unilab.config import layer_overrides

UNILAB = str(Path(sys.executable).parent / "unilab")
TINY = [
    "training.num_envs=2", "training.max_iterations=2", "algo.batch_size=16", "algo.num_updates=1",
    "algo.learning_starts=1", "algo.buffer_size_per_env=8", "sim.nthread=1", "training.device=cpu",
    "training.progress=false", "training.no_play=true", "runtime.mode=sync",
]


@pytest.fixture
def run_cli(unilab_in_process):
    """``run_cli(*args, cwd) -> result``: the ``unilab`` command, run in this process (what these
    tests check is what it prints and returns)."""
    return unilab_in_process


def one_error_line(result) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("content", ["[1, 2, 3]", '"run"', '{"config": {}}'], ids=["list", "string", "no-names"])
@pytest.mark.parametrize("command", ["play", "export"])
def test_a_run_config_that_is_not_unilabs_object_is_one_line(finished_walk_run, run_cli, tmp_path, content, command):
    run = finished_walk_run(tmp_path)
    (run / "run_config.json").write_text(content)
    line = one_error_line(run_cli(command, str(run), cwd=tmp_path))
    assert line.startswith(f"error: {run / 'run_config.json'} is ")
    assert "expected the object unilab train writes" in line


def _nan_checkpoint(run: Path) -> tuple[Path, str]:
    """``run`` with NaN in its last checkpoint's actor; the run and where the NaN is."""
    payload = torch.load(run / "model_last.pt", weights_only=False)
    name = next(k for k, v in payload["agent"]["actor"].items() if v.is_floating_point() and v.dim() == 2)
    payload["agent"]["actor"][name][0, :3] = float("nan")
    torch.save(payload, run / "model_last.pt")
    return run, f"actor.{name} (3 of {payload['agent']['actor'][name].numel()} values)"


@pytest.mark.parametrize("command", ["play", "export"])
def test_a_checkpoint_with_nan_weights_is_refused_naming_the_tensor(finished_walk_run, run_cli, tmp_path, command):
    run, where = _nan_checkpoint(finished_walk_run(tmp_path))
    line = one_error_line(run_cli(command, str(run), "--no-video" if command == "play" else "--atol=1", cwd=tmp_path))
    assert line == (f"error: checkpoint {run / 'model_last.pt'} has NaN or infinite weights: first in {where}; "
                    "play or export an earlier checkpoint (--checkpoint model_<iteration>.pt)")
    assert not (run / "policy.onnx").exists()


def test_resuming_from_nan_weights_is_refused_before_anything_is_built(finished_walk_run, run_cli, tmp_path):
    run, where = _nan_checkpoint(finished_walk_run(tmp_path / "trained"))
    result = run_cli("train", "--algo", "sac", "--task", "g1_walk_flat", *layer_overrides(TINY, ["training.max_iterations=4"]),
                     f"training.resume={run}", f"training.log_dir={tmp_path / 'logs'}", cwd=tmp_path)
    line = one_error_line(result)
    assert line.startswith(f"error: training.resume: {run / 'model_last.pt'} has NaN or infinite weights: first in {where}")
    assert not list((tmp_path / "logs").glob("*/*/*"))  # no run directory


@pytest.mark.parametrize("case", ["missing", "not-xml", "directory", "flashsac-symmetry"])
def test_a_start_that_fails_while_building_writes_no_folder(run_cli, tmp_path, case):
    """Bad input found while the env or the agent is built (after the log folder was checked) is
    one error: line, with training.device=auto's CPU warning held back, and leaves no folder: not
    the log folder the command named, not logs/ in the working directory."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("not a model\n")
    (work / "models").mkdir()
    args = {"missing": ["--algo", "sac", "--task", "g1_walk_flat", f"robot.mjcf={tmp_path / 'none.xml'}"],
            "not-xml": ["--algo", "sac", "--task", "g1_walk_flat", f"robot.mjcf={work / 'notes.txt'}"],
            "directory": ["--algo", "sac", "--task", "g1_walk_flat", f"robot.mjcf={work / 'models'}"],
            "flashsac-symmetry": ["--algo", "flashsac", "--task", "g1_motion_tracking", "algo.symmetry=true"]}[case]
    before = sorted(work.iterdir())
    for log_dir in (tmp_path / "runs" / "nested", None):  # a named folder; the default logs/ in the cwd
        extra = [f"training.log_dir={log_dir}"] if log_dir else []
        line = one_error_line(run_cli("train", *args, *layer_overrides(TINY, ["training.device=auto", *extra]), cwd=work))
        assert ("robot.mjcf" in line) if case != "flashsac-symmetry" else ("algo.symmetry=true" in line), line
        assert sorted(work.iterdir()) == before
        assert not (tmp_path / "runs").exists()


def test_a_failed_start_keeps_a_log_folder_that_existed(run_cli, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    one_error_line(run_cli("train", "--algo", "sac", "--task", "g1_walk_flat", *TINY, f"robot.mjcf={tmp_path / 'none.xml'}",
                           f"training.log_dir={logs}", cwd=tmp_path))
    assert logs.is_dir() and not list(logs.iterdir())


def test_an_entropy_target_no_policy_in_the_action_box_can_reach_is_one_line(run_cli, tmp_path):
    line = one_error_line(run_cli("train", "--algo", "sac", "--task", "g1_walk_flat", *TINY, "algo.target_entropy_scale=-5",
                                  f"training.log_dir={tmp_path / 'logs'}", cwd=tmp_path))
    assert line.startswith("error: algo.target_entropy_scale=-5 sets a target entropy of 145 nats (-scale x 29 actions), "
                           "above the entropy of the uniform distribution over the action box"), line
    assert "expected a target <= " in line and "algo.target_entropy_scale >= -" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["train", "play"])
def test_a_key_given_twice_is_one_line(finished_walk_run, run_cli, tmp_path, command):
    """A repeated key is refused rather than its last value silently taken, before a run is built."""
    head = (["train", "--algo", "sac", "--task", "g1_walk_flat", *TINY, f"training.log_dir={tmp_path / 'logs'}"]
            if command == "train" else ["play", str(finished_walk_run(tmp_path / "trained")), "--no-video"])
    line = one_error_line(run_cli(*head, "env.push.enabled=true", "env.push.enabled=false", cwd=tmp_path))
    assert line == "error: overrides: env.push.enabled given twice (true, then false); expected each key once"
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_seed_numpy_cannot_take_is_one_line(run_cli, tmp_path, seed):
    line = one_error_line(run_cli("train", "--algo", "sac", "--task", "g1_walk_flat", f"training.seed={seed}",
                                  cwd=tmp_path))
    assert line.startswith(f"error: invalid value for training.seed: {seed} (input should be")


def _object_npz(path: Path) -> Path:
    from unilab.tasks.g1_motion_tracking.env_cfg import DEFAULT_MOTION

    with np.load(DEFAULT_MOTION) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["joint_pos"] = np.array([{"not": "numbers"}], dtype=object)
    np.savez(path, **arrays)
    return path


def test_motion_inspect_of_an_npz_with_object_arrays_is_one_line(run_cli, tmp_path):
    clip = _object_npz(tmp_path / "objects.npz")
    line = one_error_line(run_cli("motion", "inspect", str(clip), cwd=tmp_path))
    assert line == (f"error: motion file {str(clip)!r}: key 'joint_pos': expected a numeric or string array; it "
                    "holds Python objects (pickled data), which are never loaded")


@pytest.mark.parametrize("content", [b"frame,x,y\n0,1,2\n", b"\x93NUMPY\x01\x00v\x00"], ids=["csv", "npy"])
def test_a_file_that_is_not_an_npz_is_refused_without_numpys_unsafe_hint(run_cli, tmp_path, content):
    notes = tmp_path / "clip.npz"
    notes.write_bytes(content)
    for args in (["motion", "inspect", str(notes)],
                 ["train", "--algo", "sac", "--task", "g1_motion_tracking", *TINY, f"env.motion.file={notes}",
                  f"training.log_dir={tmp_path / 'logs'}"]):
        line = one_error_line(run_cli(*args, cwd=tmp_path))
        # The file is named with what a motion file is expected to be (an npz of arrays, or one of
        # the layouts `unilab motion import` reads), never numpy's "load it unsafely" hint.
        assert f"motion file {str(notes)!r}" in line and "expected" in line, line
        assert "allow_pickle" not in line and "unsafely" not in line


def test_a_run_with_relative_paths_plays_from_another_directory(run_cli, tmp_path):
    from unilab.tasks.g1_motion_tracking.env_cfg import DEFAULT_MOTION

    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    shutil.copy(DEFAULT_MOTION, work / "clip.npz")
    result = run_cli("train", "--algo", "sac", "--task", "g1_motion_tracking", *TINY, "env.motion.file=clip.npz",
                     "training.eval_interval=0", "training.log_dir=logs", cwd=work)
    assert result.returncode == 0, result.stderr
    run = next((work / "logs").glob("sac/g1_motion_tracking/*"))
    saved = json.loads((run / "run_config.json").read_text())["config"]
    assert saved["env"]["motion"]["file"] == str(work / "clip.npz")
    # a new process, started in the other directory
    played = subprocess.run([UNILAB, "play", str(run), "--no-video", "--steps", "3", "--num-envs", "1"],
                            cwd=elsewhere, capture_output=True, text=True, timeout=240)
    assert played.returncode == 0, played.stderr


def test_motion_settings_a_user_gets_wrong_say_what_to_write(run_cli, tmp_path):
    from unilab.motion import MotionFormatError
    from unilab.motion.importers import resolve_joint_order

    csv = tmp_path / "walk.csv"
    csv.write_text("0,1,2\n")
    train_args = ["train", "--algo", "sac", "--task", "g1_motion_tracking", *TINY, f"training.log_dir={tmp_path / 'logs'}"]
    line = one_error_line(run_cli(*train_args, "env.motion.file=shiped", cwd=tmp_path))
    assert "env.motion.file" in line and "`shipped`" in line
    # training.device=auto: on a machine without an accelerator its CPU warning waits for the
    # env, so the bad motion file is still the only line
    line = one_error_line(run_cli(*layer_overrides(train_args, ["training.device=auto"]), "env.motion.file=shiped",
                                  cwd=tmp_path))
    assert "`shipped`" in line
    line = one_error_line(run_cli(*train_args, f"env.motion.file={csv}", cwd=tmp_path))
    assert "unilab motion import" in line
    with pytest.raises(MotionFormatError, match=r"--joint-order.*unitree or isaaclab.*got 'unitre'"):
        resolve_joint_order("unitre", csv)  # a misspelt order, not a one-joint list
    assert resolve_joint_order("left_hip_pitch_joint", csv) == ("left_hip_pitch_joint",)


@pytest.mark.parametrize(("override", "value"), [("env.rewards.track_linear_velocity_fine", "nan"),
                                                 ("env.rewards.alive", "inf"), ("env.tracking.lin_vel_fine_std", "-inf")])
def test_a_non_finite_number_in_the_task_settings_is_one_line(run_cli, tmp_path, override, value):
    """A NaN or infinite reward weight would make its term score nothing (the reward manager zeroes
    non-finite values): refused before anything runs."""
    line = one_error_line(run_cli("config", "--algo", "sac", "--task", "g1_walk_flat", f"{override}={value}",
                                  cwd=tmp_path))
    assert line == f"error: invalid value for {override}: '{value}' (input should be a finite number)"


def test_a_deadband_that_zeroes_every_linear_command_is_one_line(run_cli, tmp_path):
    line = one_error_line(run_cli("config", "--algo", "sac", "--task", "g1_walk_flat", "env.commands.lin_vel_x=[-0.15,0.15]",
                                  "env.commands.lin_vel_y=[0,0]", cwd=tmp_path))
    assert line.startswith("error: invalid env.commands: lin_vel_deadband 0.2 m/s zeroes every linear command of "
                           "lin_vel_x [-0.15, 0.15] and lin_vel_y [0.0, 0.0]")
    ok = run_cli("config", "--algo", "sac", "--task", "g1_walk_flat", "env.commands.lin_vel_x=[-0.15,0.15]",
                 "env.commands.lin_vel_y=[0,0]", "env.commands.lin_vel_deadband=0", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
