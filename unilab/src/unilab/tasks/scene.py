"""The robot scene a task's env is built on: the run's robot with the task's contact sensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from unilab.envs.contact import ContactSensorCfg, add_contact_sensors
from unilab.robots import RobotDescription, RobotScene, robot_scene


def task_scene(
    robot: Any, contact_sensors: Callable[[RobotDescription], dict[str, ContactSensorCfg]]
) -> tuple[RobotScene, torch.Tensor]:
    """The scene of the run's robot with the task's contact sensors added, and its action scale.

    Args:
        robot: the run's ``robot.*`` settings (:class:`unilab.config.RobotConfig`), or None for
            the built-in G1 (:func:`unilab.robots.robot_scene`).
        contact_sensors: the task's sensors for a robot description (name -> config), added to
            the scene's spec with :func:`unilab.envs.contact.add_contact_sensors`.

    Returns:
        (scene, action_scale): action_scale is (J,) float32, rad per action unit, in
        ``scene.robot.joint_names`` order.

    Raises:
        unilab.robots.RobotModelError: (a ValueError) a robot model that cannot serve, one line.
        ValueError: a body a sensor names is not in the scene.
    """
    scene = robot_scene(robot)
    add_contact_sensors(scene.spec, contact_sensors(scene.robot))
    scale = torch.tensor([scene.action_scale[j] for j in scene.robot.joint_names], dtype=torch.float32)
    return scene, scale


__all__ = ["task_scene"]
