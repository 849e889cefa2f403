"""A run directory and one of its checkpoints -> the env (with the task's play settings) and the
deterministic policy, ready to roll out; plus ``run_summary.json`` updates.

The env is rebuilt from ``run_config.json`` through the same plugin registries as training (task,
algorithm, backend by the names the run recorded), on the CPU learner device, with the task's play
overrides (:data:`PLAY_OVERRIDES`) and the caller's on top.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from unilab import runs
from unilab.build import RunPlugins, algo_config
from unilab.config import (
    ConfigError,
    _check_keys,
    build_run_model,
    deep_merge,
    dotted_keys,
    layer_overrides,
    migrate_saved_config,
    parse_overrides,
    valid_keys,
    validate,
)
from unilab.errors import UserError
from unilab.plugins import ALGORITHMS, BACKENDS, ROBOTS, TASKS, lookup
from unilab.resume import play_curriculum_overrides
from unilab.robots.scene import brief_reports
from unilab_rl.runtime import RuntimeConfig

PLAY_OVERRIDES: dict[str, list[str]] = {
    "g1_walk_flat": [
        "env.observation_noise=false",
        "env.push.enabled=false",
        "env.commands.lin_vel_x=[0.5,0.5]",
        "env.commands.lin_vel_y=[0.0,0.0]",
        "env.commands.ang_vel_z=[0.0,0.0]",
        "env.commands.standing_fraction=0.0",
        "env.commands.lin_vel_deadband=0.0",
        "env.reset_xy_m=0.0",
        "env.reset_yaw_rad=0.0",
    ],
    "g1_motion_tracking": [
        "env.observation_noise=false",
        "env.push.enabled=false",
        "env.reset_noise.enabled=false",
        "env.motion.sampling=start",
    ],
}
"""Play settings of the built-in tasks, as ``key=value`` overrides of the run config: no
observation noise, no pushes; g1_walk_flat: a fixed command (walk forward at 0.5 m/s; any
command the user sets is played as set, however slow), the start pose not shifted or turned;
g1_motion_tracking: the clip from its first frame, exact reference state (no reset noise). A
task can carry its own as a ``play_overrides`` attribute of its TaskSpec, which wins over this
table. Keys the run's config does not have are skipped (a task's settings
change over time); the user's overrides are checked strictly."""

_CHECKPOINT = re.compile(r"model_(\d+)\.pt")

MODEL_FILE_KEY = "robot.mjcf"
"""The one override ``unilab eval`` and ``unilab export`` take: where the run's model file is now
(:func:`model_file_overrides`)."""


def model_file_overrides(overrides: list[str] | tuple[str, ...], command: str) -> list[str]:
    """The overrides of ``unilab eval`` and ``unilab export``: ``robot.mjcf=FILE`` alone, the model
    file the run trained on found at a new path. Any other setting would change what is evaluated
    or exported (play takes them: :func:`load_run`).

    Args:
        overrides: ``key=value`` items from the command line.
        command: ``"eval"`` or ``"export"``, for the message.

    Returns:
        ``overrides`` as a list.

    Raises:
        UserError: an item that is not ``robot.mjcf=...``, or ``robot.mjcf`` given twice (one line
            naming it).
    """
    for item in overrides:
        if item.split("=", 1)[0].strip() != MODEL_FILE_KEY or "=" not in item:
            raise UserError(
                f"unilab {command} takes {MODEL_FILE_KEY}=FILE only (the run's model file at a new path), "
                f"got {item!r}; other settings are the run's (unilab play takes overrides"
                f"{'; unilab eval --transfer evaluates on another robot model' if command == 'eval' else ''})"
            )
    _refuse_repeated_keys(overrides)
    return list(overrides)


def _refuse_repeated_keys(overrides: list[str] | tuple[str, ...]) -> None:
    """Refuse a key the user gave twice, before eval layers the list over its suite's settings
    (where a later item replaces an earlier one).

    Raises:
        UserError: :func:`unilab.config.parse_overrides`'s line for the repeated key.
    """
    try:
        parse_overrides(list(overrides))
    except ConfigError as exc:
        raise UserError(str(exc)) from None


