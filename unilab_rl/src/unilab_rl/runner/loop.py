"""What both training loops share: the run record, the hooks a trainer plugs in, the episode
windows, the log and checkpoint cadence, and how a run ends.

A runner (:class:`~unilab_rl.runner.OffPolicyRunner`, :class:`~unilab_rl.async_runtime.AsyncOffPolicyRunner`)
steps envs and calls the learner; after every iteration it hands :class:`RunBook` what happened
(the learner's metrics, finished episodes, the env's log, time spent). The book keeps the run
record (:class:`LearnSummary`) current and calls the trainer's :class:`RunnerHooks`:

::

    every iteration      on_iteration(iteration, metrics, summary)
    every log_interval   on_log(iteration, metrics)        metrics seen since the last call merged
    every checkpoint_interval, and once at the end
                         on_checkpoint(iteration)
    at the end, always   on_end(summary)                   summary.status says why it ended

A hook may raise to stop training (a :class:`StopTraining` names the status it stands for); the
runner still saves the last checkpoint and calls ``on_end`` before the exception propagates.
"""

from __future__ import annotations

import errno
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

log = logging.getLogger(__name__)

STATUSES = ("running", "normal_completion", "interrupted", "terminated", "failed", "error")
"""Values of :attr:`LearnSummary.status`."""


class StopTraining(BaseException):
    """Raised (by a hook, a signal handler) to end training with a given status.

    A ``BaseException``, as ``KeyboardInterrupt`` is, so that no ``except Exception`` on the way
    swallows it.

    Args:
        status: one of :data:`STATUSES` other than ``running`` and ``normal_completion``, e.g.
            ``"interrupted"``.
        message: recorded as :attr:`LearnSummary.error`.
    """

    def __init__(self, status: str, message: str) -> None:
        if status not in STATUSES[2:]:
            raise ValueError(f"StopTraining status must be one of {STATUSES[2:]}, got {status!r}")
        super().__init__(message)
        self.status = status


class RunnerHooks:
    """Callbacks a trainer gives a runner (metrics writers, checkpoints, summaries, progress,
    evaluation). Every method is a no-op here; override the ones you need. All run in the
    learner's thread, between iterations."""

    def on_iteration(self, iteration: int, metrics: dict[str, float], summary: LearnSummary) -> None:
        """After every iteration. ``metrics`` are this iteration's (it may add or change entries:
        they reach ``on_log``); ``summary`` is the run record, current."""

    def on_log(self, iteration: int, metrics: dict[str, float]) -> None:
        """Every ``log_interval`` iterations and at the last one: every metric reported since the
        previous call, each with its latest value (so metrics that appear only in some iterations,
        such as the actor's, are never skipped)."""

    def on_checkpoint(self, iteration: int, summary: LearnSummary) -> None:
        """Every ``checkpoint_interval`` iterations before the last, then once at the end, however
        the run ends. Save what is needed to resume (the learner's ``state_dict``); ``summary`` is
        the run record, current."""

    def on_end(self, summary: LearnSummary) -> None:
        """Once, last, however the run ends; ``summary.status`` and ``summary.error`` say why."""


