"""The plugin registries UniLab trains from (backends, algorithms, tasks, robots) and the one way
every command looks a plugin up.

Each registry is a :class:`unisim.plugins.PluginRegistry`: it loads its entry-point group lazily,
once, with every plugin isolated (an exception or ``sys.exit()`` at import is recorded, not fatal).
Backends are unisim's registry (:data:`unisim.registry.BACKENDS`); algorithms (the ``unilab_rl``
group, hook :mod:`unilab_rl.hookspecs`) and tasks (the ``unilab`` group, hook
:mod:`unilab.hookspecs`) are defined here. ``unilab train``, ``play``, ``export`` and ``config``
resolve names through :func:`lookup`, which prints each plugin failure once as a ``warning:``
line; ``unilab plugins`` prints the table and the same lines. ``scripts/workspace.py verify``
loads them strictly through :func:`all_registries`. How to write a plugin: docs/plugins.md.
"""

from __future__ import annotations

import sys
from typing import IO, TypeVar

from unilab import hookspecs
from unilab.errors import UserError
from unilab.robots.description import RobotDescription
from unilab.tasks.spec import TaskSpec
from unilab_rl import hookspecs as algorithm_hookspecs
from unilab_rl.registry import AlgorithmSpec
from unisim.plugins import PluginError, PluginFailure, PluginRegistry, Registration
from unisim.registry import BACKENDS

T = TypeVar("T")


def _validate_task(name: str, item: object, meta: dict, distribution: str) -> None:
    if not isinstance(item, TaskSpec):
        raise PluginError(f"task {name!r} from {distribution} must be a unilab.tasks.TaskSpec")


def _validate_algorithm(name: str, item: object, meta: dict, distribution: str) -> None:
    if not isinstance(item, AlgorithmSpec):
        raise PluginError(f"algorithm {name!r} from {distribution} must be a unilab_rl.registry.AlgorithmSpec")


ALGORITHMS: PluginRegistry[AlgorithmSpec] = PluginRegistry(
    "unilab_rl", algorithm_hookspecs, "unilab_rl_register_algorithms", "algorithm", _validate_algorithm
)
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


def lookup(registry: PluginRegistry[T], name: str, flag: str) -> Registration[T]:
    """The registration ``name`` of ``registry``, for the command-line option ``flag``.

    Loads the registry on first use and prints its plugin failures (:func:`report_failures`),
    also before an unknown name's error: a plugin that failed to load may be why the name is
    unknown. A strict-mode failure or a name registered twice is the error line alone.

    Raises:
        UserError: ``"<flag>: unknown <kind> 'x'; valid choices: ..."``, a name registered twice,
            or (strict mode, ``UNILAB_STRICT_PLUGINS=1``) a plugin that failed to load.
    """
    try:
        registration = registry.get(name)
    except PluginError as exc:  # strict mode, or two distributions registered the name
        raise UserError(f"{flag}: {exc}") from None
    except KeyError as exc:
        report_failures([registry])
        raise UserError(f"{flag}: {exc.args[0]}") from None
    report_failures([registry])
    return registration


_reported: set[PluginFailure] = set()


def report_failures(
    registries: list[PluginRegistry] | None = None, stream: IO[str] | None = None
) -> list[PluginFailure]:
    """Print every plugin failure of ``registries`` (default: all of them, loading them) not printed
    before in this process, one ``warning: plugin 'x' from dist 1.0 (entry-point group 'g')
    failed: <error>`` line each, on ``stream`` (default stderr). Returns the failures printed."""
    new = []
    for registry in registries if registries is not None else all_registries():
        registry.load(strict=False)
        for failure in registry.failures:
            if failure not in _reported:
                _reported.add(failure)
                new.append(failure)
    out = stream or sys.stderr
    for failure in new:
        print(f"warning: {failure}", file=out, flush=True)
    return new


__all__ = ["ALGORITHMS", "BACKENDS", "ROBOTS", "TASKS", "all_registries", "lookup", "report_failures"]