TRANSFER_KEYS: tuple[str, ...] = ("robot.mjcf", "robot.feet", "robot.actuators")
"""The settings ``unilab eval --transfer`` takes: which robot model the run's policy is evaluated
on (:func:`transfer_overrides`)."""


def transfer_overrides(overrides: list[str] | tuple[str, ...]) -> list[str]:
    """The overrides of ``unilab eval --transfer``: the robot model to evaluate the run's policy on
    instead of the one it trained on (``robot.mjcf=FILE``, ``robot.feet=project|model|spheres``,
    ``robot.actuators=project|file``), for a sim-to-sim transfer check. Other settings would change
    the task rather than the model; the values are checked when the config is validated.

    Args:
        overrides: ``key=value`` items from the command line.

    Returns:
        ``overrides`` as a list.

    Raises:
        UserError: no item at all, an item whose key is not one of :data:`TRANSFER_KEYS`, or a key
            given twice (one line naming it and what is accepted).
    """
    accepted = "robot.mjcf=FILE, robot.feet=project|model|spheres or robot.actuators=project|file"
    if not overrides:
        raise UserError(f"--transfer: name the model to evaluate on after the run: {accepted}")
    for item in overrides:
        if "=" not in item or item.split("=", 1)[0].strip() not in TRANSFER_KEYS:
            raise UserError(f"--transfer: {item!r} is not a robot model setting; expected {accepted} "
                            f"(other settings are the run's)")
    _refuse_repeated_keys(overrides)
    return list(overrides)


def transfer_summary(overrides: list[str] | tuple[str, ...], trained: dict[str, Any],
                     evaluated: dict[str, Any]) -> str:
    """One line naming the model a transfer evaluation ran on against the one the run trained on,
    for the keys ``overrides`` set, e.g. ``robot.feet=spheres (trained with robot.feet=model)``.

    Args:
        overrides: the ``--transfer`` items (:func:`transfer_overrides`).
        trained, evaluated: :func:`unilab.robots.robot_settings` of the run's robot and of the
            robot evaluated on (``mjcf`` None reads ``built-in``).
    """
    keys = list(dict.fromkeys(item.split("=", 1)[0].strip() for item in overrides))

    def show(settings: dict[str, Any]) -> str:
        return ", ".join(f"{k}={settings.get(k.split('.', 1)[1]) or 'built-in'}" for k in keys)

    return f"{show(evaluated)} (trained with {show(trained)})"


def deployed_actor(actor_ema: float) -> str:
    """Which actor a deterministic policy trained with ``algo.actor_ema`` = ``actor_ema`` is, in
    words: ``"the actor's moving average, algo.actor_ema=0.005"`` above 0, else ``"the online
    actor"``."""
    return f"the actor's moving average, algo.actor_ema={actor_ema:g}" if actor_ema > 0 else "the online actor"