@dataclass
class LearnSummary:
    """The run record a runner keeps current and returns (names as in ``run_summary.json``).

    Episode statistics are means over the last ``episode_window`` finished episodes; ``None``
    until an episode finishes. Times are seconds.
    """

    runtime: str = "sync"
    """``"sync"`` or ``"async"``."""
    status: str = "running"
    """One of :data:`STATUSES`: ``running`` until the loop ends, then ``normal_completion``,
    ``interrupted`` (SIGINT, ``KeyboardInterrupt``), ``terminated`` (SIGTERM), ``failed`` (a
    collector died) or ``error`` (an exception in the learner or a hook)."""
    error: str | None = None
    """What stopped the run, plus any failure while saving its last checkpoint; None otherwise."""
    start_iteration: int = 0
    """The learner's iteration counter when the loop started (0, or a resumed checkpoint's)."""
    iterations: int = 0
    """The iteration counter now (a resumed run's earlier iterations included)."""
    env_steps: int = 0
    """Transitions collected, ``iterations * steps_per_iteration`` (resumed ones included)."""
    env_steps_per_s: float | None = None
    """This call's env steps over :attr:`learn_wall_time_s`: a whole-run average."""
    learn_wall_time_s: float = 0.0
    """Seconds in the loop so far."""
    updates: int = 0
    """Critic updates run in this call."""
    utd_ratio: float | None = None
    """Update-to-data ratio of this call: ``updates * batch_size / transitions``."""
    final_mean_reward: float | None = None
    """``Train/mean_reward`` now: mean undiscounted return of the last finished episodes."""
    best_mean_reward: float | None = None
    """Highest ``Train/mean_reward`` of the call."""
    mean_episode_length: float | None = None
    """``Train/mean_episode_length`` now, in env steps."""
    time_to_goal_episode_length: dict[str, Any] | None = None
    """The first iteration at which :attr:`mean_episode_length` reached the goal length, as
    ``{"goal_episode_length", "iteration", "env_steps", "wall_time_s"}``; None until then or
    without a goal."""
    episode_rewards: dict[str, float] = field(default_factory=dict)
    """Each env ``Episode_Reward/<term>`` log's current windowed mean, keyed by term."""
    collection_time_s: float = 0.0
    """Stepping envs and acting (async: measured in the collectors, overlapping learning)."""
    learning_time_s: float = 0.0
    """Gradient updates (async: and copying blocks into the replay)."""
    learner_wait_time_s: float = 0.0
    """Async: the learner waiting for a full block (collection is the bottleneck)."""
    collector_wait_time_s: float = 0.0
    """Async: the collectors waiting for a free block (learning is the bottleneck)."""
    collector_start_time_s: float = 0.0
    """Async: from starting the collectors to their first block (spawn, imports, env build)."""
    first_update_time_s: float | None = None
    """Host seconds of this call's first ``learner.update()``: on a CUDA learner with
    ``runtime.compile`` its ``torch.compile`` and graph capture (tens of seconds with a cold
    inductor cache, a few with a warm one), otherwise about one update; None before the first."""
    collector_phase_time_s: dict[str, float] | None = None
    """Async: collection time split by phase (:data:`unilab_rl.async_runtime.COLLECTOR_PHASES`),
    the mean over shards; None in sync mode."""
    policy_device: str | None = None
    """Async: where the collectors ran the exploration policy; None in sync mode."""
    transfer: dict[str, int] = field(default_factory=dict)
    """Async: transfer counters (blocks, bytes, weight broadcasts and pulls); empty in sync mode."""
    collector_exitcode: int | None = None
    """Async: the first non-zero collector exit code, 0 when all stopped cleanly; None in sync mode."""
    collector_exitcodes: list[int | None] | None = None
    """Async: every collector's exit code, in order; None in sync mode."""
    cleanup_errors: list[str] = field(default_factory=list)
    """Problems met while stopping the collectors."""

    @property
    def final_iteration(self) -> int:
        """Alias of :attr:`iterations`."""
        return self.iterations

    @property
    def final_mean_episode_length(self) -> float | None:
        """Alias of :attr:`mean_episode_length`."""
        return self.mean_episode_length

    @property
    def wall_time_s(self) -> float:
        """Alias of :attr:`learn_wall_time_s`."""
        return self.learn_wall_time_s

    @property
    def fps(self) -> float:
        """:attr:`env_steps_per_s`, 0.0 when unknown."""
        return self.env_steps_per_s or 0.0

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain JSON-ready values."""
        return asdict(self)


class FunctionHooks(RunnerHooks):
    """Hooks from plain functions, for scripts and tests: ``log_fn(iteration, metrics)`` as
    :meth:`RunnerHooks.on_log`, ``checkpoint_fn(iteration)`` as :meth:`RunnerHooks.on_checkpoint`,
    ``on_iteration(iteration, metrics)`` after every iteration; each optional, and each after the
    same method of ``inner`` (another :class:`RunnerHooks`) when one is given."""

    def __init__(self, inner: RunnerHooks | None = None, log_fn: Callable[[int, dict[str, float]], None] | None = None,
                 checkpoint_fn: Callable[[int], None] | None = None,
                 on_iteration: Callable[[int, dict[str, float]], None] | None = None) -> None:
        self.inner = inner or RunnerHooks()
        self.log_fn, self.checkpoint_fn, self.iteration_fn = log_fn, checkpoint_fn, on_iteration

    def on_iteration(self, iteration: int, metrics: dict[str, float], summary: LearnSummary) -> None:
        self.inner.on_iteration(iteration, metrics, summary)
        if self.iteration_fn is not None:
            self.iteration_fn(iteration, metrics)

    def on_log(self, iteration: int, metrics: dict[str, float]) -> None:
        self.inner.on_log(iteration, metrics)
        if self.log_fn is not None:
            self.log_fn(iteration, metrics)

    def on_checkpoint(self, iteration: int, summary: LearnSummary) -> None:
        self.inner.on_checkpoint(iteration, summary)
        if self.checkpoint_fn is not None:
            self.checkpoint_fn(iteration)

    def on_end(self, summary: LearnSummary) -> None:
        self.inner.on_end(summary)


class Episodes:
    """Finished episodes of a runner, across its ``learn`` calls: the last ``window`` returns and
    lengths, and the env's ``Episode*`` logs over the same window (:class:`EpisodeLogWindow`)."""

    def __init__(self, window: int) -> None:
        self.returns: deque[float] = deque(maxlen=window)
        self.lengths: deque[int] = deque(maxlen=window)
        self.log = EpisodeLogWindow(window)


