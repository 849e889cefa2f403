"""The task's evaluation suite during training (``training.eval_interval``), off the training path.

Every ``eval_interval`` iterations, :meth:`TrainingEvaluator.maybe_start` copies the learner's
deterministic policy weights to the CPU (one flat float32 vector,
:func:`unilab_rl.async_runtime.flat_state`) and hands them to a background process that holds
its own small env of the run (the suite with ``training_num_envs`` rows per case, one physics
thread, one torch thread, at the lowest CPU priority, nice 19) and a CPU copy of the actor. Collection and
the learner go on meanwhile; :meth:`TrainingEvaluator.poll` picks a finished result up, logs
``Eval/*`` scalars to TensorBoard (at the snapshot's iteration and wall time) and records
``eval_during_training`` and ``time_to_eval_pass`` in ``run_summary.json``. A snapshot that falls
due while the previous one is still being evaluated is skipped (counted in ``skipped``).

``time_to_eval_pass``: the first snapshot whose suite passes (walking: every case; tracking: the
task's bar), with its iteration, env steps and wall-clock seconds since training started.

The best snapshot is kept as an exported policy: whenever a snapshot evaluates at least as well
as every one before it (a pass first, then the suite's headline; of equals, the later), the
worker writes it as ``policy_best.onnx`` (:data:`BEST_POLICY`) in the run directory, with the
metadata ``unilab export`` writes (play settings) plus ``selection`` (suite, iteration,
headline, passed), and ``eval_during_training.best`` names it. So a run whose final policy slips
below a pass it held still leaves the passing policy: ``unilab eval RUN --checkpoint
policy_best.onnx``.

Any training loop can drive it::

    evaluator = TrainingEvaluator.for_run(cfg, task_reg, run_dir, steps_per_iteration, writer, summary.update)
    ...  # each iteration
    evaluator.maybe_start(iteration, agent)
    evaluator.poll()
    ...  # at the end (agent=None when the run was interrupted: no final evaluation)
    evaluator.close(agent, iteration)
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing as mp
import os
import queue
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from unilab_rl.runner import RunnerHooks

log = logging.getLogger(__name__)

BEST_POLICY = "policy_best.onnx"
"""The file in the run directory that holds the best-evaluated snapshot (module docstring)."""

FINAL_WAIT_S = 120.0
"""Longest wait for the final policy's evaluation when training ends (then the worker is ended)."""


