"""Reward terms: ``f(env, **params) -> (num_envs,)`` float32, before weight and step_dt.

Kernels follow mjlab's velocity task (``mjlab/tasks/velocity/mdp/rewards.py``, v1.6.0) as
summarised in shared research notes (tasks.md §2.1): exp(-error / std^2).
"""

from __future__ import annotations

import torch


def track_linear_velocity(env, std: float, command_name: str = "twist") -> torch.Tensor:
    """exp(-(|v_xy - cmd_xy|^2 + v_z^2) / std^2), base-frame velocity, m/s. (N,)"""
    v = env.robot.base_lin_vel_b
    cmd = env.commands[command_name].command
    error = torch.sum((cmd[:, :2] - v[:, :2]) ** 2, dim=1) + v[:, 2] ** 2
    return torch.exp(-error / std**2)


def track_angular_velocity(env, std: float, command_name: str = "twist") -> torch.Tensor:
    """exp(-((w_z - cmd_wz)^2 + |w_xy|^2) / std^2), base-frame angular velocity, rad/s. (N,)"""
    w = env.robot.base_ang_vel_b
    cmd = env.commands[command_name].command
    error = (cmd[:, 2] - w[:, 2]) ** 2 + torch.sum(w[:, :2] ** 2, dim=1)
    return torch.exp(-error / std**2)


def upright(env, std: float, body: str | None = None) -> torch.Tensor:
    """exp(-|g_xy|^2 / std^2) of the projected gravity of ``body`` (default: the base). (N,)"""
    if body is None:
        g = env.robot.projected_gravity_b
    else:
        from unilab.utils.math import projected_gravity

        g = projected_gravity(env.robot.body_quat_w[:, env.robot.body_index(body)])
    return torch.exp(-torch.sum(g[:, :2] ** 2, dim=1) / std**2)


def action_rate_l2(env) -> torch.Tensor:
    """sum((a_t - a_{t-1})^2) over action dims. (N,)"""
    am = env.action_manager
    return torch.sum((am.action - am.prev_action) ** 2, dim=1)


def joint_pos_limits(env, soft_factor: float = 0.9) -> torch.Tensor:
    """Sum over joints of how far (rad) each is outside its soft limits. (N,)

    Soft limits shrink the hard range about its middle by ``soft_factor`` (mjlab
    ``soft_joint_pos_limit_factor`` 0.9).
    """
    limits = env.robot.meta.joint_limits.to(env.device)
    mid = limits.mean(dim=1)
    half = 0.5 * (limits[:, 1] - limits[:, 0]) * soft_factor
    q = env.robot.joint_pos
    below = (mid - half - q).clamp(min=0.0)
    above = (q - mid - half).clamp(min=0.0)
    return torch.sum(below + above, dim=1)
