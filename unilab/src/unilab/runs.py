"""Run directories: ``<log_dir>/<algo>/<task>/<YYYY-MM-DD_HH-MM-SS>_<sim>/``.

Each holds ``run_config.json`` (resolved config, plugins, workspace pins, git state, hardware),
``run_summary.json`` (status and headline numbers, schema in docs/run_summary.md), checkpoints
(``model_<iteration>.pt``, ``model_last.pt``) and TensorBoard events.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
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
    """Pins of workspace.toml and each package's git commit and dirtiness, where available."""
    root = _repo_root()
    if root is None:
        return {"workspace": None}
    out: dict[str, Any] = {"root": str(root), "packages": {}}
    try:
        import tomllib

        manifest = tomllib.loads((root / "workspace.toml").read_text())
    except Exception as exc:  # noqa: BLE001 - recorded, never fatal
        return {"root": str(root), "error": str(exc)}
    for name, pkg in manifest.get("packages", {}).items():
        entry = {"version": pkg.get("version"), "pinned_commit": pkg.get("commit")}
        try:
            commit = subprocess.run(
                ["git", "log", "-1", "--format=%H", "--", pkg["path"]],
                cwd=root, capture_output=True, text=True, timeout=10,
            ).stdout.strip()
            dirty = subprocess.run(
                ["git", "status", "--porcelain", "--", pkg["path"]],
                cwd=root, capture_output=True, text=True, timeout=10,
            ).stdout.strip()
            entry.update(commit=commit or None, dirty=bool(dirty))
        except (OSError, subprocess.SubprocessError):
            entry.update(commit=None, dirty=None)
        out["packages"][name] = entry
    return out


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
