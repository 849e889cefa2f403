"""``unilab train``: resolve plugins and config, build env and learner, run, and always leave a
checkpoint and a truthful ``run_summary.json`` behind.

Nothing touches the disk until the plugins, the whole config, the env and the learner have been
built: a bad name, key or value exits with one line and no run directory.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch

from unilab import ddp, runs
from unilab.config import ConfigError, build_run_model, owner_config_files, resolve_config
from unilab.plugins import TASKS
from unilab_rl.async_runtime import COLLECTOR_PHASES, CollectorDied, collector_policy_device
from unilab_rl.device import resolve_device
from unilab_rl.registry import ALGORITHMS
from unisim import CapabilityError
from unisim._plugins import PluginError
from unisim._registry import BACKENDS

log = logging.getLogger(__name__)


class UserError(Exception):
    """A problem with what the user asked for; the CLI prints it as one line, exit code 2."""


class TrainingInterrupted(BaseException):
    """Raised in the main thread by SIGINT/SIGTERM so that the run saves and exits cleanly."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Interrupts:
    """SIGINT/SIGTERM handling of a training run.

    The first signal is held and raised as :class:`TrainingInterrupted` at the next safe point:
    the end of a :meth:`deferred` block, which wraps each iteration's bookkeeping (metric writes,
    checkpoint saves), so the loop stops between iterations rather than wherever the main thread
    was (inside torch.compile's frame evaluation or CUDA-graph bookkeeping, say). A second signal
    before that safe point (the loop is stuck, e.g. compiling), sent at least
    :attr:`duplicate_window_s` after the first, raises at once, outside a deferred block. Any signal once :attr:`closing` is set (final
    checkpoint and summary) is ignored, so the shutdown is never cut short.

    Native code can take the handlers over behind Python's back: LLVM inside Triton (each
    in-process Triton compile of torch.compile on CUDA) installs its own SIGINT/SIGTERM handler
    with SA_RESETHAND | SA_NODEFER, which restores the previous one and re-raises. Python still
    reports our handler, but while LLVM's runs the disposition is SIG_DFL, so a second signal a
    few microseconds after the first (GNU ``timeout`` signals the process, then its whole group)
    kills the process at once: no message, no final checkpoint, a summary left at "running".
    :meth:`deferred` therefore installs the handlers again at the start of each block (each
    iteration's bookkeeping, just after the iteration's compiles); two signal(2) calls.
    """

    def __init__(self) -> None:
        self.pending: int | None = None
        self.raised = False
        self.closing = False
        self._depth = 0
        self._installed = False
        self._first_at = 0.0

    duplicate_window_s = 0.5
    """A repeat within this many seconds of the first signal is the same request (GNU ``timeout``
    and a terminal's Ctrl-C signal the process and its group), not a second one."""

    def handler(self, signum, frame) -> None:  # noqa: ARG002
        if self.raised or self.closing:
            log.warning("%s ignored: already stopping", signal.Signals(signum).name)
            return
        if self.pending is None:
            self.pending = signum
            self._first_at = time.monotonic()
            log.warning("%s: stopping after this iteration (send it again to stop at once)",
                        signal.Signals(signum).name)
            return
        if time.monotonic() - self._first_at < self.duplicate_window_s:
            return  # the group copy of the first signal
        if self._depth:
            return  # inside a write: the block's end raises
        self.raised = True
        raise TrainingInterrupted(self.pending)

    def reinstall(self) -> None:
        """Install the handlers again (undoes a takeover by native code, see the class docs)."""
        if self._installed and threading.current_thread() is threading.main_thread():
            for s in _SIGNALS:
                signal.signal(s, self.handler)

    @contextmanager
    def deferred(self) -> Iterator[None]:
        if not self._depth:
            self.reinstall()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if not self._depth and self.pending is not None and not self.raised and not self.closing:
            self.raised = True
            raise TrainingInterrupted(self.pending)

    @contextmanager
    def installed(self) -> Iterator[None]:
        previous = {s: signal.signal(s, self.handler) for s in _SIGNALS}
        self._installed = True
        try:
            yield
        finally:
            self._installed = False
            for s, h in previous.items():
                signal.signal(s, h)


