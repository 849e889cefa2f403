"""Training progress on the terminal: a rich bar, or plain lines when stdout is a file."""

from __future__ import annotations

import sys
import time
from typing import Any


class BarProgress:
    """A rich progress bar showing iteration, reward and episode length."""

    def __init__(self, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._p = Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"),
        )
        self._task = self._p.add_task("train", total=total, info="")
        self._p.start()

    def update(self, iteration: int, metrics: dict[str, float], stats: dict[str, Any] | None = None) -> None:
        stats = stats or {}
        reward, length = stats.get("final_mean_reward"), stats.get("mean_episode_length")
        fps = metrics.get("Perf/total_fps")
        info = "reward {}  ep len {}  {} steps/s".format(
            "-" if reward is None else f"{reward:.2f}",
            "-" if length is None else f"{length:.0f}",
            "-" if fps is None else f"{fps:.0f}",
        )  # "-" until the first episode ends, as in the plain lines
        self._p.update(self._task, completed=iteration, info=info)

    def close(self) -> None:
        self._p.stop()


class LineProgress:
    """Plain progress lines on stdout for logs (``unilab train ... > log.txt``): one after the
    first iteration, then one whenever ``every_s`` seconds have passed, and one at the end.

    A line: ``train 120/1000 (12%): 2048 env steps/s, mean reward 1.234, mean episode length
    245.0, 60 s elapsed``. Env steps/s is measured since the previous line (since the start when
    that was less than a second ago); the reward and
    episode length are the latest the learner reported (``-`` before the first episode ended).
    ``start`` is the iteration the run starts from (a resumed run's checkpoint): rates and the
    first line count from there.
    """

    def __init__(self, total: int, num_envs: int, every_s: float = 10.0, stream=None, start: int = 0) -> None:
        self._total, self._num_envs, self._every_s = total, num_envs, every_s
        self._stream = stream
        self._t0 = self._last_t = time.monotonic()
        self._start = self._last_iteration = start

    def update(self, iteration: int, metrics: dict[str, float], stats: dict[str, Any] | None = None) -> None:
        now = time.monotonic()
        if not (iteration == self._start + 1 or iteration >= self._total or now - self._last_t >= self._every_s):
            return
        stats = stats or {}
        # The async learner takes a block of iterations at once: over less than a second the
        # interval rate is meaningless (it printed millions), so short intervals use the run's average.
        if now - self._last_t >= 1.0:
            rate = (iteration - self._last_iteration) * self._num_envs / (now - self._last_t)
        else:
            rate = (iteration - self._start) * self._num_envs / max(now - self._t0, 1e-9)
        reward, length = stats.get("final_mean_reward"), stats.get("mean_episode_length")
        line = (
            f"train {iteration}/{self._total} ({100 * iteration // max(self._total, 1)}%): "
            f"{rate:.0f} env steps/s, mean reward {'-' if reward is None else f'{reward:.3f}'}, "
            f"mean episode length {'-' if length is None else f'{length:.1f}'}, "
            f"{now - self._t0:.0f} s elapsed"
        )
        print(line, file=self._stream or sys.stdout, flush=True)
        self._last_t, self._last_iteration = now, iteration

    def close(self) -> None:
        pass


def make_progress(flag: bool | None, total: int, num_envs: int = 1,
                  start: int = 0) -> BarProgress | LineProgress | None:
    """``training.progress``: true, a progress bar; false, nothing; unset, a bar in a terminal and
    plain lines (:class:`LineProgress`, counting from iteration ``start``) when stdout is a file or
    a pipe."""
    if flag is None:
        return BarProgress(total) if sys.stdout.isatty() else LineProgress(total, num_envs, start=start)
    return BarProgress(total) if flag else None


__all__ = ["BarProgress", "LineProgress", "make_progress"]
