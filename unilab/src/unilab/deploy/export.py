"""``unilab export``: the deterministic policy as ``policy.onnx``, with what a robot-side runtime
needs to feed it and use its output, verified against the torch policy.

The graph maps ``obs`` (B, obs_dim) float32 raw observations (the observation normalizer is in the
graph) to ``actions`` (B, num_actions) float32 in the env's action units. The model's
``metadata_props`` hold, each as a JSON value (:func:`read_metadata` parses them back):

- ``unilab_policy_schema``: 1.
- ``observation``: input name, group, dim, and ``terms``: each term's ``name``, ``start``,
  ``stop`` (its column slice), ``dim``, ``function`` and ``params`` (e.g. the sensor it reads) and a
  one-line ``description`` (units, frame).
- ``action``: output name, dim, ``joint_names`` (one per action, in action order),
  ``actuator_names`` (the model's actuators in ctrl order) and ``actuator_index`` (ctrl index of
  each action), ``scale`` (rad per action unit), ``offset`` (= the default joint positions, rad),
  ``low`` / ``high`` (the action box) and the rule ``target_joint_pos = offset + scale * action``.
- ``default_joint_pos``: rad, in action order.
- ``pd_gains``: ``kp`` (N m/rad), ``kd`` (N m s/rad), ``effort_limit`` (N m) per action, for
  position actuators (absent otherwise).
- ``control``: ``rate_hz``, ``dt_s`` (env step), ``physics_dt_s``, ``decimation``.
- ``normalizer``: ``in_graph: true``.
- ``source``: algo, task, sim, iteration, checkpoint, ``actor_ema`` (above 0: the policy is the
  actor's moving average), the play overrides, ``data_changes`` (how the data files the env was
  rebuilt from differ from those the run trained on: :attr:`unilab.deploy.loading.LoadedRun.data_changes`;
  [] when they do not, e.g. a clip added to the motion folder after training, which then appears
  in ``commands``), the versions.
- ``robot``: the run's robot settings: ``name`` (``robot.name``), ``mjcf`` (the model file's
  absolute path, or null for the robot's own model), ``actuators`` (``project`` or ``file``)
  and ``feet`` (``model``, ``spheres`` or ``project``).
- ``commands``: each command term of the env, by name: its ``class``, a one-line ``description``
  and its ``settings`` (the dataclass it was built from), e.g. the gait clock's period and
  frequency width that a host needs to compute the ``gait_phase`` columns (the formula:
  :class:`unilab.envs.mdp.GaitPhaseCommand`). They are the settings of the env built for the
  export, i.e. the run's config with the play overrides listed in ``source.overrides`` (for
  g1_walk_flat a fixed forward command; the gait settings are the trained ones). A motion
  command (g1_motion_tracking) gives its ``sampling`` and its ``clips`` instead: each clip's
  name, frames, fps, weight, duration and npz file. Absent for envs without command terms.

The check: ``onnx.checker.check_model(full_check=True)``, then onnxruntime against the torch policy
on random observations (N(0, 3^2) per column) and on observations a rollout recorded. The largest
absolute difference of any action is ``onnx_max_abs_diff`` in ``run_summary.json``.
"""

from __future__ import annotations

import io
import json
import os
import warnings
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import unilab
from unilab.deploy import DEFAULT_ATOL, DEFAULT_NUM_ENVS
from unilab.deploy.loading import (
    LoadedRun,
    deployed_actor,
    load_run,
    make_env,
    make_policy,
    model_file_overrides,
    record_result,
    relative_to_run,
    rollout,
)
from unilab.errors import UserError
from unilab.robots import robot_settings
from unilab.runs import atomic_write, os_error_line

METADATA_SCHEMA = 1
OPSET = 17
"""ONNX opset: 17 has LayerNormalization as one op."""
INPUT_NAME, OUTPUT_NAME = "obs", "actions"


class ExportError(RuntimeError):
    """The ONNX file could not be written or did not pass its check."""


