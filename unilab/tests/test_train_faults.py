"""A training run that meets a fault of the machine ends in one line and a summary that says why:
a full disk (an injected ENOSPC, and a real 3 MB tmpfs when root may mount one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

UNILAB = str(Path(sys.executable).parent / "unilab")
SMALL = [
    "runtime.mode=sync",
    "training.num_envs=4",
    "algo.batch_size=64",
    "algo.num_updates=1",
    "algo.learning_starts=2",
    "algo.buffer_size_per_env=64",
    "sim.nthread=1",
    "training.log_interval=1",
    "training.no_play=true",
]
TRAIN = ["train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco", *SMALL]

# The CLI in a child process whose disk "fills up" once the first checkpoint is written: every atomic write then
# writes a few bytes and fails with ENOSPC, and so does the TensorBoard writer's flush.
_FULL_DISK_CHILD = r"""
import errno, sys
from pathlib import Path
from torch.utils.tensorboard import SummaryWriter
from unilab import runs
from unilab.cli import app

log_dir = Path(sys.argv[1])
real_write, real_flush = runs._write_all, SummaryWriter.flush

def full():
    return any(log_dir.rglob("model_last.pt"))

def write_all(fd, data):
    if full():
        real_write(fd, data[:16])
        raise OSError(errno.ENOSPC, "No space left on device")
    real_write(fd, data)

def flush(self):
    if full():
        raise OSError(errno.ENOSPC, "No space left on device")
    real_flush(self)

runs._write_all, SummaryWriter.flush = write_all, flush
app(sys.argv[2:], prog_name="unilab")
"""


def test_a_full_disk_ends_the_run_failed_with_path_and_errno(tmp_path):
    log_dir = tmp_path / "logs"
    args = [*TRAIN, f"training.log_dir={log_dir}", "training.max_iterations=6", "training.checkpoint_interval=2"]
    result = subprocess.run([sys.executable, "-c", _FULL_DISK_CHILD, str(log_dir), *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: training failed: No space left on device "
                                                     "(errno 28, ENOSPC): "), result.stderr
    assert "model_4.pt" in errors[0]
    run = next(log_dir.glob("sac/g1_walk_flat/*"))
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "failed"
    assert "ENOSPC" in summary["error"] and str(run / "model_4.pt") in summary["error"]
    assert "TensorBoard events not written" in summary["error"]  # its flush failed; the summary did not skip
    assert summary["iterations"] == 4
    assert not [p.name for p in run.iterdir() if p.name.endswith(".tmp")]
    assert torch.load(run / "model_last.pt", weights_only=True)["iteration"] == 2  # the previous one


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 3 MB tmpfs (root only; skipped where mounting is not allowed)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root on Linux")
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_real_full_disk_leaves_a_failed_summary_and_no_temporary_files(tmp_path, tiny_tmpfs):
    """A checkpoint of the default networks (about 28 MB) does not fit in 3 MB."""
    args = [*TRAIN, f"training.log_dir={tiny_tmpfs}", "training.max_iterations=4", "training.checkpoint_interval=2"]
    result = subprocess.run([UNILAB, *args], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and "(errno 28, ENOSPC)" in errors[0] and "model_2.pt" in errors[0], result.stderr
    run = next(tiny_tmpfs.glob("sac/g1_walk_flat/*"))
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "failed" and "ENOSPC" in summary["error"]
    assert not [p.name for p in run.iterdir() if p.name.endswith(".tmp")]
