"""The managers of a manager-based RL env: actions, observations, rewards, terminations, commands
and events. Each one turns a dict of small term functions into one batched tensor per step.

Term functions take the env first and return one tensor with a leading ``(num_envs,)`` dimension.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal

import torch

from unilab.envs.mirror import MirrorRule

if TYPE_CHECKING:
    from unilab.envs.manager_based_rl_env import ManagerBasedRlEnv


# ============================================================================ term configs
def row_subset(func):
    """Mark an observation term that also computes a subset of rows: ``func(env, env_ids=ids,
    **params)`` with ``ids`` (k,) int64 returns the (k, d) rows ``func(env, **params)[ids]`` would,
    bit for bit, at the cost of k rows. The observation manager then evaluates it on the reset rows
    alone when it computes their fresh observations (:meth:`ObservationManager.compute` with
    ``env_ids``); unmarked terms run on every row and are then indexed. Worth it for terms whose
    cost grows with the rows (per-body frame changes); a term that reads per-step shared values
    of every row should stay unmarked."""
    func.row_subset = True
    return func


@dataclass
class ObsTerm:
    """An observation term: ``func(env, **params) -> (N, d)``, with optional uniform noise ±noise
    (a term marked :func:`row_subset` also takes ``env_ids``).

    ``mirror`` says how the term maps under the left/right mirror (:mod:`unilab.envs.mirror`);
    None: it cannot be mirrored, and asking the env for its mirror (``env.mirror``) raises.
    """

    func: Callable[..., torch.Tensor]
    noise: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    mirror: MirrorRule | None = None


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
        self._ctrl_cols = _as_slice(self.actuator_ids)  # a slice when contiguous (the G1: 0..28)
        if not isinstance(self._ctrl_cols, slice):
            self._ctrl_cols = self.actuator_ids
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
        torch.clamp(action, self.low, self.high, out=self.action)
        self.ctrl[:, self._ctrl_cols] = self.offset + self.scale * self.action
        return self.ctrl

    def reset(self, env_ids: torch.Tensor) -> None:
        self.action[env_ids] = 0.0
        self.prev_action[env_ids] = 0.0


# ============================================================================ observations
class ObservationManager:
    """Concatenates each group's terms into one (N, d) float32 tensor per group.

    Non-finite values (a diverged row, before the NaN-guard termination resets it) become 0. Per
    :meth:`compute` call, a term function with the same parameters is evaluated once even if
    several groups use it (the critic reuses the actor's terms), and each group draws its noise in
    one call from the env's generator: ``value + U(-1, 1) * noise`` per dimension, zero for
    noise-free terms (mjlab ``UniformNoiseCfg``).

    Attributes:
        dims: group -> observation width.
        layout: group -> list of (term name, start, stop) column ranges.
        noise_enabled: add the terms' noise (the env sets it from ``EnvCfg.noise``).
        noise_rows: (N,) bool rows that get the noise, or None (every row); the draws are made
            for every row either way (evaluation runs noisy and noise-free cases in one env).
    """

    def __init__(self, env: "ManagerBasedRlEnv", groups: dict[str, dict[str, ObsTerm]]) -> None:
        self.env = env
        self.groups = groups
        self.noise_enabled = True
        self.noise_rows: torch.Tensor | None = None
        self.dims: dict[str, int] = {}
        self.layout: dict[str, list[tuple[str, int, int]]] = {}
        self._noise: dict[str, tuple[slice | torch.Tensor, torch.Tensor] | None] = {}
        cache: dict = {}
        for g, terms in groups.items():
            start, scales, layout = 0, [], []
            for name, term in terms.items():
                width = int(self._eval(term, cache).shape[1])
                layout.append((name, start, start + width))
                scales.append(torch.full((width,), float(term.noise or 0.0)))
                start += width
            self.dims[g] = start
            self.layout[g] = layout
            scale = torch.cat(scales) if scales else torch.zeros(0)
            cols = (scale != 0).nonzero(as_tuple=False).flatten()
            if len(cols) == 0:
                self._noise[g] = None
            else:  # noise only the noisy columns: one draw of (N, len(cols)) per compute
                sel = _as_slice(cols)
                # 2 * scale: the draw u becomes (u - 0.5) * (2 scale), see compute
                self._noise[g] = (sel if isinstance(sel, slice) else sel.to(env.device),
                                  (2.0 * scale[cols]).to(env.device))
        # group -> [(term, cache key or None)], the keys computed once
        self._terms = {g: [(t, self._key(t)) for t in terms.values()] for g, terms in groups.items()}

    @staticmethod
    def _key(term: ObsTerm):
        """The cache key of a term (function and parameters), None for unhashable params."""
        try:
            key = (term.func, tuple(sorted(term.params.items())))
            hash(key)
        except TypeError:  # unhashable params (a list or dict): evaluated per group
            return None
        return key

    def _eval(self, term: ObsTerm, cache: dict, key=False, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        """The term's value on every row, or, with ``env_ids``, on those rows (k, d): a
        :func:`row_subset` term computes only them, another computes every row and is indexed."""
        if key is False:
            key = self._key(term)
        value = None if key is None else cache.get(key)
        if value is None:
            if env_ids is not None and getattr(term.func, "row_subset", False):
                value = term.func(self.env, env_ids=env_ids, **term.params)
            else:
                value = term.func(self.env, **term.params)
                if env_ids is not None:
                    value = value.index_select(0, env_ids)
            if key is not None:
                cache[key] = value
        return value

    def compute(self, env_ids: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """group -> (N, dims[group]) float32, each a new tensor; with ``env_ids`` (k,) int64 only
        those rows, (k, dims[group]): :func:`row_subset` terms run on those rows alone, the others
        on every row, then indexed; noise is drawn for k rows."""
        cache: dict = {}
        out = {}
        for g, terms in self._terms.items():
            obs = torch.cat([self._eval(t, cache, key, env_ids) for t, key in terms], dim=1)  # a new tensor
            obs.nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0)  # a diverged row must not poison replay
            noise = self._noise[g]
            if self.noise_enabled and noise is not None:
                cols, scale2 = noise
                u = torch.rand((obs.shape[0], len(scale2)), device=obs.device,
                               generator=self.env.generator)
                # U(-1, 1) * scale in one op fewer than (2u - 1) * scale, and equal to it bit for
                # bit: torch's CPU float32 draws are multiples of 2^-24 in [0, 1), so u - 0.5 is
                # exact, and (u - 0.5) * (2 scale) rounds the same real product once
                u.sub_(0.5).mul_(scale2)
                if self.noise_rows is not None:
                    rows = self.noise_rows if env_ids is None else self.noise_rows[env_ids]
                    u.mul_(rows[:, None])
                if isinstance(cols, slice):
                    obs[:, cols] += u
                else:
                    obs[:, cols] = obs[:, cols] + u
            out[g] = obs
        return out


def _as_slice(index: torch.Tensor) -> slice | torch.Tensor:
    """``slice(a, a + n)`` when ``index`` is ``a, a+1, ..., a+n-1``, else ``index``."""
    n = len(index)
    if n and torch.equal(index.cpu(), torch.arange(int(index[0]), int(index[0]) + n)):
        return slice(int(index[0]), int(index[0]) + n)
    return index


# ============================================================================ rewards
@dataclass
class PenaltyCurriculum:
    """Penalty scale that grows with the episodes' length: the scheme of holosoma's G1 locomotion
    (holosoma 0.0.3 ``config_values/loco/g1/``: penalties start at scale 0.1 and rise to 1.0 by
    mean episode length, up above 750 steps, down below 150). Each time episodes end, their mean
    length L (s) moves the scale by ``step``: up when L > ``up_length_s``, down when
    L < ``down_length_s``, clamped to [``min_scale``, ``max_scale``]. Early on, a robot that falls is not also punished for the way
    it moves, so surviving is learned first.

    Attributes:
        initial, min_scale, max_scale: scale at the start and its bounds (dimensionless).
        start: the scale a new env starts at instead of ``initial`` (a resumed run starts where its
            checkpoint's envs were), in [``min_scale``, ``max_scale``]; None: ``initial``. The
            :attr:`late` factor still counts from ``initial``.
        up_length_s, down_length_s: mean ended-episode length thresholds, s.
        step: change of the scale per reset with episodes past a threshold.
        exempt: names of negative-weight reward terms that always count at full weight (e.g. a
            roll/pitch-rate penalty that stands in for what a coupled tracking kernel, itself never
            scaled, would charge from the first step).
        late: names of negative-weight reward terms that start at zero weight and reach full
            weight with the others: factor (scale - initial) / (max_scale - initial), clamped to
            [0, 1] (see :meth:`late_factor`). For a penalty that charges the stumbling that comes
            before a gait (a roll/pitch rate), so that it shapes the gait once one exists.

    Raises:
        ValueError: ``start`` outside [``min_scale``, ``max_scale``].
    """

    initial: float = 0.1
    min_scale: float = 0.1
    max_scale: float = 1.0
    up_length_s: float = 15.0
    down_length_s: float = 3.0
    step: float = 0.01
    exempt: tuple[str, ...] = ()
    late: tuple[str, ...] = ()
    start: float | None = None

    def __post_init__(self) -> None:
        if self.start is not None and not self.min_scale <= self.start <= self.max_scale:
            raise ValueError(
                f"penalty curriculum start={self.start:g}: expected a scale in [min_scale, max_scale] = "
                f"[{self.min_scale:g}, {self.max_scale:g}]"
            )

    @property
    def start_scale(self) -> float:
        """The scale a new env starts at: :attr:`start`, or :attr:`initial` when it is None."""
        return self.initial if self.start is None else self.start

    def late_factor(self, scale: float) -> float:
        """The factor of the :attr:`late` terms at penalty scale ``scale``: 0 at :attr:`initial`
        (and below), 1 at :attr:`max_scale`, linear between."""
        span = self.max_scale - self.initial
        if span <= 0.0:
            return 1.0 if scale >= self.max_scale else 0.0
        return min(1.0, max(0.0, (scale - self.initial) / span))

    def next_scale(self, scale: float, mean_length_s: float) -> float:
        """The scale after episodes of mean length ``mean_length_s`` (s) ended."""
        if mean_length_s > self.up_length_s:
            scale += self.step
        elif mean_length_s < self.down_length_s:
            scale -= self.step
        return min(self.max_scale, max(self.min_scale, scale))


class RewardManager:
    """Sums ``weight * term * step_dt`` and keeps each term's episode sum for logging.

    Terms with weight 0 are not evaluated. A non-finite term value counts as 0. With a
    :class:`PenaltyCurriculum`, every negative-weight term is further multiplied by
    :attr:`penalty_scale`, which the curriculum moves each time episodes end (logged as
    ``Curriculum/penalty_scale``) from :attr:`PenaltyCurriculum.start_scale`, except the terms the
    curriculum names in ``exempt`` (factor 1) and in ``late`` (factor
    :meth:`PenaltyCurriculum.late_factor`, 0 at ``initial``).

    Raises:
        ValueError: ``curriculum.exempt`` or ``curriculum.late`` names a term that is not an
            evaluated negative-weight term, or one term is named in both.

    Attributes:
        names: the evaluated terms, in column order of ``episode_sums``.
        episode_sums: (N, T) float32 weighted sums of the running episodes.
        last: (N, T) float32 the last :meth:`compute`'s weighted values (``weight * term * step_dt``,
            penalty scale included), before any reset; zeros before the first.
        last_scale: (T,) float32 the factors ``last`` was scaled by (:meth:`last_values` divides
            them out).
        ended_sums: (k, T) float32 the weighted episode sums of the k rows of the last
            :meth:`reset`, before they were zeroed (a command curriculum reads them); None before
            the first reset.
    """

    def __init__(
        self,
        env: "ManagerBasedRlEnv",
        terms: dict[str, RewardTerm],
        curriculum: "PenaltyCurriculum | None" = None,
    ) -> None:
        self.env = env
        self.terms = {k: t for k, t in terms.items() if t.weight != 0.0}
        self.names = list(self.terms)
        self._base_scale = torch.tensor(
            [t.weight * env.step_dt for t in self.terms.values()], device=env.device
        )
        exempt = curriculum.exempt if curriculum is not None else ()
        late = curriculum.late if curriculum is not None else ()
        penalties = [k for k, t in self.terms.items() if t.weight < 0]
        for key, names in (("exempt", exempt), ("late", late)):
            unknown = [k for k in names if k not in penalties]
            if unknown:
                raise ValueError(
                    f"penalty curriculum {key}={list(names)}: {unknown} not among the penalties "
                    f"(negative-weight terms) {penalties}"
                )
        both = [k for k in late if k in exempt]
        if both:
            raise ValueError(f"penalty curriculum: {both} both exempt and late; expected each in one at most")
        self._negative = torch.tensor(
            [t.weight < 0 and k not in exempt and k not in late for k, t in self.terms.items()],
            dtype=torch.bool, device=env.device,
        )
        self._late = torch.tensor([k in late for k in self.terms], dtype=torch.bool, device=env.device)
        self.curriculum = curriculum
        self.penalty_scale = curriculum.start_scale if curriculum is not None else 1.0
        self._scale = self._effective_scale()
        self.episode_sums = torch.zeros(env.num_envs, len(self.terms), device=env.device)
        self.last = torch.zeros(env.num_envs, len(self.terms), device=env.device)
        self.last_scale = self._scale
        self.ended_sums: torch.Tensor | None = None

    def _effective_scale(self) -> torch.Tensor:
        """(T,) weight * step_dt, negative-weight terms (but the exempt) times :attr:`penalty_scale`,
        the late ones times :meth:`PenaltyCurriculum.late_factor` instead."""
        factor = torch.where(self._negative, self.penalty_scale, 1.0)
        if self.curriculum is not None and self.curriculum.late:
            factor = torch.where(self._late, self.curriculum.late_factor(self.penalty_scale), factor)
        return self._base_scale * factor

    def compute(self) -> torch.Tensor:
        """(N,) float32 reward of this env step."""
        if not self.terms:
            return torch.zeros(self.env.num_envs, device=self.env.device)
        values = torch.stack(
            [t.func(self.env, **t.params) for t in self.terms.values()], dim=1
        )  # (N, T)
        values.mul_(self._scale).nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0)
        self.episode_sums.add_(values)
        self.last, self.last_scale = values, self._scale
        return values.sum(dim=1)

    def last_values(self) -> torch.Tensor:
        """(N, T) float32 the terms' own values at the last :meth:`compute` (``last / last_scale``,
        e.g. a tracking kernel in [0, 1]); NaN in a column whose factor was 0 (a penalty at penalty
        scale 0), whose values that step did not keep; a non-finite term value reads 0."""
        known = self.last_scale != 0
        return torch.where(known, self.last / torch.where(known, self.last_scale, 1.0), float("nan"))

    def reset(self, env_ids: torch.Tensor) -> dict[str, float]:
        """``Episode_Reward/<term>``: mean episode sum of ``env_ids`` per second of the maximum
        episode length (mjlab/IsaacLab convention); then zero those rows."""
        if not self.terms:
            return {}
        self.ended_sums = self.episode_sums[env_ids]
        means = (self.ended_sums.mean(dim=0) / self.env.max_episode_length_s).tolist()
        self.episode_sums[env_ids] = 0.0
        log = {f"Episode_Reward/{n}": v for n, v in zip(self.names, means)}
        if self.curriculum is not None:
            length_s = float(self.env.episode_length[env_ids].float().mean()) * self.env.step_dt
            self.penalty_scale = self.curriculum.next_scale(self.penalty_scale, length_s)
            self._scale = self._effective_scale()
            log["Curriculum/penalty_scale"] = self.penalty_scale
        return log


# ============================================================================ terminations
class TerminationManager:
    """Evaluates termination terms: time-out terms truncate, the others terminate.

    Attributes:
        last: (N, T) bool which terms fired at the last :meth:`compute`.
        terminated: (N,) bool rows that terminated (not only timed out) at the last compute;
            a command's reset reads it (adaptive sampling counts failures).
    """

    def __init__(self, env: "ManagerBasedRlEnv", terms: dict[str, TerminationTerm]) -> None:
        self.env = env
        self.terms = terms
        self.names = list(terms)
        flags = [t.time_out for t in terms.values()]
        self._term_idx = [i for i, f in enumerate(flags) if not f]
        self._time_out_idx = [i for i, f in enumerate(flags) if f]
        self._calls = [(t.func, t.params) for t in terms.values()]
        self.last = torch.zeros(env.num_envs, len(terms), dtype=torch.bool, device=env.device)
        self.terminated = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)

    def _any(self, outputs: list[torch.Tensor], idx: list[int]) -> torch.Tensor:
        """(N,) bool OR of ``outputs[i]`` for i in ``idx``, a new tensor (all False if none):
        one op per term beyond the first instead of a column slice and a reduction."""
        if not idx:
            return torch.zeros(self.env.num_envs, dtype=torch.bool, device=self.env.device)
        if len(idx) == 1:
            return outputs[idx[0]].clone()  # never an alias of a term's (possibly shared) output
        out = outputs[idx[0]] | outputs[idx[1]]
        for i in idx[2:]:
            out |= outputs[i]
        return out

    def compute(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(terminated, truncated), each (N,) bool. A row both terminated and timed out is terminated."""
        n, dev = self.env.num_envs, self.env.device
        if not self.terms:
            z = torch.zeros(n, dtype=torch.bool, device=dev)
            return z, z.clone()
        env = self.env
        outputs = [func(env, **params) for func, params in self._calls]
        self.last = torch.stack(outputs, dim=1)
        terminated = self._any(outputs, self._term_idx)
        if len(self._time_out_idx) == 1:  # the usual single time-out: no copy before the mask
            truncated = outputs[self._time_out_idx[0]] & ~terminated
        else:
            truncated = self._any(outputs, self._time_out_idx) & ~terminated
        self.terminated = terminated
        return terminated, truncated

    def reset(self, env_ids: torch.Tensor) -> dict[str, float]:
        """``Episode_Termination/<term>``: fraction of the ending episodes that each term ended."""
        if not self.terms:
            return {}
        fractions = self.last[env_ids].float().mean(dim=0).tolist()
        return {f"Episode_Termination/{n}": v for n, v in zip(self.names, fractions)}


