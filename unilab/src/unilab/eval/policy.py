"""The evaluated policy: a checkpoint's deterministic torch policy, or an exported ``policy.onnx``
run with onnxruntime (a run whose checkpoints stayed on the training machine).

Both map raw observations (B, obs_dim) float32 to actions (B, num_actions) float32 in the env's
units, the observation normalizer inside; both run on the CPU.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import torch

_ONNX_NUMBERED = re.compile(r"policy_(\d+)\.onnx")


class OnnxPolicy:
    """An exported ``policy.onnx`` as a callable on (B, D) float32 torch tensors (CPU).

    Args:
        path: the ONNX file (``unilab export``).
        threads: onnxruntime intra-op threads.

    Attributes:
        dim: the input width (observation columns).
        num_actions: the output width (actions), None when the graph leaves it symbolic.
        metadata: the file's ``metadata_props``, JSON-decoded
            (:func:`unilab.deploy.export.read_metadata`).

    Raises:
        UserError: onnxruntime missing, or a file it cannot load.
    """

    def __init__(self, path: str | os.PathLike[str], threads: int = 1) -> None:
        from unilab.errors import UserError

        try:
            import onnxruntime as ort
        except ImportError:
            raise UserError("onnxruntime is not installed (pip install onnxruntime)") from None
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(os.fspath(path), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
            raise UserError(f"cannot load {path}: {str(exc).splitlines()[0]}") from None
        self.input = self.session.get_inputs()[0].name
        self.dim = int(self.session.get_inputs()[0].shape[1])
        out = self.session.get_outputs()[0].shape
        self.num_actions = out[1] if len(out) == 2 and isinstance(out[1], int) else None  # None: a symbolic width
        self.metadata = read_metadata(path)

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs.detach().to("cpu", torch.float32).contiguous().numpy()
        return torch.from_numpy(self.session.run(None, {self.input: x})[0])


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """An ONNX file's ``metadata_props``, each JSON-decoded (non-JSON values kept as text)."""
    import onnx

    model = onnx.load(os.fspath(path), load_external_data=False)
    out: dict[str, Any] = {}
    for prop in model.metadata_props:
        try:
            out[prop.key] = json.loads(prop.value)
        except ValueError:
            out[prop.key] = prop.value
    return out


def resolve_policy_file(run_dir: Path, checkpoint: str | None) -> Path:
    """The file to evaluate: a checkpoint (``.pt``) or an exported policy (``.onnx``).

    Args:
        run_dir: the run directory.
        checkpoint: a file name in ``run_dir`` or a path; None picks ``model_last.pt``, else the
            newest ``model_<iteration>.pt``, else ``policy.onnx``.

    Raises:
        UserError: nothing to evaluate, or no such file (listing what the run has).
    """
    from unilab.deploy.loading import run_checkpoints
    from unilab.errors import UserError

    onnx = run_dir / "policy.onnx"
    have = run_checkpoints(run_dir)
    have += [onnx] if onnx.is_file() else []
    have += sorted(p for p in run_dir.glob("policy_*.onnx") if _ONNX_NUMBERED.fullmatch(p.name))
    if checkpoint is None:
        if not have:
            raise UserError(f"no checkpoint or policy.onnx in {run_dir} (expected model_last.pt, "
                            f"model_<iteration>.pt or policy.onnx; `unilab export` writes policy.onnx)")
        return have[0]
    path = Path(checkpoint)
    if path.suffix not in (".pt", ".onnx"):
        raise UserError(f"--checkpoint {checkpoint}: expected a checkpoint (.pt) or an exported policy (.onnx)")
    for candidate in (run_dir / path, path):
        if candidate.is_file():
            return candidate
    kind = "ONNX policy" if path.suffix == ".onnx" else "checkpoint"
    names = ", ".join(p.name for p in have) or "none"
    raise UserError(f"--checkpoint {checkpoint}: no {kind} {checkpoint!r} in {run_dir} (it has: {names})")


def load_checkpoint(path: Path) -> dict[str, Any]:
    """A unilab checkpoint's payload (``agent``, ``iteration``, ``algo``, ``task``, ``config``).

    Raises:
        UserError: unreadable, or not a unilab checkpoint.
    """
    from unilab.errors import UserError

    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's to fix
        raise UserError(f"cannot load checkpoint {path}: {type(exc).__name__}: {exc}") from None
    if not isinstance(payload, dict) or "agent" not in payload:
        raise UserError(f"{path} is not a unilab checkpoint (no 'agent' entry)")
    return payload


def onnx_source(meta: dict[str, Any], path: Path, task: str) -> dict[str, Any]:
    """The ``source`` entry of an ONNX policy's metadata, checked against the run's task.

    Raises:
        UserError: the file carries no unilab policy metadata, or was exported from a run of
            another task.
    """
    from unilab.errors import UserError

    source = meta.get("source")
    if "observation" not in meta or not isinstance(source, dict):
        raise UserError(f"{path} has no unilab policy metadata (observation, source); export it with `unilab export`")
    if source.get("task") != task:
        raise UserError(f"{path} was exported from a {source.get('task')!r} run; this run's task is {task!r}")
    return source


