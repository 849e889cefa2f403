"""Observation terms: ``f(env, **params) -> (num_envs, d)`` float32.

Sources: mjlab ``envs/mdp/observations.py`` and ``tasks/velocity/mdp/observations.py``
(v1.6.0).
"""

from __future__ import annotations

import torch

from unilab.envs.mdp.rewards import joint_pos_error, stack_sensors


# ---------------------------------------------------------------- base state (simulator truth)
def base_lin_vel(env) -> torch.Tensor:
    """(N, 3) base (pelvis) linear velocity in the base frame, m/s."""
    return env.robot.base_lin_vel_b


def base_ang_vel(env) -> torch.Tensor:
    """(N, 3) base angular velocity in the base frame, rad/s."""
    return env.robot.base_ang_vel_b


def projected_gravity(env) -> torch.Tensor:
    """(N, 3) unit gravity direction in the base frame."""
    return env.robot.projected_gravity_b


# ---------------------------------------------------------------- sensors (what a robot measures)
def builtin_sensor(env, sensor_name: str) -> torch.Tensor:
    """(N, dim) reading of a MuJoCo sensor, e.g. ``imu_lin_vel`` (velocimeter, m/s, IMU frame)
    or ``imu_ang_vel`` (gyro, rad/s, IMU frame) (mjlab ``builtin_sensor``)."""
    return env.backend.sensor(sensor_name)


def projected_gravity_from_sensor(env, sensor_name: str = "imu_upvector") -> torch.Tensor:
    """(N, 3) unit gravity direction in the IMU frame: minus the world z axis the ``framezaxis``
    sensor reports in that frame (mjlab ``projected_gravity_from_sensor``)."""
    return -env.backend.sensor(sensor_name)


# ---------------------------------------------------------------- joints and actions
def joint_pos_rel(env, biased: bool = False) -> torch.Tensor:
    """(N, J) joint positions minus the default pose, rad; with ``biased`` plus the per-env
    encoder bias (``env.robot.encoder_bias``, drawn by a domain-randomization event)."""
    rel = joint_pos_error(env)  # shared with the posture rewards within a step
    return rel + env.robot.encoder_bias if biased else rel


def joint_vel(env) -> torch.Tensor:
    """(N, J) joint velocities, rad/s."""
    return env.robot.joint_vel


def last_action(env) -> torch.Tensor:
    """(N, A) the action applied at this step."""
    return env.action_manager.action


def generated_command(env, name: str) -> torch.Tensor:
    """(N, d) the current value of command ``name``."""
    return env.commands[name].command


def gait_phase(env, name: str = "gait") -> torch.Tensor:
    """(N, 4) sin and cos of each foot's gait phase angle: sin(phi_left), sin(phi_right),
    cos(phi_left), cos(phi_right), dimensionless (holosoma ``sin_phase`` and ``cos_phase``), from
    the :class:`~unilab.envs.mdp.commands.GaitPhaseCommand` ``name``; phi = pi (sin 0, cos -1)
    for both feet on stand commands."""
    return env.commands[name].command


# ---------------------------------------------------------------- feet (privileged, critic only)
def foot_height(env, sensor_names: tuple[str, ...]) -> torch.Tensor:
    """(N, F) height of each foot site above the flat floor (z = 0), m, from ``framepos``
    sensors (mjlab ``foot_height`` reads a terrain height scan; on flat ground it is site z)."""
    return stack_sensors(env, tuple(sensor_names))[..., 2]


def foot_air_time(env, sensor_name: str) -> torch.Tensor:
    """(N, F) s each foot has been in the air (0 in contact) (mjlab ``foot_air_time``)."""
    return env.contact_sensors[sensor_name].current_air_time


def foot_contact(env, sensor_name: str) -> torch.Tensor:
    """(N, F) 1.0 where the foot touches the ground, else 0.0 (mjlab ``foot_contact``)."""
    return env.contact_sensors[sensor_name].in_contact.float()


def foot_contact_forces(env, sensor_name: str) -> torch.Tensor:
    """(N, 3F) sign(f)·log(1 + |f|) of each foot's net ground contact force, f in N, world frame
    (mjlab ``foot_contact_forces``)."""
    f = env.contact_sensors[sensor_name].force.flatten(start_dim=1)
    return torch.sign(f) * torch.log1p(f.abs())
