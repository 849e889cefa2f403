"""What a training run writes while the runner loops: TensorBoard scalars, checkpoints,
``run_summary.json``, the progress display, and the signal safe points
(:class:`unilab_rl.runner.RunnerHooks` implemented for a run directory).

Every write goes through :mod:`unilab.runs` (atomic); a failure at the end (a full disk) is
recorded in the summary rather than allowed to skip it.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

import torch

from unilab import runs
from unilab.interrupts import Interrupts
from unilab.resume import rng_state
from unilab_rl.runner import LearnSummary, RunnerHooks

log = logging.getLogger(__name__)


class RankHooks(RunnerHooks):
    """Hooks every rank runs: the signal safe point after each iteration, and with several ranks
    the sum of ``Perf/total_fps`` over ranks at log iterations (a collective every rank makes at
    the same iteration; ``Perf/rank_fps`` keeps this rank's).

    Args:
        interrupts: the process's signal handling; each iteration's hook calls are its safe points.
        dctx: the data-parallel context (:mod:`unilab.ddp`).
        log_interval, max_iterations: when the ranks log (the collective's cadence).
    """

    def __init__(self, interrupts: Interrupts, dctx, log_interval: int, max_iterations: int) -> None:
        self.interrupts, self.dctx = interrupts, dctx
        self.log_interval, self.max_iterations = log_interval, max_iterations

    def on_iteration(self, iteration: int, metrics: dict[str, float], summary: LearnSummary) -> None:
        with self.interrupts.deferred():
            if self.dctx.enabled and (iteration % self.log_interval == 0 or iteration == self.max_iterations):
                fps = metrics.get("Perf/total_fps", 0.0)
                metrics["Perf/rank_fps"] = fps
                metrics["Perf/total_fps"] = self.dctx.sum_scalar(fps)
            self.after_iteration(iteration, metrics, summary)

    def after_iteration(self, iteration: int, metrics: dict[str, float], summary: LearnSummary) -> None:
        """Rank 0's own per-iteration work, inside the safe point (none on other ranks)."""


class RunDirHooks(RankHooks):
    """Rank 0's hooks: everything the run directory receives.

    Args:
        run_dir: the run directory.
        learner: the learner (its ``state_dict`` is checkpointed).
        checkpoint_meta: what every checkpoint holds besides ``agent`` and ``rng`` (algo, task,
            resolved config).
        keep_checkpoints: numbered checkpoints kept.
        summary: the ``run_summary.json`` writer (:class:`unilab.runs.RunSummary`).
        progress: the progress display or None.
        extra_hooks: further hooks (evaluation) run after these, in order.
        interrupts, dctx, log_interval, max_iterations: as :class:`RankHooks`.
        curriculum: the env curricula's state, log key -> the value the envs start at
            (:func:`unilab.resume.curriculum_start`); each key follows the latest value the env
            logs under it, and every checkpoint records them as its ``curriculum`` entry (which
            ``training.resume`` and play start from). None or empty: no such entry.
    """

    def __init__(self, run_dir: Path, learner, checkpoint_meta: dict[str, Any], keep_checkpoints: int,
                 summary: runs.RunSummary, progress, interrupts: Interrupts, dctx, log_interval: int,
                 max_iterations: int, extra_hooks: list[RunnerHooks] | None = None,
                 curriculum: dict[str, float] | None = None) -> None:
        super().__init__(interrupts, dctx, log_interval, max_iterations)
        from torch.utils.tensorboard import SummaryWriter

        self.run_dir, self.learner, self.meta = run_dir, learner, checkpoint_meta
        self.keep, self.summary, self.progress = keep_checkpoints, summary, progress
        self.extra = list(extra_hooks or [])
        self.curriculum = dict(curriculum or {})
        self.writer = SummaryWriter(log_dir=str(run_dir))
        self.checkpoint: str | None = None

    def after_iteration(self, iteration: int, metrics: dict[str, float], summary: LearnSummary) -> None:
        for key in self.curriculum:  # the env logs a curriculum only at iterations where episodes ended
            if key in metrics:
                self.curriculum[key] = float(metrics[key])
        if self.progress is not None:
            self.progress.update(iteration, metrics, summary_stats(summary))
        if summary.time_to_goal_episode_length and "time_to_goal_episode_length" not in self.summary.data:
            self.summary.update(time_to_goal_episode_length=summary.time_to_goal_episode_length)
        for hook in self.extra:
            hook.on_iteration(iteration, metrics, summary)

    def on_log(self, iteration: int, metrics: dict[str, float]) -> None:
        with self.interrupts.deferred():
            for key, value in metrics.items():
                self.writer.add_scalar(key, value, iteration)
            for hook in self.extra:
                hook.on_log(iteration, metrics)

    def on_checkpoint(self, iteration: int, summary: LearnSummary) -> None:
        with self.interrupts.deferred():
            payload = {"iteration": iteration, "agent": self.learner.state_dict(), "rng": rng_state(), **self.meta}
            if self.curriculum:
                payload["curriculum"] = dict(self.curriculum)
            self.checkpoint = runs.save_checkpoint(self.run_dir, iteration, payload, self.keep).name
            self.summary.update(checkpoint=self.checkpoint, **summary_fields(summary))
            for hook in self.extra:
                hook.on_checkpoint(iteration, summary)

    def on_end(self, summary: LearnSummary) -> None:
        """Close the progress display and TensorBoard (their failures are recorded, not raised),
        write the final summary, then the learning curve."""
        self.interrupts.closing = True  # from here on signals are ignored: the shutdown completes
        if self.progress is not None:
            self.progress.close()
        for hook in self.extra:
            try:
                hook.on_end(summary)
            except Exception as exc:  # noqa: BLE001 - an evaluation never fails a run
                log.warning("%s at the end of the run: %s", type(hook).__name__, exc)
        summary.error = _close_writer(self.writer, summary.error)
        _final_summary(self.summary, checkpoint=self.checkpoint, ended_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
                       cuda_context_initialized=torch.cuda.is_initialized(),
                       cuda_graphs=bool(self.learner.cuda_graphs), **summary_fields(summary))
        _final_summary(self.summary, plot=write_plot(self.run_dir, summary_num_envs(self.summary)))


def summary_fields(s: LearnSummary) -> dict[str, Any]:
    """The runner's record as ``run_summary.json`` fields (docs/run_summary.md)."""
    fields = s.to_dict()
    fields.pop("updates", None)
    fields.pop("policy_device", None)  # recorded at the start as collector_policy_device
    if s.runtime == "sync":
        for key in ("collector_exitcode", "collector_exitcodes", "collector_phase_time_s"):
            fields[key] = None
    return fields


def summary_stats(s: LearnSummary) -> dict[str, Any]:
    """What the progress display shows: reward and episode length."""
    return {"final_mean_reward": s.final_mean_reward, "mean_episode_length": s.mean_episode_length}


def summary_num_envs(summary: runs.RunSummary) -> int:
    """``num_envs`` as the summary records it (for the learning curve's x axis)."""
    return int(summary.data.get("num_envs") or 1)


def _close_writer(writer, error: str | None) -> str | None:
    """Flush and close the TensorBoard writer; a failure (a full disk) is appended to ``error``
    instead of raised, so the final summary is still written."""
    try:
        writer.flush()
        writer.close()
    except Exception as exc:  # noqa: BLE001 - recorded in the summary
        reason = runs.os_error_line(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
        error = (error + "; " if error else "") + f"TensorBoard events not written: {reason}"
    return error


def _final_summary(summary: runs.RunSummary, **fields: Any) -> None:
    """``summary.update(**fields)``; if even that fails, say so on stderr (the run's own error,
    if any, is what propagates)."""
    try:
        summary.update(**fields)
    except OSError as exc:
        print(f"error: run_summary.json not written: {runs.os_error_line(exc)}", file=sys.stderr, flush=True)


def write_plot(run_dir: Path, num_envs: int) -> str:
    """Write ``learning_curve.png`` (:mod:`unilab.plots`); never raises. Returns the summary's
    ``plot`` field: the file name, or ``"failed: <error>"`` (a plot never fails a run)."""
    try:
        from unilab.plots import write_learning_curve

        return write_learning_curve(run_dir, num_envs=num_envs).name
    except Exception as exc:  # noqa: BLE001 - recorded in the summary, never fatal
        log.warning("learning curve not written: %s", exc)
        return f"failed: {type(exc).__name__}: {exc}"


__all__ = ["RankHooks", "RunDirHooks", "summary_fields", "write_plot"]