@dataclass
class LoadedRun(RunPlugins):
    """A run directory with a loaded checkpoint and its (play) config.

    Attributes:
        algo, task, sim, algo_reg, task_reg, backend_reg: the plugins the run used
            (:class:`~unilab.build.RunPlugins`).
        cfg: the run config with the play overrides applied (a pydantic model).
        run_dir: the run directory.
        checkpoint: the checkpoint file.
        payload: the checkpoint dict (``iteration``, ``agent``, ``algo``, ``task``, ``config``).
        overrides: the settings applied over the run's config (the play settings, then the
            caller's), each key once with the value that won, so the list can be given back to
            ``unilab play`` as it is.
        final: the checkpoint is the run's last one (``model_last.pt``, or the numbered checkpoint
            ``run_summary.json`` names as the run's last). Play and export of a final checkpoint
            write the run's ``policy.onnx`` and its ``play``/``video``/``onnx`` records; any other
            checkpoint gets files and records of its own (:func:`record_result`).
    """

    run_dir: Path
    checkpoint: Path
    payload: dict[str, Any]
    overrides: list[str]
    final: bool = True

    @property
    def iteration(self) -> int:
        return int(self.payload.get("iteration", 0))

    @property
    def actor_ema(self) -> float:
        """The run's ``algo.actor_ema`` (0.0 when its algorithm has none): above 0 the
        deterministic policy that play, evaluation and export use is the actor's moving average."""
        return float(getattr(getattr(self.cfg, "algo", None), "actor_ema", 0.0) or 0.0)

    @property
    def deployed_actor(self) -> str:
        """Which actor the deterministic policy is, in words (:func:`deployed_actor`)."""
        return deployed_actor(self.actor_ema)

    @functools.cached_property
    def data_changes(self) -> list[str]:
        """How the data files the run's env is rebuilt from (``TaskSpec.data_files`` under
        ``cfg``) differ from those ``run_config.json`` recorded at training
        (:func:`unilab.runs.data_changes`), e.g. a clip added to the folder ``env.motion.file``
        names; keys the overrides set are not compared. [] for a run that recorded none. Read
        and hashed once per loaded run: building its env, its records and its export share it."""
        try:
            recorded = read_run_config(self.run_dir).get("data")
        except UserError:
            return []
        if not isinstance(recorded, list) or not recorded:
            return []
        given = {o.split("=", 1)[0].strip() for o in self.overrides}
        return runs.data_changes(recorded, runs.task_data_files(self.task_reg.item, self.cfg.env), given)


def run_checkpoints(run_dir: Path) -> list[Path]:
    """The checkpoints in ``run_dir``, in the order a default pick prefers them: ``model_last.pt``
    (when there), then ``model_<iteration>.pt`` by iteration, highest first."""
    numbered = sorted(
        (int(m.group(1)), p) for p in run_dir.glob("model_*.pt") if (m := _CHECKPOINT.fullmatch(p.name))
    )
    last = run_dir / "model_last.pt"
    return ([last] if last.is_file() else []) + [p for _, p in reversed(numbered)]


def resolve_checkpoint(run_dir: Path, checkpoint: str | None = None) -> Path:
    """The checkpoint file to load.

    Args:
        run_dir: the run directory.
        checkpoint: a file name in ``run_dir`` (``model_100.pt``) or a path; ``None`` picks
            ``model_last.pt``, else the highest ``model_<iteration>.pt``.

    Raises:
        UserError: no such checkpoint (listing the ones the run has).
    """
    have = run_checkpoints(run_dir)
    if checkpoint is None:
        if not have:
            raise UserError(f"no checkpoint in {run_dir} (expected model_last.pt or model_<iteration>.pt)")
        return have[0]
    path = Path(checkpoint)
    for candidate in (run_dir / path, path):
        if candidate.is_file():
            return candidate
    names = ", ".join(p.name for p in have) or "none"
    raise UserError(f"--checkpoint {checkpoint}: no checkpoint {checkpoint!r} in {run_dir} (it has: {names})")


def is_final_checkpoint(run_dir: Path, checkpoint: Path) -> bool:
    """Whether ``checkpoint`` is the run's last: ``model_last.pt``, or, once training has ended,
    the checkpoint that ``run_summary.json`` records as the last one saved
    (``model_<last iteration>.pt``)."""
    path = Path(checkpoint).resolve()
    if path == (run_dir / "model_last.pt").resolve():
        return True
    try:
        data = json.loads((run_dir / "run_summary.json").read_text())
        last = data.get("checkpoint") if data.get("status") not in (None, "running") else None
    except (OSError, ValueError, AttributeError):
        last = None
    return isinstance(last, str) and path == (run_dir / last).resolve()


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """``run_dir/run_config.json``, parsed.

    Raises:
        UserError: it cannot be read or parsed.
    """
    path = run_dir / "run_config.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("algo", "task")):
        what = (f"a JSON {type(data).__name__}" if not isinstance(data, dict)
                else "an object without 'algo' and 'task' names")
        raise UserError(f"{path} is {what}; expected the object unilab train writes (algo, task, sim, config)")
    return data


