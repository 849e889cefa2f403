"""The plugin registries UniLab trains from: backends, algorithms, tasks, robots.

Each registry loads its entry-point group lazily, once, with every plugin isolated (see
:mod:`unisim._plugins`). ``unilab plugins`` prints them all; ``scripts/workspace.py verify`` loads
them strictly through :func:`all_registries` (``[workspace] plugins`` in workspace.toml). How to write
a plugin: docs/plugins.md.
"""

from __future__ import annotations

from unilab import hookspecs
from unilab.robots.description import RobotDescription
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


def _validate_robot(name: str, item: object, meta: dict, distribution: str) -> None:
    if not isinstance(item, RobotDescription):
        raise PluginError(f"robot {name!r} from {distribution} must be a unilab.robots.RobotDescription")
    if item.name != name:
        raise PluginError(f"robot {name!r} from {distribution} is registered under another name than its "
                          f"description's {item.name!r}")
    problems = item.problems()
    if problems:
        raise PluginError(f"robot {name!r} from {distribution}: {problems[0]}")


ROBOTS: PluginRegistry[RobotDescription] = PluginRegistry(
    "unilab_robots", hookspecs, "unilab_register_robots", "robot", _validate_robot
)


def all_registries() -> list[PluginRegistry]:
    """The backend, algorithm, task and robot registries, in that order."""
    return [BACKENDS, ALGORITHMS, TASKS, ROBOTS]
