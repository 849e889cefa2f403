"""Run files fail closed: atomic writes that clean up after themselves, run directories that
concurrent runs never share, a summary that is written even on a full disk."""

from __future__ import annotations

import errno
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
