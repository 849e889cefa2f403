"""Run directories: ``<log_dir>/<algo>/<task>/<YYYY-MM-DD_HH-MM-SS>_<sim>/``.

Each holds ``run_config.json`` (resolved config, plugins, workspace pins, git state, hardware),
``run_summary.json`` (status and headline numbers, schema in docs/run_summary.md), checkpoints
(``model_<iteration>.pt``, ``model_last.pt``) and TensorBoard events.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import torch

from unilab import METRIC_SCHEMA_VERSION


def create_run_dir(log_dir: str | Path, algo: str, task: str, sim: str) -> Path:
    """Make and return a new run directory; a suffix keeps two runs in one second apart."""
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    base = Path(log_dir) / algo / task
    path = base / f"{stamp}_{sim}"
    n = 1
    while path.exists():
        n += 1
        path = base / f"{stamp}_{sim}_{n}"
    path.mkdir(parents=True)
    return path


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` atomically (temp file + rename), so a crash never leaves half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)


def _repo_root() -> Path | None:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "workspace.toml").exists():
            return parent
    return None


def workspace_state() -> dict[str, Any]:
    """The workspace pins and each package's git state, for ``run_config.json``.

    Delegates to ``scripts/workspace.py`` (:func:`workspace_record`), the one reader of
    ``workspace.toml``: per package its location (path or git URL), pinned and installed versions,
    pinned and current commits, whether its tree is dirty and whether it is at its pin. Never
    raises: outside a workspace it returns ``{"workspace": None}``, and a problem reading the
    manifest is recorded as ``{"root": ..., "error": ...}``.
    """
    root = _repo_root()
    if root is None or not (root / "scripts" / "workspace.py").exists():
        return {"workspace": None}
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "_unilab_workspace_tool", root / "scripts" / "workspace.py"
        )
        tool = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = tool  # dataclasses look their module up there
        spec.loader.exec_module(tool)  # type: ignore[union-attr]
        record = tool.workspace_record(tool.load_manifest(root / "workspace.toml"))
        return {"root": str(root), **record}
    except Exception as exc:  # noqa: BLE001 - recorded, never fatal
        return {"root": str(root), "error": f"{type(exc).__name__}: {exc}"}


def hardware_info() -> dict[str, Any]:
    """CPU, Python, torch and accelerator facts of this machine."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
    }
    try:
        info["cpu_affinity"] = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    if torch.cuda.is_available():
        info["cuda_device"] = torch.cuda.get_device_name(0)
    return info


class RunSummary:
    """``run_summary.json``, rewritten at each checkpoint and at the end of the run."""

    def __init__(self, path: Path, base: dict[str, Any]) -> None:
        self.path = path
        self.data: dict[str, Any] = {
            "metric_schema_version": METRIC_SCHEMA_VERSION,
            "status": "running",
            "started_at": datetime.now().isoformat(timespec="seconds"),
            **base,
        }
        self._t0 = time.monotonic()
        self.write()

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.data["wall_time_s"] = round(time.monotonic() - self._t0, 3)
        self.write()

    def write(self) -> None:
        write_json(self.path, self.data)


def resolve_run_dir(run: str, log_dir: str | Path = "logs") -> Path:
    """A run directory from a path or ``latest`` (newest run under ``log_dir``).

    Raises:
        FileNotFoundError: no such run directory, or no runs under ``log_dir``.
    """
    if run == "latest":
        runs = sorted(Path(log_dir).glob("*/*/*/run_config.json"), key=lambda p: p.stat().st_mtime)
        if not runs:
            raise FileNotFoundError(f"no runs under {log_dir!s}")
        return runs[-1].parent
    path = Path(run)
    if not (path / "run_config.json").exists():
        raise FileNotFoundError(f"{run} is not a run directory (no run_config.json)")
    return path
