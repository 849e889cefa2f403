"""Continuing a run: the RNG states a checkpoint holds, and finding, reading and applying the
checkpoint ``training.resume`` names (all checked before any env is built)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from unilab import runs
from unilab.errors import UserError


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


__all__ = ["apply_resume", "find_resume_checkpoint", "read_resume_checkpoint", "rng_state", "set_rng_state"]
