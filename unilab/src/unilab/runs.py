"""Run directories: ``<log_dir>/<algo>/<task>/<YYYY-MM-DD_HH-MM-SS>_<sim>/``.

Each holds ``run_config.json`` (resolved config, plugins, workspace pins, git state, hardware,
the task's data files with their digests),
``run_summary.json`` (status and headline numbers, schema in docs/run_summary.md), checkpoints
(``model_<iteration>.pt``, ``model_last.pt``) and TensorBoard events.

Every file a run keeps (checkpoints, the summary and config, the ONNX policy, the plot) is written
by :func:`atomic_write`: a reader sees the old file or the new one, never half of one, and a failed
write (a full disk) leaves no temporary file behind.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import logging
import os
import platform
import secrets
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import torch

log = logging.getLogger(__name__)

from unilab import METRIC_SCHEMA_VERSION


def create_run_dir(log_dir: str | Path, algo: str, task: str, sim: str) -> Path:
    """Make and return a new run directory, ``<stamp>_<sim>``, else ``<stamp>_<sim>_2``, ``_3``...

    Each candidate is created with one ``mkdir`` that fails if it exists, so processes starting in
    the same second never share a directory (no check-then-create race).

    Raises:
        OSError: the directory cannot be created (permissions, a full disk).
    """
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    base = Path(log_dir) / algo / task
    base.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        path = base / (f"{stamp}_{sim}" if n == 1 else f"{stamp}_{sim}_{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1


def atomic_write(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: written to a temporary file in the same folder,
    flushed and fsynced, then renamed over ``path`` (POSIX ``rename``). A reader sees the old
    content or the new, never a part; on any failure the temporary file is removed and ``path``
    keeps its old content.

    Raises:
        OSError: the write failed; ``filename`` is ``path`` and ``errno`` the cause (``ENOSPC`` for
            a full disk), e.g. ``[Errno 28] No space left on device: '.../model_20.pt'``.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(path)) from exc
        raise


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte of ``data`` is in ``fd``."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def os_error_line(exc: OSError) -> str:
    """One line naming what failed, where and why, e.g. ``"No space left on device (errno 28,
    ENOSPC): logs/sac/g1_walk_flat/<run>/model_20.pt"``."""
    code = errno.errorcode.get(exc.errno, "?") if exc.errno is not None else "?"
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or exc} (errno {exc.errno}, {code}){where}"


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON with :func:`atomic_write`.

    Raises:
        OSError: as :func:`atomic_write`.
    """
    atomic_write(path, (json.dumps(data, indent=2, sort_keys=False, default=str) + "\n").encode())


def save_checkpoint(run_dir: Path, iteration: int, payload: dict[str, Any], keep: int) -> Path:
    """Write ``model_<iteration>.pt`` and ``model_last.pt`` (the same bytes) with
    :func:`atomic_write`, then delete all but the newest ``keep`` numbered checkpoints.

    Nothing is deleted unless both files were written, so after a failure (a full disk) the
    previous checkpoints are still there and ``model_last.pt`` is the previous one, loadable.

    Returns:
        the numbered checkpoint.

    Raises:
        OSError: a write failed (naming the file and the errno).
    """
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    path = run_dir / f"model_{iteration}.pt"
    atomic_write(path, data)
    atomic_write(run_dir / "model_last.pt", data)
    numbered = sorted(run_dir.glob("model_[0-9]*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    for old in numbered[:-keep]:
        old.unlink(missing_ok=True)
    return path


def first_non_finite(tree: Any, prefix: str = "") -> str | None:
    """The dotted key of the first floating-point tensor in ``tree`` (nested dicts, lists and
    tuples, e.g. a checkpoint's ``agent`` state) holding a NaN or an infinity, with the count:
    ``"critic.q1.0.weight (3 of 73728 values)"``; None when every tensor is finite."""
    if isinstance(tree, torch.Tensor):
        if tree.is_floating_point() or tree.is_complex():
            bad = int((~torch.isfinite(tree)).sum())
            if bad:
                return f"{prefix or '<tensor>'} ({bad} of {tree.numel()} values)"
        return None
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, (list, tuple)) else ()
    for key, value in items:
        found = first_non_finite(value, f"{prefix}.{key}" if prefix else str(key))
        if found:
            return found
    return None


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
        """Write the summary atomically; when that fails (a full disk has no room for a second
        copy), rewrite the file in place, which reuses its own blocks: a run must leave a
        summary that says why it ended.

        Raises:
            OSError: neither write succeeded.
        """
        try:
            write_json(self.path, self.data)
        except OSError as exc:
            text = json.dumps(self.data, default=str) + "\n"  # compact: fits in the old file's blocks
            try:
                with open(self.path, "w") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError:
                raise exc from None
            log.warning("run_summary.json rewritten in place: %s", os_error_line(exc))


def data_file(key: str, name: str, path: str | Path) -> dict[str, str]:
    """One data file as ``run_config.json``'s ``data`` records it (:class:`unilab.tasks.spec.TaskSpec`).

    Args:
        key: the config key that names the file, e.g. ``"env.motion.file"``.
        name: the file's name in the task (a clip's name), unique within ``key``.
        path: the file.

    Returns:
        ``{"key", "name", "file" (absolute), "sha256" (hex digest of its bytes)}``.

    Raises:
        OSError: the file cannot be read.
    """
    path = Path(path).resolve()
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"key": key, "name": name, "file": str(path), "sha256": digest.hexdigest()}


def task_data_files(task_spec: Any, env_cfg: Any) -> list[dict[str, str]]:
    """The data files a task's env reads under ``env_cfg`` (``TaskSpec.data_files``; [] for a task
    without); [] too when they cannot be listed or read, which building the env reports."""
    fn = getattr(task_spec, "data_files", None)
    if fn is None:
        return []
    try:
        return list(fn(env_cfg))
    except (OSError, ValueError):  # a missing or malformed file: the env builder's message says it
        return []


def data_changes(recorded: list[dict[str, str]], current: list[dict[str, str]],
                 given: set[str] = frozenset()) -> list[str]:
    """How the data files an env is rebuilt from differ from those the run trained on, one line
    per config key: files added, gone, or changed (same name, other bytes). Files are matched by
    name, so the same files found at another path (another machine, a reinstalled package) are
    no change.

    Args:
        recorded: ``run_config.json``'s ``data`` (:func:`data_file` records).
        current: the same for the env about to be built.
        given: config keys the caller set on purpose (overrides): not reported.

    Returns:
        e.g. ``["env.motion.file: imp added (the run did not train on it); squat changed (other
        contents)"]``; [] when nothing differs.
    """
    keys = dict.fromkeys(r["key"] for r in [*recorded, *current])
    lines = []
    for key in keys:
        if key in given:
            continue
        old = {r["name"]: r["sha256"] for r in recorded if r["key"] == key}
        new = {r["name"]: r["sha256"] for r in current if r["key"] == key}
        parts = [f"{n} added (the run did not train on it)" for n in new if n not in old]
        parts += [f"{n} changed (other contents)" for n in new if n in old and new[n] != old[n]]
        parts += [f"{n} gone (the run trained on it)" for n in old if n not in new]
        if parts:
            lines.append(f"{key}: " + "; ".join(parts))
    return lines


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
