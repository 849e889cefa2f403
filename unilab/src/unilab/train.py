"""``unilab train``: compose a run from its parts and always leave a checkpoint and a truthful
``run_summary.json`` behind.

::

    prepare     plugins + validated config            unilab.build   (nothing written yet)
    plan        settings, device, seed, threads, env factory, checkpoint to resume
    build       env, learner (resumed, joined to the other ranks)
    run dir     run_config.json, run_summary.json (status: running)          unilab.runs
    learn       the runner's loop; its hooks write metrics, checkpoints,   unilab_rl.runner
                the summary and the progress display                        unilab.run_hooks
    after       play video + ONNX export of the last checkpoint            unilab.deploy

A bad name, key or value exits with one line and no run directory; a run that ends for any
reason records why (``status``, ``error``) with its last checkpoint.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import torch

from unilab import ddp, runs
from unilab.build import (
    RunPlan, algo_settings, build_env, build_learner, plan, prepare, seed_everything, thread_split,
    warn_ignored_runtime_keys,
)
from unilab.errors import RunFailed, UserError
from unilab.interrupts import Interrupts, TrainingInterrupted
from unilab.progress import make_progress
from unilab.resume import curriculum_start
from unilab.run_hooks import RankHooks, RunDirHooks
from unilab_rl.async_runtime import collector_policy_device
from unilab_rl.runner import LearnSummary, RunnerHooks, make_runner

log = logging.getLogger(__name__)


def train(
    algo: str,
    task: str,
    sim: str,
    overrides: list[str] | None = None,
    preset: str | None = None,
    argv: list[str] | None = None,
) -> Path | None:
    """Train and return the run directory (None on a rank other than 0 of several: only rank 0
    writes one; :mod:`unilab.ddp`).

    Raises:
        UserError: bad input, before any run directory exists.
        TrainingInterrupted: after saving, when SIGINT/SIGTERM stopped the run.
        RunFailed: the machine failed the run (a full disk), after recording it.
    """
    algo_reg, task_reg, backend_reg, cfg = prepare(algo, task, sim, overrides or [], preset)
    settings = algo_settings(algo_reg, cfg)  # every value checked before any process group or file exists
    warn_ignored_runtime_keys(overrides or [], settings[1])
    try:  # joins the process group when this process is one of several ranks (torchrun)
        dctx = ddp.setup(cfg.training.devices, cfg.training.device, cfg.sim.cpu_ids)
    except ddp.DevicesError as exc:
        raise UserError(str(exc)) from None
    try:
        p = plan(algo, task, sim, algo_reg, task_reg, backend_reg, cfg, dctx, settings)
        run_dir = _train(p, argv)
    finally:
        dctx.close()
    if dctx.enabled and not dctx.is_main:
        _end_rank_process()
    return run_dir


def _train(p: RunPlan, argv: list[str] | None) -> Path | None:
    """Build, learn, then (rank 0) play and export."""
    env = build_env(p)
    try:
        learner, resume = build_learner(p, env)
        interrupts = Interrupts()
        if not p.dctx.is_main:
            _learn(p, env, learner, RankHooks(interrupts, p.dctx, p.cfg.training.log_interval,
                                              p.cfg.training.max_iterations), interrupts)
            p.dctx.check_identical(learner)
            return None
        run_dir, summary = _open_run_dir(p, env, learner, resume, argv)
        _learn_into(run_dir, summary, p, env, learner, interrupts)
    finally:
        env.close()
    p.dctx.close()  # the other ranks are done; play and export are rank 0's alone
    if not p.cfg.training.no_play:  # video + ONNX of the last checkpoint; failures are recorded only
        from unilab.deploy import after_training

        after_training(run_dir)
    return run_dir


def _learn(p: RunPlan, env, learner, hooks: RunnerHooks, interrupts: Interrupts) -> LearnSummary:
    """Run the runner ``runtime.mode`` asks for up to ``training.max_iterations``."""
    training = p.cfg.training
    max_len = getattr(env, "max_episode_length", None)
    runner = make_runner(
        env, learner, p.runtime, env_fn=p.env_fn, env_seed=p.seed, hooks=hooks,
        log_interval=training.log_interval, checkpoint_interval=training.checkpoint_interval,
        steps_per_iteration=env.num_envs * p.dctx.world_size,  # all ranks step in lock-step
        # The walking milestone: mean episode length at 90 % of the time-out (900 of 1000 steps).
        goal_episode_length=round(0.9 * max_len) if max_len else None,
    )
    with interrupts.installed():
        return runner.learn(training.max_iterations - learner.iteration)


def _learn_into(run_dir: Path, summary: runs.RunSummary, p: RunPlan, env, learner, interrupts: Interrupts) -> None:
    """Rank 0's loop, written into ``run_dir`` and its ``summary``.

    Raises:
        RunFailed: an ``OSError`` (a full disk) stopped the run or kept its last checkpoint out.
    """
    from unilab.divergence import DivergenceHooks, DivergenceMonitor
    from unilab.eval.training import EvalHooks, TrainingEvaluator

    training = p.cfg.training
    steps_per_iteration = env.num_envs * p.dctx.world_size
    hooks = RunDirHooks(
        run_dir, learner, {"algo": p.algo, "task": p.task, "config": p.cfg.model_dump(mode="json")},
        training.keep_checkpoints, summary, make_progress(training.progress, training.max_iterations,
                                                          steps_per_iteration, start=learner.iteration),
        interrupts, p.dctx, training.log_interval, training.max_iterations,
        curriculum=curriculum_start(p.cfg, getattr(p.task_reg.item, "curricula", ())),
    )
    evaluator = TrainingEvaluator.for_run(p.cfg, p.task_reg, run_dir, steps_per_iteration, hooks.writer, summary.update)
    hooks.extra += [DivergenceHooks(DivergenceMonitor(env.num_envs), summary, training.log_interval,
                                    training.max_iterations),  # rank 0's worlds
                    EvalHooks(evaluator, learner)]
    try:
        result = _learn(p, env, learner, hooks, interrupts)
    except (OSError, MemoryError, torch.OutOfMemoryError) as exc:  # the machine's fault, recorded as "failed"
        raise RunFailed(summary.data.get("error") or str(exc), run_dir) from exc
    if p.dctx.enabled:  # a real check, recorded: every rank's learner state hashes the same
        identical = p.dctx.check_identical(learner)
        summary.update(ranks_identical=identical)
        if not identical:
            log.warning("the ranks' learner states differ at the end of training")
    if result.status == "failed":  # the final checkpoint could not be saved
        raise RunFailed(result.error, run_dir)


def _open_run_dir(p: RunPlan, env, learner, resume: dict | None,
                  argv: list[str] | None) -> tuple[Path, runs.RunSummary]:
    """Create the run directory with ``run_config.json`` and a ``run_summary.json`` at
    ``status: running``; returns both."""
    run_dir = runs.create_run_dir(p.cfg.training.log_dir, p.algo, p.task, p.sim)
    print(f"run directory: {run_dir}", file=sys.stderr, flush=True)
    if resume:
        print(f"resumed from {resume['path']} at iteration {resume['iteration']}", file=sys.stderr, flush=True)
        for line in p.resume_lines:  # where the env curricula start
            print(line, file=sys.stderr, flush=True)
    plugins = {kind: {"name": reg.name, "distribution": reg.distribution, "version": reg.version}
               for kind, reg in (("algo", p.algo_reg), ("task", p.task_reg), ("sim", p.backend_reg),
                                 ("robot", _robot_registration(p.cfg))) if reg is not None}
    runs.write_json(run_dir / "run_config.json", {
        "command": argv if argv is not None else sys.argv,
        "algo": p.algo, "task": p.task, "sim": p.sim,
        "config": p.cfg.model_dump(mode="json"),
        "plugins": plugins,
        "workspace": runs.workspace_state(),
        "hardware": runs.hardware_info(),
        "data": runs.task_data_files(p.task_reg.item, p.cfg.env),
        "resumed_from": resume,
        "distributed": p.dctx.summary(),
    })
    dctx, device = p.dctx, p.device
    summary = runs.RunSummary(run_dir / "run_summary.json", {
        "algo": p.algo, "task": p.task, "sim": p.sim,
        "num_envs": env.num_envs,
        "world_size": dctx.world_size,
        "devices": dctx.devices or [str(device)],
        "num_envs_total": env.num_envs * dctx.world_size,
        "env_device": str(env.device),
        "env_public_device": str(env.device),
        "learner_device": str(device),
        "tensor_native_env": p.tensor_native,
        "cuda_context_initialized": torch.cuda.is_initialized(),
        "compile_backend": learner.compile_backend,
        "cuda_graphs": False,  # set at the end: captured lazily by the first updates
        "runtime": p.runtime.mode,
        "threads": p.threads,
        "collector_policy_device": (collector_policy_device(p.runtime.policy_device, device)
                                    if p.runtime.mode == "async" else None),
        "resumed_from": resume,
        "start_iteration": learner.iteration,
    })
    return run_dir, summary


def _robot_registration(cfg):
    """The registration of the run's robot (``robot.name``), for ``run_config.json``'s
    ``plugins``; None when the config has no robot section or the name does not resolve."""
    from unilab.robots import RobotModelError, robot_registration

    name = getattr(getattr(cfg, "robot", None), "name", None)
    if name is None:
        return None
    try:
        return robot_registration(name)
    except RobotModelError:
        return None


def _end_rank_process() -> None:
    """End a rank other than 0 after its work is done and closed (env, process group), skipping the
    interpreter's finalization: there, torch's distributed (gloo) objects' threads occasionally
    aborted the rank with "terminate called without an active exception" after a complete run.
    Such a rank writes no files; its streams are flushed first."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


__all__ = ["TrainingInterrupted", "UserError", "prepare", "seed_everything", "thread_split", "train"]
