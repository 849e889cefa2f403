"""The managers of a manager-based RL env: actions, observations, rewards, terminations, commands
and events. Each one turns a dict of small term functions into one batched tensor per step.

Term functions take the env first and return one tensor with a leading ``(num_envs,)`` dimension.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal

import torch

if TYPE_CHECKING:
    from unilab.envs.manager_based_rl_env import ManagerBasedRlEnv


# ============================================================================ term configs
@dataclass
class ObsTerm:
    """An observation term: ``func(env, **params) -> (N, d)``, with optional uniform noise ±noise."""

    func: Callable[..., torch.Tensor]
    noise: float | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class RewardTerm:
    """A reward term: ``func(env, **params) -> (N,)``; the env adds ``weight * value * step_dt``."""

    func: Callable[..., torch.Tensor]
    weight: float
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class TerminationTerm:
    """``func(env, **params) -> (N,) bool``. ``time_out`` terms truncate; the others terminate."""

    func: Callable[..., torch.Tensor]
    time_out: bool = False
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class EventTerm:
    """``func(env, env_ids, **params)`` run on ``reset`` rows or every ``interval_range_s`` s."""

    func: Callable[..., None]
    mode: Literal["startup", "reset", "interval"]
    interval_range_s: tuple[float, float] | None = None
    params: dict[str, Any] = field(default_factory=dict)


# ============================================================================ actions
class JointPositionAction:
    """Actions are joint-position offsets: target = default + scale * action (rad).

    Args:
        env: the env (for the robot's metadata and device).
        scale: (J,) float32 rad per action unit, e.g. 0.25·effort/kp per joint.

    Attributes:
        low, high: (J,) float32 action bounds that keep targets inside the hard joint limits:
            ±max(|lower - default|, |upper - default|) / scale (FastSAC, holosoma
            ``fast_sac_agent.py``).
    """

    def __init__(self, env: "ManagerBasedRlEnv", scale: torch.Tensor) -> None:
        robot = env.robot
        self.scale = scale.to(env.device)
        self.offset = robot.default_joint_pos
        limits = robot.meta.joint_limits.to(env.device)
        reach = torch.maximum((limits[:, 0] - self.offset).abs(), (limits[:, 1] - self.offset).abs())
        self.high = reach / self.scale
        self.low = -self.high
        self.actuator_ids = robot.meta.actuator_ids.to(env.device)
        n, j = env.num_envs, len(scale)
        self.action = torch.zeros(n, j, device=env.device)
        self.prev_action = torch.zeros(n, j, device=env.device)
        self.ctrl = torch.zeros(n, env.backend.nu, device=env.device)

    @property
    def dim(self) -> int:
        return self.scale.numel()

    def process(self, action: torch.Tensor) -> torch.Tensor:
        """Store the action and return the (N, nu) ctrl of joint targets, rad."""
        self.prev_action.copy_(self.action)
        self.action.copy_(torch.clamp(action, self.low, self.high))
        self.ctrl[:, self.actuator_ids] = self.offset + self.scale * self.action
        return self.ctrl

    def reset(self, env_ids: torch.Tensor) -> None:
        self.action[env_ids] = 0.0
        self.prev_action[env_ids] = 0.0


# ============================================================================ observations
class ObservationManager:
    """Concatenates each group's terms into one (N, d) float32 tensor per group."""

    def __init__(self, env: "ManagerBasedRlEnv", groups: dict[str, dict[str, ObsTerm]]) -> None:
        self.env = env
        self.groups = groups
        self.noise_enabled = True
        self.dims = {g: int(self._group(g, noise=False).shape[1]) for g in groups}

    def _group(self, group: str, noise: bool) -> torch.Tensor:
        parts = []
        for term in self.groups[group].values():
            value = term.func(self.env, **term.params)
            if noise and term.noise:
                value = value + (torch.rand_like(value) * 2.0 - 1.0) * term.noise
            parts.append(value)
        return torch.cat(parts, dim=1)

    def compute(self) -> dict[str, torch.Tensor]:
        """group -> (N, dims[group]) float32."""
        return {g: self._group(g, noise=self.noise_enabled) for g in self.groups}


# ============================================================================ rewards
class RewardManager:
    """Sums ``weight * term * step_dt`` and keeps each term's episode sum for logging."""

    def __init__(self, env: "ManagerBasedRlEnv", terms: dict[str, RewardTerm]) -> None:
        self.env = env
        self.terms = {k: t for k, t in terms.items() if t.weight != 0.0}
        self.episode_sums = {
            k: torch.zeros(env.num_envs, device=env.device) for k in self.terms
        }

    def compute(self) -> torch.Tensor:
        """(N,) float32 reward of this env step."""
        total = torch.zeros(self.env.num_envs, device=self.env.device)
        for name, term in self.terms.items():
            value = term.func(self.env, **term.params) * (term.weight * self.env.step_dt)
            value = torch.nan_to_num(value, nan=0.0, posinf=0.0, neginf=0.0)
            self.episode_sums[name] += value
            total += value
        return total

    def reset(self, env_ids: torch.Tensor) -> dict[str, float]:
        """Log mean episode sums per second of max episode length, then zero those rows."""
        log = {}
        for name, sums in self.episode_sums.items():
            log[f"Episode_Reward/{name}"] = float(sums[env_ids].mean()) / self.env.max_episode_length_s
            sums[env_ids] = 0.0
        return log


# ============================================================================ terminations
class TerminationManager:
    """Evaluates termination terms: time-out terms truncate, the others terminate."""

    def __init__(self, env: "ManagerBasedRlEnv", terms: dict[str, TerminationTerm]) -> None:
        self.env = env
        self.terms = terms
        self.last = {k: torch.zeros(env.num_envs, dtype=torch.bool, device=env.device) for k in terms}

    def compute(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(terminated, truncated), each (N,) bool. A row both terminated and timed out is terminated."""
        n, dev = self.env.num_envs, self.env.device
        terminated = torch.zeros(n, dtype=torch.bool, device=dev)
        truncated = torch.zeros(n, dtype=torch.bool, device=dev)
        for name, term in self.terms.items():
            value = term.func(self.env, **term.params).to(torch.bool)
            self.last[name] = value
            if term.time_out:
                truncated |= value
            else:
                terminated |= value
        return terminated, truncated & ~terminated

    def reset(self, env_ids: torch.Tensor) -> dict[str, float]:
        """Fraction of the ending episodes that each term ended."""
        return {
            f"Episode_Termination/{name}": float(value[env_ids].float().mean())
            for name, value in self.last.items()
        }


# ============================================================================ events
class EventManager:
    """Runs event terms at startup, on reset rows, and at random intervals per row."""

    def __init__(self, env: "ManagerBasedRlEnv", terms: dict[str, EventTerm]) -> None:
        self.env = env
        self.terms = terms
        self.time_left = {
            name: torch.zeros(env.num_envs, device=env.device)
            for name, t in terms.items()
            if t.mode == "interval"
        }
        for name in self.time_left:
            self._draw_interval(name, torch.arange(env.num_envs, device=env.device))

    def _draw_interval(self, name: str, env_ids: torch.Tensor) -> None:
        lo, hi = self.terms[name].interval_range_s
        u = torch.rand(len(env_ids), device=self.env.device, generator=self.env.generator)
        self.time_left[name][env_ids] = lo + (hi - lo) * u

    def apply(self, mode: str, env_ids: torch.Tensor) -> None:
        """Run every term of ``mode`` ("startup" or "reset") on ``env_ids``."""
        for term in self.terms.values():
            if term.mode == mode and len(env_ids):
                term.func(self.env, env_ids, **term.params)

    def step(self) -> None:
        """Advance interval timers by one env step and fire the due terms."""
        for name, left in self.time_left.items():
            left -= self.env.step_dt
            due = (left <= 0.0).nonzero(as_tuple=False).flatten()
            if len(due):
                self.terms[name].func(self.env, due, **self.terms[name].params)
                self._draw_interval(name, due)