def check_onnx_layout(meta: dict[str, Any], policy: OnnxPolicy, env, path: Path) -> str:
    """Check that the ONNX policy reads the observation the env builds; return its group.

    Compares the metadata's observation group, width and terms (name and column slice) with
    ``env.obs_dims`` and ``env.observation_manager.layout`` (when the env has one), and the
    graph's action width with ``env.num_actions`` (e.g. a model file with other actuators).

    Raises:
        UserError: naming the first term (or the width) that differs, or the action widths.
    """
    from unilab.errors import UserError

    obs = meta["observation"]
    group = obs.get("group", "actor")
    if group not in env.obs_dims:
        raise UserError(f"{path} reads observation group {group!r}; the env has {sorted(env.obs_dims)}")
    want = [(t["name"], int(t["start"]), int(t["stop"])) for t in obs.get("terms", [])]
    manager = getattr(env, "observation_manager", None)
    have = [tuple(x) for x in getattr(manager, "layout", {}).get(group, [])] if manager is not None else []
    if want and have and want != have:
        first = next((i for i, (a, b) in enumerate(zip(want, have)) if a != b), min(len(want), len(have)))
        a = want[first] if first < len(want) else "(none)"
        b = have[first] if first < len(have) else "(none)"
        raise UserError(
            f"{path} does not fit the task's observation: term {first} is {a} in the ONNX and {b} in the env "
            f"(observation {policy.dim} vs {env.obs_dims[group]} columns); was it exported from a run with "
            f"other observation settings?"
        )
    if policy.dim != int(env.obs_dims[group]) or int(obs.get("dim", policy.dim)) != policy.dim:
        raise UserError(f"{path} reads {policy.dim} observation columns; the env's {group!r} group has "
                        f"{env.obs_dims[group]}")
    actions = getattr(policy, "num_actions", None)
    if actions is not None and getattr(env, "num_actions", actions) != actions:
        raise UserError(f"{path} writes {actions} actions; the env takes {env.num_actions} (was it exported from "
                        f"a run on another robot model?)")
    return group


class _OneRow:
    """``env`` seen as one row: the learner built to hold a checkpoint's weights then allocates a
    one-row replay buffer instead of one per evaluation row."""

    num_envs = 1

    def __init__(self, env) -> None:
        self._env = env

    def __getattr__(self, name: str):
        return getattr(self._env, name)


def torch_policy(loaded, env) -> tuple[torch.nn.Module, str]:
    """The checkpoint's deterministic policy (:func:`unilab.deploy.loading.make_policy`) built for
    ``env``'s observation and action spaces, on the CPU, in eval mode, and its observation group.

    Raises:
        UserError: the checkpoint does not fit the env, or the algorithm cannot act.
    """
    from unilab.deploy.loading import make_policy

    return make_policy(loaded, _OneRow(env))


def untrained_policy(loaded, env) -> tuple[torch.nn.Module, str]:
    """A deterministic policy of the run's algorithm and sizes with fresh weights, on the CPU, in
    eval mode, and its observation group: the frame the evaluation during training loads each
    snapshot's weights into (:func:`unilab_rl.async_runtime.load_flat_state`). Built as
    :func:`unilab.deploy.loading.make_policy` builds a checkpoint's, without the checkpoint."""
    from unilab.deploy.loading import cpu_learner

    agent = cpu_learner(loaded, _OneRow(env))
    return agent.inference_policy().eval(), agent.actor_group


def iteration_of(path: Path, payload: dict[str, Any] | None, meta: dict[str, Any] | None) -> int:
    """The training iteration of a checkpoint (its payload) or an ONNX policy (its metadata,
    else the ``policy_<iteration>.onnx`` name); 0 when unknown."""
    if payload is not None:
        return int(payload.get("iteration", 0))
    source = (meta or {}).get("source") or {}
    if isinstance(source.get("iteration"), int):
        return int(source["iteration"])
    m = _ONNX_NUMBERED.fullmatch(path.name)
    return int(m.group(1)) if m else 0


def final_policy_file(run_dir: Path, path: Path) -> bool:
    """Whether ``path`` is the run's final policy: ``model_last.pt``, the checkpoint the summary
    names as last (:func:`unilab.deploy.loading.is_final_checkpoint`), or ``policy.onnx`` (what
    ``unilab export`` writes from the last checkpoint)."""
    from unilab.deploy.loading import is_final_checkpoint

    if path.suffix == ".onnx":
        return path.resolve() == (run_dir / "policy.onnx").resolve()
    return is_final_checkpoint(run_dir, path)


__all__ = [
    "OnnxPolicy", "check_onnx_layout", "final_policy_file", "iteration_of", "load_checkpoint", "onnx_source",
    "read_metadata", "resolve_policy_file", "torch_policy", "untrained_policy",
]