@dataclass
class ExportResult:
    """What :func:`export` wrote and measured.

    Attributes:
        path: the ONNX file.
        checker: ``"passed"`` (``onnx.checker`` full check).
        max_abs_diff: max |onnx - torch| over all checked observations and actions.
        max_abs_diff_random, max_abs_diff_recorded: the same per observation set.
        samples_random, samples_recorded: observations checked per set.
        atol: the tolerance; ``verified`` is ``max_abs_diff <= atol``.
        metadata: the metadata written (parsed form).
        checkpoint: the checkpoint exported (relative to the run when inside it).
        iteration: its training iteration.
        final: it is the run's last checkpoint (recorded as the summary's ``onnx``; others under
            ``onnx_checkpoints``).
        actor: which actor the policy is, in words (:attr:`LoadedRun.deployed_actor`).
    """

    path: Path
    run_dir: Path
    checker: str
    max_abs_diff: float
    max_abs_diff_random: float
    max_abs_diff_recorded: float | None
    samples_random: int
    samples_recorded: int
    atol: float
    metadata: dict[str, Any] = field(repr=False)
    checkpoint: str = ""
    iteration: int = 0
    final: bool = True
    actor: str = deployed_actor(0.0)

    @property
    def verified(self) -> bool:
        return self.max_abs_diff <= self.atol

    def summary(self) -> dict[str, Any]:
        """The JSON-able ``onnx`` entry of ``run_summary.json`` (docs/play_export.md)."""
        return {
            "path": relative_to_run(self.path, self.run_dir),
            "checkpoint": self.checkpoint,
            "iteration": self.iteration,
            "opset": OPSET,
            "checker": self.checker,
            "max_abs_diff": self.max_abs_diff,
            "max_abs_diff_random": self.max_abs_diff_random,
            "max_abs_diff_recorded": self.max_abs_diff_recorded,
            "samples_random": self.samples_random,
            "samples_recorded": self.samples_recorded,
            "atol": self.atol,
            "verified": self.verified,
            "error": None if self.verified else f"max |onnx - torch| {self.max_abs_diff:.3g} > atol {self.atol:g}",
        }

    def lines(self) -> list[str]:
        rec = "" if self.max_abs_diff_recorded is None else (
            f", {self.samples_recorded} recorded {self.max_abs_diff_recorded:.3g}")
        return [
            f"onnx: {self.path} (opset {OPSET}, onnx.checker {self.checker}) from {self.checkpoint} "
            f"(iteration {self.iteration}; {self.actor})",
            f"max |onnx - torch| = {self.max_abs_diff:.3g} ({self.samples_random} random "
            f"{self.max_abs_diff_random:.3g}{rec}); atol {self.atol:g}: "
            f"{'ok' if self.verified else 'FAILED'}",
        ]


# ============================================================================ metadata
def observation_terms(env, group: str) -> list[dict[str, Any]]:
    """Column layout of observation ``group``: one dict per term, in order.

    Uses ``env.observation_manager`` (its ``layout`` when it has one, else each term's width,
    evaluated once); an env without one is a single term named after the group.

    Returns:
        ``[{"name", "start", "stop", "dim", "function", "params", "description"}, ...]``: the
        columns ``[start, stop)``, the term function's qualified name and parameters (e.g. the
        sensor it reads) and the first paragraph of its docstring (shape, units, frame).

    Raises:
        ExportError: the terms do not add up to ``env.obs_dims[group]``.
    """
    dim = int(env.obs_dims[group])
    manager = getattr(env, "observation_manager", None)
    if manager is None:
        return [{"name": group, "start": 0, "stop": dim, "dim": dim, "function": "", "params": {},
                 "description": ""}]
    terms = manager.groups[group]
    layout = getattr(manager, "layout", {}).get(group)
    if layout is None:
        layout, start = [], 0
        for name, term in terms.items():
            width = int(term.func(env, **term.params).shape[-1])
            layout.append((name, start, start + width))
            start += width
    out = []
    for name, start, stop in layout:
        func = terms[name].func
        doc = (getattr(func, "__doc__", None) or "").strip()
        out.append({
            "name": name, "start": int(start), "stop": int(stop), "dim": int(stop - start),
            "function": f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', repr(func))}",
            "params": {k: _json_safe(v) for k, v in terms[name].params.items()},
            "description": " ".join(doc.split("\n\n")[0].split()),
        })
    if not out or out[-1]["stop"] != dim:
        raise ExportError(f"observation terms of group {group!r} cover {out[-1]['stop'] if out else 0} "
                          f"columns, the env has {dim}")
    return out


