"""The coupled angular-velocity kernel, with one width (mjlab) or a width of its own for the
roll/pitch rate; the setting is refused where it would do nothing."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from unilab.envs import mdp
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig

W = torch.tensor([[0.3, -0.4, 0.2], [0.0, 0.0, 1.0], [1.0, 0.5, -0.3]])  # base angular velocity, rad/s
CMD = torch.tensor([[0.0, 0.0, 0.5], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])  # vx, vy, yaw rate


def _env():
    return SimpleNamespace(robot=SimpleNamespace(base_ang_vel_b=W.clone()),
                           commands={"twist": SimpleNamespace(command=CMD)})


def test_one_width_is_mjlabs_coupled_kernel():
    got = mdp.track_angular_velocity(_env(), std=math.sqrt(0.5))
    want = torch.exp(-((CMD[:, 2] - W[:, 2]) ** 2 + (W[:, :2] ** 2).sum(1)) / 0.5)
    torch.testing.assert_close(got, want)


def test_a_roll_pitch_width_of_its_own_is_the_yaw_kernel_times_a_steadiness_kernel():
    got = mdp.track_angular_velocity(_env(), std=0.5, xy_std=1.2)
    yaw = torch.exp(-((CMD[:, 2] - W[:, 2]) ** 2) / 0.25)
    steady = torch.exp(-(W[:, :2] ** 2).sum(1) / 1.44)
    torch.testing.assert_close(got, yaw * steady)
    assert got[1] == pytest.approx(1.0)  # on command, base steady


def test_the_env_builds_the_term_with_both_widths():
    from unilab.tasks.g1_walk_flat.env_cfg import make_env_cfg

    cfg = G1WalkFlatConfig(tracking={"ang_vel_kernel": "coupled", "ang_vel_std": 0.5, "ang_vel_xy_std": 1.0})
    term = make_env_cfg(cfg).rewards["track_angular_velocity"]
    assert term.func is mdp.track_angular_velocity and term.params == {"std": 0.5, "xy_std": 1.0}


def test_a_roll_pitch_width_without_the_coupled_kernel_is_one_error_line(tmp_path, unilab_in_process):
    result = unilab_in_process("train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco",
                               "env.tracking.ang_vel_xy_std=1.0", cwd=tmp_path)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:")
    assert "ang_vel_xy_std" in lines[0] and "coupled" in lines[0] and "'yaw'" in lines[0]
    assert not (tmp_path / "logs").exists()
