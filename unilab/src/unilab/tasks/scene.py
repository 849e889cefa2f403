"""The robot scene a task's env is built on (the run's robot with the task's contact sensors), and
the env built from a task's env config (:func:`make_task_env`, what a task's ``make_env`` does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from unilab.envs.contact import ContactSensorCfg, add_contact_sensors
from unilab.envs.manager_based_rl_env import EnvCfg, ManagerBasedRlEnv
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


def make_task_env(
    make_env_cfg: Callable[[Any, Any], EnvCfg],
    cfg: Any,
    *,
    backend_cls,
    num_envs: int,
    nthread: int = 0,
    cpu_ids: list[int] | None = None,
    robot: Any = None,
    seed: int = 0,
) -> ManagerBasedRlEnv:
    """Build a task's env on ``backend_cls``: :class:`ManagerBasedRlEnv` of
    ``make_env_cfg(cfg, robot)``, the body of a task's ``make_env``
    (:attr:`unilab.tasks.spec.TaskSpec.make_env`).

    Args:
        make_env_cfg: the task's ``make_env_cfg(cfg, robot) -> EnvCfg``.
        cfg: the task's settings (its ``env.*`` section).
        backend_cls, num_envs, nthread, cpu_ids, seed: as :class:`ManagerBasedRlEnv`.
        robot: the run's ``robot.*`` settings, passed to ``make_env_cfg``.
    """
    return ManagerBasedRlEnv(
        make_env_cfg(cfg, robot), backend_cls, num_envs, nthread=nthread, cpu_ids=cpu_ids, seed=seed
    )


__all__ = ["make_task_env", "task_scene"]
