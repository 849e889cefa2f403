"""Unitree G1 29-DoF humanoid: constants and MuJoCo model builders.

Source of the robot numbers: Unitree G1 29-DoF rev 1.0 via MuJoCo Menagerie
unitree_g1 / mjlab 1.6.0 g1_constants.py (see ``NOTICE``).
"""

from unilab.robots.g1.g1_constants import (
    ACTION_SCALE,
    ARMATURE,
    EFFORT_LIMIT,
    FLOATING_BASE_JOINT,
    FOOT_BODIES,
    FOOT_GEOM_NAMES,
    FOOT_SITES,
    G1_ACTUATOR_NAMES,
    G1_BODY_NAMES,
    G1_JOINT_NAMES,
    G1_SENSOR_NAMES,
    HOME_QPOS,
    IMU_SITE,
    JOINT_RANGE,
    KD,
    KEYFRAMES,
    KNEES_BENT_QPOS,
    KP,
    PELVIS_BODY,
    SOFT_JOINT_POS_LIMIT_FACTOR,
    TORSO_BODY,
)
from unilab.robots.g1.model import (
    add_g1_actuators,
    g1_model,
    g1_robot_spec,
    g1_scene_spec,
    g1_scene_xml,
)
from unilab.robots.g1.robot import G1

__all__ = [
    "ACTION_SCALE",
    "G1",
    "ARMATURE",
    "EFFORT_LIMIT",
    "FLOATING_BASE_JOINT",
    "FOOT_BODIES",
    "FOOT_GEOM_NAMES",
    "FOOT_SITES",
    "G1_ACTUATOR_NAMES",
    "G1_BODY_NAMES",
    "G1_JOINT_NAMES",
    "G1_SENSOR_NAMES",
    "HOME_QPOS",
    "IMU_SITE",
    "JOINT_RANGE",
    "KD",
    "KEYFRAMES",
    "KNEES_BENT_QPOS",
    "KP",
    "PELVIS_BODY",
    "SOFT_JOINT_POS_LIMIT_FACTOR",
    "TORSO_BODY",
    "add_g1_actuators",
    "g1_model",
    "g1_robot_spec",
    "g1_scene_spec",
    "g1_scene_xml",
]