# ============================================================================ events
class EventManager:
    """Runs event terms at startup, on reset rows, and at random intervals per row.

    Interval terms keep a per-row timer, drawn from ``U(interval_range_s)`` s when the manager is
    built, when the term fires and when the row resets (:meth:`reset`), so a row's first firing
    comes at least ``interval_range_s[0]`` s after its reset (mjlab ``EventManager.reset``, fixed
    in mjlab PR #1140; IsaacLab PR #1750).

    Attributes:
        time_left: interval term name -> (N,) float32 s until the term fires for each row.
    """

    def __init__(self, env: "ManagerBasedRlEnv", terms: dict[str, EventTerm]) -> None:
        self.env = env
        self.terms = terms
        reset_terms = [t for t in terms.values() if t.mode == "reset"]
        # the env skips its own keyframe reset when the first reset event does a full one
        self.first_reset_resets_backend = bool(
            reset_terms and getattr(reset_terms[0].func, "resets_backend", False)
        )
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

    def reset(self, env_ids: torch.Tensor) -> None:
        """Re-arm the interval timers of rows ``env_ids`` (k,) int64: a new episode starts a new
        interval rather than inheriting the old episode's remaining time."""
        if len(env_ids):
            for name in self.time_left:
                self._draw_interval(name, env_ids)

    def step(self, skip: torch.Tensor | None = None) -> None:
        """Advance interval timers by one env step and fire the due terms.

        Args:
            skip: optional (N,) bool rows that must not fire now (rows that end this step: their
                state is about to be reset and :meth:`reset` re-arms their timers).
        """
        for name, left in self.time_left.items():
            left -= self.env.step_dt
            due = left <= 0.0
            if skip is not None:
                due &= ~skip
            due = due.nonzero(as_tuple=False).flatten()
            if len(due):
                self.terms[name].func(self.env, due, **self.terms[name].params)
                self._draw_interval(name, due)
