"""Fake installed distributions, for testing plugin discovery without pip."""

from __future__ import annotations

import json
from pathlib import Path


def write_distribution(
    site: str | Path,
    name: str,
    version: str = "1.0",
    *,
    entry_points: dict[str, dict[str, str]] | None = None,
    files: dict[str, str] | None = None,
    direct_url: str | Path | None = None,
    editable: bool = True,
) -> Path:
    """Write what ``pip install`` would leave for a distribution into the folder ``site``.

    Put ``site`` on ``sys.path`` (``monkeypatch.syspath_prepend``, or ``PYTHONPATH`` for a
    subprocess) and :mod:`importlib.metadata` finds the distribution and its entry points, so a
    :class:`unisim.plugins.PluginRegistry` loads its plugins like installed ones.

    Args:
        site: folder to write into (created if missing).
        name: distribution name, e.g. ``"my-backend"``.
        version: its version.
        entry_points: group -> {entry-point name -> ``"module[:attr]"``}, e.g.
            ``{"unisim": {"my_backend": "my_backend_plugin"}}``.
        files: relative path -> text, written under ``site`` (the plugin modules).
        direct_url: folder the distribution claims to be installed from (PEP 610
            ``direct_url.json``), or None for "from an index" (no file).
        editable: the ``dir_info.editable`` flag of ``direct_url.json``.

    Returns:
        The ``<name>-<version>.dist-info`` folder.
    """
    site = Path(site)
    site.mkdir(parents=True, exist_ok=True)
    for rel, text in (files or {}).items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if entry_points:
        lines = []
        for group, eps in entry_points.items():
            lines.append(f"[{group}]")
            lines += [f"{ep} = {target}" for ep, target in eps.items()]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    if direct_url is not None:
        data = {"url": Path(direct_url).resolve().as_uri(), "dir_info": {"editable": editable}}
        (info / "direct_url.json").write_text(json.dumps(data))
    return info
