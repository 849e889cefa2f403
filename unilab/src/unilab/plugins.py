"""The three plugin registries UniLab trains from: backends, algorithms, tasks.

Each registry loads its entry-point group lazily, once, with every plugin isolated (see
:mod:`unisim._plugins`). ``unilab plugins`` prints them all; ``scripts/workspace.py verify`` loads
them strictly through :func:`all_registries` (``[workspace] plugins`` in workspace.toml). How to write
a plugin: docs/plugins.md.
"""

from __future__ import annotations

from unilab import hookspecs
from unilab.tasks.spec import TaskSpec
from unilab_rl.registry import ALGORITHMS
from unisim._plugins import PluginError, PluginRegistry
from unisim._registry import BACKENDS


def _validate_task(name: str, item: object, meta: dict, distribution: str) -> None:
    if not isinstance(item, TaskSpec):
        raise PluginError(f"task {name!r} from {distribution} must be a unilab.tasks.TaskSpec")


TASKS: PluginRegistry[TaskSpec] = PluginRegistry(
    "unilab", hookspecs, "unilab_register_tasks", "task", _validate_task
)


def all_registries() -> list[PluginRegistry]:
    """The backend, algorithm and task registries, in that order."""
    return [BACKENDS, ALGORITHMS, TASKS]
