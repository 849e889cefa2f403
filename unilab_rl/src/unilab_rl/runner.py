"""Synchronous off-policy training loop: collect one env step, store it, update, log."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from unilab_rl.vecenv import VecEnv

if TYPE_CHECKING:
    from unilab_rl.algorithms.sac.agent import SAC


@dataclass
class LearnSummary:
    """What :meth:`OffPolicyRunner.learn` did.

    Episode statistics are means over the last ``episode_window`` finished episodes; ``None`` when
    no episode finished.
    """

    iterations: int
    """Iterations completed in this call."""
    final_iteration: int
    """The learner's iteration counter at the end (``start_iteration + iterations``)."""
    env_steps: int
    """Env steps (transitions) collected in this call: ``iterations * num_envs``."""
    wall_time_s: float
    """Seconds spent in the loop."""
    fps: float
    """``env_steps / wall_time_s``."""
    final_mean_reward: float | None
    """``Train/mean_reward`` at the end: mean undiscounted episode return."""
    best_mean_reward: float | None
    """Highest ``Train/mean_reward`` seen during the call."""
    final_mean_episode_length: float | None
    """``Train/mean_episode_length`` at the end, in env steps."""
    runtime: str = "sync"
    """``"sync"`` or ``"async"``."""
    updates: int = 0
    """Critic updates run in this call."""
    utd_ratio: float | None = None
    """Achieved update-to-data ratio: ``updates * batch_size / env_steps`` (None before any step)."""
    collection_time_s: float = 0.0
    """Seconds spent stepping envs (and acting); in async mode measured in the collector,
    overlapping learning."""
    learning_time_s: float = 0.0
    """Seconds spent in gradient updates (and, in async mode, copying blocks into the replay)."""
    learner_wait_time_s: float = 0.0
    """Async: seconds the learner waited for a full block (0 in sync mode)."""
    collector_wait_time_s: float = 0.0
    """Async: seconds the collector waited for a free block (backpressure; 0 in sync mode)."""
    transfer: dict[str, int] | None = None
    """Async: transfer counters (blocks, bytes, weight broadcasts and pulls); None in sync mode."""
    collector_start_time_s: float = 0.0
    """Async: seconds from starting the collector to its first block (spawn, imports, env build)."""
    policy_device: str | None = None
    """Async: where the collectors ran the exploration policy (``"cpu"`` or the learner's device,
    e.g. ``"cuda:0"``); None in sync mode (the learner acts itself)."""
    collector_phase_time_s: dict[str, float] | None = None
    """Async: ``collection_time_s`` split by phase (:data:`unilab_rl.async_runtime.COLLECTOR_PHASES`:
    pull, policy, physics, env, write; seconds, the mean over shards); None in sync mode."""


