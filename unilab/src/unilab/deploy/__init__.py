"""From a checkpoint to something to watch and something to deploy.

- :mod:`unilab.deploy.loading`: a run directory and checkpoint -> the run's env (with the task's
  play settings) and its deterministic policy; rollouts; ``run_summary.json`` updates.
- :mod:`unilab.deploy.play`: ``unilab play``: roll the policy out, report returns, write an mp4.
- :mod:`unilab.deploy.video`: offscreen MuJoCo rendering of a recorded trajectory (EGL or OSMesa),
  in a child process.
- :mod:`unilab.deploy.export`: ``unilab export``: ``policy.onnx`` with its metadata, checked with
  ``onnx.checker`` and verified against the torch policy with onnxruntime.

This package's ``__init__`` imports nothing heavy: the video child process imports it first.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_NUM_ENVS = 4
"""Worlds ``unilab play`` rolls out (the video shows world 0)."""
DEFAULT_STEPS = 250
"""Env steps of ``unilab play``: 5 s at the G1 tasks' 50 Hz, short enough to end every training run."""
DEFAULT_ATOL = 1e-4
"""The bar of ``unilab export``: the largest |onnx - torch| of any action it accepts, absolute, in
the env's action units (docs/play_export.md, "The bar"). Both runtimes compute in float32 and
round differently, more so for large actions: on g1_walk_flat, whose action box reaches ±21.7
units, torch float32 itself is 5e-5 off a float64 evaluation for a policy with pre-tanh means near
±3. 1e-4 units are at most 5.5e-5 rad of joint target on the G1. A broken export (a missing
normalizer, a wrong op) is off by 1e-2 or more."""


def after_training(run_dir: Path) -> dict[str, Any]:
    """Play and export the last checkpoint of a finished run; never raises.

    Runs :func:`unilab.deploy.play.play` (rollout, then the video) and
    :func:`unilab.deploy.export.export` (fed with the observations the rollout recorded). Each
    result, or the error that stopped it, goes into ``run_summary.json`` (``play``, ``video``,
    ``onnx``, ``onnx_max_abs_diff``; see docs/play_export.md). A failure of the video does not stop
    the export; nothing here touches the checkpoints.

    Returns:
        ``{"play": dict | None, "onnx": dict | None}``, the entries written to the summary.
    """
    from unilab.deploy.loading import update_summary

    out: dict[str, Any] = {"play": None, "onnx": None}
    observations = None
    try:
        from unilab.deploy.play import play

        result = play(str(run_dir))
        observations = result.observations
        out["play"] = result.summary()
        if result.video_error:
            log.info("play: video not written: %s", result.video_error)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - recorded, never fatal
        out["play"] = {"error": _describe(exc)}
        update_summary(run_dir, play=out["play"], video=None)
        log.info("play failed: %s", out["play"]["error"])
        if isinstance(exc, KeyboardInterrupt):
            return out
    try:
        from unilab.deploy.export import export

        out["onnx"] = export(str(run_dir), recorded_obs=observations).summary()
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - recorded, never fatal
        out["onnx"] = {"error": _describe(exc)}
        update_summary(run_dir, onnx=out["onnx"], onnx_max_abs_diff=None)
        log.info("export failed: %s", out["onnx"]["error"])
    return out


def _describe(exc: BaseException) -> str:
    """One line for the summary: our own errors as worded, others with their type."""
    from unilab.deploy.export import ExportError
    from unilab.errors import UserError

    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    return str(exc) if isinstance(exc, (UserError, ExportError)) else f"{type(exc).__name__}: {exc}"


__all__ = ["DEFAULT_ATOL", "DEFAULT_NUM_ENVS", "DEFAULT_STEPS", "after_training"]