def _lookup(registry, name: str, flag: str):
    try:
        return registry.get(name)
    except KeyError as exc:
        raise UserError(f"{flag}: {exc.args[0]}") from None
    except PluginError as exc:  # strict mode: a broken plugin is fatal, reported as one line
        raise UserError(f"{flag}: {exc}") from None


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def prepare(algo: str, task: str, sim: str, overrides: list[str], preset: str | None = None):
    """Resolve the three plugins and the validated run config (no side effects).

    Returns:
        (algo registration, task registration, backend registration, config)

    Raises:
        UserError: unknown algo/task/backend/preset, unknown key or invalid value.
    """
    backend_reg = _lookup(BACKENDS, sim, "--sim")
    algo_reg = _lookup(ALGORITHMS, algo, "--algo")
    task_reg = _lookup(TASKS, task, "--task")
    model = build_run_model(algo_reg.item.config_cls, task_reg.item.config_cls)
    try:
        files = owner_config_files(task_reg.item.owner_configs, algo, sim, preset)
        cfg = resolve_config(model, files, overrides)
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    return algo_reg, task_reg, backend_reg, cfg


def _algo_config(algo_reg, cfg) -> Any:
    """The algorithm's own config object; its range checks become one-line errors."""
    if getattr(cfg.algo, "device", "auto") != "auto":
        raise UserError(
            f"algo.device={cfg.algo.device!r}: the learner device is set by training.device "
            f"(e.g. training.device={cfg.algo.device})"
        )
    try:
        return algo_reg.item.config_cls(**cfg.algo.model_dump())
    except ValueError as exc:
        # The dataclass names its fields as "<ConfigClass>.<field>"; the user typed "algo.<field>".
        message = str(exc).replace(f"{algo_reg.item.config_cls.__name__}.", "algo.")
        raise UserError(message if "algo." in message else f"algo: {message}") from None


def _check_schedule(algo_cfg: Any) -> None:
    """Refuse a run that could never update: the runner starts updating once the replay buffer
    holds ``learning_starts`` transitions per env, which a buffer of ``buffer_size_per_env`` per
    env smaller than that never does (the algorithm itself allows it, for collection-only use)."""
    size = getattr(algo_cfg, "buffer_size_per_env", None)
    starts = getattr(algo_cfg, "learning_starts", None)
    if isinstance(size, int) and isinstance(starts, int) and size < starts:
        raise UserError(
            f"algo.buffer_size_per_env={size} is smaller than algo.learning_starts={starts}: updates "
            f"start once the buffer holds learning_starts transitions per env, so this run would "
            f"never update; set algo.buffer_size_per_env>={starts} or algo.learning_starts<={size}"
        )
    iterations = getattr(algo_cfg, "max_iterations", None)
    if isinstance(iterations, int) and isinstance(starts, int) and iterations <= starts:
        # Allowed (measuring collection alone), but a smoke run that never learns should say so.
        log.warning(
            "algo.max_iterations=%d <= algo.learning_starts=%d: this run collects with random "
            "actions (the first updates come in iteration learning_starts, and the policy acts "
            "from the next one); the policy it saves is untrained",
            iterations, starts,
        )


def _check_log_dir(log_dir: str) -> None:
    """Make sure run directories can be created under ``log_dir`` before anything is built."""
    try:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"training.log_dir={log_dir!r} cannot be created: {exc.strerror}") from None
    if not os.access(log_dir, os.W_OK):
        raise UserError(f"training.log_dir={log_dir!r} is not writable")


