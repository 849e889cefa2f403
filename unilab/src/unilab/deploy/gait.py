"""The gait clock on the robot side: the 4 ``gait_phase`` observation columns of a policy trained
with ``env.gait.enabled=true`` (the SAC g1_walk_flat owner default), for one robot, in numpy.

In training the columns come from :class:`unilab.envs.mdp.GaitPhaseCommand`; a runtime feeding
``policy.onnx`` on hardware must compute them itself. :class:`GaitClock` follows the same rules:
the clock advances by ``dt_s / period_s`` cycles per policy step, the left and right feet are half a
cycle apart, and both report phase pi (the "stand" value) while the velocity command is below the
stand threshold. Training draws each env's frequency from U(1/period_s +- frequency_width_hz) and
its start phase at random; on the robot the mean frequency and any start phase are in that range.

Use, once per policy step::

    clock = GaitClock.from_metadata(read_metadata("policy.onnx"))
    obs[-4:] = clock.columns(command)   # command: (vx m/s, vy m/s, wz rad/s)
    action = policy(obs)
    clock.advance()
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

FOOT_OFFSETS = (0.0, 0.5)
"""Cycles: left foot, right foot (as :attr:`unilab.envs.mdp.GaitPhaseCommand.FOOT_OFFSETS`)."""


class GaitClock:
    """One robot's gait clock.

    Args:
        period_s: gait period, s (one left and one right swing); training's mean is
            ``env.gait.period_s``.
        dt_s: policy step, s (``control.dt_s`` of the policy metadata; 0.02 for g1_walk_flat).
        stand_threshold: the command is a stand command when |(vx, vy)| < threshold (m/s) and
            |wz| < threshold (rad/s).
        phase: start phase, cycles in [0, 1).

    Raises:
        ValueError: ``period_s`` or ``dt_s`` not positive, or ``phase`` outside [0, 1).
    """

    def __init__(self, period_s: float, dt_s: float, stand_threshold: float = 0.01, phase: float = 0.0) -> None:
        if not period_s > 0.0:
            raise ValueError(f"period_s must be > 0 s, got {period_s!r}")
        if not dt_s > 0.0:
            raise ValueError(f"dt_s must be > 0 s, got {dt_s!r}")
        if not 0.0 <= phase < 1.0:
            raise ValueError(f"phase must be in [0, 1) cycles, got {phase!r}")
        self.period_s = float(period_s)
        self.dt_s = float(dt_s)
        self.stand_threshold = float(stand_threshold)
        self.phase = float(phase)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any], phase: float = 0.0) -> GaitClock:
        """The clock of an exported policy, from its metadata (:func:`unilab.deploy.export.read_metadata`).

        Raises:
            ValueError: the policy was trained without a gait clock (no ``commands.gait`` entry,
                e.g. an export older than the ``commands`` metadata or ``env.gait.enabled=false``).
        """
        gait = (metadata.get("commands") or {}).get("gait")
        if gait is None:
            raise ValueError(
                "the policy metadata has no commands.gait entry: the policy reads no gait clock "
                "(trained with env.gait.enabled=false) or was exported before unilab recorded it"
            )
        settings = gait["settings"]
        return cls(settings["period_s"], metadata["control"]["dt_s"], settings["stand_threshold"], phase)

    def columns(self, command: Sequence[float]) -> np.ndarray:
        """The ``gait_phase`` columns for the current phase and velocity ``command``.

        Args:
            command: (3,) vx (m/s), vy (m/s), wz (rad/s), the command the policy is given.

        Returns:
            (4,) float32: sin(left), sin(right), cos(left), cos(right) of the feet's phase
            angles 2 pi (phase + offset) - pi (rad), or of pi for both feet on a stand command.
        """
        vx, vy, wz = (float(c) for c in command)
        if math.hypot(vx, vy) < self.stand_threshold and abs(wz) < self.stand_threshold:
            angles = np.full(2, math.pi)
        else:
            cycles = np.remainder(self.phase + np.asarray(FOOT_OFFSETS), 1.0)
            angles = 2.0 * math.pi * cycles - math.pi
        return np.concatenate((np.sin(angles), np.cos(angles))).astype(np.float32)

    def advance(self) -> None:
        """Advance the clock by one policy step (``dt_s / period_s`` cycles), wrapping at 1."""
        self.phase = (self.phase + self.dt_s / self.period_s) % 1.0


__all__ = ["FOOT_OFFSETS", "GaitClock"]
