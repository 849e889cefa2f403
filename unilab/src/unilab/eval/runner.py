"""``unilab eval``: the run's env with a suite's evaluation settings, the deterministic policy from
a checkpoint or an exported ``policy.onnx``, the suite's rollout, the report.

    unilab eval latest
    unilab eval logs/sac/g1_walk_flat/RUN --checkpoint model_3000.pt --case yaw+0.5,yaw-0.5
    unilab eval RUN --checkpoint policy.onnx --num-envs 8 --json walk.json

:class:`EvalSession` holds one suite's env for one run and evaluates any number of policies in it
(the evaluation during training reuses it for every snapshot); :func:`evaluate` is the command.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from unilab.config import layer_overrides
from unilab.eval.policy import (
    OnnxPolicy,
    check_onnx_layout,
    final_policy_file,
    iteration_of,
    load_checkpoint,
    onnx_source,
    read_metadata,
    resolve_policy_file,
    torch_policy,
)
from unilab.eval.report import make_record, print_report, record_in_summary, write_record
from unilab.eval.suite import EvalContext, EvalSuite, Plan, Policy, SuiteResult, pick_suite
from unilab.robots import robot_settings


def task_suites(task_reg) -> tuple[EvalSuite, ...]:
    """The suites a task registration declares (``TaskSpec.eval_suites``)."""
    return tuple(getattr(task_reg.item, "eval_suites", ()) or ())


@dataclass
class EvalSession:
    """One suite's env for one run: build once, evaluate policies in it.

    Args:
        run_dir: the run directory (``run_config.json``).
        suite_name: suite name (None: the task's first), or a suite object (e.g. one of the task's
            with other durations).
        cases: case names (None: all).
        num_envs: rows per case (None: the suite's default).
        seed: seed of the env's generator, set again before every evaluation (so every policy
            meets the same draws).
        overrides: extra ``key=value`` settings (e.g. ``sim.nthread=1``) over the suite's.
        payload: a checkpoint's payload whose ``algo``, ``task`` and ``config`` win over
            ``run_config.json`` (None: the run's config).
        checkpoint: the file the session names as its policy (for messages).
        for_training: ``num_envs`` None means the suite's ``training_num_envs`` (else its
            ``default_num_envs``).

    Raises:
        UserError: no such suite or case, a task without suites, or an env that cannot be built.
    """

    run_dir: Path
    suite_name: str | EvalSuite | None = None
    cases: list[str] | None = None
    num_envs: int | None = None
    seed: int = 0
    overrides: tuple[str, ...] = ()
    payload: dict[str, Any] | None = None
    checkpoint: Path | None = None
    for_training: bool = False
    suite: EvalSuite = field(init=False)
    plan: Plan = field(init=False)
    loaded: Any = field(init=False)
    trained_robot: dict[str, Any] = field(init=False)
    env: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        from unilab.deploy.loading import make_env, run_config

        self.run_dir = Path(self.run_dir)
        checkpoint = self.checkpoint or self.run_dir / "run_config.json"
        base = run_config(self.run_dir, (), checkpoint=checkpoint, payload=self.payload, play=False)
        if isinstance(self.suite_name, EvalSuite):
            self.suite = self.suite_name
        else:
            self.suite = pick_suite(task_suites(base.task_reg), self.suite_name, base.task)
        self.trained_robot = robot_settings(getattr(base.cfg, "robot", None))  # before any robot.* override
        num_envs = self.num_envs
        if num_envs is None and self.for_training:
            num_envs = self.suite.training_num_envs
        self.plan = self.suite.plan(base.cfg, self.cases, num_envs)
        self._settings = layer_overrides(self.plan.overrides, [f"training.seed={self.seed}"], self.overrides)
        self.loaded = run_config(self.run_dir, self._settings, checkpoint=checkpoint, payload=self.payload, play=False)
        self._make_env = make_env
        self._cache: dict[str, Any] = {}
        self.env = make_env(self.loaded, self.plan.rows)

    @property
    def settings(self) -> list[str]:
        """The ``key=value`` settings the env was built with over the run's config."""
        return list(self._settings)

    def build_env(self, overrides: list[str], num_envs: int):
        """Another env of this run with the session's settings and ``overrides`` on top."""
        from unilab.deploy.loading import run_config

        loaded = run_config(self.run_dir, layer_overrides(self._settings, overrides), checkpoint=self.loaded.checkpoint,
                            payload=self.payload, play=False)
        return self._make_env(loaded, num_envs)

    def run(self, policy: Policy, group: str = "actor", progress: Callable[[int, int], None] | None = None) -> SuiteResult:
        """Evaluate ``policy`` (raw observations of ``group`` -> actions, CPU) with the suite.

        The policy runs on one torch thread meanwhile (a batch of a few dozen rows gains nothing
        from more, and more compete with the physics threads).
        """
        generator = getattr(self.env, "generator", None)
        if generator is not None:
            generator.manual_seed(self.seed)
        ctx = EvalContext(cfg=self.loaded.cfg, plan=self.plan, group=group, seed=self.seed,
                          build_env=self.build_env, progress=progress, cache=self._cache)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self.suite.run(self.env, policy, ctx)
        finally:
            torch.set_num_threads(threads)

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None