def run_config(
    run_dir: Path,
    overrides: list[str] | tuple[str, ...] = (),
    *,
    checkpoint: Path,
    payload: dict[str, Any] | None = None,
    saved_run: dict[str, Any] | None = None,
    play: bool = True,
) -> LoadedRun:
    """The run in ``run_dir`` with its config: from its ``run_config.json`` (or a checkpoint's
    ``payload``, whose ``algo``, ``task`` and ``config`` win), with the task's play settings
    (:data:`PLAY_OVERRIDES`, when ``play``, and then the curricula at the values the checkpoint
    recorded: :func:`unilab.resume.play_curriculum_overrides`) and ``overrides`` on top, validated,
    and its plugins resolved. :func:`load_run` calls it with the loaded checkpoint; a caller that needs only the
    config passes an empty ``payload``.

    Args:
        checkpoint: the file the result names as its checkpoint (``LoadedRun.checkpoint``).
        payload: the checkpoint dict, or None.
        saved_run: ``run_config.json`` as already read (:func:`read_run_config`); None reads it.

    Raises:
        UserError: an unreadable ``run_config.json``, a plugin the run used (algorithm, task,
            backend, robot) is not installed (naming the package and version the run recorded
            in its ``plugins``), or an override/config that does not validate (one line each).
    """
    payload = payload or {}
    saved_run = read_run_config(run_dir) if saved_run is None else saved_run
    algo = payload.get("algo") or saved_run["algo"]
    task = payload.get("task") or saved_run["task"]
    sim = saved_run.get("sim", "mujoco")
    algo_reg = _lookup_run_plugin(ALGORITHMS, algo, "algorithm of the run", saved_run, "algo")
    task_reg = _lookup_run_plugin(TASKS, task, "task of the run", saved_run, "task")
    backend_reg = _lookup_run_plugin(BACKENDS, sim, "simulator of the run", saved_run, "sim")

    model = build_run_model(algo_reg.item.config_cls, task_reg.item.config_cls)
    saved = migrate_saved_config(payload.get("config") or saved_run.get("config") or {})
    keys = set(valid_keys(model))
    play_overrides = (getattr(task_reg.item, "play_overrides", None) or PLAY_OVERRIDES.get(task, [])) if play else []
    if play:  # the curricula where the checkpoint's training left them (the user's overrides still win)
        play_overrides = layer_overrides(play_overrides, play_curriculum_overrides(getattr(task_reg.item, "curricula", ()), payload))
    play_overrides = [o for o in play_overrides if o.split("=", 1)[0] in keys]
    try:
        user = parse_overrides(list(overrides))
        _check_keys(user, model, "the command line")
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    if not isinstance(saved, dict):
        raise UserError(f"the config of {run_dir} is {type(saved).__name__}, not a mapping of sections")
    tree = deep_merge(deep_merge(saved, parse_overrides(play_overrides)), user)
    try:
        cfg = validate(model, tree)
    except ConfigError as exc:
        key = exc.key or ""
        if any(key == k or key.startswith(k + ".") or k.startswith(key + ".") for k in dotted_keys(user)):
            raise UserError(str(exc)) from None
        raise UserError(
            f"the config of {run_dir} does not validate with the installed plugins: {exc}"
        ) from None
    robot = getattr(getattr(cfg, "robot", None), "name", None)
    if robot is not None:  # before the env is built: an unknown robot names the package the run used
        _lookup_run_plugin(ROBOTS, robot, "robot.name", saved_run, "robot")
    return LoadedRun(algo, task, sim, algo_reg, task_reg, backend_reg, cfg, run_dir=run_dir, checkpoint=checkpoint,
                     payload=payload, overrides=layer_overrides(play_overrides, overrides),
                     final=is_final_checkpoint(run_dir, checkpoint))


