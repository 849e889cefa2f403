"""Run files fail closed: atomic writes that clean up after themselves, run directories that
concurrent runs never share, a summary that is written even on a full disk."""

from __future__ import annotations

import errno
import hashlib
import json
from pathlib import Path

import pytest

from unilab import runs


def test_atomic_write_replaces_the_file_or_leaves_it_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "model_last.pt"
    runs.atomic_write(path, b"old")
    assert path.read_bytes() == b"old"

    def full_disk(fd, data):  # half of it lands, then the disk is full
        runs.os.write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runs, "_write_all", full_disk)
    with pytest.raises(OSError) as info:
        runs.atomic_write(path, b"new content")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(path)
    assert str(path) in str(info.value)
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model_last.pt"]  # no temporary file left
    assert runs.os_error_line(info.value) == f"No space left on device (errno 28, ENOSPC): {path}"


def test_save_checkpoint_keeps_the_previous_one_loadable_when_the_disk_fills(tmp_path, monkeypatch):
    import torch

    runs.save_checkpoint(tmp_path, 2, {"iteration": 2}, keep=5)
    real = runs._write_all

    def full_disk(fd, data):
        real(fd, data[:10])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runs, "_write_all", full_disk)
    with pytest.raises(OSError, match="model_4.pt"):
        runs.save_checkpoint(tmp_path, 4, {"iteration": 4}, keep=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model_2.pt", "model_last.pt"]  # nothing pruned
    assert torch.load(tmp_path / "model_last.pt", weights_only=True)["iteration"] == 2


def test_run_directories_created_in_the_same_second_never_collide(tmp_path, monkeypatch):
    """The race: another process creates the directory between a check and this one's mkdir."""
    real_mkdir = Path.mkdir
    taken = []

    def racing_mkdir(self, *args, **kwargs):
        if self.name.endswith("_mujoco") and not taken:  # the other process wins the first name
            real_mkdir(self)
            taken.append(self)
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", racing_mkdir)
    made = runs.create_run_dir(tmp_path, "sac", "g1_walk_flat", "mujoco")
    assert made.name == taken[0].name + "_2" and made.is_dir()
    again = runs.create_run_dir(tmp_path, "sac", "g1_walk_flat", "mujoco")
    assert again != made and again.is_dir()


def test_the_summary_is_rewritten_in_place_when_no_second_copy_fits(tmp_path, monkeypatch):
    summary = runs.RunSummary(tmp_path / "run_summary.json", {"algo": "sac"})

    def full_disk(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runs, "_write_all", full_disk)
    summary.update(status="failed", error="disk full")
    data = json.loads((tmp_path / "run_summary.json").read_text())
    assert (data["status"], data["error"]) == ("failed", "disk full")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run_summary.json"]


def test_data_changes_match_files_by_name_and_contents(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):  # the same two files in two places, as on two machines
        (tmp_path / folder / "walk.npz").write_bytes(b"walk")
        (tmp_path / folder / "squat.npz").write_bytes(b"squat")
    trained = [runs.data_file("env.motion.file", n, tmp_path / "a" / f"{n}.npz") for n in ("walk", "squat")]
    assert trained[0] == {"key": "env.motion.file", "name": "walk", "file": str(tmp_path / "a" / "walk.npz"),
                          "sha256": hashlib.sha256(b"walk").hexdigest()}
    moved = [runs.data_file("env.motion.file", n, tmp_path / "b" / f"{n}.npz") for n in ("walk", "squat")]
    assert runs.data_changes(trained, moved) == []

    (tmp_path / "b" / "squat.npz").write_bytes(b"a deeper squat")
    (tmp_path / "b" / "lunge.npz").write_bytes(b"lunge")
    now = [runs.data_file("env.motion.file", n, tmp_path / "b" / f"{n}.npz") for n in ("lunge", "squat")]
    assert runs.data_changes(trained, now) == [
        "env.motion.file: lunge added (the run did not train on it); squat changed (other contents); "
        "walk gone (the run trained on it)"
    ]
    assert runs.data_changes(trained, now, given={"env.motion.file"}) == []  # set on purpose: not reported


def test_a_task_without_data_files_or_with_unreadable_ones_records_none(tmp_path):
    class NoData:
        pass

    class Missing:
        @staticmethod
        def data_files(env_cfg):
            return [runs.data_file("env.motion.file", "x", tmp_path / "nowhere.npz")]

    assert runs.task_data_files(NoData(), None) == []
    assert runs.task_data_files(Missing(), None) == []  # building the env reports the missing file
