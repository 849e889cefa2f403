"""`unilab train --algo flashsac ... runtime.mode=async` on g1_walk_flat with the laptop preset:
ends normally with updates, a truthful run_summary.json and no process left."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

UNILAB = str(Path(sys.executable).parent / "unilab")


def test_cli_flashsac_async_laptop_completes_and_leaves_no_process(tmp_path, unilab_in_session):
    # Laptop preset: 32 envs, learning_starts 10, batch 128; 14 iterations = 2 blocks of 8 and 5
    # iterations with an update. Smaller networks and block size keep it short on 2 cores. The
    # collector acts on the learner's device (here the CPU): the "learner" path, weight pulls included.
    cmd = [UNILAB, "train", "--algo", "flashsac", "--task", "g1_walk_flat", "--sim", "mujoco", "--preset", "laptop",
           "runtime.mode=async", "training.max_iterations=14", "algo.actor_hidden_dim=32", "algo.critic_hidden_dim=32",
           "runtime.sync_weights_every=1", "runtime.policy_device=learner", "sim.nthread=1", "training.device=cpu",
           "training.progress=false", "training.no_play=true", f"training.log_dir={tmp_path / 'logs'}"]
    result = unilab_in_session(cmd, tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    (run,) = list((tmp_path / "logs" / "flashsac" / "g1_walk_flat").iterdir())
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion" and summary["iterations"] == 14
    assert summary["runtime"] == "async"
    assert summary["collector_policy_device"] == "cpu"  # "learner" on a CPU learner
    assert summary["collector_exitcode"] == 0 and summary["cleanup_errors"] == []
    assert summary["transfer"]["blocks"] == 2 and summary["transfer"]["weight_broadcasts"] >= 1
    config = json.loads((run / "run_config.json").read_text())["config"]
    runtime = config["runtime"]
    assert (runtime["mode"], config["training"]["num_envs"], runtime["block_steps"]) == ("async", 32, 8)
    ckpt = torch.load(run / "model_last.pt", weights_only=True)
    assert ckpt["algo"] == "flashsac" and ckpt["agent"]["num_critic_updates"] >= 5
    assert result.left == "", f"processes left in the run's session: {result.left}"
