"""Observation terms of motion tracking: ``f(env, **params) -> (N, d)`` (BeyondMimic
``tasks/tracking/mdp/observations.py``). Frames: ``_b`` is the robot's anchor body frame.

Each term here is a :func:`~unilab.envs.managers.row_subset` term: with ``env_ids`` (k,) int64 it
computes those rows alone, (k, d), bit for bit the rows of the full result (every operation is
row-wise), which is what the reset rows' fresh observations need.
"""

from __future__ import annotations

import torch

from unilab.envs.managers import row_subset
from unilab.utils.math import quat_mul_stacked, quat_rotate_inverse, quat_rotate_parts, rot6d_from_stacked


def _rows(t: torch.Tensor, env_ids: torch.Tensor | None) -> torch.Tensor:
    """``t`` itself, or its rows ``env_ids``."""
    return t if env_ids is None else t.index_select(0, env_ids)


def _robot_anchor(env, cmd, env_ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    robot = env.robot
    a = cmd.anchor_index
    return _rows(robot.body_pos_w[:, a], env_ids), _rows(robot.body_quat_w[:, a], env_ids)


@row_subset
def motion_anchor_pos_b(env, command_name: str = "motion", env_ids: torch.Tensor | None = None) -> torch.Tensor:
    """(N, 3) reference anchor position in the robot's anchor frame, m."""
    cmd = env.commands[command_name]
    pos, quat = _robot_anchor(env, cmd, env_ids)
    return quat_rotate_inverse(quat, _rows(cmd.anchor_pos_w, env_ids) - pos)


@row_subset
def motion_anchor_ori_b(env, command_name: str = "motion", env_ids: torch.Tensor | None = None) -> torch.Tensor:
    """(N, 6) reference anchor orientation in the robot's anchor frame: the first two columns
    of its rotation matrix (the 6D representation)."""
    cmd = env.commands[command_name]
    _, quat = _robot_anchor(env, cmd, env_ids)
    # stacked (4, N): the float operations of rot6d_from_quat(quat_mul(quat_conjugate(q), r))
    rel = quat_mul_stacked(quat.T, _rows(cmd.anchor_quat_w, env_ids).T, conjugate_a=True)
    return rot6d_from_stacked(rel)


@row_subset
def robot_body_pos_b(env, command_name: str = "motion", env_ids: torch.Tensor | None = None) -> torch.Tensor:
    """(N, 3B) tracked body positions in the robot's anchor frame, m (privileged)."""
    cmd = env.commands[command_name]
    _, quat = _robot_anchor(env, cmd, env_ids)
    a = cmd.anchor_index
    if env_ids is not None:
        # a few rows: torch.cross on (k, B, 3) costs less than the components' ops below, and
        # quat_rotate_parts rounds as it does (fma), so the rows equal the full result's
        pos = env.robot.body_pos_w.index_select(0, env_ids)
        rel = quat_rotate_inverse(quat[:, None].expand(-1, pos.shape[1], -1), pos - pos[:, a : a + 1])
        return rel.reshape(len(env_ids), -1)
    # (B, N) components: the anchor's (N,) quaternion components broadcast over contiguous rows
    pos = env.robot.body_pos_w.permute(2, 1, 0).contiguous()
    rel = quat_rotate_parts(quat.T.contiguous().unbind(0), (pos - pos[:, a : a + 1]).unbind(0), inverse=True)
    return torch.stack([c.T for c in rel], dim=-1).reshape(pos.shape[2], -1)


@row_subset
def robot_body_ori_b(env, command_name: str = "motion", env_ids: torch.Tensor | None = None) -> torch.Tensor:
    """(N, 6B) tracked body orientations in the robot's anchor frame, 6D each (privileged)."""
    cmd = env.commands[command_name]
    if env_ids is None:
        body_quat = env.robot.body_quat_stacked  # (4, N, B)
    else:
        body_quat = env.robot.body_quat_w.index_select(0, env_ids).movedim(-1, 0)
    a = cmd.anchor_index
    rot6d = rot6d_from_stacked(quat_mul_stacked(body_quat[:, :, a : a + 1], body_quat, conjugate_a=True))
    return rot6d.reshape(rot6d.shape[0], -1)
