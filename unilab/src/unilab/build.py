"""Everything a training run needs, resolved and checked before anything is written: the plugins,
the validated config, the algorithm's and the runtime's settings, the device, the seed, the thread
split, the env factory and the checkpoint to resume from; then the env and the learner.

A bad name, key or value raises :class:`~unilab.errors.UserError` (one line) before any run
directory exists.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel

from unilab import ddp, memory
from unilab.config import (
    ConfigError, UnknownKeyError, build_run_model, owner_config_files, parse_overrides, resolve_config,
)
from unilab.errors import UserError
from unilab.plugins import ALGORITHMS, BACKENDS, TASKS, lookup
from unilab.resume import apply_resume, find_resume_checkpoint, read_resume_checkpoint, resume_curricula
from unilab_rl.device import is_auto, resolve_device, warn_cpu_learner
from unilab_rl.learner import Learner
from unilab_rl.runtime import ASYNC_ONLY, RuntimeConfig
from unisim import CapabilityError

log = logging.getLogger(__name__)


def prepare(algo: str, task: str, sim: str, overrides: list[str], preset: str | None = None):
    """Resolve the three plugins and the validated run config (no side effects).

    Returns:
        (algo registration, task registration, backend registration, config)

    Raises:
        UserError: unknown algo/task/backend/preset, unknown key or invalid value.
    """
    backend_reg = lookup(BACKENDS, sim, "--sim")
    algo_reg = lookup(ALGORITHMS, algo, "--algo")
    task_reg = lookup(TASKS, task, "--task")
    model = build_run_model(algo_reg.item.config_cls, task_reg.item.config_cls)
    try:
        files = owner_config_files(task_reg.item.owner_configs, algo, sim, preset)
        cfg = resolve_config(model, files, overrides)
    except UnknownKeyError as exc:
        raise UserError(_other_algorithms_key(exc, algo) or str(exc)) from None
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    return algo_reg, task_reg, backend_reg, cfg


def _other_algorithms_key(exc: UnknownKeyError, algo: str) -> str | None:
    """For an unknown ``algo.<name>`` that other registered algorithms have (e.g. SAC's
    ``critic_reduction`` given with ``--algo flashsac``), the error naming them instead of the
    closest spelling; else None."""
    section, _, rest = exc.key.partition(".")
    name = rest.split(".", 1)[0]
    if section != "algo" or not name:
        return None
    owners = [reg.name for reg in ALGORITHMS.registrations()
              if reg.name != algo and dataclasses.is_dataclass(reg.item.config_cls)
              and name in {f.name for f in dataclasses.fields(reg.item.config_cls)}]
    if not owners:
        return None
    return (f"unknown key {exc.key!r} in {exc.source}: it is a setting of --algo {' and --algo '.join(owners)}, "
            f"not of --algo {algo}")


def algo_config(algo_reg, cfg: BaseModel) -> Any:
    """The algorithm's hyperparameters as its config dataclass, its range checks as one-line
    errors naming ``algo.<key>``.

    Raises:
        UserError: the first value out of range.
    """
    name = algo_reg.item.config_cls.__name__
    try:
        return algo_reg.item.config_cls(**cfg.algo.model_dump())
    except ValueError as exc:
        # The dataclass names its fields as "<ConfigClass>.<field>"; the user typed "algo.<field>".
        message = str(exc).replace(f"{name}.", "algo.")
        raise UserError(message if "algo." in message else f"algo: {message}") from None


def algo_settings(algo_reg, cfg: BaseModel) -> tuple[Any, RuntimeConfig]:
    """The algorithm's hyperparameters (its config dataclass) and the runtime settings, with their
    range checks as one-line errors naming ``algo.<key>`` / ``runtime.<key>``; then the checks
    across sections (:func:`check_schedule`, shards against ``training.num_envs``, pinned cores
    against several collectors).

    Raises:
        UserError: the first value out of range or combination that cannot work.
    """
    algo_cfg = algo_config(algo_reg, cfg)
    try:
        runtime = RuntimeConfig(**cfg.runtime.model_dump())
        runtime.check_num_envs(cfg.training.num_envs)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    check_schedule(algo_cfg, cfg.training.max_iterations)
    if runtime.mode == "async" and runtime.num_collectors > 1 and cfg.sim.cpu_ids:
        raise UserError(
            f"sim.cpu_ids={cfg.sim.cpu_ids} with runtime.num_collectors={runtime.num_collectors}: every "
            f"collector would pin its physics threads to the same cores; leave sim.cpu_ids unset (the "
            f"collectors share the free cores) or use runtime.num_collectors=1"
        )
    return algo_cfg, runtime


def warn_ignored_runtime_keys(overrides: list[str], runtime: RuntimeConfig) -> list[str]:
    """Warn (one line each) about the command line's ``runtime.<key>=...`` that this run ignores:
    the asynchronous runtime's settings (:data:`unilab_rl.runtime.ASYNC_ONLY`) in a
    ``runtime.mode=sync`` run, e.g. ``runtime.policy_device=server`` with ``--preset laptop``.
    Keys set by owner YAMLs are not named: a preset switching to sync does not warn about the
    settings it leaves unused.

    Returns:
        the keys warned about, dotted (``runtime.policy_device``), in the order given.
    """
    if runtime.mode != "sync":
        return []
    given = parse_overrides(overrides).get("runtime", {})
    ignored = [f"runtime.{key}" for key in given if key in ASYNC_ONLY]
    for key in ignored:
        log.warning("%s=%s is a setting of the async runtime; this run is runtime.mode=sync, which "
                    "ignores it (add runtime.mode=async to use it)", key, getattr(runtime, key.split(".", 1)[1]))
    return ignored


def check_schedule(algo_cfg: Any, max_iterations: int) -> None:
    """Refuse a run that could never update: the runner starts updating once the replay buffer
    holds ``learning_starts`` transitions per env, which a buffer of ``buffer_size_per_env`` per
    env smaller than that never does (the algorithm itself allows it, for collection-only use).
    Warn when the run ends before its first update."""
    size = getattr(algo_cfg, "buffer_size_per_env", None)
    starts = getattr(algo_cfg, "learning_starts", None)
    if isinstance(size, int) and isinstance(starts, int) and size < starts:
        raise UserError(
            f"algo.buffer_size_per_env={size} is smaller than algo.learning_starts={starts}: updates "
            f"start once the buffer holds learning_starts transitions per env, so this run would "
            f"never update; set algo.buffer_size_per_env>={starts} or algo.learning_starts<={size}"
        )
    if isinstance(starts, int) and max_iterations <= starts:
        # Allowed (measuring collection alone), but a smoke run that never learns should say so.
        log.warning(
            "training.max_iterations=%d <= algo.learning_starts=%d: this run collects with random "
            "actions (the first updates come in iteration learning_starts, and the policy acts "
            "from the next one); the policy it saves is untrained",
            max_iterations, starts,
        )


def check_log_dir(log_dir: str) -> None:
    """Make sure run directories can be created under ``log_dir`` before anything is built,
    leaving nothing behind: the folders this check creates are removed again, so that a start
    that fails later (a bad model file, an agent that cannot be built) writes nothing. The run
    directory and its parents are created once the env and the learner are built
    (:func:`unilab.runs.create_run_dir`).

    Raises:
        UserError: ``log_dir`` cannot be created or is not writable.
    """
    path = Path(log_dir)
    created = [folder for folder in (path, *path.parents)  # deepest first
               if folder.name not in ("", ".", "..") and not folder.exists()]
    try:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"training.log_dir={log_dir!r} cannot be created: {exc.strerror}") from None
        if not os.access(log_dir, os.W_OK):
            raise UserError(f"training.log_dir={log_dir!r} is not writable")
    finally:
        for folder in created:
            try:
                folder.rmdir()  # only empty folders: one another process filled in the meantime stays
            except OSError:
                pass


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (all devices). numpy takes ``seed mod 2**32`` (its range; a
    rank's seed, ``training.seed`` plus an offset, may pass it), the others the seed itself."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def thread_split(runtime: str, nthread: int, collector_threads: int, learner_threads: int,
                 device: torch.device, num_collectors: int = 1) -> dict[str, int]:
    """CPU threads for physics, the collectors' policy and the learner.

    Sync: physics gets ``nthread`` (0 = every available core) and the learner keeps torch's
    default. Async: collector and learner threads are taken out first so neither starves the
    other: the learner gets ``learner_threads`` or, when 0, 1 on an accelerator and half of the
    cores left after the collectors on the CPU; physics gets ``nthread`` or, when 0, what remains
    (at least 1). With ``num_collectors`` > 1 collector processes, their policy threads
    (``collector_threads`` each) are all taken out, and ``physics`` stays the total physics
    threads: each collector gets ``max(1, physics // num_collectors)`` (:func:`plan`).

    Returns:
        ``{"physics": n, "collector": n, "learner": n}``; 0 means "torch's default" (sync only).
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if runtime != "async":
        return {"physics": nthread or cores, "collector": 0, "learner": 0}
    collectors = collector_threads * num_collectors
    learner = learner_threads or (1 if device.type != "cpu" else max(1, (cores - collectors) // 2))
    physics = nthread or max(1, cores - collectors - learner)
    return {"physics": physics, "collector": collector_threads, "learner": learner}


@dataclass
class RunPlugins:
    """A run's plugins and config: what training plans (:class:`RunPlan`) and what loading a
    finished run finds (:class:`unilab.deploy.loading.LoadedRun`).

    Attributes:
        algo, task, sim: the plugin names.
        algo_reg, task_reg, backend_reg: their registrations.
        cfg: the validated run config, every section (a pydantic model).
    """

    algo: str
    task: str
    sim: str
    algo_reg: Any
    task_reg: Any
    backend_reg: Any
    cfg: BaseModel


@dataclass
class RunPlan(RunPlugins):
    """A run resolved and checked, ready to build (:func:`plan`)."""

    algo_cfg: Any
    """The algorithm's hyperparameters (its config dataclass)."""
    runtime: RuntimeConfig
    dctx: ddp.DistContext
    device: torch.device
    seed: int
    """This rank's seed (``training.seed`` on rank 0)."""
    threads: dict[str, int]
    env_fn: functools.partial
    """Picklable env factory: the sync runtime builds its env with it, each async collector its shard."""
    tensor_native: bool
    resume_path: Path | None = None
    resume_payload: dict[str, Any] | None = None
    resume_lines: list[str] = dataclasses.field(default_factory=list)
    """Where a resumed run's env curricula start, one line each (:func:`unilab.resume.resume_curricula`),
    printed with the run directory."""
    cpu_fallback: bool = False
    """``training.device=auto`` found no accelerator: :func:`build_learner` warns once the env and
    the learner are built."""


def plan(algo: str, task: str, sim: str, algo_reg, task_reg, backend_reg, cfg: BaseModel,
         dctx: ddp.DistContext, settings: tuple[Any, RuntimeConfig] | None = None) -> RunPlan:
    """Check everything that can be checked without building (device, CUDA graphs, log directory,
    the checkpoint to resume, async against a device-native backend), seed the process, size the
    threads and make the env factory. A resumed run's config gets the env curricula's state the
    checkpoint recorded (:func:`unilab.resume.resume_curricula`): the env factory, and so every
    collector's env, starts where the checkpoint's envs were.

    Args:
        settings: :func:`algo_settings` of ``cfg`` when the caller made them already.

    Raises:
        UserError: what cannot work, naming the key.
    """
    algo_cfg, runtime = settings if settings is not None else algo_settings(algo_reg, cfg)
    if runtime.cuda_graph is True:
        name = str(dctx.device) if dctx.device is not None else cfg.training.device
        if not (name.startswith("cuda") or (name == "auto" and torch.cuda.is_available())):
            raise UserError(f"runtime.cuda_graph=true needs a CUDA learner device, got training.device={name}"
                            f"{' (no CUDA device here)' if name == 'auto' else ''}; use runtime.cuda_graph=auto "
                            f"(captures only on CUDA) or false")
    if dctx.is_main:
        check_log_dir(cfg.training.log_dir)
    resume_path = resume_payload = None
    resume_lines: list[str] = []
    if cfg.training.resume:
        resume_path = find_resume_checkpoint(cfg.training.resume, cfg.training.log_dir, algo, task)
        resume_payload = read_resume_checkpoint(resume_path, algo, task, cfg.training.max_iterations)
        cfg, resume_lines = resume_curricula(cfg, getattr(task_reg.item, "curricula", ()), resume_payload)
    seed = dctx.seed(cfg.training.seed)
    seed_everything(seed)
    try:
        # the CPU warning of training.device=auto waits until the env and the learner are built
        # (build_learner), so that bad input stays one error: line
        device = dctx.device if dctx.device is not None else resolve_device(cfg.training.device, warn=False)
    except ValueError as exc:
        raise UserError(f"training.device: {exc}") from None
    if device.type == "cuda":
        # TF32 matrix products for the learner (about 3e-4 relative error), as FlashSAC's code.
        torch.set_float32_matmul_precision("high")
    tensor_native = getattr(backend_reg.item.capabilities, "tensor_kind", "host_bridge") == "device_native"
    if runtime.mode == "async" and tensor_native:
        raise UserError(
            f"runtime.mode=async: --sim {sim} is device-native (physics on the accelerator); the async "
            f"collectors are CPU processes for host-bridge backends. Use runtime.mode=sync"
        )
    threads = _threads(runtime, cfg.sim.nthread, device)
    # A picklable factory (module-level function + plain arguments): each async collector builds
    # its own env with it (with several shards it overrides num_envs and seed per shard); the sync
    # runtime builds the one env from it.
    env_fn = functools.partial(
        task_reg.item.make_env,
        cfg.env,
        backend_cls=backend_reg.item,
        num_envs=cfg.training.num_envs,
        nthread=threads["physics_per_collector"] if runtime.mode == "async" else cfg.sim.nthread,
        cpu_ids=cfg.sim.cpu_ids,
        robot=cfg.robot,
        seed=seed,
    )
    cpu_fallback = dctx.device is None and device.type == "cpu" and is_auto(cfg.training.device)
    return RunPlan(algo, task, sim, algo_reg, task_reg, backend_reg, cfg, algo_cfg, runtime, dctx, device, seed,
                   threads, env_fn, tensor_native, resume_path, resume_payload, resume_lines, cpu_fallback)


def _threads(runtime: RuntimeConfig, nthread: int, device: torch.device) -> dict[str, int]:
    """:func:`thread_split` for these settings; async adds each collector's physics pool size, and
    the learner's torch threads are set here."""
    threads = thread_split(runtime.mode, nthread, runtime.collector_threads, runtime.learner_threads, device,
                           runtime.num_collectors)
    if runtime.mode == "async":  # sim.nthread stays the total; each collector's pool gets its share
        k = runtime.num_collectors
        per = max(1, threads["physics"] // k)
        if per * k > threads["physics"]:
            log.warning("%d collectors with at least one physics thread each use %d threads for %d planned "
                        "(sim.nthread or the free cores): cores are oversubscribed", k, per * k, threads["physics"])
        threads |= {"physics": per * k, "collectors": k, "physics_per_collector": per,
                    "collector_shards": runtime.collector_shards}
    if threads["learner"]:
        torch.set_num_threads(threads["learner"])
    return threads


def build_env(p: RunPlan):
    """The learner process's env (the sync runtime steps it; async reads its spaces), after the
    memory check (:mod:`unilab.memory`) on a one-world probe unless ``training.allow_large``.

    Raises:
        UserError: the run needs more memory than there is, the task cannot be built as
            configured, or the backend lacks a capability.
    """
    if not p.cfg.training.allow_large:  # before anything large is built: a one-world probe's sizes
        probe = _env(p, num_envs=1, nthread=1)
        try:
            local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1")) if p.dctx.enabled else 1
            memory.check(p.algo, p.algo_cfg, p.runtime, p.cfg.training.num_envs, probe, p.device, local_ranks)
        finally:
            probe.close()
    return _env(p)


def _env(p: RunPlan, **kwargs):
    try:
        return p.env_fn(**kwargs)
    except (ValueError, FileNotFoundError) as exc:
        raise UserError(f"could not build task {p.task!r}: {exc}") from None
    except CapabilityError as exc:
        raise UserError(
            f"--sim {p.sim}: {exc}; turn off what needs it (e.g. env.domain_randomization.enabled=false)"
        ) from None


def build_learner(p: RunPlan, env) -> tuple[Learner, dict[str, Any] | None]:
    """The learner for ``env``, restored from the resume checkpoint when there is one, and joined
    to the other ranks when there are several; then the warning that ``training.device=auto``
    found no accelerator, if it did not.

    Returns:
        (learner, ``{"path", "iteration"}`` of the resumed checkpoint or None).

    Raises:
        UserError: symmetry on a task without mirror rules, a checkpoint that does not fit, or an
            algorithm that cannot train on several ranks.
    """
    if getattr(p.algo_cfg, "symmetry", False):
        check_symmetry(env, p.task)
    try:
        learner = p.algo_reg.item.make_agent(env, dataclasses.replace(p.algo_cfg), device=p.device, runtime=p.runtime,
                                             max_iterations=p.cfg.training.max_iterations)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    except Exception as exc:
        if not memory.is_out_of_memory(exc):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"the learner could not allocate its memory on {p.device} ({first}); lower "
                        f"algo.buffer_size_per_env, training.num_envs or algo.batch_size") from None
    resume = None
    if p.resume_payload is not None:
        apply_resume(p.resume_path, p.resume_payload, learner)
        resume = {"path": os.path.abspath(p.resume_path), "iteration": learner.iteration}  # readable from anywhere
    if p.dctx.enabled:
        from unilab_rl import distributed

        try:
            distributed.attach(learner)
        except TypeError:
            raise UserError(f"training.devices: --algo {p.algo} cannot train on several ranks yet (sac can)") from None
        distributed.broadcast_state(learner)  # every rank starts from rank 0's learner
    if p.cpu_fallback:  # only now: bad input found while building stays the one error: line
        warn_cpu_learner()
    return learner, resume


def check_symmetry(env, task: str) -> None:
    """``algo.symmetry=true`` needs the task's env to offer a left/right mirror (``env.mirror``,
    :class:`unilab_rl.vecenv.Mirror`) that fits its observation groups and actions.

    Raises:
        UserError: naming ``algo.symmetry`` and the task, with the reason (e.g. the observation
            term that has no mirror rule).
    """
    from unilab_rl.vecenv import learner_mirror

    groups = {g: d for g, d in env.obs_dims.items() if g in ("actor", "critic")}
    try:
        learner_mirror(env, "the learner", groups, torch.device("cpu"))
    except ValueError as exc:
        reason = str(exc).removeprefix("algo.symmetry=true: ")
        raise UserError(f"algo.symmetry=true: task {task!r} does not support symmetry augmentation: {reason}") from None


__all__ = ["RunPlan", "algo_config", "algo_settings", "build_env", "build_learner", "check_log_dir", "check_schedule",
           "check_symmetry", "plan", "prepare", "seed_everything", "thread_split"]
