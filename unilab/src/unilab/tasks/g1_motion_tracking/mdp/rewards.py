"""Tracking rewards: exp(-error / std^2) kernels (BeyondMimic ``tasks/tracking/mdp/rewards.py``).

Body errors are means over the tracked bodies; "relative" bodies are the reference bodies moved
onto the robot's anchor (:class:`~.commands.MotionCommand`). All in the world frame.
"""

from __future__ import annotations

import torch

from unilab.utils.math import quat_error_magnitude_parts, quat_error_magnitude_stacked


def _exp_kernel(error: torch.Tensor, std: float) -> torch.Tensor:
    """exp(-error / std^2), same shape as ``error``: ``error`` divided by -std^2, which equals
    negating it first, bit for bit (a quotient's sign does not enter its rounding), one op fewer."""
    return torch.exp(error / -(std**2))


def _sum_xyz(v: torch.Tensor) -> torch.Tensor:
    """(..., 3) -> (...,): ``torch.sum(v, dim=-1)`` bit for bit, as (x + y) + z, the order in
    which torch's CPU sum adds 3 values; two adds of strided columns cost less than the
    reduction kernel at (N, B, 3)."""
    return (v[..., 0] + v[..., 1]) + v[..., 2]


def motion_global_anchor_position_error_exp(env, std: float, command_name: str = "motion") -> torch.Tensor:
    """exp(-|p_anchor - p_ref_anchor|^2 / std^2). (N,)"""
    cmd = env.commands[command_name]
    error = torch.sum((cmd.anchor_pos_w - env.robot.body_pos_w[:, cmd.anchor_index]) ** 2, dim=-1)
    return _exp_kernel(error, std)


def motion_global_anchor_orientation_error_exp(env, std: float, command_name: str = "motion") -> torch.Tensor:
    """exp(-angle(q_anchor, q_ref_anchor)^2 / std^2). (N,)"""
    cmd = env.commands[command_name]
    error = quat_error_magnitude_stacked(cmd.anchor_quat_w.T, env.robot.body_quat_w[:, cmd.anchor_index].T) ** 2
    return _exp_kernel(error, std)


def motion_relative_body_position_error_exp(env, std: float, command_name: str = "motion") -> torch.Tensor:
    """exp(-mean_b |p_b - p_ref_rel_b|^2 / std^2). (N,)"""
    cmd = env.commands[command_name]
    # on components: torch.sum over the 3 squares adds them in this order (bit for bit)
    dx, dy, dz = (ref - env.robot.body_pos_w[..., i] for i, ref in enumerate(cmd.body_pos_relative_parts))
    error = (dx * dx + dy * dy) + dz * dz
    return _exp_kernel(error.mean(dim=-1), std)


def motion_relative_body_orientation_error_exp(env, std: float, command_name: str = "motion") -> torch.Tensor:
    """exp(-mean_b angle(q_b, q_ref_rel_b)^2 / std^2). (N,)"""
    cmd = env.commands[command_name]
    # on components: at (N, B) against (N, B) the stacked product's 16-term tensors cost more
    # memory traffic than its fewer ops save (where one operand broadcasts, it is cheaper)
    error = quat_error_magnitude_parts(cmd.body_quat_relative_parts, env.robot.body_quat_parts) ** 2
    return _exp_kernel(error.mean(dim=-1), std)


def motion_global_body_linear_velocity_error_exp(env, std: float, command_name: str = "motion") -> torch.Tensor:
    """exp(-mean_b |v_b - v_ref_b|^2 / std^2). (N,)"""
    cmd = env.commands[command_name]
    error = _sum_xyz((cmd.body_lin_vel_w - env.robot.body_lin_vel_w) ** 2)
    return _exp_kernel(error.mean(dim=-1), std)


def motion_global_body_angular_velocity_error_exp(env, std: float, command_name: str = "motion") -> torch.Tensor:
    """exp(-mean_b |w_b - w_ref_b|^2 / std^2). (N,)"""
    cmd = env.commands[command_name]
    error = _sum_xyz((cmd.body_ang_vel_w - env.robot.body_ang_vel_w) ** 2)
    return _exp_kernel(error.mean(dim=-1), std)
