"""Worlds whose physics diverges: the env ends them terminated with reward 0 and a zero final
observation (a bounded transition for the replay), the trainer counts them per log interval and
per run and warns above 1 % of the episodes; push settings have upper bounds."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from unilab.divergence import DivergenceMonitor
from unilab.envs.manager_based_rl_env import DIVERGED_KEY, ENDED_KEY
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unisim.backends.mujoco import MujocoBackend


def test_a_diverged_world_ends_terminated_with_a_bounded_transition():
    env = make_env(G1WalkFlatConfig(), backend_cls=MujocoBackend, num_envs=4, nthread=1, seed=0)
    try:
        env.reset()
        zero = torch.zeros(4, env.num_actions)
        env.step(zero)
        qvel = env.backend.qvel[:1].clone()
        qvel[0, 0] = 1e12  # beyond MuJoCo's bad-qvel threshold: the row diverges in the next step
        env.backend.set_state(torch.tensor([0]), qvel=qvel)
        _, reward, terminated, _, extras = env.step(zero)
        assert terminated[0] and reward[0] == 0.0
        assert all(torch.all(obs[0] == 0.0) for obs in extras["final_obs"].values())
        assert torch.isfinite(reward).all() and not terminated[1:].any() and (reward[1:] != 0).all()
        assert extras["log"][DIVERGED_KEY] == 0.25 and extras["log"][ENDED_KEY] == 0.25
        _, _, _, _, extras = env.step(zero)  # reset: the row steps on normally
        assert extras["log"][DIVERGED_KEY] == 0.0
    finally:
        env.close()


def test_the_monitor_counts_per_interval_and_per_run_and_warns_once(caplog):
    monitor = DivergenceMonitor(num_envs=100)
    steps = [(0.0, 0.05), (0.01, 0.02), (0.0, 0.03)]  # 1 diverged of 10 ended: 10 %
    with caplog.at_level(logging.WARNING, logger="unilab.divergence"):
        for i, (diverged, ended) in enumerate(steps):
            metrics = {DIVERGED_KEY: diverged, ENDED_KEY: ended, "Train/mean_reward": 1.0}
            monitor.update(metrics, log_now=i == 1)
            assert DIVERGED_KEY not in metrics and ENDED_KEY not in metrics
            if i == 1:
                assert metrics["Env/diverged_worlds"] == 1.0
                assert metrics["Env/diverged_episode_share"] == pytest.approx(1 / 7)
            else:
                assert "Env/diverged_worlds" not in metrics
        monitor.update({DIVERGED_KEY: 0.02, ENDED_KEY: 0.02}, log_now=True)
    assert monitor.summary() == {"diverged_worlds": 3, "episodes_ended": 12, "diverged_episode_share": 0.25}
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and warnings[0].startswith("1 of 7 episodes (14.3 %) ended because their physics diverged")


def test_below_one_percent_there_is_no_warning(caplog):
    monitor = DivergenceMonitor(num_envs=1000)
    with caplog.at_level(logging.WARNING, logger="unilab.divergence"):
        monitor.update({DIVERGED_KEY: 0.001, ENDED_KEY: 0.2}, log_now=True)  # 1 of 200
    assert not caplog.records and monitor.summary()["diverged_worlds"] == 1


@pytest.mark.parametrize("key, value", [("env.push.velocity.x", 1e6), ("env.push.velocity.yaw", 100.0)])
def test_push_settings_have_upper_bounds(key, value):
    from unilab.config import ConfigError, build_run_model, resolve_config
    from unilab_rl.algorithms.sac.config import SACConfig

    with pytest.raises(ConfigError, match=rf"invalid value for {key}: {value!r} \(input should be less than or equal to"):
        resolve_config(build_run_model(SACConfig, G1WalkFlatConfig), [], [f"{key}={value}"])


# `unilab train` in a child process whose backend reports world 0 diverged every 4th step.
_DIVERGING_CHILD = r"""
import sys, torch
from unilab.cli import app
from unisim.backends.mujoco import MujocoBackend

real = MujocoBackend.diverged
calls = {"n": 0}

def diverged(self):
    calls["n"] += 1
    out = real(self).clone()
    if calls["n"] % 2 == 0:
        out[0] = True
    return out

MujocoBackend.diverged = diverged
app(sys.argv[1:], prog_name="unilab")
"""


def test_training_counts_diverged_worlds_in_the_summary_and_tensorboard(tmp_path):
    from unilab.plots import read_scalars

    args = ["train", "--algo", "sac", "--task", "g1_walk_flat", "runtime.mode=sync", "training.num_envs=4",
            "algo.batch_size=16", "algo.learning_starts=2", "algo.buffer_size_per_env=16", "sim.nthread=1",
            "training.no_play=true", "training.eval_interval=0", "training.max_iterations=8", "training.log_interval=4",
            f"training.log_dir={tmp_path / 'logs'}"]
    result = subprocess.run([sys.executable, "-c", _DIVERGING_CHILD, *args], cwd=tmp_path, capture_output=True,
                            text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    run = next((tmp_path / "logs").glob("sac/g1_walk_flat/*"))
    summary = json.loads((run / "run_summary.json").read_text())
    # the env reads diverged() once per step (nan_state and the containment share the read):
    # every 2nd call is every 2nd step; each such step ends world 0.
    assert summary["status"] == "normal_completion"
    assert summary["diverged_worlds"] == 4
    assert summary["episodes_ended"] >= 4 and summary["diverged_episode_share"] > 0.01
    assert "ended because their physics diverged" in result.stderr
    scalars = read_scalars(run)
    assert [v for _, _, v in scalars["Env/diverged_worlds"]] == [2.0, 2.0]