class OffPolicyRunner:
    """Runs an off-policy learner (:class:`~unilab_rl.algorithms.sac.SAC`) on a :class:`VecEnv`.

    One iteration is one env step of all envs plus the learner's gradient updates for it. The
    loop is synchronous (collection, then learning), in one process: the debugging and test mode.
    :class:`unilab_rl.async_runtime.AsyncOffPolicyRunner` overlaps the two.

    Args:
        env: the vector env; :meth:`learn` resets it on its first call.
        algo: the learner; any object with ``act``, ``random_actions``, ``store`` (called as
            ``store(obs, actions, rewards, terminated, final_obs, truncated=truncated)``),
            ``update``, ``cfg.learning_starts``, ``replay`` and an ``iteration`` counter
            (:class:`~unilab_rl.algorithms.sac.SAC`, :class:`~unilab_rl.algorithms.flashsac.FlashSAC`).
        log_fn: called as ``log_fn(iteration, metrics)`` when ``iteration`` (iterations completed,
            ``algo.iteration``) is a multiple of ``log_interval``.
        checkpoint_fn: called as ``checkpoint_fn(iteration)`` when ``iteration`` is a multiple of
            ``checkpoint_interval``, and once at the end of :meth:`learn` if that iteration was not
            just saved. It saves what it needs, e.g. ``algo.state_dict()``.
        log_interval: iterations between ``log_fn`` calls (>= 1).
        checkpoint_interval: iterations between checkpoints; 0 saves only at the end.
        episode_window: finished episodes averaged into ``Train/mean_reward`` and
            ``Train/mean_episode_length``; ``None`` (default): ``max(100, num_envs)``, so that with
            many envs the mean covers about one episode per env rather than the few env steps in
            which 100 episodes end (rsl_rl uses 100).
        seed: seed of the CPU generator of warm-up random actions; ``None`` draws one from
            torch's global RNG (reproducible under ``torch.manual_seed``). The async runner uses
            the same rule, so both runtimes take the same warm-up actions.

    Raises:
        ValueError: an interval or window out of range.
    """

    def __init__(
        self,
        env: VecEnv,
        algo: SAC,
        *,
        log_fn: Callable[[int, dict[str, float]], None] | None = None,
        checkpoint_fn: Callable[[int], None] | None = None,
        log_interval: int = 1,
        checkpoint_interval: int = 0,
        episode_window: int | None = None,
        seed: int | None = None,
    ) -> None:
        episode_window = loop_settings(log_interval, checkpoint_interval, episode_window, env.num_envs)
        self.env = env
        self.algo = algo
        self.log_fn = log_fn
        self.checkpoint_fn = checkpoint_fn
        self.log_interval = log_interval
        self.checkpoint_interval = checkpoint_interval
        self.episode_returns: deque[float] = deque(maxlen=episode_window)
        self.episode_lengths: deque[int] = deque(maxlen=episode_window)
        self.episode_log = EpisodeLogWindow(episode_window)
        self._obs: dict[str, torch.Tensor] | None = None
        self._current_return = torch.zeros(env.num_envs, device=env.device)
        self._current_length = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
        self.seed = draw_seed() if seed is None else seed
        self._action_generator = torch.Generator().manual_seed(self.seed)
        self.collector_exitcode: int | None = None
        """No collector process in sync mode: always None (the async runner sets it)."""
        self.cleanup_errors: list[str] = []

    def learn(
        self,
        num_iterations: int,
        start_iteration: int | None = None,
        on_iteration: Callable[[int, dict[str, float]], None] | None = None,
    ) -> LearnSummary:
        """Train for ``num_iterations`` iterations.

        Args:
            num_iterations: iterations to run (>= 0).
            start_iteration: value of the iteration counter at the start; ``None`` continues from
                ``algo.iteration`` (0 for a fresh learner, the saved value after a resume).
            on_iteration: called as ``on_iteration(iteration, metrics)`` after every iteration,
                with ``iteration`` = iterations completed so far; it may raise (e.g.
                ``KeyboardInterrupt`` or a stop request) to end training: the exception
                propagates, with ``algo.iteration`` already counting the finished iteration, so
                the caller can save a consistent checkpoint.

        Returns:
            :class:`LearnSummary`.

        Metrics (``dict[str, float]``) passed to ``log_fn`` and ``on_iteration``:
            ``Train/mean_reward``, ``Train/mean_episode_length`` (once an episode has finished),
            ``Loss/critic``, ``Critic/mean_q`` (once updates start), ``Loss/actor``,
            ``Loss/alpha``, ``Policy/alpha``, ``Policy/entropy`` (in iterations with an actor
            update), ``Perf/total_fps``, ``Perf/collection_time``, ``Perf/learning_time`` (s),
            and every ``extras["log"]`` entry of the env step, ``Episode*`` entries (e.g.
            ``Episode_Reward/<term>``) as means over the episode window (:class:`EpisodeLogWindow`).

        Raises:
            ValueError: ``num_iterations`` < 0.
            KeyError: the env's ``extras`` lacks ``"final_obs"``.
            FloatingPointError: a learner metric became NaN or infinite.
        """
        if num_iterations < 0:
            raise ValueError(f"num_iterations must be >= 0, got {num_iterations}")
        env, algo = self.env, self.algo
        if start_iteration is not None:
            algo.iteration = start_iteration
        first_iteration = algo.iteration
        learning_starts = algo.cfg.learning_starts
        if self._obs is None:
            self._obs = env.reset()
        best_mean_reward: float | None = None
        last_saved: int | None = None
        updates = 0
        collection_time = learning_time = 0.0
        t_start = time.perf_counter()

        for _ in range(num_iterations):
            # Collect: act in every env (uniformly at random while warming up), step, and store the
            # transition with the pre-reset observation as s' so time-outs bootstrap correctly.
            t0 = time.perf_counter()
            obs = self._obs
            if algo.iteration < learning_starts:
                actions = algo.random_actions(env.num_envs, self._action_generator)
            else:
                actions = algo.act(obs["actor"])
            next_obs, rewards, terminated, truncated, extras = env.step(actions)
            if "final_obs" not in extras:
                raise KeyError("env.step extras lack 'final_obs' (the pre-reset observation), required by VecEnv")
            algo.store(obs, actions, rewards, terminated, extras["final_obs"], truncated=truncated)
            self._obs = next_obs
            finished = self._track_episodes(rewards, terminated | truncated)
            env_log = self.episode_log.add(extras.get("log", {}), finished)
            t1 = time.perf_counter()

            # Learn: once the buffer holds the warm-up transitions, run the gradient updates.
            metrics: dict[str, float] = {}
            if len(algo.replay) >= learning_starts * env.num_envs:
                metrics |= algo.update()
                updates += algo.cfg.num_updates
                bad = [k for k, v in metrics.items() if not math.isfinite(v)]
                if bad:
                    raise FloatingPointError(f"non-finite learner metrics at iteration {algo.iteration}: {bad}")
            t2 = time.perf_counter()
            algo.iteration += 1

            # Log: episode statistics, env terms, timing.
            if self.episode_returns:
                metrics["Train/mean_reward"] = sum(self.episode_returns) / len(self.episode_returns)
                metrics["Train/mean_episode_length"] = sum(self.episode_lengths) / len(self.episode_lengths)
                if best_mean_reward is None or metrics["Train/mean_reward"] > best_mean_reward:
                    best_mean_reward = metrics["Train/mean_reward"]
            metrics |= self.episode_log.means()
            metrics |= env_log
            metrics["Perf/collection_time"] = t1 - t0
            metrics["Perf/learning_time"] = t2 - t1
            metrics["Perf/total_fps"] = env.num_envs / max(t2 - t0, 1e-9)
            collection_time += t1 - t0
            learning_time += t2 - t1
            done_steps = (algo.iteration - first_iteration) * env.num_envs
            metrics["Perf/utd_ratio"] = updates * algo.cfg.batch_size / max(done_steps, 1)
            if self.log_fn is not None and algo.iteration % self.log_interval == 0:
                self.log_fn(algo.iteration, metrics)
            if self.checkpoint_fn is not None and self.checkpoint_interval and algo.iteration % self.checkpoint_interval == 0:
                self.checkpoint_fn(algo.iteration)
                last_saved = algo.iteration
            if on_iteration is not None:
                on_iteration(algo.iteration, metrics)

        if self.checkpoint_fn is not None and num_iterations > 0 and last_saved != algo.iteration:
            self.checkpoint_fn(algo.iteration)  # final save, unless the last interval just saved it
        wall = time.perf_counter() - t_start
        steps = num_iterations * env.num_envs
        return LearnSummary(
            iterations=num_iterations,
            final_iteration=algo.iteration,
            env_steps=steps,
            wall_time_s=wall,
            fps=steps / wall if wall > 0 else 0.0,
            final_mean_reward=self._mean(self.episode_returns),
            best_mean_reward=best_mean_reward,
            final_mean_episode_length=self._mean(self.episode_lengths),
            runtime="sync",
            updates=updates,
            utd_ratio=updates * algo.cfg.batch_size / steps if steps else None,
            collection_time_s=collection_time,
            learning_time_s=learning_time,
        )

    def _track_episodes(self, rewards: torch.Tensor, done: torch.Tensor) -> int:
        """Accumulate per-env returns and lengths; move finished episodes into the window.
        Returns the number of episodes that ended."""
        self._current_return += rewards.to(self._current_return.device)
        self._current_length += 1
        done = done.to(self._current_return.device)
        if bool(done.any()):
            self.episode_returns.extend(self._current_return[done].tolist())
            self.episode_lengths.extend(self._current_length[done].tolist())
            self._current_return[done] = 0.0
            self._current_length[done] = 0
            return int(done.sum())
        return 0

    @staticmethod
    def _mean(values: deque) -> float | None:
        return sum(values) / len(values) if values else None


