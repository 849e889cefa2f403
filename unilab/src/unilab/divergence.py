"""Counting worlds whose physics diverged during training (the env ends them terminated with
reward 0: :meth:`unilab.envs.ManagerBasedRlEnv._contain_divergence`).

The env logs, every step, the share of its rows that diverged and the share whose episode ended
(:data:`~unilab.envs.manager_based_rl_env.DIVERGED_KEY`, :data:`~...ENDED_KEY`); shares, so the
async runtime's mean over equal env shards stays exact. :class:`DivergenceMonitor` turns them
back into counts: per log interval for TensorBoard (``Env/diverged_worlds``,
``Env/diverged_episode_share``), per run for ``run_summary.json`` (``diverged_worlds``,
``diverged_episode_share``), and warns once when more than :data:`WARN_SHARE` of the episodes
that ended diverged.
"""

from __future__ import annotations

import logging
from typing import Any

from unilab.envs.manager_based_rl_env import DIVERGED_KEY, ENDED_KEY
from unilab_rl.runner import RunnerHooks

log = logging.getLogger(__name__)

WARN_SHARE = 0.01
"""Warn when more than this share of the ended episodes ended by diverging (1 %)."""


class DivergenceMonitor:
    """Diverged worlds and ended episodes, per log interval and per run.

    Args:
        num_envs: rows the logged shares are of (all shards of this learner together).
    """

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs
        self.diverged = 0
        """Worlds that diverged since the start of the run."""
        self.ended = 0
        """Episodes that ended since the start of the run."""
        self._interval = [0, 0]  # diverged, ended since the last log write
        self.warned = False

    def update(self, metrics: dict[str, float], log_now: bool) -> None:
        """Take one iteration's metrics: remove the env's per-step shares from ``metrics`` and,
        when ``log_now`` (a TensorBoard write follows), add the interval's ``Env/diverged_worlds``
        (count) and ``Env/diverged_episode_share`` (diverged / ended, 0 when none ended)."""
        diverged = round(metrics.pop(DIVERGED_KEY, 0.0) * self.num_envs)
        ended = round(metrics.pop(ENDED_KEY, 0.0) * self.num_envs)
        self.diverged += diverged
        self.ended += ended
        self._interval[0] += diverged
        self._interval[1] += ended
        if log_now:
            d, e = self._interval
            metrics["Env/diverged_worlds"] = float(d)
            metrics["Env/diverged_episode_share"] = d / e if e else 0.0
            self._interval = [0, 0]
            if not self.warned and self.share > WARN_SHARE:
                self.warned = True
                log.warning(
                    "%d of %d episodes (%.1f %%) ended because their physics diverged (reset with reward 0 and "
                    "not bootstrapped from); look at pushes, gains, the time step or the robot model",
                    self.diverged, self.ended, 100 * self.share,
                )

    @property
    def share(self) -> float:
        """Diverged worlds over ended episodes so far (0 before any ended)."""
        return self.diverged / self.ended if self.ended else 0.0

    def summary(self) -> dict[str, Any]:
        """``run_summary.json`` fields: ``diverged_worlds``, ``episodes_ended``,
        ``diverged_episode_share``."""
        return {"diverged_worlds": self.diverged, "episodes_ended": self.ended,
                "diverged_episode_share": round(self.share, 6)}


class DivergenceHooks(RunnerHooks):
    """A :class:`DivergenceMonitor` in a runner's loop: the env's shares turned into counts after
    every iteration (TensorBoard at log iterations), the run's counts kept in ``run_summary.json``.

    Args:
        monitor: the monitor (rank 0's worlds).
        record: the run's :class:`unilab.runs.RunSummary` (its ``data`` takes the counts, written
            with the next checkpoint and at the end).
        log_interval, max_iterations: when the metrics are written.
    """

    def __init__(self, monitor: DivergenceMonitor, record, log_interval: int, max_iterations: int) -> None:
        self.monitor, self.record = monitor, record
        self.log_interval, self.max_iterations = log_interval, max_iterations
        record.data.update(monitor.summary())

    def on_iteration(self, iteration: int, metrics: dict[str, float], summary) -> None:
        self.monitor.update(metrics, iteration % self.log_interval == 0 or iteration == self.max_iterations)
        self.record.data.update(self.monitor.summary())


__all__ = ["DivergenceHooks", "DivergenceMonitor", "WARN_SHARE"]