def _lookup_run_plugin(registry, name: str, flag: str, saved_run: dict[str, Any], kind: str):
    """:func:`unilab.plugins.lookup` of a plugin a run names; when ``name`` is not installed and
    ``run_config.json``'s ``plugins[kind]`` records it, the error adds the package and version the
    run used.

    Raises:
        UserError: as :func:`~unilab.plugins.lookup`, e.g. ``"robot.name: unknown robot 'g1_home';
            valid choices: g1; the run used it from the package unilab-robot-g1-home 0.1.0, not
            installed here: install that package"``.
    """
    try:
        return lookup(registry, name, flag)
    except UserError as exc:
        plugins = saved_run.get("plugins")
        recorded = plugins.get(kind) if isinstance(plugins, dict) else None
        try:
            installed = name in registry.names()
        except Exception:  # noqa: BLE001 - strict mode: the lookup's own error says it all
            installed = True
        if (installed or not isinstance(recorded, dict) or recorded.get("name") != name
                or not recorded.get("distribution")):
            raise
        version = f" {recorded['version']}" if recorded.get("version") else ""
        raise UserError(f"{exc}; the run used it from the package {recorded['distribution']}{version}, not "
                        f"installed here: install that package") from None


def load_run(
    run: str,
    checkpoint: str | None = None,
    *,
    log_dir: str | Path = "logs",
    overrides: list[str] | tuple[str, ...] = (),
) -> LoadedRun:
    """Load a run directory's config and checkpoint, and resolve its plugins.

    Args:
        run: a run directory or ``latest`` (newest run under ``log_dir``).
        checkpoint: see :func:`resolve_checkpoint`.
        log_dir: where ``latest`` looks.
        overrides: ``key.sub=value`` applied over the run's config and the task's play settings
            (:data:`PLAY_OVERRIDES`).

    Raises:
        UserError: no such run or checkpoint, an unreadable checkpoint or one with NaN or
            infinite weights, a plugin the run used is not installed, or an override/config that
            does not validate (one line each).
    """
    try:
        run_dir = runs.resolve_run_dir(run, log_dir)
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    ckpt_path = resolve_checkpoint(run_dir, checkpoint)
    saved_run = read_run_config(run_dir)
    try:
        payload = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's to fix
        raise UserError(f"cannot load checkpoint {ckpt_path}: {type(exc).__name__}: {exc}") from None
    if not isinstance(payload, dict) or "agent" not in payload:
        raise UserError(f"{ckpt_path} is not a unilab checkpoint (no 'agent' entry)")
    bad = runs.first_non_finite(payload["agent"])
    if bad:
        raise UserError(f"checkpoint {ckpt_path} has NaN or infinite weights: first in {bad}; "
                        f"play or export an earlier checkpoint (--checkpoint model_<iteration>.pt)")
    return run_config(run_dir, overrides, checkpoint=ckpt_path, payload=payload, saved_run=saved_run)


