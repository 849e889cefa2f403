"""Reusable MDP terms: observations, rewards, terminations, events and commands.

Each term is a small function of the env returning one tensor with a leading (num_envs,) dim.
"""

from unilab.envs.mdp.commands import UniformVelocityCommand, VelocityCommandRanges
from unilab.envs.mdp.events import (
    push_by_setting_velocity,
    randomize_body_com,
    randomize_encoder_bias,
    randomize_geom_friction,
    reset_root_state_uniform,
)
from unilab.envs.mdp.observations import (
    base_ang_vel,
    base_lin_vel,
    builtin_sensor,
    foot_air_time,
    foot_contact,
    foot_contact_forces,
    foot_height,
    generated_command,
    joint_pos_rel,
    joint_vel,
    last_action,
    projected_gravity,
    projected_gravity_from_sensor,
)
from unilab.envs.mdp.rewards import (
    is_alive,
    action_rate_l2,
    angular_momentum_l2,
    body_ang_vel_l2,
    foot_air_time_window,
    foot_clearance,
    foot_slip_l2,
    joint_pos_limits,
    self_collision_count,
    track_angular_velocity,
    track_linear_velocity,
    upright,
    variable_posture,
)
from unilab.envs.mdp.terminations import bad_orientation, nan_detected, time_out

__all__ = [
    "is_alive",
    "UniformVelocityCommand",
    "VelocityCommandRanges",
    "action_rate_l2",
    "angular_momentum_l2",
    "bad_orientation",
    "base_ang_vel",
    "base_lin_vel",
    "body_ang_vel_l2",
    "builtin_sensor",
    "foot_air_time",
    "foot_air_time_window",
    "foot_clearance",
    "foot_contact",
    "foot_contact_forces",
    "foot_height",
    "foot_slip_l2",
    "generated_command",
    "joint_pos_limits",
    "joint_pos_rel",
    "joint_vel",
    "last_action",
    "nan_detected",
    "projected_gravity",
    "projected_gravity_from_sensor",
    "push_by_setting_velocity",
    "randomize_body_com",
    "randomize_encoder_bias",
    "randomize_geom_friction",
    "reset_root_state_uniform",
    "self_collision_count",
    "time_out",
    "track_angular_velocity",
    "track_linear_velocity",
    "upright",
    "variable_posture",
]