class RunnerBase:
    """What both runners share: the loop settings, the finished-episode windows (across
    ``learn`` calls) and the opening of each call's :class:`RunBook`.

    Args:
        algo: the learner; num_envs: envs stepped per iteration.
        hooks, log_fn, checkpoint_fn, log_interval, checkpoint_interval, episode_window, seed,
            steps_per_iteration, goal_episode_length: as :class:`~unilab_rl.runner.OffPolicyRunner`.

    Raises:
        ValueError: an interval or window out of range.
    """

    def __init__(self, algo: Any, num_envs: int, *, hooks: RunnerHooks | None,
                 log_fn: Callable[[int, dict[str, float]], None] | None,
                 checkpoint_fn: Callable[[int], None] | None, log_interval: int, checkpoint_interval: int,
                 episode_window: int | None, seed: int | None, steps_per_iteration: int | None,
                 goal_episode_length: int | None) -> None:
        window = loop_settings(log_interval, checkpoint_interval, episode_window, num_envs)
        self.algo = algo
        self.hooks = FunctionHooks(hooks, log_fn, checkpoint_fn) if (log_fn or checkpoint_fn) else hooks
        self.log_interval, self.checkpoint_interval = log_interval, checkpoint_interval
        self.episodes = Episodes(window)
        self.steps_per_iteration = steps_per_iteration or num_envs
        self.goal_episode_length = goal_episode_length
        self.seed = draw_seed() if seed is None else seed

    @property
    def episode_returns(self) -> deque[float]:
        """The last finished episodes' returns, newest last."""
        return self.episodes.returns

    @property
    def episode_lengths(self) -> deque[int]:
        """The last finished episodes' lengths in env steps, newest last."""
        return self.episodes.lengths

    def _open_book(self, num_iterations: int, start_iteration: int | None,
                   on_iteration: Callable[[int, dict[str, float]], None] | None, summary: LearnSummary) -> RunBook:
        """Check ``num_iterations``, set the counter, keep ``summary`` as :attr:`summary` and
        return the call's book (``on_iteration`` after the hooks' own).

        Raises:
            ValueError: ``num_iterations`` < 0.
        """
        if num_iterations < 0:
            raise ValueError(f"num_iterations must be >= 0, got {num_iterations}")
        if start_iteration is not None:
            self.algo.iteration = start_iteration
        hooks = FunctionHooks(self.hooks, on_iteration=on_iteration) if on_iteration else self.hooks
        self.summary = summary
        return RunBook(self.algo, hooks, summary, self.episodes, num_iterations=num_iterations,
                       log_interval=self.log_interval, checkpoint_interval=self.checkpoint_interval,
                       steps_per_iteration=self.steps_per_iteration, goal_episode_length=self.goal_episode_length)