class TrainingEvaluator:
    """Runs the task's first suite on snapshots of the learner's policy in a background process.

    Args:
        run_dir: the run directory (its ``run_config.json`` is written).
        interval: iterations between snapshots; 0 turns the evaluator off (every method returns
            at once).
        steps_per_iteration: env steps per iteration (all ranks), for ``env_steps``.
        writer: a TensorBoard ``SummaryWriter`` (or None).
        record: ``record(**fields)`` stores fields in ``run_summary.json`` (the run's
            :meth:`unilab.runs.RunSummary.update`).
        suite: suite name (None: the task's first).
        cases: case names (None: all).
        num_envs: rows per case (None: the suite's ``training_num_envs``).
        threads: physics and torch threads of the worker.
        nice: added to the worker's CPU niceness (lower priority than collection and learning).
        seed: seed of the worker env's draws.
        t0: ``time.monotonic()`` of the start of training (default: now).
    """

    def __init__(
        self,
        run_dir: str | Path,
        interval: int,
        *,
        steps_per_iteration: int,
        writer: Any = None,
        record: Callable[..., None] | None = None,
        suite: str | None = None,
        cases: list[str] | None = None,
        num_envs: int | None = None,
        threads: int = 1,
        nice: int = 19,
        seed: int = 0,
        t0: float | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.interval = int(interval)
        self.steps_per_iteration = int(steps_per_iteration)
        self.writer = writer
        self._record = record
        self.suite, self.cases, self.num_envs = suite, cases, num_envs
        self.threads, self.nice, self.seed = threads, nice, seed
        self.t0 = time.monotonic() if t0 is None else t0
        self.history: list[dict[str, Any]] = []
        self.time_to_pass: dict[str, Any] | None = None
        self.skipped = 0
        self.error: str | None = None
        self.last_record: dict[str, Any] | None = None
        self.best: dict[str, Any] | None = None  # the snapshot in BEST_POLICY
        self.best_error: str | None = None  # why BEST_POLICY could not be written (first failure)
        self._proc = None
        self._requests = self._results = None
        self._pending: dict[str, Any] | None = None  # the snapshot being evaluated
        self._busy_s = 0.0
        self._closed = self.interval <= 0

    @classmethod
    def for_run(cls, cfg, task_reg, run_dir, steps_per_iteration: int, writer=None, record=None,
                t0: float | None = None) -> "TrainingEvaluator":
        """The evaluator of a run from its config (``training.eval_interval``; off when 0 or when
        the task declares no suite)."""
        interval = int(getattr(cfg.training, "eval_interval", 0) or 0)
        if interval and not getattr(task_reg.item, "eval_suites", ()):
            log.warning("training.eval_interval=%d: task %r declares no evaluation suite; evaluation is off",
                        interval, task_reg.name)
            interval = 0
        return cls(run_dir, interval, steps_per_iteration=steps_per_iteration, writer=writer, record=record,
                   seed=int(cfg.training.seed), t0=t0)

    @property
    def enabled(self) -> bool:
        return not self._closed

    # ------------------------------------------------------------------ snapshots
    def maybe_start(self, iteration: int, agent) -> bool:
        """At a multiple of ``interval``, hand the agent's deterministic policy weights to the
        worker (starting it the first time). Returns whether a snapshot was handed over."""
        if self._closed or iteration <= 0 or iteration % self.interval:
            return False
        if self._pending is not None:
            self.skipped += 1
            return False
        return self._submit(iteration, agent)

    def _submit(self, iteration: int, agent) -> bool:
        from unilab_rl.async_runtime import flat_state

        try:
            live = agent.inference_policy()
            flat = flat_state(live).detach().to("cpu").numpy().copy()
            if self._proc is None:
                self._start(getattr(agent, "actor_group", "actor"))
            self._pending = {"iteration": iteration, "env_steps": iteration * self.steps_per_iteration,
                             "wall_time_s": round(time.monotonic() - self.t0, 3), "submitted": time.monotonic()}
            self._requests.put((iteration, flat))
        except Exception as exc:  # noqa: BLE001 - evaluation never stops training
            self._fail(f"cannot start the evaluation: {type(exc).__name__}: {exc}")
            return False
        return True

    def _start(self, group: str) -> None:
        ctx = mp.get_context("spawn")  # never fork a process that may hold a CUDA context
        self._requests, self._results = ctx.Queue(), ctx.Queue()
        self._proc = ctx.Process(
            target=_worker, name="unilab-eval", daemon=True,
            args=(str(self.run_dir), self.suite, self.cases, self.num_envs, self.seed, self.threads, self.nice,
                  group, self._requests, self._results, os.getpid()),
        )  # fmt: skip
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child starts with Ctrl-C ignored
        try:
            self._proc.start()
        finally:
            signal.signal(signal.SIGINT, previous)

    # ------------------------------------------------------------------ results
    def poll(self, timeout: float = 0.0) -> int:
        """Take any finished evaluation (waiting up to ``timeout`` s), log and record it.
        Returns how many were taken (0 or 1)."""
        if self._pending is None or self._results is None:
            return 0
        try:
            msg = self._results.get(timeout=timeout) if timeout > 0 else self._results.get_nowait()
        except queue.Empty:
            if self._proc is not None and not self._proc.is_alive():
                self._fail(f"the evaluation process ended (exit code {self._proc.exitcode})")
            return 0
        pending, self._pending = self._pending, None
        self._busy_s += time.monotonic() - pending["submitted"]
        if "error" in msg:
            self._fail(msg["error"])
            return 1
        self._take(pending, msg)
        return 1

    def _take(self, pending: dict[str, Any], msg: dict[str, Any]) -> None:
        from unilab.eval.report import headline_metrics

        record = msg["record"]
        record["policy"].update(iteration=pending["iteration"], env_steps=pending["env_steps"],
                                wall_time_s=pending["wall_time_s"])
        self.last_record = record
        entry = {"iteration": pending["iteration"], "env_steps": pending["env_steps"],
                 "wall_time_s": pending["wall_time_s"], "headline": record["headline"],
                 "passed": record["passed"], "eval_s": record["wall_time_s"]}
        self.history.append(entry)
        if "best" in msg:
            self.best = msg["best"]
        if "best_error" in msg and self.best_error is None:
            self.best_error = msg["best_error"]
            log.warning("evaluation during training: %s not written: %s", BEST_POLICY, self.best_error.splitlines()[0])
        if self.writer is not None:
            walltime = time.time() - (time.monotonic() - self.t0) + pending["wall_time_s"]
            for tag, value in headline_metrics(record).items():
                self.writer.add_scalar(tag, value, pending["iteration"], walltime=walltime)
        if record["passed"] and self.time_to_pass is None:
            self.time_to_pass = {"suite": record["suite"], "iteration": pending["iteration"],
                                 "env_steps": pending["env_steps"], "wall_time_s": pending["wall_time_s"],
                                 "headline": record["headline"]}
        self._write()

    def _fail(self, error: str) -> None:
        """Turn evaluation off for the rest of the run and record why (training goes on)."""
        log.warning("evaluation during training stopped: %s", error.splitlines()[0])
        self.error = error
        self._pending = None
        self._stop(wait=False)
        self._closed = True
        self._write()

    def summary(self) -> dict[str, Any]:
        """The ``eval_during_training`` entry of ``run_summary.json``."""
        return {
            "suite": (self.last_record or {}).get("suite", self.suite),
            "interval": self.interval,
            "evals": len(self.history),
            "skipped": self.skipped,
            "busy_s": round(self._busy_s, 3),
            "error": self.error,
            "history": self.history,
            "last": self.last_record,
            "best": self.best,
            "best_error": self.best_error,
        }

    def _write(self) -> None:
        if self._record is not None:
            self._record(eval_during_training=self.summary(), time_to_eval_pass=self.time_to_pass)

    # ------------------------------------------------------------------ end
    def close(self, agent=None, iteration: int | None = None, wait_s: float = FINAL_WAIT_S) -> None:
        """End the worker. With ``agent`` (a run that completed), first evaluate its final policy
        (unless that iteration was the last snapshot) and wait up to ``wait_s`` s for it."""
        if self.interval <= 0:
            return
        try:
            self._finish(agent, iteration, wait_s)
        except Exception as exc:  # noqa: BLE001 - the end of training never fails on evaluation
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("evaluation during training: %s", self.error)
        finally:
            self._closed = True
            self._stop(wait=True)
        if self.history or self.error:
            self._write()

    def _finish(self, agent, iteration: int | None, wait_s: float) -> None:
        if not self._closed:
            deadline = time.monotonic() + wait_s
            if agent is not None and iteration:
                if self._pending is not None:
                    self.poll(timeout=max(0.0, deadline - time.monotonic()))
                done = {h["iteration"] for h in self.history}
                if iteration not in done and self._pending is None and not self._closed:
                    self._submit(iteration, agent)
                if self._pending is not None:
                    self.poll(timeout=max(0.0, deadline - time.monotonic()))
                if self._pending is not None:
                    self.error = f"the final evaluation took more than {wait_s:g} s; ended"
            else:
                self.poll()

    def _stop(self, wait: bool) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if wait and proc.is_alive():
                self._requests.put(None)
                proc.join(timeout=5.0)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5.0)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5.0)
        finally:
            for q in (self._requests, self._results):
                if q is not None:
                    q.cancel_join_thread()
                    q.close()
            self._requests = self._results = None


