"""`unilab train` with runtime.mode=async: SIGINT/SIGTERM and a killed collector end with a
checkpoint, a truthful run_summary.json and no process left (a real `unilab` process each);
training.resume continues a run."""

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

UNILAB = str(Path(sys.executable).parent / "unilab")
SMALL = [
    "training.num_envs=4",
    "algo.batch_size=64",
    "algo.num_updates=1",
    "algo.learning_starts=2",
    "algo.buffer_size_per_env=64",
    "algo.actor_hidden=[32,32]",
    "algo.critic_hidden=[32,32]",
    "runtime.block_steps=2",
    "sim.nthread=1",
    "training.log_interval=1",
    "training.no_play=true",
]


def _args(tmp_path: Path, *extra: str) -> list[str]:
    return ["train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco", *SMALL,
            f"training.log_dir={tmp_path / 'logs'}", *extra]


def _cmd(tmp_path: Path, *extra: str) -> list[str]:
    return [UNILAB, *_args(tmp_path, *extra)]


def _children(pid: int) -> list[int]:
    """Live (non-zombie) child pids of ``pid``, from /proc."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pids = [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []
    alive = []
    for child in pids:
        try:
            with open(f"/proc/{child}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(child)
        except FileNotFoundError:
            pass
    return alive


def _collector_pid(pid: int) -> int | None:
    for child in _children(pid):
        try:
            with open(f"/proc/{child}/cmdline") as f:
                cmdline = f.read()
        except FileNotFoundError:
            continue
        if "multiprocessing" in cmdline and "resource_tracker" not in cmdline:
            return child
    return None


def _wait_for_training(tmp_path: Path, proc: subprocess.Popen, timeout: float = 90) -> Path:
    """The run directory once some iterations were logged and the collector runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        events = list((tmp_path / "logs").rglob("events.out.tfevents.*"))
        if events and events[0].stat().st_size > 200 and _collector_pid(proc.pid):
            return events[0].parent
        time.sleep(0.2)
    raise AssertionError("training never started")


def _no_process_left(session: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = subprocess.run(["pgrep", "-s", str(session)], capture_output=True, text=True).stdout.strip()
        if not left:
            return
        time.sleep(0.2)
    raise AssertionError(f"processes left in the run's session: {left}")


def _popen(cmd: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


@pytest.mark.parametrize("sig, status, code, stepping", [(signal.SIGINT, "interrupted", 130, "threads"),
                                                         (signal.SIGTERM, "terminated", 143, "threads"),
                                                         (signal.SIGINT, "interrupted", 130, "pipeline")])
def test_async_signal_stops_with_checkpoint_and_no_child_left(tmp_path, sig, status, code, stepping):
    proc = _popen(_cmd(tmp_path, "runtime.mode=async", "training.max_iterations=100000", "runtime.collector_shards=2",
                       f"runtime.shard_stepping={stepping}"), tmp_path)
    try:
        run = _wait_for_training(tmp_path, proc)
        if sig == signal.SIGINT:  # a terminal's Ctrl-C reaches the whole process group
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, stderr
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == status
    assert summary["runtime"] == "async"
    assert summary["collector_exitcode"] == 0 and summary["cleanup_errors"] == []
    assert summary["transfer"]["blocks"] >= 1
    ckpt = torch.load(run / "model_last.pt", weights_only=True)  # as play and export read it
    assert ckpt["iteration"] == summary["iterations"] > 0
    assert {"python", "numpy", "torch"} <= set(ckpt["rng"])
    _no_process_left(proc.pid)


def test_a_killed_collector_fails_the_run_with_a_checkpoint(tmp_path):
    proc = _popen(_cmd(tmp_path, "runtime.mode=async", "training.max_iterations=100000"), tmp_path)
    try:
        run = _wait_for_training(tmp_path, proc)
        os.kill(_collector_pid(proc.pid), signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, stderr
    assert "error: training failed: collector process exited with code -9 at iteration" in stderr
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "failed"
    assert summary["error"].startswith("collector process exited with code -9")
    assert summary["collector_exitcode"] == -9
    ckpt = torch.load(run / "model_last.pt", weights_only=False)
    assert ckpt["iteration"] == summary["iterations"] > 0
    _no_process_left(proc.pid)


def test_resume_continues_from_the_saved_iteration(tmp_path, unilab_in_process):
    """Both runs in this process (the async one still starts its collector process); neither
    evaluates its final policy (test_train checks that)."""
    first = unilab_in_process(*_args(tmp_path, "training.max_iterations=4", "algo.actor_update_period=1",
                                     "training.eval_interval=0"), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    (first_run,) = list((tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir())
    saved = torch.load(first_run / "model_last.pt", weights_only=False)

    second = unilab_in_process(*_args(tmp_path, "training.max_iterations=7", "training.resume=latest",
                                      "runtime.mode=async", "algo.actor_update_period=1", "training.eval_interval=0"),
                               cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    (second_run,) = [p for p in (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir() if p != first_run]
    summary = json.loads((second_run / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion"
    assert summary["start_iteration"] == 4 and summary["iterations"] == 7
    assert summary["resumed_from"] == {"path": str(first_run / "model_last.pt"), "iteration": 4}
    resumed = torch.load(second_run / "model_last.pt", weights_only=False)
    assert resumed["iteration"] == 7 == resumed["agent"]["iteration"]
    # Updates continued from the saved counters (the replay refills for learning_starts iterations).
    assert resumed["agent"]["num_critic_updates"] > saved["agent"]["num_critic_updates"]
    assert resumed["agent"]["actor_optimizer"]["state"][0]["step"] > saved["agent"]["actor_optimizer"]["state"][0]["step"]


def test_resume_problems_are_one_line_errors_before_any_run(tmp_path, unilab_in_process):
    done = tmp_path / "done.pt"
    torch.save({"algo": "sac", "task": "g1_walk_flat", "iteration": 7, "agent": {"iteration": 7}}, done)
    again = unilab_in_process(*_args(tmp_path, "training.max_iterations=7", f"training.resume={done}"), cwd=tmp_path)
    assert again.returncode == 2 and "raise training.max_iterations" in again.stderr
    missing = unilab_in_process(*_args(tmp_path, f"training.resume={tmp_path / 'nope'}"), cwd=tmp_path)
    assert missing.returncode == 2 and "no such checkpoint" in missing.stderr
    assert not (tmp_path / "logs" / "sac").exists()