def make_env(loaded: LoadedRun, num_envs: int):
    """Build the run's env with ``num_envs`` worlds from ``loaded.cfg`` (physics threads: the run's
    ``sim.nthread``, or one per available core, and at most one per world; no core pinning). A
    ``robot.mjcf`` run's scene report is the title and the changes, without the drive table
    (:func:`unilab.robots.scene.brief_reports`).

    Raises:
        UserError: the task cannot be built, or the run's ``robot.mjcf`` no longer exists (the
            message says to put it back or name its new path with ``robot.mjcf=FILE``).
    """
    if num_envs < 1:
        raise UserError(f"--num-envs must be >= 1, got {num_envs}")
    cfg = loaded.cfg
    _check_model_file(loaded)
    for line in loaded.data_changes:
        if line not in _WARNED:  # once per process: an evaluation may build several envs of a run
            _WARNED.add(line)
            print(f"warning: {line}", file=sys.stderr, flush=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    nthread = min(cfg.sim.nthread or cores, num_envs)
    try:
        with brief_reports():  # the drive table of a robot.mjcf run is training's; its title and changes stay
            return loaded.task_reg.item.make_env(
                cfg.env,
                backend_cls=loaded.backend_reg.item,
                num_envs=num_envs,
                nthread=nthread,
                cpu_ids=None,
                robot=cfg.robot,
                seed=cfg.training.seed,
            )
    except (ValueError, FileNotFoundError) as exc:
        raise UserError(f"could not build task {loaded.task!r}: {exc}") from None


_WARNED: set[str] = set()


def _check_model_file(loaded: LoadedRun) -> None:
    """A ``robot.mjcf`` the run recorded that is no longer there (moved, or another machine): one
    line saying what to do. A path given as an override is left to the scene builder's message.

    Raises:
        UserError: the run's model file does not exist.
    """
    mjcf = getattr(getattr(loaded.cfg, "robot", None), "mjcf", None)
    given = any(o.split("=", 1)[0].strip() == MODEL_FILE_KEY for o in loaded.overrides)
    if not mjcf or given:
        return
    path = os.path.abspath(os.path.expanduser(os.fspath(mjcf)))
    if not os.path.exists(path):
        raise UserError(
            f"{MODEL_FILE_KEY}: no such file {path!r}: the run {loaded.run_dir} was trained on that model "
            f"file; put it back at that path, or name where it is now with {MODEL_FILE_KEY}=FILE after "
            f"the run (unilab play, eval and export take it)"
        )


def cpu_learner(loaded: LoadedRun, env):
    """The run's learner rebuilt on the CPU for ``env`` with fresh weights, as training built it
    (the algorithm's ``make_agent``), in one process: the run's execution settings (collectors,
    shards, CUDA graphs, compilation) belong to the training machine and are not used."""
    runtime = RuntimeConfig(mode="sync", compile=False, cuda_graph=False, mixed_precision=False)
    return loaded.algo_reg.item.make_agent(env, algo_config(loaded.algo_reg, loaded.cfg), device=torch.device("cpu"),
                                           runtime=runtime, max_iterations=loaded.cfg.training.max_iterations)


def make_policy(loaded: LoadedRun, env) -> tuple[torch.nn.Module, str]:
    """The checkpoint's deterministic policy on the CPU, in eval mode, and the observation group it
    reads.

    Built as training built the learner (:func:`cpu_learner`), loaded from the checkpoint, then
    ``agent.inference_policy()``: a module mapping raw actor observations (B, obs_dims[actor])
    float32 to actions (B, num_actions) float32 in the env's units, with the observation
    normalizer inside.

    Raises:
        UserError: the checkpoint does not fit the env (different observation or action sizes) or
            the learner the settings build (another network kind, such as ``algo.critic`` given
            to ``unilab play`` with a value the run did not train with).
    """
    agent = cpu_learner(loaded, env)
    try:
        agent.load_state_dict(loaded.payload["agent"])
    except ValueError as exc:  # the algorithm refused the checkpoint's kind of network: its message names the key
        raise UserError(f"checkpoint {loaded.checkpoint} does not fit the learner built from run_config.json "
                        f"and the overrides: {str(exc).splitlines()[0]}") from None
    except (KeyError, RuntimeError) as exc:
        raise UserError(
            f"checkpoint {loaded.checkpoint} does not fit the env rebuilt from run_config.json: "
            f"{str(exc).splitlines()[0]}"
        ) from None
    return agent.inference_policy().eval(), agent.actor_group


@dataclass
class Rollout:
    """What :func:`rollout` recorded.

    Attributes:
        observations: (steps * num_envs, obs_dim) float32 actor observations the policy saw.
        qpos: (frames, nq) float64 qpos of world 0 after every ``frame_stride``-th step.
        returns: (episodes,) float64 return of each episode, ended or cut by the end of the rollout.
        lengths: (episodes,) int64 their lengths in env steps.
        terminated: (episodes,) bool, ended by a termination term (not a time-out or the end).
        reward_terms: term -> ``{"weight", "value", "reward"}`` over all env steps of all worlds:
            ``value`` the mean of the term itself (e.g. a tracking kernel in [0, 1]; None if its
            penalty scale was 0 throughout), ``reward`` the mean of what it added to the reward
            per env step (``weight * value * step_dt``, penalty scale included), so the ``reward``
            values times ``steps * num_envs`` add up to the sum of ``returns``. Empty for an env
            without a ``reward_manager``.
        terminations: term -> how many times it fired (a row can trip several terms in one step;
            time-out terms included). Empty for an env without a ``termination_manager``.
        reference_qpos: (frames, nq) float64 world 0's reference state at the same frames as
            ``qpos``, for an env with a command that has ``reference_qpos`` (motion tracking);
            None otherwise.
    """

    observations: torch.Tensor
    qpos: torch.Tensor
    returns: torch.Tensor
    lengths: torch.Tensor
    terminated: torch.Tensor
    reward_terms: dict[str, dict[str, float | None]] = field(default_factory=dict)
    terminations: dict[str, int] = field(default_factory=dict)
    reference_qpos: torch.Tensor | None = None


def rollout(env, policy: torch.nn.Module, steps: int, *, group: str = "actor", frame_stride: int = 0) -> Rollout:
    """Reset ``env`` and step it ``steps`` times with ``policy``.

    Args:
        env: a VecEnv (the env auto-resets rows that end).
        policy: raw observations (B, D) -> actions (B, A), on the CPU.
        steps: env steps.
        group: observation group the policy reads.
        frame_stride: record world 0's qpos after every ``frame_stride``-th step (0: none); needs
            ``env.backend.qpos``.

    The policy runs on one torch thread meanwhile: a batch of a few rows gains nothing from more,
    and more compete with the physics threads (a 4-world rollout on 2 cores ran 10x slower with 2).

    Raises:
        UserError: ``steps < 1``.
    """
    if steps < 1:
        raise UserError(f"--steps must be >= 1, got {steps}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _rollout(env, policy, steps, group, frame_stride)
    finally:
        torch.set_num_threads(threads)


@torch.no_grad()
def _rollout(env, policy: torch.nn.Module, steps: int, group: str, frame_stride: int) -> Rollout:
    n = env.num_envs
    obs = env.reset()
    ep_return = torch.zeros(n, dtype=torch.float64)
    ep_length = torch.zeros(n, dtype=torch.long)
    seen, frames = [], []
    returns, lengths, terminated_eps = [], [], []
    rewards_mgr = getattr(env, "reward_manager", None)
    terms_mgr = getattr(env, "termination_manager", None)
    names = list(getattr(rewards_mgr, "names", []))
    weighted = torch.zeros(len(names), dtype=torch.float64)  # sums over steps and worlds
    raw = torch.zeros(len(names), dtype=torch.float64)
    raw_count = torch.zeros(len(names), dtype=torch.float64)
    fired = torch.zeros(len(getattr(terms_mgr, "names", [])), dtype=torch.long)
    reference = next((c for c in getattr(env, "commands", {}).values() if hasattr(c, "reference_qpos")), None)
    world0 = torch.zeros(1, dtype=torch.long, device=env.device)
    refs = []
    for t in range(steps):
        o = obs[group].to("cpu", torch.float32)
        seen.append(o.clone())
        actions = policy(o).to(env.device)
        obs, reward, terminated, truncated, _ = env.step(actions)
        if names:
            weighted += rewards_mgr.last.to("cpu", torch.float64).sum(dim=0)
            values = rewards_mgr.last_values().to("cpu", torch.float64)  # (N, T), NaN: unknown
            known = ~values[0].isnan()
            raw[known] += values[:, known].sum(dim=0)
            raw_count[known] += n
        if fired.numel():
            fired += terms_mgr.last.to("cpu").long().sum(dim=0)
        ep_return += reward.to("cpu", torch.float64)
        ep_length += 1
        done = (terminated | truncated).cpu()
        if done.any():
            returns.append(ep_return[done].clone())
            lengths.append(ep_length[done].clone())
            terminated_eps.append(terminated.cpu()[done])
            ep_return[done] = 0.0
            ep_length[done] = 0
        if frame_stride and (t + 1) % frame_stride == 0:
            frames.append(env.backend.qpos[0].to("cpu", torch.float64).clone())
            if reference is not None:
                refs.append(reference.reference_qpos(world0)[0].to("cpu", torch.float64))
    running = ep_length > 0
    returns.append(ep_return[running])
    lengths.append(ep_length[running])
    terminated_eps.append(torch.zeros(int(running.sum()), dtype=torch.bool))
    reward_terms = {
        name: {
            "weight": float(rewards_mgr.terms[name].weight),
            "value": float(raw[i] / raw_count[i]) if raw_count[i] else None,
            "reward": float(weighted[i]) / (steps * n),
        }
        for i, name in enumerate(names)
    }
    return Rollout(
        observations=torch.cat(seen),
        qpos=torch.stack(frames) if frames else torch.zeros(0, 0, dtype=torch.float64),
        returns=torch.cat(returns),
        lengths=torch.cat(lengths),
        terminated=torch.cat(terminated_eps),
        reward_terms=reward_terms,
        terminations={name: int(c) for name, c in zip(terms_mgr.names, fired)} if fired.numel() else {},
        reference_qpos=torch.stack(refs) if refs else None,
    )


def record_result(run_dir: Path, loaded: LoadedRun, kind: str, entry: dict[str, Any], **final_fields: Any) -> None:
    """Record a play or export in ``run_summary.json`` without clobbering the final one.

    For the run's final checkpoint, ``entry`` becomes the ``kind`` field (``play`` or ``onnx``)
    and ``final_fields`` (``video``, ``onnx_max_abs_diff``) are set beside it. For any other
    checkpoint, ``entry`` goes under ``<kind>_checkpoints[<iteration>]`` (``play_checkpoints``,
    ``onnx_checkpoints``), one entry per iteration, the newest play or export of it winning.
    An env rebuilt from data files that changed since training adds their
    :attr:`LoadedRun.data_changes` to ``entry`` (``data_changes``).
    """
    if loaded.data_changes:
        entry = {**entry, "data_changes": loaded.data_changes}
    if loaded.final:
        update_summary(run_dir, **{kind: entry}, **final_fields)
        return
    path = Path(run_dir) / "run_summary.json"
    data = _read_summary(path)
    field_name = f"{kind}_checkpoints"
    entries = data.get(field_name) if isinstance(data.get(field_name), dict) else {}
    entries[str(loaded.iteration)] = entry
    data[field_name] = dict(sorted(entries.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else -1))
    runs.write_json(path, data)


def update_summary(run_dir: Path, **fields: Any) -> None:
    """Merge ``fields`` into ``run_dir/run_summary.json`` (created if missing), atomically."""
    path = Path(run_dir) / "run_summary.json"
    data = _read_summary(path)
    data.update(fields)
    runs.write_json(path, data)


def _read_summary(path: Path) -> dict[str, Any]:
    """``run_summary.json`` as a dict; ``{}`` when it is missing, unreadable or not an object
    (it is then rewritten with only the new fields)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def relative_to_run(path: Path, run_dir: Path) -> str:
    """``path`` relative to ``run_dir`` when inside it, else absolute (for run_summary.json)."""
    try:
        return str(Path(path).resolve().relative_to(Path(run_dir).resolve()))
    except ValueError:
        return str(Path(path).resolve())


__all__ = [
    "LoadedRun", "MODEL_FILE_KEY", "PLAY_OVERRIDES", "Rollout", "TRANSFER_KEYS", "deployed_actor",
    "is_final_checkpoint", "load_run", "make_env", "make_policy", "model_file_overrides", "read_run_config",
    "record_result", "relative_to_run", "resolve_checkpoint", "rollout", "run_checkpoints", "run_config",
    "transfer_overrides", "transfer_summary", "update_summary",
]
