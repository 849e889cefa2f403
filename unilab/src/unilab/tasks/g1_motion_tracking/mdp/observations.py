"""Observation terms of motion tracking: ``f(env, **params) -> (N, d)`` (BeyondMimic
``tasks/tracking/mdp/observations.py``). Frames: ``_b`` is the robot's anchor body frame."""

from __future__ import annotations

import torch

from unilab.utils.math import quat_conjugate, quat_mul, quat_rotate_inverse, rot6d_from_quat


def _robot_anchor(env, cmd) -> tuple[torch.Tensor, torch.Tensor]:
    robot = env.robot
    return robot.body_pos_w[:, cmd.anchor_index], robot.body_quat_w[:, cmd.anchor_index]


def motion_anchor_pos_b(env, command_name: str = "motion") -> torch.Tensor:
    """(N, 3) reference anchor position in the robot's anchor frame, m."""
    cmd = env.commands[command_name]
    pos, quat = _robot_anchor(env, cmd)
    return quat_rotate_inverse(quat, cmd.anchor_pos_w - pos)


def motion_anchor_ori_b(env, command_name: str = "motion") -> torch.Tensor:
    """(N, 6) reference anchor orientation in the robot's anchor frame: the first two columns
    of its rotation matrix (the 6D representation)."""
    cmd = env.commands[command_name]
    _, quat = _robot_anchor(env, cmd)
    return rot6d_from_quat(quat_mul(quat_conjugate(quat), cmd.anchor_quat_w))


def robot_body_pos_b(env, command_name: str = "motion") -> torch.Tensor:
    """(N, 3B) tracked body positions in the robot's anchor frame, m (privileged)."""
    cmd = env.commands[command_name]
    pos, quat = _robot_anchor(env, cmd)
    b = env.robot.body_pos_w.shape[1]
    rel = quat_rotate_inverse(quat[:, None].expand(-1, b, -1), env.robot.body_pos_w - pos[:, None])
    return rel.reshape(rel.shape[0], -1)


def robot_body_ori_b(env, command_name: str = "motion") -> torch.Tensor:
    """(N, 6B) tracked body orientations in the robot's anchor frame, 6D each (privileged)."""
    cmd = env.commands[command_name]
    _, quat = _robot_anchor(env, cmd)
    b = env.robot.body_quat_w.shape[1]
    rot6d = rot6d_from_quat(quat_mul(quat_conjugate(quat)[:, None].expand(-1, b, -1), env.robot.body_quat_w))
    return rot6d.reshape(rot6d.shape[0], -1)
