"""Tracking-failure terminations: ``f(env, **params) -> (N,)`` bool (BeyondMimic
``tasks/tracking/mdp/terminations.py``)."""

from __future__ import annotations

import functools

import torch

from unilab.utils.math import projected_gravity_z


def bad_anchor_pos_z_only(env, threshold: float, command_name: str = "motion") -> torch.Tensor:
    """|z_anchor - z_ref_anchor| > threshold, m."""
    cmd = env.commands[command_name]
    return (cmd.anchor_pos_w[:, 2] - env.robot.body_pos_w[:, cmd.anchor_index, 2]).abs() > threshold


def bad_anchor_ori(env, threshold: float, command_name: str = "motion") -> torch.Tensor:
    """|g_z(anchor) - g_z(ref_anchor)| > threshold, with g the projected gravity."""
    cmd = env.commands[command_name]
    g_ref = projected_gravity_z(cmd.anchor_quat_w)
    g_robot = projected_gravity_z(env.robot.body_quat_w[:, cmd.anchor_index])
    return (g_ref - g_robot).abs() > threshold


def bad_motion_body_pos_z_only(
    env, threshold: float, body_indices: tuple[int, ...], command_name: str = "motion"
) -> torch.Tensor:
    """Any of ``body_indices`` (tracked-body rows, e.g. the end effectors) has
    |z - z_ref_rel| > threshold, m."""
    cmd = env.commands[command_name]
    idx = _index(tuple(body_indices), env.device)  # a list from a config is accepted too
    ref_z = cmd.body_pos_relative_parts[2].index_select(1, idx)
    error = (ref_z - env.robot.body_pos_w[:, :, 2].index_select(1, idx)).abs()
    return (error > threshold).any(dim=-1)


@functools.lru_cache(maxsize=16)
def _index(indices: tuple[int, ...], device) -> torch.Tensor:
    """(k,) int64 ``indices`` on ``device``, made once (a list index is converted per call)."""
    return torch.tensor(indices, dtype=torch.long, device=device)


def motion_end(env, command_name: str = "motion") -> torch.Tensor:
    """The reference reached its last frame (a truncation, like a time-out)."""
    return env.commands[command_name].clip_ended
