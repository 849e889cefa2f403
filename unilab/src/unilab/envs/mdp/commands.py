"""Velocity commands for locomotion tasks."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass
class VelocityCommandRanges:
    """Uniform ranges of the commanded base twist.

    Attributes:
        lin_vel_x, lin_vel_y: m/s in the base frame; ang_vel_z: rad/s.
        resampling_time_s: a new command is drawn after U(range) s.
        standing_fraction: share of draws that command zero velocity.
        lin_vel_deadband: m/s; a drawn (v_x, v_y) with norm below it is set to zero, the yaw rate
            kept, so that turning in place is trained rather than only nearly trained
            (legged_gym's "set small commands to zero", 0.2 m/s: leggedrobotics/legged_gym
            ``legged_robot.py``, ``_resample_commands``); 0 turns it off.
    """

    lin_vel_x: tuple[float, float] = (-1.0, 1.0)
    lin_vel_y: tuple[float, float] = (-0.5, 0.5)
    ang_vel_z: tuple[float, float] = (-1.0, 1.0)
    resampling_time_s: tuple[float, float] = (3.0, 8.0)
    standing_fraction: float = 0.1
    lin_vel_deadband: float = 0.0


@dataclass
class VelocityCommandCurriculum:
    """Command ranges that widen as tracking improves (unitree_rl_lab ``lin_vel_cmd_levels`` /
    ``ang_vel_cmd_levels``, unitreerobotics/unitree_rl_lab@aa0a736
    ``tasks/locomotion/mdp/curriculums.py``).

    Two levels, fractions of the full ranges: linear (x and y) and angular (yaw rate). Each starts
    at ``initial_fraction``. At the first reset at least ``interval_s`` of env time after the last
    check, each level grows by ``step_fraction`` (up to 1) when the episodes ended since that check
    earned, per second of the maximum episode length, more than ``threshold`` x the weight of its
    tracking term (``lin_term`` / ``ang_term`` of the env's reward manager).

    Attributes:
        initial_fraction, step_fraction: level at the start and growth per check (dimensionless).
        threshold: fraction of the tracking term's weight that counts as tracking well.
        interval_s: env time between checks, s.
        lin_term, ang_term: reward term names of the linear and angular tracking.
        start_lin, start_ang: the levels the envs start at (a resumed run's); None:
            ``initial_fraction``.
    """

    initial_fraction: float = 0.5
    step_fraction: float = 0.1
    threshold: float = 0.8
    interval_s: float = 1.0
    lin_term: str = "track_linear_velocity"
    ang_term: str = "track_angular_velocity"
    start_lin: float | None = None
    start_ang: float | None = None


class UniformVelocityCommand:
    """(N, 3) commanded (v_x, v_y, w_z) drawn uniformly, resampled on a per-env timer.

    With a :class:`VelocityCommandCurriculum`, each range is scaled about 0 by its level: (lo, hi)
    becomes (level * lo, level * hi).

    Attributes:
        command: (N, 3) float32 (m/s, m/s, rad/s).
        is_standing: (N,) bool rows commanded to stand still.
        lin_level, ang_level: the curriculum's levels (1.0 without a curriculum).
        resampled: whether the last :meth:`update` drew new commands for any row (commands that
            follow this one, e.g. the gait clock's stand state, skip their refresh otherwise).
    """

    def __init__(
        self, env, ranges: VelocityCommandRanges, curriculum: VelocityCommandCurriculum | None = None
    ) -> None:
        self.env = env
        self.ranges = ranges
        self.curriculum = curriculum
        if curriculum is None:
            self.lin_level = self.ang_level = 1.0
        else:
            initial = curriculum.initial_fraction
            self.lin_level = initial if curriculum.start_lin is None else curriculum.start_lin
            self.ang_level = initial if curriculum.start_ang is None else curriculum.start_ang
        self._since_check_s = 0.0
        self._ended = [0.0, 0.0, 0]  # since the last check: lin sum, ang sum, episodes
        self.resampled = True
        n = env.num_envs
        self.command = torch.zeros(n, 3, device=env.device)
        self.is_standing = torch.zeros(n, dtype=torch.bool, device=env.device)
        self.time_left = torch.zeros(n, device=env.device)
        self.reset(torch.arange(n, device=env.device))

    def _u(self, n: int, lo: float, hi: float) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(n, device=self.env.device, generator=self.env.generator)

    def _resample(self, env_ids: torch.Tensor) -> None:
        r, n = self.ranges, len(env_ids)
        lin, ang = self.lin_level, self.ang_level
        # v_x, v_y, w_z, the stand draw and the resampling time in one draw of (5, n): the same
        # numbers, in the same order, as five draws of n; each row scaled as lo + (hi - lo) * u
        bounds = (
            (lin * r.lin_vel_x[0], lin * r.lin_vel_x[1]),
            (lin * r.lin_vel_y[0], lin * r.lin_vel_y[1]),
            (ang * r.ang_vel_z[0], ang * r.ang_vel_z[1]),
            (0.0, 1.0),
            r.resampling_time_s,
        )
        lo = torch.tensor([b[0] for b in bounds], device=self.env.device)[:, None]
        width = torch.tensor([b[1] - b[0] for b in bounds], device=self.env.device)[:, None]
        u = torch.rand((5, n), device=self.env.device, generator=self.env.generator).mul_(width).add_(lo)
        cmd = u[0:3].T
        standing = u[3] < r.standing_fraction
        cmd[standing] = 0.0
        if r.lin_vel_deadband > 0.0:
            cmd[:, :2] *= (torch.linalg.vector_norm(cmd[:, :2], dim=1) >= r.lin_vel_deadband).unsqueeze(1)
        self.command[env_ids] = cmd
        self.is_standing[env_ids] = standing
        self.time_left[env_ids] = u[4]

    def update(self, dt: float) -> None:
        """Advance timers by ``dt`` s and resample the expired rows. The env calls it after the
        step's terminations and rewards, so these see the command the policy observed."""
        self._since_check_s += dt
        self.time_left -= dt
        due = (self.time_left <= 0.0).nonzero(as_tuple=False).flatten()
        self.resampled = bool(len(due))
        if self.resampled:
            self._resample(due)

    def _advance_curriculum(self, env_ids: torch.Tensor) -> None:
        """Fold the episodes that just ended (rows ``env_ids``; the reward manager's
        ``ended_sums`` of the same reset) into the curriculum and widen the ranges when due."""
        c, rm = self.curriculum, getattr(self.env, "reward_manager", None)
        ended = getattr(rm, "ended_sums", None)
        if ended is None or len(ended) != len(env_ids):
            return  # built before the reward manager: no episode has ended yet
        ran = self.env.episode_length[env_ids] > 0  # the env's first reset ends no episode
        num_ended = int(ran.sum())
        if num_ended == 0:
            return
        names = rm.names
        self._ended[0] += float(ended[ran, names.index(c.lin_term)].sum())
        self._ended[1] += float(ended[ran, names.index(c.ang_term)].sum())
        self._ended[2] += num_ended
        if self._since_check_s < c.interval_s:
            return
        per_s = self._ended[2] * self.env.max_episode_length_s
        if self._ended[0] / per_s > c.threshold * rm.terms[c.lin_term].weight:
            self.lin_level = min(1.0, self.lin_level + c.step_fraction)
        if self._ended[1] / per_s > c.threshold * rm.terms[c.ang_term].weight:
            self.ang_level = min(1.0, self.ang_level + c.step_fraction)
        self._since_check_s, self._ended = 0.0, [0.0, 0.0, 0]

    def reset(self, env_ids: torch.Tensor) -> None:
        """Draw new commands for ``env_ids`` (after the curriculum has seen their episodes)."""
        if self.curriculum is not None:
            self._advance_curriculum(env_ids)
        if len(env_ids):
            self._resample(env_ids)

    def metrics(self) -> dict[str, float]:
        """The curriculum's levels, logged when rows reset (none without a curriculum)."""
        if self.curriculum is None:
            return {}
        return {"Curriculum/command_lin_level": self.lin_level,
                "Curriculum/command_ang_level": self.ang_level}


@dataclass
class GaitPhaseSettings:
    """The gait clock of :class:`GaitPhaseCommand` (holosoma 0.0.3 ``LocomotionGait``).

    Attributes:
        period_s: mean gait period, s (one left and one right swing).
        frequency_width_hz: each row's gait frequency is drawn at reset from
            U(1/period_s - w, 1/period_s + w) Hz. holosoma's G1 ``gait_period_randomization_width``
            0.2 is this width: it is applied to the frequency, although named after the period.
        randomize_phase: draw each row's start phase uniformly at reset (else start at 0).
        velocity_command: name of the velocity command whose zero (stand) rows snap the phase.
        stand_threshold: a row stands when |cmd_xy| < threshold (m/s) and |cmd_wz| < threshold
            (rad/s) (holosoma: 0.01).
    """

    period_s: float = 1.0
    frequency_width_hz: float = 0.2
    randomize_phase: bool = True
    velocity_command: str = "twist"
    stand_threshold: float = 0.01


class GaitPhaseCommand:
    """A per-row gait clock: the phase of each foot, for the gait observation and ``feet_phase``.

    Follows holosoma's ``LocomotionGait`` (``managers/command/terms/locomotion.py``) and the MuJoCo
    Playground G1 joystick it credits. The clock ``phase`` (cycles, [0, 1)) advances by
    ``step_dt * frequency`` per env step and wraps at 1. Each foot's phase angle is
    ``foot_phase = 2*pi*(phase + offset_f) - pi`` wrapped to [-pi, pi), with offsets (0, 0.5):
    left and right are half a cycle apart. In holosoma's height profile
    (:func:`unilab.envs.mdp.rewards.expected_foot_height`) a foot touches down at +-pi and peaks
    at 0.

    Standing: rows whose velocity command is (about) zero report ``foot_phase = pi`` for both
    feet (holosoma ``stand_phase_value``), so the observation says "stand" and the reward's target
    height is 0 for both feet. The clock itself keeps running underneath and the feet resume
    from it when the row is commanded to move again.

    In the env step the clock advances with the physics (:meth:`advance`, before the rewards,
    so ``feet_phase`` compares the feet with the schedule of the same time), and the stand state
    follows the velocity command the policy observed: :meth:`advance` reads it before the
    velocity command is resampled, :meth:`update` after (for the next observation).

    Differences from holosoma: its phase is ``episode_length * 2*pi*dt*f + offset``, and it
    redraws f whenever the velocity command is redrawn, so the phase jumps then; here f is drawn
    at reset only and the phase advances continuously.

    Attributes:
        command: (N, 4) float32 the observed features, sin(foot_phase) (left, right) then
            cos(foot_phase) (left, right) (holosoma ``sin_phase``, ``cos_phase``); updated in
            place (clone to keep a snapshot).
        phase: (N,) float32 clock, cycles in [0, 1).
        frequency: (N,) float32 gait frequency, Hz (1 / period).
        foot_phase: (N, 2) float32 phase angle of the left and right foot, rad in [-pi, pi];
            pi for both feet on standing rows.
        is_standing: (N,) bool rows whose velocity command is a stand command.
    """

    FOOT_OFFSETS = (0.0, 0.5)  # cycles: left, right

    def __init__(self, env, settings: GaitPhaseSettings) -> None:
        f0 = 1.0 / settings.period_s
        if not 0.0 <= settings.frequency_width_hz < f0:
            raise ValueError(
                f"gait frequency width must be in [0, 1/period_s = {f0:g} Hz), "
                f"got {settings.frequency_width_hz:g} Hz"
            )
        self.env = env
        self.settings = settings
        n = env.num_envs
        self._offsets = torch.tensor(self.FOOT_OFFSETS, device=env.device)
        self.phase = torch.zeros(n, device=env.device)
        self.frequency = torch.full((n,), f0, device=env.device)
        self.foot_phase = torch.zeros(n, 2, device=env.device)
        self.is_standing = torch.zeros(n, dtype=torch.bool, device=env.device)
        self.command = torch.zeros(n, 4, device=env.device)
        self.reset(torch.arange(n, device=env.device))

    def _u(self, n: int, lo: float, hi: float) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(n, device=self.env.device, generator=self.env.generator)

    def _standing(self) -> torch.Tensor:
        """(N,) bool rows whose velocity command is a stand command now."""
        s = self.settings
        # While the env builds its commands (this one's first reset), env.commands does not exist
        # yet: no row stands until the env's reset, which resets the commands in order.
        commands = getattr(self.env, "commands", None)
        if commands is None:
            return torch.zeros_like(self.is_standing)
        cmd = commands[s.velocity_command].command
        return (torch.linalg.vector_norm(cmd[:, :2], dim=1) < s.stand_threshold) & (
            cmd[:, 2].abs() < s.stand_threshold
        )

    def _refresh(self, standing: torch.Tensor | None = None) -> None:
        """Recompute ``is_standing`` (or take ``standing``), ``foot_phase`` and ``command`` from
        the clock and the velocity command (all rows); ``command`` is written in place."""
        self.is_standing = self._standing() if standing is None else standing
        cycles = torch.remainder(self.phase[:, None] + self._offsets, 1.0)  # (N, 2)
        angle = cycles.mul_(2.0 * math.pi).sub_(math.pi)  # 2 pi cycles - pi, in place
        self.foot_phase = angle.masked_fill_(self.is_standing[:, None], math.pi)
        # one write of the whole row (a strided ``out=`` slice per function costs 5x more)
        torch.cat((torch.sin(self.foot_phase), torch.cos(self.foot_phase)), dim=1, out=self.command)

    def advance(self, dt: float) -> None:
        """Advance every row's clock by ``dt`` s (``dt * frequency`` cycles), wrapping at 1."""
        self.phase = torch.remainder(self.phase + dt * self.frequency, 1.0)
        self._refresh()

    def update(self, dt: float) -> None:
        """Recompute the stand state and the features from the velocity command as it is now
        (after its resampling in this step); the clock does not move (``dt`` unused), so when no
        row changed between stand and move nothing changes (nor when the velocity command says
        it drew nothing in this step, ``resampled`` False; :meth:`advance` read it already)."""
        twist = self.env.commands[self.settings.velocity_command]
        if not getattr(twist, "resampled", True):
            return
        standing = self._standing()
        if not torch.equal(standing, self.is_standing):
            self._refresh(standing)

    def reset(self, env_ids: torch.Tensor) -> None:
        """Draw a start phase and a frequency for ``env_ids`` (after their velocity command)."""
        if len(env_ids):
            s, n = self.settings, len(env_ids)
            f0 = 1.0 / s.period_s
            lo, hi = f0 - s.frequency_width_hz, f0 + s.frequency_width_hz
            if s.randomize_phase:  # phase and frequency in one draw of (2, n), as two draws of n
                u = torch.rand((2, n), device=self.env.device, generator=self.env.generator)
                self.phase[env_ids] = u[0]  # U(0, 1): 0 + (1 - 0) * u is u
                self.frequency[env_ids] = u[1].mul_(hi - lo).add_(lo)
            else:
                self.phase[env_ids] = 0.0
                self.frequency[env_ids] = self._u(n, lo, hi)
        self._refresh()