def _worker(run_dir: str, suite: str | None, cases: list[str] | None, num_envs: int | None, seed: int, threads: int,
            nice: int, group: str, requests, results, parent_pid: int) -> None:
    """The evaluation process: build the session and a policy frame once, then evaluate each
    snapshot ``(iteration, flat weights)`` until ``None`` or the parent is gone."""
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # a CPU process: never a CUDA context
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group; the trainer ends this process
    if sys.platform.startswith("linux"):  # the kernel ends this process if the trainer dies (PR_SET_PDEATHSIG)
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.nice(nice)
    except OSError:
        pass
    import torch

    from unilab.eval.policy import untrained_policy
    from unilab.eval.report import make_record
    from unilab.eval.runner import EvalSession
    from unilab.robots import robot_settings
    from unilab_rl.async_runtime import load_flat_state

    torch.set_num_threads(threads)
    try:
        session = EvalSession(Path(run_dir), suite, cases, num_envs, seed, overrides=(f"sim.nthread={threads}",),
                              for_training=True)
        policy, _ = untrained_policy(session.loaded, session.env)
    except BaseException as exc:  # noqa: BLE001 - reported to the trainer, which records it
        results.put({"error": f"{type(exc).__name__}: {exc}"})
        return
    best = BestPolicy(Path(run_dir), group)
    try:
        while True:
            try:
                request = requests.get(timeout=1.0)
            except queue.Empty:
                if os.getppid() != parent_pid:
                    return
                continue
            if request is None:
                return
            iteration, flat = request
            try:
                t0 = time.perf_counter()
                load_flat_state(policy, torch.from_numpy(flat))
                result = session.run(policy, group)
                record = make_record(
                    result, run_dir=Path(run_dir), task=session.loaded.task, algo=session.loaded.algo,
                    policy_kind="training", policy_file="", iteration=iteration, final=False,
                    num_envs=session.plan.num_envs, rows=session.plan.rows, seed=seed, overrides=session.settings,
                    wall_time_s=time.perf_counter() - t0, actor=session.loaded.deployed_actor,
                    robot=robot_settings(getattr(session.loaded.cfg, "robot", None)),
                )  # fmt: skip
                msg: dict[str, Any] = {"record": record}
                try:
                    entry = best.offer(policy, iteration, record)
                    if entry is not None:
                        msg["best"] = entry
                except Exception as exc:  # noqa: BLE001 - the evaluation itself stands; reported
                    msg["best_error"] = f"{type(exc).__name__}: {exc}"
                results.put(msg)
            except Exception as exc:  # noqa: BLE001 - reported to the trainer
                results.put({"error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"})
    finally:
        session.close()