class RunBook:
    """The bookkeeping of one ``learn`` call (see the module docstring).

    Args:
        learner: the learner (its ``iteration`` is the counter; ``batch_size`` for the UTD ratio).
        hooks: the trainer's hooks; None: no-ops.
        summary: the record to keep (the runner fills its runtime-specific fields).
        episodes: the runner's finished-episode windows.
        num_iterations: iterations this call runs; the last one always logs.
        log_interval, checkpoint_interval: cadence (>= 1; 0: checkpoint only at the end).
        steps_per_iteration: env steps one iteration stands for (``num_envs``; times the ranks
            with data-parallel learners).
        goal_episode_length: the episode length that sets :attr:`LearnSummary.time_to_goal_episode_length`.
    """

    def __init__(self, learner: Any, hooks: RunnerHooks | None, summary: LearnSummary, episodes: Episodes, *,
                 num_iterations: int, log_interval: int, checkpoint_interval: int, steps_per_iteration: int,
                 goal_episode_length: int | None = None) -> None:
        self.learner = learner
        self.hooks = hooks or RunnerHooks()
        self.summary = summary
        self.log_interval = log_interval
        self.checkpoint_interval = checkpoint_interval
        self.steps_per_iteration = steps_per_iteration
        self.goal_episode_length = goal_episode_length
        self.first_iteration = learner.iteration
        self.last_iteration = learner.iteration + num_iterations
        self.episode_returns = episodes.returns
        self.episode_lengths = episodes.lengths
        self.episode_log = episodes.log
        self._pending: dict[str, float] = {}
        self._last_saved: int | None = None
        self._t0 = time.perf_counter()
        summary.start_iteration = summary.iterations = learner.iteration
        summary.env_steps = learner.iteration * steps_per_iteration

    def elapsed(self) -> float:
        """Seconds since the book was opened."""
        return time.perf_counter() - self._t0

    def update(self) -> dict[str, float]:
        """Run one ``learner.update()`` and count and check it (:meth:`add_updates`); the call's
        first also sets :attr:`LearnSummary.first_update_time_s`.

        Returns:
            the update's metrics.

        Raises:
            FloatingPointError: a metric is NaN or infinite (training diverged).
        """
        t0 = time.perf_counter()
        metrics = self.learner.update()
        if self.summary.first_update_time_s is None:
            self.summary.first_update_time_s = time.perf_counter() - t0
        self.add_updates(metrics)
        return metrics

    def add_updates(self, metrics: dict[str, float]) -> None:
        """Count one ``learner.update()`` and check its metrics.

        Raises:
            FloatingPointError: a metric is NaN or infinite (training diverged).
        """
        bad = [k for k, v in metrics.items() if not math.isfinite(v)]
        if bad:
            raise FloatingPointError(f"non-finite learner metrics at iteration {self.learner.iteration}: {bad}")
        self.summary.updates += self.learner.updates_per_iteration

    def end_iteration(self, metrics: dict[str, float], returns: list[float], lengths: list[int],
                      env_log: dict[str, float], times: dict[str, float]) -> None:
        """Record the iteration the learner just completed (``learner.iteration`` already counts it).

        Args:
            metrics: the learner's and the runner's metrics of this iteration (``Perf/*``); the
                book adds ``Train/*`` and the windowed ``Episode*`` entries.
            returns, lengths: episodes that ended in this iteration (undiscounted return, env steps).
            env_log: the env's ``extras["log"]`` of this step.
            times: seconds of this iteration by kind (``collection``, ``learning``, and async
                ``learner_wait``, ``collector_wait``), added to the summary's ``<kind>_time_s``.
        """
        s, iteration = self.summary, self.learner.iteration
        self.episode_returns.extend(returns)
        self.episode_lengths.extend(lengths)
        if self.episode_returns:
            reward = sum(self.episode_returns) / len(self.episode_returns)
            metrics["Train/mean_reward"] = reward
            metrics["Train/mean_episode_length"] = sum(self.episode_lengths) / len(self.episode_lengths)
            s.final_mean_reward = reward
            s.best_mean_reward = reward if s.best_mean_reward is None else max(s.best_mean_reward, reward)
            s.mean_episode_length = metrics["Train/mean_episode_length"]
        metrics |= self.episode_log.means()
        metrics |= self.episode_log.add(env_log, len(lengths))
        for key, value in metrics.items():
            if key.startswith("Episode_Reward/"):
                s.episode_rewards[key.removeprefix("Episode_Reward/")] = value
        for kind, seconds in times.items():
            setattr(s, f"{kind}_time_s", getattr(s, f"{kind}_time_s") + seconds)
        s.iterations = iteration
        s.env_steps = iteration * self.steps_per_iteration
        done = (iteration - self.first_iteration) * self.steps_per_iteration
        s.learn_wall_time_s = self.elapsed()
        s.env_steps_per_s = round(done / s.learn_wall_time_s, 1) if s.learn_wall_time_s > 0 else None
        s.utd_ratio = s.updates * self.learner.batch_size / max(done, 1)
        metrics["Perf/utd_ratio"] = s.utd_ratio
        goal = self.goal_episode_length
        if goal and s.time_to_goal_episode_length is None and (s.mean_episode_length or 0) >= goal:
            s.time_to_goal_episode_length = {"goal_episode_length": goal, "iteration": iteration,
                                             "env_steps": s.env_steps, "wall_time_s": round(s.learn_wall_time_s, 1)}

        self.hooks.on_iteration(iteration, metrics, s)
        self._pending.update(metrics)
        if iteration % self.log_interval == 0 or iteration == self.last_iteration:
            pending, self._pending = self._pending, {}
            self.hooks.on_log(iteration, pending)
        if self.checkpoint_interval and iteration % self.checkpoint_interval == 0 and iteration < self.last_iteration:
            self.hooks.on_checkpoint(iteration, s)
            self._last_saved = iteration

    def run(self, loop: Callable[[], None], cleanup: Callable[[], None] | None = None) -> LearnSummary:
        """Run ``loop`` and end the run whatever happens: record the status, let ``cleanup``
        (the runner's: stop collectors) run, save the last checkpoint and call ``on_end``; then
        return the summary or re-raise what stopped the loop.

        Status: ``normal_completion``; a :class:`StopTraining`'s status; ``interrupted`` for
        ``KeyboardInterrupt``; ``failed`` for a collector's death (an exception with a
        ``collector_failure`` attribute), an ``OSError`` (a full disk: the error names the path
        and the errno) or an allocation that failed; ``error`` for any other exception. A failure while saving the last
        checkpoint is appended to ``error`` (and makes a completed run ``failed``); a failing
        ``on_end`` is logged when another error is already on its way, else raised.
        """
        s = self.summary
        failure: BaseException | None = None
        try:
            loop()
            s.status = "normal_completion"
        except BaseException as exc:  # noqa: BLE001 - recorded, then re-raised below
            failure = exc
            s.status, s.error = classify(exc)
        finally:
            if cleanup is not None:
                try:
                    cleanup()
                except BaseException as exc:  # noqa: BLE001 - the loop's own error wins
                    s.cleanup_errors.append(f"{type(exc).__name__}: {exc}")
                    failure = failure or exc
            s.learn_wall_time_s = round(self.elapsed(), 3)
            done = (s.iterations - self.first_iteration) * self.steps_per_iteration
            s.env_steps_per_s = round(done / s.learn_wall_time_s, 1) if s.learn_wall_time_s > 0 else None
            if self._last_saved != s.iterations:
                try:
                    self.hooks.on_checkpoint(s.iterations, s)
                except Exception as exc:  # noqa: BLE001 - recorded; the run's own error wins
                    s.error = (s.error + "; " if s.error else "") + f"final checkpoint not saved: {_reason(exc)}"
                    if s.status == "normal_completion":
                        s.status = "failed"
            try:
                self.hooks.on_end(s)
            except Exception:
                if failure is None:
                    raise
                log.exception("on_end failed while the run was already failing")
        if failure is not None:
            raise failure
        return s


