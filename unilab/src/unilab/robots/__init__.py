"""Robots: descriptions (:class:`RobotDescription`), the built-in G1, and the scene builder that
turns a description and an optional user MJCF into a task scene (docs/robots.md).

Tasks call :func:`robot_scene` with the run's ``robot.*`` settings; a package ships a robot
through the ``unilab_robots`` entry-point group (:data:`unilab.plugins.ROBOTS`).
"""

from __future__ import annotations

import os
from typing import Any

from unilab.robots.description import ImuSite, JointDrive, Pose, RobotDescription, SoleGeom, name_mirror
from unilab.robots.scene import RobotModelError, RobotScene, SceneReport, build_scene, print_report


def robot_registration(name: str):
    """The registration of robot ``name`` in :data:`unilab.plugins.ROBOTS` (its ``item`` is the
    :class:`RobotDescription`; ``name``, ``distribution`` and ``version`` say where it came from).

    Raises:
        RobotModelError: unknown (listing the installed robots), registered twice, or (strict
            mode, ``UNILAB_STRICT_PLUGINS=1``) a robot plugin that failed to load; one line.
    """
    from unisim.plugins import PluginError

    from unilab.plugins import ROBOTS

    try:
        return ROBOTS.get(name)
    except (KeyError, PluginError) as exc:
        raise RobotModelError(f"robot.name: {exc.args[0]}") from None


def get_robot(name: str) -> RobotDescription:
    """The registered robot ``name`` (``robot.name``).

    Raises:
        RobotModelError: as :func:`robot_registration`.
    """
    return robot_registration(name).item


def robot_settings(robot: Any = None) -> dict[str, Any]:
    """The run's ``robot.*`` settings as a record names them (an eval JSON record, the exported
    policy's metadata): ``{"name": str, "mjcf": absolute path or None (the description's own
    model), "actuators": "project" | "file", "feet": "project" | "model" | "spheres"}``.
    ``robot``: as for :func:`robot_scene`."""
    mjcf = getattr(robot, "mjcf", None)  # getattr(None, ...) gives the default too
    return {
        "name": getattr(robot, "name", "g1"),
        "mjcf": os.path.abspath(os.path.expanduser(os.fspath(mjcf))) if mjcf else None,
        "actuators": getattr(robot, "actuators", "project"),
        "feet": getattr(robot, "feet", "project"),
    }


def robot_scene(robot: Any = None, *, with_floor: bool = True, report: bool = True) -> RobotScene:
    """The task scene of the run's ``robot.*`` settings (:class:`unilab.config.RobotConfig`,
    or any object with ``name``, ``mjcf`` and ``actuators``, and optionally ``feet`` and ``description``, a
    :class:`RobotDescription` used instead of looking ``name`` up; None: the built-in G1 with the
    project's drives).

    With ``report``, a model file's drive table and changes are printed once per process
    (:func:`~unilab.robots.scene.print_report`): a user file is never used silently.

    Raises:
        RobotModelError: (a ValueError) one line naming the setting or file at fault.
    """
    s = robot_settings(robot)
    description = getattr(robot, "description", None)  # an unregistered description (conformance)
    scene = build_scene(description if isinstance(description, RobotDescription) else get_robot(s["name"]),
                        mjcf=s["mjcf"], actuators=s["actuators"], with_floor=with_floor, feet=s["feet"])
    if report and (scene.report.source != "built-in" or s["actuators"] != "project" or s["feet"] == "spheres"):
        print_report(scene.report)
    return scene


__all__ = [
    "ImuSite",
    "JointDrive",
    "Pose",
    "RobotDescription",
    "RobotModelError",
    "RobotScene",
    "SceneReport",
    "SoleGeom",
    "build_scene",
    "get_robot",
    "name_mirror",
    "print_report",
    "robot_registration",
    "robot_scene",
    "robot_settings",
]