@dataclass
class EvalReport:
    """What :func:`evaluate` did: the suite's result, its JSON record and where it was written."""

    result: SuiteResult
    record: dict[str, Any]
    json_path: Path


def evaluate(
    run: str,
    *,
    checkpoint: str | None = None,
    suite: str | None = None,
    cases: list[str] | None = None,
    num_envs: int | None = None,
    json_path: str | Path | None = None,
    log_dir: str | Path = "logs",
    seed: int = 0,
    print_table: bool = True,
    show_progress: bool | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    transfer: bool = False,
) -> EvalReport:
    """Evaluate a run's policy with one of its task's suites; print, write and record the result.

    Args:
        run: run directory or ``latest`` (the newest run under ``log_dir``).
        checkpoint: ``model_<N>.pt``, ``model_last.pt`` or an ``.onnx`` file, in the run or a path
            (default: ``model_last.pt``, else the newest checkpoint, else ``policy.onnx``).
        suite: suite name (default: the task's first).
        cases: case (walking) or clip (tracking) names; None: all.
        num_envs: rows per case (walking) or random-start rows per clip (tracking).
        json_path: where the JSON record goes (default ``<run>/eval_<suite>.json`` for the final
            policy, ``<run>/eval_<suite>_<iteration>.json`` otherwise; with ``cases``,
            ``eval_<suite>_cases.json`` and ``eval_<suite>_cases_<iteration>.json``).
        seed: seed of the env's generator and the suite's draws.
        print_table: print the report on stdout.
        show_progress: a progress bar on stderr (None: when stderr is a terminal).
        overrides: ``robot.mjcf=FILE`` alone, the run's model file at a new path
            (:func:`unilab.deploy.loading.model_file_overrides`); the record's ``robot`` block and
            ``overrides`` name the file used. With ``transfer``: the robot model to evaluate on
            instead of the run's (:func:`unilab.deploy.loading.transfer_overrides`).
        transfer: a sim-to-sim transfer check: the policy is evaluated on the robot model the
            ``robot.*`` overrides describe (its observation and action layout checked against the
            env as for any evaluation). Its record (``transfer``: the settings, the trained and
            evaluated robots) goes to ``<run>/eval_<suite>_transfer.json`` by default (with
            ``cases``, ``eval_<suite>_cases_transfer.json``; another checkpoint's iteration after
            them) and never into ``run_summary.json``: the run's own score stays its own.

    Returns:
        The :class:`EvalReport`. A whole-suite record (no ``cases``, no ``transfer``) also goes
        into ``run_summary.json`` (:func:`unilab.eval.report.record_in_summary`).

    Raises:
        UserError: no such run, file, suite or case; a checkpoint or ONNX that does not fit the
            run's task or observation (on the transfer model too); an override other than
            ``robot.mjcf`` (with ``transfer``: other than ``robot.mjcf``, ``robot.feet``,
            ``robot.actuators``), or a value those settings do not take; an env that cannot be
            built (one line each).
    """
    import sys

    from unilab import runs
    from unilab.deploy.loading import model_file_overrides, transfer_overrides, transfer_summary
    from unilab.errors import UserError

    overrides = transfer_overrides(overrides) if transfer else model_file_overrides(overrides, "eval")

    try:
        run_dir = runs.resolve_run_dir(run, log_dir)
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    from unilab.deploy.loading import read_run_config

    task = read_run_config(run_dir).get("task")
    path = resolve_policy_file(run_dir, checkpoint)
    onnx = path.suffix == ".onnx"
    payload = None if onnx else load_checkpoint(path)
    meta = None
    if onnx:
        meta = read_metadata(path)
        onnx_source(meta, path, task)
    elif payload.get("task") not in (None, task):
        raise UserError(f"{path} is a {payload.get('task')!r} checkpoint; the run {run_dir} is a {task!r} run")
    t0 = time.perf_counter()
    session = EvalSession(run_dir, suite, cases, num_envs, seed, tuple(overrides), payload=payload, checkpoint=path)
    try:
        if onnx:
            policy: Policy = OnnxPolicy(path)
            group = check_onnx_layout(meta, policy, session.env, path)  # type: ignore[arg-type]
        else:
            policy, group = torch_policy(session.loaded, session.env)
        progress, bar = _progress(show_progress if show_progress is not None else sys.stderr.isatty())
        try:
            result = session.run(policy, group, progress)
        finally:
            if bar is not None:
                bar.stop()
    finally:
        session.close()
    final = final_policy_file(run_dir, path)
    iteration = iteration_of(path, payload, meta)
    from unilab.deploy.loading import deployed_actor, relative_to_run

    robot = robot_settings(getattr(session.loaded.cfg, "robot", None))
    # an ONNX file says which actor it holds (exports before that key: the run's setting)
    ema = (meta or {}).get("source", {}).get("actor_ema")
    actor = session.loaded.deployed_actor if ema is None else deployed_actor(float(ema))
    moved = None
    if transfer:
        moved = {"settings": list(overrides), "trained_robot": session.trained_robot,
                 "text": transfer_summary(overrides, session.trained_robot, robot)}
    record = make_record(
        result, run_dir=run_dir, task=session.loaded.task, algo=session.loaded.algo,
        policy_kind="onnx" if onnx else "checkpoint", policy_file=relative_to_run(path, run_dir),
        iteration=iteration, final=final, num_envs=session.plan.num_envs, rows=session.plan.rows, seed=seed,
        overrides=session.settings, wall_time_s=time.perf_counter() - t0,
        robot=robot, transfer=moved, actor=actor, data_changes=session.loaded.data_changes,
    )  # fmt: skip
    # A run's eval_<suite>.json and run_summary.json hold whole-suite records of the model and
    # data it trained on; a --case selection goes to eval_<suite>_cases[_<iteration>].json, a
    # transfer to eval_<suite>[_cases]_transfer[_<iteration>].json, an env built from data files
    # that changed since training to eval_<suite>[_cases][_transfer]_data_changed[_<iteration>].json,
    # and each leaves them as they are.
    stem = f"eval_{result.suite}_cases" if cases else f"eval_{result.suite}"
    stem += "_transfer" if transfer else ""
    stem += "_data_changed" if session.loaded.data_changes else ""
    name = f"{stem}.json" if final else f"{stem}_{iteration}.json"
    out = write_record(Path(json_path) if json_path else run_dir / name, record)
    if not cases and not transfer and not session.loaded.data_changes:
        record_in_summary(run_dir, record)
    if print_table:
        print_report(result, record)
        print(f"record: {out}")
    return EvalReport(result=result, record=record, json_path=out)


def _progress(enabled: bool):
    """A transient rich progress bar on stderr: (callback, bar) or (None, None)."""
    if not enabled:
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task("eval", total=None)
    bar.start()

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return update, bar


__all__ = ["EvalReport", "EvalSession", "evaluate", "task_suites"]
