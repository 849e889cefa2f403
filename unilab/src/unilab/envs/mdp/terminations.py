"""Termination terms: ``f(env, **params) -> (num_envs,)`` bool."""

from __future__ import annotations

import math

import torch


def time_out(env) -> torch.Tensor:
    """The episode reached its maximum length (a truncation, not a terminal state). (N,) bool"""
    return env.episode_length >= env.max_episode_length


def bad_orientation(env, limit_angle: float = math.radians(70.0)) -> torch.Tensor:
    """The base tilted more than ``limit_angle`` rad from upright. (N,) bool

    tilt = acos(-g_z) where g is the projected gravity (mjlab ``bad_orientation``, 70°).
    """
    g_z = env.robot.projected_gravity_b[:, 2]
    return torch.acos(torch.clamp(-g_z, -1.0, 1.0)) > limit_angle


def nan_detected(env) -> torch.Tensor:
    """The physics state of the row diverged (non-finite or a solver warning). (N,) bool
    (``backend.diverged()``, read once per state through the robot view when the env has one)."""
    robot = getattr(env, "robot", None)
    return robot.diverged if robot is not None else env.backend.diverged()
