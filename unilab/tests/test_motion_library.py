"""Several clips, one policy: env.motion.file as an npz, a folder or a manifest; the motion
command's clip list, pinned starts, per-clip ends; a 2-clip training run on the CPU."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from unilab.motion import MotionFormatError, load_motion
from unilab.motion.library import load_motion_library
from unilab.tasks.g1_motion_tracking import DEFAULT_MOTION, G1MotionTrackingConfig, make_env
from unisim.backends.mujoco import MujocoBackend

UNILAB = str(Path(sys.executable).parent / "unilab")
EXACT = {"observation_noise": False, "reset_noise": {"enabled": False}, "push": {"enabled": False},
         "domain_randomization": {"enabled": False}}  # fmt: skip


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory) -> Path:
    """Two clips: the shipped one (301 frames) and its frames 100-200 as 'middle' (101 frames)."""
    folder = tmp_path_factory.mktemp("clips")
    clip = load_motion(DEFAULT_MOTION)
    clip.save(folder / "full.npz")
    keys = ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w")
    replace(clip, **{k: getattr(clip, k)[100:201] for k in keys}).save(folder / "middle.npz")
    return folder


def test_folder_and_manifests_give_the_same_clips(clip_dir, tmp_path):
    lib = load_motion_library(clip_dir)
    assert [(i.index, i.name, i.num_frames, i.weight) for i in lib.infos] == [(0, "full", 301, 1.0), (1, "middle", 101, 1.0)]
    assert lib.infos[1].duration_s == 2.0
    (tmp_path / "set.yaml").write_text(
        f"clips:\n  - file: {clip_dir / 'middle.npz'}\n    weight: 3\n    name: mid\n  - {clip_dir / 'full.npz'}\n"
    )
    lib = load_motion_library(tmp_path / "set.yaml")
    assert [(i.name, i.num_frames, i.weight) for i in lib.infos] == [("mid", 101, 3.0), ("full", 301, 1.0)]
    np.testing.assert_array_equal(lib.clips[0].joint_pos, load_motion(clip_dir / "middle.npz").joint_pos)
    (clip_dir / "set.json").write_text(json.dumps({"clips": [{"file": "full.npz"}]}))  # relative to the manifest
    assert [i.name for i in load_motion_library(clip_dir / "set.json").infos] == ["full"]
    (clip_dir / "set.json").unlink()
    assert len(load_motion_library(DEFAULT_MOTION)) == 1


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("clips:\n  - file: full.npz\n  - file: middle.npz\n    weight: 0\n", r"key 'clips\[1\]\.weight'.*greater than 0"),
        ("clips:\n  - file: full.npz\n    speed: 2\n", r"key 'clips\[0\]\.speed'.*extra"),
        ("clips:\n  - full.npz\n  - file: middle.npz\n    name: full\n",
         r"key 'clips\[1\]\.name': clip name 'full' is also clips\[0\]'s; expected a unique name"),
        ("clips:\n  - full.npz\n  - nothere.npz\n", r"bad.yaml': key 'clips\[1\]\.file': '.*nothere.npz' does not "
         r"exist; expected an existing .npz clip"),
        ("clips: [\n", r"key 'file': expected a YAML manifest"),
    ],
)
def test_bad_manifests_are_one_line_naming_the_entry(clip_dir, tmp_path, text, match):
    manifest = tmp_path / "bad.yaml"
    for name, folder in (("full.npz", clip_dir), ("middle.npz", clip_dir), ("nothere.npz", tmp_path)):
        text = text.replace(name, str(folder / name))
    manifest.write_text(text)
    with pytest.raises(MotionFormatError, match=match) as info:
        load_motion_library(manifest)
    assert "\n" not in str(info.value)



def test_a_manifest_entry_with_a_missing_or_bad_clip_is_named(clip_dir, tmp_path):
    (tmp_path / "notes.npz").write_text("not an archive")
    manifest = tmp_path / "set.yaml"
    manifest.write_text(f"clips:\n  - {clip_dir / 'full.npz'}\n  - file: clips/nothere.npz\n")
    with pytest.raises(MotionFormatError) as info:
        load_motion_library(manifest)
    assert str(info.value) == (
        f"motion file '{manifest}': key 'clips[1].file': 'clips/nothere.npz' does not exist "
        f"({tmp_path / 'clips' / 'nothere.npz'}: paths are relative to the manifest's folder); expected an "
        f"existing .npz clip"
    )
    manifest.write_text(f"clips:\n  - {clip_dir / 'full.npz'}\n  - notes.npz\n")
    with pytest.raises(MotionFormatError, match=rf"^motion file '{manifest}': key 'clips\[1\]': motion file "
                       rf"'{tmp_path / 'notes.npz'}': key 'file': expected a numpy .npz archive"):
        load_motion_library(manifest)

@pytest.fixture(scope="module")
def env(clip_dir):
    e = make_env(G1MotionTrackingConfig(motion={"file": str(clip_dir)}, **EXACT),
                 backend_cls=MujocoBackend, num_envs=4, nthread=1, seed=0)  # fmt: skip
    yield e
    e.close()


def test_the_command_lists_the_clips_and_starts_a_row_where_asked(env):
    cmd = env.commands["motion"]
    assert [(c.index, c.name, c.num_frames, c.fps) for c in cmd.clips] == [(0, "full", 301, 50.0), (1, "middle", 101, 50.0)]
    rows = torch.arange(env.num_envs)
    cmd.pin(rows[:2], 1, frame=0)
    cmd.pin(rows[2:], 0, frame=150)
    env.reset()
    assert cmd.clip_index.tolist() == [1, 1, 0, 0] and cmd.time_steps.tolist() == [0, 0, 150, 150]
    # clip 'middle' frame 0 is the shipped clip's frame 100: the same reference, the same state
    torch.testing.assert_close(cmd.joint_pos[0], cmd.joint_pos_ref[100])
    torch.testing.assert_close(env.robot.joint_pos[0], cmd.joint_pos_ref[100])
    torch.testing.assert_close(cmd.reference_qpos(rows[:1])[0, 7:], env.backend.qpos[0, 7:].float(), atol=1e-5, rtol=0)
    for name in ("motion_body_pos", "motion_global_anchor_pos"):
        term = env.reward_manager.terms[name]
        assert torch.all(term.func(env, **term.params) > 0.999), name
    with pytest.raises(ValueError, match="frame 101 outside clip 'middle'"):
        cmd.pin(rows[:1], 1, frame=101)
    cmd.unpin(rows)


def test_pin_and_start_at_refuse_a_clip_outside_the_library_with_one_message(env):
    cmd = env.commands["motion"]
    rows = torch.arange(env.num_envs)
    expected = r"^clip index 2 outside the motion library: expected 0 to 1 \(2 clips\)$"
    with pytest.raises(ValueError, match=expected):
        cmd.pin(rows[:1], 2)
    with pytest.raises(ValueError, match=expected):
        cmd.start_at(rows[:2], torch.zeros(2, dtype=torch.long), torch.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"^clip index -1 outside the motion library"):
        cmd.start_at(rows[:1], torch.zeros(1, dtype=torch.long), torch.tensor([-1]))
    with pytest.raises(ValueError, match=r"^frame 101 outside clip 'middle': expected 0 to 100 \(101 frames\)$"):
        cmd.pin(rows[:1], 1, frame=101)
    cmd.start_at(rows[:2], torch.tensor([0, 500]), torch.tensor([1, 1]))  # frames clamp to the clip
    assert cmd.clip_index[:2].tolist() == [1, 1] and cmd.time_steps[:2].tolist() == [0, 100]


def test_each_clip_ends_at_its_own_last_frame(env):
    cmd = env.commands["motion"]
    rows = torch.arange(env.num_envs)
    cmd.pin(rows, 1, frame=97)  # 'middle' has 101 frames: its last is 100
    env.reset()
    cmd.unpin(rows)
    for step in range(3):
        _, _, terminated, truncated, extras = env.step(torch.zeros(env.num_envs, 29))
        assert not terminated.any()
        assert bool(truncated.all()) == (step == 2), step
    assert extras["log"]["Episode_Termination/motion_end"] == 1.0


def test_failures_count_in_their_clips_bins(env):
    cmd = env.commands["motion"]
    rows = torch.arange(env.num_envs)
    cmd.pin(rows, 1, frame=60)  # clip 1, bin 1 of its 3
    env.reset()
    cmd.unpin(rows)
    before = cmd.sampler.failed_count.clone()
    qpos = env.backend.qpos.clone()
    qpos[:, 2] -= 0.5  # the robot 0.5 m below the reference: every row terminates
    env.backend.set_state(rows, qpos=qpos)
    env.robot.refresh()
    env.step(torch.zeros(env.num_envs, 29))
    env.step(torch.zeros(env.num_envs, 29))  # folded into the EMA
    gained = cmd.sampler.failed_count - before * (1 - cmd.sampler.alpha) ** 2
    assert int(gained.argmax()) == int(cmd.sampler.bin_offset[1]) + 1
    assert torch.all(gained[:7].abs() < 1e-9)  # nothing in clip 0's bins


def test_play_mode_visits_the_clips_in_turn(clip_dir):
    e = make_env(G1MotionTrackingConfig(motion={"file": str(clip_dir), "sampling": "start"}, **EXACT),
                 backend_cls=MujocoBackend, num_envs=3, nthread=1, seed=0)  # fmt: skip
    cmd = e.commands["motion"]
    seen = []
    for _ in range(2):
        e.reset()
        seen.append(cmd.clip_index.tolist())
        assert cmd.time_steps.tolist() == [0, 0, 0]
    e.close()
    assert seen[1] != seen[0] and all(sorted(set(s)) == [0, 1] for s in seen)


def test_two_clip_training_run_completes_on_the_cpu_and_eval_and_export_name_clips_changed_since(clip_dir, tmp_path):
    folder = tmp_path / "clips"
    shutil.copytree(clip_dir, folder)
    result = subprocess.run(
        [UNILAB, "train", "--algo", "sac", "--task", "g1_motion_tracking", "--sim", "mujoco", "--preset", "laptop",
         "training.max_iterations=3", "training.num_envs=8", "training.no_play=true", "sim.nthread=1",
         f"env.motion.file={folder}", f"training.log_dir={tmp_path / 'logs'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (run_dir,) = (tmp_path / "logs" / "sac" / "g1_motion_tracking").iterdir()
    summary = json.loads((run_dir / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion" and summary["iterations"] == 3
    saved = json.loads((run_dir / "run_config.json").read_text())
    assert saved["config"]["env"]["motion"]["file"] == str(folder)
    assert (run_dir / "model_last.pt").is_file()
    digest = {p.stem: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.npz")}
    assert saved["data"] == [{"key": "env.motion.file", "name": n, "file": str(folder / f"{n}.npz"),
                              "sha256": digest[n]} for n in ("full", "middle")]  # fmt: skip

    # The folder after training: a clip added, another rewritten. Eval scores what is there now
    # and says so, on stderr, above its table and in its record.
    shutil.copy(folder / "full.npz", folder / "extra.npz")
    clip = load_motion(folder / "middle.npz")
    keys = ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w")
    replace(clip, **{k: getattr(clip, k)[:60] for k in keys}).save(folder / "middle.npz")
    result = subprocess.run([UNILAB, "eval", str(run_dir), "--num-envs", "1"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    line = ("env.motion.file: extra added (the run did not train on it); middle changed (other contents)")
    assert f"warning: {line}" in result.stderr.splitlines()
    assert f"not the data the run trained on: {line}" in result.stdout
    record = json.loads((run_dir / "eval_tracking_data_changed.json").read_text())
    assert record["data_changes"] == [line]
    assert [c["name"] for c in record["cases"]] == ["extra", "full", "middle"]
    # the score on other clips is not the run's: its summary and eval_tracking.json stay without one
    assert "eval" not in json.loads((run_dir / "run_summary.json").read_text())
    assert not (run_dir / "eval_tracking.json").exists()
    # export says so too: on stderr, in its summary record and in the ONNX file's metadata
    result = subprocess.run([UNILAB, "export", str(run_dir)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"warning: {line}" in result.stderr.splitlines()
    assert json.loads((run_dir / "run_summary.json").read_text())["onnx"]["data_changes"] == [line]
    from unilab.eval.policy import read_metadata

    meta = read_metadata(run_dir / "policy.onnx")
    assert meta["source"]["data_changes"] == [line]
    assert [c["name"] for c in meta["commands"]["motion"]["clips"]] == ["extra", "full", "middle"]


def test_shipped_names_the_whole_shipped_set():
    e = make_env(G1MotionTrackingConfig(motion={"file": "shipped"}, **EXACT), backend_cls=MujocoBackend,
                 num_envs=1, nthread=1, seed=0)  # fmt: skip
    names = [c.name for c in e.commands["motion"].clips]
    e.close()
    assert names == sorted(p.stem for p in Path(DEFAULT_MOTION).parent.glob("*.npz"))
    assert set(names) == {"default", "squat", "reach", "twist", "lunge",
                          "walk_forward", "walk_backward", "sidestep", "turn_in_place", "start_stop"}


def test_a_shipped_clip_is_named_by_its_name_and_a_wrong_name_lists_them(tmp_path, monkeypatch):
    from unilab.tasks.g1_motion_tracking.env_cfg import load_task_motion

    monkeypatch.chdir(tmp_path)
    cfg = G1MotionTrackingConfig(motion={"file": "squat"})
    assert cfg.motion.file == "squat"  # kept as a name, as 'shipped' is
    library = load_task_motion(cfg, 0.02)
    assert [i.name for i in library.infos] == ["squat"]
    assert library.infos[0].source == str(Path(DEFAULT_MOTION).parent / "squat.npz")
    with pytest.raises(MotionFormatError) as info:
        load_task_motion(G1MotionTrackingConfig(motion={"file": "sqat"}), 0.02)
    assert f"motion file '{tmp_path / 'sqat'}': key 'env.motion.file'" in str(info.value)
    assert "a shipped clip's name (default, lunge, reach, sidestep, squat, start_stop, " in str(info.value)
    (tmp_path / "squat").mkdir()  # a folder of that name in the working directory wins, as a path
    assert G1MotionTrackingConfig(motion={"file": "squat"}).motion.file == str(tmp_path / "squat")