class BestPolicy:
    """``policy_best.onnx`` of a run (:data:`BEST_POLICY`): the best-evaluated snapshot so far.

    A snapshot replaces the file when it evaluates at least as well as every snapshot before it:
    a pass beats no pass, then the higher headline, and of equals the later (more training).

    Args:
        run_dir: the run directory (its ``run_config.json`` gives the export metadata).
        group: the policy's observation group.
    """

    def __init__(self, run_dir: Path, group: str) -> None:
        self.path = Path(run_dir) / BEST_POLICY
        self.group = group
        self.key: tuple[bool, float] | None = None  # (passed, headline) of the snapshot in the file
        self._metadata: dict[str, Any] | None = None  # the run's export metadata, made once

    def offer(self, policy, iteration: int, record: dict[str, Any]) -> dict[str, Any] | None:
        """Write ``policy`` (the CPU snapshot of ``iteration``, evaluated as ``record``) when it is
        the best so far.

        Returns:
            what ``eval_during_training.best`` records (``file``, ``suite``, ``iteration``,
            ``headline``, ``passed``), or None when the file keeps an earlier, better snapshot.

        Raises:
            unilab.deploy.export.ExportError: the export or the ONNX checker failed (the file
                keeps the previous best).
        """
        key = (bool(record["passed"]), float(record["headline"]))
        if self.key is not None and key < self.key:
            return None
        if self._metadata is None:
            self._metadata = _export_metadata(self.path.parent, self.group)
        entry = _write_best(policy, self._metadata, iteration, record, self.path)
        self.key = key
        return entry


def _export_metadata(run_dir: Path, group: str) -> dict[str, Any]:
    """The metadata ``unilab export`` writes for this run's policies: built from an env of the
    run's config with the play settings (not the suite's), one row, closed again."""
    from unilab.deploy.export import policy_metadata
    from unilab.deploy.loading import make_env, run_config

    loaded = run_config(run_dir, (), checkpoint=run_dir / "run_config.json", play=True)
    env = make_env(loaded, 1)
    try:
        return policy_metadata(loaded, env, group)
    finally:
        env.close()


def _write_best(policy, metadata: dict[str, Any], iteration: int, record: dict[str, Any], path: Path) -> dict[str, Any]:
    """Export ``policy`` (the snapshot of ``iteration``, evaluated as ``record``) to ``path``;
    return what ``eval_during_training.best`` records.

    Raises:
        unilab.deploy.export.ExportError: the export or the ONNX checker failed.
    """
    import copy

    from unilab.deploy.export import export_onnx

    selection = {"by": "evaluation during training", "suite": record["suite"], "iteration": iteration,
                 "headline": record["headline"], "passed": record["passed"]}
    meta = copy.deepcopy(metadata)
    meta["source"].update(iteration=iteration, checkpoint=None)
    meta["selection"] = selection
    export_onnx(policy, int(meta["observation"]["dim"]), path, meta)
    return {"file": path.name, **{k: v for k, v in selection.items() if k != "by"}}


__all__ = ["BEST_POLICY", "FINAL_WAIT_S", "BestPolicy", "TrainingEvaluator"]


class EvalHooks(RunnerHooks):
    """A :class:`TrainingEvaluator` in a runner's loop: a snapshot handed over and finished
    results taken after each iteration; at the end a completed run's final policy evaluated and
    the worker ended.

    Args:
        evaluator: the evaluator (off when its interval is 0: then every call returns at once).
        learner: the learner whose deterministic policy is evaluated.
    """

    def __init__(self, evaluator: TrainingEvaluator, learner) -> None:
        self.evaluator, self.learner = evaluator, learner

    def on_iteration(self, iteration: int, metrics: dict[str, float], summary) -> None:
        self.evaluator.maybe_start(iteration, self.learner)  # the suite on a snapshot, in a background process
        self.evaluator.poll()

    def on_end(self, summary) -> None:
        # A completed run's final policy is evaluated too; any other end only stops the worker.
        completed = summary.status == "normal_completion"
        self.evaluator.close(self.learner if completed else None, summary.iterations)