def rng_state() -> dict[str, Any]:
    """Python, numpy, torch CPU and (when initialized) CUDA RNG states, for checkpoints.

    Only tensors, numbers, strings, tuples and dicts, so that ``torch.load(weights_only=True)``
    (play, export) still reads the checkpoint: numpy's key array is stored as an int64 tensor.
    """
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None,
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore :func:`rng_state` (the CUDA part only where CUDA is initialized with as many devices)."""
    random.setstate(state["python"])
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"],
                         n["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    cuda = state.get("cuda")
    if cuda is not None and torch.cuda.is_initialized() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)


def thread_split(runtime: str, nthread: int, collector_threads: int, learner_threads: int,
                 device: torch.device, num_collectors: int = 1) -> dict[str, int]:
    """CPU threads for physics, the collector's policy and the learner.

    Sync: physics gets ``nthread`` (0 = every available core) and the learner keeps torch's
    default. Async: collector and learner threads are taken out first so neither starves the
    other: the learner gets ``learner_threads`` or, when 0, 1 on an accelerator and half of the
    cores left after the collector on the CPU; physics gets ``nthread`` or, when 0, what remains
    (at least 1). With ``num_collectors`` > 1 collector processes, their policy threads
    (``collector_threads`` each) are all taken out, and ``physics`` stays the total physics
    threads: :func:`train` gives each collector ``max(1, physics // num_collectors)``.

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


def find_resume_checkpoint(resume: str, log_dir: str, algo: str, task: str) -> Path:
    """The checkpoint ``algo.resume`` names.

    Args:
        resume: ``"latest"`` (the newest ``model_last.pt`` under ``<log_dir>/<algo>/<task>/``), a
            run directory (its ``model_last.pt``) or a ``.pt`` file.

    Raises:
        UserError: nothing found there.
    """
    if resume == "latest":
        found = sorted(Path(log_dir, algo, task).glob("*/model_last.pt"), key=lambda p: p.stat().st_mtime)
        if not found:
            raise UserError(f"algo.resume=latest: no run with a model_last.pt under {Path(log_dir, algo, task)}")
        return found[-1]
    path = Path(resume)
    if path.is_dir():
        path = path / "model_last.pt"
    if not path.is_file():
        raise UserError(f"algo.resume={resume!r}: no such checkpoint ({path})")
    return path


def read_resume_checkpoint(path: Path, algo: str, task: str, max_iterations: int) -> dict[str, Any]:
    """Read a checkpoint to resume from and check that it can continue this run (before any env
    is built).

    Returns:
        the payload: ``agent`` (the learner's ``state_dict``), ``rng``, ``iteration``, ...

    Raises:
        UserError: unreadable, another algo or task, or already at ``max_iterations``.
    """
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's input
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise UserError(f"algo.resume: cannot read {path}: {type(exc).__name__}: {first}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("agent"), dict):
        raise UserError(f"algo.resume: {path} is not a unilab checkpoint (no 'agent' entry)")
    if payload.get("algo") != algo or payload.get("task") != task:
        raise UserError(
            f"algo.resume: {path} is a {payload.get('algo')}/{payload.get('task')} checkpoint, not {algo}/{task}"
        )
    iteration = int(payload["agent"].get("iteration", payload.get("iteration", 0)))
    if iteration >= max_iterations:
        raise UserError(
            f"algo.resume: {path} is at iteration {iteration} >= algo.max_iterations={max_iterations}; "
            f"raise algo.max_iterations to continue"
        )
    return payload


def _check_symmetry(env, task: str) -> None:
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


def _apply_resume(path: Path, payload: dict[str, Any], agent) -> None:
    """Load networks, optimizers, normalizers and counters into ``agent``, then the RNG states."""
    try:
        agent.load_state_dict(payload["agent"])
    except (KeyError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"algo.resume: {path} does not fit this config: {first}") from None
    if payload.get("rng") is not None:
        set_rng_state(payload["rng"])


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
    """
    algo_reg, task_reg, backend_reg, cfg = prepare(algo, task, sim, overrides or [], preset)
    algo_cfg = _algo_config(algo_reg, cfg)
    _check_schedule(algo_cfg)
    collectors = getattr(algo_cfg, "num_collectors", 1)
    if getattr(algo_cfg, "runtime", "sync") == "async" and collectors > 1 and cfg.sim.cpu_ids:
        raise UserError(
            f"sim.cpu_ids={cfg.sim.cpu_ids} with algo.num_collectors={collectors}: every collector "
            f"would pin its physics threads to the same cores; leave sim.cpu_ids unset (the collectors "
            f"share the free cores) or use algo.num_collectors=1"
        )
    try:  # joins the process group when this process is one of several ranks (torchrun)
        dctx = ddp.setup(cfg.training.devices, cfg.training.device, cfg.sim.cpu_ids)
    except ddp.DevicesError as exc:
        raise UserError(str(exc)) from None
    try:
        run_dir = _train(algo, task, sim, algo_reg, task_reg, backend_reg, cfg, algo_cfg, argv, dctx)
    finally:
        dctx.close()
    if dctx.enabled and not dctx.is_main:
        _end_rank_process()
    return run_dir


def _end_rank_process() -> None:
    """End a rank other than 0 after its work is done and closed (env, process group), skipping the
    interpreter's finalization: there, torch's distributed (gloo) objects' threads occasionally
    aborted the rank with "terminate called without an active exception" (2 in 57 runs of the
    2-rank CPU test, CI included) after a complete run. Such a rank writes no files; its
    streams are flushed first."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _train(algo, task, sim, algo_reg, task_reg, backend_reg, cfg, algo_cfg, argv, dctx) -> Path | None:
    if getattr(algo_cfg, "cuda_graph", None) is True:  # before anything is written
        name = str(dctx.device) if dctx.device is not None else cfg.training.device
        if not (name.startswith("cuda") or (name == "auto" and torch.cuda.is_available())):
            raise UserError(f"algo.cuda_graph=true needs a CUDA learner device, got training.device={name}"
                            f"{' (no CUDA device here)' if name == 'auto' else ''}; use algo.cuda_graph=auto "
                            f"(captures only on CUDA) or false")
    if dctx.is_main:
        _check_log_dir(cfg.training.log_dir)
    resume_path = resume_payload = None
    if getattr(algo_cfg, "resume", None):
        resume_path = find_resume_checkpoint(algo_cfg.resume, cfg.training.log_dir, algo, task)
        resume_payload = read_resume_checkpoint(resume_path, algo, task, cfg.algo.max_iterations)
    seed = dctx.seed(cfg.training.seed)  # training.seed on rank 0 (and without ranks)
    seed_everything(seed)
    try:
        device = dctx.device if dctx.device is not None else resolve_device(cfg.training.device)
    except ValueError as exc:
        raise UserError(f"training.device: {exc}") from None

    if device.type == "cuda":
        # TF32 matrix products for the learner (about 3e-4 relative error, METHOD.md), as FlashSAC.
        torch.set_float32_matmul_precision("high")
    runtime = getattr(algo_cfg, "runtime", "sync")
    tensor_native = getattr(backend_reg.item.capabilities, "tensor_kind", "host_bridge") == "device_native"
    if runtime == "async" and tensor_native:
        raise UserError(
            f"algo.runtime=async: --sim {sim} is device-native (physics on the accelerator); the async "
            f"collector is a CPU process for host-bridge backends. Use algo.runtime=sync"
        )
    num_collectors = getattr(algo_cfg, "num_collectors", 1)
    threads = thread_split(runtime, cfg.sim.nthread, getattr(algo_cfg, "collector_threads", 1),
                           getattr(algo_cfg, "learner_threads", 0), device, num_collectors)
    if runtime == "async":  # sim.nthread stays the total; each collector's pool gets its share
        per = max(1, threads["physics"] // num_collectors)
        if per * num_collectors > threads["physics"]:
            log.warning("%d collectors with at least one physics thread each use %d threads for %d planned "
                        "(sim.nthread or the free cores): cores are oversubscribed", num_collectors,
                        per * num_collectors, threads["physics"])
        threads |= {"physics": per * num_collectors, "collectors": num_collectors, "physics_per_collector": per,
                    "collector_shards": getattr(algo_cfg, "collector_shards", 1)}
    if threads["learner"]:
        torch.set_num_threads(threads["learner"])
    # A picklable factory (module-level function + plain arguments): the async collector process
    # builds its own env with it (with several collectors it overrides num_envs and seed per shard);
    # the sync runtime builds the one env from it here.
    env_fn = functools.partial(
        task_reg.item.make_env,
        cfg.env,
        backend_cls=backend_reg.item,
        num_envs=cfg.algo.num_envs,
        nthread=threads["physics_per_collector"] if runtime == "async" else cfg.sim.nthread,
        cpu_ids=cfg.sim.cpu_ids,
        robot=cfg.robot,
        seed=seed,
    )
    try:
        env = env_fn()
    except (ValueError, FileNotFoundError) as exc:
        raise UserError(f"could not build task {task!r}: {exc}") from None
    except CapabilityError as exc:
        raise UserError(
            f"--sim {sim}: {exc}; turn off what needs it (e.g. env.domain_randomization.enabled=false)"
        ) from None

    try:
        if getattr(algo_cfg, "symmetry", False):
            _check_symmetry(env, task)
        agent = algo_reg.item.make_agent(env, algo_cfg, device)
        resume = None
        if resume_payload is not None:
            _apply_resume(resume_path, resume_payload, agent)
            resume = {"path": str(resume_path), "iteration": agent.iteration}
        if dctx.enabled:
            from unilab_rl import distributed

            try:
                distributed.attach(agent)
            except TypeError:
                raise UserError(
                    f"training.devices: --algo {algo} cannot train on several ranks yet (sac can)"
                ) from None
            distributed.broadcast_state(agent)  # every rank starts from rank 0's learner
        context = {
            "seed": seed,
            "dist": dctx,
            "env_fn": env_fn,
            "runtime": runtime,
            "threads": threads,
            "tensor_native_env": tensor_native,
            "resume": resume,
        }
        if not dctx.is_main:
            _run_rank(cfg, algo_reg, env, agent, context)
            return None
        run_dir = _run(algo, task, sim, algo_reg, task_reg, backend_reg, cfg, env, agent, device, argv, context)
    finally:
        env.close()
    dctx.close()  # the other ranks are done; play and export are rank 0's alone
    if not cfg.training.no_play:  # video + ONNX of the last checkpoint; failures are recorded only
        from unilab.deploy import after_training

        after_training(run_dir)
    return run_dir


def _run(algo, task, sim, algo_reg, task_reg, backend_reg, cfg, env, agent, device, argv, context) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    run_dir = runs.create_run_dir(cfg.training.log_dir, algo, task, sim)
    print(f"run directory: {run_dir}", file=sys.stderr, flush=True)
    if context.get("resume"):
        print(f"resumed from {context['resume']['path']} at iteration {context['resume']['iteration']}",
              file=sys.stderr, flush=True)
    plugins = {
        kind: {"name": reg.name, "distribution": reg.distribution, "version": reg.version}
        for kind, reg in (("algo", algo_reg), ("task", task_reg), ("sim", backend_reg))
    }
    runs.write_json(
        run_dir / "run_config.json",
        {
            "command": argv if argv is not None else sys.argv,
            "algo": algo,
            "task": task,
            "sim": sim,
            "config": cfg.model_dump(mode="json"),
            "plugins": plugins,
            "workspace": runs.workspace_state(),
            "hardware": runs.hardware_info(),
            "resumed_from": context["resume"],
            "distributed": context["dist"].summary(),
        },
    )
    summary = runs.RunSummary(
        run_dir / "run_summary.json",
        {
            "algo": algo,
            "task": task,
            "sim": sim,
            "num_envs": env.num_envs,
            "world_size": context["dist"].world_size,
            "devices": context["dist"].devices or [str(device)],
            "num_envs_total": env.num_envs * context["dist"].world_size,
            "env_device": str(env.device),
            "env_public_device": str(env.device),
            "learner_device": str(device),
            "tensor_native_env": context["tensor_native_env"],
            "cuda_context_initialized": torch.cuda.is_initialized(),
            "compile_backend": getattr(agent, "compile_backend", "eager"),
            "cuda_graphs": False,  # set at the end: captured lazily by the first updates
            "runtime": context["runtime"],
            "threads": context["threads"],
            # Async: where the collectors act (issue 4: collector CPU or the learner's device).
            "collector_policy_device": (
                collector_policy_device(getattr(agent.cfg, "policy_device", "cpu"), device)
                if context["runtime"] == "async" else None
            ),
            "resumed_from": context["resume"],
            "start_iteration": agent.iteration,
        },
    )
    writer = SummaryWriter(log_dir=str(run_dir))
    max_iterations = cfg.algo.max_iterations
    start_iteration = agent.iteration
    state: dict[str, Any] = {"iteration": start_iteration, "checkpoint": None}

    def save_checkpoint(iteration: int) -> Path:
        payload = {
            "iteration": iteration,
            "agent": agent.state_dict(),
            "rng": rng_state(),
            "algo": algo,
            "task": task,
            "config": cfg.model_dump(mode="json"),
        }
        path = run_dir / f"model_{iteration}.pt"
        tmp = path.with_suffix(".pt.tmp")
        torch.save(payload, tmp)
        tmp.replace(path)
        last = run_dir / "model_last.pt"
        torch.save(payload, last.with_suffix(".pt.tmp"))
        last.with_suffix(".pt.tmp").replace(last)
        state["checkpoint"] = path.name
        # Keep the newest `training.keep_checkpoints` numbered checkpoints (model_last.pt stays).
        numbered = sorted(run_dir.glob("model_[0-9]*.pt"), key=lambda p: int(p.stem.split("_")[1]))
        for old in numbered[: -cfg.training.keep_checkpoints]:
            old.unlink(missing_ok=True)
        return path

    dctx = context["dist"]
    steps_per_iteration = env.num_envs * dctx.world_size  # all ranks step in lock-step
    progress = _progress(cfg.training.progress, max_iterations, steps_per_iteration)
    stats: dict[str, Any] = {
        "iterations": start_iteration,
        "env_steps": start_iteration * steps_per_iteration,
        "env_steps_per_s": None,
        "final_mean_reward": None,
        "best_mean_reward": None,
        "mean_episode_length": None,
        "collection_time_s": 0.0,
        "learning_time_s": 0.0,
        "time_to_goal_episode_length": None,
        "episode_rewards": {},
        "learner_wait_time_s": 0.0,
        "collector_wait_time_s": 0.0,
        "collector_start_time_s": 0.0,
        "collector_phase_time_s": None,
        "utd_ratio": None,
    }
    # The walking milestone (issue #3): the first iteration at which the mean episode length of
    # the last finished episodes reaches 90 % of the time-out length (900 of 1000 for g1_walk_flat).
    max_len = getattr(env, "max_episode_length", None)
    goal_length = round(0.9 * max_len) if max_len else None

    pending: dict[str, float] = {}
    interrupts = _Interrupts()

    def on_iteration(iteration: int, metrics: dict[str, float]) -> None:
        with interrupts.deferred():
            _sum_throughput(dctx, cfg, iteration, metrics)
            _record(iteration, metrics)

    def _record(iteration: int, metrics: dict[str, float]) -> None:
        state["iteration"] = iteration
        stats["iterations"] = iteration
        stats["env_steps"] = iteration * steps_per_iteration
        for key in ("collection", "learning", "learner_wait", "collector_wait", "collector_start"):
            stats[f"{key}_time_s"] += metrics.get(f"Perf/{key}_time", 0.0)
        if "Perf/collector_physics_time" in metrics:  # async: the collection time's split
            phases = stats["collector_phase_time_s"] = stats["collector_phase_time_s"] or {}
            for key in COLLECTOR_PHASES:
                phases[key] = phases.get(key, 0.0) + metrics[f"Perf/collector_{key}_time"]
        stats["utd_ratio"] = metrics.get("Perf/utd_ratio", stats["utd_ratio"])
        for key, value in metrics.items():
            if key.startswith("Episode_Reward/"):
                stats["episode_rewards"][key.removeprefix("Episode_Reward/")] = value
        if "Train/mean_reward" in metrics:
            reward = metrics["Train/mean_reward"]
            stats["final_mean_reward"] = reward
            best = stats["best_mean_reward"]
            stats["best_mean_reward"] = reward if best is None else max(best, reward)
            stats["mean_episode_length"] = metrics.get("Train/mean_episode_length")
            length = stats["mean_episode_length"]
            if goal_length and stats["time_to_goal_episode_length"] is None and length is not None and length >= goal_length:
                stats["time_to_goal_episode_length"] = {
                    "goal_episode_length": goal_length,
                    "iteration": iteration,
                    "env_steps": iteration * steps_per_iteration,
                    "wall_time_s": round(time.monotonic() - t0, 1),
                }
                summary.update(**stats)
        # Metrics that appear only in some iterations (actor and temperature updates every
        # policy_frequency critic updates) are kept until the next write, so none is skipped.
        pending.update(metrics)
        if iteration % cfg.training.log_interval == 0 or iteration == max_iterations:
            for key, value in pending.items():
                writer.add_scalar(key, value, iteration)
            pending.clear()
        if progress is not None:
            progress.update(iteration, metrics, stats)
        if iteration % cfg.training.checkpoint_interval == 0 and iteration < max_iterations:
            save_checkpoint(iteration)
            summary.update(checkpoint=state["checkpoint"], **stats)

    runner = _make_runner(algo_reg, env, agent, context)
    status, error = "normal_completion", None
    t0 = time.monotonic()
    with interrupts.installed():
        try:
            runner.learn(max_iterations - start_iteration, on_iteration=on_iteration)
            if dctx.enabled:  # a real check, recorded: every rank's learner state hashes the same
                stats["ranks_identical"] = dctx.check_identical(agent)
                if not stats["ranks_identical"]:
                    log.warning("the ranks' learner states differ at the end of training")
        except TrainingInterrupted as exc:
            status = "interrupted" if exc.signum == signal.SIGINT else "terminated"
            error = f"stopped by {exc}"
            raise
        except CollectorDied as exc:
            status, error = "failed", str(exc).splitlines()[0]
            raise
        except Exception as exc:
            status, error = "error", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            interrupts.closing = True  # from here on signals are ignored: the shutdown completes
            if progress is not None:
                progress.close()
            elapsed = time.monotonic() - t0
            try:
                save_checkpoint(state["iteration"])
            except Exception as exc:  # noqa: BLE001 - recorded, the run's own error wins
                error = (error + "; " if error else "") + f"checkpoint failed: {exc}"
            writer.flush()
            writer.close()
            done_steps = (state["iteration"] - start_iteration) * steps_per_iteration
            stats["env_steps_per_s"] = round(done_steps / elapsed, 1) if elapsed > 0 else None
            cleanup_errors = list(getattr(runner, "cleanup_errors", []))
            summary.update(
                status=status,
                error=error,
                collector_exitcode=getattr(runner, "collector_exitcode", None),
                collector_exitcodes=list(getattr(runner, "collector_exitcodes", None) or []) or None,
                cleanup_errors=cleanup_errors,
                transfer=dict(getattr(runner, "transfer", None) or {}),
                cuda_context_initialized=torch.cuda.is_initialized(),
                cuda_graphs=bool(getattr(agent, "cuda_graphs", False)),
                checkpoint=state["checkpoint"],
                ended_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
                learn_wall_time_s=round(elapsed, 3),
                **stats,
            )
            summary.update(plot=_write_plot(run_dir, env.num_envs))  # after the final summary
    return run_dir


def _make_runner(algo_reg, env, agent, context):
    if context["runtime"] == "async":
        return algo_reg.item.make_runner(env, agent, env_fn=context["env_fn"], env_seed=context["seed"])
    return algo_reg.item.make_runner(env, agent)


def _sum_throughput(dctx, cfg, iteration: int, metrics: dict[str, float]) -> None:
    """Several ranks, at log iterations: ``Perf/total_fps`` becomes the sum over ranks (an
    all-reduce every rank makes at the same iteration) and ``Perf/rank_fps`` keeps this rank's."""
    if not dctx.enabled:
        return
    if iteration % cfg.training.log_interval == 0 or iteration == cfg.algo.max_iterations:
        fps = metrics.get("Perf/total_fps", 0.0)
        metrics["Perf/rank_fps"] = fps
        metrics["Perf/total_fps"] = dctx.sum_scalar(fps)


def _run_rank(cfg, algo_reg, env, agent, context) -> None:
    """A rank other than 0: the same training steps (its gradients and statistics join rank 0's
    through the learner's hooks), the same collectives at log time and at the end; no run
    directory, metrics, checkpoint, summary or play."""
    dctx = context["dist"]
    interrupts = _Interrupts()

    def on_iteration(iteration: int, metrics: dict[str, float]) -> None:
        with interrupts.deferred():
            _sum_throughput(dctx, cfg, iteration, metrics)

    runner = _make_runner(algo_reg, env, agent, context)
    with interrupts.installed():
        try:
            runner.learn(cfg.algo.max_iterations - agent.iteration, on_iteration=on_iteration)
        finally:
            interrupts.closing = True
    dctx.check_identical(agent)


def _write_plot(run_dir: Path, num_envs: int) -> str:
    """Write ``learning_curve.png`` (:mod:`unilab.plots`); never raises. Returns the summary's
    ``plot`` field: the file name, or ``"failed: <error>"`` (a plot never fails a run)."""
    try:
        from unilab.plots import write_learning_curve

        return write_learning_curve(run_dir, num_envs=num_envs).name
    except Exception as exc:  # noqa: BLE001 - recorded in the summary, never fatal
        log.warning("learning curve not written: %s", exc)
        return f"failed: {type(exc).__name__}: {exc}"


class _Progress:
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


class _LineProgress:
    """Plain progress lines on stdout for logs (``unilab train ... > log.txt``): one after the
    first iteration, then one whenever ``every_s`` seconds have passed, and one at the end.

    A line: ``train 120/1000 (12%): 2048 env steps/s, mean reward 1.234, mean episode length
    245.0, 60 s elapsed``. Env steps/s is measured since the previous line (since the start when
    that was less than a second ago); the reward and
    episode length are the latest the learner reported (``-`` before the first episode ended).
    """

    def __init__(self, total: int, num_envs: int, every_s: float = 10.0, stream=None) -> None:
        self._total, self._num_envs, self._every_s = total, num_envs, every_s
        self._stream = stream
        self._t0 = self._last_t = time.monotonic()
        self._last_iteration = 0

    def update(self, iteration: int, metrics: dict[str, float], stats: dict[str, Any] | None = None) -> None:
        now = time.monotonic()
        if not (iteration == 1 or iteration >= self._total or now - self._last_t >= self._every_s):
            return
        stats = stats or {}
        # The async learner takes a block of iterations at once: over less than a second the
        # interval rate is meaningless (it printed millions), so short intervals use the run's average.
        if now - self._last_t >= 1.0:
            rate = (iteration - self._last_iteration) * self._num_envs / (now - self._last_t)
        else:
            rate = iteration * self._num_envs / max(now - self._t0, 1e-9)
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


def _progress(flag: bool | None, total: int, num_envs: int = 1) -> _Progress | _LineProgress | None:
    """``training.progress``: true, a progress bar; false, nothing; unset, a bar in a terminal and
    plain lines (:class:`_LineProgress`) when stdout is a file or a pipe."""
    if flag is None:
        return _Progress(total) if sys.stdout.isatty() else _LineProgress(total, num_envs)
    return _Progress(total) if flag else None
