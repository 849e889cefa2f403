"""`unilab train ... runtime.mode=async runtime.policy_device=server` on g1_walk_flat: the learner's
process acts for both pipelined shards (here on the CPU), the run completes with updates, and its
summary records where the policy ran; no process is left."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

UNILAB = str(Path(sys.executable).parent / "unilab")


def test_a_run_acting_through_the_server_completes_and_records_it(tmp_path, unilab_in_session):
    # The owner YAML's two pipelined shards; 8 envs, warm-up for 3 of 8 iterations, then 5
    # iterations of 2 acting calls each (one per shard), with the mirrored, equivariant actor.
    cmd = [UNILAB, "train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco", "--preset", "laptop",
           "runtime.mode=async", "runtime.policy_device=server", "training.num_envs=8", "training.max_iterations=8",
           "algo.learning_starts=3", "algo.batch_size=64", "runtime.block_steps=4", "sim.nthread=1",
           "training.device=cpu", "training.progress=false", "training.no_play=true",
           f"training.log_dir={tmp_path / 'logs'}"]
    result = unilab_in_session(cmd, tmp_path, timeout=180)
    assert result.returncode == 0, result.stderr
    (run,) = list((tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir())
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion" and summary["iterations"] == 8
    assert summary["collector_policy_device"] == "server:cpu"
    assert summary["threads"]["collector_shards"] == 2
    assert summary["collector_exitcode"] == 0 and summary["cleanup_errors"] == []
    transfer = summary["transfer"]
    assert transfer["acting_calls"] == 5 * 2 and transfer["weight_snapshots"] >= 5
    assert transfer["weight_broadcasts"] == 0
    ckpt = torch.load(run / "model_last.pt", weights_only=True)
    assert ckpt["agent"]["num_critic_updates"] >= 5
    assert result.left == "", f"processes left in the run's session: {result.left}"
