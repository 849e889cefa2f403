"""`unilab train --preset laptop runtime.mode=async runtime.num_collectors=2`: completes normally,
records both collectors and the thread split, and leaves no process behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

UNILAB = str(Path(sys.executable).parent / "unilab")


def test_two_collectors_complete_a_laptop_run(tmp_path, unilab_in_session):
    cmd = [UNILAB, "train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco", "--preset", "laptop",
           "runtime.mode=async", "runtime.num_collectors=2", "training.max_iterations=6", "training.no_play=true",
           "sim.nthread=2", f"training.log_dir={tmp_path / 'logs'}"]
    result = unilab_in_session(cmd, tmp_path, timeout=180)
    assert result.returncode == 0, result.stderr
    summary = json.loads(next((tmp_path / "logs").rglob("run_summary.json")).read_text())
    assert summary["status"] == "normal_completion" and summary["iterations"] == 6
    assert summary["collector_exitcode"] == 0 and summary["collector_exitcodes"] == [0, 0]
    assert summary["cleanup_errors"] == []
    assert summary["threads"]["collectors"] == 2 and summary["threads"]["physics_per_collector"] == 1
    assert summary["collector_policy_device"] == "cpu"  # runtime.policy_device's default
    assert result.left == "", f"processes left in the run's session: {result.left}"


def test_thread_split_takes_out_every_collectors_policy_threads() -> None:
    import torch

    from unilab.build import thread_split

    cpu = torch.device("cpu")
    assert thread_split("async", 8, 1, 2, cpu, num_collectors=4) == {"physics": 8, "collector": 1, "learner": 2}
    one, four = thread_split("async", 0, 1, 1, cpu), thread_split("async", 0, 1, 1, cpu, num_collectors=4)
    assert four["physics"] == max(1, one["physics"] - 3)
