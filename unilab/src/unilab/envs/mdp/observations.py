"""Observation terms: ``f(env, **params) -> (num_envs, d)`` float32."""

from __future__ import annotations

import torch


def base_lin_vel(env) -> torch.Tensor:
    """(N, 3) base linear velocity in the base frame, m/s."""
    return env.robot.base_lin_vel_b


def base_ang_vel(env) -> torch.Tensor:
    """(N, 3) base angular velocity in the base frame, rad/s."""
    return env.robot.base_ang_vel_b


def projected_gravity(env) -> torch.Tensor:
    """(N, 3) unit gravity direction in the base frame."""
    return env.robot.projected_gravity_b


def joint_pos_rel(env) -> torch.Tensor:
    """(N, J) joint positions minus the default pose, rad."""
    return env.robot.joint_pos - env.robot.default_joint_pos


def joint_vel(env) -> torch.Tensor:
    """(N, J) joint velocities, rad/s."""
    return env.robot.joint_vel


def last_action(env) -> torch.Tensor:
    """(N, A) the action applied at this step."""
    return env.action_manager.action


def generated_command(env, name: str) -> torch.Tensor:
    """(N, d) the current value of command ``name``."""
    return env.commands[name].command