def classify(exc: BaseException) -> tuple[str, str]:
    """``(status, error)`` of a run stopped by ``exc`` (see :meth:`RunBook.run`)."""
    if isinstance(exc, StopTraining):
        return exc.status, str(exc.args[0]) if exc.args else str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", "stopped by KeyboardInterrupt"
    if getattr(exc, "collector_failure", False):
        return "failed", str(exc).splitlines()[0]
    if isinstance(exc, OSError):
        return "failed", _reason(exc)
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return "failed", f"out of memory: {first}"
    return "error", f"{type(exc).__name__}: {exc}"


def _reason(exc: BaseException) -> str:
    """One line for ``exc``; an ``OSError`` names its cause, errno and file, e.g. ``No space left
    on device (errno 28, ENOSPC): <run>/model_20.pt``."""
    if isinstance(exc, OSError) and exc.errno is not None:
        code = errno.errorcode.get(exc.errno, "?")
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or exc} (errno {exc.errno}, {code}){where}"
    return f"{type(exc).__name__}: {exc}"


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
        log_interval, checkpoint_interval, episode_window: as the runners take them;
            ``episode_window=None`` means ``max(100, num_envs)`` (rsl_rl uses 100; with many envs
            the mean then covers about one episode per env rather than the few env steps in
            which 100 episodes end).
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


__all__ = ["STATUSES", "EpisodeLogWindow", "RunnerBase", "Episodes", "FunctionHooks", "LearnSummary", "RunBook",
           "RunnerHooks", "StopTraining", "classify", "draw_seed", "loop_settings"]
