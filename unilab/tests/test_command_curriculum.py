"""The velocity-command curriculum of g1_walk_flat (unitree_rl_lab's ``lin_vel_cmd_levels`` /
``ang_vel_cmd_levels``): ranges start narrow and widen per axis group when the ended episodes
tracked well, at most once per interval."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from unilab.config import ConfigError, build_run_model, resolve_config
from unilab.envs import mdp
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unisim.backends.mujoco import MujocoBackend

N, EPISODE_S, WEIGHT = 64, 20.0, 2.0
RANGES = mdp.VelocityCommandRanges(
    lin_vel_x=(-1.0, 1.0), lin_vel_y=(-0.5, 0.5), ang_vel_z=(-1.0, 1.0),
    resampling_time_s=(100.0, 100.0), standing_fraction=0.0, lin_vel_deadband=0.0,
)  # fmt: skip


def stand_in_env():
    """What the command reads: the generator, episode lengths and the reward manager's
    ``ended_sums`` of the last reset (columns: linear, angular tracking)."""
    terms = {n: SimpleNamespace(weight=WEIGHT) for n in ("track_linear_velocity", "track_angular_velocity")}
    rm = SimpleNamespace(names=list(terms), terms=terms, ended_sums=None)
    return SimpleNamespace(
        num_envs=N, device=torch.device("cpu"), generator=torch.Generator().manual_seed(0),
        episode_length=torch.zeros(N, dtype=torch.long), max_episode_length_s=EPISODE_S, reward_manager=rm,
    )  # fmt: skip


def end_episodes(env, command, rows, lin_per_s: float, ang_per_s: float):
    """Rows ``rows`` end full-length episodes that earned ``lin_per_s`` / ``ang_per_s`` weighted
    reward per second, and reset (as ``ManagerBasedRlEnv._reset_rows`` calls the command)."""
    ids = torch.as_tensor(rows)
    env.episode_length[ids] = 1000
    sums = torch.tensor([lin_per_s, ang_per_s]) * EPISODE_S
    env.reward_manager.ended_sums = sums.expand(len(ids), 2).clone()
    command.reset(ids)
    env.episode_length[ids] = 0


def test_ranges_start_at_the_initial_fraction_and_widen_per_axis_group():
    env = stand_in_env()
    c = mdp.VelocityCommandCurriculum(initial_fraction=0.5, step_fraction=0.1, threshold=0.8, interval_s=1.0)
    cmd = mdp.UniformVelocityCommand(env, RANGES, c)
    assert (cmd.lin_level, cmd.ang_level) == (0.5, 0.5)
    bound = torch.tensor([0.5, 0.25, 0.5])
    assert torch.all(cmd.command.abs() <= bound) and torch.all(cmd.command.abs().amax(0) > 0.8 * bound)
    # well-tracked linear velocity (1.7 > 0.8 x 2.0 per s), poorly tracked yaw (1.0): but the
    # interval has not passed yet, so nothing widens
    end_episodes(env, cmd, range(8), 1.7, 1.0)
    assert (cmd.lin_level, cmd.ang_level) == (0.5, 0.5)
    for _ in range(50):  # 1 s of env steps
        cmd.update(0.02)
    end_episodes(env, cmd, range(8, 16), 1.7, 1.0)
    assert (cmd.lin_level, cmd.ang_level) == pytest.approx((0.6, 0.5))
    assert cmd.metrics() == pytest.approx({"Curriculum/command_lin_level": 0.6, "Curriculum/command_ang_level": 0.5})
    # fresh draws use the wider linear ranges
    end_episodes(env, cmd, range(N), 0.0, 0.0)
    assert torch.all(cmd.command[:, :2].abs() <= torch.tensor([0.6, 0.3]))
    assert float(cmd.command[:, 0].abs().max()) > 0.5
    # the check averages every episode ended since the last one: the 64 poor ones above count
    for _ in range(50):
        cmd.update(0.02)
    end_episodes(env, cmd, range(4), 2.0, 2.0)
    assert (cmd.lin_level, cmd.ang_level) == pytest.approx((0.6, 0.5))
    # levels stop at the full ranges
    for _ in range(10):
        for _ in range(50):
            cmd.update(0.02)
        end_episodes(env, cmd, range(4), 2.0, 2.0)
    assert (cmd.lin_level, cmd.ang_level) == (1.0, 1.0)


def test_without_curriculum_the_full_ranges_and_no_metrics():
    cmd = mdp.UniformVelocityCommand(stand_in_env(), RANGES)
    assert (cmd.lin_level, cmd.ang_level) == (1.0, 1.0) and cmd.metrics() == {}
    assert float(cmd.command[:, 0].abs().max()) > 0.8


def test_env_logs_the_levels_and_the_config_checks_the_tracking_weights():
    cfg = G1WalkFlatConfig(commands={"curriculum": {"enabled": True, "initial_fraction": 0.3}},
                           episode_length_s=0.1)  # fmt: skip
    env = make_env(cfg, backend_cls=MujocoBackend, num_envs=2, nthread=1, seed=0)
    try:
        env.reset()
        assert torch.all(env.commands["twist"].command.abs() <= torch.tensor([0.3, 0.15, 0.3]))
        for _ in range(5):
            *_, extras = env.step(torch.zeros(2, env.num_actions))
        assert extras["log"]["Curriculum/command_lin_level"] == pytest.approx(0.3)
    finally:
        env.close()
    from dataclasses import dataclass

    @dataclass
    class _Algo:
        num_envs: int = 4

    with pytest.raises(ConfigError, match=r"env.commands.curriculum.enabled=true needs positive"):
        resolve_config(build_run_model(_Algo, G1WalkFlatConfig), [],
                       ["env.commands.curriculum.enabled=true", "env.rewards.track_angular_velocity=0"])


def test_the_linear_deadband_zeroes_small_linear_draws_and_keeps_everything_else():
    """``lin_vel_deadband``: draws whose (v_x, v_y) norm is below it become pure yaw commands;
    the other rows, and every yaw rate, are the draws without the deadband (no extra random draw)."""
    import dataclasses

    plain = mdp.UniformVelocityCommand(stand_in_env(), RANGES).command
    banded = mdp.UniformVelocityCommand(stand_in_env(), dataclasses.replace(RANGES, lin_vel_deadband=0.3)).command
    small = torch.linalg.vector_norm(plain[:, :2], dim=1) < 0.3
    assert 0 < int(small.sum()) < N  # some rows of each kind in this draw
    assert torch.all(banded[small, :2] == 0.0)
    assert torch.equal(banded[~small], plain[~small])
    assert torch.equal(banded[:, 2], plain[:, 2])
    g1 = G1WalkFlatConfig(commands={"lin_vel_deadband": 0.2}).commands
    assert g1.lin_vel_deadband == 0.2 and G1WalkFlatConfig(commands={"lin_vel_deadband": 0}).commands.lin_vel_deadband == 0
