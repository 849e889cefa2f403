"""Velocity commands for locomotion tasks."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class VelocityCommandRanges:
    """Uniform ranges of the commanded base twist.

    Attributes:
        lin_vel_x, lin_vel_y: m/s in the base frame; ang_vel_z: rad/s.
        resampling_time_s: a new command is drawn after U(range) s.
        standing_fraction: share of draws that command zero velocity.
    """

    lin_vel_x: tuple[float, float] = (-1.0, 1.0)
    lin_vel_y: tuple[float, float] = (-0.5, 0.5)
    ang_vel_z: tuple[float, float] = (-1.0, 1.0)
    resampling_time_s: tuple[float, float] = (3.0, 8.0)
    standing_fraction: float = 0.1


class UniformVelocityCommand:
    """(N, 3) commanded (v_x, v_y, w_z) drawn uniformly, resampled on a per-env timer.

    Attributes:
        command: (N, 3) float32 (m/s, m/s, rad/s).
        is_standing: (N,) bool rows commanded to stand still.
    """

    def __init__(self, env, ranges: VelocityCommandRanges) -> None:
        self.env = env
        self.ranges = ranges
        n = env.num_envs
        self.command = torch.zeros(n, 3, device=env.device)
        self.is_standing = torch.zeros(n, dtype=torch.bool, device=env.device)
        self.time_left = torch.zeros(n, device=env.device)
        self.reset(torch.arange(n, device=env.device))

    def _u(self, n: int, lo: float, hi: float) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(n, device=self.env.device, generator=self.env.generator)

    def _resample(self, env_ids: torch.Tensor) -> None:
        r, n = self.ranges, len(env_ids)
        cmd = torch.stack(
            (self._u(n, *r.lin_vel_x), self._u(n, *r.lin_vel_y), self._u(n, *r.ang_vel_z)), dim=1
        )
        standing = self._u(n, 0.0, 1.0) < r.standing_fraction
        cmd[standing] = 0.0
        self.command[env_ids] = cmd
        self.is_standing[env_ids] = standing
        self.time_left[env_ids] = self._u(n, *r.resampling_time_s)

    def update(self, dt: float) -> None:
        """Advance timers by ``dt`` s and resample the expired rows."""
        self.time_left -= dt
        due = (self.time_left <= 0.0).nonzero(as_tuple=False).flatten()
        if len(due):
            self._resample(due)

    def reset(self, env_ids: torch.Tensor) -> None:
        """Draw new commands for ``env_ids``."""
        if len(env_ids):
            self._resample(env_ids)
