"""`unilab train training.devices=cpu:2`: two gloo ranks through torch's elastic launcher.

Checks that the ranks' learner states are identical at the end (each rank writes the sha256 of
its state into $UNILAB_DDP_DIGEST_DIR, and rank 0 records its own all-gather comparison), that
only rank 0 writes a run directory, the summary's rank fields, one-line errors for bad
``training.devices``, and that SIGINT to the launcher stops every rank.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from unilab.ddp import DevicesError, parse_devices

UNILAB = str(Path(sys.executable).parent / "unilab")
BASE = [UNILAB, "train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco", "--preset", "laptop",
        "training.num_envs=4", "runtime.mode=sync", "algo.batch_size=64", "algo.learning_starts=2",
        "algo.buffer_size_per_env=64", "training.log_interval=1", "training.no_play=true",
        "training.devices=cpu:2"]  # fmt: skip


def test_two_cpu_ranks_train_identically_and_only_rank0_writes(tmp_path):
    digests = tmp_path / "digests"
    digests.mkdir()
    env = {**os.environ, "UNILAB_DDP_DIGEST_DIR": str(digests)}
    cmd = [*BASE, "training.max_iterations=4", f"training.log_dir={tmp_path / 'logs'}"]
    result = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]

    # Parameters (and optimizer state, normalizers, temperature) identical across ranks.
    files = sorted(p.name for p in digests.iterdir())
    assert files == ["rank0.txt", "rank1.txt"]
    assert (digests / "rank0.txt").read_text() == (digests / "rank1.txt").read_text()

    # One run directory, rank 0's; nothing else under the log dir.
    runs = [p for p in (tmp_path / "logs").rglob("*") if p.is_dir() and p.name.endswith("_mujoco")]
    assert len(runs) == 1
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["sac"]
    run = runs[0]
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion"
    assert summary["world_size"] == 2 and summary["devices"] == ["cpu", "cpu"]
    assert summary["ranks_identical"] is True
    assert summary["num_envs"] == 4 and summary["num_envs_total"] == 8
    assert summary["env_steps"] == 4 * 4 * 2  # summed over ranks
    config = json.loads((run / "run_config.json").read_text())
    assert config["distributed"]["world_size"] == 2 and config["distributed"]["backend"] == "gloo"
    ckpt = torch.load(run / "model_last.pt", weights_only=False)
    assert ckpt["agent"]["num_critic_updates"] > 0  # gradients were really synchronized
    assert result.stdout.count("run directory:") == 1  # rank 0 alone reports


def test_parse_devices():
    assert parse_devices(None) is None
    assert parse_devices("cpu:2") == ["cpu", "cpu"]
    assert parse_devices([0, 1], cuda_count=2) == ["cuda:0", "cuda:1"]
    assert parse_devices(["cuda:1", 0], cuda_count=2) == ["cuda:1", "cuda:0"]
    with pytest.raises(DevicesError, match="listed twice"):
        parse_devices([0, 0], cuda_count=2)
    with pytest.raises(DevicesError, match="cuda:2 does not exist"):
        parse_devices([0, 2], cuda_count=2)
    with pytest.raises(DevicesError, match="no CUDA device"):
        parse_devices([0], cuda_count=0)
    for bad in ("cpu", "cpu:0", "gpu:2", [], ["x"], [True]):
        with pytest.raises(DevicesError):
            parse_devices(bad, cuda_count=2)


def test_bad_devices_is_one_line_before_any_process(tmp_path):
    cmd = [*BASE[:-1], "training.devices=[0,0]", f"training.log_dir={tmp_path / 'logs'}"]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: training.devices=") and "twice" in lines[0]
    assert not (tmp_path / "logs").exists()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigint_to_the_launcher_stops_every_rank(tmp_path):
    cmd = [*BASE, "training.max_iterations=100000", f"training.log_dir={tmp_path / 'logs'}"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not list((tmp_path / "logs").rglob("events.out.tfevents.*")):
            time.sleep(0.2)
        time.sleep(2.0)
        ranks = [int(p) for p in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                                text=True).stdout.split()]  # fmt: skip
        assert len(ranks) == 2, "expected two rank processes under the launcher"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr[-3000:]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in ranks):
        time.sleep(0.2)
    assert not any(_alive(p) for p in ranks)
    summary = json.loads(next((tmp_path / "logs").rglob("run_summary.json")).read_text())
    assert summary["status"] == "interrupted"