def _json_safe(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return repr(value)


def _floats(t: torch.Tensor) -> list[float]:
    return [float(x) for x in t.detach().cpu().reshape(-1)]


def command_settings(env) -> dict[str, dict[str, Any]]:
    """``{name: {"class", "description", "settings"}}`` for each command term of ``env`` (its
    ``commands`` mapping) whose settings are a dataclass (``ranges`` or ``settings`` attribute),
    and ``{name: {"class", "description", "sampling", "clips"}}`` for a motion command (a
    ``clips`` attribute of :class:`~unilab.motion.library.ClipInfo`: ``name``, ``num_frames``,
    ``fps``, ``weight``, ``source`` the npz file, ``duration_s``), so a host knows which
    reference motion the policy tracks; ``{}`` for envs without command terms."""
    out: dict[str, dict[str, Any]] = {}
    for name, term in (getattr(env, "commands", None) or {}).items():
        settings = getattr(term, "settings", None) or getattr(term, "ranges", None)
        clips = getattr(term, "clips", None)
        if settings is not None and dataclasses.is_dataclass(settings):
            entry: dict[str, Any] = {"settings": _json_safe(dataclasses.asdict(settings))}
        elif clips and all(dataclasses.is_dataclass(c) for c in clips):
            entry = {"sampling": getattr(term, "sampling", None),
                     "clips": [_json_safe({**dataclasses.asdict(c), "duration_s": c.duration_s}) for c in clips]}
        else:
            continue
        cls = type(term)
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        out[name] = {"class": f"{cls.__module__}.{cls.__qualname__}", "description": " ".join(doc.split()), **entry}
    return out


def policy_metadata(loaded: LoadedRun, env, group: str) -> dict[str, Any]:
    """The metadata of the exported policy (module docstring), from the env built for the run.

    Needs a :class:`~unilab.envs.manager_based_rl_env.ManagerBasedRlEnv` (action manager, robot
    metadata, MJCF); other envs get the observation and control entries only.
    """
    import mujoco

    step_dt = float(getattr(env, "step_dt", float("nan")))
    meta: dict[str, Any] = {
        "unilab_policy_schema": METADATA_SCHEMA,
        "observation": {
            "input": INPUT_NAME,
            "group": group,
            "dim": int(env.obs_dims[group]),
            "dtype": "float32",
            "terms": observation_terms(env, group),
        },
        "normalizer": {"in_graph": True, "note": "feed raw observations; normalization is in the graph"},
        "control": {"rate_hz": 1.0 / step_dt, "dt_s": step_dt},
        "source": {
            "algo": loaded.algo,
            "task": loaded.task,
            "sim": loaded.sim,
            "iteration": loaded.iteration,
            "checkpoint": relative_to_run(loaded.checkpoint, loaded.run_dir),
            "actor_ema": loaded.actor_ema,
            "overrides": loaded.overrides,
            "data_changes": loaded.data_changes,
            "unilab": unilab.__version__,
            "torch": torch.__version__,
        },
    }
    meta["robot"] = robot_settings(getattr(loaded.cfg, "robot", None))
    commands = command_settings(env)
    if commands:
        meta["commands"] = commands
    action = getattr(env, "action_manager", None)
    robot_meta = getattr(env, "meta", None)
    mjcf = getattr(getattr(env, "cfg", None), "mjcf", None)
    if action is None or robot_meta is None or mjcf is None:
        meta["action"] = {"output": OUTPUT_NAME, "dim": int(env.num_actions),
                          "low": _floats(env.action_low), "high": _floats(env.action_high)}
        return meta
    model = mujoco.MjModel.from_xml_string(mjcf)
    act_ids = [int(a) for a in robot_meta.actuator_ids]
    meta["control"].update(physics_dt_s=float(robot_meta.dt), decimation=int(env.cfg.decimation))
    meta["action"] = {
        "output": OUTPUT_NAME,
        "dim": int(env.num_actions),
        "joint_names": list(robot_meta.joint_names),
        "actuator_names": [model.actuator(i).name for i in range(model.nu)],
        "actuator_index": act_ids,
        "scale": _floats(action.scale),
        "offset": _floats(action.offset),
        "low": _floats(action.low),
        "high": _floats(action.high),
        "target": "target_joint_pos[j] = offset[j] + scale[j] * action[j], rad, sent to actuator "
                  "actuator_index[j]",
    }
    meta["default_joint_pos"] = _floats(action.offset)
    position = [
        model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_AFFINE and model.actuator_biasprm[a, 1] != 0
        for a in act_ids
    ]
    if all(position):
        meta["pd_gains"] = {
            "kp": [float(model.actuator_gainprm[a, 0]) for a in act_ids],
            "kd": [float(-model.actuator_biasprm[a, 2]) for a in act_ids],
            "effort_limit": [
                float(model.actuator_forcerange[a, 1]) if model.actuator_forcelimited[a] else None
                for a in act_ids
            ],
        }
    return meta


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of an exported ``policy.onnx``: each ``metadata_props`` entry, JSON-decoded."""
    import onnx

    model = onnx.load(os.fspath(path), load_external_data=False)
    return {p.key: json.loads(p.value) for p in model.metadata_props}


# ============================================================================ export and check
def export_onnx(policy: torch.nn.Module, obs_dim: int, path: str | os.PathLike[str], metadata: dict[str, Any]) -> str:
    """Write ``policy`` as an ONNX model with a dynamic batch axis and ``metadata``; run the checker.

    Args:
        policy: (B, obs_dim) float32 -> (B, A) float32, on the CPU.
        obs_dim: input width.
        path: file to write (atomically; its folder is created).
        metadata: JSON-able values, one ``metadata_props`` entry per key.

    Returns:
        ``"passed"``.

    Raises:
        ExportError: onnx missing, the exporter failed, or the checker rejected the model.
    """
    try:
        import onnx
    except ImportError:
        raise ExportError("onnx is not installed (pip install onnx onnxruntime)") from None
    example = torch.zeros(2, obs_dim)
    buffer = io.BytesIO()
    try:
        with warnings.catch_warnings():  # the TorchScript exporter is deprecated but needs no onnxscript
            warnings.simplefilter("ignore")
            torch.onnx.export(
                policy, (example,), buffer, dynamo=False, opset_version=OPSET,
                input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
                dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}},
            )
    except Exception as exc:  # noqa: BLE001 - one line for the user
        raise ExportError(f"torch.onnx.export failed: {type(exc).__name__}: {exc}") from None
    model = onnx.load_from_string(buffer.getvalue())
    model.doc_string = (
        f"UniLab policy: {INPUT_NAME} (batch, {obs_dim}) float32 raw observations -> {OUTPUT_NAME} "
        "(batch, num_actions) float32; see metadata_props"
    )
    del model.metadata_props[:]
    for key, value in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, json.dumps(value)
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:  # noqa: BLE001 - onnx raises its own ValidationError types
        raise ExportError(f"onnx.checker rejected the model: {exc}") from None
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out, model.SerializeToString())
    except OSError as exc:
        raise ExportError(f"{out} not written: {os_error_line(exc)}") from None
    return "passed"


@torch.no_grad()
def max_abs_diff(path: str | os.PathLike[str], policy: torch.nn.Module, obs: torch.Tensor) -> float:
    """max |onnxruntime(path)(obs) - policy(obs)| over all rows and actions.

    Args:
        obs: (N, obs_dim) float32, N >= 1.

    Raises:
        ExportError: onnxruntime missing.
    """
    try:
        import onnxruntime as ort
    except ImportError:
        raise ExportError("onnxruntime is not installed (pip install onnxruntime)") from None
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(os.fspath(path), options, providers=["CPUExecutionProvider"])
    x = obs.to("cpu", torch.float32).contiguous()
    got = session.run([OUTPUT_NAME], {INPUT_NAME: x.numpy()})[0]
    want = policy(x).numpy()
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))


def export(
    run: str,
    *,
    checkpoint: str | None = None,
    output: str | Path | None = None,
    log_dir: str | Path = "logs",
    recorded_obs: torch.Tensor | None = None,
    num_envs: int = DEFAULT_NUM_ENVS,
    record_steps: int = 100,
    num_random: int = 1024,
    atol: float = DEFAULT_ATOL,
    seed: int = 0,
    overrides: list[str] | tuple[str, ...] = (),
) -> ExportResult:
    """Export a checkpoint's policy to ONNX, check it, and record the check in ``run_summary.json``.

    Args:
        run: run directory or ``latest``.
        checkpoint: checkpoint in the run (default ``model_last.pt``).
        output: ONNX path (default ``<run>/policy.onnx`` for the run's last checkpoint,
            ``<run>/policy_<iteration>.onnx`` for any other).
        log_dir: where ``latest`` looks.
        recorded_obs: (N, obs_dim) observations to check on; ``None`` records them with a rollout
            of ``record_steps`` steps of ``num_envs`` worlds under the play settings.
        num_random: random observations to check on, N(0, 3^2) per column.
        atol: tolerance of the check.
        seed: seed of the random observations.
        overrides: ``robot.mjcf=FILE`` alone, the run's model file at a new path
            (:func:`unilab.deploy.loading.model_file_overrides`); the metadata's ``robot`` block
            names the file used.

    Returns:
        The :class:`ExportResult` (``verified`` False when the difference exceeds ``atol``; the
        file is written either way). The check is recorded in ``run_summary.json``: as ``onnx``
        and ``onnx_max_abs_diff`` for the run's last checkpoint, under
        ``onnx_checkpoints[<iteration>]`` for any other.

    Raises:
        UserError: no such run or checkpoint, ``atol`` not a number >= 0, an override other
            than ``robot.mjcf``, a model file that is not there.
        ExportError: the export or the checker failed, or onnx/onnxruntime are missing.
    """
    if not atol >= 0:  # also NaN
        raise UserError(f"--atol must be a number >= 0, got {atol}")
    overrides = model_file_overrides(overrides, "export")
    loaded = load_run(run, checkpoint, log_dir=log_dir, overrides=overrides)
    env = make_env(loaded, num_envs)
    try:
        policy, group = make_policy(loaded, env)
        metadata = policy_metadata(loaded, env, group)
        if recorded_obs is None:
            recorded_obs = rollout(env, policy, record_steps, group=group).observations
    finally:
        env.close()
    obs_dim = metadata["observation"]["dim"]
    default_name = "policy.onnx" if loaded.final else f"policy_{loaded.iteration}.onnx"
    path = Path(output) if output else loaded.run_dir / default_name
    checker = export_onnx(policy, obs_dim, path, metadata)
    generator = torch.Generator().manual_seed(seed)
    random_obs = 3.0 * torch.randn(num_random, obs_dim, generator=generator)
    diff_random = max_abs_diff(path, policy, random_obs)
    diff_recorded = max_abs_diff(path, policy, recorded_obs) if len(recorded_obs) else None
    result = ExportResult(
        path=path,
        run_dir=loaded.run_dir,
        checker=checker,
        max_abs_diff=max(diff_random, diff_recorded or 0.0),
        max_abs_diff_random=diff_random,
        max_abs_diff_recorded=diff_recorded,
        samples_random=num_random,
        samples_recorded=len(recorded_obs),
        atol=atol,
        metadata=metadata,
        checkpoint=relative_to_run(loaded.checkpoint, loaded.run_dir),
        iteration=loaded.iteration,
        final=loaded.final,
        actor=loaded.deployed_actor,
    )
    record_result(loaded.run_dir, loaded, "onnx", result.summary(), onnx_max_abs_diff=result.max_abs_diff)
    return result


__all__ = [
    "ExportError", "ExportResult", "command_settings", "export", "export_onnx", "max_abs_diff",
    "observation_terms", "policy_metadata", "read_metadata",
]