class EpisodeLogWindow:
    """The env's ``Episode*`` log entries (``Episode_Reward/<term>``, ``Episode_Termination/<term>``,
    ``Episode/length_s``) averaged over the last ``window`` finished episodes, as
    ``Train/mean_episode_length`` is.

    An env logs these keys only at steps where episodes end, each as the mean over the episodes
    that ended there (one episode, or hundreds). Logging the last such step made a term's curve
    jump between single episodes; here each step's value is weighted by its episode count and
    entries older than the window are dropped (the oldest step goes once the newer ones alone
    hold ``window`` episodes). Other keys pass through unchanged.

    Args:
        window: episodes to average over (>= 1).
    """

    def __init__(self, window: int) -> None:
        self.window = window
        self._steps: dict[str, deque[tuple[float, int]]] = {}
        self._sums: dict[str, list[float]] = {}  # key -> [sum of value * count, sum of count]

    def add(self, log: dict[str, float], finished: int) -> dict[str, float]:
        """Take one env step's log, at which ``finished`` episodes ended; return the log with the
        ``Episode*`` keys replaced by their windowed means (other keys unchanged)."""
        out: dict[str, float] = {}
        for key, value in log.items():
            value = float(value)
            if not key.startswith("Episode") or finished <= 0:
                out[key] = value
                continue
            steps = self._steps.setdefault(key, deque())
            acc = self._sums.setdefault(key, [0.0, 0])
            steps.append((value, finished))
            acc[0] += value * finished
            acc[1] += finished
            while acc[1] - steps[0][1] >= self.window:
                old, n = steps.popleft()
                acc[0] -= old * n
                acc[1] -= n
            out[key] = acc[0] / acc[1]
        return out

    def means(self) -> dict[str, float]:
        """Every ``Episode*`` key's current windowed mean."""
        return {key: acc[0] / acc[1] for key, acc in self._sums.items() if acc[1] > 0}


def loop_settings(log_interval: int, checkpoint_interval: int, episode_window: int | None, num_envs: int) -> int:
    """Check a runner's loop settings and return its episode window.

    Args:
        log_interval, checkpoint_interval, episode_window: as :class:`OffPolicyRunner` takes them;
            ``episode_window=None`` means ``max(100, num_envs)``.
        num_envs: envs stepped per iteration.

    Raises:
        ValueError: ``log_interval`` < 1, ``checkpoint_interval`` < 0 or ``episode_window`` < 1.
    """
    if episode_window is None:
        episode_window = max(100, num_envs)
    if log_interval < 1 or checkpoint_interval < 0 or episode_window < 1:
        raise ValueError(
            f"need log_interval >= 1, checkpoint_interval >= 0, episode_window >= 1; got "
            f"{log_interval}, {checkpoint_interval}, {episode_window}"
        )
    return episode_window


def draw_seed() -> int:
    """A 62-bit seed drawn from torch's global CPU RNG."""
    return int(torch.randint(0, 2**62, (1,)).item())


__all__ = ["LearnSummary", "OffPolicyRunner", "draw_seed", "loop_settings"]
