"""The gait clock of g1_walk_flat (holosoma's G1 ``LocomotionGait`` and ``feet_phase``): the
clock's advance and wrap, the stand snap, the target height profile, the reward kernel, the
observation widths, the config checks and a short `unilab train` run that logs the reward."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from unilab.config import ConfigError, build_run_model, resolve_config
from unilab.envs import mdp
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unisim.backends.mujoco import MujocoBackend

SWING, SIGMA = 0.09, 0.008


# ---------------------------------------------------------------- the clock, on a stand-in env
def fake_env(num_envs: int, command=None):
    """Just what GaitPhaseCommand reads: num_envs, device, generator and a "twist" command."""
    twist = torch.zeros(num_envs, 3) if command is None else torch.tensor(command, dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    env = SimpleNamespace(num_envs=num_envs, device=torch.device("cpu"), generator=gen)
    env.commands = {"twist": SimpleNamespace(command=twist)}
    return env


def test_phase_advances_by_dt_over_period_and_wraps():
    env = fake_env(2, command=[[0.5, 0.0, 0.0], [0.0, 0.0, 0.3]])
    settings = mdp.GaitPhaseSettings(period_s=0.8, frequency_width_hz=0.0, randomize_phase=False)
    gait = mdp.GaitPhaseCommand(env, settings)
    assert torch.all(gait.phase == 0.0) and torch.allclose(gait.frequency, torch.tensor(1.25))
    dt = 0.02
    for k in range(1, 61):  # 1.2 s = 1.5 periods: wraps once
        gait.advance(dt)
        expected = (k * dt / 0.8) % 1.0
        circular = torch.remainder(gait.phase - expected + 0.5, 1.0) - 0.5  # 0.9999999 ~ 0
        assert torch.all(circular.abs() < 1e-5), (k, gait.phase, expected)
    assert float(gait.phase[0]) == pytest.approx(0.5, abs=1e-5)
    assert torch.all((gait.phase >= 0.0) & (gait.phase < 1.0))
    # foot angles: left 2*pi*phase - pi = 0 (mid-swing), right half a cycle later (+-pi: down)
    assert float(gait.foot_phase[0, 0]) == pytest.approx(0.0, abs=1e-4)
    assert abs(float(gait.foot_phase[0, 1])) == pytest.approx(math.pi, abs=1e-4)
    assert torch.all(gait.foot_phase.abs() <= math.pi)
    assert gait.command.shape == (2, 4)
    assert gait.command[0].tolist() == pytest.approx([0.0, 0.0, 1.0, -1.0], abs=1e-4)


def test_stand_command_snaps_both_feet_to_pi_and_the_clock_runs_on():
    env = fake_env(2, command=[[0.0, 0.0, 0.0], [0.4, 0.0, 0.0]])
    gait = mdp.GaitPhaseCommand(env, mdp.GaitPhaseSettings(frequency_width_hz=0.0, randomize_phase=False))
    gait.reset(torch.arange(2))  # the env resets commands in order, so the twist is known now
    for _ in range(10):
        gait.advance(0.02)
    assert gait.is_standing.tolist() == [True, False]
    assert gait.foot_phase[0].tolist() == pytest.approx([math.pi, math.pi])
    assert gait.command[0].tolist() == pytest.approx([0.0, 0.0, -1.0, -1.0], abs=1e-6)
    assert float(gait.phase[0]) == pytest.approx(0.2, abs=1e-5)  # the clock kept running
    env.commands["twist"].command[0] = torch.tensor([0.3, 0.0, 0.0])  # walk again: resume
    gait.advance(0.02)
    assert not gait.is_standing[0]
    assert float(gait.foot_phase[0, 0]) == pytest.approx(2 * math.pi * 0.22 - math.pi, abs=1e-4)


def test_reset_draws_start_phase_and_frequency_per_row():
    env = fake_env(256)
    gait = mdp.GaitPhaseCommand(env, mdp.GaitPhaseSettings(period_s=1.0, frequency_width_hz=0.2))
    assert torch.all((gait.phase >= 0.0) & (gait.phase < 1.0)) and gait.phase.std() > 0.2
    assert torch.all((gait.frequency >= 0.8) & (gait.frequency <= 1.2)) and gait.frequency.std() > 0.05
    before = gait.frequency.clone()
    gait.reset(torch.tensor([3]))
    assert torch.equal(gait.frequency[:3], before[:3]) and gait.frequency[3] != before[3]
    with pytest.raises(ValueError, match="frequency width"):
        mdp.GaitPhaseCommand(env, mdp.GaitPhaseSettings(period_s=2.0, frequency_width_hz=0.5))


# ---------------------------------------------------------------- target profile and reward kernel
def test_expected_foot_height_is_holosomas_bezier_bump():
    phi = torch.tensor([-math.pi, -math.pi / 2, 0.0, math.pi / 2, math.pi])
    h = mdp.expected_foot_height(phi, SWING)
    assert h.tolist() == pytest.approx([0.0, SWING / 2, SWING, SWING / 2, 0.0], abs=1e-7)
    dense = mdp.expected_foot_height(torch.linspace(-math.pi, math.pi, 401), SWING)
    assert torch.all(dense >= 0.0) and torch.all(dense <= SWING + 1e-7)
    rise, fall = dense[:201], dense[200:]
    assert torch.all(rise.diff() >= -1e-7) and torch.all(fall.diff() <= 1e-7)
    assert torch.allclose(dense, dense.flip(0), atol=1e-6)  # symmetric about the peak
    # the cubic Bezier ease: a quarter into the rise, 3t^2 - 2t^3 at t = 0.25
    quarter = mdp.expected_foot_height(torch.tensor([-0.75 * math.pi]), SWING)
    assert float(quarter) == pytest.approx(SWING * (3 * 0.25**2 - 2 * 0.25**3), rel=1e-5)


def reward_env(foot_z: list[list[float]], foot_phase: list[list[float]]):
    """A stand-in env whose foot sites are at heights ``foot_z`` (N, 2) and whose gait clock
    reports ``foot_phase`` (N, 2)."""
    z = torch.tensor(foot_z, dtype=torch.float32)
    sensors = {f"foot{i}": torch.stack((torch.zeros_like(z[:, i]), torch.zeros_like(z[:, i]), z[:, i]), 1)
               for i in range(2)}  # fmt: skip
    return SimpleNamespace(
        backend=SimpleNamespace(sensor=lambda name: sensors[name]),
        commands={"gait": SimpleNamespace(foot_phase=torch.tensor(foot_phase, dtype=torch.float32))},
    )


def test_feet_phase_is_one_on_schedule_and_lower_off_it():
    phase = [[0.0, -math.pi], [0.0, -math.pi], [0.0, -math.pi], [math.pi, math.pi]]
    z = [
        [SWING, 0.0],  # left at its peak, right on the ground: on schedule
        [0.0, 0.0],  # left did not lift
        [SWING + 0.02, 0.01],  # both 1-2 cm off
        [0.0, 0.0],  # standing: both feet down is on schedule
    ]
    env = reward_env(z, phase)
    r = mdp.feet_phase(env, SWING, SIGMA, pos_sensors=("foot0", "foot1"))
    assert r.shape == (4,) and r.dtype == torch.float32
    assert r[0] == pytest.approx(1.0) and r[3] == pytest.approx(1.0)
    assert float(r[1]) == pytest.approx(math.exp(-(SWING**2) / SIGMA), rel=1e-5)
    assert float(r[2]) == pytest.approx(math.exp(-(0.02**2 + 0.01**2) / SIGMA), rel=1e-4)
    assert r[1] < r[2] < r[0]


# ---------------------------------------------------------------- in g1_walk_flat
def build(num_envs: int = 2, **overrides):
    cfg = G1WalkFlatConfig(**overrides)
    return make_env(cfg, backend_cls=MujocoBackend, num_envs=num_envs, nthread=1, seed=0)


def test_gait_adds_four_columns_to_actor_and_critic_only_when_enabled():
    env = build(
        gait={"enabled": True}, rewards={"feet_phase": 5.0}, penalty_curriculum={"enabled": True},
        reset_z_m=(0.0, 0.0),
    )  # fmt: skip
    try:
        assert env.obs_dims == {"actor": 103, "critic": 115}  # without it 99 and 111 (test_mdp_observations)
        # standing in the default pose: both soles 3.5 mm up, both targets 0
        env.reset()
        env.commands["twist"].command[:] = 0.0
        env.commands["gait"].update(0.0)
        t = env.reward_manager.terms["feet_phase"]
        standing = t.func(env, **t.params)
        assert standing.tolist() == pytest.approx([math.exp(-2 * 0.0035**2 / SIGMA)] * 2, abs=1e-3)
        actor = dict((n, (a, b)) for n, a, b in env.observation_manager.layout["actor"])
        critic = dict((n, (a, b)) for n, a, b in env.observation_manager.layout["critic"])
        assert actor["gait_phase"] == critic["gait_phase"] == (99, 103)
        env.reset()
        obs, reward, *_ = env.step(torch.zeros(2, 29))
        gait = env.commands["gait"]
        assert torch.equal(obs["actor"][:, 99:103], gait.command)  # noise-free
        assert torch.equal(obs["critic"][:, 99:103], gait.command)
        # a positive weight is left alone by the penalty curriculum (scale 0.1 at the start)
        rm = env.reward_manager
        i = rm.names.index("feet_phase")
        assert rm.penalty_scale == pytest.approx(0.1)
        assert float(rm._scale[i]) == pytest.approx(5.0 * env.step_dt)
        t = rm.terms["feet_phase"]
        value = t.func(env, **t.params)
        assert value.shape == (2,) and torch.all((value > 0) & (value <= 1))
    finally:
        env.close()


def test_feet_phase_needs_the_gait_clock_and_the_frequency_stays_positive():
    with pytest.raises(ValueError, match="env.gait.enabled=true"):
        G1WalkFlatConfig(gait={"enabled": False})  # feet_phase keeps its default 5.0
    assert G1WalkFlatConfig(gait={"enabled": False}, rewards={"feet_phase": 0.0}).gait.enabled is False
    with pytest.raises(ValueError, match="frequency_width_hz"):
        G1WalkFlatConfig(gait={"period_s": 2.0, "frequency_width_hz": 0.5})


def test_config_errors_are_one_line_naming_the_keys():
    from dataclasses import dataclass

    @dataclass
    class _Algo:
        num_envs: int = 4

    model = build_run_model(_Algo, G1WalkFlatConfig)
    with pytest.raises(ConfigError) as err:
        resolve_config(model, [], ["env.gait.enabled=false"])
    assert str(err.value) == (
        "invalid env: env.rewards.feet_phase=5 needs env.gait.enabled=true "
        "(the reward follows the gait clock); without the clock set env.rewards.feet_phase=0"
    )
    with pytest.raises(ConfigError, match=r"^invalid env.gait: frequency_width_hz=1"):
        resolve_config(model, [], ["env.gait.frequency_width_hz=1.0"])
    cfg = resolve_config(model, [], ["env.gait.enabled=true", "env.rewards.feet_phase=5.0"])
    assert cfg.env.gait.swing_height_m == 0.09 and cfg.env.gait.sigma == 0.008


# ---------------------------------------------------------------- `unilab train` end to end
def test_train_with_gait_logs_feet_phase(tmp_path):
    from unilab.plots import read_scalars

    unilab = str(Path(sys.executable).parent / "unilab")
    cmd = [
        unilab, "train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco",
        "--preset", "laptop",
        "env.gait.enabled=true", "env.rewards.feet_phase=5.0",
        "env.episode_length_s=0.1",  # 5 steps: episodes end, so Episode_Reward/* is logged
        "training.max_iterations=8", "training.num_envs=4", "algo.batch_size=32", "algo.learning_starts=2",
        "algo.buffer_size_per_env=64", "sim.nthread=1", "training.log_interval=1",
        "training.no_play=true", f"training.log_dir={tmp_path / 'logs'}",
    ]  # fmt: skip
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    (run,) = (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir()
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion" and summary["iterations"] == 8
    config = json.loads((run / "run_config.json").read_text())["config"]
    assert config["env"]["gait"]["enabled"] is True and config["env"]["rewards"]["feet_phase"] == 5.0
    feet = read_scalars(run)["Episode_Reward/feet_phase"]
    assert feet and all(0.0 < v <= 5.0 for _, _, v in feet)


def test_the_robot_side_clock_reproduces_the_env_gait_columns():
    """unilab.deploy.gait.GaitClock (numpy, one robot) against the env's GaitPhaseCommand over a
    walk - stand - turn schedule: the same 4 columns at every step."""
    import numpy as np

    from unilab.deploy.gait import GaitClock
    from unilab.envs.mdp.commands import VelocityCommandRanges

    cfg = G1WalkFlatConfig(
        gait={"enabled": True, "frequency_width_hz": 0.0, "randomize_phase": False, "period_s": 0.8},
        rewards={"feet_phase": 5.0}, domain_randomization={"enabled": False}, push={"enabled": False},
    )  # fmt: skip
    env = make_env(cfg, backend_cls=MujocoBackend, num_envs=1, nthread=1, seed=0)
    try:
        twist, gait = env.commands["twist"], env.commands["gait"]

        def hold(cmd):  # this command now and after any reset of the row
            twist.ranges = VelocityCommandRanges(
                lin_vel_x=(cmd[0],) * 2, lin_vel_y=(cmd[1],) * 2, ang_vel_z=(cmd[2],) * 2,
                resampling_time_s=(1e9, 1e9), standing_fraction=0.0,
            )  # fmt: skip
            twist.command[:] = torch.tensor(cmd)

        hold((0.5, 0.0, 0.0))
        env.reset()
        clock = GaitClock(period_s=0.8, dt_s=env.step_dt, stand_threshold=0.01)
        np.testing.assert_allclose(clock.columns((0.5, 0.0, 0.0)), gait.command[0].numpy(), atol=1e-5)
        schedule = [(0.5, 0.0, 0.0)] * 30 + [(0.0, 0.0, 0.0)] * 10 + [(0.0, 0.0, 0.8)] * 60
        actions = torch.zeros(1, env.num_actions)  # the default pose: the robot may fall and reset
        advanced = 0
        for cmd in schedule:
            hold(cmd)
            _, _, terminated, truncated, _ = env.step(actions)
            if bool(terminated[0] | truncated[0]):
                clock.phase = 0.0  # the env restarted the row's clock (randomize_phase=false)
            else:
                clock.advance()
                advanced += 1
            np.testing.assert_allclose(clock.columns(cmd), gait.command[0].numpy(), atol=1e-4)
        assert advanced >= 40
        assert clock.columns((0.0, 0.0, 0.0)).tolist() == pytest.approx([0.0, 0.0, -1.0, -1.0], abs=1e-6)
    finally:
        env.close()


def test_the_robot_side_clock_reads_the_policy_metadata():
    from unilab.deploy.gait import GaitClock

    meta = {"control": {"dt_s": 0.02},
            "commands": {"gait": {"settings": {"period_s": 1.0, "stand_threshold": 0.01}}}}  # fmt: skip
    clock = GaitClock.from_metadata(meta, phase=0.25)
    assert (clock.period_s, clock.dt_s, clock.phase) == (1.0, 0.02, 0.25)
    clock.advance()
    assert clock.phase == pytest.approx(0.27)
    with pytest.raises(ValueError, match="no commands.gait entry"):
        GaitClock.from_metadata({"control": {"dt_s": 0.02}})
    with pytest.raises(ValueError, match="phase must be in"):
        GaitClock(1.0, 0.02, phase=1.0)
