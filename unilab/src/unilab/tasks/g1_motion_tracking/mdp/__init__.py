"""MDP terms of g1_motion_tracking: the motion command, observations, rewards, terminations."""

from unilab.tasks.g1_motion_tracking.mdp.commands import AdaptiveSampler, MotionCommand, ResetNoise
from unilab.tasks.g1_motion_tracking.mdp.observations import (
    motion_anchor_ori_b,
    motion_anchor_pos_b,
    robot_body_ori_b,
    robot_body_pos_b,
)
from unilab.tasks.g1_motion_tracking.mdp.rewards import (
    motion_global_anchor_orientation_error_exp,
    motion_global_anchor_position_error_exp,
    motion_global_body_angular_velocity_error_exp,
    motion_global_body_linear_velocity_error_exp,
    motion_relative_body_orientation_error_exp,
    motion_relative_body_position_error_exp,
)
from unilab.tasks.g1_motion_tracking.mdp.terminations import (
    bad_anchor_ori,
    bad_anchor_pos_z_only,
    bad_motion_body_pos_z_only,
    motion_end,
)

__all__ = [
    "AdaptiveSampler",
    "MotionCommand",
    "ResetNoise",
    "bad_anchor_ori",
    "bad_anchor_pos_z_only",
    "bad_motion_body_pos_z_only",
    "motion_anchor_ori_b",
    "motion_anchor_pos_b",
    "motion_end",
    "motion_global_anchor_orientation_error_exp",
    "motion_global_anchor_position_error_exp",
    "motion_global_body_angular_velocity_error_exp",
    "motion_global_body_linear_velocity_error_exp",
    "motion_relative_body_orientation_error_exp",
    "motion_relative_body_position_error_exp",
    "robot_body_ori_b",
    "robot_body_pos_b",
]
