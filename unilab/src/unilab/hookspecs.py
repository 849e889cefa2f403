"""Hook specifications of unilab: the reference for task plugin authors.

A plugin is a module named by an entry point in the ``unilab`` group::

    [project.entry-points.unilab]
    my_task = "my_package.unilab_plugin"

The built-in ``g1_walk_flat`` registers through exactly this path
(``unilab.tasks.g1_walk_flat.plugin``). Robots have their own group, ``unilab_robots``
(:func:`unilab_register_robots`; the built-in ``g1`` is ``unilab.robots.g1.plugin``).
"""

from __future__ import annotations

from typing import Callable

import pluggy

hookspec = pluggy.HookspecMarker("unilab")
hookimpl = pluggy.HookimplMarker("unilab")


# ---------------------------------------------------------------- registration
@hookspec
def unilab_register_tasks(register: Callable[..., None]) -> None:
    """Register tasks.

    Called once per process, the first time a task is looked up, for every installed plugin,
    each in isolation.

    :param register: call ``register(name, spec: unilab.tasks.TaskSpec)`` once per task; ``name``
        is what users pass as ``--task``. A duplicate name is refused, naming both distributions.
    :returns: nothing (collect-all hook).
    """


@hookspec
def unilab_register_robots(register: Callable[..., None]) -> None:
    """Register robots (entry-point group ``unilab_robots``; docs/robots.md).

    Called once per process, the first time a robot is looked up, for every installed plugin,
    each in isolation.

    :param register: call ``register(name, description: unilab.robots.RobotDescription)`` once
        per robot; ``name`` is what users pass as ``robot.name`` and must equal
        ``description.name``. A duplicate name is refused, naming both distributions.
    :returns: nothing (collect-all hook).
    """
