"""Reusable MDP terms: observations, rewards, terminations, events and commands.

Each term is a small function of the env returning one tensor with a leading (num_envs,) dim.
"""

from unilab.envs.mdp.commands import UniformVelocityCommand, VelocityCommandRanges
from unilab.envs.mdp.events import push_by_setting_velocity, reset_root_state_uniform
from unilab.envs.mdp.observations import (
    base_ang_vel,
    base_lin_vel,
    generated_command,
    joint_pos_rel,
    joint_vel,
    last_action,
    projected_gravity,
)
from unilab.envs.mdp.rewards import (
    action_rate_l2,
    joint_pos_limits,
    track_angular_velocity,
    track_linear_velocity,
    upright,
)
from unilab.envs.mdp.terminations import bad_orientation, nan_detected, time_out

__all__ = [
    "UniformVelocityCommand",
    "VelocityCommandRanges",
    "action_rate_l2",
    "bad_orientation",
    "base_ang_vel",
    "base_lin_vel",
    "generated_command",
    "joint_pos_limits",
    "joint_pos_rel",
    "joint_vel",
    "last_action",
    "nan_detected",
    "projected_gravity",
    "push_by_setting_velocity",
    "reset_root_state_uniform",
    "time_out",
    "track_angular_velocity",
    "track_linear_velocity",
    "upright",
]
