"""Continuing a run: the RNG states a checkpoint holds, finding, reading and applying the
checkpoint ``training.resume`` names (all checked before any env is built), and the env
curricula a checkpoint records, which a resumed run (and play) starts from through the config."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel

from unilab import runs
from unilab.config import ConfigError, validate
from unilab.errors import UserError
from unilab.tasks.spec import CurriculumState


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


def find_resume_checkpoint(resume: str, log_dir: str, algo: str, task: str) -> Path:
    """The checkpoint ``training.resume`` names.

    Args:
        resume: ``"latest"`` (the newest ``model_last.pt`` under ``<log_dir>/<algo>/<task>/``), a
            run directory (its ``model_last.pt``) or a ``.pt`` file.

    Raises:
        UserError: nothing found there.
    """
    if resume == "latest":
        found = sorted(Path(log_dir, algo, task).glob("*/model_last.pt"), key=lambda p: p.stat().st_mtime)
        if not found:
            raise UserError(f"training.resume=latest: no run with a model_last.pt under {Path(log_dir, algo, task)}")
        return found[-1]
    path = Path(resume)
    if path.is_dir():
        path = path / "model_last.pt"
    if not path.is_file():
        raise UserError(f"training.resume={resume!r}: no such checkpoint ({path})")
    return path


def read_resume_checkpoint(path: Path, algo: str, task: str, max_iterations: int) -> dict[str, Any]:
    """Read a checkpoint to resume from and check that it can continue this run (before any env
    is built).

    Returns:
        the payload: ``agent`` (the learner's ``state_dict``), ``rng``, ``iteration``, ...

    Raises:
        UserError: unreadable, NaN or infinite weights, another algo or task, or already at
            ``max_iterations``.
    """
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's input
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise UserError(f"training.resume: cannot read {path}: {type(exc).__name__}: {first}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("agent"), dict):
        raise UserError(f"training.resume: {path} is not a unilab checkpoint (no 'agent' entry)")
    bad = runs.first_non_finite(payload["agent"])
    if bad:
        raise UserError(f"training.resume: {path} has NaN or infinite weights: first in {bad}; resume from an "
                        f"earlier checkpoint of that run (training.resume=<run>/model_<iteration>.pt)")
    if payload.get("algo") != algo or payload.get("task") != task:
        raise UserError(
            f"training.resume: {path} is a {payload.get('algo')}/{payload.get('task')} checkpoint, not {algo}/{task}"
        )
    iteration = int(payload["agent"].get("iteration", payload.get("iteration", 0)))
    if iteration >= max_iterations:
        raise UserError(
            f"training.resume: {path} is at iteration {iteration} >= training.max_iterations={max_iterations}; "
            f"raise training.max_iterations to continue"
        )
    return payload


def apply_resume(path: Path, payload: dict[str, Any], agent) -> None:
    """Load networks, optimizers, normalizers and counters into ``agent``, then the RNG states."""
    try:
        agent.load_state_dict(payload["agent"])
    except (KeyError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"training.resume: {path} does not fit this config: {first}") from None
    if payload.get("rng") is not None:
        set_rng_state(payload["rng"])


def config_value(cfg: BaseModel, key: str) -> Any:
    """The value of the dotted ``key`` (``env.penalty_curriculum.start``) in the run config ``cfg``."""
    value: Any = cfg
    for name in key.split("."):
        value = getattr(value, name)
    return value


def curriculum_record(payload: Mapping[str, Any]) -> dict[str, float]:
    """The env curricula a checkpoint recorded: its ``curriculum`` entry, log key -> last logged
    value (e.g. ``{"Curriculum/penalty_scale": 0.93}``); empty for a checkpoint without one
    (written before checkpoints recorded it). Entries that are not finite numbers are left out."""
    record = payload.get("curriculum")
    if not isinstance(record, Mapping):
        return {}
    return {str(k): float(v) for k, v in record.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def curriculum_start(cfg: BaseModel, curricula: Sequence[CurriculumState]) -> dict[str, float]:
    """Log key -> the value each enabled curriculum of ``curricula`` starts the run's envs at
    (its ``start_key``, else its ``initial_key``): what a checkpoint records until the env logs."""
    out = {}
    for c in curricula:
        if c.enabled_key is None or config_value(cfg, c.enabled_key):
            start = config_value(cfg, c.start_key)
            out[c.log_key] = float(config_value(cfg, c.initial_key) if start is None else start)
    return out


def resume_curricula(cfg: BaseModel, curricula: Sequence[CurriculumState],
                     payload: Mapping[str, Any]) -> tuple[BaseModel, list[str]]:
    """Start the envs' curricula where the resumed checkpoint's left them: each enabled curriculum
    whose ``start_key`` the config leaves None gets the checkpoint's recorded value (the config is
    validated again); one that has none recorded starts at its initial value, as a new run's.

    Args:
        cfg: the resumed run's validated config.
        curricula: the task's (:attr:`unilab.tasks.TaskSpec.curricula`).
        payload: the checkpoint (:func:`read_resume_checkpoint`).

    Returns:
        (the config to build the envs from, one line per enabled curriculum saying where it starts).

    Raises:
        UserError: a recorded value that this run's config refuses (e.g. below a raised
            ``min_scale``), naming the key to give instead.
    """
    record = curriculum_record(payload)
    lines = []
    for c in curricula:
        if c.enabled_key is not None and not config_value(cfg, c.enabled_key):
            continue
        recorded = record.get(c.log_key)
        given = config_value(cfg, c.start_key)
        if given is not None:
            was = (f"the checkpoint's last {c.log_key}: {recorded:g}" if recorded is not None
                   else f"the checkpoint records no {c.log_key}")
            lines.append(f"{c.name} starts at {c.start_key}={given:g} as given ({was})")
        elif recorded is None:
            lines.append(f"{c.name} starts at {c.initial_key}={config_value(cfg, c.initial_key):g}: the checkpoint "
                         f"records no {c.log_key} (an older checkpoint, or one trained without it)")
        else:
            cfg = _with_value(cfg, c.start_key, recorded, c)
            lines.append(f"{c.name} resumed at {recorded:g}, the checkpoint's last {c.log_key} "
                         f"({c.start_key}={recorded:g})")
    return cfg, lines


def _with_value(cfg: BaseModel, key: str, value: float, c: CurriculumState) -> BaseModel:
    """``cfg`` with the dotted ``key`` set to ``value``, validated again.

    Raises:
        UserError: the config refuses the value.
    """
    tree = cfg.model_dump()
    node = tree
    *parents, leaf = key.split(".")
    for name in parents:
        node = node[name]
    node[leaf] = value
    try:
        return validate(type(cfg), tree)
    except ConfigError as exc:
        raise UserError(f"training.resume: the checkpoint's last {c.log_key}={value:g} does not fit this run's "
                        f"config ({exc}); give {key} to start the {c.name} elsewhere") from None


def play_curriculum_overrides(curricula: Sequence[CurriculumState], payload: Mapping[str, Any]) -> list[str]:
    """``start_key=value`` overrides that start a played checkpoint's curricula where training left
    them (the checkpoint's recorded values, six decimals), for the curricula that recorded one."""
    record = curriculum_record(payload)
    return [f"{c.start_key}={_decimal(record[c.log_key])}" for c in curricula if c.log_key in record]


def _decimal(value: float) -> str:
    """``value`` with at most six decimals and no exponent (YAML reads ``1e-05`` as a string)."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


__all__ = ["apply_resume", "config_value", "curriculum_record", "curriculum_start", "find_resume_checkpoint",
           "play_curriculum_overrides", "read_resume_checkpoint", "resume_curricula", "rng_state", "set_rng_state"]
